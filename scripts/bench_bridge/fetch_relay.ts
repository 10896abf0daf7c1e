/**
 * The benchmark's relay on sherlock's own code (`lib/bridge/relay.ts`),
 * with a fixed token instead of the broker: stdin to the server at argv[0].
 *
 * @module
 */

import { runRelay } from "../../lib/bridge/relay.ts";

const [url, token] = Deno.args;
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
