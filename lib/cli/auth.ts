/**
 * `sherlock auth <service>`, `auth status [--json]`, `auth revoke
 * <service>`: the daemon runs the OAuth protocol and keeps the grant; this
 * command only starts the flow, opens the browser, and waits. No token
 * ever reaches this process.
 *
 * @module
 */

import {
  authorizationStatus,
  finishAuthorization,
  loggedInBroker,
  loginAdvice,
  loginState,
  revokeAuthorization,
  startAuthorization,
  whoami,
} from "../broker/client.ts";
import type { LegacyDiscovery } from "../broker/protocol.ts";
import { NAME_PATTERN } from "../config/names.ts";
import { NotLoggedInError, UsageError } from "../errors.ts";
import { commandContext } from "./context.ts";
import { ignoredWarning, openBrowser, writeLaunchPage } from "./browser.ts";
import {
  printColumns,
  printJson,
  printLine,
  printWarning,
  whileWaiting,
} from "./output.ts";

/** Runs the command; returns the exit code. */
export async function authCommand(args: readonly string[]): Promise<number> {
  const [first, ...rest] = args;
  if (first === "status") return await status(rest);
  if (first === "revoke") return await revoke(rest);
  const flags = args.filter((arg) => arg.startsWith("-"));
  const names = args.filter((arg) => !arg.startsWith("-"));
  const unknown = flags.filter((flag) =>
    flag !== "--no-browser" && flag !== "--device"
  );
  if (unknown.length > 0 || names.length !== 1) {
    throw new UsageError(
      unknown.length > 0
        ? `unknown option ${unknown[0]}; see sherlock auth --help`
        : "usage: sherlock auth [--no-browser | --device] <service>",
    );
  }
  const service = serviceName(names[0]);
  const device = flags.includes("--device");
  const socket = await storeSocket();
  const { flow, url, userCode, legacyDiscovery } = await startAuthorization(
    socket,
    service,
    { device },
  );
  if (legacyDiscovery) printWarning(legacyDiscoveryLine(legacyDiscovery));
  // The daemon listens (or polls) already; ask for the result before the
  // browser runs, since a headless one may finish before it exits.
  const finished = finishAuthorization(socket, flow);
  finished.catch(() => {});
  const noBrowser = flags.includes("--no-browser");
  if (userCode !== undefined) {
    printWarning(
      `to authorize ${service}, open ${url} on any device and enter the code ${userCode}`,
    );
  } else if (noBrowser) {
    // The operator's own stderr: the URL goes in no argv (docs/security.md).
    printWarning(`to authorize ${service}, open: ${url}`);
  }
  // The URL is in no argv: the browser gets a 0600 launch page for it.
  using page = userCode === undefined && !noBrowser
    ? writeLaunchPage(url, commandContext().paths.runtimeDir)
    : undefined;
  if (page) {
    printWarning(
      `to authorize ${service}, sherlock opens your browser at ${page.url} (it forwards to the server; --no-browser prints the URL)`,
    );
  }
  const browser = page
    ? openBrowser({
      page,
      url,
      browser: Deno.env.get("BROWSER"),
      otherwise:
        `or run "sherlock auth --device ${service}" where the server offers it`,
    })
    : undefined;
  const result = await whileWaiting(
    device
      ? `your approval of ${service} on the other device (Ctrl-C to stop)`
      : `the authorization of ${service} in the browser (Ctrl-C to stop)`,
    finished,
  );
  await browser?.catch(() => {});
  if (result.ignoredRequests) {
    printWarning(ignoredWarning(result.ignoredRequests));
  }
  printLine(
    `authorized ${service} at ${result.issuer ?? "its server"}${
      result.signedInAs ? ` as ${result.signedInAs}` : ""
    }${
      result.scopes.length > 0 ? ` (scopes: ${result.scopes.join(" ")})` : ""
    }${
      result.reRegisteredFrom
        ? `; re-registered: its authorization server was ${result.reRegisteredFrom}`
        : ""
    }`,
  );
  return 0;
}

async function status(args: readonly string[]): Promise<number> {
  const json = args.includes("--json");
  if (args.some((arg) => arg !== "--json")) {
    throw new UsageError("usage: sherlock auth status [--json]");
  }
  const { services } = await authorizationStatus(await brokerSocket());
  if (json) {
    printJson({ services });
    return 0;
  }
  if (services.length === 0) {
    printLine('no service has [token] source = "oauth"');
    return 0;
  }
  const rows = [[
    "SERVICE",
    "AUTHORIZED",
    "ISSUER",
    "SCOPES",
    "NEEDS",
    "EXPIRES",
    "REFRESH",
  ]];
  for (const entry of services) {
    rows.push([
      entry.service,
      entry.clientCredentials
        ? entry.authorized
          ? "client"
          : "no (its client secret/key is not stored)"
        : entry.ema
        ? "EMA"
        : !entry.authorized
        ? `no (run "sherlock auth ${entry.service}")`
        : entry.scopesNeeded.length > 0
        ? `more scope (run "sherlock auth ${entry.service}")`
        : "yes",
      entry.issuer ?? "-",
      entry.scopes.join(" ") || "-",
      entry.scopesNeeded.join(" ") || "-",
      entry.accessTokenExpiresAt ?? "-",
      entry.refreshToken ? "yes" : "no",
    ]);
  }
  printColumns(rows, "header");
  return 0;
}

async function revoke(args: readonly string[]): Promise<number> {
  if (args.length !== 1) {
    throw new UsageError("usage: sherlock auth revoke <service>");
  }
  const service = serviceName(args[0]);
  const result = await revokeAuthorization(await storeSocket(), service);
  printLine(
    !result.forgotten
      ? `${service} had no grant`
      : result.revokedAtServer
      ? `revoked ${service}'s grant at its server and forgot it`
      : `forgot ${service}'s grant (its server did not take a revocation)`,
  );
  return 0;
}

/** The line that says `sherlock auth` used the 2025-03-26 discovery. */
function legacyDiscoveryLine(legacy: LegacyDiscovery): string {
  return legacy.via === "server_metadata"
    ? `the server speaks the 2025-03-26 authorization (no protected-resource metadata): using ${legacy.issuer}'s metadata`
    : `the server speaks the 2025-03-26 authorization (no protected-resource metadata, no authorization server metadata): using the default endpoints of ${legacy.issuer}`;
}

function serviceName(name: string): string {
  if (!NAME_PATTERN.test(name)) {
    throw new UsageError(
      "the argument is not a service name (lowercase letters, digits, '-' and '_')",
    );
  }
  return name;
}

/** The running broker's socket: every auth command needs a login. */
async function brokerSocket(): Promise<string> {
  const socket = commandContext().paths.socket;
  await loggedInBroker(socket);
  return socket;
}

/**
 * {@linkcode brokerSocket}, and the local store open: a grant is kept
 * there. An SSO login alone leaves it locked, and then the advice is the
 * one every command gives for that state (`sherlock login --local`).
 */
async function storeSocket(): Promise<string> {
  const socket = await brokerSocket();
  const advice = loginAdvice(loginState(await whoami(socket)), "store");
  if (advice !== undefined) {
    throw new NotLoggedInError(
      `sherlock auth keeps the grant in the local store, which is locked: ${advice}`,
    );
  }
  return socket;
}
