/**
 * The agent profile schema (zod, strict: unknown keys are errors).
 *
 * Imported lazily: only when an operator's profile changed since it last
 * validated, by `sherlock agents`, and by the tests that check the built-in
 * profiles. The launch path uses the {@linkcode Profile} type only.
 *
 * @module
 */

import { z } from "zod";
import type { Validation } from "../config/toml_files.ts";
import {
  ENV_NAME_PATTERN,
  MAX_NAME_LENGTH,
  NAME_PATTERN,
} from "../config/names.ts";
import { isArgvFormat, MCP_FORMATS, type McpFormat } from "./mcp_formats.ts";
import { validateWith } from "../config/schema_problems.ts";

const name = z.string().regex(
  NAME_PATTERN,
  "must be lowercase letters, digits, '-' or '_', starting with a letter or digit",
).max(MAX_NAME_LENGTH, `must be at most ${MAX_NAME_LENGTH} characters`);
const envName = z.string().regex(
  ENV_NAME_PATTERN,
  "must be an environment variable name (letters, digits, '_')",
);

const mcpSchema = z.strictObject({
  // "none": an agent with no MCP client (Aider); it gets no config and no
  // broker, only [env] and [forbid].
  mode: z.enum(["cli-flag", "env-var", "config-file", "none"]),
  flag: z.string().regex(/^-/, "must start with '-'").optional(),
  var: envName.optional(),
  path: z.string().min(1, "must not be empty").optional(),
  value: z.string().includes("{path}", {
    message: "must contain {path}",
  }).default("{path}"),
  joined: z.boolean().default(false),
  format: z.enum(MCP_FORMATS).default("mcp-json"),
  merge: z.boolean().optional(),
}).superRefine((mcp, context) => {
  const needs = mcp.mode === "none" ? undefined : {
    "cli-flag": "flag",
    "env-var": "var",
    "config-file": "path",
  }[mcp.mode] as "flag" | "var" | "path";
  if (needs !== undefined && mcp[needs] === undefined) {
    context.addIssue({
      code: "custom",
      path: [needs],
      message: `missing; mode = "${mcp.mode}" needs ${needs}`,
    });
  }
  for (const key of ["flag", "var", "path"] as const) {
    if (key !== needs && mcp[key] !== undefined) {
      context.addIssue({
        code: "custom",
        path: [key],
        message: `not used with mode = "${mcp.mode}"; remove it`,
      });
    }
  }
  if (mcp.merge && mcp.mode !== "config-file") {
    context.addIssue({
      code: "custom",
      path: ["merge"],
      message: `only applies to mode = "config-file"`,
    });
  }
  // Merging goes one level down, into the key that holds the servers;
  // servers-map has none, so sherlock's servers would be merged field by
  // field into the operator's entries of the same name; continue's servers
  // are a list, which a merge by name cannot join.
  if (
    mcp.merge && (mcp.format === "servers-map" || mcp.format === "continue")
  ) {
    context.addIssue({
      code: "custom",
      path: ["merge"],
      message:
        `needs a format whose servers sit under one key ("mcp-json", "opencode" or "gemini"), not "${mcp.format}"`,
    });
  }
  if (isArgvFormat(mcp.format) && mcp.mode !== "cli-flag") {
    context.addIssue({
      code: "custom",
      path: ["format"],
      message:
        `"${mcp.format}" renders flag values, so it needs mode = "cli-flag"`,
    });
  }
  if (mcp.joined && mcp.mode !== "cli-flag") {
    context.addIssue({
      code: "custom",
      path: ["joined"],
      message: `only applies to mode = "cli-flag"`,
    });
  }
}).transform((mcp): McpDelivery => {
  if (mcp.mode === "none") return { mode: "none" };
  const { mode, ...rest } = mcp;
  return { mode, ...rest };
});

/**
 * How the rendered config reaches the agent: a flag, a variable or a file,
 * or nothing at all (`mode = "none"`: the other keys are not used).
 */
export type McpDelivery =
  | {
    mode: "cli-flag" | "env-var" | "config-file";
    flag?: string;
    var?: string;
    path?: string;
    value: string;
    joined: boolean;
    format: McpFormat;
    merge?: boolean;
  }
  | { mode: "none" };

/** An agent profile as the schema normalizes it (every default filled in). */
export const profileSchema = z.strictObject({
  agent: z.strictObject({
    name,
    executable: z.string().min(1, "must not be empty"),
    description: z.string().default(""),
  }),
  mcp: mcpSchema,
  env: z.record(envName, z.string()).default({}),
  argv: z.strictObject({
    prefix: z.array(z.string()).default([]),
    suffix: z.array(z.string()).default([]),
    // A first argument that needs no session (`--help`, `--version`): the
    // agent starts without MCP config and without the broker.
    no_session: z.array(z.string().min(1, "must not be empty")).default([]),
  }).default({ prefix: [], suffix: [], no_session: [] }),
  forbid: z.strictObject({
    env: z.array(envName).default([]),
  }).default({ env: [] }),
  // The agent's own credentials (lib/launch/agent_credentials.ts): a
  // variable to a service name, else a stored secret's name, fetched from
  // the broker at launch into the agent's environment only. Optional, not
  // defaulted: the built-ins spell out every default and need none.
  credentials: z.record(envName, name).optional(),
  // Claude Code asks for its key itself: `--settings {"apiKeyHelper": …}`
  // runs `sherlock credential <credential>`, so the key is in no
  // environment at all.
  api_key_helper: z.strictObject({ credential: name }).optional(),
  // Which services its sessions get (lib/launch/service_selection.ts):
  // only those of include, or all but those of exclude.
  services: z.strictObject({
    include: z.array(name).optional(),
    exclude: z.array(name).optional(),
  }).optional(),
}).superRefine((profile, context) => {
  if (
    profile.services?.include !== undefined &&
    profile.services.exclude !== undefined
  ) {
    context.addIssue({
      code: "custom",
      path: ["services", "exclude"],
      message:
        "include already names the whole set; remove exclude (or include)",
    });
  }
  // A credential's variable holds what the broker gave: [env] setting it,
  // or [forbid] removing it, would be two answers for one variable.
  for (const variable of Object.keys(profile.credentials ?? {})) {
    refuseOtherAnswers(profile, context, {
      variable,
      env:
        "is also in [credentials], which sets it from the broker; remove one",
      forbid:
        `${variable} is in [credentials]: its shell copy is removed anyway, the broker's set; remove it here`,
    });
    if (profile.mcp.mode === "env-var" && profile.mcp.var === variable) {
      context.addIssue({
        code: "custom",
        path: ["credentials", variable],
        message: "is [mcp] var, which carries the config's path; remove it",
      });
    }
  }
  // In env-var mode the variable carries the config's path: a profile that
  // also sets or forbids it would start the agent without its config.
  const variable = profile.mcp.mode === "env-var" ? profile.mcp.var : undefined;
  if (variable !== undefined) {
    refuseOtherAnswers(profile, context, {
      variable,
      env: "is [mcp] var, which sherlock sets to the config's path; remove it",
      forbid:
        `${variable} is [mcp] var, which carries the config's path; remove it`,
    });
  }
});

/**
 * Reports `[env]` setting, or `[forbid]` removing, a variable that sherlock
 * itself sets: one message for each table.
 */
function refuseOtherAnswers(
  profile: { env: Record<string, string>; forbid: { env: string[] } },
  context: z.RefinementCtx,
  claim: { variable: string; env: string; forbid: string },
): void {
  if (Object.hasOwn(profile.env, claim.variable)) {
    context.addIssue({
      code: "custom",
      path: ["env", claim.variable],
      message: claim.env,
    });
  }
  const index = profile.forbid.env.indexOf(claim.variable);
  if (index !== -1) {
    context.addIssue({
      code: "custom",
      path: ["forbid", "env", index],
      message: claim.forbid,
    });
  }
}

/** A validated, normalized agent profile. */
export type Profile = z.output<typeof profileSchema>;

/** Validates a parsed profile file. */
export function validateProfile(
  raw: unknown,
  text: string,
): Validation<Profile> {
  return validateWith(profileSchema, raw, text);
}
