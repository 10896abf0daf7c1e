/**
 * Which services a session gets: `sherlock run --service` / `--no-service`,
 * the profile's `[services] include` / `exclude`, each service's
 * `[service] agents`, and config.toml's `[services] default`. Pure: the
 * plan (`plan.ts`) decides the set here, the broker is registered with it,
 * and `--dry-run` shows why each service is out.
 *
 * @module
 */

import { ConfigError, UsageError } from "../errors.ts";
import { didYouMean } from "../config/suggestion.ts";
import type { LoadedProfile } from "../profiles/loader.ts";
import type { Service } from "../services/loader.ts";

/** What the operator asked for on the command line. */
export interface ServiceFlags {
  /** `--service NAME`, repeatable: only these. */
  only: readonly string[];
  /** `--no-service NAME`, repeatable: all but these. */
  without: readonly string[];
}

/** Why a service is not part of a session although its file is valid. */
export type ExclusionCause = "flag" | "profile" | "agents" | "default";

/** A service the selection left out, by the operator's choice. */
export interface ExcludedService {
  /** The service's name. */
  service: string;
  /** Which rule left it out. */
  cause: ExclusionCause;
  /** The rule, in the operator's words (`--no-service`, `[services] exclude`). */
  reason: string;
}

/** What {@linkcode selectServices} decides. */
export interface ServiceSelection {
  /** The session's services, in the order of `services`. */
  selected: Service[];
  /**
   * The others, each with why; then the malformed files' names that the
   * flags, the profile or the default leave out (no warning for those).
   */
  excluded: ExcludedService[];
  /**
   * Services named by `--service` or `[services] include` that their own
   * `[service] agents` keeps from this agent: the session starts without
   * them, with a warning (an error when strict).
   */
  refused: { service: string; reason: string }[];
}

/** What the set is chosen from. */
export interface SelectServicesOptions {
  /** The agent's profile name. */
  agent: string;
  /** The profile as loaded (its `[services]`). */
  profile: LoadedProfile;
  /** Every valid service of services.d. */
  services: readonly Service[];
  /**
   * Names of services.d files that did not load (malformed): known names,
   * so naming one is no usage error (its own warning says what is wrong).
   */
  malformed?: readonly string[];
  /** config.toml's `[services] default`. */
  defaultSet: "all" | "none";
  /** The command line's `--service` / `--no-service`. */
  flags: ServiceFlags;
}

/**
 * The session's services. Rules, in order: `--service` names the set
 * outright; otherwise the profile's `include` names it, or its `exclude`
 * takes from every service (from none when config.toml says `[services]
 * default = "none"`); then `--no-service` takes away; last a service whose
 * `[service] agents` does not name the agent is out whatever named it.
 * Throws {@linkcode UsageError} (exit 2) for a flag naming no service and
 * for `--service` with `--no-service`; {@linkcode ConfigError} (exit 78)
 * for the profile's `include` or `exclude` naming none (the file is wrong,
 * not the command line).
 */
export function selectServices(
  options: SelectServicesOptions,
): ServiceSelection {
  const { flags, profile, agent } = options;
  const known = [
    ...options.services.map((service) => service.service.name),
    ...(options.malformed ?? []),
  ];
  if (flags.only.length > 0 && flags.without.length > 0) {
    throw new UsageError(
      "--service and --no-service cannot be combined: --service names the whole set; use one of them",
    );
  }
  for (const name of flags.only) {
    requireKnown(name, { known, where: "--service", error: UsageError });
  }
  for (const name of flags.without) {
    requireKnown(name, { known, where: "--no-service", error: UsageError });
  }
  const { include, exclude } = profile.profile.services ?? {};
  const where = `${profile.path}: services`;
  for (const name of include ?? []) {
    requireKnown(name, {
      known,
      where: `${where}.include`,
      error: ConfigError,
    });
  }
  for (const name of exclude ?? []) {
    requireKnown(name, {
      known,
      where: `${where}.exclude`,
      error: ConfigError,
    });
  }
  const selected: Service[] = [];
  const excluded: ExcludedService[] = [];
  const refused: ServiceSelection["refused"] = [];
  for (const service of options.services) {
    const name = service.service.name;
    const out = exclusionByName(name, options);
    if (out !== undefined) {
      excluded.push(out);
      continue;
    }
    const agents = service.service.agents;
    if (agents === undefined || agents.includes(agent)) {
      selected.push(service);
      continue;
    }
    const reason = `its [service] agents is ${agents.join(", ")}, not ${agent}`;
    if (flags.only.includes(name) || include?.includes(name)) {
      refused.push({
        service: name,
        reason: `service ${name} is named by ${
          flags.only.length > 0 ? "--service" : "the profile's include"
        } but ${reason}`,
      });
    } else excluded.push({ service: name, cause: "agents", reason });
  }
  // A malformed file that the names leave out needs no warning either.
  for (const name of options.malformed ?? []) {
    const out = exclusionByName(name, options);
    if (out !== undefined) excluded.push(out);
  }
  return { selected, excluded, refused };
}

/**
 * Why the names leave `name` out (the flags, the profile, the default), or
 * undefined when they keep it; a service's own `agents` is not a name rule.
 */
function exclusionByName(
  name: string,
  options: SelectServicesOptions,
): ExcludedService | undefined {
  const { only, without } = options.flags;
  const { include, exclude } = options.profile.profile.services ?? {};
  const out = (cause: ExclusionCause, reason: string) => ({
    service: name,
    cause,
    reason,
  });
  if (only.length > 0) {
    return only.includes(name)
      ? undefined
      : out("flag", "not named by --service");
  }
  if (include !== undefined && !include.includes(name)) {
    return out("profile", "not in the profile's [services] include");
  }
  if (exclude?.includes(name)) {
    return out("profile", "in the profile's [services] exclude");
  }
  if (include === undefined && options.defaultSet === "none") {
    return out(
      "default",
      `config.toml's [services] default = "none", and neither the profile nor --service names it`,
    );
  }
  if (without.includes(name)) return out("flag", "--no-service");
  return undefined;
}

function requireKnown(
  name: string,
  context: {
    known: readonly string[];
    where: string;
    error: typeof UsageError | typeof ConfigError;
  },
) {
  const { known, where } = context;
  if (known.includes(name)) return;
  throw new context.error(
    `${where}: no service named "${name}"${
      didYouMean(name, known)
    }; run "sherlock services" to list them`,
  );
}
