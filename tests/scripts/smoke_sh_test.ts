/**
 * `scripts/smoke.sh`, the release workflow's check of each compiled binary,
 * run here against sherlock from source (`scripts/sherlock.sh`, which takes
 * the same arguments as the binary) and against stand-ins that get one
 * check wrong: no compiled binary can be built on this machine.
 */

import assert from "node:assert/strict";
import { dirname, join } from "node:path";
import { createTestHome } from "../helpers/home.ts";
import { runBash, sh } from "../helpers/shell.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";
import { VERSION } from "../../lib/version.ts";
import { BUILTIN_PROFILE_NAMES } from "../helpers/profiles.ts";

const SMOKE = join(REPO_ROOT, "scripts", "smoke.sh");

Deno.test("smoke.sh: sherlock itself passes --version, agents and --dry-run with a service", async () => {
  await using home = await createTestHome();
  const result = await runBash(
    `${sh(SMOKE)} ${sh(join(REPO_ROOT, "scripts", "sherlock.sh"))}`,
    {
      env: {
        ...home.env,
        PATH: `${dirname(Deno.execPath())}:${home.env.PATH}`,
      },
      cwd: home.work,
    },
  );
  assert.equal(result.stderr, "");
  assert.match(
    result.stdout,
    /--version, agents and --dry-run with a service OK\n$/,
  );
  assert.equal(result.code, 0);
});

Deno.test("smoke.sh: a wrong version or a missing built-in profile fails with one line", async () => {
  await using home = await createTestHome();
  const standIn = join(home.bin, "sherlock");
  // smoke.sh checks profiles/*.toml in name order: the first is missed.
  const [first] = [...BUILTIN_PROFILE_NAMES].sort();
  const others = BUILTIN_PROFILE_NAMES.filter((name) => name !== "claude");
  const cases: [string, RegExp][] = [
    [
      'echo "sherlock 0.0.0-other"',
      /--version printed "sherlock 0\.0\.0-other", not "sherlock /,
    ],
    [
      `case $1 in --version) echo "sherlock ${VERSION}";; agents) echo "claude  built-in";; esac`,
      new RegExp(`agents does not list the built-in profile ${first}\\n$`),
    ],
    [
      `case $1 in --version) echo "sherlock ${VERSION}";; agents) for n in claude ${
        others.join(" ")
      }; do echo "$n built-in"; done;; *) echo '{}';; esac`,
      /--dry-run claude does not render the service smoke\n$/,
    ],
  ];
  for (const [body, expected] of cases) {
    Deno.writeTextFileSync(standIn, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    const result = await runBash(`${sh(SMOKE)} ${sh(standIn)}`, {
      env: home.env,
      cwd: home.work,
    });
    assert.equal(result.code, 1, body);
    assert.match(result.stderr, /^smoke: [^\n]+\n$/);
    assert.match(result.stderr, expected);
  }
});
