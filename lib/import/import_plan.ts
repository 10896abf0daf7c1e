/**
 * What `sherlock import` does with the servers it found, decided before it
 * writes anything: each server's sherlock name, its services.d file (TOML,
 * without any credential), the one credential that goes into the store,
 * what is skipped and why, and where the agents' files hold plaintext
 * credentials. Pure: the CLI writes the files and stores the secrets.
 *
 * @module
 */

import { stringify } from "smol-toml";
import { MAX_NAME_LENGTH, NAME_PATTERN } from "../config/names.ts";
import { validateService } from "../services/schema.ts";
import { schemaDirective } from "../config/editor_schemas.ts";
import type { ImportedServer } from "./agent_configs.ts";
import { keyPart } from "./agent_configs.ts";
import {
  isCredential,
  isCredentialName,
  isPlainValue,
  looksLikeToken,
  splitCredential,
} from "./credentials.ts";

/** A services.d file to write. */
export interface PlannedService {
  /** The service's name (and file name, `<name>.toml`). */
  name: string;
  /** Where it came from: the first server, then identical ones elsewhere. */
  origins: ImportedServer[];
  /** The file's text. */
  text: string;
  /** The file's text with every env and header value redacted. */
  redacted: string;
  /** The credential that goes into the store under `name`, if any. */
  secret?: { value: string; keyPath: string };
}

/** A server that is not imported. */
export interface SkippedServer {
  /** The server. */
  server: ImportedServer;
  /** Why, in one line (never a value). */
  reason: string;
}

/** Where an agent's file holds a credential in plain text. */
export interface PlaintextCredential {
  /** The file. */
  path: string;
  /** The key path of the value in it. */
  keyPath: string;
}

/** The whole import, decided. */
export interface ImportPlan {
  /** The files to write, in order. */
  services: PlannedService[];
  /** The servers not imported, with the reason. */
  skipped: SkippedServer[];
  /** Every plaintext credential found in the files read. */
  plaintext: PlaintextCredential[];
  /**
   * The values of those credentials, to find the agents' backups that
   * still hold them; never printed.
   */
  plaintextValues: string[];
}

/** What the text shows instead of a value in `--dry-run`. */
export const REDACTED_VALUE = "<redacted>";

/**
 * Plans the import of `servers` into a services.d that already holds
 * `existing` (names): an existing name is never planned again, so a second
 * import plans nothing new. Two servers of the same name with the same
 * definition become one service; a different one gets its agent's name as
 * a suffix (`github-codex`).
 */
export function planImport(
  servers: readonly ImportedServer[],
  options: { existing: ReadonlySet<string>; home?: string },
): ImportPlan {
  const plan: ImportPlan = {
    services: [],
    skipped: [],
    plaintext: [],
    plaintextValues: [],
  };
  const byName = new Map<
    string,
    { fingerprint: string; planned?: PlannedService }
  >();
  for (const server of servers) {
    const found = findCredentials(server);
    for (const credential of found) {
      plan.plaintext.push({ path: server.path, keyPath: credential.keyPath });
      plan.plaintextValues.push(credential.value);
    }
    const fingerprint = JSON.stringify(server.server);
    let name = serviceName(server.name);
    const taken = byName.get(name);
    if (taken !== undefined && taken.fingerprint === fingerprint) {
      taken.planned?.origins.push(server);
      continue;
    }
    if (taken !== undefined) name = freeName(`${name}-${server.agent}`, byName);
    byName.set(name, { fingerprint });
    if (options.existing.has(name)) {
      plan.skipped.push({
        server,
        reason: `services.d/${name}.toml exists; left as it is`,
      });
      continue;
    }
    const movable = found.filter((credential) => credential.movable);
    const stuck = found.filter((credential) => !credential.movable);
    if (stuck.length > 0) {
      plan.skipped.push({
        server,
        reason: `${
          stuck.map((credential) => credential.keyPath).join(", ")
        } holds a credential sherlock cannot deliver (only one env value or header per service); import it by hand`,
      });
      continue;
    }
    if (movable.length > 1) {
      plan.skipped.push({
        server,
        reason: `it holds ${movable.length} credentials (${
          movable.map((credential) => credential.key).join(", ")
        }), and a service has one token; import it by hand`,
      });
      continue;
    }
    const built = serviceFile(server, {
      name,
      credential: movable[0],
      home: options.home,
    });
    if (typeof built === "string") {
      plan.skipped.push({ server, reason: built });
      continue;
    }
    byName.set(name, { fingerprint, planned: built });
    plan.services.push(built);
  }
  return plan;
}

/** An agent's server name as a sherlock service name. */
export function serviceName(name: string): string {
  const cleaned = name.toLowerCase().replace(/[^a-z0-9_-]+/g, "-")
    .replace(/-{2,}/g, "-").replace(/^[^a-z0-9]+/, "").replace(/-+$/, "")
    .slice(0, MAX_NAME_LENGTH);
  return NAME_PATTERN.test(cleaned) ? cleaned : "server";
}

function freeName(
  base: string,
  taken: ReadonlyMap<string, unknown>,
): string {
  const name = serviceName(base);
  if (!taken.has(name)) return name;
  for (let n = 2;; n++) {
    const candidate = `${name.slice(0, MAX_NAME_LENGTH - 4)}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** A credential found in a server's definition. */
interface FoundCredential {
  /** Its key path in the agent's file. */
  keyPath: string;
  /** Its env variable or header name. */
  key: string;
  /** The value. */
  value: string;
  /** An env value or a header: the store and a `[token]` can carry it. */
  movable: boolean;
}

function findCredentials(imported: ImportedServer): FoundCredential[] {
  const found: FoundCredential[] = [];
  const { server, keyPath } = imported;
  if (server.kind === "stdio") {
    const envKey = imported.path.endsWith(".json") &&
        keyPath.startsWith("mcp.")
      ? "environment"
      : "env";
    for (const [key, value] of Object.entries(server.env)) {
      if (isCredential(key, value)) {
        found.push({
          keyPath: `${keyPath}.${envKey}.${keyPart(key)}`,
          key,
          value,
          movable: true,
        });
      }
    }
    server.args.forEach((arg, index) => {
      const [flag, inline] = splitFlag(arg);
      const next = server.args[index + 1];
      const credentialFlag = flag !== undefined &&
        isCredentialName(flag.replace(/^-+/, ""));
      if (
        looksLikeToken(arg) ||
        (inline !== undefined && credentialFlag && !isPlainValue(inline)) ||
        (inline === undefined && credentialFlag && next !== undefined &&
          !next.startsWith("-") && !isPlainValue(next))
      ) {
        const at = inline === undefined && credentialFlag ? index + 1 : index;
        found.push({
          keyPath: `${keyPath}.args[${at}]`,
          key: `args[${at}]`,
          value: server.args[at],
          movable: false,
        });
      }
    });
  } else {
    const headersKey = keyPath.startsWith("mcp_servers.")
      ? "http_headers"
      : "headers";
    for (const [key, value] of Object.entries(server.headers)) {
      if (isCredential(key, value)) {
        found.push({
          keyPath: `${keyPath}.${headersKey}.${keyPart(key)}`,
          key,
          value,
          movable: true,
        });
      }
    }
    const url = URL.parse(server.url);
    for (const [key, value] of url?.searchParams ?? []) {
      if (isCredential(key, value)) {
        found.push({
          keyPath: `${keyPath}.url (query ${key})`,
          key,
          value,
          movable: false,
        });
      }
    }
    if (url !== null && url.password !== "") {
      found.push({
        keyPath: `${keyPath}.url (password)`,
        key: "url",
        value: url.password,
        movable: false,
      });
    }
  }
  return found;
}

/** `--token=abc` is `["--token", "abc"]`; `--token` is `["--token"]`. */
function splitFlag(arg: string): [string | undefined, string | undefined] {
  if (!arg.startsWith("-")) return [undefined, undefined];
  const at = arg.indexOf("=");
  return at < 0 ? [arg, undefined] : [arg.slice(0, at), arg.slice(at + 1)];
}

/** The service's file, or why sherlock's schema refuses it. */
function serviceFile(
  imported: ImportedServer,
  options: { name: string; credential?: FoundCredential; home?: string },
): PlannedService | string {
  const { server } = imported;
  const { name, credential } = options;
  const split = credential === undefined
    ? undefined
    : splitCredential(credential.key, credential.value);
  const description = `imported from ${
    displayPath(imported.path, options.home)
  } ${imported.keyPath}`;
  const build = (redact: boolean) => {
    const values = (map: Record<string, string>) =>
      Object.fromEntries(
        Object.entries(map)
          .filter(([key]) => key !== credential?.key)
          .map(([key, value]) => [key, redact ? REDACTED_VALUE : value]),
      );
    const serverTable = server.kind === "stdio"
      ? {
        command: server.command,
        ...(server.args.length > 0 ? { args: server.args } : {}),
        ...(Object.keys(values(server.env)).length > 0
          ? { env: values(server.env) }
          : {}),
      }
      : {
        url: server.url,
        ...(server.transport === "sse" ? { transport: "sse" } : {}),
        ...(Object.keys(values(server.headers)).length > 0
          ? { headers: values(server.headers) }
          : {}),
      };
    const token = credential === undefined || split === undefined
      ? undefined
      : {
        source: "secret",
        ...(server.kind === "stdio"
          ? { env: credential.key }
          : { header: credential.key }),
        // The schema's default: "{token}" for env, "Bearer {token}" for a header.
        ...(split.format ===
            (server.kind === "stdio" ? "{token}" : "Bearer {token}")
          ? {}
          : { format: split.format }),
      };
    return {
      service: { name, description },
      server: serverTable,
      ...(token === undefined ? {} : { token }),
    };
  };
  const document = build(false);
  const text = schemaDirective("service") + stringify(document) + "\n";
  const validation = validateService(document, text);
  if (!validation.ok) {
    const { problem } = validation;
    return `sherlock's service schema refuses it (${
      problem.key ?? ""
    }: ${problem.reason})`;
  }
  return {
    name,
    origins: [imported],
    text,
    redacted: stringify(build(true)) + "\n",
    ...(credential === undefined || split === undefined
      ? {}
      : { secret: { value: split.secret, keyPath: credential.keyPath } }),
  };
}

/** A path with the home folder written `~`. */
export function displayPath(path: string, home: string | undefined): string {
  return home !== undefined && home !== "" && path.startsWith(`${home}/`)
    ? `~${path.slice(home.length)}`
    : path;
}
