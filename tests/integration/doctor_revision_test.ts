/**
 * `sherlock doctor` asks each remote server which MCP revision it speaks,
 * with no token, and says it in the service's line: real SDK servers (a
 * modern-only one on the SDK v2, a 2025-era one on the SDK v1) and a port
 * where nothing listens. The doctor starts no broker and sends no token.
 */

import assert from "node:assert/strict";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { randomToken } from "../helpers/leaks.ts";
import { startModernServer } from "../helpers/modern_server.ts";
import { startRemoteMcpServer } from "../fixtures/remote_mcp_server.ts";
import { DOCTOR_JSON } from "../../lib/cli/json_shapes.ts";

/** A remote service with no [token]. */
function remoteService(name: string, url: string, sse = false): string {
  return `[service]\nname = "${name}"\n\n[server]\nurl = "${url}"\n${
    sse ? 'transport = "sse"\n' : ""
  }`;
}

Deno.test("doctor: a remote service's line says the MCP revision its server answered with (2026-07-28, 2025 behind a token, none); no token sent", async () => {
  await using modern = await startModernServer();
  const token = randomToken();
  await using legacy = await startRemoteMcpServer({ token });
  await using home = await createBrokerHome();
  home.writeService("modern", remoteService("modern", modern.url));
  home.writeService("legacy", remoteService("legacy", legacy.url));
  home.writeService(
    "legacysse",
    remoteService("legacysse", legacy.sseUrl, true),
  );
  home.writeService(
    "nothing",
    remoteService("nothing", "http://127.0.0.1:9/mcp"),
  );

  const doctor = await home.sherlock(["doctor", "--json"]);
  const report = DOCTOR_JSON.parse(JSON.parse(doctor.stdout));
  const check = (name: string) =>
    report.checks.find((each) =>
      each.group === "service" && each.name === name
    );

  assert.equal(check("modern")?.verdict, "ok", doctor.stdout);
  assert.match(
    check("modern")?.detail ?? "",
    /^server 127\.0\.0\.1 resolves, answers MCP 2026-07-28 \(stateless: server\/discover\); token /,
  );
  // The 2025-era fixture answers nothing without its token.
  for (const name of ["legacy", "legacysse"]) {
    assert.equal(check(name)?.verdict, "ok", doctor.stdout);
    assert.match(
      check(name)?.detail ?? "",
      /, names its MCP revision only with a token \(HTTP 401; "sherlock services test" uses one\); /,
    );
  }
  assert.equal(check("nothing")?.verdict, "warn", doctor.stdout);
  assert.match(check("nothing")?.detail ?? "", /, but no MCP answer: /);
  assert.equal(
    check("nothing")?.fix,
    'run "sherlock services test nothing" to see more',
  );

  const text = await home.sherlock(["doctor"]);
  assert.match(text.stdout, /modern.*answers MCP 2026-07-28/);

  assert.equal(await home.health(), undefined, "doctor started no broker");
  assert.ok(modern.counts.requests > 0, "the modern server was asked");
  assert.ok(modern.counts.seen.every((request) => !request.authorized));
  assert.equal(modern.counts.methods["initialize"] ?? 0, 0);
});
