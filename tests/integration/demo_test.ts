/**
 * `sherlock demo`, as a newcomer runs it (the README's first command): the
 * whole session on sherlock's own stand-ins, every step printed, exit 0,
 * and nothing of the operator's touched — not the HOME and XDG folders,
 * not a broker that already runs there. sherlock, its brokers, the shim,
 * the demo server and the stand-in agent are real processes.
 */

import assert from "node:assert/strict";
import { join, relative } from "node:path";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { createTestHome } from "../helpers/home.ts";
import { runSherlock } from "../helpers/sherlock.ts";

/** Every path under `root` with its kind, size and modification time. */
function snapshot(root: string, skip: string): string[] {
  const entries: string[] = [];
  const walk = (folder: string) => {
    for (const entry of Deno.readDirSync(folder)) {
      const path = join(folder, entry.name);
      if (path === skip) continue;
      const info = Deno.lstatSync(path);
      entries.push(
        `${relative(root, path)} ${
          info.isDirectory ? "dir" : info.isSymlink ? "link" : "file"
        } ${info.isDirectory ? "" : info.size} ${info.mtime?.getTime()} ${
          info.mode! & 0o777
        }`,
      );
      if (info.isDirectory) walk(path);
    }
  };
  walk(root);
  return entries.sort();
}

Deno.test("sherlock demo: the session end to end, each step printed, the token's fingerprint from the server, exit 0; the operator's folders and running broker untouched", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const healthBefore = await home.health();
  assert.ok(healthBefore, "the operator's broker runs");
  const tmp = home.env.TMPDIR;
  const before = snapshot(home.root, tmp);

  const result = await runSherlock(["demo"], { env: home.env });
  assert.equal(result.code, 0, result.stderr + result.stdout);
  assert.equal(result.stderr, "");
  const out = result.stdout;
  for (
    const line of [
      /^1\. wrote a stand-in agent/m,
      /^2\. sherlock login: created a secret store/m,
      /^3\. sherlock secret set demo: stored a made-up token \((\d+ characters, sha256 [0-9a-f]{12}…)\)/m,
      /^4\. sherlock run -v --strict demo-agent/m,
      /^ {3}\| sherlock: agent demo-agent: services demo \(token through the shim\)$/m,
      /^ {3}\| {3}agent: tools\/list → token_check$/m,
      /^5\. the agent exited with 0/m,
      /^6\. the session's rendered config \(and its token\) is gone/m,
      /^7\. stopped the demo's broker and removed the throwaway home$/m,
      /^demo passed/m,
    ]
  ) assert.match(out, line);
  // The server saw the very token that was stored: same fingerprint.
  const stored = /stored a made-up token \(([^)]+)\)/.exec(out)![1];
  assert.ok(
    out.includes(`tools/call token_check → the server got a token: ${stored}`),
    out,
  );

  // The made-up token (demo_ and 32 base64url characters) is never printed.
  assert.doesNotMatch(out + result.stderr, /demo_[A-Za-z0-9_-]{32}/);

  // The throwaway home is gone, and nothing of the operator's changed.
  const throwaway = /in a throwaway home \(([^)]+)\)/.exec(out)![1];
  assert.ok(throwaway.startsWith(tmp), throwaway);
  assert.throws(() => Deno.statSync(throwaway), Deno.errors.NotFound);
  assert.deepEqual([...Deno.readDirSync(tmp)], []);
  assert.deepEqual(snapshot(home.root, tmp), before);
  const healthAfter = await home.health();
  assert.deepEqual(healthAfter?.pid, healthBefore.pid);
  assert.equal(
    (await home.sherlock(["secret", "ls"])).code,
    0,
    "the operator's broker is still unlocked",
  );
});

Deno.test("sherlock demo refuses arguments in one line, exit 2; a TMPDIR it cannot use: one line, exit 73; --help shows its help", async () => {
  await using home = await createTestHome();
  const noTmp = await runSherlock(["demo"], {
    env: { ...home.env, TMPDIR: join(home.root, "missing") },
  });
  assert.equal(noTmp.code, 73);
  assert.equal(
    noTmp.stderr,
    `sherlock: demo: cannot create a throwaway home in ${
      join(home.root, "missing")
    }: no such file or folder; set TMPDIR to a folder you can write\n`,
  );
  assert.equal(noTmp.stdout, "");
  const wrong = await runSherlock(["demo", "extra"], { env: home.env });
  assert.equal(wrong.code, 2);
  assert.match(wrong.stderr, /^sherlock: demo takes no arguments/);
  const help = await runSherlock(["demo", "--help"], { env: home.env });
  assert.equal(help.code, 0);
  assert.match(help.stdout, /^Usage: sherlock demo$/m);
});

Deno.test("sherlock demo with a TMPDIR too long for a socket path: the runtime folder goes to /tmp, the demo passes, both folders removed", async () => {
  await using home = await createTestHome();
  const tmp = join(home.root, "t".repeat(90));
  Deno.mkdirSync(tmp);
  const before = new Set(Deno.readDirSync("/tmp").map((entry) => entry.name));
  const result = await runSherlock(["demo"], {
    env: { ...home.env, TMPDIR: tmp },
  });
  assert.equal(result.code, 0, result.stderr + result.stdout);
  assert.match(result.stdout, /^demo passed/m);
  assert.deepEqual([...Deno.readDirSync(tmp)], []);
  const added = [...Deno.readDirSync("/tmp")].map((entry) => entry.name)
    .filter((name) => !before.has(name) && name.startsWith("sherlock-demo-"));
  assert.deepEqual(added, []);
});
