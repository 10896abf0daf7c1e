/**
 * Kills in the middle of a write leave nothing behind: sherlock, and the
 * secret store's writer, are run under `strace`, which SIGKILLs them on
 * the Nth call of each system call a write makes (create, write, sync,
 * chmod, rename, link, unlink), for every N until a run gets through. Then
 * one more run must leave no temporary file, no record and no token
 * anywhere in the throwaway tree. Only the process's main thread is traced
 * (no `-f`): Deno runs the synchronous file calls there, so the counts do
 * not depend on its worker threads, and the agent and the daemon are not
 * killed.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { addFakeAgent, AgentRun } from "../helpers/agent.ts";
import { listNames } from "../helpers/home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { stdioServiceToml } from "../helpers/profiles.ts";
import { sherlockCommand } from "../helpers/sherlock.ts";
import {
  createStore,
  type ScryptParams,
} from "../../lib/broker/daemon/secret_store.ts";

/** The calls of one write, each with the names it has on some architecture. */
const WRITE_SYSCALLS: readonly string[] = [
  "write",
  "fdatasync,fsync",
  "chmod,fchmodat",
  "rename,renameat,renameat2",
  "link,linkat",
  "unlink,unlinkat",
];

/** Enough for every call of one run; a run that needs more is a bug here. */
const MAX_CALLS = 400;

const HAS_STRACE = (() => {
  try {
    return new Deno.Command("strace", { args: ["-V"], stdout: "null" })
      .outputSync().success;
  } catch {
    return false;
  }
})();

/**
 * Runs `argv` under strace with a SIGKILL injected at the Nth call of
 * `syscalls`. Returns true when the kill happened, false when the run got
 * through (N is past the last call).
 */
async function runKilledAt(
  options: {
    argv: readonly string[];
    syscalls: string;
    call: number;
    env: Record<string, string>;
    cwd: string;
  },
): Promise<boolean> {
  const [program, ...args] = options.argv;
  const status = await new Deno.Command("strace", {
    args: [
      "-o",
      "/dev/null",
      // Only traced calls are counted and injected into.
      "-e",
      `trace=${options.syscalls}`,
      "-e",
      `inject=${options.syscalls}:signal=KILL:when=${options.call}`,
      program,
      ...args,
    ],
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).output();
  // strace ends as its tracee did: killed by the same signal.
  return status.signal === "SIGKILL";
}

/**
 * Kills `argv` at every call of every write syscall in turn; returns how
 * many runs were killed.
 */
async function killAtEveryCall(
  options: {
    argv: readonly string[];
    env: Record<string, string>;
    cwd: string;
  },
): Promise<number> {
  let killed = 0;
  for (const syscalls of WRITE_SYSCALLS) {
    for (let call = 1;; call++) {
      assert.ok(call <= MAX_CALLS, `${syscalls}: more than ${MAX_CALLS} calls`);
      if (!await runKilledAt({ ...options, syscalls, call })) break;
      killed++;
    }
  }
  return killed;
}

/** Every file under `root` whose name looks like a temporary file. */
function temporaryFiles(root: string, skip: readonly string[]): string[] {
  const found: string[] = [];
  const walk = (folder: string) => {
    for (const entry of Deno.readDirSync(folder)) {
      const path = join(folder, entry.name);
      if (skip.includes(path)) continue;
      if (entry.isDirectory) walk(path);
      else if (/\.(tmp|new)$/.test(entry.name)) found.push(path);
    }
  };
  walk(root);
  return found;
}

Deno.test({
  name:
    "killed at any call of a write: the next run leaves no temporary file and no token (runtime file, merge)",
  ignore: !HAS_STRACE || Deno.build.os !== "linux",
  async fn() {
    await using home = await createBrokerHome();
    home.addAgent();
    const helper = home.addHelperService("api");
    // A merging agent too: its temporaries go beside the operator's file.
    addFakeAgent(home, {
      name: "gem",
      executable: "fake",
      mcp: {
        mode: "config-file",
        path: "~/.gemini/settings.json",
        format: "gemini",
        merge: true,
      },
    });
    home.writeService("tools", stdioServiceToml("tools", { command: "tools" }));
    const settings = join(home.home, ".gemini", "settings.json");
    Deno.mkdirSync(join(home.home, ".gemini"));
    const original = '{\n  "theme": "dark"\n}\n';
    Deno.writeTextFileSync(settings, original);
    await home.login();

    using agent = new AgentRun(home.scratch);
    const env = { ...home.env, ...agent.env };
    // One run first, so that Deno's own caches are written.
    const warm = await home.sherlock(["fake"], { env: agent.env });
    assert.equal(warm.code, 0, warm.stderr);

    let killed = 0;
    for (const name of ["fake", "gem"]) {
      killed += await killAtEveryCall({
        argv: sherlockCommand([name]),
        env,
        cwd: home.work,
      });
    }
    assert.ok(killed > 0);

    // The next run sweeps what the killed ones left.
    const next = await home.sherlock(["fake"], { env: agent.env });
    assert.equal(next.code, 0, next.stderr);
    assert.deepEqual(temporaryFiles(home.root, [home.scratch]), []);
    assert.deepEqual(
      filesContaining(home.root, [helper.token], [home.scratch]),
      [],
    );
    assert.deepEqual(
      home.sessionRecords().filter((name) => name.endsWith(".json")),
      [],
    );
    assert.deepEqual(
      home.runtimeFiles().filter((name) => name.includes(".mcp.")),
      [],
    );
    assert.equal(Deno.readTextFileSync(settings), original);
  },
});

/** Tiny scrypt parameters: this test is about files, not key derivation. */
const FAST: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };

Deno.test({
  name:
    "the secret store killed at any call of a write: its next lock leaves only the store",
  ignore: !HAS_STRACE || Deno.build.os !== "linux",
  async fn() {
    const folder = Deno.makeTempDirSync({ prefix: "sherlock-store-crash-" });
    try {
      const path = join(folder, "secrets.enc");
      const passphrase = "correct horse battery staple";
      const store = await createStore(path, passphrase, { kdf: FAST });
      const old = randomToken("old");
      await store.set("old", old);
      store.lock();
      // A writer in a process of its own: `set NAME VALUE` or `rm NAME`.
      const script = join(folder, "writer.ts");
      const module = new URL(
        "../../lib/broker/daemon/secret_store.ts",
        import.meta.url,
      ).href;
      Deno.writeTextFileSync(
        script,
        [
          `import { unlockStore } from ${JSON.stringify(module)};`,
          "const [path, passphrase, op, name, value] = Deno.args;",
          "const store = await unlockStore(path, passphrase);",
          'if (op === "set") await store.set(name, value);',
          "else await store.remove(name);",
        ].join("\n"),
      );
      const writer = (...args: string[]) => [
        Deno.execPath(),
        "run",
        "--allow-all",
        "--quiet",
        "--no-lock",
        script,
        path,
        passphrase,
        ...args,
      ];
      const env = { ...Deno.env.toObject(), DENO_NO_UPDATE_CHECK: "1" };
      const warm = await new Deno.Command(writer("set", "warm", "x")[0], {
        args: writer("set", "warm", "x").slice(1),
        env,
      }).output();
      assert.ok(warm.success, new TextDecoder().decode(warm.stderr));

      const killed = await killAtEveryCall({
        argv: writer("set", "new", randomToken("new")),
        env,
        cwd: folder,
      });
      assert.ok(killed > 0);

      // `secret rm`: the old value must not survive in a leftover file.
      const rm = await new Deno.Command(writer("rm", "old")[0], {
        args: writer("rm", "old").slice(1),
        env,
      }).output();
      assert.ok(rm.success, new TextDecoder().decode(rm.stderr));
      Deno.removeSync(script);
      assert.deepEqual(listNames(folder).sort(), [
        "secrets.enc",
        "secrets.enc.lock",
      ]);
    } finally {
      Deno.removeSync(folder, { recursive: true });
    }
  },
});
