/**
 * The benchmark's floor: a Deno process that answers the first line of
 * stdin with a fixed line, and exits when stdin ends.
 *
 * @module
 */

const stdout = Deno.stdout.writable.getWriter();
let answered = false;
for await (const _ of Deno.stdin.readable) {
  if (!answered) {
    answered = true;
    await stdout.write(
      new TextEncoder().encode('{"jsonrpc":"2.0","id":1,"result":{}}\n'),
    );
  }
}
