/**
 * Turns zod's issues into the one-line problems operators read, and runs a
 * schema as a {@linkcode Validator}. Imported only together with a schema,
 * never on the launch path's fast lane.
 *
 * @module
 */

import type { z } from "zod";
import type { SchemaProblem, Validation, Validator } from "./toml_files.ts";
import { hasControlCharacters } from "./names.ts";
import { closestName } from "./suggestion.ts";

/**
 * Validates `raw` with `schema` and reports every issue, each as a problem
 * whose line is found in `text`: unknown keys first (a misspelt key is
 * usually the cause of the other problems), then the rest in the schema's
 * order, but for a key said to be missing from a table where an unknown
 * key is its likely misspelling (one typo, one problem).
 */
export function validateWith<S extends z.ZodType>(
  schema: S,
  raw: unknown,
  text: string,
): Validation<z.output<S>> {
  // reportInput: the reasons name what was found ("not a number").
  const result = schema.safeParse(raw, { reportInput: true });
  if (result.success) return { ok: true, value: result.data };
  // One issue per unknown key, so that each gets its line and suggestion.
  const issues = result.error.issues.flatMap((issue): z.core.$ZodIssue[] =>
    issue.code === "unrecognized_keys"
      ? issue.keys.map((key) => ({ ...issue, keys: [key] }))
      : [issue]
  );
  const unknown = issues.filter((issue) => issue.code === "unrecognized_keys");
  const others = issues.filter((issue) => issue.code !== "unrecognized_keys")
    .map((issue) => ({ issue, problem: describeIssue(schema, issue, text) }));
  const [first, ...rest] = [
    ...unknown.map((issue) => describeIssue(schema, issue, text)),
    ...others.filter(({ issue, problem }) =>
      !isFollowOn({ schema, issue, problem, unknown })
    ).map(({ problem }) => problem),
  ];
  if (rest.length > 0) first.further = rest;
  return { ok: false, problem: first };
}

/**
 * A key said to be missing from a table where an unknown key is, by its
 * "did you mean", that very key misspelt (`evn` for `env`): the unknown
 * key's problem is the one to report, and fixing it cures the other. A
 * missing key that no unknown key resembles is a problem of its own, and
 * is reported beside the unknown ones, so that one run shows both.
 */
function isFollowOn(
  options: {
    schema: z.ZodType;
    issue: z.core.$ZodIssue;
    problem: SchemaProblem;
    unknown: readonly z.core.$ZodIssueUnrecognizedKeys[];
  },
): boolean {
  const { schema, issue, problem, unknown } = options;
  if (!problem.reason.startsWith("missing")) return false;
  const table = issue.path.slice(0, -1).map(String).join(".");
  const missing = String(issue.path.at(-1));
  return unknown.some((each) =>
    each.path.map(String).join(".") === table &&
    unknownKey(schema, each).near === missing
  );
}

/**
 * The keys allowed where an unknown key stands (when the schema says), and
 * the one it most likely misspells: the "did you mean" of its problem, and
 * what {@linkcode isFollowOn} holds a missing key back for.
 */
function unknownKey(
  schema: z.ZodType,
  issue: z.core.$ZodIssueUnrecognizedKeys,
): { allowed?: string[]; near?: string } {
  const allowed = allowedKeys(schema, issue.path.map(String));
  return {
    allowed,
    near: allowed && closestName(issue.keys[0], allowed),
  };
}

/**
 * The problem for one zod issue. The schema's own messages are kept; zod's
 * generic ones are replaced by a reason in the file's terms (tables, not
 * objects).
 */
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
      const { allowed, near } = unknownKey(schema, issue);
      reason = "unknown key" + (near ? `; did you mean ${near}?` : "") +
        (allowed ? ` (allowed here: ${allowed.join(", ")})` : "");
      break;
    }
    case "invalid_type": {
      const expected = withArticle(nameOfType(issue.expected));
      reason = issue.input === undefined
        ? `missing; ${expected} is required`
        : `must be ${expected}, not ${describeInput(issue.input)}`;
      break;
    }
    case "invalid_value": {
      const values = issue.values.map((value) => JSON.stringify(value))
        .join(", ");
      reason = !/^Invalid (option|input)\b/.test(issue.message)
        ? issue.message
        : (issue as { input?: unknown }).input === undefined
        ? `missing; one of ${values} is required`
        : `must be one of ${values}`;
      break;
    }
    case "invalid_key":
      // A record's key (e.g. a variable name in [env]): say what is wrong
      // with the key, not that "the key is invalid".
      reason = issue.issues[0]?.message ?? issue.message;
      break;
    default:
      reason = issue.message;
  }
  return {
    line: findKeyLine(text, path),
    // A key with a newline in it stays on the problem's one line.
    key: path.map((part) =>
      hasControlCharacters(part) ? JSON.stringify(part) : part
    )
      .join("."),
    reason,
  };
}

function nameOfType(expected: string): string {
  return expected === "record" || expected === "object" ? "table" : expected;
}

function withArticle(noun: string): string {
  return `${/^[aeiou]/.test(noun) ? "an" : "a"} ${noun}`;
}

function describeInput(input: unknown): string {
  if (Array.isArray(input)) return "an array";
  if (input === null) return "null";
  if (input instanceof Date) return "a date";
  if (typeof input === "object") return "a table";
  if (typeof input === "bigint") return "an integer";
  return withArticle(typeof input);
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
  type Wrapper = {
    shape?: Record<string, unknown>;
    unwrap?: () => unknown;
    in?: unknown;
  };
  let current = schema as Wrapper | undefined;
  // Defaults and optionals unwrap; a transform is a pipe whose input is
  // the object the file is checked against.
  while (current && current.shape === undefined) {
    if (current.unwrap) current = current.unwrap() as Wrapper;
    else if (current.in) current = current.in as Wrapper;
    else return undefined;
  }
  return current?.shape;
}

/**
 * The 1-based line where the key at `path` is set in a TOML text: the line
 * that sets exactly that key (under a `[table]` header, as a dotted key, or
 * at the top), else the line of its deepest ancestor that the text names
 * (the table that lacks a missing key). Best effort: returns undefined when
 * nothing on the path appears (a key that is missing from a missing table).
 */
export function findKeyLine(
  text: string,
  path: readonly string[],
): number | undefined {
  const located = locateKeys(text);
  for (let depth = path.length; depth >= 1; depth--) {
    const wanted = path.slice(0, depth).join(".");
    const found = located.find((entry) => entry.key === wanted);
    if (found) return found.line;
  }
  return undefined;
}

/**
 * The 1-based line of the first header or assignment that sets the key at
 * `path` or a key below it (a header `[a.b.c]` for the path `a.b`), or
 * undefined: where a document nested too deep goes deeper than allowed.
 */
export function findLineUnder(
  text: string,
  path: readonly string[],
): number | undefined {
  const wanted = path.join(".");
  return locateKeys(text).find((entry) =>
    entry.key === wanted || entry.key.startsWith(`${wanted}.`)
  )?.line;
}

const KEY_PART = String.raw`(?:[A-Za-z0-9_-]+|"[^"]*"|'[^']*')`;
const DOTTED_KEY = String.raw`${KEY_PART}(?:\s*\.\s*${KEY_PART})*`;
const HEADER = new RegExp(
  String.raw`^\s*\[\[?\s*(${DOTTED_KEY})\s*\]\]?\s*(?:#.*)?$`,
);
const ASSIGNMENT = new RegExp(String.raw`^\s*(${DOTTED_KEY})\s*=`);

/** The dotted key of each header and assignment line, with its line. */
function locateKeys(text: string): { key: string; line: number }[] {
  const located: { key: string; line: number }[] = [];
  let table: string[] = [];
  text.split("\n").forEach((line, index) => {
    const header = HEADER.exec(line);
    if (header) {
      table = keyParts(header[1]);
      located.push({ key: table.join("."), line: index + 1 });
      return;
    }
    const assignment = ASSIGNMENT.exec(line);
    if (assignment) {
      const key = [...table, ...keyParts(assignment[1])].join(".");
      located.push({ key, line: index + 1 });
    }
  });
  return located;
}

function keyParts(dotted: string): string[] {
  return (dotted.match(new RegExp(KEY_PART, "g")) ?? []).map((part) =>
    part.replace(/^(["'])(.*)\1$/, "$2")
  );
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
