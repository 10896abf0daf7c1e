/**
 * A client of one version and a daemon of another: the daemon here is real,
 * started from a copy of this repository whose deno.json gives another
 * version, on the same socket. Every command that would ask it anything
 * refuses with one line saying what to do; `broker status` says so too;
 * `broker stop` still works, and the next command starts a daemon of this
 * version.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { VERSION } from "../../lib/version.ts";
import {
  type BrokerHome,
  createBrokerHome,
  PASSPHRASE,
} from "../helpers/broker_home.ts";
import { lines, REPO_ROOT } from "../helpers/sherlock.ts";
import { exists } from "../helpers/wait.ts";

const OTHER_VERSION = "0.0.0-other";

/**
 * Copies what runs sherlock from source (main.ts, lib/, profiles/, the
 * lock file, node_modules by a symlink) into `folder`, with `version` in its
 * deno.json; returns the copy's main.ts.
 */
async function copyWithVersion(
  folder: string,
  version: string,
): Promise<string> {
  const copy = await new Deno.Command("cp", {
    args: [
      "-r",
      join(REPO_ROOT, "main.ts"),
      join(REPO_ROOT, "deno.lock"),
      join(REPO_ROOT, "lib"),
      join(REPO_ROOT, "profiles"),
      folder,
    ],
  }).output();
  assert.equal(copy.code, 0, new TextDecoder().decode(copy.stderr));
  const denoJson = JSON.parse(
    Deno.readTextFileSync(join(REPO_ROOT, "deno.json")),
  );
  denoJson.version = version;
  Deno.writeTextFileSync(join(folder, "deno.json"), JSON.stringify(denoJson));
  Deno.symlinkSync(
    Deno.realPathSync(join(REPO_ROOT, "node_modules")),
    join(folder, "node_modules"),
  );
  return join(folder, "main.ts");
}

/** Starts the daemon of the copy at `main` in `home`; returns its pid. */
async function startOtherDaemon(
  home: BrokerHome,
  main: string,
): Promise<number> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-all", "--quiet", main, "broker", "start"],
    env: home.env,
    clearEnv: true,
    cwd: home.work,
    stdin: "null",
  }).output();
  assert.equal(output.code, 0, new TextDecoder().decode(output.stderr));
  const health = await home.health();
  assert.ok(health, "the other version's daemon answers");
  assert.equal(health.version, OTHER_VERSION);
  return health.pid;
}

const MISMATCH =
  `sherlock: the broker runs sherlock ${OTHER_VERSION}, this is sherlock ${VERSION}; run "sherlock broker stop" and try again`;

Deno.test("a daemon of another version: every command that asks it anything refuses in one line, broker stop still works", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  const helper = home.addHelperService("github");
  const copy = join(home.root, "other");
  Deno.mkdirSync(copy);
  const pid = await startOtherDaemon(
    home,
    await copyWithVersion(copy, OTHER_VERSION),
  );

  const commands: {
    args: string[];
    stdin?: string;
    env?: Record<string, string>;
  }[] = [
    { args: ["login"], stdin: `${PASSPHRASE}\n` },
    { args: ["whoami"] },
    { args: ["logout"] },
    { args: ["secret", "set", "github"], stdin: "a-secret-value\n" },
    { args: ["secret", "ls"] },
    { args: ["broker", "start"] },
    { args: ["run", "fake"] },
    {
      args: [
        "shim",
        "--socket",
        home.socket,
        "--session",
        "s1",
        "--agent",
        "fake",
        "--token-env",
        "GITHUB_TOKEN",
        "github",
        "--",
        "/bin/true",
      ],
      // A shim presents a session's capability (from its entry's env).
      env: { SHERLOCK_SESSION_CAPABILITY: "0".repeat(64) },
    },
  ];
  for (const command of commands) {
    const result = await home.sherlock(command.args, {
      stdin: command.stdin,
      env: command.env,
    });
    const what = command.args.join(" ");
    assert.equal(result.code, 69, `${what}: ${result.stderr}`);
    assert.deepEqual(lines(result.stderr), [MISMATCH], what);
  }
  // Nothing reached the other daemon: no store was created from the
  // passphrase, no helper ran, and it is still the one serving.
  assert.equal(exists(join(home.dataHome, "sherlock", "secrets.enc")), false);
  assert.equal(helper.runs(), 0);
  assert.equal((await home.health())?.pid, pid);

  const status = await home.sherlock(["broker", "status"]);
  assert.equal(status.code, 69, status.stderr);
  assert.match(
    status.stdout,
    new RegExp(`running, pid ${pid}, sherlock ${OTHER_VERSION}`),
  );
  assert.match(
    status.stdout,
    /version +the broker runs sherlock 0\.0\.0-other, this is sherlock .+; run "sherlock broker stop" and try again/,
  );

  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.match(stop.stdout, new RegExp(`broker stopped \\(was pid ${pid}\\)`));
  await home.login();
  const health = await home.health();
  assert.equal(health?.version, VERSION);
  assert.notEqual(health?.pid, pid);
});
