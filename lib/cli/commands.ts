/**
 * sherlock's own commands, in one table: their names (which no agent alias
 * may shadow), summaries and help texts, and where each one's code is.
 * Registering a command is one entry here. The table is read on every
 * start, so it holds only strings: a command's module is imported when the
 * command runs, and `sherlock run` never loads the others.
 *
 * @module
 */

import { importLazily, LAZY_LIBRARY_MODULES } from "../runtime/lazy_import.ts";

/** One command. */
export interface CommandSpec {
  /** The one-line summary shown by `sherlock --help`. */
  summary: string;
  /** What `sherlock <command> --help` and `sherlock help <command>` print. */
  help: string;
  /** The module that implements the command, from the repository's root. */
  module: string;
  /** The name of the function that module exports for the command. */
  entry: string;
  /**
   * Without arguments the command prints its help and exits 2 (usage)
   * instead of running.
   */
  needsArguments?: boolean;
}

/** A command's entry point: its arguments in, the exit code out. */
export type CommandFunction = (args: readonly string[]) => Promise<number>;

/** Every command, by name, in the order `sherlock --help` lists them. */
export const COMMANDS = {
  run: {
    summary: "start an agent with its per-session MCP config",
    help: `Usage: sherlock run [--dry-run] <agent> [args…]
       sherlock [--dry-run] <agent> [args…]

Starts the agent with a per-session MCP config for every service in
services.d/, and exits with the agent's exit code.

Options (before the agent's name; everything after it goes to the agent):
  --dry-run   show the argv, the environment changes and the rendered config
              (tokens redacted) without fetching tokens or starting anything
  -h, --help  show this help`,
    module: "lib/cli/run.ts",
    entry: "runCommand",
  },
  agents: {
    summary: "list the agent profiles, or show one",
    help: `Usage: sherlock agents
       sherlock agents show <name>

Lists the agent profiles: the built-ins and the files in
$XDG_CONFIG_HOME/sherlock/agents.d/ (which shadow a built-in of the same
name), whether each agent's executable is on PATH, and the files that are
malformed (on stderr; the exit code is then 78).

"show" prints one profile as sherlock resolved it, every default filled in.`,
    module: "lib/cli/agents.ts",
    entry: "agentsCommand",
  },
  login: {
    summary: "sign in at the OIDC provider, or unlock the local secret store",
    // The 8 is protocol.ts's MIN_PASSPHRASE_LENGTH (a test keeps them equal).
    help: `Usage: sherlock login [--passphrase-file PATH]
       sherlock login [--device | --no-browser]      ([login] provider = "oidc")
       sherlock login --local [--passphrase-file PATH]

Unlocks the local secret store in the broker, which then serves tokens
until "sherlock logout", the broker stops, or the idle timeout in
config.toml ([broker] idle_timeout, seconds) locks it again. The first
login creates the store (asking for the passphrase twice; at least
8 characters).

The passphrase is read from the terminal without echo; with no terminal,
from the first line of stdin, or of PATH with --passphrase-file
(e.g. --passphrase-file /dev/fd/3).

With [login] provider = "oidc" in config.toml, login signs in at the
OpenID provider instead: the browser ($BROWSER, else the platform's
opener; the URL is always printed on stderr) with PKCE and a loopback
redirect, or the device grant (--device, or on its own over SSH or
without a display): open the printed URL on any device and enter the
printed code. The broker keeps the provider's tokens in memory only: a
broker restart, the idle timeout or logout asks for a new login.
--local unlocks the local store instead, which "secret" and "oauth"
services still need.`,
    module: "lib/cli/login.ts",
    entry: "loginCommand",
  },
  logout: {
    summary: "lock the store and drop cached tokens",
    help: `Usage: sherlock logout

Locks the store in the broker and drops every cached token. An OIDC
login is forgotten too, its refresh token revoked at the provider
(RFC 7009) when the provider offers revocation.`,
    module: "lib/cli/login.ts",
    entry: "logoutCommand",
  },
  whoami: {
    summary: "who is logged in, through which provider, since when",
    help: `Usage: sherlock whoami [--verbose]

Who is logged in to the broker, through which provider, since when. For
an OIDC login: the issuer, the subject, the e-mail when the ID token has
one, and when the access token is renewed (or the login ends).
--verbose adds whether the provider offers token exchange (RFC 8693),
which "exchange" services use, or the refresh-token fallback.
Exit 0 when logged in, 77 when not.`,
    module: "lib/cli/login.ts",
    entry: "whoamiCommand",
  },
  secret: {
    summary: "set, remove or list the secrets of the local store",
    help: `Usage: sherlock secret set <service>
       sherlock secret rm <service>
       sherlock secret ls

Manages the secrets of the local store (log in first). "set" reads the
value from the terminal without echo, or from stdin:
  gh auth token | sherlock secret set github
Values never come from the command line and are never printed.`,
    module: "lib/cli/secret.ts",
    entry: "secretCommand",
    needsArguments: true,
  },
  auth: {
    summary: "authorize an OAuth service once; its status; revoke it",
    help: `Usage: sherlock auth [--no-browser | --device] <service>
       sherlock auth status [--json]
       sherlock auth revoke <service>

Authorizes a service with [token] source = "oauth" (log in first): the
broker discovers its authorization server, registers a client if needed,
and listens on 127.0.0.1 for the redirect; the authorization URL opens in
$BROWSER when set, else the platform's opener, and is always printed on
stderr (--no-browser only prints it). --device uses the device
authorization grant (RFC 8628) where the server offers it, for SSH
sessions: open the printed URL on any device and enter the printed code;
the broker polls until you approve. The refresh token goes into the
encrypted store; access tokens stay in the broker's memory, refreshed for
every session. Nothing secret is printed.

  status   each OAuth service: authorized or not, issuer, scopes, when the
           access token expires, whether a refresh token is held
  revoke   revokes the grant at the server (RFC 7009, when offered) and
           forgets it`,
    module: "lib/cli/auth.ts",
    entry: "authCommand",
    needsArguments: true,
  },
  broker: {
    summary:
      "serve, start, stop or inspect the credential broker; its audit log",
    help: `Usage: sherlock broker <serve|start|stop|status|log>

The broker is a per-user daemon that holds the unlocked secret store and
serves each session's tokens over $XDG_RUNTIME_DIR/sherlock/broker.sock.
"sherlock run" starts it in the background when it is not running.

  serve [--background]  run the broker in the foreground (logs on stderr);
                        --background logs to $XDG_STATE_HOME/sherlock/broker.log
  start                 start it in the background unless it is running
  stop                  stop it (the store locks, cached tokens are dropped)
  status                is it running, since when, who is logged in
                        (exit 69 when it is not running, or runs another
                        version of sherlock)
  log [-n N]            the last N entries of the audit log (default 20)`,
    module: "lib/cli/broker.ts",
    entry: "brokerCommand",
    needsArguments: true,
  },
  shim: {
    summary: "(used inside rendered configs) run an MCP server with its token",
    help: `Usage: sherlock shim --socket PATH --session ID --agent NAME
                     --token-env VAR [--token-format FORMAT] SERVICE -- COMMAND [ARGS…]

Used inside rendered MCP configs, not by hand: fetches SERVICE's token from
the broker at PATH and runs COMMAND with the token in VAR (written as
FORMAT, default "{token}"), its stdio passed through.`,
    module: "lib/cli/shim.ts",
    entry: "shimCommand",
  },
  bridge: {
    summary: "(used inside rendered configs) a remote MCP server on stdio",
    help:
      `Usage: sherlock bridge --socket PATH --session ID --agent NAME --url URL
                      [--transport http|sse] [--header NAME=VALUE]… SERVICE

Used inside rendered MCP configs, not by hand: relays the JSON-RPC messages
of an agent on stdio to the remote MCP server at URL, over Streamable HTTP
("http", the default) or the legacy HTTP+SSE transport ("sse"), with
SERVICE's token from the broker at PATH on every request. A request the
token does not get through is answered with a JSON-RPC error that names
"sherlock auth SERVICE"; the bridge keeps running until stdin closes, then
ends the remote session. Diagnostics go to stderr; stdout carries only
JSON-RPC.`,
    module: "lib/cli/bridge.ts",
    entry: "bridgeCommand",
  },
  help: {
    summary: "show this help, or a command's",
    help: `Usage: sherlock help [command]

Without a command, lists sherlock's commands and exit codes (the same as
sherlock --help); with one, shows that command's help (the same as
sherlock <command> --help).`,
    module: "lib/cli/help.ts",
    entry: "helpCommand",
  },
  version: {
    summary: "print sherlock's version",
    help: `Usage: sherlock version

Prints sherlock's version (the same as sherlock --version or -V).`,
    module: "lib/cli/help.ts",
    entry: "versionCommand",
  },
} as const satisfies Record<string, CommandSpec>;

/** The name of one of sherlock's commands. */
export type CommandName = keyof typeof COMMANDS;

/**
 * Every module sherlock imports lazily, from the repository's root: the
 * commands' and the library's. `scripts/build.ts` compiles each one in.
 */
export const LAZY_MODULES: readonly string[] = [
  ...new Set([
    ...Object.values(COMMANDS).map((spec: CommandSpec) => spec.module),
    ...LAZY_LIBRARY_MODULES,
  ]),
];

/** True when `name` is one of sherlock's commands. */
export function isCommandName(name: string): name is CommandName {
  return Object.hasOwn(COMMANDS, name);
}

/** True for the flags that ask for help: `--help` and `-h`. */
export function isHelpFlag(arg: string | undefined): boolean {
  return arg === "--help" || arg === "-h";
}

/** Imports the command's module and returns its entry point. */
export async function loadCommand(name: CommandName): Promise<CommandFunction> {
  const spec: CommandSpec = COMMANDS[name];
  const module = await importLazily<Record<string, CommandFunction>>(
    new URL(`../../${spec.module}`, import.meta.url),
  );
  return module[spec.entry];
}
