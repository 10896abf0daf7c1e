/**
 * The internal commands' shared argv parser (lib/cli/internal_arguments.ts),
 * through `sherlock credential`'s, whose command line a rendered Claude
 * `apiKeyHelper` holds; the shim's and the bridge's have their own tests.
 */

import assert from "node:assert/strict";
import { parseCredentialArguments } from "../../lib/cli/credential.ts";
import { parseInternalArguments } from "../../lib/cli/internal_arguments.ts";
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
      /^credential needs exactly one credential name; see sherlock credential --help$/,
    ],
    [
      ["--socket", "/s", "a", "b"],
      /^credential needs exactly one credential name/,
    ],
    [["a", "--socket"], /^credential: --socket needs a value$/],
    [["--token", "x", "a"], /^credential: unknown option --token$/],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseCredentialArguments(args),
      (error) => error instanceof UsageError && message.test(error.message),
      args.join(" "),
    );
  }
});

Deno.test("parseInternalArguments: a repeatable option keeps every value in order; a single one keeps the last", () => {
  const parsed = parseInternalArguments(
    ["--h", "a=1", "--s", "x", "svc", "--h", "b=2", "--s", "y"],
    {
      command: "bridge",
      options: ["--s"],
      repeatable: ["--h"],
      positional: "service name",
    },
  );
  assert.deepEqual(parsed.repeated.get("--h"), ["a=1", "b=2"]);
  assert.equal(parsed.required("--s"), "y");
  assert.equal(parsed.name, "svc");
});
