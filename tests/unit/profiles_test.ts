/**
 * Agent profiles: the built-ins (lib/profiles/builtin.ts) against the schema,
 * the schema's problems for every kind of malformed file, and the loader's
 * resolution order (lib/profiles/loader.ts).
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { parse } from "smol-toml";
import {
  formatProblem,
  InvalidFileError,
} from "../../lib/config/toml_files.ts";
import { UsageError } from "../../lib/errors.ts";
import { sherlockPaths } from "../../lib/config/sherlock_paths.ts";
import { BUILTIN_PROFILES, builtinPath } from "../../lib/profiles/builtin.ts";
import {
  loadAllProfiles,
  loadProfile,
  profileNames,
} from "../../lib/profiles/loader.ts";
import { profileSchema, validateProfile } from "../../lib/profiles/schema.ts";
import { ValidationCache } from "../../lib/config/validation_cache.ts";
import { BUILTIN_PROFILE_NAMES } from "../helpers/profiles.ts";

Deno.test("built-ins: the agents proven against their real CLIs", () => {
  assert.deepEqual(Object.keys(BUILTIN_PROFILES).sort(), BUILTIN_PROFILE_NAMES);
});

for (const [name, text] of Object.entries(BUILTIN_PROFILES)) {
  Deno.test(`built-in ${name}: valid, and spells out every default`, () => {
    const raw = parse(text);
    const result = validateProfile(raw, text);
    assert.ok(
      result.ok,
      result.ok
        ? ""
        : formatProblem({ path: builtinPath(name), ...result.problem }),
    );
    // The launch path uses the raw TOML unvalidated: it must be exactly
    // what the schema would produce.
    assert.deepEqual(profileSchema.parse(raw), structuredClone(raw));
    assert.deepEqual(
      JSON.parse(JSON.stringify(result.value)),
      JSON.parse(JSON.stringify(raw)),
    );
    assert.equal(result.value.agent.name, name);
  });
}

Deno.test("built-in copilot: --additional-mcp-config @<path>, two words", () => {
  const copilot = profileSchema.parse(parse(BUILTIN_PROFILES.copilot));
  assert.equal(copilot.agent.executable, "copilot");
  assert.deepEqual(copilot.mcp, {
    mode: "cli-flag",
    flag: "--additional-mcp-config",
    value: "@{path}",
    joined: false,
    format: "mcp-json",
  });
});

Deno.test("built-in claude: --mcp-config=<path>, joined", () => {
  const claude = profileSchema.parse(parse(BUILTIN_PROFILES.claude));
  assert.equal(claude.agent.executable, "claude");
  assert.deepEqual(claude.mcp, {
    mode: "cli-flag",
    flag: "--mcp-config",
    value: "{path}",
    joined: true,
    format: "mcp-json",
  });
});

Deno.test('built-in aider: mode = "none", no other [mcp] key', () => {
  const aider = profileSchema.parse(parse(BUILTIN_PROFILES.aider));
  assert.equal(aider.agent.executable, "aider");
  assert.deepEqual(aider.mcp, { mode: "none" });
});

Deno.test('schema: mode = "none" drops the delivery defaults and refuses a path', () => {
  const base = { agent: { name: "a", executable: "a" } };
  assert.deepEqual(
    profileSchema.parse({ ...base, mcp: { mode: "none" } }).mcp,
    { mode: "none" },
  );
  const result = validateProfile(
    { ...base, mcp: { mode: "none", path: "~/x.json" } },
    "",
  );
  assert.equal(result.ok, false);
  assert.equal(
    result.ok ? "" : `${result.problem.key}: ${result.problem.reason}`,
    'mcp.path: not used with mode = "none"; remove it',
  );
});

Deno.test("schema: the seed's minimal profile gets every default", () => {
  const text =
    `[agent]\nname = "a"\nexecutable = "a"\n[mcp]\nmode = "env-var"\nvar = "MCP"\n`;
  const result = validateProfile(parse(text), text);
  assert.ok(result.ok);
  assert.deepEqual(result.value, {
    agent: { name: "a", executable: "a", description: "" },
    mcp: {
      mode: "env-var",
      var: "MCP",
      value: "{path}",
      joined: false,
      format: "mcp-json",
    },
    env: {},
    argv: { prefix: [], suffix: [], no_session: [] },
    forbid: { env: [] },
  });
});

/** The one-line problem for `text` as the file `a.toml`. */
function problem(text: string): string {
  const result = validateProfile(parse(text), text);
  assert.ok(!result.ok, "the profile should be invalid");
  return formatProblem({ path: "a.toml", ...result.problem });
}

const AGENT = `[agent]\nname = "a"\nexecutable = "a"\n`;
const MCP = `[mcp]\nmode = "cli-flag"\nflag = "--m"\n`;

Deno.test("schema problems: wrong types say what was expected and found", () => {
  assert.equal(
    problem(`[agent]\nname = "a"\nexecutable = 42\n${MCP}`),
    "a.toml:3: agent.executable: must be a string, not a number",
  );
  assert.equal(
    problem(`mcp = "cli-flag"\n${AGENT}`),
    "a.toml:1: mcp: must be a table, not a string",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[argv]\nprefix = "-v"\n`),
    "a.toml:8: argv.prefix: must be an array, not a string",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[argv]\nsuffix = ["ok", true]\n`),
    "a.toml:8: argv.suffix.1: must be a string, not a boolean",
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "cli-flag"\nflag = "--m"\njoined = "yes"\n`),
    "a.toml:7: mcp.joined: must be a boolean, not a string",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[env]\nFOO = 1\n`),
    "a.toml:8: env.FOO: must be a string, not a number",
  );
  assert.equal(
    problem(`${AGENT}${MCP}env = ["A"]\n`),
    "a.toml:7: mcp.env: unknown key (allowed here: mode, flag, var, path, value, joined, format, merge)",
  );
});

Deno.test("schema problems: unknown keys are errors, with the allowed ones", () => {
  assert.equal(
    problem(`[agent]\nname = "a"\nexecutable = "a"\ncolour = "red"\n${MCP}`),
    "a.toml:4: agent.colour: unknown key (allowed here: name, executable, description)",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[extra]\nx = 1\n`),
    "a.toml:7: extra: unknown key (allowed here: agent, mcp, env, argv, forbid, credentials, api_key_helper, services)",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[forbid]\nenv = []\nvars = []\n`),
    "a.toml:9: forbid.vars: unknown key (allowed here: env)",
  );
});

Deno.test("schema problems: a missing key is reported at its table", () => {
  assert.equal(
    problem(`[agent]\nname = "a"\n${MCP}`),
    "a.toml:1: agent.executable: missing; a string is required",
  );
  assert.equal(problem(AGENT), "a.toml: mcp: missing; a table is required");
  assert.equal(
    problem(`${AGENT}[mcp]\nflag = "--m"\n`),
    'a.toml:4: mcp.mode: missing; one of "cli-flag", "env-var", "config-file", "none" is required',
  );
});

Deno.test("schema problems: each mode needs its own key, and only that", () => {
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "cli-flag"\n`),
    'a.toml:4: mcp.flag: missing; mode = "cli-flag" needs flag',
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "env-var"\n`),
    'a.toml:4: mcp.var: missing; mode = "env-var" needs var',
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "config-file"\n`),
    'a.toml:4: mcp.path: missing; mode = "config-file" needs path',
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "env-var"\nvar = "V"\nflag = "--m"\n`),
    'a.toml:7: mcp.flag: not used with mode = "env-var"; remove it',
  );
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "config-file"\npath = "/x"\njoined = true\n`,
    ),
    'a.toml:7: mcp.joined: only applies to mode = "cli-flag"',
  );
});

Deno.test("schema problems: [env] and [forbid] must leave [mcp] var alone", () => {
  const mcp = `[mcp]\nmode = "env-var"\nvar = "MCP_CONFIG"\n`;
  assert.equal(
    problem(`${AGENT}${mcp}[env]\nMCP_CONFIG = "/elsewhere"\n`),
    "a.toml:8: env.MCP_CONFIG: is [mcp] var, which sherlock sets to the config's path; remove it",
  );
  assert.equal(
    problem(`${AGENT}${mcp}[forbid]\nenv = ["A", "MCP_CONFIG"]\n`),
    "a.toml:8: forbid.env.1: MCP_CONFIG is [mcp] var, which carries the config's path; remove it",
  );
  // In the other modes, the same names are ordinary variables.
  const other =
    `${AGENT}${MCP}[env]\nMCP_CONFIG = "x"\n[forbid]\nenv = ["MCP_CONFIG"]\n`;
  assert.ok(validateProfile(parse(other), other).ok);
});

Deno.test("schema problems: values", () => {
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "pipe"\n`),
    'a.toml:5: mcp.mode: must be one of "cli-flag", "env-var", "config-file", "none"',
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "cli-flag"\nflag = "mcp"\n`),
    "a.toml:6: mcp.flag: must start with '-'",
  );
  assert.equal(
    problem(`${AGENT}[mcp]\nmode = "cli-flag"\nflag = "--m"\nvalue = "@"\n`),
    "a.toml:7: mcp.value: must contain {path}",
  );
  assert.equal(
    problem(
      `${AGENT}[mcp]\nmode = "cli-flag"\nflag = "--m"\nformat = "yaml"\n`,
    ),
    'a.toml:7: mcp.format: must be one of "mcp-json", "servers-map", "opencode", "gemini", "codex-overrides", "continue"',
  );
  assert.equal(
    problem(`[agent]\nname = "A b"\nexecutable = "a"\n${MCP}`),
    "a.toml:2: agent.name: must be lowercase letters, digits, '-' or '_', starting with a letter or digit",
  );
  assert.equal(
    problem(`[agent]\nname = "${"a".repeat(65)}"\nexecutable = "a"\n${MCP}`),
    "a.toml:2: agent.name: must be at most 64 characters",
  );
  assert.equal(
    problem(`[agent]\nname = "a"\nexecutable = ""\n${MCP}`),
    "a.toml:3: agent.executable: must not be empty",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[env]\n"BAD-NAME" = "1"\n`),
    "a.toml:8: env.BAD-NAME: must be an environment variable name (letters, digits, '_')",
  );
  assert.equal(
    problem(`${AGENT}${MCP}[forbid]\nenv = ["OK", "1BAD"]\n`),
    "a.toml:8: forbid.env.1: must be an environment variable name (letters, digits, '_')",
  );
});

Deno.test("schema problems: every problem of the file, unknown keys first, with a suggestion", () => {
  assert.equal(
    problem(
      `[agent]\nname = "a"\nexecutable = 1\ncolour = 2\n[mcp]\nmode = "cli-flag"\n`,
    ),
    [
      "a.toml:4: agent.colour: unknown key (allowed here: name, executable, description)",
      "a.toml:3: agent.executable: must be a string, not a number",
      'a.toml:5: mcp.flag: missing; mode = "cli-flag" needs flag',
    ].join("\n"),
  );
  // The newcomer's typo: the misspelt key is the cause, and the one
  // problem (not also `agent.executable: missing`, its follow-on).
  assert.equal(
    problem(`[agent]\nname = "a"\nexecutabel = "a"\n${MCP}`),
    "a.toml:3: agent.executabel: unknown key; did you mean executable? (allowed here: name, executable, description)",
  );
  // An unknown key that is no missing key's misspelling hides nothing: one
  // run shows both, not the second only once the first is fixed.
  assert.equal(
    problem(`[agent]\nname = "a"\ncolour = "red"\n${MCP}`),
    [
      "a.toml:3: agent.colour: unknown key (allowed here: name, executable, description)",
      "a.toml:1: agent.executable: missing; a string is required",
    ].join("\n"),
  );
});

/** A temp config folder with the given agents.d files. */
async function withAgents(
  files: Record<string, string>,
  test: (
    sources: {
      paths: ReturnType<typeof sherlockPaths>;
      cache: ValidationCache;
    },
  ) => Promise<void>,
): Promise<void> {
  const home = await Deno.makeTempDir();
  try {
    const paths = sherlockPaths({ HOME: home });
    Deno.mkdirSync(paths.agentsDir, { recursive: true });
    for (const [name, text] of Object.entries(files)) {
      Deno.writeTextFileSync(join(paths.agentsDir, name), text);
    }
    await test({ paths, cache: new ValidationCache() });
  } finally {
    await Deno.remove(home, { recursive: true });
  }
}

const OVERRIDE =
  `[agent]\nname = "claude"\nexecutable = "/opt/claude"\n[mcp]\nmode = "env-var"\nvar = "CLAUDE_MCP"\n`;

Deno.test("loader: agents.d shadows a built-in entirely", async () => {
  await withAgents({ "claude.toml": OVERRIDE }, async (sources) => {
    const loaded = await loadProfile("claude", sources);
    assert.equal(loaded.source, "override");
    assert.equal(loaded.path, join(sources.paths.agentsDir, "claude.toml"));
    assert.equal(loaded.shadowsBuiltin, true);
    // Nothing of the built-in (flag, joined) leaks into the override.
    assert.deepEqual(loaded.profile.mcp, {
      mode: "env-var",
      var: "CLAUDE_MCP",
      value: "{path}",
      joined: false,
      format: "mcp-json",
    });
    assert.equal(loaded.profile.agent.description, "");
    const copilot = await loadProfile("copilot", sources);
    assert.equal(copilot.source, "built-in");
    assert.equal(copilot.path, "built-in:copilot.toml");
  });
});

Deno.test("loader: a malformed override is an error, never the built-in instead", async () => {
  await withAgents(
    { "claude.toml": '[agent]\nname = "claude"\n' },
    async (sources) => {
      await assert.rejects(
        loadProfile("claude", sources),
        (error: unknown) =>
          error instanceof InvalidFileError &&
          error.exitCode === 78 &&
          error.message ===
            `${
              join(sources.paths.agentsDir, "claude.toml")
            }:1: agent.executable: missing; a string is required\n${
              join(sources.paths.agentsDir, "claude.toml")
            }: mcp: missing; a table is required`,
      );
    },
  );
});

Deno.test("loader: the name must equal the file's basename", async () => {
  const text = OVERRIDE.replace("claude", "other");
  await withAgents({ "mine.toml": text }, async (sources) => {
    await assert.rejects(
      loadProfile("mine", sources),
      (error: unknown) =>
        error instanceof InvalidFileError &&
        error.message ===
          `${
            join(sources.paths.agentsDir, "mine.toml")
          }:2: agent.name: is "other" but the file is mine.toml; the name must equal the file's basename`,
    );
  });
});

Deno.test("loader: an unknown name is a usage error", async () => {
  await withAgents({}, async (sources) => {
    for (const name of ["nope", "constructor", "toString", "__proto__"]) {
      await assert.rejects(
        loadProfile(name, sources),
        (error: unknown) =>
          error instanceof UsageError &&
          error.message ===
            `no agent profile named "${name}"; run "sherlock agents" to list them`,
      );
    }
  });
});

Deno.test("loader: a name is never a path outside agents.d", async () => {
  await withAgents({}, async (sources) => {
    // A valid profile one folder up, named like the path that reaches it.
    const outside = join(sources.paths.agentsDir, "..", "evil.toml");
    Deno.writeTextFileSync(outside, OVERRIDE.replace('"claude"', '"evil"'));
    for (const name of ["../evil", "", ".", "..", "a/b", ".hidden"]) {
      await assert.rejects(
        loadProfile(name, sources),
        (error: unknown) => error instanceof UsageError,
        JSON.stringify(name),
      );
    }
  });
});

Deno.test("loader: a profile named like an Object property is not a built-in override", async () => {
  const text = OVERRIDE.replaceAll("claude", "constructor");
  await withAgents({ "constructor.toml": text }, async (sources) => {
    const loaded = await loadProfile("constructor", sources);
    assert.equal(loaded.shadowsBuiltin, false);
  });
});

Deno.test("loader: loadAllProfiles lists the good ones and the problems", async () => {
  await withAgents({
    "claude.toml": OVERRIDE,
    "broken.toml": "[agent\n",
    "mine.toml": OVERRIDE.replace("claude", "mine"),
    "wrong.toml": OVERRIDE.replace("claude", "right"),
  }, async (sources) => {
    assert.deepEqual(
      [...profileNames(sources.paths)].sort(),
      [...BUILTIN_PROFILE_NAMES, "broken", "mine", "wrong"].sort(),
    );
    const listing = await loadAllProfiles(sources);
    assert.deepEqual(
      listing.profiles.map((p) => [p.profile.agent.name, p.source]),
      [...BUILTIN_PROFILE_NAMES, "mine"].sort().map((name) => [
        name,
        name === "claude" || name === "mine" ? "override" : "built-in",
      ]),
    );
    assert.deepEqual(
      listing.problems.map((p) => [p.path, p.line, p.key]),
      [
        [join(sources.paths.agentsDir, "broken.toml"), 1, undefined],
        [join(sources.paths.agentsDir, "wrong.toml"), 2, "agent.name"],
      ],
    );
  });
});

Deno.test("loader: a folder named like a profile is a problem, not a crash", async () => {
  await withAgents({}, async (sources) => {
    Deno.mkdirSync(join(sources.paths.agentsDir, "claude.toml"));
    const loaded = await loadProfile("claude", sources).catch((error) => error);
    // Either reported as unusable, or ignored like listTomlFiles ignores it;
    // never an internal error.
    assert.ok(
      loaded instanceof InvalidFileError ||
        (loaded.source === "built-in"),
      String(loaded),
    );
    const listing = await loadAllProfiles(sources);
    assert.ok(listing.profiles.some((p) => p.profile.agent.name === "copilot"));
  });
});

Deno.test("schema problems: [credentials] names a variable once and a service or secret name", () => {
  assert.equal(
    problem(
      `${AGENT}${MCP}[env]\nGH_TOKEN = "x"\n[credentials]\nGH_TOKEN = "github"\n`,
    ),
    "a.toml:8: env.GH_TOKEN: is also in [credentials], which sets it from the broker; remove one",
  );
  assert.match(
    problem(`${AGENT}${MCP}[credentials]\nGH_TOKEN = "GitHub!"\n`),
    /^a\.toml:\d+: credentials\.GH_TOKEN: must be lowercase letters/,
  );
  assert.match(
    problem(`${AGENT}${MCP}[credentials]\n"not-a-var" = "github"\n`),
    /credentials\.not-a-var.*environment variable name/,
  );
  assert.match(
    problem(
      `${AGENT}${MCP}[api_key_helper]\ncredential = "anthropic"\nflag = "-x"\n`,
    ),
    /api_key_helper.*flag/,
  );
  const text =
    `${AGENT}${MCP}[credentials]\nANTHROPIC_API_KEY = "anthropic"\n[api_key_helper]\ncredential = "anthropic"\n`;
  const result = validateProfile(parse(text), text);
  assert.ok(result.ok);
  assert.deepEqual(result.value.credentials, {
    ANTHROPIC_API_KEY: "anthropic",
  });
  assert.deepEqual(result.value.api_key_helper, { credential: "anthropic" });
});
