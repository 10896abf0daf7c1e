/**
 * Services per session, end to end: `--service` / `--no-service`, the
 * profile's `[services]`, a service's `[service] agents` and config.toml's
 * `[services] default = "none"`, as `--dry-run`, the rendered config, the
 * broker's registration and the audit log show them. sherlock, the broker
 * daemon (a real socket), the shim, the helpers and the fake agent are
 * real processes.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { addFakeAgent, startWaitingSession } from "../helpers/agent.ts";
import {
  AGENT,
  auditEntries,
  type BrokerHome,
  createBrokerHome,
  type TokenHelper,
} from "../helpers/broker_home.ts";
import { exists } from "../helpers/wait.ts";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import {
  profileToml,
  stdioServiceToml,
  tokenServiceToml,
} from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import {
  assertNoStackTrace,
  HANG_GUARD_MS,
  lines,
  runSherlock,
} from "../helpers/sherlock.ts";

/** A home with the fake agent and the token-less services alpha, beta, gamma. */
async function threeServices(): Promise<TestHome> {
  const home = await createTestHome();
  addFakeAgent(home, { name: "fake" });
  for (const name of ["alpha", "beta", "gamma"]) {
    home.writeService(name, stdioServiceToml(name, { command: `${name}-mcp` }));
  }
  return home;
}

/** The `services` and `left out` rows of a dry run. */
function serviceRows(stdout: string): string[] {
  return lines(stdout).filter((line) => /^(services|left out) /.test(line))
    .map((line) => line.replace(/ {2,}/, " "));
}

function writeConfig(home: TestHome, text: string): void {
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    text,
  );
}

Deno.test("--dry-run shows the set and why each service is out: flag, profile, agents key, default none", async () => {
  await using home = await threeServices();
  home.writeService(
    "delta",
    stdioServiceToml("delta", { command: "delta-mcp" }).replace(
      'name = "delta"',
      'name = "delta"\nagents = ["claude"]',
    ),
  );
  const dry = async (...args: string[]) => {
    const result = await runSherlock(["--dry-run", ...args, "fake"], {
      env: home.env,
    });
    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    return serviceRows(result.stdout);
  };
  assert.deepEqual(await dry(), [
    "services alpha, beta, gamma",
    "left out delta (its [service] agents is claude, not fake)",
  ]);
  assert.deepEqual(await dry("--service", "beta", "--service=alpha"), [
    "services alpha, beta",
    "left out delta (not named by --service)",
    "left out gamma (not named by --service)",
  ]);
  assert.deepEqual(await dry("--no-service", "beta"), [
    "services alpha, gamma",
    "left out beta (--no-service)",
    "left out delta (its [service] agents is claude, not fake)",
  ]);

  home.writeProfile(
    "fake",
    profileToml({ name: "fake", executable: "fake" }) +
      '\n[services]\nexclude = ["gamma"]\n',
  );
  assert.deepEqual(await dry(), [
    "services alpha, beta",
    "left out delta (its [service] agents is claude, not fake)",
    "left out gamma (in the profile's [services] exclude)",
  ]);

  // Deny by default: only what the profile's include or --service names.
  writeConfig(home, '[services]\ndefault = "none"\n');
  assert.deepEqual(await dry("--service", "gamma"), [
    "services gamma",
    "left out alpha (not named by --service)",
    "left out beta (not named by --service)",
    "left out delta (not named by --service)",
  ]);
  const none = await dry();
  assert.equal(none[0], "services (none)");
  assert.match(
    none[1],
    /^left out alpha \(config\.toml's \[services\] default = "none", and neither the profile nor --service names it\)$/,
  );
  home.writeProfile(
    "fake",
    profileToml({ name: "fake", executable: "fake" }) +
      '\n[services]\ninclude = ["beta"]\n',
  );
  assert.deepEqual(await dry(), [
    "services beta",
    "left out alpha (not in the profile's [services] include)",
    "left out delta (not in the profile's [services] include)",
    "left out gamma (not in the profile's [services] include)",
  ]);
});

Deno.test("an unknown name is a usage error (2) with the closest name; the agent's own --service goes to the agent", async () => {
  await using home = await threeServices();
  const typo = await runSherlock(["--service", "btea", "fake"], {
    env: home.env,
  });
  assert.equal(typo.code, 2);
  assert.equal(typo.stdout, "");
  assert.deepEqual(lines(typo.stderr), [
    'sherlock: --service: no service named "btea" (did you mean beta?); run "sherlock services" to list them',
  ]);
  const both = await runSherlock(
    ["run", "--service", "beta", "--no-service", "alpha", "fake"],
    { env: home.env },
  );
  assert.equal(both.code, 2);
  assertNoStackTrace(both.stderr);
  const missing = await runSherlock(["--no-service"], { env: home.env });
  assert.equal(missing.code, 2);
  assert.match(
    missing.stderr,
    /--no-service needs a value \(--no-service NAME\)/,
  );

  const profile = home.writeProfile(
    "fake",
    profileToml({ name: "fake", executable: "fake" }) +
      '\n[services]\ninclude = ["gama"]\n',
  );
  const inProfile = await runSherlock(["--dry-run", "fake"], {
    env: home.env,
  });
  assert.equal(inProfile.code, 78, "the profile is wrong, not the command");
  assert.deepEqual(lines(inProfile.stderr), [
    `sherlock: ${profile}: services.include: no service named "gama" (did you mean gamma?); run "sherlock services" to list them`,
  ]);

  // After the agent's name, --service is the agent's.
  home.writeProfile("fake", profileToml({ name: "fake", executable: "fake" }));
  const agents = await runSherlock(
    ["--dry-run", "--service", "alpha", "fake", "--service", "nonesuch"],
    { env: home.env },
  );
  assert.equal(agents.code, 0, agents.stderr);
  assert.match(agents.stdout, /^argv +\S+ --service nonesuch$/m);
  assert.deepEqual(serviceRows(agents.stdout)[0], "services alpha");
});

Deno.test("a malformed service the session would not get is no warning and does not stop a strict session", async () => {
  await using home = await threeServices();
  const broken = join(home.servicesDir, "broken.toml");
  Deno.writeTextFileSync(broken, '[service]\nname = "broken"\ncolour = 1\n');
  const unrelated = await runSherlock(
    ["--dry-run", "--strict", "--service", "alpha", "fake"],
    { env: home.env },
  );
  assert.equal(unrelated.code, 0, unrelated.stderr);
  assert.equal(unrelated.stderr, "");
  assert.deepEqual(serviceRows(unrelated.stdout), [
    "services alpha",
    "left out beta (not named by --service)",
    "left out gamma (not named by --service)",
    "left out broken (not named by --service)",
  ]);
  const named = await runSherlock(
    ["--dry-run", "--strict", "--service", "broken", "fake"],
    { env: home.env },
  );
  assert.equal(named.code, 78);
  assert.match(named.stderr, /^sherlock: .*broken\.toml:3: service\.colour: /);
  const loose = await runSherlock(
    ["--dry-run", "--no-service", "beta", "fake"],
    {
      env: home.env,
    },
  );
  assert.equal(loose.code, 0, loose.stderr);
  assert.match(
    loose.stderr,
    /^sherlock: skipped malformed service .*broken\.toml/,
  );
});

Deno.test("a service named by --service whose agents key leaves the agent out: one warning line; --strict: 78", async () => {
  await using home = await threeServices();
  home.writeService(
    "delta",
    stdioServiceToml("delta", { command: "delta-mcp" }).replace(
      'name = "delta"',
      'name = "delta"\nagents = ["claude", "codex"]',
    ),
  );
  const loose = await runSherlock(
    ["--dry-run", "--service", "delta", "--service", "alpha", "fake"],
    { env: home.env },
  );
  assert.equal(loose.code, 0, loose.stderr);
  assert.deepEqual(lines(loose.stderr), [
    "sherlock: service delta is named by --service but its [service] agents is claude, codex, not fake; starting the session without service delta",
  ]);
  assert.equal(serviceRows(loose.stdout)[0], "services alpha");
  const strict = await runSherlock(
    ["--strict", "--service", "delta", "fake"],
    { env: home.env },
  );
  assert.equal(strict.code, 78);
  assert.deepEqual(lines(strict.stderr), [
    "sherlock: service delta is named by --service but its [service] agents is claude, codex, not fake",
  ]);
});

/**
 * A logged-in broker home with two services behind the shim, `api` and
 * `other`, each with a helper printing its own token; both servers are one
 * script that writes the token it got to `scratch/<service>.got`.
 */
async function shimHome(): Promise<
  { home: BrokerHome; helpers: Record<string, TokenHelper> }
> {
  const home = await createBrokerHome();
  try {
    home.addAgent();
    const helpers: Record<string, TokenHelper> = {};
    for (const name of ["api", "other"]) {
      const helper = home.tokenHelper(name);
      helpers[name] = helper;
      home.writeScript(
        `mcp-server-${name}`,
        `printf '%s' "$API_TOKEN" > ${
          sh(join(home.scratch, `${name}.got`))
        }\nexec cat`,
      );
      home.writeService(
        name,
        tokenServiceToml({
          name,
          command: [helper.path],
          env: "API_TOKEN",
          delivery: "shim",
        }),
      );
    }
    await home.login();
    return { home, helpers };
  } catch (error) {
    await home[Symbol.asyncDispose]();
    throw error;
  }
}

/** Runs a rendered stdio entry as the agent would, with an empty stdin. */
async function runEntry(
  home: BrokerHome,
  entry: { command: string; args: string[]; env: Record<string, string> },
): Promise<{ code: number; stderr: string }> {
  const output = await new Deno.Command(entry.command, {
    args: entry.args,
    env: { ...home.env, ...entry.env },
    clearEnv: true,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(HANG_GUARD_MS),
  }).output();
  return {
    code: output.code,
    stderr: new TextDecoder().decode(output.stderr),
  };
}

Deno.test("the broker serves a session only its selected services: a shim of the session cannot get an unselected service's token", async () => {
  const { home, helpers } = await shimHome();
  await using _home = home;
  await using session = await startWaitingSession(
    home,
    ["--service", "api", AGENT],
    { config: "env:SHERLOCK_MCP_CONFIG" },
  );
  const servers = JSON.parse(session.started.config!.text!).mcpServers;
  assert.deepEqual(Object.keys(servers), ["api"]);
  const started = auditEntries(home).filter((entry) =>
    entry.event === "session_start"
  );
  assert.equal(started.length, 1);
  assert.deepEqual(started[0].services, ["api"]);

  // The session's own shim entry gets its token.
  const api = servers.api;
  const served = await runEntry(home, api);
  assert.equal(served.code, 0, served.stderr);
  assert.equal(
    Deno.readTextFileSync(join(home.scratch, "api.got")),
    helpers.api.token,
  );

  // The same entry, with the session's capability, for the service the
  // operator left out: refused before the helper runs or the server starts.
  const other = {
    ...api,
    args: api.args.map((arg: string) =>
      arg === "api"
        ? "other"
        : arg === "mcp-server-api"
        ? "mcp-server-other"
        : arg
    ),
  };
  assert.notDeepEqual(other.args, api.args);
  const refused = await runEntry(home, other);
  assert.equal(refused.code, 77, refused.stderr);
  assertNoStackTrace(refused.stderr);
  assert.match(refused.stderr, /other/);
  assert.equal(helpers.other.runs(), 0);
  assert.equal(exists(join(home.scratch, "other.got")), false);
  assert.deepEqual(
    filesContaining(home.root, [helpers.other.token]).filter((path) =>
      !path.endsWith("other.token")
    ),
    [],
  );
  assert.ok(
    auditEntries(home).some((entry) =>
      entry.event === "token_failed" && entry.service === "other" &&
      entry.reason === "service_not_in_session"
    ),
  );
  session.agent.release();
  assert.equal((await session.sherlock.result).code, 0);
});
