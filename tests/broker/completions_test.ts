/**
 * Completion's secret names (`sherlock completions --complete`, which the
 * shell scripts run) against a real daemon and store: the names while the
 * broker runs and is unlocked, never a value; nothing, quietly, when it is
 * locked or not running, and no broker is started to ask.
 */

import assert from "node:assert/strict";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { randomToken } from "../helpers/leaks.ts";

Deno.test("completion offers the stored secrets' names from an unlocked broker, never their values, and never starts one", async () => {
  await using home = await createBrokerHome();
  const complete = (...words: string[]) =>
    home.sherlock(["completions", "--complete", "--", ...words]);

  const stopped = await complete("secret", "rm", "");
  assert.equal(stopped.code, 0, stopped.stderr);
  assert.equal(stopped.stdout + stopped.stderr, "");
  assert.equal(await home.health(), undefined, "no broker was started");

  await home.login();
  const value = randomToken("ghp");
  for (const name of ["github", "gitlab", "slack"]) {
    const set = await home.sherlock(["secret", "set", name], {
      stdin: `${value}\n`,
    });
    assert.equal(set.code, 0, set.stderr);
  }
  const all = await complete("secret", "rm", "");
  assert.equal(all.stdout, "github\ngitlab\nslack\n");
  const some = await complete("secret", "rm", "git");
  assert.equal(some.stdout, "github\ngitlab\n");
  assert.equal(some.stdout.includes(value), false);

  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0, logout.stderr);
  const locked = await complete("secret", "rm", "");
  assert.equal(locked.code, 0);
  assert.equal(locked.stdout + locked.stderr, "", "locked: nothing, quietly");
});
