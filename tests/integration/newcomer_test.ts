/**
 * What a newcomer trips on, walked as a newcomer would: a server that is
 * not installed (or a whole command line in `command`), a credential
 * helper that is not installed, a missing secret or OAuth grant, `--help`
 * while logged out, and "which servers did I get?" (`-v`). sherlock,
 * the broker, the fake agent and the helpers are real processes; the
 * OAuth service is never contacted (no grant is the point).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, AgentRun, installFakeAgent } from "../helpers/agent.ts";
import {
  AGENT,
  auditEntries,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { createTestHome } from "../helpers/home.ts";
import { stdioServiceToml, tokenServiceToml } from "../helpers/profiles.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";

/** A credential helper no machine has: the README's `gh` on a machine without it. */
const MISSING_HELPER = "sherlock-test-no-such-gh";

Deno.test("a server that is not installed, or a command line in command: one line each, at launch and in --dry-run; the session starts", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  // Written by hand: writeService would install the command.
  Deno.writeTextFileSync(
    join(home.servicesDir, "github.toml"),
    stdioServiceToml("github", { command: "github-mcp-server" }),
  );
  Deno.writeTextFileSync(
    join(home.servicesDir, "pkg.toml"),
    stdioServiceToml("pkg", { command: "npx -y @acme/mcp" }),
  );
  const expected = [
    "sherlock: service github: its command github-mcp-server is not on PATH; install the server or give its full path in services.d/github.toml",
    'sherlock: service pkg: command "npx -y @acme/mcp" is a whole command line and args is empty; ' +
    'in services.d/pkg.toml write command = "npx" and args = ["-y", "@acme/mcp"]',
  ];
  const dryRun = await runSherlock(["--dry-run", "fake"], { env: home.env });
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.deepEqual(lines(dryRun.stderr), expected);
  assert.match(dryRun.stdout, /^services +files, github, pkg$/m);

  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(lines(result.stderr), expected);
  // The agent still gets every server: it may know better, and says so.
  assert.deepEqual(
    Object.keys(JSON.parse(agent.record().config!.text!).mcpServers),
    ["files", "github", "pkg"],
  );
});

Deno.test("a credential helper that is not installed: the session starts without its service, in one line; --strict and [run] strict stop it with 69", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "github",
    tokenServiceToml({
      name: "github",
      command: [MISSING_HELPER, "auth", "token"],
    }),
  );
  const notes = home.addHelperService("notes");
  await home.login();

  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  const warnings = lines(result.stderr);
  assert.equal(warnings.length, 1, result.stderr);
  assert.match(
    warnings[0],
    new RegExp(
      `^sherlock: .*service github.*${MISSING_HELPER}.*not found.*; starting the session without service github$`,
    ),
  );
  const servers = JSON.parse(record!.config!.text!).mcpServers;
  assert.deepEqual(Object.keys(servers), ["notes"]);
  assert.equal(servers.notes.env.NOTES_TOKEN, notes.token);

  const strict = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(strict.result.code, 69, strict.result.stderr);
  assert.equal(strict.record, undefined, "the agent is not started");
  assert.equal(lines(strict.result.stderr).length, 1);
  assert.match(strict.result.stderr, /service github/);
  assert.doesNotMatch(strict.result.stderr, /starting the session/);

  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    "[run]\nstrict = true\n",
  );
  const configured = await home.runAgent();
  assert.equal(configured.result.code, 69, configured.result.stderr);
  assert.equal(configured.record, undefined);
});

Deno.test("a shim's credential helper that is not installed: one line before the agent starts; the entry stays", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "github",
    tokenServiceToml({
      name: "github",
      command: [MISSING_HELPER, "auth", "token"],
      delivery: "shim",
    }),
  );
  await home.login();
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: service github: its credential helper ${MISSING_HELPER} is not on PATH, so its shim will get no token; ` +
    "install it or fix [token] command in services.d/github.toml",
  ]);
  const servers = JSON.parse(record!.config!.text!).mcpServers;
  assert.ok(servers.github.args.includes("shim"));
  // The dry run, which starts nothing, says it too.
  const dryRun = await home.sherlock(["--dry-run", AGENT]);
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.deepEqual(lines(dryRun.stderr), lines(result.stderr));
});

Deno.test("a missing secret: inline, left out; through the shim, kept and named; an OAuth service without a grant keeps its bridge; --strict: 77", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeService(
    "api",
    tokenServiceToml({ name: "api", source: "secret" }),
  );
  home.writeService(
    "wiki",
    tokenServiceToml({ name: "wiki", source: "secret", delivery: "shim" }),
  );
  home.writeService(
    "linear",
    tokenServiceToml({
      name: "linear",
      source: "oauth",
      url: "http://127.0.0.1:9/mcp",
    }),
  );
  await home.login();

  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  assert.deepEqual(lines(result.stderr), [
    'sherlock: no secret stored for service api; run "sherlock secret set api"; starting the session without service api',
    'sherlock: service linear needs authorization: run "sherlock auth linear"; service linear answers the agent with this error until then (no restart needed)',
    'sherlock: no secret stored for service wiki; run "sherlock secret set wiki"; service wiki answers the agent with this error until then (no restart needed)',
  ]);
  const servers = JSON.parse(record!.config!.text!).mcpServers;
  assert.deepEqual(Object.keys(servers).sort(), ["linear", "wiki"]);
  assert.ok(servers.linear.args.includes("bridge"), "linear's bridge stays");
  assert.ok(servers.wiki.args.includes("shim"), "wiki's shim stays");

  const strict = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(strict.result.code, 77, strict.result.stderr);
  assert.equal(strict.record, undefined);
  assert.deepEqual(lines(strict.result.stderr), [
    'sherlock: no secret stored for service api; run "sherlock secret set api"',
  ]);

  // With the inline secret stored, the grant is what stops a strict session.
  const set = await home.sherlock(["secret", "set", "api"], {
    stdin: "tok_api\n",
  });
  assert.equal(set.code, 0, set.stderr);
  const oauth = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(oauth.result.code, 77, oauth.result.stderr);
  assert.deepEqual(lines(oauth.result.stderr), [
    'sherlock: service linear needs authorization: run "sherlock auth linear"',
  ]);
});

Deno.test("sherlock claude --help while logged out: claude's help, no broker, no MCP config, no audit entry", async () => {
  await using home = await createBrokerHome();
  installFakeAgent(join(home.bin, "claude"));
  home.writeService(
    "github",
    tokenServiceToml({ name: "github", command: [MISSING_HELPER] }),
  );
  for (const flag of ["--help", "-h", "--version", "-v"]) {
    using agent = new AgentRun(home.scratch);
    const result = await home.sherlock(["claude", flag, "extra"], {
      env: agent.env,
    });
    assert.equal(result.code, 0, `${flag}: ${result.stderr}`);
    assert.equal(result.stderr, "", flag);
    assert.deepEqual(agent.record().args, [flag, "extra"], flag);
  }
  assert.equal(await home.health(), undefined, "no broker was started");
  assert.deepEqual(home.runtimeFiles(), []);
  assert.deepEqual(auditEntries(home), []);
  assert.deepEqual(home.sessionRecords(), []);

  // The same agent with a prompt is a session, which needs the login.
  using session = new AgentRun(home.scratch);
  const prompt = await home.sherlock(["claude", "-p", "--help"], {
    env: session.env,
  });
  assert.equal(prompt.code, 77, prompt.stderr);
  assert.equal(session.hasStarted, false);
});

Deno.test("[argv] no_session keeps [env] and [forbid]; the dry run says there is no session", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, {
    name: "fake",
    env: { FAKE_MODE: "quiet" },
    forbid: ["FAKE_SECRET"],
    noSession: ["--version"],
  });
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake", "--version"], {
    env: { ...home.env, ...agent.env, FAKE_SECRET: "s3cret" },
  });
  assert.equal(result.code, 0, result.stderr);
  const record = agent.record();
  assert.deepEqual(record.args, ["--version"]);
  assert.equal(record.env.FAKE_MODE, "quiet");
  assert.equal(record.env.FAKE_SECRET, undefined);
  assert.equal(record.env.SHERLOCK_MCP_CONFIG, undefined);

  const dryRun = await runSherlock(["--dry-run", "fake", "--version"], {
    env: home.env,
  });
  assert.equal(dryRun.code, 0, dryRun.stderr);
  assert.match(
    dryRun.stdout,
    /^services +\(none: --version needs no session\)$/m,
  );
  assert.match(dryRun.stdout, /^config +\(none, and no broker\)$/m);
  assert.doesNotMatch(dryRun.stdout, /SHERLOCK_MCP_CONFIG/);
});

Deno.test("-v and SHERLOCK_VERBOSE=1: one line naming the agent, its services and each token's way; an agent's own -v is the agent's", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.addHelperService("notes");
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  home.writeService(
    "github",
    tokenServiceToml({ name: "github", command: [MISSING_HELPER] }),
  );
  await home.login();
  const summary =
    `sherlock: agent ${AGENT}: services files (no token), notes (token inline); left out: github`;

  const verbose = await home.runAgent({ runOptions: ["-v"] });
  assert.equal(verbose.result.code, 0, verbose.result.stderr);
  const said = lines(verbose.result.stderr);
  assert.equal(said.length, 2, verbose.result.stderr);
  assert.match(said[0], /starting the session without service github$/);
  assert.equal(said[1], summary);

  using agent = new AgentRun(home.scratch);
  const byVariable = await home.sherlock([AGENT], {
    env: { ...agent.env, SHERLOCK_VERBOSE: "1" },
  });
  assert.equal(byVariable.code, 0, byVariable.stderr);
  assert.equal(lines(byVariable.stderr).at(-1), summary);

  const quiet = await home.runAgent({ args: ["-v"] });
  assert.equal(quiet.result.code, 0, quiet.result.stderr);
  assert.equal(lines(quiet.result.stderr).length, 1, "no summary");
  assert.equal(quiet.record!.args.at(-1), "-v", "the agent's own -v");
});

Deno.test("one typo in a stdio service: one problem, worded alike by services, doctor and run --dry-run; no follow-on complaint", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  const path = join(home.servicesDir, "typo.toml");
  const cases: [string, string][] = [
    // `comand`: no command and no url, so no follow-on about the kind
    // (`token.header: missing` for what is a stdio server).
    [
      '[service]\nname = "typo"\n[server]\ncomand = "files"\n[token]\nsource = "secret"\nenv = "TYPO_TOKEN"\n',
      `${path}:4: server.comand: unknown key; did you mean command? (allowed here: command, args, env, url, transport, headers)`,
    ],
    // `evn`: not also `token.env: missing`.
    [
      '[service]\nname = "typo"\n[server]\ncommand = "files"\n[token]\nsource = "secret"\nevn = "TYPO_TOKEN"\n',
      `${path}:7: token.evn: unknown key; did you mean env? (allowed here: `,
    ],
  ];
  for (const [text, problem] of cases) {
    Deno.writeTextFileSync(path, text);
    const expected = `skipped malformed service ${problem}`;
    const services = await runSherlock(["services"], { env: home.env });
    assert.equal(services.code, 78);
    const dryRun = await runSherlock(["--dry-run", "fake"], { env: home.env });
    assert.equal(dryRun.code, 0, dryRun.stderr);
    for (const result of [services, dryRun]) {
      const said = lines(result.stderr);
      assert.equal(said.length, 1, result.stderr);
      assert.ok(said[0].startsWith(`sherlock: ${expected}`), said[0]);
    }
    const doctor = await runSherlock(["doctor", "--json"], { env: home.env });
    const check = JSON.parse(doctor.stdout).checks.find((
      each: { group: string; name: string },
    ) => each.group === "service" && each.name === "typo");
    assert.ok(check.detail.startsWith(expected), check.detail);
    assert.equal(check.detail, lines(services.stderr)[0].slice(10));
  }
});
