/**
 * Profiles and services as an operator meets them: built-ins shadowed by
 * agents.d, `sherlock agents` and `agents show`, and every kind of
 * malformed file — reported on one line, skipped, never run. What only
 * prints (`agents`, `agents show`, an unknown agent) runs in-process.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, AgentRun, installFakeAgent } from "../helpers/agent.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import {
  BUILTIN_PROFILE_NAMES,
  profileToml,
  stdioServiceToml,
} from "../helpers/profiles.ts";
import { lines, runSherlock, sherlockCommand } from "../helpers/sherlock.ts";
import { runInProcess } from "../helpers/in_process.ts";
import { runBash, sh, type ShellResult } from "../helpers/shell.ts";
import { parse } from "smol-toml";
import { BUILTIN_PROFILES } from "../../lib/profiles/builtin.ts";

/** The executable a built-in profile runs (Continue's is `cn`). */
function builtinExecutable(name: string): string {
  const agent = parse(BUILTIN_PROFILES[name]).agent as { executable: string };
  return agent.executable;
}

/** `sherlock agents`' table rows as [name, rest of the line]. */
function rows(stdout: string): string[][] {
  return lines(stdout).map((line) => line.split(/\s{2,}/));
}

Deno.test("agents: lists the built-ins and whether their executables are on PATH", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "claude"));
  const result = await runInProcess(["agents"], { env: home.env });
  assert.equal(result.code, 0);
  assert.equal(result.stderr, "");
  assert.deepEqual(rows(result.stdout), [
    ["NAME", "SOURCE", "EXECUTABLE"],
    ...BUILTIN_PROFILE_NAMES.map((name) => [
      name,
      "built-in",
      name === "claude"
        ? join(home.bin, "claude")
        : `${builtinExecutable(name)}: not found on PATH`,
    ]),
  ]);
});

Deno.test("agents: an executable without an execute bit is reported as such", async () => {
  await using home = await createTestHome();
  const path = installFakeAgent(join(home.bin, "copilot"));
  Deno.chmodSync(path, 0o644);
  const result = await runInProcess(["agents"], { env: home.env });
  assert.equal(result.code, 0);
  assert.deepEqual(rows(result.stdout).find((row) => row[0] === "copilot"), [
    "copilot",
    "built-in",
    `${path}: not executable`,
  ]);
});

Deno.test("shadowing: agents.d/claude.toml replaces the built-in entirely", async () => {
  await using home = await createTestHome();
  const path = addFakeAgent(home, {
    name: "claude",
    executable: "my-claude",
    mcp: { mode: "env-var", var: "CLAUDE_MCP" },
  });
  const listed = await runSherlock(["agents"], { env: home.env });
  assert.equal(listed.code, 0);
  assert.deepEqual(rows(listed.stdout).find((row) => row[0] === "claude"), [
    "claude",
    `${path} (overrides the built-in)`,
    join(home.bin, "my-claude"),
  ]);

  // The override's delivery is used; nothing of the built-in's flag.
  using agent = new AgentRun(home.scratch, { config: "env:CLAUDE_MCP" });
  const run = await runSherlock(["claude", "x"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(run.code, 0, run.stderr);
  const record = agent.record();
  assert.equal(record.argv0, join(home.bin, "my-claude"));
  assert.deepEqual(record.args, ["x"]);
  assert.equal(record.config!.text, '{\n  "mcpServers": {}\n}\n');
});

Deno.test("agents show: the resolved profile, every default filled in", async () => {
  await using home = await createTestHome();
  const path = addFakeAgent(home, {
    name: "claude",
    executable: "my-claude",
    mcp: { mode: "env-var", var: "CLAUDE_MCP" },
  });
  const shown = await runInProcess(["agents", "show", "claude"], {
    env: home.env,
  });
  assert.equal(shown.code, 0);
  assert.equal(
    shown.stdout,
    `# ${path}
[agent]
name = "claude"
executable = "my-claude"
description = ""

[mcp]
mode = "env-var"
var = "CLAUDE_MCP"
value = "{path}"
joined = false
format = "mcp-json"

[env]
[argv]
prefix = []
suffix = []
no_session = []

[forbid]
env = []
`,
  );
  const builtin = await runInProcess(["agents", "show", "copilot"], {
    env: home.env,
  });
  assert.equal(builtin.code, 0);
  assert.equal(lines(builtin.stdout)[0], "# built-in profile");
  assert.ok(builtin.stdout.includes('flag = "--additional-mcp-config"\n'));
  assert.ok(builtin.stdout.includes('value = "@{path}"\n'));

  const missing = await runInProcess(["agents", "show", "nope"], {
    env: home.env,
  });
  assert.equal(missing.code, 2);
  assert.deepEqual(lines(missing.stderr), [
    'sherlock: no agent profile named "nope"; run "sherlock agents" to list them',
  ]);
});

/** Every kind of malformed profile, with the line sherlock must print. */
const MALFORMED: {
  kind: string;
  text: string;
  problem: string;
}[] = [
  {
    kind: "bad TOML",
    text: `[agent]\nname = "bad"\nexecutable = \n`,
    problem: "3:14: TOML syntax error: invalid value",
  },
  {
    kind: "wrong type",
    text:
      `[agent]\nname = "bad"\nexecutable = 42\n[mcp]\nmode = "env-var"\nvar = "V"\n`,
    problem: "3: agent.executable: must be a string, not a number",
  },
  {
    kind: "unknown key",
    text:
      `[agent]\nname = "bad"\nexecutable = "fake"\ncolour = "red"\n[mcp]\nmode = "env-var"\nvar = "V"\n`,
    problem:
      "4: agent.colour: unknown key (allowed here: name, executable, description)",
  },
  {
    kind: "unknown table",
    text:
      `[agent]\nname = "bad"\nexecutable = "fake"\n[mcp]\nmode = "env-var"\nvar = "V"\n[extras]\nx = 1\n`,
    problem:
      "7: extras: unknown key (allowed here: agent, mcp, env, argv, forbid, credentials, api_key_helper, services)",
  },
  {
    kind: "name is not the basename",
    text: profileToml({ name: "other", executable: "fake" }),
    problem:
      'agent.name: is "other" but the file is bad.toml; the name must equal the file\'s basename',
  },
  {
    kind: "missing executable",
    text: `[agent]\nname = "bad"\n[mcp]\nmode = "env-var"\nvar = "V"\n`,
    problem: "1: agent.executable: missing; a string is required",
  },
  {
    kind: "missing mode-specific key",
    text:
      `[agent]\nname = "bad"\nexecutable = "fake"\n\n[mcp]\nmode = "cli-flag"\n`,
    problem: '5: mcp.flag: missing; mode = "cli-flag" needs flag',
  },
  {
    kind: "key of another mode",
    text:
      `[agent]\nname = "bad"\nexecutable = "fake"\n[mcp]\nmode = "env-var"\nvar = "V"\npath = "/x"\n`,
    problem: '7: mcp.path: not used with mode = "env-var"; remove it',
  },
];
// The name-mismatch file is generated: its name is on line 2.
MALFORMED[4].problem = `2: ${MALFORMED[4].problem}`;

/** A HOME with one good agent and the bad profile. */
function homeWithBadProfile(home: TestHome, text: string): string {
  installFakeAgent(join(home.bin, "fake"));
  addFakeAgent(home, { name: "good", executable: "fake" });
  return home.writeProfile("bad", text);
}

for (const { kind, text, problem } of MALFORMED) {
  Deno.test(`malformed profile (${kind}): one line, exit 78, never run; the others work`, async () => {
    await using home = await createTestHome();
    const path = homeWithBadProfile(home, text);

    // Run it, twice: a bad file is reported every time (never cached).
    for (const args of [["bad"], ["run", "bad", "--help"]]) {
      using agent = new AgentRun(home.scratch);
      const result = await runInProcess(args, {
        env: { ...home.env, ...agent.env },
      });
      assert.equal(result.code, 78);
      assert.deepEqual(lines(result.stderr), [`sherlock: ${path}:${problem}`]);
      assert.equal(result.stdout, "");
      assert.equal(agent.hasStarted, false, "the agent must never start");
      assert.deepEqual(home.runtimeFiles(), []);
      assert.deepEqual(home.sessionRecords(), []);
    }

    // The listing shows the good ones, and the bad one in its row with
    // its problem.
    const listed = await runInProcess(["agents"], { env: home.env });
    assert.equal(listed.code, 78);
    assert.deepEqual(
      rows(listed.stdout).map((row) => row[0]),
      ["NAME", ...[...BUILTIN_PROFILE_NAMES, "bad", "good"].sort()],
    );
    const badRow = rows(listed.stdout).find((row) => row[0] === "bad")!;
    assert.equal(badRow[1], `${path} (malformed)`);
    assert.ok(
      problem.endsWith(badRow[2].replace(/^error: (line \d+: )?/, "")),
      `${badRow[2]} is the problem ${problem}`,
    );
    assert.deepEqual(lines(listed.stderr), [
      `sherlock: skipped malformed profile ${path}:${problem}`,
    ]);

    const shown = await runInProcess(["agents", "show", "bad"], {
      env: home.env,
    });
    assert.equal(shown.code, 78);
    assert.equal(shown.stdout, "");
    assert.deepEqual(lines(shown.stderr), [`sherlock: ${path}:${problem}`]);

    // Every other profile still runs.
    using agent = new AgentRun(home.scratch, { exit: 5 });
    const good = await runInProcess(["good", "x"], {
      env: { ...home.env, ...agent.env },
    });
    assert.equal(good.code, 5);
    assert.equal(good.stderr, "");
    assert.deepEqual(agent.record().args, ["x"]);
  });
}

Deno.test("a profile that validated once is checked again when it changes", async () => {
  await using home = await createTestHome();
  const path = addFakeAgent(home, { name: "fake" });
  using first = new AgentRun(home.scratch);
  const ok = await runSherlock(["fake"], {
    env: { ...home.env, ...first.env },
  });
  assert.equal(ok.code, 0);
  Deno.writeTextFileSync(
    path,
    Deno.readTextFileSync(path).replace(
      "[agent]\n",
      '[agent]\ncolour = "red"\n',
    ),
  );
  using second = new AgentRun(home.scratch);
  const bad = await runSherlock(["fake"], {
    env: { ...home.env, ...second.env },
  });
  assert.equal(bad.code, 78);
  assert.deepEqual(lines(bad.stderr), [
    `sherlock: ${path}:2: agent.colour: unknown key (allowed here: name, executable, description)`,
  ]);
  assert.equal(second.hasStarted, false);
});

Deno.test("malformed service: warned on stderr, skipped; the session runs with the others", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  home.writeService(
    "good",
    stdioServiceToml("good", { command: "good-server" }),
  );
  const bad = home.writeService(
    "broken",
    `[service]\nname = "broken"\n[server]\ncommand = "/opt/broken"\ncolour = "red"\n`,
  );
  const misnamed = home.writeService(
    "misnamed",
    stdioServiceToml("othername", { command: "/opt/misnamed" }),
  );
  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
    exit: 0,
  });
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0);
  assert.deepEqual(lines(result.stderr).sort(), [
    `sherlock: skipped malformed service ${bad}:5: server.colour: unknown key (allowed here: command, args, env, url, transport, headers)`,
    `sherlock: skipped malformed service ${misnamed}:2: service.name: is "othername" but the file is misnamed.toml; the name must equal the file's basename`,
  ]);
  assert.deepEqual(JSON.parse(agent.record().config!.text!), {
    mcpServers: {
      good: { type: "stdio", command: "good-server", args: [], env: {} },
    },
  });
});

Deno.test("an unknown agent: exit 2, one line", async () => {
  await using home = await createTestHome();
  const result = await runInProcess(["run", "nope"], { env: home.env });
  assert.equal(result.code, 2);
  assert.deepEqual(lines(result.stderr), [
    'sherlock: no agent profile named "nope"; run "sherlock agents" to list them',
  ]);
});

Deno.test("a name that is a path never reads a file outside agents.d", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "fake"));
  // A perfectly valid profile, one folder above agents.d.
  Deno.mkdirSync(home.agentsDir, { recursive: true });
  Deno.writeTextFileSync(
    join(home.agentsDir, "..", "outside.toml"),
    profileToml({ name: "outside", executable: "fake" }),
  );
  using agent = new AgentRun(home.scratch);
  const result = await runInProcess(["run", "../outside"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 2);
  assert.deepEqual(lines(result.stderr), [
    'sherlock: no agent profile named "../outside"; run "sherlock agents" to list them',
  ]);
  assert.equal(agent.hasStarted, false);
});

Deno.test("a dangling symlink in agents.d or services.d is reported and skipped", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const profile = join(home.agentsDir, "gone.toml");
  Deno.symlinkSync(join(home.root, "nowhere.toml"), profile);
  Deno.mkdirSync(home.servicesDir, { recursive: true });
  const service = join(home.servicesDir, "gone.toml");
  Deno.symlinkSync(join(home.root, "nowhere.toml"), service);
  home.writeService(
    "good",
    stdioServiceToml("good", { command: "good-server" }),
  );

  const listed = await runSherlock(["agents"], { env: home.env });
  assert.equal(listed.code, 78);
  assert.deepEqual(
    rows(listed.stdout).map((row) => row[0]),
    ["NAME", ...[...BUILTIN_PROFILE_NAMES, "fake", "gone"].sort()],
  );
  assert.deepEqual(rows(listed.stdout).find((row) => row[0] === "gone"), [
    "gone",
    `${profile} (malformed)`,
    "error: cannot read it: no such file or folder",
  ]);
  assert.deepEqual(lines(listed.stderr), [
    `sherlock: skipped malformed profile ${profile}: cannot read it: no such file or folder`,
  ]);

  using notRun = new AgentRun(home.scratch);
  const gone = await runSherlock(["gone"], {
    env: { ...home.env, ...notRun.env },
  });
  assert.equal(gone.code, 78);
  assert.deepEqual(lines(gone.stderr), [
    `sherlock: ${profile}: cannot read it: no such file or folder`,
  ]);

  using agent = new AgentRun(home.scratch, {
    config: "env:SHERLOCK_MCP_CONFIG",
  });
  const run = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(run.code, 0);
  assert.deepEqual(lines(run.stderr), [
    `sherlock: skipped malformed service ${service}: cannot read it: no such file or folder`,
  ]);
  assert.deepEqual(
    Object.keys(JSON.parse(agent.record().config!.text!).mcpServers),
    ["good"],
  );
});

Deno.test("an unreadable config.toml: exit 78 naming it, like a profile; no agent", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const config = join(home.configHome, "sherlock", "config.toml");
  // A folder at its path: unreadable even to root, who reads any mode.
  Deno.mkdirSync(config, { recursive: true });
  using agent = new AgentRun(home.scratch);
  const folder = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(folder.code, 78);
  assert.deepEqual(lines(folder.stderr), [
    `sherlock: ${config}: cannot read it: it is a folder`,
  ]);
  assert.equal(agent.hasStarted, false);

  // A dangling symlink is not a missing file either.
  Deno.removeSync(config);
  Deno.symlinkSync(join(home.root, "nowhere.toml"), config);
  const dangling = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(dangling.code, 78);
  assert.deepEqual(lines(dangling.stderr), [
    `sherlock: ${config}: cannot read it: no such file or folder`,
  ]);
  assert.equal(agent.hasStarted, false);
});

Deno.test("agents looks the executable up on the PATH the agent will get", async () => {
  await using home = await createTestHome();
  const opt = join(home.root, "opt", "agent", "bin");
  Deno.mkdirSync(opt, { recursive: true });
  const path = installFakeAgent(join(opt, "optagent"));
  addFakeAgent(home, {
    name: "optagent",
    executable: "optagent",
    env: { PATH: `${opt}:\${PATH}` },
  });
  Deno.removeSync(join(home.bin, "optagent")); // only in opt/agent/bin
  const listed = await runSherlock(["agents"], { env: home.env });
  assert.equal(listed.code, 0, listed.stderr);
  assert.deepEqual(
    rows(listed.stdout).find((row) => row[0] === "optagent"),
    ["optagent", join(home.agentsDir, "optagent.toml"), path],
  );
  using agent = new AgentRun(home.scratch);
  const run = await runSherlock(["optagent"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(run.code, 0, run.stderr);
  assert.equal(agent.record().argv0, path);
});

Deno.test("a config.toml idle_timeout beyond 7 days: exit 78 on one line; no agent", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const config = join(home.configHome, "sherlock", "config.toml");
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(config, "[broker]\nidle_timeout = 2200000\n");
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${config}:2: broker.idle_timeout: must be at most 604800 seconds (7 days)`,
  ]);
  assert.equal(agent.hasStarted, false);
});

Deno.test("a NUL character in a profile's [env]: exit 78 naming the file, line and key; no agent", async () => {
  await using home = await createTestHome();
  const path = addFakeAgent(home, { name: "fake", env: { X: "a\u0000b" } });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: ${path}:10: env.X: holds a NUL character (\\u0000), which no program can be given; remove it`,
  ]);
  assert.equal(agent.hasStarted, false);
});

Deno.test("a NUL character in a service's args: the service is skipped with one line, the session runs", async () => {
  await using home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  const path = home.writeService(
    "broken",
    stdioServiceToml("broken", { command: "srv", args: ["ok", "a\u0000b"] }),
  );
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 0);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: skipped malformed service ${path}:6: server.args: holds a NUL character (\\u0000), which no program can be given; remove it`,
  ]);
  assert.equal(agent.hasStarted, true);
});

Deno.test("an argv larger than the system takes: exit 78 with one line saying what to shorten", async () => {
  await using home = await createTestHome();
  // Linux takes at most 128 KiB in one argument (MAX_ARG_STRLEN).
  addFakeAgent(home, { name: "fake", prefix: ["a".repeat(200_000)] });
  using agent = new AgentRun(home.scratch);
  const result = await runSherlock(["fake"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(result.code, 78);
  const stderr = lines(result.stderr);
  assert.equal(stderr.length, 1);
  assert.match(
    stderr[0],
    /^sherlock: \S+ \(agent fake\) could not be started: its arguments and environment are larger than the system allows .*shorten the profile's \[argv\] or \[env\]/,
  );
  assert.equal(agent.hasStarted, false);
  assert.deepEqual(
    [...Deno.readDirSync(home.runtimeDir)].filter((entry) =>
      entry.name.endsWith(".json")
    ),
    [],
    "the rendered config is removed",
  );
});

/** Runs `script` in bash with `sherlock` as a shell function, as on PATH. */
function inShell(home: TestHome, script: string): Promise<ShellResult> {
  const sherlock = sherlockCommand([]).map(sh).join(" ");
  return runBash(`sherlock() { ${sherlock} "$@"; }\n${script}`, {
    env: home.env,
    cwd: home.work,
  });
}

Deno.test("the newcomer's override: a redirect's empty file is listed with its error, --builtin still shows the built-in, override writes an editable copy", async () => {
  await using home = await createTestHome();
  const path = join(home.agentsDir, "claude.toml");

  // The natural first step: the shell creates the empty file before
  // sherlock runs, and the empty file shadows the built-in.
  const redirected = await inShell(
    home,
    'mkdir -p "$XDG_CONFIG_HOME/sherlock/agents.d" && sherlock agents show claude > "$XDG_CONFIG_HOME/sherlock/agents.d/claude.toml"',
  );
  assert.equal(redirected.code, 78);
  assert.equal(Deno.readTextFileSync(path), "");
  assert.deepEqual(lines(redirected.stderr), [
    `sherlock: ${path}: the file is empty (or only comments): no profile in it`,
    'sherlock: this file shadows the built-in claude: "sherlock agents show --builtin claude" shows the built-in, "sherlock agents override claude" writes an editable copy (once the file is gone or empty)',
  ]);

  // claude does not vanish from the listing: its row says what is wrong.
  const listed = await inShell(home, "sherlock agents");
  assert.equal(listed.code, 78);
  assert.deepEqual(rows(listed.stdout).find((row) => row[0] === "claude"), [
    "claude",
    `${path} (malformed; shadows the built-in)`,
    "error: the file is empty (or only comments): no profile in it",
  ]);

  const builtin = await inShell(home, "sherlock agents show --builtin claude");
  assert.equal(builtin.code, 0, builtin.stderr);
  assert.equal(lines(builtin.stdout)[0], "# built-in profile");
  assert.match(builtin.stdout, /^executable = "claude"$/m);
  assert.match(builtin.stdout, /^# The program; looked up on PATH/m);

  // The safe way in: the empty file holds nothing to lose.
  const override = await inShell(home, "sherlock agents override claude");
  assert.equal(override.code, 0, override.stderr);
  assert.equal(override.stdout, `${path}\n`);
  assert.deepEqual(lines(override.stderr), [
    `sherlock: replaced the empty file ${path}`,
  ]);
  const written = Deno.readTextFileSync(path);
  // The editor's schema line first (taplo reads it there), then the header.
  assert.match(
    written,
    /^#:schema \.\.\/schemas\/agent_profile\.schema\.json\n# Your copy of sherlock's built-in "claude" profile/,
  );
  assert.match(written, /^# Must equal the file's basename/m);
  // The copy resolves exactly as the built-in does.
  const shown = await inShell(home, "sherlock agents show claude");
  assert.equal(shown.code, 0, shown.stderr);
  assert.deepEqual(parse(shown.stdout), parse(builtin.stdout));
  const relisted = await inShell(home, "sherlock agents");
  assert.equal(relisted.code, 0, relisted.stderr);
  assert.equal(
    rows(relisted.stdout).find((row) => row[0] === "claude")![1],
    `${path} (overrides the built-in)`,
  );

  // It never replaces a file with something in it.
  const again = await inShell(home, "sherlock agents override claude");
  assert.equal(again.code, 73);
  assert.equal(again.stdout, "");
  assert.deepEqual(lines(again.stderr), [
    `sherlock: ${path} already exists and was left as it is; edit it, or remove it and run "sherlock agents override claude" again`,
  ]);
  assert.equal(Deno.readTextFileSync(path), written);

  // Editing the copy: a variable in [env] works; shadowing stays whole, so
  // a file with only [agent] name and [env] is listed with its errors.
  const edited = await inShell(
    home,
    `sed -i 's/^\\[env\\]$/[env]\\nCLAUDE_SETTING = "1"/' ${
      sh(path)
    } && sherlock agents show claude`,
  );
  assert.equal(edited.code, 0, edited.stderr);
  assert.match(edited.stdout, /^CLAUDE_SETTING = "1"$/m);
  Deno.writeTextFileSync(
    path,
    '[agent]\nname = "claude"\n\n[env]\nCLAUDE_SETTING = "1"\n',
  );
  const partial = await inShell(home, "sherlock agents");
  assert.equal(partial.code, 78);
  assert.deepEqual(rows(partial.stdout).find((row) => row[0] === "claude"), [
    "claude",
    `${path} (malformed; shadows the built-in)`,
    "error: line 1: agent.executable: missing; a string is required (+1 more, below)",
  ]);
  assert.deepEqual(lines(partial.stderr), [
    `sherlock: skipped malformed profile ${path}:1: agent.executable: missing; a string is required`,
    `sherlock: ${path}: mcp: missing; a table is required`,
  ]);
});
