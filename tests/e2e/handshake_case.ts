/**
 * The body shared by the per-CLI e2e tests: configure the test MCP server
 * in a real CLI with a token in the entry's `env`, start the CLI in a
 * throwaway home, wait for the handshake, stop the CLI, and check what the
 * server saw.
 *
 * @module
 */

import {
  deepStrictEqual as assertEquals,
  ok as assert,
} from "node:assert/strict";
import {
  CLI_PINS,
  compareSnapshots,
  findRecord,
  installClis,
  makeSandbox,
  operatorAgentPaths,
  type ServerRecord,
  sha256,
  snapshotFiles,
  startCli,
  stopCli,
  type StopResult,
  testServer,
  waitForHandshake,
} from "./harness.ts";
import type { Invocation, Recipe } from "./recipes.ts";

/** The variable the test server reads its token from. */
export const TOKEN_ENV = "GITHUB_PERSONAL_ACCESS_TOKEN";

/**
 * A variable put in the CLI's own environment (not in the entry), to see
 * whether the CLI passes its environment on to servers.
 */
export const PARENT_CANARY = "SHERLOCK_E2E_PARENT_CANARY";

/** What one run saw. */
export interface HandshakeOutcome {
  /** The command the CLI was started with. */
  invocation: Invocation;
  /** Everything the test server recorded. */
  records: ServerRecord[];
  /** The `start` record. */
  start: ServerRecord;
  /** Milliseconds from starting the CLI until the handshake was complete. */
  handshakeMs: number;
  /** How stopping went. */
  stop: StopResult;
}

/** Options of {@linkcode runHandshakeCase}. */
export interface CaseOptions {
  /** Hang guard for the handshake (default 90 s: a first run unpacks). */
  timeoutMs?: number;
}

/**
 * Runs `recipe` with one test server named `probe` whose token is in the
 * entry's `env`, and checks that the CLI started it, completed the
 * handshake, handed it exactly that token, stopped without leaving a
 * process behind, and did not touch the operator's own agent files.
 */
export async function runHandshakeCase(
  recipe: Recipe,
  options: CaseOptions = {},
): Promise<HandshakeOutcome> {
  const [path] = Object.values(await installClis([recipe.key]));
  // Stat only: this machine's real agent folders may hold credentials.
  const operator = operatorAgentPaths();
  const operatorBefore = await snapshotFiles(operator, { contents: false });
  const sandbox = await makeSandbox(recipe.key);
  try {
    const token = `e2e-token-${crypto.randomUUID()}`;
    const server = testServer({
      record: sandbox.record,
      name: "probe",
      tokenEnv: TOKEN_ENV,
      env: { [TOKEN_ENV]: token },
    });
    const invocation = await recipe.prepare(sandbox, { probe: server });
    invocation.env[PARENT_CANARY] = "parent";
    const cli = startCli(path, invocation);
    let records: ServerRecord[];
    let handshakeMs: number;
    let stop: StopResult;
    try {
      records = await waitForHandshake(sandbox.record, {
        name: "probe",
        cli,
        tools: recipe.listsTools,
        timeoutMs: options.timeoutMs ?? 90_000,
      });
      handshakeMs = performance.now() - cli.startedAt;
    } finally {
      stop = await stopCli(cli, recipe.stop);
    }
    const start = findRecord(records, "start", "probe")!;
    const initialize = findRecord(records, "initialize", "probe")!;
    assertEquals(start.token_env, TOKEN_ENV);
    assertEquals(
      start.token_sha256,
      sha256(token),
      "the server got another token than the one in its entry",
    );
    assertEquals(initialize.client_name, recipe.clientName);
    assertEquals(
      initialize.client_version,
      recipe.clientVersion ?? CLI_PINS[recipe.key].version,
    );
    assertEquals(
      stop.leftovers,
      [],
      `${recipe.key} left processes behind after ${recipe.stop.signal}`,
    );
    assert(
      stop.exitedInGrace,
      `${recipe.key} did not exit within the grace period`,
    );
    assertEquals(
      compareSnapshots(
        operatorBefore,
        await snapshotFiles(operator, { contents: false }),
      ),
      [],
      "the operator's own agent files changed",
    );
    console.log(
      `${recipe.key} ${CLI_PINS[recipe.key].version}: handshake ${
        Math.round(handshakeMs)
      } ms, ${
        stop.signalled
          ? `stopped by ${recipe.stop.signal} in ${Math.round(stop.ms)} ms`
          : `exited by itself (${stop.status.code})`
      }`,
    );
    return { invocation, records, start, handshakeMs, stop };
  } finally {
    await sandbox.cleanup();
  }
}
