/**
 * `${VAR}` and leading-`~` expansion for profile and service values.
 *
 * A reference to a variable that is unset and has no XDG default is an error,
 * never an empty string: an empty expansion would silently turn
 * `${XDG_CONFIG_HOME}/x` into `/x`.
 *
 * @module
 */

import { type Env, lookupVariable } from "./sherlock_paths.ts";

/** What to expand against. */
export interface ExpandContext {
  /** The operator's environment. */
  env: Env;
}

/** A `${VAR}` reference to a variable that is unset and has no default. */
export class UnsetVariableError extends Error {
  readonly variable: string;

  /** Creates the error for one variable. */
  constructor(variable: string) {
    super(`\${${variable}} is not set and has no default`);
    this.name = "UnsetVariableError";
    this.variable = variable;
  }
}

const REFERENCE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces every `${NAME}` in `value` with the variable's value, falling back
 * to the XDG defaults (see `lookupVariable` in `sherlock_paths.ts`). Throws
 * {@linkcode UnsetVariableError} for the first reference that cannot be
 * resolved, including one to an empty variable. A `$` not followed by
 * `{NAME}` is kept.
 */
export function expandVariables(value: string, context: ExpandContext): string {
  return value.replace(REFERENCE, (_match, name: string) => {
    const found = lookupVariable(name, context.env);
    if (found === undefined) throw new UnsetVariableError(name);
    return found;
  });
}

/**
 * Expands a path: `~` or `~/…` at the start becomes `$HOME`, then `${VAR}`
 * references are expanded as in {@linkcode expandVariables}.
 */
export function expandPath(value: string, context: ExpandContext): string {
  let path = value;
  if (path === "~" || path.startsWith("~/")) {
    const home = context.env.HOME;
    if (!home) throw new UnsetVariableError("HOME");
    path = home + path.slice(1);
  }
  return expandVariables(path, context);
}
