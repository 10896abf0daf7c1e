/**
 * The agent's own credential from the broker (a profile's `[credentials]`
 * and `[api_key_helper]`), with a real broker daemon, a real secret store
 * and a real credential helper; the agent is the fake agent (or, for the
 * key helper, a small Deno script that runs the helper as Claude Code
 * would), since what is checked is what its process receives.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { filesContaining, randomToken } from "../helpers/leaks.ts";
import { profileToml } from "../helpers/profiles.ts";

/** Writes the fake agent's profile with `extra` TOML tables appended. */
function writeAgentProfile(home: BrokerHome, extra: string): void {
  home.addAgent();
  home.writeProfile(
    AGENT,
    profileToml({ name: AGENT, executable: AGENT }) + "\n" + extra,
  );
}

Deno.test("[credentials]: a stored secret reaches the agent's environment only; the shell's copy is stripped", async () => {
  await using home = await createBrokerHome();
  writeAgentProfile(home, '[credentials]\nANTHROPIC_API_KEY = "anthropic"\n');
  const secret = randomToken("sk-ant");
  const shellCopy = randomToken("shell");
  await home.login();
  const set = await home.sherlock(["secret", "set", "anthropic"], {
    stdin: secret,
  });
  assert.equal(set.code, 0, set.stderr);

  const { result, record } = await home.runAgent({
    args: ["--hello"],
    env: { ANTHROPIC_API_KEY: shellCopy },
  });
  assert.equal(result.code, 0, result.stderr);
  assert.equal(record?.env.ANTHROPIC_API_KEY, secret);
  // Neither in its arguments nor in the config it was given.
  assert.deepEqual(record.args, ["--hello"]);
  assert.equal(record.config?.text?.includes(secret) ?? false, false);
  assert.equal(JSON.stringify(record.env).includes(shellCopy), false);
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);
  // No file of sherlock's, the broker's log and the audit log included,
  // holds it in clear (the agent's own record, in scratch, does).
  assert.deepEqual(filesContaining(home.root, [secret], [home.scratch]), []);
  const served = auditEntries(home).filter((entry) =>
    entry.event === "token" && entry.service === "anthropic"
  );
  assert.equal(served.length, 1);
  assert.equal(served[0].credentials, true);
  assert.equal(served[0].source, "secret");
});

Deno.test("[credentials]: a command service's token is the variable's value", async () => {
  await using home = await createBrokerHome();
  writeAgentProfile(home, '[credentials]\nGH_TOKEN = "github"\n');
  const helper = home.addHelperService("github");
  await home.login();
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 0, result.stderr);
  assert.equal(record?.env.GH_TOKEN, helper.token);
  assert.equal(record.args.join(" ").includes(helper.token), false);
  assert.equal(result.stderr.includes(helper.token), false);
});

Deno.test("[credentials]: no such secret stops the session with exit 77 naming it; the agent never starts", async () => {
  await using home = await createBrokerHome();
  writeAgentProfile(home, '[credentials]\nOPENAI_API_KEY = "openai"\n');
  await home.login();
  const { result, record } = await home.runAgent({
    env: { OPENAI_API_KEY: "shell" },
  });
  assert.equal(result.code, 77, result.stderr);
  assert.equal(record, undefined);
  assert.match(result.stderr, /credential openai/);
  assert.match(result.stderr, /sherlock secret set openai/);
  assert.equal(result.stderr.split("\n").filter((line) => line).length, 1);
});

Deno.test("[credentials]: a [credentials] variable also in [forbid] is a profile error naming the key", async () => {
  await using home = await createBrokerHome();
  home.addAgent();
  home.writeProfile(
    AGENT,
    profileToml({ name: AGENT, executable: AGENT, forbid: ["GH_TOKEN"] }) +
      '\n[credentials]\nGH_TOKEN = "github"\n',
  );
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 78, result.stderr);
  assert.equal(record, undefined);
  assert.match(result.stderr, /fake\.toml/);
  assert.match(result.stderr, /forbid\.env/);
});

/**
 * An agent that does what Claude Code does with `--settings
 * {"apiKeyHelper": …}`: runs the command with its own environment through
 * the shell and keeps what it prints; then runs it again for a name that
 * is not the session's credential. Writes both outcomes to `$OUT`.
 */
const HELPER_AGENT = `
const settings = JSON.parse(Deno.args[Deno.args.indexOf("--settings") + 1]);
const run = async (command) => {
  const out = await new Deno.Command("sh", { args: ["-c", command] }).output();
  return {
    code: out.code,
    stdout: new TextDecoder().decode(out.stdout),
    stderr: new TextDecoder().decode(out.stderr),
  };
};
const own = await run(settings.apiKeyHelper);
const other = await run(settings.apiKeyHelper.replace(/anthropic$/, "github"));
Deno.writeTextFileSync(Deno.env.get("OUT"), JSON.stringify({
  helper: settings.apiKeyHelper,
  own,
  other,
  key: Deno.env.get("ANTHROPIC_API_KEY") ?? null,
}));
`;

Deno.test("[api_key_helper]: the agent's key helper gets the session's credential, and only that", async () => {
  await using home = await createBrokerHome();
  const script = join(home.scratch, "helper_agent.js");
  Deno.writeTextFileSync(script, HELPER_AGENT);
  const out = join(home.scratch, "helper.json");
  home.writeScript(
    "helper-agent",
    `exec ${JSON.stringify(Deno.execPath())} run -A ${
      JSON.stringify(script)
    } "$@"`,
  );
  home.writeProfile(
    "helper-agent",
    profileToml({ name: "helper-agent", executable: "helper-agent" }) +
      '\n[api_key_helper]\ncredential = "anthropic"\n',
  );
  // A service the session has: the helper must not get its token either.
  const github = home.addHelperService("github");
  const secret = randomToken("sk-ant");
  await home.login();
  const set = await home.sherlock(["secret", "set", "anthropic"], {
    stdin: secret,
  });
  assert.equal(set.code, 0, set.stderr);

  const result = await home.sherlock(["run", "helper-agent"], {
    env: { OUT: out, ANTHROPIC_API_KEY: "shell copy" },
  });
  assert.equal(result.code, 0, result.stderr);
  const seen = JSON.parse(Deno.readTextFileSync(out));
  assert.equal(seen.own.stdout, `${secret}\n`, seen.own.stderr);
  assert.equal(seen.own.code, 0);
  // The command names the credential, never a secret or the capability.
  assert.match(seen.helper, / credential --socket \S+ anthropic$/);
  assert.equal(seen.helper.includes(secret), false);
  assert.equal(/[0-9a-f]{64}/.test(seen.helper), false);
  // Another name, even one of the session's services: refused, one line.
  assert.equal(seen.other.code, 77);
  assert.equal(seen.other.stdout, "");
  assert.equal(seen.other.stderr.includes(github.token), false);
  assert.match(
    seen.other.stderr,
    /github is not one of session .* credentials/,
  );
  assert.deepEqual(filesContaining(home.root, [secret], [home.scratch]), []);
  assert.equal(result.stdout.includes(secret), false);
  assert.equal(result.stderr.includes(secret), false);

  // Outside a session, the command refuses with one line.
  const outside = await home.sherlock([
    "credential",
    "--socket",
    home.socket,
    "anthropic",
  ]);
  assert.equal(outside.code, 77);
  assert.equal(outside.stdout, "");
  assert.match(outside.stderr, /no session capability/);
});

Deno.test("[api_key_helper]: a helper credential the broker cannot give stops the session before the agent starts", async () => {
  await using home = await createBrokerHome();
  writeAgentProfile(home, '[api_key_helper]\ncredential = "anthropic"\n');
  await home.login();
  const { result, record } = await home.runAgent();
  assert.equal(result.code, 77, result.stderr);
  assert.equal(record, undefined);
  assert.match(
    result.stderr,
    /own credential anthropic: .*"sherlock secret set anthropic"/,
  );
});
