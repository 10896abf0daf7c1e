/**
 * Reading the operator's TOML files (profiles, services, config.toml):
 * parse, validate against a schema (only when the bytes changed, see
 * `validation_cache.ts`), and describe what is wrong as one line naming the
 * file, the line, the key and the reason. Only regular files of at most
 * 1 MiB are read, with a bounded read (docs/security.md).
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";
import { join } from "../runtime/path.ts";
import { ConfigError } from "../errors.ts";
import { describeFsError } from "../private_files.ts";
import { shortenForQuote } from "./names.ts";
import { ValidationCache } from "./validation_cache.ts";

/** What is wrong with one file. */
export interface FileProblem {
  path: string;
  /** The 1-based line, when it could be located. */
  line?: number;
  /** The 1-based column (TOML syntax errors only). */
  column?: number;
  /** The dotted key, e.g. `mcp.flag`. */
  key?: string;
  /** What is wrong, and where it helps, what to do. */
  reason: string;
  /** The file's other problems, each reported on a line of its own. */
  further?: SchemaProblem[];
}

/** A problem found by a schema, before the file's path is known. */
export type SchemaProblem = Omit<FileProblem, "path">;

/** The outcome of a schema validation. */
export type Validation<T> =
  | { ok: true; value: T }
  | { ok: false; problem: SchemaProblem };

/** Validates a parsed TOML document; `text` helps to locate keys. */
export type Validator<T> = (raw: unknown, text: string) => Validation<T>;

/** A file that cannot be used; `problem` says why. */
export class InvalidFileError extends ConfigError {
  readonly problem: FileProblem;

  /** Creates the error; its message is the formatted problem. */
  constructor(problem: FileProblem) {
    super(formatProblem(problem));
    this.name = "InvalidFileError";
    this.problem = problem;
  }
}

/**
 * Formats a problem as `path:line:column: key: reason`, and each further
 * problem of the file the same way on a line of its own. A key longer than
 * `MAX_QUOTED_LENGTH` (names.ts) is quoted by its start and `…`.
 */
export function formatProblem(problem: FileProblem): string {
  return [problem, ...(problem.further ?? [])].map((each) => {
    let where = problem.path;
    if (each.line !== undefined) where += `:${each.line}`;
    if (each.column !== undefined) where += `:${each.column}`;
    const key = each.key ? `${shortenForQuote(each.key)}: ` : "";
    return `${where}: ${key}${each.reason}`;
  }).join("\n");
}

/**
 * The one line (and one more per further problem) every command uses for
 * a profile or service file that is malformed and so left out: `sherlock
 * run`, `services`, `agents` and `doctor` word it alike.
 */
export function skippedMalformed(
  kind: "profile" | "service",
  problem: FileProblem | string,
): string {
  const text = typeof problem === "string" ? problem : formatProblem(problem);
  return `skipped malformed ${kind} ${text}`;
}

/** How to read one file. */
export interface ReadTomlOptions<T> {
  /** `profile`, `service` or `config`: part of the cache key. */
  kind: string;
  /** The file's path, shown in problems. */
  path: string;
  /** The file's bytes. */
  text: string;
  /** Loads the validator only when needed (it imports zod). */
  loadValidator: () => Promise<Validator<T>>;
  /** Where earlier validations are remembered. */
  cache: ValidationCache;
}

/**
 * Returns the normalized content of an operator file, validating it only
 * when these exact bytes have not validated before. Throws
 * {@linkcode InvalidFileError} for a TOML syntax error or a schema problem.
 */
export async function readTomlFile<T>(options: ReadTomlOptions<T>): Promise<T> {
  const key = ValidationCache.key(options.kind, options.path);
  const cached = options.cache.get(key, options.text);
  if (cached !== undefined) return cached as T;

  const raw = await parseTomlText(options.path, options.text);
  // Before anything else walks it: the NUL check and the schema would each
  // need a stack as deep as the document.
  const deep = keyNestedTooDeep(raw);
  if (deep !== undefined) {
    const { findLineUnder } = await importLazily<
      typeof import("./schema_problems.ts")
    >("lib/config/schema_problems.ts");
    throw new InvalidFileError({
      path: options.path,
      line: findLineUnder(options.text, deep),
      key: deep.join("."),
      reason: `tables or arrays nested more than ${MAX_NESTING_DEPTH} ` +
        "levels deep; sherlock's files nest a few at most: remove the nesting",
    });
  }
  const nul = keyHoldingNul(raw);
  if (nul !== undefined) {
    const { findKeyLine } = await importLazily<
      typeof import("./schema_problems.ts")
    >("lib/config/schema_problems.ts");
    throw new InvalidFileError({
      path: options.path,
      line: findKeyLine(options.text, nul),
      key: nul.join("."),
      reason:
        "holds a NUL character (\\u0000), which no program can be given; remove it",
    });
  }
  const validate = await options.loadValidator();
  const result = validate(raw, options.text);
  if (!result.ok) {
    throw new InvalidFileError({ path: options.path, ...result.problem });
  }
  options.cache.set(key, options.text, result.value);
  return result.value;
}

/**
 * A kind of operator file that declares its own name (`agent.name`,
 * `service.name`), which must equal the file's basename: the name is how
 * sherlock finds the file again.
 */
export interface NamedFileKind<T> {
  /** `profile` or `service`: part of the cache key. */
  kind: string;
  /** Where the file declares its name. */
  nameKey: readonly [string, string];
  /** The declared name of a valid file. */
  nameOf: (value: T) => string;
  /** Imports the kind's schema; called only when the bytes changed (zod). */
  loadValidator: () => Promise<Validator<T>>;
}

/** One file of a {@linkcode NamedFileKind}. */
export interface NamedFile {
  /** The file's path, shown in problems. */
  path: string;
  /** The name the file must declare. */
  basename: string;
  /** The file's bytes. */
  text: string;
  /** Where earlier validations are remembered. */
  cache: ValidationCache;
}

/**
 * {@linkcode readTomlFile} for a file of a named kind: its schema and the
 * name check are both imported only when these bytes have not validated
 * before.
 */
export function readNamedTomlFile<T>(
  kind: NamedFileKind<T>,
  file: NamedFile,
): Promise<T> {
  return readTomlFile({
    kind: kind.kind,
    path: file.path,
    text: file.text,
    cache: file.cache,
    loadValidator: async () => {
      const validate = await kind.loadValidator();
      const { requireNameMatchesFile } = await importLazily<
        typeof import("./schema_problems.ts")
      >("lib/config/schema_problems.ts");
      const named = requireNameMatchesFile({
        validate,
        basename: file.basename,
        key: kind.nameKey,
        nameOf: kind.nameOf,
      });
      // An empty file (what a failed `> file` leaves) says so, rather
      // than that each of its tables is missing.
      return (raw, text) =>
        isEmptyTable(raw)
          ? {
            ok: false,
            problem: {
              reason:
                `the file is empty (or only comments): no ${kind.kind} in it`,
            },
          }
          : named(raw, text);
    },
  });
}

function isEmptyTable(value: unknown): boolean {
  return typeof value === "object" && value !== null &&
    Object.keys(value).length === 0;
}

/**
 * The deepest an operator file's tables and arrays may nest. sherlock's own
 * files nest three levels (`[server.env]` holds strings); a header such as
 * `[a.a.a…]` thousands of levels deep is no file of sherlock's, and every
 * walk over it (this module's, zod's) would need a stack that deep.
 */
export const MAX_NESTING_DEPTH = 32;

/** One value of a parsed document, and the key path that leads to it. */
interface Visit {
  value: unknown;
  /** Its key path, linked to its parent's: no copy per level. */
  path: KeyPath | undefined;
  /** How many tables and arrays hold it. */
  depth: number;
}

interface KeyPath {
  key: string;
  parent: KeyPath | undefined;
}

function keysOf(path: KeyPath | undefined): string[] {
  const keys: string[] = [];
  for (let at = path; at !== undefined; at = at.parent) keys.push(at.key);
  return keys.reverse();
}

/**
 * Calls `check` on every value of a parsed document (tables and arrays
 * included), depth first and in the document's order, until it returns a
 * key path. Without recursion: the walk itself never runs out of stack,
 * however deep the document.
 */
function findInDocument(
  document: unknown,
  check: (visit: Visit) => string[] | undefined,
): string[] | undefined {
  const pending: Visit[] = [{ value: document, path: undefined, depth: 0 }];
  while (pending.length > 0) {
    const visit = pending.pop()!;
    const found = check(visit);
    if (found !== undefined) return found;
    const { value, path, depth } = visit;
    const children: Visit[] = [];
    if (Array.isArray(value)) {
      // An element is reported by its array's key (or a table's key inside it).
      for (const item of value) {
        children.push({ value: item, path, depth: depth + 1 });
      }
    } else if (typeof value === "object" && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        children.push({
          value: item,
          path: { key, parent: path },
          depth: depth + 1,
        });
      }
    }
    // Reversed onto the stack, so that the first child is visited first.
    for (let index = children.length - 1; index >= 0; index--) {
      pending.push(children[index]);
    }
  }
  return undefined;
}

/**
 * The key path of the first key or string value in `value` that holds a
 * NUL character, or undefined. Such a string cannot reach an argv, an
 * environment or most files, so it is refused before the schema sees it.
 */
export function keyHoldingNul(value: unknown): string[] | undefined {
  return findInDocument(value, ({ value, path }) => {
    if (path?.key.includes("\0")) {
      return [...keysOf(path.parent), path.key.replaceAll("\0", "\\0")];
    }
    return typeof value === "string" && value.includes("\0")
      ? keysOf(path)
      : undefined;
  });
}

/**
 * The key path of the first table or array nested deeper than
 * {@linkcode MAX_NESTING_DEPTH} (the path down to that depth), or
 * undefined.
 */
export function keyNestedTooDeep(value: unknown): string[] | undefined {
  return findInDocument(
    value,
    ({ value, path, depth }) =>
      depth > MAX_NESTING_DEPTH && typeof value === "object" && value !== null
        ? keysOf(path)
        : undefined,
  );
}

/**
 * Parses TOML, turning a syntax error into an {@linkcode InvalidFileError}
 * with the line and column. The parser is loaded on first use: a launch
 * whose files all hit the validation cache never needs it.
 */
export async function parseTomlText(
  path: string,
  text: string,
): Promise<Record<string, unknown>> {
  const { parse } = await importLazily<typeof import("./toml_parser.ts")>(
    "lib/config/toml_parser.ts",
  );
  try {
    return parse(text) as Record<string, unknown>;
  } catch (error) {
    const { line, column, message } = error as {
      line?: number;
      column?: number;
      message?: string;
    };
    const reason = (message ?? String(error)).split("\n")[0]
      .replace(/^Invalid TOML document: /, "");
    throw new InvalidFileError({
      path,
      line,
      column,
      reason: `TOML syntax error: ${reason}`,
    });
  }
}

/** The most an operator file may hold: a profile or a service is a few KiB. */
export const MAX_OPERATOR_FILE_BYTES = 1024 * 1024;

/**
 * As Deno.readTextFileSync decodes: invalid bytes become U+FFFD and a byte
 * order mark is kept. One for every file (it keeps no state between
 * `decode` calls without `stream`): a launch reads several.
 */
const UTF8 = new TextDecoder("utf-8", { ignoreBOM: true });

/**
 * Reads an operator's file: undefined when nothing is at `path`. Anything
 * there that cannot be read (a dangling symlink, a folder, no permission)
 * is an {@linkcode InvalidFileError}, so that it is reported and skipped
 * like a malformed file, never mistaken for a missing one.
 *
 * Only a regular file of at most {@linkcode MAX_OPERATOR_FILE_BYTES} is
 * read: a FIFO would block the process (and the broker, which reads a
 * service on every token request) until someone writes to it, and a device
 * such as /dev/zero or a huge file would fill the memory. `what` names the
 * kind of file in the refusal ("a profile", "a service", "config.toml").
 * `maxBytes` raises the limit for a file that is not sherlock's own (an
 * agent's `~/.claude.json` also holds its history: megabytes).
 */
export function readOperatorFile(
  path: string,
  what: string,
  maxBytes: number = MAX_OPERATOR_FILE_BYTES,
): string | undefined {
  try {
    // stat before open: opening a FIFO for reading blocks until a writer
    // comes, and Deno has no O_NONBLOCK.
    refuseUnusable(path, Deno.statSync(path), { what, maxBytes });
    using file = Deno.openSync(path);
    // Again on what was opened: the entry may have changed since the stat.
    const info = file.statSync();
    refuseUnusable(path, info, { what, maxBytes });
    const bytes = readAtMost(file, {
      limit: maxBytes + 1,
      sizeHint: info.size,
    });
    if (bytes.length > maxBytes) throw tooLarge(path, { what, maxBytes });
    return UTF8.decode(bytes);
  } catch (error) {
    if (error instanceof InvalidFileError) throw error;
    if (error instanceof Deno.errors.NotFound && !entryExists(path)) {
      return undefined;
    }
    throw new InvalidFileError({
      path,
      reason: `cannot read it: ${describeFsError(error)}`,
    });
  }
}

function refuseUnusable(
  path: string,
  info: Deno.FileInfo,
  limit: { what: string; maxBytes: number },
) {
  if (info.isDirectory) throw new Deno.errors.IsADirectory();
  if (!info.isFile) {
    throw new InvalidFileError({
      path,
      reason: `cannot read it: it is ${
        describeFileType(info)
      }, not a regular file`,
    });
  }
  if (info.size > limit.maxBytes) throw tooLarge(path, limit);
}

function describeFileType(info: Deno.FileInfo): string {
  if (info.isFifo) return "a FIFO";
  if (info.isCharDevice) return "a character device";
  if (info.isBlockDevice) return "a block device";
  if (info.isSocket) return "a socket";
  return "not a file";
}

function tooLarge(
  path: string,
  limit: { what: string; maxBytes: number },
): InvalidFileError {
  const mib = Math.round(limit.maxBytes / (1024 * 1024));
  return new InvalidFileError({
    path,
    reason: limit.maxBytes === MAX_OPERATOR_FILE_BYTES
      ? `larger than 1 MiB; ${limit.what} is a few KiB`
      : `larger than ${mib} MiB, more than ${limit.what} holds`,
  });
}

/**
 * Reads until the end of `file` or `limit` bytes, whichever comes first:
 * never more, even when the file grows while it is read.
 */
function readAtMost(
  file: Deno.FsFile,
  options: { limit: number; sizeHint: number },
): Uint8Array {
  // One byte more than the size seen: a file that grew shows as longer.
  let buffer = new Uint8Array(Math.min(options.sizeHint + 1, options.limit));
  let length = 0;
  while (length < options.limit) {
    if (length === buffer.length) {
      const larger = new Uint8Array(Math.min(buffer.length * 2, options.limit));
      larger.set(buffer);
      buffer = larger;
    }
    const count = file.readSync(buffer.subarray(length));
    if (count === null) break;
    length += count;
  }
  return buffer.subarray(0, length);
}

function entryExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The `*.toml` files of a folder (hidden files skipped); none if missing.
 * Throws {@linkcode ConfigError} when it cannot be read (e.g. it is a file).
 */
export function listTomlFiles(
  folder: string,
): { name: string; path: string }[] {
  const files: { name: string; path: string }[] = [];
  try {
    for (const entry of Deno.readDirSync(folder)) {
      if (!entry.name.endsWith(".toml") || entry.name.startsWith(".")) {
        continue;
      }
      if (entry.isDirectory) continue;
      files.push({
        name: entry.name.slice(0, -".toml".length),
        path: join(folder, entry.name),
      });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) {
      throw new ConfigError(
        `cannot read folder ${folder}: ${describeFsError(error)}`,
      );
    }
  }
  // By code unit: localeCompare would load ICU's collator at start-up
  // (docs/BENCHMARKS.md).
  return files.sort((a, b) => a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}
