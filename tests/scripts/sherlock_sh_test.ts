/**
 * `scripts/sherlock.sh` put on PATH the way the README says: a symlink in a
 * folder on PATH, called by a real shell from anywhere. Deno comes from the
 * test's own executable (on PATH), so nothing is installed.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { createTestHome } from "../helpers/home.ts";
import { runBash, sh } from "../helpers/shell.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";
import { VERSION } from "../../lib/version.ts";

const SCRIPT = join(REPO_ROOT, "scripts", "sherlock.sh");

Deno.test("sherlock.sh through a symlink on PATH (and a relative symlink to that symlink) runs sherlock from anywhere", async () => {
  await using home = await createTestHome();
  const env = {
    ...home.env,
    PATH: `${home.bin}:${dirname(Deno.execPath())}:${home.env.PATH}`,
  };
  // What the README says to do, from the clone's root.
  const link = join(home.bin, "sherlock");
  await runBash(`ln -s "$PWD/scripts/sherlock.sh" ${sh(link)}`, {
    env,
    cwd: REPO_ROOT,
  });
  assert.equal(Deno.realPathSync(link), Deno.realPathSync(SCRIPT));

  const direct = await runBash("sherlock version", { env, cwd: home.work });
  assert.equal(direct.stderr, "");
  assert.equal(direct.stdout, `sherlock ${VERSION}\n`);
  assert.equal(direct.code, 0);

  // A relative symlink to the symlink, in another folder.
  Deno.mkdirSync(join(home.home, "bin"));
  Deno.symlinkSync("../../bin/sherlock", join(home.home, "bin", "sherlock"));
  const chained = await runBash("sherlock agents show claude", {
    env: { ...env, PATH: `${join(home.home, "bin")}:${env.PATH}` },
    cwd: home.home,
  });
  assert.equal(chained.code, 0, chained.stderr);
  assert.match(chained.stdout, /executable = "claude"/);
});

Deno.test("the README's first command from a clone, ./scripts/sherlock.sh demo: the whole session passes, exit 0", async () => {
  await using home = await createTestHome();
  const result = await runBash("./scripts/sherlock.sh demo", {
    env: {
      ...home.env,
      PATH: `${dirname(Deno.execPath())}:${home.env.PATH}`,
    },
    cwd: REPO_ROOT,
  });
  assert.equal(result.code, 0, result.stderr + result.stdout);
  assert.equal(result.stderr, "");
  assert.match(result.stdout, /^demo passed: /m);
});
