/**
 * The profile side of the newer deliveries: argv formats in the agent's
 * argv (lib/launch/plan.ts buildArgs), and the schema's rules for `merge`
 * and argv formats (lib/profiles/schema.ts), with the built-in profiles
 * that use them. Also the service schema's rule that a remote server
 * cannot ask for the shim.
 */

import assert from "node:assert/strict";
import { parse } from "smol-toml";
import { formatProblem } from "../../lib/config/toml_files.ts";
import { buildArgs } from "../../lib/launch/plan.ts";
import { BUILTIN_PROFILES } from "../../lib/profiles/builtin.ts";
import {
  type McpDelivery,
  type Profile,
  validateProfile,
} from "../../lib/profiles/schema.ts";
import { validateService } from "../../lib/services/schema.ts";
import { loadedProfile } from "../helpers/profiles.ts";

/** The cli-flag delivery of a codex-like agent. */
const CODEX_LIKE = { flag: "-c", format: "codex-overrides" } as const;

const VALUES = [
  'mcp_servers.github={command="sherlock",args=["shim"],env={}}',
  'mcp_servers.docs={url="https://x.example/mcp",http_headers={}}',
];

Deno.test("buildArgs: an argv format repeats the flag once per value, in order", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loadedProfile(CODEX_LIKE),
      config: { values: VALUES },
      userArgs: ["exec", "hi"],
    }),
    ["-c", VALUES[0], "-c", VALUES[1], "exec", "hi"],
  );
});

Deno.test("buildArgs: joined = true makes each flag=value one word", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loadedProfile({ ...CODEX_LIKE, flag: "--config", joined: true }),
      config: { values: VALUES },
      userArgs: [],
    }),
    [`--config=${VALUES[0]}`, `--config=${VALUES[1]}`],
  );
});

Deno.test("buildArgs: no servers, no flag at all", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loadedProfile(CODEX_LIKE, {
        argv: { prefix: ["exec"], suffix: ["--end"], no_session: [] },
      }),
      config: { values: [] },
      userArgs: ["hi"],
    }),
    ["exec", "hi", "--end"],
  );
});

Deno.test("buildArgs: argv values go between the prefix and the user's args, verbatim", () => {
  const awkward = 'mcp_servers."a b"={command="x y",args=["$HOME","\\n"]}';
  assert.deepEqual(
    buildArgs({
      loaded: loadedProfile(CODEX_LIKE, {
        argv: { prefix: ["--pre"], suffix: ["--post"], no_session: [] },
      }),
      config: { values: [awkward] },
      userArgs: ["-c", "model=o3", "--"],
    }),
    ["--pre", "-c", awkward, "-c", "model=o3", "--", "--post"],
  );
});

Deno.test("buildArgs: the value template applies to a file's path, not to argv values", () => {
  assert.deepEqual(
    buildArgs({
      loaded: loadedProfile({ ...CODEX_LIKE, value: "@{path}" }),
      config: { values: ["v"] },
      userArgs: [],
    }),
    ["-c", "v"],
  );
});

/** The one-line problem for a profile text, as the file `a.toml`. */
function problem(text: string): string {
  const result = validateProfile(parse(text), text);
  assert.ok(!result.ok, "the profile should be invalid");
  return formatProblem({ path: "a.toml", ...result.problem });
}

/** Validates a profile text; throws when it is invalid. */
function valid(text: string): Profile {
  const result = validateProfile(parse(text), text);
  assert.ok(
    result.ok,
    result.ok ? "" : formatProblem({ path: "a.toml", ...result.problem }),
  );
  return result.value;
}

/** The `[mcp]` table of a valid profile that delivers a config. */
function validMcp(text: string): Exclude<McpDelivery, { mode: "none" }> {
  const { mcp } = valid(text);
  if (mcp.mode === "none") throw new Error("expected a delivering [mcp]");
  return mcp;
}

const AGENT = `[agent]\nname = "a"\nexecutable = "a"\n`;

Deno.test("schema: merge = true with config-file and a keyed JSON format is valid", () => {
  for (const format of ["mcp-json", "opencode", "gemini"]) {
    const mcp = validMcp(
      `${AGENT}[mcp]\nmode = "config-file"\npath = "~/.x/settings.json"\nformat = "${format}"\nmerge = true\n`,
    );
    assert.equal(mcp.merge, true);
  }
});

Deno.test("schema: merge only applies to config-file", () => {
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "cli-flag"\nflag = "--m"\nmerge = true\n`),
    'a.toml:7: mcp.merge: only applies to mode = "config-file"',
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "env-var"\nvar = "M"\nmerge = true\n`),
    'a.toml:7: mcp.merge: only applies to mode = "config-file"',
  );
  // merge = false says nothing, whatever the mode.
  valid(`${AGENT}[mcp]\nmode = "cli-flag"\nflag = "--m"\nmerge = false\n`);
});

Deno.test("schema: merge into a servers-map or continue document is refused", () => {
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "config-file"\npath = "/x.json"\nformat = "servers-map"\nmerge = true\n`,
    ),
    'a.toml:8: mcp.merge: needs a format whose servers sit under one key ("mcp-json", "opencode" or "gemini"), not "servers-map"',
  );
  // Continue's servers are a list, which a merge by name cannot join.
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "config-file"\npath = "/x.json"\nformat = "continue"\nmerge = true\n`,
    ),
    'a.toml:8: mcp.merge: needs a format whose servers sit under one key ("mcp-json", "opencode" or "gemini"), not "continue"',
  );
  // Written whole (no merge), servers-map is fine in config-file mode.
  valid(
    `${AGENT}[mcp]\nmode = "config-file"\npath = "/x.json"\nformat = "servers-map"\n`,
  );
});

Deno.test("schema: an argv format needs cli-flag", () => {
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "env-var"\nvar = "M"\nformat = "codex-overrides"\n`,
    ),
    'a.toml:7: mcp.format: "codex-overrides" renders flag values, so it needs mode = "cli-flag"',
  );
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "config-file"\npath = "/x"\nformat = "codex-overrides"\nmerge = true\n`,
    ),
    'a.toml:7: mcp.format: "codex-overrides" renders flag values, so it needs mode = "cli-flag"',
  );
  const mcp = validMcp(
    `${AGENT}[mcp]\nmode = "cli-flag"\nflag = "-c"\nformat = "codex-overrides"\n`,
  );
  assert.equal(mcp.format, "codex-overrides");
});

Deno.test("built-in gemini: merges gemini documents into ~/.gemini/settings.json", () => {
  const mcp = validMcp(BUILTIN_PROFILES.gemini);
  assert.deepEqual(
    { mode: mcp.mode, path: mcp.path, format: mcp.format, merge: mcp.merge },
    {
      mode: "config-file",
      path: "~/.gemini/settings.json",
      format: "gemini",
      merge: true,
    },
  );
});

Deno.test("built-in codex: -c overrides, two words each", () => {
  const mcp = validMcp(BUILTIN_PROFILES.codex);
  assert.deepEqual(
    { mode: mcp.mode, flag: mcp.flag, joined: mcp.joined, format: mcp.format },
    {
      mode: "cli-flag",
      flag: "-c",
      joined: false,
      format: "codex-overrides",
    },
  );
});

Deno.test("service schema: [token] delivery = shim needs a stdio server, bridge a remote one", () => {
  const remote = (delivery: string) =>
    `[service]\nname = "s"\n[server]\nurl = "https://x.example/mcp"\n` +
    `[token]\nsource = "secret"\nheader = "Authorization"\ndelivery = "${delivery}"\n`;
  const shim = validateService(parse(remote("shim")), remote("shim"));
  assert.ok(!shim.ok);
  assert.equal(
    formatProblem({ path: "s.toml", ...shim.problem }),
    "s.toml:8: token.delivery: a remote server gets its token through the bridge, " +
      'not the shim; use "bridge" (the default) or "inline"',
  );
  assert.ok(validateService(parse(remote("inline")), remote("inline")).ok);
  assert.ok(validateService(parse(remote("bridge")), remote("bridge")).ok);
  const stdio = (delivery: string) =>
    `[service]\nname = "s"\n[server]\ncommand = "srv"\n[token]\nsource = "secret"\nenv = "T"\ndelivery = "${delivery}"\n`;
  assert.ok(validateService(parse(stdio("shim")), stdio("shim")).ok);
  const bridge = validateService(parse(stdio("bridge")), stdio("bridge"));
  assert.ok(!bridge.ok);
  assert.equal(
    formatProblem({ path: "s.toml", ...bridge.problem }),
    's.toml:8: token.delivery: only applies to a remote server (url); use "inline" or "shim"',
  );
});
