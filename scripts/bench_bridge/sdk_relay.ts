/**
 * The benchmark's relay on the official SDK's client transport
 * (`StreamableHTTPClientTransport`), the other option the bridge had:
 * stdin lines to `send`, `onmessage` to stdout, the protocol version taken
 * from the initialize answer, the session deleted at the end. The token is
 * read from the file at argv[1].
 *
 * @module
 */

// @ts-types="@modelcontextprotocol/sdk/client/streamableHttp"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

const [url, tokenFile] = Deno.args;
const token = Deno.readTextFileSync(tokenFile).trim();
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const stdout = Deno.stdout.writable.getWriter();
const encoder = new TextEncoder();
transport.onmessage = (message: JSONRPCMessage) => {
  const result = (message as { result?: { protocolVersion?: unknown } })
    .result;
  if (typeof result?.protocolVersion === "string") {
    transport.setProtocolVersion(result.protocolVersion);
  }
  stdout.write(encoder.encode(JSON.stringify(message) + "\n"));
};
transport.onerror = (error: Error) => console.error(error.message);
await transport.start();
let pending = "";
const sends: Promise<void>[] = [];
for await (
  const chunk of Deno.stdin.readable.pipeThrough(new TextDecoderStream())
) {
  pending += chunk;
  for (let at = pending.indexOf("\n"); at !== -1; at = pending.indexOf("\n")) {
    const line = pending.slice(0, at);
    pending = pending.slice(at + 1);
    if (line.trim()) sends.push(transport.send(JSON.parse(line)));
  }
}
await Promise.allSettled(sends);
await transport.terminateSession().catch(() => {});
await transport.close();
