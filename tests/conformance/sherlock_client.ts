/**
 * The client command the official MCP conformance suite
 * (`@modelcontextprotocol/conformance client --command …`) runs: it drives
 * sherlock's real commands against the scenario's server, as an operator
 * would, so the suite judges sherlock itself.
 *
 * `sherlock_client.ts <server-url>` (the suite appends the URL and sets
 * `MCP_CONFORMANCE_SCENARIO`, and for some scenarios
 * `MCP_CONFORMANCE_CONTEXT`):
 *
 * 1. a throwaway HOME with every XDG folder (`tests/helpers/broker_home.ts`);
 * 2. a services.d entry `conformance` for the URL: `[token] source =
 *    "oauth"` for the `auth/*` scenarios (with the `client_id` and a stored
 *    `client_secret` when the scenario's context hands out a pre-registered
 *    client, else a Client ID Metadata Document URL, else dynamic
 *    registration — sherlock's own order); for the others a `command`
 *    source whose helper prints a placeholder token the server ignores, so
 *    that the session goes through `sherlock bridge` as a remote service
 *    with a token does (without a token the agent would speak HTTP itself,
 *    and nothing of sherlock's would be tested);
 * 3. `sherlock login` with a passphrase on stdin;
 * 4. for `auth/*` (but `auth/client-credentials-*`, which configure
 *    `grant = "client_credentials"` with the context's `client_secret` or
 *    `private_key_pem` stored, and need no person, and Enterprise-Managed
 *    Authorization, below):
 *    `sherlock auth conformance`, `$BROWSER` a headless browser
 *    that follows the authorization server's redirects
 *    (`tests/fixtures/oauth/approve_browser.ts`); for Enterprise-Managed
 *    Authorization (the context hands out an IdP's ID token: the
 *    cross-app scenario), what its operator would configure instead:
 *    `[login] provider = "oidc"` at the scenario's IdP,
 *    `sherlock login --local` for the pre-registered client's secret,
 *    `sherlock login --id-token-file` with the ID token, and
 *    `ema_audiences` naming the server's authorization server (read from
 *    its protected-resource metadata, as the operator would look it up);
 * 5. `sherlock run standin`: the stand-in agent (`standin_agent.ts`) reads
 *    the rendered config and speaks MCP to the `sherlock bridge` entry;
 * 6. the broker stopped and the HOME removed.
 *
 * Exits with the session's exit code (0: every MCP request was answered),
 * or 1 when a step before it failed; each step's output goes to stderr,
 * which the suite keeps with its results.
 *
 * @module
 */

import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createBrokerHome } from "../helpers/broker_home.ts";
import { profileToml } from "../helpers/profiles.ts";
import { sh } from "../helpers/shell.ts";
import { REPO_ROOT, sherlockCommand } from "../helpers/sherlock.ts";

/** The service's name in the throwaway HOME. */
export const SERVICE = "conformance";

/** The stand-in agent's profile name. */
export const AGENT = "standin";

/**
 * The Client ID Metadata Document URL the suite's `auth/basic-cimd` server
 * expects (the one its reference client uses); the operator's own would be
 * a URL they host.
 */
export const CLIENT_METADATA_URL =
  "https://conformance-test.local/client-metadata.json";

/** The name the pre-registered client's secret is stored under. */
const CLIENT_SECRET_NAME = "conformance-client";

const STANDIN_AGENT_TS = fileURLToPath(
  new URL("./standin_agent.ts", import.meta.url),
);
const APPROVE_BROWSER_TS = fileURLToPath(
  new URL("../fixtures/oauth/approve_browser.ts", import.meta.url),
);

/** What the suite's `MCP_CONFORMANCE_CONTEXT` may hold. */
interface ScenarioContext {
  client_id?: string;
  client_secret?: string;
  /** `auth/client-credentials-jwt`: the client's PKCS#8 key, ES256. */
  private_key_pem?: string;
  signing_algorithm?: string;
  /** Enterprise-Managed Authorization: the IdP and its ID token. */
  idp_issuer?: string;
  idp_client_id?: string;
  idp_id_token?: string;
}

/** The name the client-credentials scenarios' private key is stored under. */
const CLIENT_KEY_NAME = "conformance-client-key";

/** The scenarios with no person: the client logs in as itself. */
function clientCredentials(scenario: string): boolean {
  return scenario.startsWith("auth/client-credentials-");
}

/** The scenarios of Enterprise-Managed Authorization (cross-app access). */
function enterpriseManaged(context: ScenarioContext): boolean {
  return context.idp_id_token !== undefined;
}

/**
 * The issuer of `url`'s authorization server, from its protected-resource
 * metadata (RFC 9728: path-inserted, then at the root): what an operator
 * writes into `ema_audiences`.
 */
async function authorizationServerOf(url: string): Promise<string> {
  const { origin, pathname } = new URL(url);
  for (
    const candidate of [
      `${origin}/.well-known/oauth-protected-resource${pathname}`,
      `${origin}/.well-known/oauth-protected-resource`,
    ]
  ) {
    const answer = await fetch(candidate);
    if (!answer.ok) {
      await answer.body?.cancel();
      continue;
    }
    const servers = (await answer.json()).authorization_servers;
    if (Array.isArray(servers) && typeof servers[0] === "string") {
      return servers[0];
    }
  }
  throw new Error(`${url} publishes no protected-resource metadata`);
}

function log(line: string): void {
  console.error(`sherlock_client: ${line}`);
}

/** The TOML of the `conformance` service for a scenario. */
export function serviceToml(
  options: {
    url: string;
    scenario: string;
    context: ScenarioContext;
    helper: string;
    /** Enterprise-Managed Authorization: the issuer to allow. */
    emaAudience?: string;
  },
): string {
  const lines = [
    "[service]",
    `name = ${JSON.stringify(SERVICE)}`,
    "",
    "[server]",
    `url = ${JSON.stringify(options.url)}`,
    "",
    "[token]",
  ];
  if (!options.scenario.startsWith("auth/")) {
    lines.push(
      'source = "command"',
      `command = [${JSON.stringify(options.helper)}]`,
      'header = "Authorization"',
    );
  } else {
    lines.push('source = "oauth"');
    if (clientCredentials(options.scenario)) {
      lines.push('grant = "client_credentials"');
    }
    if (options.context.client_id) {
      lines.push(`client_id = ${JSON.stringify(options.context.client_id)}`);
      if (options.context.private_key_pem) {
        lines.push(`client_key = ${JSON.stringify(CLIENT_KEY_NAME)}`);
      } else if (options.context.client_secret) {
        lines.push(`client_secret = ${JSON.stringify(CLIENT_SECRET_NAME)}`);
      }
      if (options.emaAudience) {
        lines.push(
          `ema_audiences = [${JSON.stringify(options.emaAudience)}]`,
        );
      }
    } else {
      lines.push(
        `client_metadata_url = ${JSON.stringify(CLIENT_METADATA_URL)}`,
      );
    }
  }
  return lines.join("\n") + "\n";
}

/** Writes an executable `/bin/sh` script; returns its path. */
function writeExecutable(path: string, lines: string[]): string {
  Deno.writeTextFileSync(path, ["#!/bin/sh", ...lines, ""].join("\n"), {
    mode: 0o755,
  });
  Deno.chmodSync(path, 0o755);
  return path;
}

async function main(args: string[]): Promise<number> {
  const url = args.at(-1);
  const scenario = Deno.env.get("MCP_CONFORMANCE_SCENARIO") ?? "";
  if (!url || !/^https?:\/\//.test(url)) {
    log(
      "usage: sherlock_client.ts <server-url> (MCP_CONFORMANCE_SCENARIO set)",
    );
    return 2;
  }
  const context = JSON.parse(
    Deno.env.get("MCP_CONFORMANCE_CONTEXT") ?? "{}",
  ) as ScenarioContext;
  log(`scenario ${scenario || "(none)"}, server ${url}`);

  await using home = await createBrokerHome();
  // The suite ends a client that outlives its timeout with SIGTERM: stop the
  // broker and remove the HOME then too, so nothing is left running.
  const stop = () => {
    home[Symbol.asyncDispose]().finally(() => Deno.exit(143));
  };
  Deno.addSignalListener("SIGTERM", stop);
  const deno = sh(Deno.execPath());
  // The headless browser: the suite's servers listen on `localhost`, the
  // fixture's own wrapper allows 127.0.0.1 only.
  const browser = writeExecutable(join(home.bin, "conformance-browser"), [
    `exec ${deno} run --quiet --no-prompt --no-config --no-lock ` +
    `--allow-net=127.0.0.1,localhost --allow-env --allow-write --allow-read ` +
    `${sh(APPROVE_BROWSER_TS)} "$@"`,
  ]);
  const helper = writeExecutable(join(home.bin, "placeholder-token"), [
    "echo conformance-placeholder-token",
  ]);
  writeExecutable(join(home.bin, AGENT), [
    `exec ${deno} run --allow-all --quiet --config ${
      sh(join(REPO_ROOT, "deno.json"))
    } ${sh(STANDIN_AGENT_TS)} "$@"`,
  ]);
  home.writeProfile(AGENT, profileToml({ name: AGENT, executable: AGENT }));
  const ema = enterpriseManaged(context);
  if (ema) {
    home.writeConfig(
      [
        "[login]",
        'provider = "oidc"',
        `issuer = ${JSON.stringify(context.idp_issuer)}`,
        `client_id = ${JSON.stringify(context.idp_client_id)}`,
        "",
      ].join("\n"),
    );
  }
  home.writeService(
    SERVICE,
    serviceToml({
      url,
      scenario,
      context,
      helper,
      ...(ema ? { emaAudience: await authorizationServerOf(url) } : {}),
    }),
  );
  const env = {
    BROWSER: browser,
    CONFORMANCE_SHERLOCK: JSON.stringify(sherlockCommand([])),
    // The suite's variables reach the agent as the operator's shell would
    // pass them; nothing in sherlock reads them.
    MCP_CONFORMANCE_SCENARIO: scenario,
  };

  const step = async (
    what: string[],
    stdin?: string,
  ): Promise<number | null> => {
    const result = await home.sherlock(what, { env, stdin });
    log(`sherlock ${what.join(" ")} exited ${result.code}`);
    if (result.stdout) console.error(result.stdout.trimEnd());
    if (result.stderr) console.error(result.stderr.trimEnd());
    return result.code;
  };

  // With the SSO login configured, the store is unlocked with --local.
  const local = ema ? ["login", "--local"] : ["login"];
  if (await step(local, "conformance passphrase\n") !== 0) return 1;
  if (context.client_secret) {
    const stored = await step(
      ["secret", "set", CLIENT_SECRET_NAME],
      `${context.client_secret}\n`,
    );
    if (stored !== 0) return 1;
  }
  if (context.private_key_pem) {
    const stored = await step(
      ["secret", "set", CLIENT_KEY_NAME],
      // One line: a secret may not hold line breaks (README's recipe).
      context.private_key_pem.replace(/\r?\n/g, ""),
    );
    if (stored !== 0) return 1;
  }
  if (ema) {
    // The ID token the IdP issued (the suite plays its SSO client).
    const file = join(home.root, "id-token");
    Deno.writeTextFileSync(file, context.idp_id_token!, { mode: 0o600 });
    if (await step(["login", "--id-token-file", file]) !== 0) return 1;
  }
  // No person, no `sherlock auth`: the broker logs in as the client, or
  // gets its tokens from the SSO login.
  if (
    scenario.startsWith("auth/") && !clientCredentials(scenario) && !ema
  ) {
    if (await step(["auth", SERVICE]) !== 0) return 1;
  }
  const code = await step(["run", AGENT]);
  Deno.removeSignalListener("SIGTERM", stop);
  return code ?? 1;
}

if (import.meta.main) Deno.exit(await main(Deno.args));
