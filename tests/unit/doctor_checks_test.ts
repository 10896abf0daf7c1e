/**
 * `sherlock doctor`'s verdicts (lib/doctor/checks.ts) from facts written
 * here, and the fact readers that need only files (lib/doctor/gather.ts:
 * Gemini's trusted folders and settings, Copilot's trusted folders,
 * Claude Code's managed policy) on real files in a temp folder. The
 * gathering as a whole, with a real broker and real executables, is
 * tests/integration/json_output_test.ts's.
 */

import assert from "node:assert/strict";
import type { Whoami } from "../../lib/broker/protocol.ts";
import { join } from "node:path";
import {
  allPass,
  brokerChecks,
  claudeCheck,
  doctorChecks,
  type DoctorFacts,
  geminiCheck,
  profileCheck,
  serviceCheck,
  servicesChecks,
} from "../../lib/doctor/checks.ts";
import {
  claudeFacts,
  copilotFacts,
  geminiFacts,
  geminiTrusts,
  versionOf,
} from "../../lib/doctor/gather.ts";
import { DOCTOR_JSON } from "../../lib/cli/json_shapes.ts";

const healthyFacts: DoctorFacts = {
  sherlock: { version: "0.1.0", runsFrom: "/usr/local/bin/sherlock" },
  configFile: "/home/op/.config/sherlock/config.toml",
  runtime: {
    runtimeDir: "/run/user/1000/sherlock",
    exists: true,
    socket: "/run/user/1000/sherlock/broker.sock",
  },
  broker: {
    running: true,
    pid: 42,
    version: "0.1.0",
    login: {
      loggedIn: true,
      provider: "local",
      user: "op",
      since: "2026-01-01T00:00:00Z",
      storeExists: true,
    },
  },
  profiles: [{
    name: "claude",
    valid: true,
    source: "built-in",
    executable: "claude",
    lookup: { found: true, path: "/usr/bin/claude" },
    version: { kind: "ok", firstLine: "2.1.0 (Claude Code)" },
  }],
  services: [{
    name: "github",
    valid: true,
    reachable: true,
    server: "found /usr/bin/github-mcp-server",
    token: "ready",
    tokenText: "secret stored",
    commandProblems: [],
  }],
  servicesDir: "/home/op/.config/sherlock/services.d",
  claude: { mcpPolicyKeys: [] },
};

Deno.test("healthy facts pass, and the checks fit doctor --json's schema", () => {
  const checks = doctorChecks(healthyFacts);
  assert.equal(allPass(checks), true);
  assert.deepEqual(
    checks.filter((check) =>
      check.verdict !== "ok" && check.verdict !== "skip"
    ),
    [],
  );
  DOCTOR_JSON.parse({ ok: true, checks });
  // Gemini and Copilot are not installed here: skipped, not failed.
  assert.deepEqual(
    checks.filter((check) => check.group === "agent").map((check) =>
      `${check.name}:${check.verdict}`
    ),
    ["gemini:skip", "copilot:skip", "claude:ok"],
  );
});

Deno.test("a malformed file or config, an unsafe runtime folder, another broker version fail", () => {
  const failing: DoctorFacts[] = [
    { ...healthyFacts, configProblem: "config.toml: [broker] idle_timeout: …" },
    {
      ...healthyFacts,
      runtime: {
        ...healthyFacts.runtime,
        trustProblem: "/run/user/1000/sherlock is open to other users",
      },
    },
    {
      ...healthyFacts,
      broker: {
        running: true,
        pid: 42,
        version: "0.0.9",
        versionProblem: "the broker runs sherlock 0.0.9",
      },
    },
    {
      ...healthyFacts,
      profiles: [{
        name: "mine",
        valid: false,
        path: "/a/agents.d/mine.toml",
        error: "line 2: bad\nline 3: worse",
      }],
    },
  ];
  for (const facts of failing) {
    const checks = doctorChecks(facts);
    assert.equal(allPass(checks), false, JSON.stringify(facts));
    const failed = checks.filter((check) => check.verdict === "fail");
    assert.equal(failed.length, 1);
    assert.doesNotMatch(failed[0].detail, /\n/, "one line");
  }
});

Deno.test("the broker: not running or locked warns; the idle lock is named", () => {
  assert.equal(brokerChecks({ running: false })[0].verdict, "warn");
  const locked = brokerChecks({
    running: true,
    pid: 1,
    version: "0.1.0",
    login: { loggedIn: false, provider: "local", storeExists: true },
  });
  assert.deepEqual(locked.map((check) => check.verdict), ["ok", "warn"]);
  assert.match(locked[1].fix ?? "", /sherlock login/);
  const idle = brokerChecks({
    running: true,
    pid: 1,
    version: "0.1.0",
    login: {
      loggedIn: true,
      provider: "local",
      user: "op",
      since: "s",
      locksAt: "2026-01-01T01:00:00Z",
      storeExists: true,
    },
  });
  assert.match(idle[1].detail, /locks when idle at 2026-01-01T01:00:00Z/);
});

Deno.test("the broker: whether a remembered key exists, in which keyring, and why it did not unlock", () => {
  const checks = (remembered?: Whoami["remembered"], loggedIn = false) =>
    brokerChecks({
      running: true,
      pid: 1,
      version: "0.1.0",
      login: {
        loggedIn,
        provider: "local",
        storeExists: true,
        ...(remembered ? { remembered } : {}),
      },
    });
  assert.equal(checks().length, 2, "no remembered key: no line about it");
  const unlocked = checks(
    { keyring: "Secret Service", state: "unlocked" },
    true,
  );
  assert.equal(unlocked[2].name, "remembered key");
  assert.equal(unlocked[2].verdict, "ok");
  assert.match(
    unlocked[2].detail,
    /in the Secret Service keyring; it unlocked/,
  );
  const unavailable = checks({
    keyring: "Keychain",
    state: "unavailable",
    reason: "/usr/bin/security did not answer within 1.5 s",
  });
  assert.equal(unavailable[2].verdict, "warn");
  assert.match(
    unavailable[2].detail,
    /Keychain keyring cannot be asked: .*1\.5 s/,
  );
  const wrong = checks({ keyring: "Secret Service", state: "wrong" });
  assert.match(wrong[2].detail, /does not open the store/);
  assert.match(wrong[2].fix ?? "", /sherlock login --remember/);
  const absent = checks({ keyring: "Secret Service", state: "absent" });
  assert.match(absent[2].detail, /holds no item/);
});

Deno.test("a profile: a missing built-in is skipped, a missing override warns, a hung --version warns", () => {
  const base = {
    name: "x",
    valid: true as const,
    executable: "x",
    version: { kind: "not-run" as const },
  };
  assert.equal(
    profileCheck({
      ...base,
      source: "built-in",
      lookup: { found: false, reason: "missing" },
    }).verdict,
    "skip",
  );
  assert.equal(
    profileCheck({
      ...base,
      source: "/a/agents.d/x.toml",
      lookup: { found: false, reason: "not-executable", path: "/bin/x" },
    }).verdict,
    "warn",
  );
  const hung = profileCheck({
    ...base,
    source: "built-in",
    lookup: { found: true, path: "/bin/x" },
    version: { kind: "timeout", seconds: 3 },
  });
  assert.equal(hung.verdict, "warn");
  assert.match(hung.detail, /did not answer within 3 s/);
});

Deno.test("a service: unreachable, a missing token or a bad command fails; an unknown token warns", () => {
  const ok = healthyFacts.services[0];
  assert.equal(serviceCheck(ok).verdict, "ok");
  if (!ok.valid) throw new Error("unreachable");
  assert.equal(serviceCheck({ ...ok, reachable: false }).verdict, "fail");
  assert.equal(serviceCheck({ ...ok, token: "missing" }).verdict, "fail");
  assert.equal(serviceCheck({ ...ok, token: "unknown" }).verdict, "warn");
  // The fix is the login advice the token column was given, never its own.
  assert.equal(
    serviceCheck({
      ...ok,
      token: "unknown",
      tokenAdvice: 'run "sherlock login --local"',
    }).fix,
    'run "sherlock login --local", then doctor sees the store',
  );
  const whole = serviceCheck({
    ...ok,
    commandProblems: ['service github: command "npx -y x" is a whole…'],
  });
  assert.equal(whole.verdict, "fail");
  assert.match(whole.detail, /whole/);
  assert.equal(servicesChecks([], "/s.d")[0].verdict, "warn");
});

Deno.test("a remote service: the MCP revision it answered with is in the detail; a deprecated HTTP+SSE server or no MCP answer warns", () => {
  const ok = healthyFacts.services[0];
  if (!ok.valid) throw new Error("unreachable");
  const modern = serviceCheck({
    ...ok,
    revision: {
      kind: "answered",
      revision: { era: "modern", version: "2026-07-28", transport: "http" },
      server: { name: "s", version: "1" },
    },
  });
  assert.equal(modern.verdict, "ok");
  assert.match(
    modern.detail,
    /, answers MCP 2026-07-28 \(stateless: server\/discover\); token /,
  );
  const legacy = serviceCheck({
    ...ok,
    revision: {
      kind: "answered",
      revision: { era: "legacy", version: "2025-11-25", transport: "http" },
      server: { name: "s", version: "1" },
    },
  });
  assert.equal(legacy.verdict, "ok");
  assert.match(
    legacy.detail,
    /answers MCP 2025-11-25 \(2025 era: initialize handshake\)/,
  );
  const sse = serviceCheck({
    ...ok,
    revision: {
      kind: "answered",
      revision: { era: "legacy", version: "2025-11-25", transport: "sse" },
      server: { name: "s", version: "1" },
    },
  });
  assert.equal(sse.verdict, "warn");
  assert.match(sse.detail, /HTTP\+SSE transport, which is deprecated/);
  assert.match(sse.fix ?? "", /Streamable HTTP endpoint/);
  const refused = serviceCheck({
    ...ok,
    revision: { kind: "refused", status: 401 },
  });
  assert.equal(refused.verdict, "ok");
  assert.match(refused.detail, /only with a token \(HTTP 401/);
  const silent = serviceCheck({
    ...ok,
    revision: { kind: "failed", reason: "no answer within 3 s" },
  });
  assert.equal(silent.verdict, "warn");
  assert.match(silent.detail, /no MCP answer: no answer within 3 s/);
  assert.match(silent.fix ?? "", /sherlock services test/);
  // A missing token still fails, whatever the server said.
  assert.equal(
    serviceCheck({
      ...ok,
      token: "missing",
      revision: { kind: "failed", reason: "x" },
    }).verdict,
    "fail",
  );
});

Deno.test("Gemini: JSONC settings fail; an untrusted folder warns; trust by env, setting or file passes", () => {
  const base = {
    settingsPath: "/h/.gemini/settings.json",
    settings: "json" as const,
    trustDisabled: false,
    trustFromEnv: false,
    folderTrusted: false,
    cwd: "/w",
  };
  assert.equal(geminiCheck({ ...base, settings: "jsonc" }).verdict, "fail");
  assert.equal(geminiCheck(base).verdict, "warn");
  assert.equal(geminiCheck({ ...base, trustFromEnv: true }).verdict, "ok");
  assert.equal(geminiCheck({ ...base, trustDisabled: true }).verdict, "ok");
  assert.equal(geminiCheck({ ...base, folderTrusted: true }).verdict, "ok");
});

Deno.test("Gemini's trustedFolders rules: the most specific one decides", () => {
  const rules = {
    "/home/op/code": "TRUST_FOLDER",
    "/home/op/code/secret": "DO_NOT_TRUST",
    "/srv/a/b": "TRUST_PARENT",
  };
  assert.equal(geminiTrusts(rules, "/home/op/code/app"), true);
  assert.equal(geminiTrusts(rules, "/home/op/code/secret/x"), false);
  assert.equal(geminiTrusts(rules, "/home/op/codex"), false);
  assert.equal(geminiTrusts(rules, "/srv/a/c"), true, "TRUST_PARENT: siblings");
  assert.equal(geminiTrusts(undefined, "/srv"), false);
});

Deno.test("the agents' files are read from disk, and no value of them reaches a check", async () => {
  const root = await Deno.makeTempDir({ prefix: "sherlock-doctor-" });
  try {
    const secret = "sk-not-to-be-printed-1234";
    const home = join(root, "home");
    Deno.mkdirSync(join(home, ".gemini"), { recursive: true });
    Deno.writeTextFileSync(
      join(home, ".gemini", "settings.json"),
      `{\n  // mine\n  "env": {"KEY": "${secret}"},\n}\n`,
    );
    Deno.writeTextFileSync(
      join(home, ".gemini", "trustedFolders.json"),
      JSON.stringify({ [join(root, "work")]: "TRUST_FOLDER" }),
    );
    const gemini = geminiFacts({
      env: { HOME: home },
      cwd: join(root, "work"),
    });
    assert.equal(gemini.settings, "jsonc");
    // A FIFO in its place is refused, not opened (which would block).
    const fifo = join(root, "fifo-home");
    Deno.mkdirSync(join(fifo, ".gemini"), { recursive: true });
    const mkfifo = new Deno.Command("mkfifo", {
      args: [join(fifo, ".gemini", "settings.json")],
    }).outputSync();
    assert.equal(mkfifo.code, 0);
    assert.equal(
      geminiFacts({ env: { HOME: fifo }, cwd: root }).settings,
      "invalid",
    );
    assert.equal(gemini.folderTrusted, true);

    Deno.mkdirSync(join(home, ".copilot"));
    Deno.writeTextFileSync(
      join(home, ".copilot", "config.json"),
      JSON.stringify({ trusted_folders: [join(root, "work")] }),
    );
    assert.equal(
      copilotFacts({ HOME: home }, join(root, "work", "sub")).folderTrusted,
      true,
    );
    assert.equal(copilotFacts({ HOME: home }, root).folderTrusted, false);

    const etc = join(root, "etc-claude-code");
    Deno.mkdirSync(etc);
    assert.equal(claudeCheck(claudeFacts(etc)).verdict, "ok");
    Deno.writeTextFileSync(
      join(etc, "managed-settings.json"),
      JSON.stringify({
        allowedMcpServers: [{ serverName: "x" }],
        env: { T: secret },
      }),
    );
    const settings = claudeCheck(claudeFacts(etc));
    assert.equal(settings.verdict, "warn");
    assert.match(settings.detail, /allowedMcpServers/);
    Deno.writeTextFileSync(join(etc, "managed-mcp.json"), "{}");
    assert.equal(claudeCheck(claudeFacts(etc)).verdict, "fail");

    const printed = JSON.stringify([
      geminiCheck(gemini),
      settings,
      claudeCheck(claudeFacts(etc)),
    ]);
    assert.doesNotMatch(printed, new RegExp(secret));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("--version: the first line; a hung one is killed with what it started", async () => {
  const root = await Deno.makeTempDir({ prefix: "sherlock-doctor-" });
  try {
    const quick = join(root, "quick");
    Deno.writeTextFileSync(
      quick,
      "#!/bin/sh\necho 'quick 1.2.3'\necho more\n",
      {
        mode: 0o755,
      },
    );
    assert.deepEqual(await versionOf(quick, { PATH: "/usr/bin:/bin" }), {
      kind: "ok",
      firstLine: "quick 1.2.3",
    });
    const pidFile = join(root, "grandchild.pid");
    const hung = join(root, "hung");
    // The grandchild holds stdout open: the doctor must not wait for it.
    Deno.writeTextFileSync(
      hung,
      `#!/bin/sh\nsleep 300 &\necho $! > '${pidFile}'\nwait\n`,
      { mode: 0o755 },
    );
    const result = await versionOf(hung, { PATH: "/usr/bin:/bin" }, 500);
    assert.deepEqual(result, { kind: "timeout", seconds: 0.5 });
    const grandchild = Number(Deno.readTextFileSync(pidFile).trim());
    let alive = true;
    for (let i = 0; i < 50 && alive; i++) {
      try {
        const stat = Deno.readTextFileSync(`/proc/${grandchild}/stat`);
        alive = !/\) Z /.test(stat);
      } catch {
        alive = false;
      }
      if (alive) await new Promise((resolve) => setTimeout(resolve, 20));
    }
    assert.equal(alive, false, "the grandchild was killed too");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
