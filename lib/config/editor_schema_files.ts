/**
 * Puts the JSON Schemas of sherlock's TOML files (`schemas/`, embedded in
 * the binary) into `$XDG_CONFIG_HOME/sherlock/schemas/`, where the
 * `#:schema ../schemas/…` line of a file sherlock writes points: an editor
 * finds them with no network, and they are always those of the sherlock
 * that last wrote there. Imported only by the commands that write such a
 * file, never on the launch path.
 *
 * @module
 */

import { join } from "../runtime/path.ts";
import profileSchema from "../../schemas/agent_profile.schema.json" with {
  type: "json",
};
import serviceSchema from "../../schemas/service.schema.json" with {
  type: "json",
};
import configSchema from "../../schemas/config.schema.json" with {
  type: "json",
};
import { EDITOR_SCHEMAS, EDITOR_SCHEMAS_DIR } from "./editor_schemas.ts";
import { CantCreateError } from "../errors.ts";
import {
  describeFsError,
  readTextIfPresent,
  writeFileAtomically,
} from "../private_files.ts";

const TEXTS = {
  profile: profileSchema,
  service: serviceSchema,
  config: configSchema,
} as const;

/**
 * Writes each schema to `<configDir>/schemas/` unless the file there holds
 * it already (the text `deno task schemas` commits, byte for byte).
 * Throws {@linkcode CantCreateError} when the folder or a file cannot be
 * written.
 */
export function writeEditorSchemas(configDir: string): void {
  const dir = join(configDir, EDITOR_SCHEMAS_DIR);
  try {
    Deno.mkdirSync(dir, { recursive: true });
  } catch (error) {
    throw new CantCreateError(
      `cannot create ${dir}: ${describeFsError(error)}`,
    );
  }
  for (const [kind, schema] of Object.entries(TEXTS)) {
    const path = join(dir, EDITOR_SCHEMAS[kind as keyof typeof TEXTS].file);
    const text = JSON.stringify(schema, null, 2) + "\n";
    if (currentText(path) === text) continue;
    // Not secret: readable like the operator's other config files.
    writeFileAtomically({
      path,
      bytes: new TextEncoder().encode(text),
      mode: 0o644,
    });
  }
}

/** The file's text; undefined when it is missing or cannot be read. */
function currentText(path: string): string | undefined {
  try {
    return readTextIfPresent(path);
  } catch {
    // Then writing it says what is wrong, as a CantCreateError.
    return undefined;
  }
}
