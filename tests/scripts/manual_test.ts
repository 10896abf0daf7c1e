/**
 * What the manual promises per agent holds for every built-in: the table
 * of "Seeing the session's servers" (docs/manual/agents.md) has a row for
 * each built-in profile, and each `sherlock <agent> mcp list` it names
 * starts a session (`mcp` is not one of the profile's `[argv] no_session`),
 * so the agent lists the session's servers. The commands themselves are
 * run against the real CLIs by tests/e2e (list_servers_test.ts for Codex,
 * opencode_test.ts and kilo_test.ts).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  BUILTIN_PROFILE_NAMES,
  stdioServiceToml,
} from "../helpers/profiles.ts";
import { createTestHome } from "../helpers/home.ts";
import { REPO_ROOT, runSherlock } from "../helpers/sherlock.ts";

/** The rows of the table under the heading `title` in `text`. */
function tableRows(text: string, title: string): string[][] {
  const section = text.split(`\n## ${title}\n`)[1]?.split("\n## ")[0];
  assert.ok(section, `no section "${title}"`);
  return section.split("\n")
    .filter((line) => line.startsWith("| ") && !/^\| -/.test(line))
    .slice(1)
    .map((line) =>
      line.split(" | ").map((cell) => cell.replace(/^\| |\s*\|$/g, "").trim())
    );
}

Deno.test("agents.md says for every built-in agent how to see the session's servers; each `sherlock <agent> mcp list` it names is a session", async () => {
  const text = Deno.readTextFileSync(
    join(REPO_ROOT, "docs", "manual", "agents.md"),
  );
  const rows = tableRows(text, "Seeing the session's servers");
  const named = rows.flatMap(([agents]) =>
    [...agents.matchAll(/`([a-z]+)`/g)].map((match) => match[1])
  );
  assert.deepEqual([...named].sort(), [...BUILTIN_PROFILE_NAMES].sort());

  const listed = rows.flatMap(([, how]) =>
    [...how.matchAll(/`sherlock ([a-z]+) mcp list`/g)].map((match) => match[1])
  );
  assert.deepEqual(listed.sort(), ["codex", "gemini", "kilo", "opencode"]);
  await using home = await createTestHome();
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  for (const agent of listed) {
    const dryRun = await runSherlock(["--dry-run", agent, "mcp", "list"], {
      env: home.env,
    });
    assert.equal(dryRun.code, 0, dryRun.stderr);
    assert.match(dryRun.stdout, /^services +files$/m, agent);
  }
});
