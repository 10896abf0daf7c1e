/**
 * The internal commands' argv (read by the command table's parser),
 * through `sherlock credential`'s, whose command line a rendered Claude
 * `apiKeyHelper` holds; the shim's and the bridge's have their own tests.
 */

import assert from "node:assert/strict";
import { parseCredentialArguments } from "../../lib/cli/credential.ts";
import { UsageError } from "../../lib/errors.ts";

Deno.test("parseCredentialArguments: the socket and the one name, in any order", () => {
  const expected = { socket: "/run/sher lock/broker.sock", name: "anthropic" };
  assert.deepEqual(
    parseCredentialArguments(["--socket", expected.socket, "anthropic"]),
    expected,
  );
  assert.deepEqual(
    parseCredentialArguments(["anthropic", "--socket", expected.socket]),
    expected,
  );
});

Deno.test("parseCredentialArguments: usage errors name the command and what is wrong", () => {
  const cases: [string[], RegExp][] = [
    [["anthropic"], /^credential needs --socket$/],
    [
      ["--socket", "/s"],
      /^credential needs <NAME>; usage: sherlock credential \[--socket PATH\] <NAME>$/,
    ],
    [
      ["--socket", "/s", "a", "b"],
      /^credential takes at most 1 argument, got 2/,
    ],
    [["a", "--socket"], /^--socket needs a value \(--socket PATH\)/],
    [["--token", "x", "a"], /^unknown option --token for credential/],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseCredentialArguments(args),
      (error) => error instanceof UsageError && message.test(error.message),
      args.join(" "),
    );
  }
});
