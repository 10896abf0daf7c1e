/**
 * Turns zod's issues into the one-line problems operators read, and runs a
 * schema as a {@linkcode Validator}. Imported only together with a schema,
 * never on the launch path's fast lane.
 *
 * @module
 */

import type { z } from "zod";
import type { SchemaProblem, Validation, Validator } from "./config_files.ts";

/**
 * Validates `raw` with `schema` and reports the first issue (with a count of
 * the rest) as a problem whose line is found in `text`.
 */
export function validateWith<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  text: string,
): Validation<z.output<S>> {
  const result = schema.safeParse(raw);
  if (result.success) return { ok: true, value: result.data };
  const issues = result.error.issues;
  const problem = describeIssue(schema, issues[0], text);
  if (issues.length > 1) problem.more = issues.length - 1;
  return { ok: false, problem };
}

/** The problem for one zod issue. */
export function describeIssue(
  schema: z.ZodType,
  issue: z.core.$ZodIssue,
  text: string,
): SchemaProblem {
  let path = issue.path.map(String);
  let reason: string;
  switch (issue.code) {
    case "unrecognized_keys": {
      path = [...path, issue.keys[0]];
      const allowed = allowedKeys(schema, issue.path.map(String));
      reason = allowed
        ? `unknown key (allowed here: ${allowed.join(", ")})`
        : "unknown key";
      break;
    }
    case "invalid_type":
      reason = issue.message.endsWith("received undefined")
        ? `missing; a ${issue.expected} is required`
        : `must be a${/^[aeiou]/.test(issue.expected) ? "n" : ""} ${
          nameOfType(issue.expected)
        }, not ${describeInput(issue.input)}`;
      break;
    case "invalid_value":
      reason = `must be one of ${
        issue.values.map((value) => JSON.stringify(value)).join(", ")
      }`;
      break;
    default:
      reason = issue.message;
  }
  return { line: findKeyLine(text, path), key: path.join("."), reason };
}

function nameOfType(expected: string): string {
  return expected === "record"
    ? "table"
    : expected === "object"
    ? "table"
    : expected;
}

function describeInput(input: unknown): string {
  if (Array.isArray(input)) return "an array";
  if (input === null) return "null";
  if (typeof input === "object") return "a table";
  return `a ${typeof input}`;
}

/** The keys a table at `path` allows, when the schema there is an object. */
export function allowedKeys(
  schema: z.ZodType,
  path: readonly string[],
): string[] | undefined {
  let current: unknown = schema;
  for (const segment of path) {
    const shape = shapeOf(current);
    if (shape === undefined) return undefined;
    current = shape[segment];
  }
  const shape = shapeOf(current);
  return shape ? Object.keys(shape) : undefined;
}

function shapeOf(schema: unknown): Record<string, unknown> | undefined {
  let current = schema as {
    shape?: Record<string, unknown>;
    unwrap?: () => unknown;
  } | undefined;
  while (current && current.shape === undefined && current.unwrap) {
    current = current.unwrap() as typeof current;
  }
  return current?.shape;
}

/**
 * The 1-based line where the key at `path` is set in a TOML text: tries the
 * deepest `[table]` header that the path names, then shallower ones, and
 * falls back to the line of the first table's header. Best effort: returns
 * undefined when nothing matches (a key that is missing from a missing table).
 */
export function findKeyLine(
  text: string,
  path: readonly string[],
): number | undefined {
  const lines = text.split("\n");
  for (let split = path.length - 1; split >= 1; split--) {
    const table = path.slice(0, split).join(".");
    const line = findInTable(lines, table, path[split]);
    if (line !== undefined) return line;
  }
  if (path.length === 0) return undefined;
  return findHeader(lines, path[0]) ?? findInTable(lines, "", path[0]);
}

const HEADER = /^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$/;

function normalizeTable(name: string): string {
  return name.split(".").map((part) => part.trim().replace(/^["']|["']$/g, ""))
    .join(".");
}

function findHeader(lines: string[], table: string): number | undefined {
  const index = lines.findIndex((line) => {
    const match = HEADER.exec(line);
    return match !== null && normalizeTable(match[1]) === table;
  });
  return index === -1 ? undefined : index + 1;
}

function findInTable(
  lines: string[],
  table: string,
  key: string,
): number | undefined {
  let current = "";
  const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
  const assignment = new RegExp(
    `^\\s*(?:${escaped}|"${escaped}"|'${escaped}')\\s*=`,
  );
  for (let index = 0; index < lines.length; index++) {
    const header = HEADER.exec(lines[index]);
    if (header) {
      current = normalizeTable(header[1]);
      continue;
    }
    if (current === table && assignment.test(lines[index])) return index + 1;
  }
  return undefined;
}

/**
 * Wraps a validator so that the name at `key` (e.g. `agent.name`) must equal
 * the file's basename: the name is how sherlock finds the file again.
 */
export function requireNameMatchesFile<T>(options: {
  validate: Validator<T>;
  basename: string;
  key: readonly [string, string];
  nameOf: (value: T) => string;
}): Validator<T> {
  return (raw, text) => {
    const result = options.validate(raw, text);
    if (!result.ok) return result;
    const name = options.nameOf(result.value);
    if (name === options.basename) return result;
    return {
      ok: false,
      problem: {
        line: findKeyLine(text, options.key),
        key: options.key.join("."),
        reason: `is "${name}" but the file is ${options.basename}.toml; ` +
          "the name must equal the file's basename",
      },
    };
  };
}
