/**
 * `[login] provider = "oidc"`: `sherlock login` signs in at a real OpenID
 * provider (oidc-provider, tests/fixtures/oauth/) through the headless
 * browser or the device grant; `whoami`, tokens gated on the login, the
 * local store still needed for `secret` services, `logout` revoking at the
 * provider, a restart forgetting the login; and the daemon's OIDC login
 * object itself: one refresh for a burst, rotation, a dead grant.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import {
  type AuthServer,
  type AuthServerOptions,
  browserEnv,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import { openedUrl } from "../fixtures/oauth/browser.ts";
import {
  auditEntries,
  type BrokerHome,
  createBrokerHome,
} from "../helpers/broker_home.ts";
import { filesContaining } from "../helpers/leaks.ts";
import { WHOAMI_JSON } from "../../lib/cli/json_shapes.ts";
import { startSherlock } from "../helpers/sherlock.ts";
import { waitUntil, whileAdvancing } from "../helpers/wait.ts";
import { offsetClock } from "../../lib/broker/daemon/clock.ts";
import {
  type OidcConfig,
  OidcLogin,
} from "../../lib/broker/daemon/oauth/oidc_login.ts";

const CLIENT_ID = "sherlock-cli";

interface Setup extends AsyncDisposable {
  as: AuthServer;
  home: BrokerHome;
}

async function setup(options: AuthServerOptions = {}): Promise<Setup> {
  const as = await startAuthServer({
    accessTokenTtlSeconds: 60,
    requireResource: false,
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
    ...options,
  });
  const home = await createBrokerHome();
  Deno.mkdirSync(join(home.configHome, "sherlock"), { recursive: true });
  Deno.writeTextFileSync(
    join(home.configHome, "sherlock", "config.toml"),
    `[login]\nprovider = "oidc"\nissuer = "${as.issuer}"\nclient_id = "${CLIENT_ID}"\nscopes = ["openid", "offline_access", "email"]\n`,
  );
  return {
    as,
    home,
    async [Symbol.asyncDispose]() {
      await home[Symbol.asyncDispose]();
      await as[Symbol.asyncDispose]();
    },
  };
}

Deno.test("sherlock login with OIDC: no local user finds the state, nonce or PKCE challenge in any process's argv", async () => {
  await using s = await setup();
  const { home } = s;
  const spy = join(home.scratch, "argv-spy");
  const log = join(home.scratch, "browser.log");
  const login = await home.sherlock(["login"], {
    env: { ...browserEnv(log), OAUTH_FIXTURE_ARGV_SPY: spy },
  });
  assert.equal(login.code, 0, login.stderr);
  const lines = Deno.readTextFileSync(spy).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  const summary = lines.pop();
  assert.equal(summary.secrets, 3, "state, code_challenge and nonce");
  assert.ok(summary.scanned > 3, "the scan saw the running processes");
  assert.deepEqual(lines, [], "no argv holds them");
  const [visit] = Deno.readTextFileSync(log).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  assert.match(visit.given, /^file:\/\/\/.+\/launch-[0-9a-f]+\.html$/);
  assert.throws(() => Deno.statSync(new URL(visit.given)), "page removed");
  assert.ok(
    !login.stderr.includes(new URL(visit.url).searchParams.get("nonce")!),
  );
});

Deno.test("sherlock login with OIDC: a forged redirect is ignored; the real sign-in ends the login", async () => {
  await using s = await setup();
  const { as, home } = s;
  const pageFile = join(home.scratch, "page");
  const browser = home.writeScript(
    "recording-browser",
    `printf '%s\\n' "$1" > ${JSON.stringify(pageFile)}.tmp && mv ${
      JSON.stringify(pageFile)
    }.tmp ${JSON.stringify(pageFile)}\n`,
  );
  const running = startSherlock(["login"], {
    env: { ...home.env, BROWSER: browser },
    cwd: home.work,
  });
  const page = await waitUntil(() => {
    try {
      return Deno.readTextFileSync(pageFile).trim();
    } catch {
      return undefined;
    }
  }, "the launch page");
  const url = new URL(openedUrl(page)!);
  const callback = url.searchParams.get("redirect_uri")!;
  const forged = await fetch(
    `${callback}?code=attacker-code&state=attacker-state&iss=${as.issuer}`,
  );
  assert.equal(forged.status, 400);
  await forged.body?.cancel();
  await as.approve(url);
  const login = await running.result;
  assert.equal(login.code, 0, login.stderr);
  assert.match(login.stdout, /^logged in: tester@example\.test/);
  assert.match(login.stderr, /ignored 1 request without this flow's state/);
});

Deno.test("sherlock login with OIDC: browser sign-in, whoami, tokens, the local store, logout", async () => {
  await using s = await setup();
  const { as, home } = s;
  const log = join(home.scratch, "browser.log");
  const login = await home.sherlock(["login"], { env: browserEnv(log) });
  assert.equal(login.code, 0, login.stderr);
  assert.match(
    login.stdout,
    /^logged in: tester@example\.test \(subject tester\) at http:\/\/127\.0\.0\.1:\d+/,
  );
  // The browser gets a launch page; the URL itself is printed only as a
  // fallback (or with --no-browser).
  assert.match(login.stderr, /sherlock opens your browser at file:\/\/\//);
  assert.doesNotMatch(login.stderr, /to log in, open: /);
  // The authorization request: PKCE S256, a nonce, a state, the scopes.
  const [visit] = Deno.readTextFileSync(log).trim().split("\n").map((line) =>
    JSON.parse(line)
  );
  const url = new URL(visit.url);
  assert.equal(url.searchParams.get("code_challenge_method"), "S256");
  assert.ok((url.searchParams.get("nonce") ?? "").length >= 32);
  assert.ok(url.searchParams.get("state"));
  assert.equal(url.searchParams.get("scope"), "openid offline_access email");
  assert.match(
    url.searchParams.get("redirect_uri")!,
    /^http:\/\/127\.0\.0\.1:\d+\/callback$/,
  );

  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 0, who.stderr);
  assert.match(who.stdout, /tester@example\.test \(subject tester\)/);
  assert.ok(who.stdout.includes(`at ${as.issuer}`));
  assert.match(who.stdout, /the local store is locked/);
  const json = await home.sherlock(["whoami", "--json"]);
  assert.equal(json.code, 0, json.stderr);
  const shape = WHOAMI_JSON.parse(JSON.parse(json.stdout));
  assert.equal(shape.oidc?.issuer, as.issuer);
  assert.equal(shape.oidc?.subject, "tester");
  assert.equal(shape.oidc?.email, "tester@example.test");

  // A command service is served on the OIDC login alone; a secret service
  // needs the local store, and says how to unlock it.
  home.addAgent();
  const helper = home.addHelperService("cmd");
  const served = await home.runAgent();
  assert.equal(served.result.code, 0, served.result.stderr);
  assert.equal(helper.runs(), 1);
  home.writeService(
    "stored",
    `[service]\nname = "stored"\n[server]\ncommand = "true"\n[token]\nsource = "secret"\nenv = "STORED_TOKEN"\n`,
  );
  // The session starts without it and says why; --strict refuses it (77).
  const without = await home.runAgent();
  assert.equal(without.result.code, 0, without.result.stderr);
  assert.match(
    without.result.stderr,
    /service stored reads the local store, which is locked: run "sherlock login --local"; starting the session without service stored\n$/,
  );
  const refused = await home.runAgent({ runOptions: ["--strict"] });
  assert.equal(refused.result.code, 77, refused.result.stderr);
  assert.match(
    refused.result.stderr,
    /service stored reads the local store, which is locked: run "sherlock login --local"\n$/,
  );
  Deno.removeSync(join(home.servicesDir, "stored.toml"));

  const logout = await home.sherlock(["logout"]);
  assert.equal(logout.code, 0, logout.stderr);
  assert.match(logout.stdout, /the provider revoked the login/);
  assert.equal(as.counts.revocation, 1);
  assert.equal(as.stored().refreshTokens, 0, "the refresh token is revoked");
  const after = await home.sherlock(["whoami"]);
  assert.equal(after.code, 77);

  // Nothing the provider issued is printed or written (JWTs start "eyJ").
  const outputs = [login, who, logout, after].map((r) => r.stdout + r.stderr)
    .join("\n");
  assert.ok(!outputs.includes("eyJ"));
  assert.deepEqual(filesContaining(home.root, ["eyJ"]), []);
});

Deno.test("sherlock login --local still unlocks the store; --device signs in without a browser", async () => {
  await using s = await setup();
  const { as, home } = s;
  const local = await home.sherlock(["login", "--local"], {
    stdin: "correct horse battery staple\n",
  });
  assert.equal(local.code, 0, local.stderr);
  assert.match(local.stdout, /created the store; logged in/);

  const running = startSherlock(["login", "--device"], {
    env: home.env,
    cwd: home.work,
  });
  const [, , userCode] = await waitUntil(
    () =>
      /open (\S+) on any device and enter the code (\S+)/.exec(
        running.stderrSoFar(),
      ) ?? undefined,
    "the device grant's user code",
  );
  assert.equal(as.counts.authorization, 0, "no browser flow");
  await as.approveDevice(userCode);
  const result = await whileAdvancing(home, running.result);
  assert.equal(result.code, 0, result.stderr);
  assert.match(result.stdout, /^logged in: tester@example\.test/);
  const who = await home.sherlock(["whoami"]);
  assert.match(who.stdout, /the local store is unlocked/);
});

Deno.test("over SSH without a display, sherlock login uses the device grant; a restart forgets the login", async () => {
  await using s = await setup();
  const { as, home } = s;
  const env: Record<string, string> = {
    ...home.env,
    SSH_CONNECTION: "10.0.0.1 5000 10.0.0.2 22",
  };
  delete env.BROWSER;
  delete env.DISPLAY;
  delete env.WAYLAND_DISPLAY;
  const running = startSherlock(["login"], { env, cwd: home.work });
  const [, url] = await waitUntil(
    () =>
      /open (\S+) on any device and enter the code (\S+)/.exec(
        running.stderrSoFar(),
      ) ?? undefined,
    "the device grant's user code",
  );
  await as.approveDevice(url);
  const result = await whileAdvancing(home, running.result);
  assert.equal(result.code, 0, result.stderr);

  const stop = await home.sherlock(["broker", "stop"]);
  assert.equal(stop.code, 0, stop.stderr);
  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 77, "memory only: a new broker has no login");
});

Deno.test("OIDC login errors: no device endpoint 78, provider down 69, refused 77-free one line", async (t) => {
  await t.step("no device endpoint", async () => {
    await using s = await setup({ deviceFlow: false });
    const result = await s.home.sherlock(["login", "--device"]);
    assert.equal(result.code, 78, result.stderr);
    assert.match(
      result.stderr,
      /^sherlock: the provider \S+ offers no device authorization .*\n$/,
    );
  });
  await t.step("provider down", async () => {
    await using s = await setup();
    await s.as.down();
    const result = await s.home.sherlock(["login"], { env: browserEnv() });
    assert.equal(result.code, 69, result.stderr);
    assert.match(
      result.stderr,
      /^sherlock: http:\/\/127\.0\.0\.1:\d+ cannot be reached/,
    );
  });
  await t.step("a malformed [login]", async () => {
    await using s = await setup();
    Deno.writeTextFileSync(
      join(s.home.configHome, "sherlock", "config.toml"),
      `[login]\nprovider = "oidc"\nclient_id = "x"\n`,
    );
    const result = await s.home.sherlock(["login"]);
    assert.equal(result.code, 78, result.stderr);
    assert.match(
      result.stderr,
      /login\.issuer: provider = "oidc" needs issuer/,
    );
  });
});

Deno.test("OidcLogin: one refresh for a burst, the rotated refresh token used next, a dead grant asks for a login", async () => {
  await using as = await startAuthServer({
    accessTokenTtlSeconds: 2,
    requireResource: false,
    clients: [{
      client_id: CLIENT_ID,
      redirect_uris: ["http://127.0.0.1/callback"],
    }],
  });
  const config: OidcConfig = {
    issuer: as.issuer,
    clientId: CLIENT_ID,
    scopes: ["openid", "offline_access"],
  };
  // The login's clock: moved past each token's expiry, never waited for.
  let offset = 0;
  const oidc = new OidcLogin({
    clock: offsetClock(() => offset),
  });
  try {
    const { flow, url } = await oidc.start(config);
    const finished = oidc.finish(flow);
    await as.approve(url);
    const status = await finished;
    assert.equal(status.subject, "tester");
    assert.equal(status.refreshToken, true);
    const first = await oidc.accessToken();
    for (let round = 0; round < 2; round++) {
      offset += 2100;
      const before = as.counts.refresh;
      const burst = await Promise.all(
        Array.from({ length: 20 }, () => oidc.accessToken()),
      );
      assert.equal(as.counts.refresh - before, 1, "one refresh for twenty");
      assert.equal(new Set(burst.map((t) => t.token)).size, 1);
      assert.notEqual(burst[0].token, first.token);
    }
    // Two rotations went through: a reused refresh token would have
    // revoked the grant (oidc-provider has no grace period).
    assert.ok(
      as.requests.every((r) =>
        r.grantType !== "refresh_token" || r.status === 200
      ),
    );

    as.revokeAllGrants();
    offset += 2100;
    await assert.rejects(
      oidc.accessToken(),
      (error: Error & { code?: string }) =>
        error.code === "not_logged_in" &&
        /login at .* has expired/.test(error.message),
    );
    assert.equal(oidc.loggedIn, false);
  } finally {
    oidc.close();
  }
});

Deno.test("idle_timeout ends an OIDC login too, and the audit log says which provider", async () => {
  await using s = await setup();
  const { as, home } = s;
  const config = join(home.configHome, "sherlock", "config.toml");
  Deno.writeTextFileSync(
    config,
    Deno.readTextFileSync(config) + "\n[broker]\nidle_timeout = 1\n",
  );
  const running = startSherlock(["login", "--device"], {
    env: home.env,
    cwd: home.work,
  });
  const [, , userCode] = await waitUntil(
    () =>
      /open (\S+) on any device and enter the code (\S+)/.exec(
        running.stderrSoFar(),
      ) ?? undefined,
    "the device grant's user code",
  );
  await as.approveDevice(userCode);
  const result = await whileAdvancing(home, running.result);
  assert.equal(result.code, 0, result.stderr);

  await waitUntil(
    () => auditEntries(home).find((entry) => entry.event === "idle_lock"),
    "the idle lock",
  );
  const who = await home.sherlock(["whoami"]);
  assert.equal(who.code, 77, who.stdout);
  const lock = auditEntries(home).find((entry) => entry.event === "idle_lock");
  assert.equal(lock?.provider, "oidc");
  const log = Deno.readTextFileSync(
    join(home.stateHome, "sherlock", "broker.log"),
  );
  assert.match(log, /idle timeout: login forgotten/);
});
