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
import { closestName } from "../config/suggestion.ts";
import { join } from "../runtime/path.ts";
import { COMMANDS, type ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { ignoredWarning, openBrowser, writeLaunchPage } from "./browser.ts";
import { printer, whileWaiting } from "./output.ts";

/** Runs the command; returns the exit code. */
export async function authCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  if (args.subcommand === "status") {
    return await status(args.has("--json"), context);
  }
  if (args.subcommand === "revoke") {
    return await revoke(args.positionals[0], context);
  }
  const service = serviceName(args.positionals[0]);
  rejectSubcommandTypo(service, context);
  const device = args.has("--device");
  const socket = await storeSocket(context);
  const { flow, url, userCode, legacyDiscovery } = await startAuthorization(
    socket,
    service,
    { device },
  );
  if (legacyDiscovery) out.warning(legacyDiscoveryLine(legacyDiscovery));
  // The daemon listens (or polls) already; ask for the result before the
  // browser runs, since a headless one may finish before it exits.
  const finished = finishAuthorization(socket, flow);
  finished.catch(() => {});
  const noBrowser = args.has("--no-browser");
  if (userCode !== undefined) {
    out.warning(
      `to authorize ${service}, open ${url} on any device and enter the code ${userCode}`,
    );
  } else if (noBrowser) {
    // The operator's own stderr: the URL goes in no argv (docs/security.md).
    out.warning(`to authorize ${service}, open: ${url}`);
  }
  // The URL is in no argv: the browser gets a 0600 launch page for it.
  using page = userCode === undefined && !noBrowser
    ? writeLaunchPage(url, context.paths.runtimeDir)
    : undefined;
  if (page) {
    out.warning(
      `to authorize ${service}, sherlock opens your browser at ${page.url} (it forwards to the server; --no-browser prints the URL)`,
    );
  }
  const browser = page
    ? openBrowser({
      page,
      url,
      browser: context.env.BROWSER,
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
    out.warning(ignoredWarning(result.ignoredRequests));
  }
  out.line(
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

async function status(
  json: boolean,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const { services } = await authorizationStatus(await brokerSocket(context));
  if (json) {
    out.json({ services });
    return 0;
  }
  if (services.length === 0) {
    out.line('no service has [token] source = "oauth"');
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
  out.columns(rows, "header");
  return 0;
}

async function revoke(name: string, context: CommandContext): Promise<number> {
  const out = printer(context);
  const service = serviceName(name);
  const result = await revokeAuthorization(
    await storeSocket(context),
    service,
  );
  out.line(
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

/**
 * `sherlock auth stats`: a word no service in services.d is named and that
 * is a typo of a subcommand is a usage error (2) that names the
 * subcommand, not a missing service (78).
 */
function rejectSubcommandTypo(name: string, context: CommandContext): void {
  const subcommands = Object.keys(COMMANDS.auth.subcommands);
  const typo = closestName(name, subcommands);
  if (typo === undefined) return;
  try {
    Deno.statSync(join(context.paths.servicesDir, `${name}.toml`));
  } catch {
    throw new UsageError(
      `no subcommand or service named ${name} (did you mean ${typo}?); see sherlock auth --help`,
    );
  }
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
async function brokerSocket(context: CommandContext): Promise<string> {
  const socket = context.paths.socket;
  await loggedInBroker(socket);
  return socket;
}

/**
 * {@linkcode brokerSocket}, and the local store open: a grant is kept
 * there. An SSO login alone leaves it locked, and then the advice is the
 * one every command gives for that state (`sherlock login --local`).
 */
async function storeSocket(context: CommandContext): Promise<string> {
  const socket = await brokerSocket(context);
  const advice = loginAdvice(loginState(await whoami(socket)), "store");
  if (advice !== undefined) {
    throw new NotLoggedInError(
      `sherlock auth keeps the grant in the local store, which is locked: ${advice}`,
    );
  }
  return socket;
}
