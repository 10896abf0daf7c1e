/**
 * The agent's own credential from the broker, with the real CLIs: Claude
 * Code asking for its key with the `apiKeyHelper` that `[api_key_helper]`
 * gives it, and with `ANTHROPIC_API_KEY` from `[credentials]`; Codex with
 * `OPENAI_API_KEY` from `[credentials]` read by a custom provider
 * (`env_key`). The model API cannot be reached here, so a scripted endpoint
 * on loopback (tests/e2e/fixtures/) stands in for it and records each
 * request's credential headers: the key must arrive there, and be in no
 * file, no argv and no output of sherlock's.
 *
 * @module
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { BUILTIN_PROFILES } from "../../lib/profiles/builtin.ts";
import { CLI_PINS, installClis } from "./harness.ts";
import { startScriptedAnthropic } from "./fixtures/scripted_anthropic.ts";
import { startScriptedResponses } from "./fixtures/scripted_responses.ts";
import type { ScriptedModel } from "./fixtures/scripted_model.ts";

/** The model never calls a tool: one text answer, and the agent exits. */
const NO_TOOL = { pickTool: () => undefined, finalText: "done" };

/** The credential headers of every request that asked the model. */
function modelCredentials(model: ScriptedModel, route: string): string[] {
  return model.requests.filter((request) => request.route === route)
    .flatMap((request) => Object.values(request.credentials));
}

/**
 * Runs `agent` (the real CLI `cli`, its built-in profile with `extra`
 * appended) through sherlock with the secret `anthropic`/`openai` stored,
 * and the shell's own copy of the key set to something else; returns what
 * it printed and the secret.
 */
async function runWithCredential(
  options: {
    cli: "claude" | "codex";
    secretName: string;
    extra: string;
    args: string[];
    env: Record<string, string>;
  },
) {
  const { [options.cli]: cliPath } = await installClis([options.cli]);
  await using home = await createBrokerHome();
  home.env.TERM = "dumb";
  Deno.symlinkSync(cliPath, join(home.bin, CLI_PINS[options.cli].bin));
  home.writeProfile(
    options.cli,
    BUILTIN_PROFILES[options.cli] + "\n" + options.extra,
  );
  const secret = randomToken("sk-e2e");
  await home.login();
  const set = await home.sherlock(["secret", "set", options.secretName], {
    stdin: secret,
  });
  assert.equal(set.code, 0, set.stderr);
  const result = await home.sherlock([options.cli, ...options.args], {
    env: options.env,
    timeoutMs: 120_000,
  });
  const leaks = filesContaining(home.root, [secret]);
  return { result, secret, leaks };
}

Deno.test("claude: [api_key_helper] — Claude Code asks sherlock for its key; the model gets it though no ANTHROPIC_API_KEY is set anywhere", async () => {
  await using model = startScriptedAnthropic(NO_TOOL);
  const { result, secret, leaks } = await runWithCredential({
    cli: "claude",
    secretName: "anthropic",
    extra: '[api_key_helper]\ncredential = "anthropic"\n',
    args: ["-p", "hi", "--strict-mcp-config"],
    env: {
      ANTHROPIC_BASE_URL: model.url,
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  });
  assert.equal(result.code, 0, result.stderr);
  const seen = modelCredentials(model, "POST /v1/messages");
  assert.ok(seen.length > 0, "Claude Code never asked the model");
  assert.ok(
    seen.some((value) => value === secret || value === `Bearer ${secret}`),
    `the key did not reach the model: ${
      JSON.stringify(seen.map((v) => v.slice(0, 12)))
    }`,
  );
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);
  assert.deepEqual(leaks, []);
});

Deno.test("claude: [credentials] ANTHROPIC_API_KEY — the broker's key, not the shell's, reaches the model", async () => {
  await using model = startScriptedAnthropic(NO_TOOL);
  const { result, secret, leaks } = await runWithCredential({
    cli: "claude",
    secretName: "anthropic",
    extra: '[credentials]\nANTHROPIC_API_KEY = "anthropic"\n',
    args: ["-p", "hi", "--strict-mcp-config"],
    env: {
      ANTHROPIC_BASE_URL: model.url,
      ANTHROPIC_API_KEY: "shell-copy",
      CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
    },
  });
  assert.equal(result.code, 0, result.stderr);
  const seen = modelCredentials(model, "POST /v1/messages");
  assert.ok(seen.length > 0, "Claude Code never asked the model");
  assert.ok(seen.every((value) => value === secret), "not the broker's key");
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);
  assert.deepEqual(leaks, []);
});

Deno.test("codex: [credentials] OPENAI_API_KEY — the provider's env_key carries the broker's key to the model", async () => {
  await using model = startScriptedResponses(NO_TOOL);
  const { result, secret, leaks } = await runWithCredential({
    cli: "codex",
    secretName: "openai",
    extra: '[credentials]\nOPENAI_API_KEY = "openai"\n',
    args: [
      "exec",
      "--skip-git-repo-check",
      "-c",
      'model_provider="e2e"',
      "-c",
      'model="e2e-model"',
      "-c",
      `model_providers.e2e={name="e2e",base_url=${
        JSON.stringify(model.url)
      },wire_api="responses",env_key="OPENAI_API_KEY"}`,
      "hi",
    ],
    env: { OPENAI_API_KEY: "shell-copy" },
  });
  assert.equal(result.code, 0, result.stderr);
  const seen = modelCredentials(model, "POST /v1/responses");
  assert.ok(seen.length > 0, "Codex never asked the model");
  assert.ok(
    seen.every((value) => value === `Bearer ${secret}`),
    "not the broker's key",
  );
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);
  assert.deepEqual(leaks, []);
});
