/**
 * A remote MCP server protected by an authorization server of the OAuth
 * fixture: the server fixture, a protected-resource metadata document
 * (RFC 9728) that names the AS, and a check of each bearer at the AS. What
 * the broker OAuth tests each set up before a broker home can reach it.
 *
 * @module
 */

import type { AuthServer } from "../fixtures/oauth/mod.ts";
import {
  type RemoteMcpServer,
  type RemoteMcpServerOptions,
  startRemoteMcpServer,
} from "../fixtures/remote_mcp_server.ts";
import { INITIALIZE } from "./raw_bridge.ts";

/** What the protected-resource metadata says; a test may change it. */
export interface ProtectedResourceMetadata {
  /** The `resource` it names; the server's URL unless set. */
  resource?: string;
  /** The one authorization server it names; the AS's issuer unless set. */
  issuer?: string;
}

/** A running protected server; disposing stops the server and its PRM. */
export interface ProtectedServer extends AsyncDisposable {
  /** The remote MCP server. */
  remote: RemoteMcpServer;
  /** The metadata document's words, read at each request. */
  prm: ProtectedResourceMetadata;
}

/**
 * Starts a remote MCP server whose metadata names `as` and which accepts
 * only `as`'s access tokens for its own URL. `as.issuer` is read at each
 * metadata request (a test may move the issuer); `remote` adds options of
 * the server fixture.
 */
export async function startProtectedServer(options: {
  as: AuthServer;
  remote?: RemoteMcpServerOptions;
  scopesSupported?: string[];
}): Promise<ProtectedServer> {
  const { as } = options;
  const scopesSupported = options.scopesSupported ?? ["mcp:tools"];
  const late: { url?: string } = {};
  const prm: ProtectedResourceMetadata = {};
  const prmServer = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen() {} },
    () =>
      Response.json({
        resource: prm.resource ?? late.url,
        authorization_servers: [prm.issuer ?? as.issuer],
        scopes_supported: scopesSupported,
      }),
  );
  const remote = await startRemoteMcpServer({
    ...options.remote,
    resourceMetadataUrl: `http://127.0.0.1:${prmServer.addr.port}/prm`,
    // Its tokens are for the identifier its metadata publishes.
    verify: (bearer) =>
      as.verifyAccessToken(bearer, { resource: prm.resource ?? late.url! })
        .then(
          () => true,
          () => false,
        ),
  });
  late.url = remote.url;
  return {
    remote,
    prm,
    async [Symbol.asyncDispose]() {
      await remote[Symbol.asyncDispose]();
      await prmServer.shutdown();
    },
  };
}

/** The status of the remote server's answer to an `initialize` with `token`. */
export async function callRemote(url: string, token: string): Promise<number> {
  const response = await fetch(url, {
    method: "POST",
    headers: {
      Authorization: `Bearer ${token}`,
      "Content-Type": "application/json",
      Accept: "application/json, text/event-stream",
    },
    body: JSON.stringify(INITIALIZE),
  });
  await response.body?.cancel();
  return response.status;
}
