/**
 * The benchmark's relay on sherlock's own code (`lib/bridge/relay.ts`),
 * with a fixed token instead of the broker: stdin to the server at argv[0].
 * The token is read from the file at argv[1] (never in argv, as for the
 * peer, which reads it from a header file).
 *
 * @module
 */

import { runRelay } from "../../lib/bridge/relay.ts";

const [url, tokenFile] = Deno.args;
const token = Deno.readTextFileSync(tokenFile).trim();
const stdout = Deno.stdout.writable.getWriter();
const encoder = new TextEncoder();
await runRelay({
  url,
  service: "bench",
  getToken: () => Promise.resolve({ token, expiresAt: null }),
  input: Deno.stdin.readable,
  write: (line) => stdout.write(encoder.encode(line)),
  warn: (line) => console.error(line),
});
