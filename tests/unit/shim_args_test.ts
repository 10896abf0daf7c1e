/** The token shim's command line (lib/cli/shim.ts parseShimArguments). */

import assert from "node:assert/strict";
import { parseShimArguments } from "../../lib/cli/shim.ts";
import { UsageError } from "../../lib/errors.ts";

const OPTIONS = [
  "--socket",
  "/run/user/1000/sherlock/broker.sock",
  "--session",
  "0123456789ab",
  "--agent",
  "claude",
  "--token-env",
  "GITHUB_TOKEN",
];

Deno.test("parseShimArguments: every option, the service, the server's argv", () => {
  assert.deepEqual(
    parseShimArguments([
      ...OPTIONS,
      "--token-format",
      "Bearer {token}",
      "github",
      "--",
      "github-mcp-server",
      "stdio",
    ]),
    {
      socket: "/run/user/1000/sherlock/broker.sock",
      session: "0123456789ab",
      agent: "claude",
      tokenEnv: "GITHUB_TOKEN",
      tokenFormat: "Bearer {token}",
      service: "github",
      command: ["github-mcp-server", "stdio"],
    },
  );
});

Deno.test("parseShimArguments: the format defaults to the bare token; options in any order", () => {
  const parsed = parseShimArguments([
    "github",
    "--token-env",
    "T",
    "--agent",
    "a",
    "--session",
    "s",
    "--socket",
    "/s.sock",
    "--",
    "srv",
  ]);
  assert.equal(parsed.tokenFormat, "{token}");
  assert.equal(parsed.service, "github");
  assert.equal(parsed.socket, "/s.sock");
});

Deno.test("parseShimArguments: everything after the first -- is the server's, verbatim", () => {
  const parsed = parseShimArguments([
    ...OPTIONS,
    "github",
    "--",
    "srv",
    "--socket",
    "x",
    "--",
    "-h",
    "",
  ]);
  assert.deepEqual(parsed.command, ["srv", "--socket", "x", "--", "-h", ""]);
});

Deno.test("parseShimArguments: an option's value may look like an option", () => {
  const parsed = parseShimArguments([
    ...OPTIONS,
    "--token-format",
    "-{token}-",
    "github",
    "--",
    "srv",
  ]);
  assert.equal(parsed.tokenFormat, "-{token}-");
});

Deno.test("parseShimArguments: usage errors", () => {
  const cases: [string[], string][] = [
    [[...OPTIONS, "github"], "shim needs -- followed by the server's command"],
    [
      [...OPTIONS, "github", "--"],
      "shim needs -- followed by the server's command",
    ],
    [[...OPTIONS, "--", "srv"], "shim needs <SERVICE>"],
    [
      [...OPTIONS, "a", "b", "--", "srv"],
      "shim takes at most 1 argument, got 2",
    ],
    [
      [...OPTIONS, "--verbose", "a", "--", "srv"],
      "unknown option --verbose for shim",
    ],
    [
      [...OPTIONS, "a", "--token-format", "--", "srv"],
      "--token-format needs a value",
    ],
    [[...OPTIONS.slice(2), "a", "--", "srv"], "shim needs --socket"],
    [[...OPTIONS.slice(0, 6), "a", "--", "srv"], "shim needs --token-env"],
    [
      [...OPTIONS, "--token-format", "Bearer", "a", "--", "srv"],
      "shim: --token-format must contain {token}",
    ],
  ];
  for (const [args, message] of cases) {
    assert.throws(
      () => parseShimArguments(args),
      (error) => {
        assert.ok(error instanceof UsageError, args.join(" "));
        assert.match(error.message, new RegExp(`^${escape(message)}`));
        return true;
      },
    );
  }
});

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}
