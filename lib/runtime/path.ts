/**
 * `join`, `dirname`, `isAbsolute`, `delimiter` and `fromFileUrl` for the
 * launch path. Not `node:path` (the first `node:` import of a process starts
 * Deno's Node compatibility layer, a large part of start-up:
 * docs/BENCHMARKS.md) nor `@std/path` (no JSR where sherlock is developed).
 * POSIX re-implementations, compared with `node:path/posix` by a test; on
 * Windows (drives, UNC shares) this module loads `node:path` and `node:url`.
 *
 * @module
 */

import { importLazily } from "./lazy_import.ts";

/** The path functions that sherlock uses. */
export interface PathFunctions {
  /** Joins segments and normalizes the result, as `node:path`'s `join`. */
  join(...segments: string[]): string;
  /** The folder part of a path, as `node:path`'s `dirname`. */
  dirname(path: string): string;
  /** True for an absolute path, as `node:path`'s `isAbsolute`. */
  isAbsolute(path: string): boolean;
  /** The separator of `PATH`'s entries. */
  delimiter: string;
  /** The path of a `file:` URL, as `node:url`'s `fileURLToPath`. */
  fromFileUrl(url: string | URL): string;
}

/** The POSIX implementation (used everywhere but Windows). */
export const posix: PathFunctions = {
  join: posixJoin,
  dirname: posixDirname,
  isAbsolute: (path) => path.startsWith("/"),
  delimiter: ":",
  fromFileUrl: posixFromFileUrl,
};

const functions: PathFunctions = Deno.build.os === "windows"
  ? await loadNode()
  : posix;

/** Joins segments and normalizes the result, as `node:path`'s `join`. */
export const join: PathFunctions["join"] = functions.join;
/** The folder part of a path, as `node:path`'s `dirname`. */
export const dirname: PathFunctions["dirname"] = functions.dirname;
/** True for an absolute path, as `node:path`'s `isAbsolute`. */
export const isAbsolute: PathFunctions["isAbsolute"] = functions.isAbsolute;
/** The separator of `PATH`'s entries (`:`, or `;` on Windows). */
export const delimiter: string = functions.delimiter;
/** The path of a `file:` URL, as `node:url`'s `fileURLToPath`. */
export const fromFileUrl: PathFunctions["fromFileUrl"] = functions.fromFileUrl;

async function loadNode(): Promise<PathFunctions> {
  // Built at run time so that Deno does not load node:path at every
  // start-up on Linux and macOS too (see lazy_import.ts).
  const path = await importLazily<typeof import("node:path")>(
    new URL("node:path"),
  );
  const { fileURLToPath } = await importLazily<typeof import("node:url")>(
    new URL("node:url"),
  );
  return {
    join: path.join,
    dirname: path.dirname,
    isAbsolute: path.isAbsolute,
    delimiter: path.delimiter,
    fromFileUrl: (url) => fileURLToPath(url),
  };
}

function posixJoin(...segments: string[]): string {
  const joined = segments.filter((segment) => segment !== "").join("/");
  return joined === "" ? "." : posixNormalize(joined);
}

function posixNormalize(path: string): string {
  const absolute = path.startsWith("/");
  const trailing = path.endsWith("/");
  const kept: string[] = [];
  for (const segment of path.split("/")) {
    if (segment === "" || segment === ".") continue;
    if (segment === "..") {
      if (kept.length > 0 && kept[kept.length - 1] !== "..") kept.pop();
      else if (!absolute) kept.push("..");
      continue;
    }
    kept.push(segment);
  }
  let result = kept.join("/");
  if (result === "") {
    if (absolute) return "/";
    return trailing ? "./" : ".";
  }
  if (trailing) result += "/";
  return absolute ? `/${result}` : result;
}

function posixDirname(path: string): string {
  if (path === "") return ".";
  const rooted = path.startsWith("/");
  let end = -1;
  let inTrailingSlashes = true;
  for (let index = path.length - 1; index >= 1; index--) {
    if (path[index] === "/") {
      if (!inTrailingSlashes) {
        end = index;
        break;
      }
    } else {
      inTrailingSlashes = false;
    }
  }
  if (end === -1) return rooted ? "/" : ".";
  if (rooted && end === 1) return "//";
  return path.slice(0, end);
}

function posixFromFileUrl(url: string | URL): string {
  const parsed = url instanceof URL ? url : new URL(url);
  if (parsed.protocol !== "file:") {
    throw new TypeError(`not a file: URL: ${parsed.href}`);
  }
  if (parsed.hostname !== "") {
    throw new TypeError(
      `a file: URL with a host is not a local path: ${parsed.href}`,
    );
  }
  if (/%2f/i.test(parsed.pathname)) {
    throw new TypeError(`a file: URL path must not encode "/": ${parsed.href}`);
  }
  return decodeURIComponent(parsed.pathname);
}
