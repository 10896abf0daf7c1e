/**
 * Rotating refresh tokens and the store (issue 17, items 3 and 9), against
 * the real OAuth fixture (oidc-provider rotates refresh tokens and revokes
 * the whole grant when a spent one comes back): two real daemons sharing
 * one store (two runtime folders, one data folder — an SSH session without
 * `XDG_RUNTIME_DIR` beside the desktop's) keep one grant alive, and a grant
 * that cannot be written after the server rotated it keeps its new refresh
 * token in memory, hands out no access token, and is written once the
 * store can be written again.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { browserEnv } from "../fixtures/oauth/mod.ts";
import { sha256 } from "../fixtures/remote_mcp_server.ts";
import { callRemote } from "../helpers/protected_server.ts";
import { createOAuthHome, type OAuthHome } from "../helpers/oauth_home.ts";
import { AGENT, type BrokerHome, PASSPHRASE } from "../helpers/broker_home.ts";
import { brokerDaemonPids } from "../helpers/daemon_processes.ts";
import { runSherlock, type SherlockResult } from "../helpers/sherlock.ts";
import { waitUntil } from "../helpers/wait.ts";
import {
  fetchToken,
  registerSession,
  reportScopeChallenge,
} from "../../lib/broker/client.ts";
import { ExitCode, SherlockError } from "../../lib/errors.ts";

/** The uid of nobody: a data folder it owns is not the daemon's to write. */
const NOBODY = 65534;

/** An AS, a remote MCP server it protects, and a logged-in broker home. */
function setup(): Promise<OAuthHome> {
  return createOAuthHome({ authServer: { accessTokenTtlSeconds: 60 } });
}

/** A second daemon of `home`: its own runtime folder, the same store. */
interface SecondDaemon extends AsyncDisposable {
  socket: string;
  sherlock(args: readonly string[]): Promise<SherlockResult>;
}

async function secondDaemon(home: BrokerHome): Promise<SecondDaemon> {
  const runtimeHome = join(home.root, "run-ssh");
  Deno.mkdirSync(runtimeHome, { mode: 0o700 });
  const env = { ...home.env, XDG_RUNTIME_DIR: runtimeHome };
  const sherlock = (args: readonly string[]) =>
    runSherlock(args, { cwd: home.work, env });
  const login = await runSherlock(["login"], {
    cwd: home.work,
    env,
    stdin: `${PASSPHRASE}\n`,
  });
  assert.equal(login.code, 0, login.stderr);
  return {
    socket: join(runtimeHome, "sherlock", "broker.sock"),
    sherlock,
    async [Symbol.asyncDispose]() {
      await sherlock(["broker", "stop"]);
      await waitUntil(
        () => brokerDaemonPids(runtimeHome).length === 0,
        "the second daemon to exit",
      );
    },
  };
}

/** Registers a session of "remote" at the daemon on `socket`. */
async function session(socket: string): Promise<string> {
  const { capability } = await registerSession({
    socket,
    session: crypto.randomUUID().replaceAll("-", "").slice(0, 12),
    agent: AGENT,
    services: ["remote"],
    pid: Deno.pid,
  });
  return capability;
}

/** Whether the daemon of `sherlock` says the grant of "remote" is alive. */
async function authorized(
  sherlock: (args: readonly string[]) => Promise<SherlockResult>,
): Promise<boolean> {
  const status = await sherlock(["auth", "status", "--json"]);
  assert.equal(status.code, 0, status.stderr);
  return JSON.parse(status.stdout).services[0].authorized;
}

Deno.test("two daemons sharing one store take turns refreshing one rotating grant: neither presents a spent refresh token, both keep serving", async () => {
  await using s = await setup();
  const { as, remote, home } = s;
  const auth = await home.sherlock(["auth", "remote"], { env: browserEnv() });
  assert.equal(auth.code, 0, auth.stderr);
  // The second daemon reads the store now: the grant's first refresh token.
  await using ssh = await secondDaemon(home);
  const desktop = {
    socket: home.socket,
    capability: await session(home.socket),
  };
  const remoteSession = {
    socket: ssh.socket,
    capability: await session(ssh.socket),
  };
  const last = new Map<string, string>();
  const get = async (at: { socket: string; capability: string }) => {
    const before = last.get(at.socket);
    const { token } = await fetchToken(at.socket, {
      service: "remote",
      capability: at.capability,
      // A refused token: the daemon refreshes.
      ...(before ? { refused: sha256(before) } : {}),
    });
    last.set(at.socket, token);
    return token;
  };

  // The desktop's daemon refreshes: the server rotates the refresh token.
  await get(desktop);
  const rotated = await get(desktop);
  assert.equal(await callRemote(remote.url, rotated), 200);
  // The other daemon's first refresh: with the refresh token on disk now,
  // not the one it read at its login (the server would revoke the grant).
  const first = await get(remoteSession);
  assert.equal(await callRemote(remote.url, first), 200);
  // Both at once, a few times: one after the other, each with the newest.
  for (let round = 0; round < 3; round++) {
    const tokens = await Promise.all([get(desktop), get(remoteSession)]);
    for (const token of tokens) {
      assert.equal(await callRemote(remote.url, token), 200);
    }
  }
  assert.equal(await authorized(home.sherlock), true);
  assert.equal(await authorized(ssh.sherlock), true);

  // A step-up recorded by the daemon that did not refresh last changes the
  // grant on disk, not the grant it last saw: the rotated refresh token
  // stays, and a restarted desktop daemon refreshes with it.
  await get(desktop);
  const recorded = await reportScopeChallenge(ssh.socket, {
    service: "remote",
    capability: remoteSession.capability,
    scope: "mcp:admin",
  });
  assert.deepEqual(recorded, { recorded: true, scopesNeeded: ["mcp:admin"] });
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  await waitUntil(() => home.daemonPids().length === 0, "the daemon to exit");
  await home.login();
  desktop.capability = await session(home.socket);
  last.delete(home.socket);
  assert.equal(await callRemote(remote.url, await get(desktop)), 200);

  // A revoke in one daemon: the other's status reads the store again.
  const revoke = await home.sherlock(["auth", "revoke", "remote"]);
  assert.equal(revoke.code, 0, revoke.stderr);
  assert.equal(await authorized(ssh.sherlock), false);
  assert.ok(
    as.requests.every((request) =>
      request.grantType !== "refresh_token" || request.status === 200
    ),
    "every refresh succeeded: no spent refresh token was presented",
  );
});

Deno.test("a grant that cannot be written after the server rotated it: the new refresh token is kept in memory, no access token is handed out, the write is retried", async () => {
  await using s = await setup();
  const { as, remote, home } = s;
  const auth = await home.sherlock(["auth", "remote"], { env: browserEnv() });
  assert.equal(auth.code, 0, auth.stderr);
  const capability = await session(home.socket);
  const first = await fetchToken(home.socket, {
    service: "remote",
    capability,
  });
  const refused = sha256(first.token);
  const dataFolder = join(home.dataHome, "sherlock");
  const owner = Deno.statSync(dataFolder).uid!;

  // The server has the refresh in hand when the store stops being
  // writable: the data folder now belongs to another user.
  as.setFailure({ mode: "hold", endpoints: ["token"] });
  const refreshes = as.counts.refresh;
  const refreshing = fetchToken(home.socket, {
    service: "remote",
    capability,
    refused,
  }).then(() => undefined, (error) => error);
  await waitUntil(
    () => as.counts.refresh === refreshes + 1,
    "the refresh to reach the server",
  );
  Deno.chownSync(dataFolder, NOBODY, NOBODY);
  try {
    as.setFailure(null);
    const failed = await refreshing;
    assert.ok(failed instanceof SherlockError, String(failed));
    assert.equal(failed.exitCode, ExitCode.CantCreate);
    assert.match(
      failed.message,
      /^service remote's rotated refresh token cannot be stored \(.*belongs to another user.*\); the broker keeps it in memory and writes it at the next request/,
    );
    // Still unwritable: no token, and no second refresh with the spent
    // refresh token (the server would revoke the grant).
    const again = await fetchToken(home.socket, {
      service: "remote",
      capability,
      refused,
    }).then(() => undefined, (error) => error);
    assert.ok(again instanceof SherlockError, String(again));
    assert.match(again.message, /rotated refresh token cannot be stored/);
    assert.equal(as.counts.refresh, refreshes + 1);
  } finally {
    Deno.chownSync(dataFolder, owner, owner);
  }

  // Writable again: the next request writes the grant, then gets the
  // access token of that refresh, without another one.
  const served = await fetchToken(home.socket, {
    service: "remote",
    capability,
    refused,
  });
  assert.notEqual(served.token, first.token);
  assert.equal(as.counts.refresh, refreshes + 1);
  assert.equal(await callRemote(remote.url, served.token), 200);

  // The rotated refresh token is on disk: a restarted daemon refreshes
  // with it (the spent one would revoke the grant).
  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  await waitUntil(() => home.daemonPids().length === 0, "the daemon to exit");
  await home.login();
  const restarted = await fetchToken(home.socket, {
    service: "remote",
    capability: await session(home.socket),
  });
  assert.equal(as.counts.refresh, refreshes + 2);
  assert.equal(await callRemote(remote.url, restarted.token), 200);
  assert.equal(await authorized(home.sherlock), true);
});
