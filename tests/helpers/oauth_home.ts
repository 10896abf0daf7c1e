/**
 * A broker home with a `source = "oauth"` service "remote" for a remote MCP
 * server protected by a real authorization server of the OAuth fixture:
 * what the broker OAuth tests start from before `sherlock auth remote`.
 *
 * ```ts
 * await using s = await createOAuthHome({
 *   authServer: { accessTokenTtlSeconds: 60 },
 * });
 * await s.home.sherlock(["auth", "remote"], { env: browserEnv() });
 * ```
 *
 * @module
 */

import {
  type AuthServer,
  type AuthServerOptions,
  startAuthServer,
} from "../fixtures/oauth/mod.ts";
import type {
  RemoteMcpServer,
  RemoteMcpServerOptions,
} from "../fixtures/remote_mcp_server.ts";
import { type BrokerHome, createBrokerHome } from "./broker_home.ts";
import {
  type ProtectedResourceMetadata,
  startProtectedServer,
} from "./protected_server.ts";

/** The servers and the home; disposing stops all of them, home first. */
export interface OAuthHome extends AsyncDisposable {
  /** The authorization server. */
  as: AuthServer;
  /** The remote MCP server it protects. */
  remote: RemoteMcpServer;
  /** What the server's protected-resource metadata says; a test may change it. */
  prm: ProtectedResourceMetadata;
  /** A logged-in broker home whose service "remote" is that server. */
  home: BrokerHome;
}

/**
 * Starts an AS (`authServer`), a remote MCP server it protects (`remote`,
 * its metadata listing `scopesSupported`), and a logged-in broker home with
 * service "remote": `[token] source = "oauth"` plus the `token` keys.
 */
export async function createOAuthHome(
  options: {
    authServer?: AuthServerOptions;
    token?: Record<string, unknown>;
    remote?: RemoteMcpServerOptions;
    scopesSupported?: string[];
  } = {},
): Promise<OAuthHome> {
  const as = await startAuthServer(options.authServer);
  const server = await startProtectedServer({
    as,
    remote: options.remote,
    scopesSupported: options.scopesSupported,
  });
  const home = await createBrokerHome();
  const extra = Object.entries(options.token ?? {}).map(([key, value]) =>
    `${key} = ${JSON.stringify(value)}\n`
  ).join("");
  home.writeService(
    "remote",
    `[service]\nname = "remote"\n[server]\nurl = "${server.remote.url}"\n[token]\nsource = "oauth"\n${extra}`,
  );
  await home.login();
  return {
    as,
    remote: server.remote,
    prm: server.prm,
    home,
    async [Symbol.asyncDispose]() {
      await home[Symbol.asyncDispose]();
      await server[Symbol.asyncDispose]();
      await as[Symbol.asyncDispose]();
    },
  };
}
