/**
 * Whether the commands a session's servers need can start: each stdio
 * service's `command` (not on the agent's `PATH`, not executable, or a
 * whole command line in one string — `"npx -y pkg"` with no `args`, the
 * likely mistake), and the credential helper of a service whose shim or
 * bridge fetches its token only when the agent starts it. The agent would
 * only say "failed" deep in its own output, or nothing, so the session says
 * it in one line per service before the agent starts — and starts anyway:
 * the agent (or the broker) may find it where sherlock does not.
 *
 * Pure: the lookup is passed in (`spawn.ts` `findExecutable`, through
 * {@linkcode rememberedLookup}), so the rules test without files.
 *
 * @module
 */

import { ValidationCache } from "../config/validation_cache.ts";
import type { DeliveryPlan } from "../render/delivery.ts";
import type { Service } from "../services/loader.ts";
import type { ExecutableLookup } from "./spawn.ts";

/**
 * One line per service whose credential helper is not found, among those
 * whose token a shim or a bridge will fetch (an inline token's failure is
 * known from the fetch itself). `lookup` finds a command as the broker
 * would (your `PATH`); a relative path is the broker's (your home) to
 * resolve, so it is not looked up.
 */
export function helperCommandProblems(
  services: readonly Service[],
  options: {
    delivery: DeliveryPlan;
    lookup: (command: string) => ExecutableLookup;
  },
): string[] {
  const problems: string[] = [];
  for (const service of services) {
    const name = service.service.name;
    const kind = options.delivery.get(name)?.kind;
    const program = service.token.command?.[0];
    if (
      (kind !== "shim" && kind !== "bridge") || program === undefined ||
      (program.includes("/") && !program.startsWith("/"))
    ) continue;
    const found = options.lookup(program);
    if (found.found) continue;
    problems.push(
      `service ${name}: its credential helper ${
        found.reason === "not-executable"
          ? `${found.path} is not executable`
          : program.includes("/")
          ? `${program} does not exist`
          : `${program} is not on PATH`
      }, so its ${kind} will get no token; install it or fix [token] command in services.d/${name}.toml`,
    );
  }
  return problems;
}

/**
 * One line per stdio service whose command cannot start as written, in the
 * services' order; `lookup` finds a command as the agent would.
 */
export function serverCommandProblems(
  services: readonly Service[],
  lookup: (command: string) => ExecutableLookup,
): string[] {
  const problems: string[] = [];
  for (const service of services) {
    const { server } = service;
    if (!("command" in server)) continue;
    const name = service.service.name;
    const file = `services.d/${name}.toml`;
    const words = server.command.trim().split(/\s+/);
    if (words.length > 1 && server.args.length === 0) {
      const [program, ...args] = words;
      problems.push(
        `service ${name}: command ${
          JSON.stringify(server.command)
        } is a whole command line and args is empty; in ${file} write command = ${
          JSON.stringify(program)
        } and args = ${JSON.stringify(args).replaceAll('","', '", "')}`,
      );
      continue;
    }
    const found = lookup(server.command);
    if (found.found) continue;
    problems.push(
      found.reason === "not-executable"
        ? `service ${name}: its command ${found.path} is not executable; chmod +x it or fix command in ${file}`
        : server.command.includes("/")
        ? `service ${name}: its command ${server.command} does not exist; install the server or fix command in ${file}`
        : `service ${name}: its command ${server.command} is not on PATH; install the server or give its full path in ${file}`,
    );
  }
  return problems;
}

/** What {@linkcode rememberedLookup} needs. */
export interface RememberedLookupOptions {
  /** Where the folder each command was found in is remembered. */
  cache: ValidationCache;
  /** The `PATH` searched: a remembered place counts only for the same one. */
  searchPath: string | undefined;
  /** The real lookup (`spawn.ts` `findExecutable`). */
  find: (command: string, searchPath: string | undefined) => ExecutableLookup;
}

/**
 * `find` on `searchPath`, remembering in the validation cache where each
 * command was found: at the next launch with the same `PATH` the command is
 * checked at that one place (one stat) instead of in every folder before it
 * (one failing stat each, about 60 µs in Deno: with 14 folders and 5
 * services, 3 ms of every launch, docs/BENCHMARKS.md). If it is gone from
 * there, it is looked up again. Only for warnings: an earlier folder may
 * hold the command by now, and it is still found either way.
 */
export function rememberedLookup(
  options: RememberedLookupOptions,
): (command: string) => ExecutableLookup {
  const { cache, searchPath, find } = options;
  return (command) => {
    // Only a bare name is searched; a path is checked where it is anyway.
    if (command.includes("/")) return find(command, searchPath);
    // One note per PATH: agents whose profiles set another one keep theirs.
    const key = ValidationCache.noteKey(
      "command on PATH",
      `${command}\0${searchPath ?? ""}`,
    );
    const text = "";
    const remembered = cache.get(key, text);
    if (typeof remembered === "string") {
      const again = find(remembered, searchPath);
      if (again.found) return again;
    }
    const found = find(command, searchPath);
    if (found.found) cache.set(key, text, found.path);
    return found;
  };
}
