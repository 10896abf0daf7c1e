/**
 * sherlock's command line as an operator types it: help, version, usage
 * errors, aliases that never shadow commands, and the dry run. What only
 * prints (help, version, usage errors) runs in-process
 * (helpers/in_process.ts); the rest as a real process.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import denoJson from "../../deno.json" with { type: "json" };
import { type CommandName, COMMANDS } from "../../lib/cli/commands.ts";
import { HELP_TEXTS } from "../../lib/cli/help_texts.ts";
import { runInProcess } from "../helpers/in_process.ts";
import { addFakeAgent, AgentRun, installFakeAgent } from "../helpers/agent.ts";
import { createTestHome } from "../helpers/home.ts";
import {
  BUILTIN_PROFILE_NAMES,
  stdioServiceToml,
} from "../helpers/profiles.ts";
import { lines, runSherlock } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

const VERSION = denoJson.version;

Deno.test("--help and -h: the commands and exit codes, on stdout, exit 0", async () => {
  await using home = await createTestHome();
  for (const flag of ["--help", "-h", "help"]) {
    const result = await runInProcess([flag], { env: home.env });
    assert.equal(result.code, 0);
    assert.equal(result.stderr, "");
    const out = lines(result.stdout);
    assert.equal(
      out[0],
      `sherlock ${VERSION}: launch AI coding agents with per-session MCP servers`,
    );
    assert.ok(out.includes("Usage: sherlock <command> [args…]"));
    for (const [name, spec] of Object.entries(COMMANDS)) {
      assert.ok(
        out.some((line) =>
          new RegExp(`^  ${name} +${RegExp.escape(spec.summary)}$`).test(line)
        ),
        `${name} is listed`,
      );
    }
    assert.ok(result.stdout.includes("126/127 agent not executable/not found"));
  }
});

Deno.test("no arguments: the help on stderr, exit 2", async () => {
  await using home = await createTestHome();
  const result = await runInProcess([], { env: home.env });
  assert.equal(result.code, 2);
  assert.equal(result.stdout, "");
  assert.ok(result.stderr.startsWith(`sherlock ${VERSION}: `));
});

Deno.test("--version, -V and version print the version from deno.json", async () => {
  await using home = await createTestHome();
  for (const args of [["--version"], ["-V"], ["version"]]) {
    const result = await runInProcess(args, { env: home.env });
    assert.equal(result.code, 0);
    assert.equal(result.stdout, `sherlock ${VERSION}\n`);
    assert.equal(result.stderr, "");
  }
});

Deno.test("help <command> and <command> --help", async () => {
  await using home = await createTestHome();
  const viaHelp = await runInProcess(["help", "run"], { env: home.env });
  const direct = await runInProcess(["run", "--help"], { env: home.env });
  assert.equal(viaHelp.code, 0);
  assert.equal(direct.code, 0);
  assert.equal(viaHelp.stdout, direct.stdout);
  assert.ok(
    viaHelp.stdout.startsWith(
      "Usage: sherlock run [options] <agent> [args…]\n",
    ),
  );
  const agents = await runInProcess(["help", "agents"], { env: home.env });
  assert.equal(agents.code, 0);
  assert.ok(agents.stdout.startsWith("Usage: sherlock agents [--json]\n"));
});

Deno.test("every command's help, by help <command> and by <command> --help or -h, exit 0", async () => {
  await using home = await createTestHome();
  for (const [index, name] of Object.keys(COMMANDS).entries()) {
    const flag = index % 2 === 0 ? "--help" : "-h";
    for (const args of [["help", name], [name, flag, "extra"]]) {
      const result = await runInProcess(args, { env: home.env });
      assert.equal(result.code, 0, args.join(" "));
      assert.equal(
        result.stdout,
        HELP_TEXTS[name as CommandName] + "\n",
        args.join(" "),
      );
      assert.equal(result.stderr, "");
    }
  }
});

Deno.test("help and version have a help of their own, not the version or an error", async () => {
  await using home = await createTestHome();
  const cases: [string[], string][] = [
    [["help", "help"], "Usage: sherlock help [command]\n"],
    [["help", "--help"], "Usage: sherlock help [command]\n"],
    [["help", "version"], "Usage: sherlock version\n"],
    [["version", "--help"], "Usage: sherlock version\n"],
  ];
  for (const [args, usage] of cases) {
    const result = await runInProcess(args, { env: home.env });
    assert.equal(result.code, 0, args.join(" "));
    assert.ok(result.stdout.startsWith(usage), result.stdout);
    assert.equal(result.stderr, "");
  }
});

Deno.test("secret and broker without arguments: their help on stdout, exit 2", async () => {
  await using home = await createTestHome();
  for (const name of ["secret", "broker"] as const) {
    const result = await runInProcess([name], { env: home.env });
    assert.equal(result.code, 2, name);
    assert.equal(result.stdout, HELP_TEXTS[name] + "\n");
    assert.equal(result.stderr, "");
  }
});

Deno.test("run's help after its own options; a command's help after its subcommand", async () => {
  await using home = await createTestHome();
  for (const args of [["run", "--dry-run", "--help"], ["--dry-run", "-h"]]) {
    const result = await runInProcess(args, { env: home.env });
    assert.equal(result.code, 0, args.join(" "));
    assert.equal(result.stdout, HELP_TEXTS.run + "\n");
  }
  // After a subcommand too: its command's help (the one parser's rule).
  for (
    const [args, name] of [
      [["secret", "set", "--help"], "secret"],
      [["broker", "serve", "--help"], "broker"],
      [["broker", "log", "-h"], "broker"],
    ] as const
  ) {
    const result = await runInProcess(args, { env: home.env });
    assert.equal(result.code, 0, args.join(" "));
    assert.equal(result.stdout, HELP_TEXTS[name] + "\n");
    assert.equal(result.stderr, "");
  }
});

Deno.test("secret set|rm with a pasted token for a name: never echoed, says what a name looks like", async () => {
  await using home = await createTestHome();
  const token = "ghp_Pasted0Token0By0Mistake0123456789";
  for (const action of ["set", "rm"]) {
    const result = await runSherlock(["secret", action, token], {
      env: home.env,
      stdin: "value\n",
    });
    assert.equal(result.code, 2, action);
    assert.equal(result.stdout, "");
    assert.ok(!result.stderr.includes(token), result.stderr);
    assert.ok(!result.stderr.includes("Pasted0Token"), result.stderr);
    assert.match(result.stderr, /lowercase letters, digits/);
    assert.equal(lines(result.stderr).length, 1);
  }
});

const RUN_USAGE =
  "sherlock run [--dry-run] [--strict] [--service NAME]… [--no-service NAME]… [--verbose] <agent> [args…]";

/** Usage errors: exit 2 and exactly one line. */
const USAGE_ERRORS: [string[], string][] = [
  [
    ["frobnicate"],
    'no command or agent named "frobnicate"; run "sherlock agents" to list agents, "sherlock --help" for commands',
  ],
  // A typo gets the name it resembles: an agent, or a command.
  [
    ["claud"],
    'no command or agent named "claud" (did you mean claude?); run "sherlock agents" to list agents, "sherlock --help" for commands',
  ],
  [
    ["agnets"],
    'no command or agent named "agnets" (did you mean agents?); run "sherlock agents" to list agents, "sherlock --help" for commands',
  ],
  [
    ["agents", "show", "cdex"],
    'no agent profile named "cdex" (did you mean codex?); run "sherlock agents" to list them',
  ],
  [
    ["help", "secrt"],
    "no command named secrt (did you mean secret?); see sherlock --help",
  ],
  [
    ["broker", "stpo"],
    'no subcommand "stpo" for broker (did you mean stop?); see sherlock broker --help',
  ],
  [
    ["secret", "lss"],
    'no subcommand "lss" for secret (did you mean ls?); see sherlock secret --help',
  ],
  [["--frob"], "unknown option --frob; see sherlock --help"],
  [["help", "frob"], "no command named frob; see sherlock --help"],
  [["run"], `run needs <agent>; usage: ${RUN_USAGE}`],
  [["--dry-run"], `run needs <agent>; usage: ${RUN_USAGE}`],
  [
    ["run", "--frob", "claude"],
    `unknown option --frob for run; usage: ${RUN_USAGE}`,
  ],
  [
    ["agents", "extra"],
    'no subcommand "extra" for agents; see sherlock agents --help',
  ],
  [
    ["agents", "show"],
    "agents show needs <name>; usage: sherlock agents show [--builtin] <name>",
  ],
  [
    ["agents", "override"],
    "agents override needs <name>; usage: sherlock agents override <name>",
  ],
  // Issue 20, trap 7: a subcommand's typo is a usage error with the
  // subcommand it resembles.
  [
    ["services", "tset", "github"],
    'no subcommand "tset" for services (did you mean test?); see sherlock services --help',
  ],
  [
    ["auth", "stats"],
    "no subcommand or service named stats (did you mean status?); see sherlock auth --help",
  ],
  [
    ["services", "test", "--agnet=claude", "github"],
    "unknown option --agnet for services test (did you mean --agent?); usage: sherlock services test [--agent NAME] [--timeout SECONDS] <name>",
  ],
  [
    ["doctor", "--json=yes"],
    "--json takes no value; usage: sherlock doctor [--json]",
  ],
  [
    ["agents", "override", "acme"],
    `no built-in profile named "acme"; the built-ins are ${
      BUILTIN_PROFILE_NAMES.join(", ")
    }`,
  ],
];

for (const [args, message] of USAGE_ERRORS) {
  Deno.test(`usage error: sherlock ${args.join(" ")}`, async () => {
    await using home = await createTestHome();
    const result = await runInProcess(args, { env: home.env });
    assert.equal(result.code, 2);
    assert.equal(result.stdout, "");
    assert.deepEqual(lines(result.stderr), [`sherlock: ${message}`]);
  });
}

Deno.test("a profile named like a command: no alias, reachable through run only", async () => {
  await using home = await createTestHome();
  installFakeAgent(join(home.bin, "fake"));
  for (const name of ["agents", "version", "help"]) {
    addFakeAgent(home, { name, executable: "fake" });
  }

  // `sherlock agents` is the command, and it says how to reach the agent.
  const listed = await runSherlock(["agents"], { env: home.env });
  assert.equal(listed.code, 0);
  const row = (name: string) =>
    lines(listed.stdout).find((line) => line.startsWith(`${name} `));
  for (const name of ["agents", "version", "help"]) {
    assert.ok(
      row(name)!.includes(
        `${
          join(home.agentsDir, `${name}.toml`)
        } (no alias: use sherlock run ${name})`,
      ),
      row(name),
    );
  }
  assert.ok(!row("claude")!.includes("no alias"));

  using notRun = new AgentRun(home.scratch);
  const version = await runSherlock(["version"], {
    env: { ...home.env, ...notRun.env },
  });
  assert.equal(version.stdout, `sherlock ${VERSION}\n`);
  assert.equal(notRun.hasStarted, false);

  using agent = new AgentRun(home.scratch, { exit: 9 });
  const run = await runSherlock(["run", "agents", "show"], {
    env: { ...home.env, ...agent.env },
  });
  assert.equal(run.code, 9);
  assert.deepEqual(agent.record().args, ["show"]);
});

Deno.test("run --dry-run: argv shell-quoted, env changes, rendered config; nothing started or written", async () => {
  await using home = await createTestHome();
  const profile = addFakeAgent(home, {
    name: "fake",
    mcp: { mode: "cli-flag", flag: "--mcp-config", joined: true },
    env: { KIND: "o auth" },
    prefix: ["--pre"],
    forbid: ["SECRET_KEY"],
  });
  home.writeService(
    "github",
    `[service]\nname = "github"\n[server]\ncommand = "github-mcp-server"\nargs = ["stdio"]\n` +
      `[token]\nsource = "command"\ncommand = ["gh", "auth", "token"]\nenv = "GITHUB_PERSONAL_ACCESS_TOKEN"\n`,
  );
  home.writeService(
    "files",
    stdioServiceToml("files", { command: "files-server" }),
  );
  using agent = new AgentRun(home.scratch);
  for (const args of [["run", "--dry-run"], ["--dry-run"]]) {
    const result = await runSherlock([...args, "fake", "a b", "it's", ""], {
      env: { ...home.env, ...agent.env, SECRET_KEY: "hunter2" },
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    const out = lines(result.stdout);
    const session = /^session +([0-9a-f]{12})$/.exec(out[2])?.[1];
    assert.ok(session, out[2]);
    const config = join(home.runtimeDir, `fake.${session}.mcp.json`);
    const bin = join(home.bin, "fake");
    assert.deepEqual(out.slice(0, 9), [
      `agent        fake (${profile})`,
      `executable   ${bin}`,
      `session      ${session}`,
      `argv         ${bin} --pre --mcp-config=${config} 'a b' 'it'\\''s' ''`,
      "env set      KIND='o auth'",
      "env removed  SECRET_KEY (forbidden by the profile)",
      "services     files, github",
      `config       ${config} (cli-flag, mcp-json; written 0600 when the session starts, removed when it ends)`,
      "--- rendered config (tokens redacted) ---",
    ]);
    assert.deepEqual(JSON.parse(out.slice(9).join("\n")), {
      mcpServers: {
        files: { type: "stdio", command: "files-server", args: [], env: {} },
        github: {
          type: "stdio",
          command: "github-mcp-server",
          args: ["stdio"],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: "<redacted>" },
        },
      },
    });
    assert.ok(!result.stdout.includes("hunter2"));
  }
  assert.equal(agent.hasStarted, false);
  assert.equal(exists(home.runtimeDir), false);
  assert.deepEqual(home.sessionRecords(), []);
});

Deno.test("run --dry-run names a missing executable instead of failing", async () => {
  await using home = await createTestHome();
  const result = await runSherlock(["--dry-run", "claude"], { env: home.env });
  assert.equal(result.code, 0);
  assert.match(
    lines(result.stdout)[1],
    /^executable +claude \(not found on PATH\)$/,
  );
});

Deno.test("a broken configuration folder is one line and exit 78, not an internal error", async () => {
  await using home = await createTestHome();
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(home.agentsDir, "not a folder");
  for (const args of [["agents"], ["claude"], ["run", "claude"]]) {
    const result = await runSherlock(args, { env: home.env });
    assert.equal(result.code, 78, args.join(" "));
    assert.equal(lines(result.stderr).length, 1, result.stderr);
    assert.ok(result.stderr.startsWith("sherlock: "), result.stderr);
    assert.ok(result.stderr.includes(home.agentsDir), result.stderr);
    assert.ok(!result.stderr.includes("internal error"), result.stderr);
  }
  Deno.removeSync(home.agentsDir);
  Deno.writeTextFileSync(home.servicesDir, "not a folder");
  const result = await runSherlock(["--dry-run", "claude"], { env: home.env });
  assert.equal(result.code, 78);
  assert.deepEqual(lines(result.stderr), [
    `sherlock: cannot read folder ${home.servicesDir}: a part of its path is not a folder`,
  ]);
});
