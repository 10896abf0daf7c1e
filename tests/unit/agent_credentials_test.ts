/** The agent's own credentials, the pure parts: names, environment, helper settings. */

import assert from "node:assert/strict";
import {
  apiKeyHelperArgs,
  credentialEnv,
  credentialNames,
} from "../../lib/launch/agent_credentials.ts";
import { buildEnv } from "../../lib/launch/plan.ts";
import { loadedProfile } from "../helpers/profiles.ts";

Deno.test("credentialNames: every [credentials] name and the key helper's, each once", () => {
  assert.deepEqual(
    credentialNames({
      credentials: { GH_TOKEN: "github", GITHUB_TOKEN: "github", A: "anth" },
      api_key_helper: { credential: "claude-key" },
    }),
    ["github", "anth", "claude-key"],
  );
  assert.deepEqual(
    credentialNames({ credentials: {}, api_key_helper: undefined }),
    [],
  );
});

Deno.test("credentialEnv: each variable gets its name's value; a missing one is an error", () => {
  const fetched = new Map([["github", "gh-value"], ["anth", "sk-value"]]);
  assert.deepEqual(
    credentialEnv({ GH_TOKEN: "github", GITHUB_TOKEN: "github" }, fetched),
    { GH_TOKEN: "gh-value", GITHUB_TOKEN: "gh-value" },
  );
  assert.throws(
    () => credentialEnv({ OPENAI_API_KEY: "openai" }, fetched),
    /credential openai \(OPENAI_API_KEY\) was not fetched/,
  );
});

Deno.test("buildEnv: the shell's copy of a [credentials] variable is removed, as [forbid] does", () => {
  const built = buildEnv({
    loaded: loadedProfile({ mode: "env-var", var: "MCP" }, {
      credentials: { ANTHROPIC_API_KEY: "anthropic" },
    }),
    configPath: "/run/x.json",
    context: {
      env: { ANTHROPIC_API_KEY: "shell", HOME: "/home/op" },
    },
  });
  assert.equal("ANTHROPIC_API_KEY" in built.env, false);
  assert.deepEqual(built.envRemoved, ["ANTHROPIC_API_KEY"]);
  assert.equal(built.env.HOME, "/home/op");
});

Deno.test("apiKeyHelperArgs: --settings with a shell command that names no secret", () => {
  const args = apiKeyHelperArgs({
    credential: "anthropic",
    socket: "/run/user/1000/sher lock/broker.sock",
    selfCommand: ["/usr/bin/sherlock"],
  });
  assert.equal(args.length, 2);
  assert.equal(args[0], "--settings");
  assert.deepEqual(JSON.parse(args[1]), {
    apiKeyHelper:
      "/usr/bin/sherlock credential --socket '/run/user/1000/sher lock/broker.sock' anthropic",
  });
});
