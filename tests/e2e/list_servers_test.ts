/**
 * "Which servers did my session get?", asked inside the agent, where the
 * agent can answer it: `sherlock codex mcp list` lists the session's
 * servers (sherlock's `-c mcp_servers.<name>=…` overrides apply to Codex's
 * `mcp` subcommand too), with the shim in front of a server that takes a
 * token, and the session's capability masked. `claude mcp list` cannot: it
 * ignores `--mcp-config` (docs/manual/agents.md, "Seeing the session's
 * servers"). opencode's and Kilo's `mcp list` through sherlock are proven
 * by opencode_test.ts and kilo_test.ts. The real Codex CLI, broker and
 * shim; the servers are never started (`mcp list` only reads the config).
 */

import assert from "node:assert/strict";
import { dirname } from "node:path";
import { cliPath, installClis } from "./harness.ts";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { stdioServiceToml, tokenServiceToml } from "../helpers/profiles.ts";

Deno.test("sherlock codex mcp list: the session's servers, the token's through the shim, the capability masked; nothing left behind", async () => {
  await installClis(["codex"]);
  await using home = await createBrokerHome();
  home.writeService("files", stdioServiceToml("files", { command: "files" }));
  home.writeService("github", tokenServiceToml({ name: "github" }));
  await home.login();
  const stored = await home.sherlock(["secret", "set", "github"], {
    stdin: "tok_list_servers_test\n",
  });
  assert.equal(stored.code, 0, stored.stderr);

  const result = await home.sherlock(["codex", "mcp", "list"], {
    env: { PATH: `${dirname(cliPath("codex"))}:${home.env.PATH}` },
  });
  assert.equal(result.code, 0, result.stderr);
  const rows = result.stdout.split("\n").slice(1).filter((line) => line !== "");
  assert.deepEqual(rows.map((row) => row.split(/\s+/)[0]).sort(), [
    "files",
    "github",
  ]);
  const github = rows.find((row) => row.startsWith("github"))!;
  assert.match(github, / shim --socket .* --token-env GITHUB_TOKEN github -- /);
  assert.match(github, /SHERLOCK_SESSION_CAPABILITY=\*+/);
  assert.ok(!result.stdout.includes("tok_list_servers_test"));
  assert.deepEqual(
    home.runtimeFiles().filter((name) => name.endsWith(".json")),
    [],
  );
});
