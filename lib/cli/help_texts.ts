/**
 * The long help of every command: what `sherlock <command> --help`,
 * `sherlock help <command>` and the generated command reference
 * (docs/manual/commands.md) print. Loaded only for those, never by the
 * launch path: the command table (commands.ts) holds only names,
 * summaries and the grammar.
 *
 * @module
 */

import type { CommandName } from "./commands.ts";

/** Each command's help text, which starts with its usage lines. */
export const HELP_TEXTS: Readonly<Record<CommandName, string>> = {
  run: `Usage: sherlock run [options] <agent> [args…]
       sherlock [options] <agent> [args…]

Starts the agent with a per-session MCP config for its services, and
exits with the agent's exit code. A session gets every service in
services.d/, unless --service, --no-service, its profile's [services]
include or exclude, a service's [service] agents or config.toml's
[services] default = "none" say otherwise (--dry-run shows why each
service is out). A service that cannot
be part of the session (malformed, no token, its helper failed, no OAuth
grant, an agent that cannot use it) is named in one line on stderr and
left out; the session starts with the others.

Options (before the agent's name; everything after it goes to the agent):
  --dry-run      show the argv, the environment changes and the rendered
                 config (tokens redacted) without fetching tokens or
                 starting anything
  --strict       stop instead, with the failure's exit code (also
                 config.toml's [run] strict = true)
  --service NAME     only this service (repeatable: only these)
  --no-service NAME  every service but this one (repeatable)
  -v, --verbose  say on stderr, before the agent starts, which services
                 the session has and how each token reaches its server,
                 and have each bridge say which MCP revision its server
                 speaks (also SHERLOCK_VERBOSE=1)
  -h, --help     show this help

When the agent's first argument is one of its profile's [argv] no_session
(--help, --version, …), the agent starts with no MCP config and no broker.

Examples:
  sherlock run claude -p "summarize the open issues"
  sherlock --dry-run --service github codex`,
  demo: `Usage: sherlock demo

Does sherlock's main job end to end with nothing installed and nothing of
yours touched, printing each step as it happens: in a throwaway home (HOME
and every XDG folder; your config, store, broker and runtime folder are
left alone) it writes a stand-in agent and a small MCP server (both this
sherlock: "sherlock demo agent" and "sherlock demo server", used by the
demo only), creates a store with a made-up passphrase (never shown),
stores a made-up token for the server, and runs the agent with
"sherlock run": the broker gives the token to the shim, the shim starts
the server with it, and the agent lists and calls the server's tool,
whose answer shows the token's length and a SHA-256 prefix (never the
token). Then it checks that the session's rendered config is gone, stops
the demo's broker and removes the throwaway home.

Exit code: the agent's (0 when the demo passed), or the failed step's,
with its one line on stderr (73: no throwaway home can be made in $TMPDIR).
It is also the smoke test of a freshly installed binary.

Example:
  sherlock demo`,
  agents: `Usage: sherlock agents [--json]
       sherlock agents show [--builtin] <name>
       sherlock agents override <name>

Lists the agent profiles: the built-ins and the files in
$XDG_CONFIG_HOME/sherlock/agents.d/ (which shadow a built-in of the same
name entirely), whether each agent's executable is on PATH, and the files
that are malformed, each in its row with its first problem (every problem
on stderr; the exit code is then 78). --json prints the same as JSON
(docs/json.md).

"show" prints one profile as sherlock resolved it, every default filled in;
--builtin shows the built-in even while a file in agents.d/ shadows it.

"override" writes a built-in's text, with a comment on each key, to
agents.d/<name>.toml for you to edit, and prints the path. It never
replaces a file that has something in it.

Examples:
  sherlock agents
  sherlock agents override claude`,
  services: `Usage: sherlock services [--json]
       sherlock services show <name>
       sherlock services test [--agent NAME] [--timeout SECONDS] <name>

Lists the services of $XDG_CONFIG_HOME/sherlock/services.d/: stdio or
remote, the token's source and delivery (for an agent whose config is a
session file, like Claude Code), whether the server's command is on PATH
or its URL's host resolves, and whether its token is available (secret
stored, helper present, OAuth grant held; the broker is asked, never
started). Malformed files are listed on stderr, and the exit code is 78.
--json prints the same as JSON (docs/json.md).

"show" prints one service as sherlock resolved it, every default filled
in, and the file it came from.

"test" starts the service exactly as the agent's session would (default
agent: claude, or the first of the service's [service] agents when that
list leaves claude out): the same rendering, the real token through the same
delivery (shim or bridge included), then speaks MCP to it with the
official SDK client (initialize, tools/list; each step may take
--timeout seconds, default 20) and prints the server's name and version,
its tools and the time each step took. On failure it prints the server's
stderr tail and one line saying what to do. Exit 0 only when tools/list
answered; 69 when the server did not, 77 when the token needs a login,
78 when the service or the agent's profile is invalid.

Example:
  sherlock services test github`,
  import: `Usage: sherlock import [--dry-run] [--project] [--from PATH]…

Reads the MCP servers the agents already have — Claude Code (~/.claude.json,
its user and project scopes), Copilot CLI (~/.copilot/mcp-config.json),
Codex (~/.codex/config.toml [mcp_servers]), Gemini (~/.gemini/settings.json)
— and every file given with --from in one of the formats sherlock renders,
and writes one services.d file per server, saying which file each came
from. The current folder's project files (./.mcp.json,
./.gemini/settings.json) come with a repository, and their servers would
become services of every agent in every folder: they are read only with
--project (or named with --from). A value that looks like a credential (an env value or header named
*TOKEN*, *KEY*, *SECRET*, *PASSWORD*, Authorization, or a value starting
with a known token prefix such as ghp_, github_pat_, sk-, xox) goes into
the encrypted store (log in first) with [token] source = "secret", never
into the file. An existing service of the same name is never overwritten,
and the agents' own files are never modified: the command ends by listing
which of them still hold plaintext credentials, and where (never the value).

Options:
  --dry-run    show what would be written, every env and header value
               redacted; writes and stores nothing
  --project    also read the current folder's ./.mcp.json and
               ./.gemini/settings.json (only in a repository you trust)
  --from PATH  also read PATH (JSON with "mcpServers" or opencode's "mcp",
               a servers map, or TOML with [mcp_servers]); repeatable

Example:
  sherlock import --dry-run && sherlock import`,
  // The 8 is protocol.ts's MIN_PASSPHRASE_LENGTH (a test keeps them equal).
  login: `Usage: sherlock login [--passphrase-file PATH] [--remember]
       sherlock login --forget
       sherlock login --change-passphrase
       sherlock login [--device | --no-browser]      ([login] provider = "oidc")
       sherlock login --subject-token-file PATH | --subject-token-env VAR
                      [--subject-token-type TYPE]    ([login] provider = "oidc")
       sherlock login --id-token-file PATH | --id-token-env VAR
                                                     ([login] provider = "oidc")
       sherlock login --local [--passphrase-file PATH] [--remember | --forget | --change-passphrase]

Unlocks the local secret store in the broker, which then serves tokens
until "sherlock logout", the broker stops, or the idle timeout in
config.toml ([broker] idle_timeout, seconds) locks it again. The first
login creates the store (asking for the passphrase twice; at least
8 characters).

The passphrase is read from the terminal without echo (three tries);
with no terminal, from the first line of stdin, or of PATH with
--passphrase-file (e.g. --passphrase-file /dev/fd/3).

--remember, after the login, keeps a key that unlocks the store (not the
passphrase) in the OS keyring: Secret Service on Linux, the Keychain on
macOS, Credential Manager on Windows. A broker that starts again, or is
locked by the idle timeout, then unlocks the store with it, no prompt,
while that keyring is unlocked; where it is locked or absent (SSH, a
server, CI) the broker gives up within 1.5 s and asks for a login as
before. It never falls back to a plaintext copy. --forget removes the
item (and the store's slot for it); logout locks the store until the
next login. --change-passphrase asks for the current passphrase, then
the new one twice (without a terminal: two lines on stdin); a
remembered key stays valid.

With [login] provider = "oidc" in config.toml, login signs in at the
OpenID provider instead: the browser ($BROWSER, a command line, else
the platform's opener; it gets a private launch page, the URL is printed
only with --no-browser or when no browser starts) with PKCE and a loopback
redirect, or the device grant (--device, or on its own over SSH or
without a display): open the printed URL on any device and enter the
printed code. The broker keeps the provider's tokens in memory only: a
broker restart, the idle timeout or logout asks for a new login.
--local unlocks the local store instead, which "secret" and "oauth"
services still need.

On a CI runner, --subject-token-file PATH (or --subject-token-env VAR)
exchanges the workload identity token the CI platform gave the job for
the operator's login at the provider (RFC 8693 token exchange): no
terminal, browser or passphrase. TYPE is id_token (the default), jwt or
access_token. The token is read once, sent to the provider, not kept.
Exit codes: 69 provider unreachable, 77 token refused or login expired,
78 misconfiguration (no [login] provider = "oidc", no token at PATH or
in VAR, the client may not exchange tokens).

--id-token-file PATH (or --id-token-env VAR) hands the broker an ID token
the provider issued to [login] client_id through another SSO client; it
is held as the login (no exchange, no access token) until it expires,
for Enterprise-Managed Authorization (docs/manual/login_sso.md).

Examples:
  sherlock login
  sherlock login --passphrase-file /dev/fd/3 3<passphrase.txt`,
  logout: `Usage: sherlock logout

Locks the store in the broker and drops every cached token. An OIDC
login is forgotten too, its refresh token revoked at the provider
(RFC 7009) when the provider offers revocation.

Example:
  sherlock logout`,
  whoami: `Usage: sherlock whoami [--verbose | --json]

Who is logged in to the broker, through which provider, since when. For
an OIDC login: the issuer, the subject, the e-mail when the ID token has
one, and when the access token is renewed (or the login ends).
--verbose adds whether the provider offers token exchange (RFC 8693),
which "exchange" services use, or the refresh-token fallback. --json
prints it as JSON (docs/json.md). It never starts the broker.
Exit 0 when logged in, 77 when not.

Example:
  sherlock whoami --json`,
  secret: `Usage: sherlock secret set <service>
       sherlock secret rm <service>
       sherlock secret ls [--json]

Manages the secrets of the local store (log in first). "set" reads the
value from the terminal without echo, or from stdin:
  gh auth token | sherlock secret set github
Values never come from the command line and are never printed. "set"
warns when no service in services.d reads the name (it stores anyway);
"rm" of a name with no secret exits 1. None of them starts the broker.
"ls --json" prints the names and dates as JSON (docs/json.md).

Examples:
  gh auth token | sherlock secret set github
  sherlock secret ls`,
  auth: `Usage: sherlock auth [--no-browser | --device] <service>
       sherlock auth status [--json]
       sherlock auth revoke <service>

Authorizes a service with [token] source = "oauth" (log in first): the
broker discovers its authorization server, registers a client if needed,
and listens on 127.0.0.1 for the redirect; $BROWSER when set (a command
line; %s marks the page), else the platform's opener, opens a private
launch page that forwards to the authorization URL, which is in no
process's arguments (--no-browser only prints it on stderr, and so does a
browser that cannot start). --device uses the device
authorization grant (RFC 8628) where the server offers it, for SSH
sessions: open the printed URL on any device and enter the printed code;
the broker polls until you approve. The refresh token goes into the
encrypted store; access tokens stay in the broker's memory, refreshed for
every session. Nothing secret is printed. When a server has refused a
request for want of scope (HTTP 403 insufficient_scope), the next auth asks
for the scopes held plus the ones it named. Ctrl-C ends the authorization
at once; a new auth for the same service replaces one under way.

  status   each OAuth service: authorized or not, issuer, scopes, scopes
           a server asked for that the grant lacks, when the access token
           expires, whether a refresh token is held
  revoke   revokes the grant at the server (RFC 7009, when offered) and
           forgets it

Examples:
  sherlock auth linear
  sherlock auth status`,
  broker: `Usage: sherlock broker <serve|start|stop|status|log>

The broker is a per-user daemon that holds the unlocked secret store and
serves each session's tokens over $XDG_RUNTIME_DIR/sherlock/broker.sock.
"sherlock run" starts it in the background when it is not running.

  serve [--background]  run the broker in the foreground (logs on stderr);
                        --background logs to $XDG_STATE_HOME/sherlock/broker.log
  start                 start it in the background unless it is running
  stop                  stop it (the store locks, cached tokens are dropped)
  status [--json]       is it running, since when, who is logged in
                        (exit 69 when it is not running, or runs another
                        version of sherlock); --json: docs/json.md
  log [-n N]            the last N entries of the audit log (default 20;
                        -n is short for --lines)

Examples:
  sherlock broker status
  sherlock broker log -n 20`,
  doctor: `Usage: sherlock doctor [--json]

One screen of checks, a verdict each (OK, WARN, FAIL, SKIP): sherlock's
version and where it runs from, config.toml, the runtime folder and the
broker's socket (yours alone), the broker (running, its version, logged
in, its idle lock; asked, never started), each profile (valid, its
executable found, its --version, stopped after 3 s), each service
(valid, its command found or its URL's host resolving, its token
available), and what can keep sherlock's servers out of an agent:
Gemini's folder trust and a settings.json with comments, Copilot's
trusted folders, Claude Code's managed MCP policy in /etc/claude-code.
Nothing secret is printed. Exit 0 when no check failed, 1 otherwise.

  --json  the checks as JSON (docs/json.md)

Example:
  sherlock doctor || sherlock doctor --json | jq '.checks[] | select(.verdict == "fail")'`,
  shim: `Usage: sherlock shim --socket PATH --session ID --agent NAME
                     --token-env VAR [--token-format FORMAT] SERVICE -- COMMAND [ARGS…]

Used inside rendered MCP configs, not by hand: fetches SERVICE's token from
the broker at PATH and runs COMMAND with the token in VAR (written as
FORMAT, default "{token}"), its stdio passed through.`,
  credential: `Usage: sherlock credential --socket PATH NAME

Used by an agent's key helper, not by hand: a profile's [api_key_helper]
gives Claude Code the apiKeyHelper setting that runs this. Prints the
credential NAME (a service of that name, else a stored secret) on stdout,
only to a session "sherlock run" registered (its capability in the
environment) and only when NAME is one of that session's credentials.`,
  bridge:
    `Usage: sherlock bridge --socket PATH --session ID --agent NAME --url URL
                      [--transport http|sse] [--header NAME=VALUE]… [--verbose]
                      SERVICE

Used inside rendered MCP configs, not by hand: relays the JSON-RPC messages
of an agent on stdio to the remote MCP server at URL, over Streamable HTTP
("http", the default) or the legacy HTTP+SSE transport ("sse"), with
SERVICE's token from the broker at PATH on every request. A request the
token does not get through is answered with a JSON-RPC error that names
"sherlock auth SERVICE"; the bridge keeps running until stdin closes, then
ends the remote session. Diagnostics go to stderr (--verbose: also which
MCP revision the server speaks); stdout carries only JSON-RPC.`,
  completions: `Usage: sherlock completions <bash|zsh|fish>

Prints a script that completes sherlock's commands and options, the
agents' names (the built-ins and agents.d), the services' names and the
stored secrets' names (never their values; only while the broker runs
and is unlocked: completion never starts it nor asks for a passphrase).
The script asks sherlock for the names at each completion, so a new
profile or service completes at once.

  bash   in ~/.bashrc:  eval "$(sherlock completions bash)"
  zsh    in ~/.zshrc, after compinit:  eval "$(sherlock completions zsh)"
  fish   sherlock completions fish > ~/.config/fish/completions/sherlock.fish

Example:
  echo 'eval "$(sherlock completions bash)"' >> ~/.bashrc`,
  help: `Usage: sherlock help [command]

Without a command, lists sherlock's commands and exit codes (the same as
sherlock --help); with one, shows that command's help (the same as
sherlock <command> --help).

Example:
  sherlock help run`,
  version: `Usage: sherlock version

Prints sherlock's version (the same as sherlock --version or -V).

Example:
  sherlock version`,
};
