/**
 * `sherlock services` lists the services of services.d with whether each
 * could start now; `services show NAME` prints one as sherlock resolved it;
 * `services test NAME` starts one exactly as an agent's session would (the
 * same plan, broker session, token delivery and rendered entry — shim or
 * bridge included) and speaks MCP to it with the official SDK client.
 *
 * @module
 */

import { stringify } from "smol-toml";
import { formatProblem, skippedMalformed } from "../config/toml_files.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { join } from "../runtime/path.ts";
import { importLazily } from "../runtime/lazy_import.ts";
import { ConfigError, ExitCode, UsageError } from "../errors.ts";
import { planDelivery, settleDelivery } from "../render/delivery.ts";
import { serverEntries } from "../render/servers.ts";
import { planSession } from "../launch/plan.ts";
import { type BrokerSession, openBrokerSession } from "../launch/session.ts";
import { loadProfile } from "../profiles/loader.ts";
import { newSessionId } from "../session/records.ts";
import { selfCommand } from "../self_command.ts";
import { loadServices, type Service } from "../services/loader.ts";
import {
  serverReadiness,
  storeView,
  tokenReadiness,
} from "../mcp/readiness.ts";
import type { ProbeResult } from "../mcp/probe.ts";
import { describeRevision, revisionAdvice } from "../mcp/revision.ts";
import type { CommandContext } from "./context.ts";
import type { ParsedArguments } from "./commands.ts";
import {
  columns,
  escapeControls,
  type Printer,
  printer,
  SLOW_HELPER_MS,
  whileWaiting,
} from "./output.ts";
import type { ServicesJson } from "./json_shapes.ts";

/** The agent whose session `services test` starts a service as by default. */
export const DEFAULT_TEST_AGENT = "claude";

/** How long each step of `services test` may take by default, in seconds. */
export const DEFAULT_TEST_TIMEOUT_SECONDS = 20;

/** Runs the command; returns the exit code. */
export async function servicesCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const [name] = args.positionals;
  if (args.subcommand === "show") return await showService(name, context);
  if (args.subcommand === "test") {
    return await testService(parseTestArgs(args), context);
  }
  return await listServices({ json: args.has("--json") }, context);
}

async function listServices(
  options: { json: boolean },
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const { paths, env } = context;
  const cache = new ValidationCache(paths.cacheDir);
  const { services, problems } = await loadServices({ paths, cache });
  const settings = await loadSettings({ paths, cache });
  cache.save();
  // The delivery of an agent whose config is a session file (Claude Code).
  const delivery = planDelivery({
    services,
    format: "mcp-json",
    configured: settings.render.tokens,
    agent: DEFAULT_TEST_AGENT,
  });
  const store = await storeView(paths.socket, services);
  const rows = [[
    "NAME",
    "KIND",
    "TOKEN",
    "DELIVERY",
    "SERVER",
    "TOKEN AVAILABLE",
  ]];
  // Every host is looked up at once: one that does not resolve takes seconds.
  const reachability = await Promise.all(
    services.map((service) => serverReadiness(service, env.PATH)),
  );
  if (options.json) {
    const shape: ServicesJson = {
      services: services.map((service, index) => {
        const name = service.service.name;
        const token = tokenReadiness(service, store, env.PATH);
        return {
          name,
          path: join(paths.servicesDir, `${name}.toml`),
          kind: "command" in service.server ? "stdio" : "remote",
          transport: "command" in service.server
            ? null
            : service.server.transport,
          tokenSource: service.token.source,
          delivery: delivery.get(name)?.kind ?? null,
          serverReachable: reachability[index].reachable,
          server: reachability[index].text,
          tokenStatus: token.status,
          token: token.text,
        };
      }),
      problems: problems.map((problem) => ({
        path: problem.path,
        error: formatProblem(problem),
      })),
    };
    out.json(shape);
    return problems.length > 0 ? ExitCode.Config : 0;
  }
  services.forEach((service, index) => {
    const name = service.service.name;
    rows.push([
      name,
      "command" in service.server
        ? "stdio"
        : `remote (${service.server.transport})`,
      service.token.source,
      delivery.get(name)?.kind ?? "-",
      reachability[index].text,
      tokenReadiness(service, store, env.PATH).text,
    ]);
  });
  if (services.length === 0) {
    out.line(
      `no services in ${paths.servicesDir}; add one, or run "sherlock import"`,
    );
  } else {
    out.columns(rows, "header");
  }
  for (const problem of problems) {
    out.warning(skippedMalformed("service", problem));
  }
  return problems.length > 0 ? ExitCode.Config : 0;
}

/** Loads one service, or throws the one line that says why it cannot. */
async function requireService(
  name: string,
  context: CommandContext,
  cache: ValidationCache,
): Promise<{ service: Service; path: string }> {
  const { paths } = context;
  const { services, problems } = await loadServices({ paths, cache });
  const path = join(paths.servicesDir, `${name}.toml`);
  const service = services.find((found) => found.service.name === name);
  if (service !== undefined) return { service, path };
  const problem = problems.find((found) => found.path === path);
  if (problem !== undefined) throw new ConfigError(formatProblem(problem));
  throw new ConfigError(
    `no service ${name} in ${paths.servicesDir}; "sherlock services" lists them`,
  );
}

async function showService(
  name: string,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const cache = new ValidationCache(context.paths.cacheDir);
  const { service, path } = await requireService(name, context, cache);
  cache.save();
  out.line(`# ${path}`);
  out.line(stringify(service).trimEnd());
  return 0;
}

/** What `services test` was asked. */
interface TestArgs {
  name: string;
  /** `--agent`, if given. */
  agent?: string;
  timeoutMs: number;
}

function parseTestArgs(args: ParsedArguments): TestArgs {
  const timeout = args.value("--timeout");
  const timeoutSeconds = timeout === undefined
    ? DEFAULT_TEST_TIMEOUT_SECONDS
    : Number(timeout);
  if (!(timeoutSeconds > 0) || timeoutSeconds > 3600) {
    throw new UsageError(
      "--timeout must be a number of seconds between 0 and 3600",
    );
  }
  return {
    name: args.positionals[0],
    agent: args.value("--agent"),
    timeoutMs: timeoutSeconds * 1000,
  };
}

/**
 * The agent whose session the test starts the service as: `--agent`, else
 * {@linkcode DEFAULT_TEST_AGENT}, else, when the service's `[service]
 * agents` leaves that one out, the first agent it names. An `--agent` that
 * the list leaves out is a usage error: no session of it gets the service.
 */
function testAgent(service: Service, requested: string | undefined): string {
  const agents = service.service.agents;
  if (requested !== undefined) {
    if (agents !== undefined && !agents.includes(requested)) {
      throw new UsageError(
        `service ${service.service.name} is only for agents ${
          agents.join(", ")
        } (its [service] agents), so no session of ${requested} gets it; use --agent ${
          agents[0]
        }`,
      );
    }
    return requested;
  }
  return agents === undefined || agents.includes(DEFAULT_TEST_AGENT)
    ? DEFAULT_TEST_AGENT
    : agents[0];
}

async function testService(
  request: TestArgs,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const { paths, env } = context;
  const cache = new ValidationCache(paths.cacheDir);
  const { service } = await requireService(request.name, context, cache);
  const agent = testAgent(service, request.agent);
  const profile = await loadProfile(agent, { paths, cache });
  const settings = await loadSettings({ paths, cache });
  cache.save();
  const plan = planSession({
    agent,
    profile,
    services: [service],
    settings,
    userArgs: [],
    context: { env },
    session: newSessionId(),
    runtimeDir: paths.runtimeDir,
    socket: paths.socket,
    selfCommand: selfCommand(),
    // One service under test: its failure is the answer, not a warning.
    strict: true,
  });
  const name = request.name;
  const delivery = plan.delivery.get(name);
  out.line(
    `service ${name}: ${
      "command" in service.server ? "stdio" : "remote"
    }, token ${service.token.source}, delivery ${
      delivery?.kind ?? "none"
    } (as agent ${agent}'s session starts it)`,
  );
  let started = performance.now();
  let broker: BrokerSession | undefined;
  try {
    broker = await openBrokerSession({
      delivery: plan.delivery,
      socket: paths.socket,
      session: plan.session,
      agent,
    });
    const fetched = broker === undefined
      ? { tokens: new Map<string, string>(), deferred: [], failed: new Map() }
      : await whileWaiting("the token", broker.fetchTokens(), {
        afterMs: SLOW_HELPER_MS,
      });
    // What a session would start without (a missing secret, helper or
    // grant) fails the test with the line that says what to do.
    const failure = fetched.failed.get(name) ??
      (await broker?.unreadyServices(plan.services))?.get(name);
    if (failure !== undefined) throw failure;
    if (broker !== undefined) {
      out.line(
        `  ${BROKER_LABEL}  ${msOf(started)}  session registered, token ${
          fetched.tokens.size > 0 ? "fetched" : "left to the shim or bridge"
        }`,
      );
    }
    const settled = settleDelivery(plan.delivery, fetched);
    const entry = serverEntries([service], {
      delivery: settled,
      tokens: fetched.tokens,
      shim: { ...plan.shim, capability: broker?.capability },
    })[name];
    const probe = await importLazily<typeof import("../mcp/probe.ts")>(
      "lib/mcp/probe.ts",
    );
    started = performance.now();
    const result = await probe.probeServer({
      entry,
      env: plan.env,
      timeoutMs: request.timeoutMs,
    });
    return printProbe(service, result, out);
  } finally {
    await broker?.end();
  }
}

/** The width of a step's name: `server/discover`, the longest. */
const STEP_WIDTH = 15;

const BROKER_LABEL = "broker".padEnd(STEP_WIDTH);

function msOf(started: number): string {
  return `${Math.round(performance.now() - started)} ms`.padStart(8);
}

function printProbe(
  service: Service,
  result: ProbeResult,
  out: Printer,
): number {
  const name = service.service.name;
  for (const step of result.steps) {
    const failed = !result.ok && step === result.steps.at(-1);
    const what = failed
      ? "failed"
      : step.step !== "tools/list" && result.ok
      ? `server ${escapeControls(result.server.name)} ${
        escapeControls(result.server.version)
      }`
      : result.ok
      ? `${result.tools.length} tool${result.tools.length === 1 ? "" : "s"}`
      : "answered";
    out.line(
      `  ${step.step.padEnd(STEP_WIDTH)}  ${
        `${step.ms} ms`.padStart(8)
      }  ${what}`,
    );
  }
  if (result.ok) {
    out.line(`revision: ${describeRevision(result.revision)}`);
    out.line("tools:");
    const rows = result.tools.map((tool) => [
      `  ${escapeControls(tool.name)}`,
      escapeControls(tool.description),
    ]);
    for (const line of columns(rows)) out.line(line);
    if (rows.length === 0) out.line("  (none)");
    const deprecated = revisionAdvice(result.revision, name);
    if (deprecated !== undefined) {
      out.warning(
        `service ${name}: the legacy HTTP+SSE transport is deprecated; ${deprecated}`,
      );
    }
    return 0;
  }
  if (result.stderrTail.length > 0) {
    out.line("the server's stderr (last lines):");
    // Escaped already (lib/mcp/probe.ts), and printLine escapes again.
    for (const line of result.stderrTail) out.line(`  | ${line}`);
  }
  out.warning(`service ${name}: ${result.reason}; ${advice(service, result)}`);
  return ExitCode.Unavailable;
}

/** The one line on what to do after a failed probe. */
function advice(
  service: Service,
  result: Extract<ProbeResult, { ok: false }>,
): string {
  const name = service.service.name;
  switch (result.cause) {
    case "unauthorized":
    case "forbidden":
      return refusedAdvice(service);
    case "start":
      return `install the server or fix [server] command in services.d/${name}.toml`;
    case "garbage":
      return "a stdio server must print only JSON-RPC on stdout (logs go to stderr): fix its command or arguments";
    case "timeout":
      return "check that [server] command starts an MCP server on stdio (or the URL is one), or raise --timeout";
    case "closed":
      return "its stderr above says why it exited; run its command by hand to see more";
    default:
      return `check services.d/${name}.toml against the server's documentation`;
  }
}

/**
 * What to do when the server refused the token (HTTP 401 or 403): what
 * the broker's refusals and the bridge say for the same `[token] source`.
 */
function refusedAdvice(service: Service): string {
  const name = service.service.name;
  switch (service.token.source) {
    case "oauth":
      return service.token.grant === "client_credentials"
        ? `check the client's secret or key and its scopes ([token] in services.d/${name}.toml)`
        : `run "sherlock auth ${name}"`;
    case "secret":
      return `store the right token with "sherlock secret set ${name}"`;
    case "command":
      return `check the token that [token] command prints (services.d/${name}.toml)`;
    case "none":
      return `the server needs a token: add [token] to services.d/${name}.toml`;
    default:
      return `check [token] in services.d/${name}.toml and that the login is held ("sherlock whoami")`;
  }
}
