/**
 * `sherlock import [--dry-run] [--project] [--from PATH]…`: the MCP servers
 * the agents already have become services.d files; their credentials go
 * into the encrypted store, never into a file. Never overwrites a service
 * or a stored secret, never modifies an agent's file, and ends by listing
 * where the agents' files still hold plaintext credentials (never the
 * values), and which of the agents' own backups (Claude Code's
 * `~/.claude/backups/`) hold the same values: listed, never edited. The current folder's project files (a cloned repository's
 * `.mcp.json`) are read only with `--project` or when named with `--from`.
 *
 * @module
 */

import {
  ensureBroker,
  listSecrets,
  setSecret,
  whoami,
} from "../broker/client.ts";
import {
  InvalidFileError,
  listTomlFiles,
  readOperatorFile,
} from "../config/toml_files.ts";
import { ConfigError, ExitCode, NoPermissionError } from "../errors.ts";
import {
  type AgentConfigFile,
  agentConfigFiles,
  type ImportedServer,
  parseAgentConfig,
  projectConfigFiles,
  type SkippedEntry,
} from "../import/agent_configs.ts";
import {
  agentBackupFiles,
  backupsHoldingCredentials,
} from "../import/agent_backups.ts";
import {
  displayPath,
  type ImportPlan,
  planImport,
  type PlannedService,
} from "../import/import_plan.ts";
import { writeFileExclusively } from "../private_files.ts";
import { dirname, isAbsolute, join } from "../runtime/path.ts";
import { writeEditorSchemas } from "../config/editor_schema_files.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { type Printer, printer } from "./output.ts";

/**
 * The largest agent file read: `~/.claude.json` also holds Claude's history
 * of every project, megabytes of it.
 */
export const MAX_AGENT_FILE_BYTES = 64 * 1024 * 1024;

/** Runs the command; returns the exit code. */
export async function importCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const dryRun = args.has("--dry-run");
  const project = args.has("--project");
  const from = args.values("--from");
  const out = printer(context);
  const { env, paths } = context;
  const cwd = Deno.cwd();
  const home = env.HOME;
  const shown = (path: string) => displayPath(path, home);
  const named = from.map((path): AgentConfigFile => ({
    agent: "file",
    path: isAbsolute(path) ? path : join(cwd, path),
    format: "any",
  }));
  const files: AgentConfigFile[] = [
    ...agentConfigFiles(env),
    ...(project ? projectConfigFiles(cwd) : []),
    ...named,
  ];
  const { servers, skipped, problems } = readAgentFiles(files, from.length);
  for (const problem of problems) out.warning(problem);
  const existing = new Set(
    listTomlFiles(paths.servicesDir).map((file) => file.name),
  );
  const plan = planImport(servers, { existing, home });
  if (dryRun) {
    printDryRun(plan, { servicesDir: paths.servicesDir, shown, out });
  } else {
    await carryOut(plan, {
      servicesDir: paths.servicesDir,
      socket: paths.socket,
      brokerLog: paths.brokerLog,
      shown,
      out,
    });
  }
  const skippedEntries = [
    ...skipped,
    ...plan.skipped.map((entry) => ({ ...entry.server, reason: entry.reason })),
  ];
  for (const entry of skippedEntries) {
    out.line(`skipped ${shown(entry.path)} ${entry.keyPath}: ${entry.reason}`);
  }
  if (!project) {
    for (const path of unreadProjectFiles(cwd, files)) {
      out.line(
        `not read: ${
          shown(path)
        }, this folder's project file: it comes with the repository, and its servers would become services of every agent in every folder; "sherlock import --project" (or --from ${
          shown(path)
        }) imports them once you trust it`,
      );
    }
  }
  if (plan.services.length === 0 && skippedEntries.length === 0) {
    out.line("no MCP servers found in the agents' files");
  }
  printPlaintext(plan, { shown, out });
  printBackups(plan, { home, shown, out });
  return problems.length > 0 ? ExitCode.Config : 0;
}

/**
 * The current folder's project files that exist and are not read: neither
 * named with `--from` nor the agent's own (`~/.gemini/settings.json` is
 * both when the current folder is HOME).
 */
function unreadProjectFiles(
  cwd: string,
  read: readonly AgentConfigFile[],
): string[] {
  const asked = new Set(read.map((file) => file.path));
  return projectConfigFiles(cwd).map((file) => file.path).filter((path) => {
    if (asked.has(path)) return false;
    try {
      Deno.statSync(path);
      return true;
    } catch {
      return false;
    }
  });
}

/**
 * Reads every file that exists (each path once); the last `given` files
 * came from `--from` and must exist. A file that cannot be read or parsed
 * is one problem line, and the others are still read.
 */
function readAgentFiles(
  files: readonly AgentConfigFile[],
  given: number,
): { servers: ImportedServer[]; skipped: SkippedEntry[]; problems: string[] } {
  const servers: ImportedServer[] = [];
  const skipped: SkippedEntry[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  files.forEach((file, index) => {
    if (seen.has(file.path)) return;
    seen.add(file.path);
    let text: string | undefined;
    try {
      text = readOperatorFile(file.path, "an MCP config", MAX_AGENT_FILE_BYTES);
    } catch (error) {
      if (!(error instanceof InvalidFileError)) throw error;
      problems.push(`${error.message}; skipped`);
      return;
    }
    if (text === undefined) {
      if (index >= files.length - given) {
        throw new ConfigError(
          `${file.path} (--from): no such file; give the path of an MCP config file`,
        );
      }
      return;
    }
    try {
      const parsed = parseAgentConfig(file, text);
      servers.push(...parsed.servers);
      skipped.push(...parsed.skipped);
    } catch (error) {
      if (!(error instanceof SyntaxError)) throw error;
      problems.push(`${file.path}: ${error.message}; skipped`);
    }
  });
  return { servers, skipped, problems };
}

function printDryRun(
  plan: ImportPlan,
  options: {
    servicesDir: string;
    shown: (path: string) => string;
    out: Printer;
  },
) {
  const { out } = options;
  for (const service of plan.services) {
    out.line(
      `would write ${
        options.shown(join(options.servicesDir, `${service.name}.toml`))
      } (${origins(service, options.shown)}):`,
    );
    for (const line of service.redacted.trimEnd().split("\n")) {
      out.line(`  ${line}`);
    }
    if (service.secret !== undefined) {
      out.line(
        `would store the secret of ${service.name} (the value of ${service.secret.keyPath})`,
      );
    }
  }
  out.line("dry run: nothing was written or stored");
}

async function carryOut(
  plan: ImportPlan,
  options: {
    servicesDir: string;
    socket: string;
    brokerLog: string;
    shown: (path: string) => string;
    out: Printer;
  },
) {
  const { out } = options;
  const withSecrets = plan.services.filter((service) => service.secret);
  if (withSecrets.length > 0) {
    await ensureBroker({ socket: options.socket, logFile: options.brokerLog });
    if (!(await whoami(options.socket)).loggedIn) {
      throw new NoPermissionError(
        `not logged in: ${
          withSecrets.map((service) => service.name).join(", ")
        } ${
          withSecrets.length === 1 ? "has a credential" : "have credentials"
        } for the encrypted store; run "sherlock login", then "sherlock import" again (nothing was written)`,
      );
    }
    const stored = new Set(
      (await listSecrets(options.socket)).secrets.map((secret) => secret.name),
    );
    for (const service of withSecrets) {
      if (!stored.has(service.name)) continue;
      plan.services.splice(plan.services.indexOf(service), 1);
      plan.skipped.push({
        server: service.origins[0],
        reason:
          `a secret named ${service.name} is already stored; not replacing it (run "sherlock secret rm ${service.name}" first to import this one)`,
      });
    }
  }
  if (plan.services.length > 0) {
    Deno.mkdirSync(options.servicesDir, { recursive: true });
    writeEditorSchemas(dirname(options.servicesDir));
  }
  for (const service of [...plan.services]) {
    const path = join(options.servicesDir, `${service.name}.toml`);
    if (service.secret !== undefined) {
      await setSecret({
        socket: options.socket,
        name: service.name,
        value: service.secret.value,
      });
    }
    const written = writeFileExclusively({
      path,
      bytes: new TextEncoder().encode(service.text),
      // Like any file the operator writes there: it holds no secret.
      mode: 0o644,
    });
    if (!written) {
      plan.services.splice(plan.services.indexOf(service), 1);
      plan.skipped.push({
        server: service.origins[0],
        reason: `${options.shown(path)} appeared meanwhile; left as it is`,
      });
      continue;
    }
    out.line(
      `wrote ${options.shown(path)} (${origins(service, options.shown)}${
        service.secret === undefined
          ? ""
          : `; the value of ${service.secret.keyPath} is in the store`
      })`,
    );
  }
}

function origins(
  service: PlannedService,
  shown: (path: string) => string,
): string {
  return "from " +
    service.origins.map((origin) => `${shown(origin.path)} ${origin.keyPath}`)
      .join(", ");
}

function printPlaintext(
  plan: ImportPlan,
  options: { shown: (path: string) => string; out: Printer },
) {
  const { shown, out } = options;
  if (plan.plaintext.length === 0) return;
  out.line(
    "these files still hold credentials in plain text (sherlock never edits them; remove each value once its service works through sherlock):",
  );
  for (const found of plan.plaintext) {
    out.line(`  ${shown(found.path)}: ${found.keyPath}`);
  }
}

/**
 * Names the agents' backup copies that hold a credential found in their
 * files: removing the token from `~/.claude.json` leaves it in Claude's
 * backups. Listed only; sherlock never edits or deletes them.
 */
function printBackups(
  plan: ImportPlan,
  options: {
    home: string | undefined;
    shown: (path: string) => string;
    out: Printer;
  },
) {
  const { out } = options;
  const { holding, problems } = backupsHoldingCredentials({
    files: agentBackupFiles(options.home),
    values: plan.plaintextValues,
    maxBytes: MAX_AGENT_FILE_BYTES,
  });
  for (const problem of problems) out.warning(problem);
  if (holding.length === 0) return;
  out.line(
    "these backups the agents keep of their files hold the same credentials (sherlock only lists them, never edits them; delete each once its credential is out of the file above):",
  );
  for (const path of holding) out.line(`  ${options.shown(path)}`);
}
