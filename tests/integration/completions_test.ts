/**
 * `sherlock completions bash|zsh|fish`, run by the real shells in a
 * throwaway HOME with a profile and a service of its own: bash through
 * `complete -p` and its completion function with COMP_WORDS set, fish
 * through `complete -C`, zsh through its real completion system
 * (`compinit`, `_main_complete`) in an interactive shell on a
 * pseudo-terminal, typing Tab. Each shell calls sherlock itself (a
 * `sherlock` on PATH that runs main.ts) for the names.
 *
 * zsh and fish come from Debian's packages; scripts/test.sh installs them
 * when missing. A test whose shell is missing is skipped, and says so.
 */

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { createTestHome, listNames, type TestHome } from "../helpers/home.ts";
import {
  profileToml,
  stdioServiceToml,
  tokenServiceToml,
} from "../helpers/profiles.ts";
import { runBash, sh } from "../helpers/shell.ts";
import {
  HANG_GUARD_MS,
  runSherlock,
  sherlockCommand,
} from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";

function installed(shell: string): boolean {
  const found = new Deno.Command("sh", {
    args: ["-c", `command -v ${shell}`],
    stdout: "null",
    stderr: "null",
  }).outputSync().success;
  if (!found) {
    console.warn(
      `SKIPPED: ${shell} is not installed (apt-get install -y ${shell}; scripts/test.sh does it)`,
    );
  }
  return found;
}

/** A HOME with the profile "myagent", the service "github", and sherlock on PATH. */
async function completionHome(): Promise<TestHome> {
  const home = await createTestHome();
  home.writeProfile(
    "myagent",
    profileToml({ name: "myagent", executable: "myagent" }),
  );
  home.writeService(
    "github",
    stdioServiceToml("github", { command: "gh-mcp" }),
  );
  home.writeService(
    "linear",
    tokenServiceToml({
      name: "linear",
      source: "oauth",
      url: "https://mcp.linear.example/mcp",
    }),
  );
  Deno.writeTextFileSync(
    join(home.bin, "sherlock"),
    `#!/bin/sh\nexec ${sherlockCommand([]).map(sh).join(" ")} "$@"\n`,
    { mode: 0o755 },
  );
  return home;
}

/** What bash's completion offers for `line` (the cursor at its end). */
async function bashComplete(home: TestHome, line: string): Promise<string[]> {
  const result = await runBash(
    `eval "$(sherlock completions bash)"
read -r -a COMP_WORDS <<< ${sh(line)}
${line.endsWith(" ") ? 'COMP_WORDS+=("")' : ""}
COMP_CWORD=$((\${#COMP_WORDS[@]} - 1))
_sherlock
printf '%s\\n' "\${COMPREPLY[@]}"`,
    { env: home.env, cwd: home.work },
  );
  assert.equal(result.code, 0, result.stderr);
  return result.stdout.split("\n").filter((word) => word !== "");
}

/** What fish's `complete -C` offers for `line`. */
async function fishComplete(home: TestHome, line: string): Promise<string[]> {
  const output = await new Deno.Command("fish", {
    args: [
      "--no-config",
      "-c",
      `sherlock completions fish | source; complete -C ${sh(line)}`,
    ],
    env: home.env,
    clearEnv: true,
    cwd: home.work,
  }).output();
  const stderr = new TextDecoder().decode(output.stderr);
  assert.equal(output.code, 0, stderr);
  // Each line is the candidate, then a tab and a description when any.
  return new TextDecoder().decode(output.stdout).split("\n")
    .filter((row) => row !== "").map((row) => row.split("\t")[0]);
}

Deno.test({
  name:
    "bash: the script registers with complete, and completes commands, agents, services, subcommands and flags",
  ignore: !installed("bash"),
  fn: async () => {
    await using home = await completionHome();
    const registered = await runBash(
      `eval "$(sherlock completions bash)"; complete -p sherlock`,
      { env: home.env, cwd: home.work },
    );
    assert.equal(registered.stdout.trim(), "complete -F _sherlock sherlock");

    assert.deepEqual(await bashComplete(home, "sherlock comp"), [
      "completions",
    ]);
    assert.deepEqual(
      (await bashComplete(home, "sherlock s")).sort(),
      ["secret", "services"],
      "shim is used inside rendered configs, not offered",
    );
    // The profile in agents.d completes beside the built-ins.
    assert.deepEqual(await bashComplete(home, "sherlock my"), ["myagent"]);
    assert.deepEqual(await bashComplete(home, "sherlock run --dry-run my"), [
      "myagent",
    ]);
    assert.deepEqual(
      (await bashComplete(home, "sherlock services show ")).sort(),
      ["github", "linear"],
    );
    // Issue 20, trap 6: a service's name after --service, then an agent's.
    for (const flag of ["--service", "--no-service"]) {
      assert.deepEqual(
        (await bashComplete(home, `sherlock ${flag} `)).sort(),
        ["github", "linear"],
        flag,
      );
      assert.deepEqual(
        await bashComplete(home, `sherlock run ${flag} github my`),
        ["myagent"],
        flag,
      );
    }
    assert.deepEqual(await bashComplete(home, "sherlock auth "), [
      "status",
      "revoke",
      "linear",
    ]);
    assert.deepEqual(await bashComplete(home, "sherlock services test --a"), [
      "--agent",
    ]);
    assert.ok(
      (await bashComplete(home, "sherlock services test --agent ")).includes(
        "myagent",
      ),
    );
    assert.deepEqual(await bashComplete(home, "sherlock broker st"), [
      "start",
      "stop",
      "status",
    ]);
    assert.deepEqual(await bashComplete(home, "sherlock completions "), [
      "bash",
      "zsh",
      "fish",
    ]);
    assert.deepEqual(await bashComplete(home, "sherlock --dry"), [
      "--dry-run",
    ]);
    // No broker runs: no secret names, and none is started to find some.
    assert.deepEqual(await bashComplete(home, "sherlock secret rm "), []);
    assert.deepEqual(
      listNames(home.runtimeDir).filter((name) => name.startsWith("broker")),
      [],
    );
    // A PATH value completes file names.
    Deno.writeTextFileSync(join(home.work, "servers.json"), "{}");
    assert.deepEqual(await bashComplete(home, "sherlock import --from ser"), [
      "servers.json",
    ]);
  },
});

Deno.test({
  name: "fish: complete -C offers commands, agents, services and flags",
  ignore: !installed("fish"),
  fn: async () => {
    await using home = await completionHome();
    assert.deepEqual(await fishComplete(home, "sherlock comp"), [
      "completions",
    ]);
    assert.deepEqual(await fishComplete(home, "sherlock my"), ["myagent"]);
    assert.deepEqual(
      (await fishComplete(home, "sherlock secret set ")).sort(),
      ["github", "linear"],
    );
    assert.deepEqual(await fishComplete(home, "sherlock agents show my"), [
      "myagent",
    ]);
    assert.deepEqual(
      await fishComplete(home, "sherlock broker serve --"),
      ["--background"],
    );
    // Only the services with [token] source = "oauth" (issue 20, trap 6).
    assert.deepEqual(
      (await fishComplete(home, "sherlock auth ")).sort(),
      ["linear", "revoke", "status"],
    );
  },
});

/**
 * Types `keys` into an interactive zsh (no rc files but the test's, which
 * runs compinit and loads the script) on a pseudo-terminal, where Tab runs
 * zsh's real completion system. `sherlock` typed at the prompt is a shell
 * function that prints its arguments; the completion script runs the real
 * one (`command sherlock`).
 */
async function zshTyped(home: TestHome, keys: string[]): Promise<string> {
  const zdotdir = join(home.scratch, "zdotdir");
  Deno.mkdirSync(zdotdir, { recursive: true });
  Deno.writeTextFileSync(
    join(zdotdir, ".zshrc"),
    `autoload -Uz compinit && compinit -u -d ${sh(join(zdotdir, "dump"))}
eval "$(command sherlock completions zsh)"
sherlock() { print -r -- "TYPED[$*]" }
PS1='> '
`,
  );
  const child = spawn("script", ["-qefc", "zsh -i", "/dev/null"], {
    env: { ...home.env, ZDOTDIR: zdotdir, TERM: "xterm" },
    cwd: home.work,
    stdio: ["pipe", "pipe", "pipe"],
  });
  let screen = "";
  child.stdout!.setEncoding("utf8").on("data", (text) => screen += text);
  child.stderr!.setEncoding("utf8").on("data", (text) => screen += text);
  const exited = new Promise<void>((resolve) => child.on("close", resolve));
  const guard = setTimeout(() => child.kill("SIGKILL"), HANG_GUARD_MS);
  try {
    await waitUntil(() => screen.includes("> ") || undefined, "zsh's prompt");
    let ran = 0;
    for (const key of keys) {
      const before = screen.length;
      child.stdin!.write(key);
      // Tab runs sherlock: wait for the line to change, then a little more.
      await waitUntil(
        () => screen.length > before || undefined,
        "zsh to answer",
      );
      await new Promise((resolve) => setTimeout(resolve, 300));
      if (key.endsWith("\r")) {
        ran++;
        await waitUntil(() => {
          const done = [...screen.matchAll(/TYPED\[[^\]]*\]/g)];
          if (done.length < ran) return undefined;
          return screen.slice(done.at(-1)!.index).includes("> ") || undefined;
        }, `the typed line to run; the screen: ${JSON.stringify(screen)}`);
      }
    }
    child.stdin!.write("exit\r");
    await exited;
    return screen;
  } finally {
    clearTimeout(guard);
    child.kill("SIGKILL");
    await exited;
  }
}

Deno.test({
  name:
    "zsh: Tab in an interactive zsh (compinit) completes commands, agents, services and flags",
  ignore: !installed("zsh") || !installed("script"),
  fn: async () => {
    await using home = await completionHome();
    const screen = await zshTyped(home, [
      "sherlock compl\t",
      "\r",
      "sherlock my\t",
      "\r",
      "sherlock services show gi\t",
      "\r",
      "sherlock services test --ag\t",
      "\r",
      "sherlock completions fi\t",
      "\r",
    ]);
    const typed = [...screen.matchAll(/TYPED\[([^\]]*)\]/g)].map((m) =>
      m[1].trim()
    );
    assert.deepEqual(typed, [
      "completions",
      "myagent",
      "services show github",
      "services test --agent",
      "completions fish",
    ], screen);
  },
});

Deno.test("completions: a usage error for an unknown shell, and the help without one", async () => {
  await using home = await createTestHome();
  const unknown = await runSherlock(["completions", "powershell"], {
    env: home.env,
  });
  assert.equal(unknown.code, 2);
  assert.equal(
    unknown.stderr,
    "sherlock: completions takes bash, zsh, fish, not powershell; usage: sherlock completions [<shell>]\n",
  );
  const none = await runSherlock(["completions"], { env: home.env });
  assert.equal(none.code, 2);
  assert.match(none.stdout, /^Usage: sherlock completions <bash\|zsh\|fish>/);
});
