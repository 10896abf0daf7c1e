/**
 * Every built-in agent's real CLI (Copilot, Claude Code, Codex, Gemini,
 * Qwen Code, Amp, opencode) reaches a remote MCP server with a token
 * through sherlock's bridge, the default delivery of a remote service with
 * a token. The remote fixture (tests/fixtures/remote_mcp_server.ts,
 * Streamable HTTP or legacy SSE behind a bearer token) runs in this
 * process. The service's token is a stored secret, or, in one case, an
 * OAuth grant: the fixture's real authorization server (oidc-provider,
 * tests/fixtures/oauth/), `sherlock auth` approved by the headless
 * browser, and the remote server checking each access token's signature
 * and audience. `sherlock <agent> …` renders a stdio entry that runs
 * `sherlock bridge`, and the real CLI starts it and lists the remote
 * server's tools (its model is a closed port, so nothing calls them). In
 * one more case each, every agent but Amp calls one: its model is a
 * scripted endpoint on loopback (tests/e2e/fixtures/scripted_anthropic.ts
 * for Claude Code, scripted_responses.ts for Codex,
 * scripted_chat_completions.ts for Qwen Code, Copilot's BYOK provider and
 * opencode, scripted_gemini.ts for Gemini CLI; the real APIs cannot be
 * reached here) that answers with a call of the remote tool, then with a
 * final text once the tool's result came back. Amp is left at listing: it
 * asks its own server (`AMP_URL`) for everything, through a private RPC
 * API (`POST /api/internal?getUserInfo`, then `?loadPlugins`, … seen on a
 * logging stand-in), and keeps model providers on that server (`amp
 * model-providers`); neither its `--help` nor its binary (a compiled
 * bundle whose source is not plain text) shows a model base URL to point
 * at loopback.
 *
 * Copilot, Qwen Code and opencode list the tools in their calling case
 * only (it checks all that a listing case does, and keeps the file near
 * three minutes); Claude Code, Codex and Gemini CLI also list in a case
 * that ends with SIGTERM.
 *
 * Checked: the server got `initialize` and `tools/list` with the broker's
 * token (no 401 in the session); the rendered config (file, the operator's
 * merged file, or Codex's argv) runs the bridge and holds no token; no
 * process ever had a token in its environment or argv (the bridge holds it
 * in memory only); after SIGTERM (or the CLI's own exit: Amp and every
 * calling case end by themselves) nothing is left running and no file or output holds a
 * token. With OAuth, "a token" is every access token the server saw and
 * every refresh token the authorization server issued: the daemon's memory
 * is the only place they may be (its store is encrypted; its argv and
 * environment are searched too). With EMA (Enterprise-Managed
 * Authorization), no `sherlock auth` and no browser for the service: the
 * operator's `sherlock login` at a second oidc-provider (the OpenID
 * provider), whose ID-JAG the server's authorization server redeems; "a
 * token" then also covers the ID token, every ID-JAG and the login's
 * refresh tokens.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { type BrokerHome, createBrokerHome } from "../helpers/broker_home.ts";
import { listNames, type TestHome } from "../helpers/home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { tokenServiceToml } from "../helpers/profiles.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import { browserEnv, startAuthServer } from "../fixtures/oauth/mod.ts";
import {
  type RemoteCounts,
  sha256,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";
import {
  CLI_PINS,
  delay,
  installClis,
  startCli,
  stopCli,
  type StopResult,
} from "./harness.ts";
import { watchProcesses } from "./process_watch.ts";
import {
  type AgentRecipe,
  amp,
  callingToolRecipe,
  claude,
  claudeCallingTool,
  codex,
  codexCallingTool,
  copilotCallingTool,
  gemini,
  geminiCallingTool,
  opencodeCallingTool,
  qwenCallingTool,
  type ToolCallingAgent,
} from "./recipes.ts";

/** The remote service's name. */
const SERVICE = "remote";

/** How one case runs. */
interface BridgeCase {
  /** The remote server's transport (default `http`, Streamable HTTP). */
  transport?: "http" | "sse";
  /**
   * Where the broker gets the token: a stored secret (default), or an
   * OAuth grant from the fixture's authorization server, given by
   * `sherlock auth` through the headless browser.
   */
  source?: "secret" | "oauth" | "ema";
}

/** The client id the OpenID provider names in ID-JAGs (EMA). */
const EMA_CLIENT = "sherlock-ema";
/** The login's client at the OpenID provider (EMA). */
const LOGIN_CLIENT = "sherlock-cli";

/** What a case saw, for a test's own checks on top of the module's list. */
interface BridgeOutcome {
  /** What reached the remote server. */
  counts: RemoteCounts;
  /** Each token the remote server accepted (the OAuth access tokens). */
  accepted: string[];
  /** What sherlock (so the agent) printed on stdout. */
  stdout: string;
}

/** Runs `recipe` with one remote service; checks the module's list. */
async function runBridgeCase(
  recipe: AgentRecipe,
  options: BridgeCase = {},
): Promise<BridgeOutcome> {
  const { agent, cli: key } = recipe;
  const transport = options.transport ?? "http";
  const source = options.source ?? "secret";
  const { [key]: cliPath } = await installClis([key]);
  const secret = `e2e_${crypto.randomUUID().replaceAll("-", "")}`;
  const accepted = new Set<string>();
  const idJagClientIds: Record<string, string> = {};
  await using provider = source === "ema"
    ? await startAuthServer({
      tokenExchange: true,
      requireResource: false,
      idJagClientIds,
      clients: [{
        client_id: LOGIN_CLIENT,
        redirect_uris: ["http://127.0.0.1/callback"],
      }],
    })
    : undefined;
  await using as = source === "oauth"
    ? await startAuthServer()
    : provider
    ? await startAuthServer({
      idJag: { issuer: provider.issuer, jwksUrl: provider.jwksUrl },
      clients: [{
        client_id: EMA_CLIENT,
        redirect_uris: ["http://127.0.0.1/callback"],
        grant_types: [
          "authorization_code",
          "refresh_token",
          "urn:ietf:params:oauth:grant-type:jwt-bearer",
        ],
      }],
    })
    : undefined;
  if (provider && as) idJagClientIds[as.issuer] = EMA_CLIENT;
  // The server's URL is its resource, known once it listens.
  const late: { url?: string } = {};
  const good = async (bearer: string) =>
    as === undefined
      ? bearer === secret
      : await as.verifyAccessToken(bearer, { resource: late.url! })
        .then(() => true, () => false);
  await using remote = await startRemoteMcpServer({
    async verify(bearer) {
      if (!await good(bearer)) return false;
      accepted.add(bearer);
      return true;
    },
    resourceMetadata: as && (() => ({
      resource: late.url,
      authorization_servers: [as.issuer],
      scopes_supported: ["mcp:tools"],
    })),
  });
  late.url = remote.url;
  await using home = await createBrokerHome();
  home.env.TERM = "dumb";
  Deno.symlinkSync(cliPath, join(home.bin, CLI_PINS[key].bin));
  if (recipe.profile) {
    home.writeProfile(agent, recipe.profile(CLI_PINS[key].bin));
  }
  if (provider) {
    Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
    Deno.writeTextFileSync(
      join(home.configHome, "sherlock", "config.toml"),
      `[login]\nprovider = "oidc"\nissuer = "${provider.issuer}"\nclient_id = "${LOGIN_CLIENT}"\n`,
    );
    const login = await home.sherlock(["login"], { env: browserEnv() });
    assert.equal(login.code, 0, login.stderr);
  } else await home.login();
  const url = transport === "sse" ? remote.sseUrl : remote.url;
  home.writeService(
    SERVICE,
    tokenServiceToml({
      name: SERVICE,
      source: source === "ema" ? "oauth" : source,
      url,
    }).replace(
      "[token]",
      `transport = "${transport}"\n\n[token]${
        source === "ema"
          ? `\nclient_id = "${EMA_CLIENT}"\nema_audiences = ["${as!.issuer}"]`
          : ""
      }`,
    ),
  );
  const printed = await giveToken(home, source, secret);
  // `sherlock auth` asks without a token first, to read the 401's challenge.
  const refusedBefore = remote.counts.unauthorized;
  // Every secret of the case: the stored one, or the access tokens the
  // server saw and the refresh tokens the authorization server issued.
  const secrets = () =>
    as === undefined ? [secret] : [
      ...accepted,
      ...as.refreshTokenValues(),
      ...(provider?.refreshTokenValues() ?? []),
      ...(provider?.exchanges ?? []).flatMap((e) => [
        e.subjectToken ?? "",
        e.issued ?? "",
      ]).filter((t) => t),
    ];
  assert.ok(
    secrets().length > 0,
    "no refresh token was issued: the search for one would be blind",
  );
  if (provider && as) {
    assert.equal(as.counts.authorization, 0, "EMA opened no browser");
  }
  const seeded =
    await recipe.seed?.(home, join(home.scratch, "operator.jsonl")) ??
      [];
  const env = { ...home.env, ...recipe.env(home) };
  const [deno, ...args] = sherlockCommand([agent, ...recipe.args]);
  const cli = startCli(deno, { args, env, cwd: home.work });
  const watch = watchProcesses({
    root: cli.pid,
    token: secrets()[0],
    moreTokens: secrets,
    files: () => [...renderedFiles(home, agent), ...seeded],
  });
  const listed = () => (remote.counts.methods["tools/list"] ?? 0) > 0;
  const done = recipe.awaitExit ? () => cli.exited() : listed;
  let stop: StopResult;
  try {
    const deadline = performance.now() + 120_000;
    while (!done()) {
      if (cli.exited() || performance.now() > deadline) {
        throw new Error(
          `${agent} never listed the remote server's tools (${
            cli.exited() ? "it exited" : "timed out"
          }); counts ${JSON.stringify(remote.counts)}\n${
            cli.output().slice(-4000)
          }`,
        );
      }
      await delay(50);
    }
  } finally {
    stop = await stopCli(cli, {
      signal: "SIGTERM",
      graceMs: 20_000,
      settleMs: 15_000,
    });
    watch.stop();
  }
  const output = cli.output();
  const tokens = secrets();

  // The server was reached with the broker's token, through the bridge.
  assert.ok(listed(), `${agent} never listed the remote server's tools`);
  assert.ok((remote.counts.methods.initialize ?? 0) >= 1);
  assert.equal(
    remote.counts.unauthorized,
    refusedBefore,
    "a request of the session had a bad token",
  );
  assert.ok(accepted.size > 0, "the server accepted no token");
  const rendered =
    [...watch.files.values()].flat().find((text) =>
      text.includes(`"${SERVICE}"`)
    ) ?? [...watch.sightings.values()].flatMap((s) => s.cmdlines)
      .find((line) => line.includes(`mcp_servers.${SERVICE}=`));
  assert.ok(rendered !== undefined, `never saw ${agent}'s rendered config`);
  assert.match(rendered, /main\.ts"?,?\s*"?bridge\b/, "no bridge entry");
  assert.ok(
    !tokens.some((t) => rendered.includes(t)),
    "the config holds a token",
  );
  const sightings = [...watch.sightings.values()];
  assert.ok(
    sightings.some((s) => s.cmdlines.some((line) => /\bbridge\b/.test(line))),
    "no bridge process was seen",
  );
  const leaks = sightings.filter((s) => s.tokenInEnviron || s.tokenInCmdline)
    .map((s) => `${s.pid}: ${s.cmdlines.join(" | ")}`);
  assert.deepEqual(leaks, [], "a token is in these processes' env or argv");

  // Stopped and cleaned up.
  assert.deepEqual(stop.leftovers, [], `${agent} left processes behind`);
  for (const text of [output, printed]) {
    assert.ok(
      !tokens.some((t) => text.includes(t)),
      "sherlock printed a token",
    );
  }
  assert.deepEqual(
    filesContaining(home.root, tokens, [home.scratch]),
    [],
    "files under the throwaway tree hold a token",
  );
  if (as !== undefined) {
    // The daemon holds the grant in memory (its store is encrypted, and
    // searched above): not in its argv or environment either.
    for (const pid of home.daemonPids()) {
      for (const file of ["cmdline", "environ"]) {
        const text = Deno.readTextFileSync(`/proc/${pid}/${file}`);
        assert.ok(!tokens.some((t) => text.includes(t)), `daemon's ${file}`);
      }
    }
  }
  // Not asserted: whether the remote session was DELETEd depends on how the
  // agent ends its servers (a closed stdin or SIGTERM: yes; SIGKILL: no).
  const open = remote.openSessions();
  console.log(
    `${agent} ${CLI_PINS[key].version} via sherlock bridge (${transport}, ` +
      `${source}): ${remote.counts.methods["tools/list"]} tools/list, ` +
      `${remote.counts.methods["tools/call"] ?? 0} tools/call, ` +
      `${remote.counts.requests} requests, ${
        stop.signalled ? `stopped in ${Math.round(stop.ms)} ms` : "exited"
      }, ${open} remote session(s) left open`,
  );
  return {
    counts: structuredClone(remote.counts),
    accepted: [...accepted],
    stdout: cli.stdout(),
  };
}

/**
 * Gives the broker the service's token: stores `secret`, or authorizes the
 * service with `sherlock auth` through the headless browser. Returns what
 * sherlock printed.
 */
async function giveToken(
  home: BrokerHome,
  source: "secret" | "oauth" | "ema",
  secret: string,
): Promise<string> {
  if (source === "ema") {
    // No `sherlock auth`: `auth status` has the broker discover the server
    // (its unauthenticated probe counts before the session) and say EMA.
    const status = await home.sherlock(["auth", "status"]);
    assert.equal(status.code, 0, status.stderr);
    assert.match(status.stdout, new RegExp(`^${SERVICE}\\s+EMA\\s`, "m"));
    return status.stdout + status.stderr;
  }
  const result = source === "secret"
    ? await home.sherlock(["secret", "set", SERVICE], { stdin: secret })
    : await home.sherlock(["auth", SERVICE], { env: browserEnv() });
  assert.equal(result.code, 0, `giving the token failed: ${result.stderr}`);
  return result.stdout + result.stderr;
}

/** The files in which sherlock's config for `agent` may show. */
function renderedFiles(home: TestHome, agent: string): string[] {
  return listNames(home.runtimeDir).filter((name) =>
    name.startsWith(`${agent}.`) && name.endsWith(".mcp.json")
  ).map((name) => join(home.runtimeDir, name));
}

/**
 * Runs `agent` calling the remote service's `whoami` tool for its scripted
 * model, through {@linkcode runBridgeCase} (so with all its checks); then
 * checks that the model got the call of the tool under the CLI's name for
 * it, that the server ran it once, that its answer reached the model, and
 * that the CLI printed the model's final text.
 */
async function runCallingCase(agent: ToolCallingAgent): Promise<void> {
  const name = agent.base.agent;
  const whoami = { server: SERVICE, tool: "whoami" };
  const finalText = `the remote answer came back ${crypto.randomUUID()}`;
  await using model = agent.startModel({
    // Any name that ends in the tool's, so that a CLI that names it
    // otherwise still calls it, and the check below shows that name.
    pickTool: (names) => names.find((tool) => tool.endsWith(whoami.tool)),
    finalText,
  });
  const { counts, accepted, stdout } = await runBridgeCase(
    callingToolRecipe(agent, { ...whoami, modelUrl: model.url }),
  );
  assert.equal(
    model.calledTool,
    agent.toolName(whoami),
    `${name} named the remote tool otherwise`,
  );
  assert.equal(counts.methods["tools/call"], 1);
  // whoami answers the SHA-256 of the token its call came with: the
  // broker's, and that answer reached the model.
  const answer = sha256(accepted[0]);
  const results = model.toolResults();
  const message = `the tool's answer did not reach the model: ${results}`;
  switch (agent.toolResult) {
    case "alone":
      assert.deepEqual(results, [answer]);
      break;
    case "among":
      assert.ok(results.includes(answer), message);
      break;
    case "inside":
      assert.ok(results.some((text) => text.includes(answer)), message);
      break;
  }
  assert.ok(stdout.includes(finalText), `${name} printed: ${stdout}`);
}

Deno.test("remote bridge: codex lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(codex);
});

Deno.test("remote bridge: codex reaches a legacy SSE server through the bridge", async () => {
  await runBridgeCase(codex, { transport: "sse" });
});

Deno.test("remote bridge: claude lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(claude);
});

Deno.test("remote bridge: gemini (merged settings) lists a remote server's tools through sherlock bridge", async () => {
  await runBridgeCase(gemini);
});

Deno.test("remote bridge: amp lists a Streamable HTTP server's tools through sherlock bridge", async () => {
  await runBridgeCase(amp);
});

Deno.test("remote bridge: claude lists tools through the bridge with an OAuth grant from sherlock auth", async () => {
  const { accepted } = await runBridgeCase(claude, { source: "oauth" });
  // A JWT from the authorization server, not a stored secret.
  assert.match(accepted[0], /^[\w-]+\.[\w-]+\.[\w-]+$/);
});

Deno.test("remote bridge: claude lists tools through the bridge with an EMA token (ID-JAG from the SSO login, no browser)", async () => {
  const { accepted } = await runBridgeCase(claude, { source: "ema" });
  assert.match(accepted[0], /^[\w-]+\.[\w-]+\.[\w-]+$/);
});

Deno.test("remote bridge: claude lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(claudeCallingTool);
});

Deno.test("remote bridge: codex lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(codexCallingTool);
});

Deno.test("remote bridge: qwen lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(qwenCallingTool);
});

Deno.test("remote bridge: copilot lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(copilotCallingTool);
});

Deno.test("remote bridge: gemini lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(geminiCallingTool);
});

Deno.test("remote bridge: opencode lists and calls a remote server's tool through sherlock bridge (scripted model endpoint)", async () => {
  await runCallingCase(opencodeCallingTool);
});
