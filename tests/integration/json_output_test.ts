/**
 * `--json` of `agents`, `services`, `whoami`, `secret ls`, `broker status`,
 * `auth status` and `doctor`, against a real broker in a throwaway HOME (in
 * the test's process while no broker runs, as real processes with one): every output is checked against its schema
 * (lib/cli/json_shapes.ts), its exit code is the text output's, and no
 * stored secret appears in any of them. `sherlock doctor` is also checked
 * not to start a broker, and to give its verdicts on real files: a
 * malformed profile, a profile whose executable answers `--version`, a
 * service whose command is missing.
 */

import assert from "node:assert/strict";
import type { z } from "zod";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { runInProcess } from "../helpers/in_process.ts";
import { randomToken } from "../helpers/leaks.ts";
import {
  profileToml,
  stdioServiceToml,
  tokenServiceToml,
} from "../helpers/profiles.ts";
import {
  AGENTS_JSON,
  AUTH_STATUS_JSON,
  BROKER_STATUS_JSON,
  DOCTOR_JSON,
  SECRETS_JSON,
  SERVICES_JSON,
  WHOAMI_JSON,
} from "../../lib/cli/json_shapes.ts";

/** stdout parsed as JSON and checked against `schema`. */
function parsed<T extends z.ZodType>(
  schema: T,
  result: { stdout: string; stderr: string },
): z.infer<T> {
  let value: unknown;
  try {
    value = JSON.parse(result.stdout);
  } catch {
    assert.fail(`not JSON:\n${result.stdout}\n${result.stderr}`);
  }
  return schema.parse(value);
}

Deno.test("--json without a broker: each shape, the same exit codes, and doctor starts no broker", async () => {
  await using home = await createBrokerHome();
  // No broker runs: what each command prints needs no process of its own.
  const sherlock = (args: string[]) => runInProcess(args, { env: home.env });
  home.writeProfile("broken", "[agent]\nname = 42\n");
  home.writeScript("tool", 'echo "tool 9.9.9"');
  home.writeProfile("tool", profileToml({ name: "tool", executable: "tool" }));
  home.writeService("bad", "[service]\nname = 'bad'\n");
  // Its command is not installed: written by hand, not by writeService.
  Deno.writeTextFileSync(
    `${home.servicesDir}/gone.toml`,
    stdioServiceToml("gone", { command: "no-such-mcp-server" }),
  );

  const agents = await sherlock(["agents", "--json"]);
  assert.equal(agents.code, 78, agents.stderr);
  const agentList = parsed(AGENTS_JSON, agents).agents;
  const broken = agentList.find((agent) => agent.name === "broken");
  assert.equal(broken?.valid, false);
  assert.match(broken?.error ?? "", /broken\.toml/);
  const tool = agentList.find((agent) => agent.name === "tool");
  assert.equal(tool?.executableStatus, "found");
  assert.equal(tool?.executablePath, `${home.bin}/tool`);
  assert.equal(
    agentList.find((agent) => agent.name === "claude")?.source,
    "built-in",
  );

  const services = await sherlock(["services", "--json"]);
  assert.equal(services.code, 78, services.stderr);
  const serviceList = parsed(SERVICES_JSON, services);
  assert.deepEqual(serviceList.services.map((service) => service.name), [
    "gone",
  ]);
  assert.equal(serviceList.services[0].serverReachable, false);
  assert.equal(serviceList.services[0].tokenStatus, "none");
  assert.equal(serviceList.problems.length, 1);
  assert.match(serviceList.problems[0].path, /bad\.toml$/);

  const whoami = await sherlock(["whoami", "--json"]);
  assert.equal(whoami.code, 77, whoami.stderr);
  assert.equal(parsed(WHOAMI_JSON, whoami).brokerRunning, false);

  const status = await sherlock(["broker", "status", "--json"]);
  assert.equal(status.code, 69, status.stderr);
  const brokerStatus = parsed(BROKER_STATUS_JSON, status);
  assert.equal(brokerStatus.running, false);
  assert.equal(brokerStatus.socket, home.socket);

  const doctor = await sherlock(["doctor", "--json"]);
  assert.equal(doctor.code, 1, doctor.stderr);
  const report = parsed(DOCTOR_JSON, doctor);
  assert.equal(report.ok, false);
  const verdict = (group: string, name: string) =>
    report.checks.find((check) => check.group === group && check.name === name)
      ?.verdict;
  assert.equal(verdict("profile", "broken"), "fail");
  assert.equal(verdict("profile", "tool"), "ok");
  assert.match(
    report.checks.find((check) => check.name === "tool")?.detail ?? "",
    /tool 9\.9\.9/,
  );
  assert.equal(verdict("service", "gone"), "fail");
  assert.equal(verdict("service", "bad"), "fail");
  assert.equal(verdict("broker", "broker"), "warn");
  assert.equal(verdict("runtime", "folder"), "ok");
  assert.equal(await home.health(), undefined, "doctor started no broker");

  // The text screen says the same, one line per check and a summary.
  const text = await sherlock(["doctor"]);
  assert.equal(text.code, 1);
  assert.match(text.stdout, /^FAIL\s+profile\s+broken\s+/m);
  assert.match(text.stdout, /^OK\s+profile\s+tool\s+.*tool 9\.9\.9$/m);
  assert.match(text.stdout, /\n3 checks failed\n$/);

  const usage = await sherlock(["doctor", "--yaml"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /usage: sherlock doctor \[--json\]/);
});

Deno.test("--json with a logged-in broker: each shape, and no secret in any output", async () => {
  await using home = await createBrokerHome();
  await home.login();
  const token = randomToken("ghp");
  const set = await home.sherlock(["secret", "set", "github"], {
    stdin: token,
  });
  assert.equal(set.code, 0, set.stderr);
  home.writeService("github", tokenServiceToml({ name: "github" }));
  home.writeService(
    "remote",
    tokenServiceToml({
      name: "remote",
      source: "oauth",
      url: "http://127.0.0.1:9/mcp",
    }),
  );
  const outputs: string[] = [];
  const run = async (args: string[]) => {
    const result = await home.sherlock(args);
    outputs.push(result.stdout, result.stderr);
    return result;
  };

  const whoami = await run(["whoami", "--json"]);
  assert.equal(whoami.code, 0, whoami.stderr);
  const who = parsed(WHOAMI_JSON, whoami);
  assert.equal(who.brokerRunning, true);
  assert.equal(who.loggedIn, true);
  assert.equal(who.provider, "local");
  assert.equal(who.storeExists, true);

  const secrets = await run(["secret", "ls", "--json"]);
  assert.equal(secrets.code, 0, secrets.stderr);
  assert.deepEqual(
    parsed(SECRETS_JSON, secrets).secrets.map((secret) => secret.name),
    ["github"],
  );

  const status = await run(["broker", "status", "--json"]);
  assert.equal(status.code, 0, status.stderr);
  const brokerStatus = parsed(BROKER_STATUS_JSON, status);
  assert.equal(brokerStatus.running, true);
  assert.equal(brokerStatus.pid, (await home.health())?.pid);
  assert.equal(brokerStatus.login?.loggedIn, true);

  const auth = await run(["auth", "status", "--json"]);
  assert.equal(auth.code, 0, auth.stderr);
  const grants = parsed(AUTH_STATUS_JSON, auth).services;
  assert.deepEqual(grants.map((grant) => [grant.service, grant.authorized]), [
    ["remote", false],
  ]);

  const services = await run(["services", "--json"]);
  assert.equal(services.code, 0, services.stderr);
  const byName = new Map(
    parsed(SERVICES_JSON, services).services.map((service) => [
      service.name,
      service,
    ]),
  );
  assert.equal(byName.get("github")?.tokenStatus, "ready");
  assert.equal(byName.get("github")?.serverReachable, true);
  assert.equal(byName.get("remote")?.tokenStatus, "missing");
  assert.equal(byName.get("remote")?.transport, "http");

  const doctor = await run(["doctor", "--json"]);
  const report = parsed(DOCTOR_JSON, doctor);
  const check = (name: string) =>
    report.checks.find((each) => each.name === name);
  assert.equal(check("broker")?.verdict, "ok");
  assert.equal(check("login")?.verdict, "ok");
  assert.equal(check("github")?.verdict, "ok");
  // The grant is missing: a failure that names what to do.
  assert.equal(check("remote")?.verdict, "fail");
  assert.match(check("remote")?.detail ?? "", /sherlock auth remote/);
  assert.equal(doctor.code, 1);
  assert.equal(report.ok, false);
  await run(["doctor"]);

  for (const output of outputs) {
    assert.equal(output.includes(token), false, "a secret was printed");
  }
});

Deno.test("doctor: an installed Gemini with a JSONC settings file and an untrusted folder; no value of the file printed", async () => {
  await using home = await createBrokerHome();
  home.writeScript("gemini", 'echo "0.61.0"');
  const value = randomToken("sk");
  Deno.mkdirSync(`${home.home}/.gemini`);
  Deno.writeTextFileSync(
    `${home.home}/.gemini/settings.json`,
    `{\n  // the operator's own comment\n  "env": {"KEY": "${value}"},\n}\n`,
  );
  const doctor = await home.sherlock(["doctor", "--json"]);
  assert.equal(doctor.code, 1, doctor.stderr);
  const gemini = parsed(DOCTOR_JSON, doctor).checks.find((check) =>
    check.group === "agent" && check.name === "gemini"
  );
  assert.equal(gemini?.verdict, "fail");
  assert.match(gemini?.detail ?? "", /not plain JSON/);
  assert.equal(doctor.stdout.includes(value), false);

  // Plain JSON, and trust from the environment: the check passes.
  Deno.writeTextFileSync(`${home.home}/.gemini/settings.json`, "{}\n");
  const trusted = await home.sherlock(["doctor"], {
    env: { GEMINI_CLI_TRUST_WORKSPACE: "true" },
  });
  assert.match(
    trusted.stdout,
    /^OK\s+agent\s+gemini\s+.*GEMINI_CLI_TRUST_WORKSPACE/m,
  );
  assert.match(trusted.stdout, /^OK\s+profile\s+gemini\s+.*0\.61\.0$/m);
});
