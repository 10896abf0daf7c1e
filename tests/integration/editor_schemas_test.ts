/**
 * The files sherlock writes for the operator to edit (`sherlock agents
 * override`, `sherlock import`) start with taplo's `#:schema` line, a path
 * relative to the file that an editor resolves offline: the schema is
 * there (written next to agents.d/ and services.d/), the file is valid
 * under it (ajv), and sherlock still loads the file.
 */

import assert from "node:assert/strict";
import { dirname, join, resolve } from "node:path";
import { Ajv2020 } from "ajv/dist/2020.js";
import { parse } from "smol-toml";
import { createTestHome } from "../helpers/home.ts";
import { runSherlock } from "../helpers/sherlock.ts";
import { SCHEMAS_DIR } from "../../scripts/json_schemas.ts";

/** The schema a file's first line names, resolved as taplo does. */
function schemaOf(path: string): { path: string; schema: object } {
  const first = Deno.readTextFileSync(path).split("\n")[0];
  const match = /^#:schema (\S+)$/.exec(first);
  assert.ok(match, `${path} starts with "${first}", not a #:schema line`);
  const schemaPath = resolve(dirname(path), match[1]);
  return {
    path: schemaPath,
    schema: JSON.parse(Deno.readTextFileSync(schemaPath)),
  };
}

function assertValid(path: string) {
  const { path: schemaPath, schema } = schemaOf(path);
  // The copy is the committed schema, byte for byte.
  assert.equal(
    Deno.readTextFileSync(schemaPath),
    Deno.readTextFileSync(join(SCHEMAS_DIR, schemaPath.split("/").at(-1)!)),
  );
  const ajv = new Ajv2020({ strict: true, validateFormats: false });
  const validate = ajv.compile(schema);
  assert.ok(
    validate(parse(Deno.readTextFileSync(path))),
    `${path}: ${ajv.errorsText(validate.errors)}`,
  );
}

Deno.test("agents override: the copy starts with #:schema, the schema is beside it, and both agree", async () => {
  await using home = await createTestHome();
  const run = (args: string[]) =>
    runSherlock(args, { env: home.env, cwd: home.work });
  const result = await run(["agents", "override", "claude"]);
  assert.equal(result.code, 0, result.stderr);
  const path = join(home.agentsDir, "claude.toml");
  assert.equal(result.stdout.trim(), path);
  assert.match(
    Deno.readTextFileSync(path),
    /^#:schema \.\.\/schemas\/agent_profile\.schema\.json\n/,
  );
  assertValid(path);
  // sherlock loads the copy as the claude profile.
  const shown = await run(["agents", "show", "claude"]);
  assert.equal(shown.code, 0, shown.stderr);
  // A second override of another agent leaves the schemas as they are.
  const schemas = join(home.configHome, "sherlock", "schemas");
  const before = Deno.statSync(join(schemas, "agent_profile.schema.json"));
  const again = await run(["agents", "override", "codex"]);
  assert.equal(again.code, 0, again.stderr);
  assertValid(join(home.agentsDir, "codex.toml"));
  assert.equal(
    Deno.statSync(join(schemas, "agent_profile.schema.json")).mtime?.getTime(),
    before.mtime?.getTime(),
  );
  assert.deepEqual([...Deno.readDirSync(schemas)].map((e) => e.name).sort(), [
    "agent_profile.schema.json",
    "config.schema.json",
    "service.schema.json",
  ]);
});

Deno.test("import: each services.d file starts with #:schema and is valid under the schema it names", async () => {
  await using home = await createTestHome();
  const from = join(home.work, "servers.json");
  Deno.writeTextFileSync(
    from,
    JSON.stringify({
      mcpServers: {
        files: { command: "files-server", args: ["--root", "/srv"] },
        docs: { type: "http", url: "https://docs.example.com/mcp" },
      },
    }),
  );
  const result = await runSherlock(["import", "--from", from], {
    env: home.env,
    cwd: home.work,
  });
  assert.equal(result.code, 0, result.stderr);
  const written = [...Deno.readDirSync(home.servicesDir)].map((e) => e.name)
    .sort();
  assert.deepEqual(written, ["docs.toml", "files.toml"]);
  for (const name of written) {
    const path = join(home.servicesDir, name);
    assert.match(
      Deno.readTextFileSync(path),
      /^#:schema \.\.\/schemas\/service\.schema\.json\n/,
    );
    assertValid(path);
  }
  const listed = await runSherlock(["services", "--json"], {
    env: home.env,
    cwd: home.work,
  });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    JSON.parse(listed.stdout).services.map((s: { name: string }) => s.name),
    ["docs", "files"],
  );
});
