/**
 * How each service's token reaches its server — not at all, inline in the
 * rendered config, through the token shim, through `sherlock bridge` (a
 * remote server), or refused — decided once per
 * session, before any token is fetched. Pure. The session fetches what the
 * plan names and the renderer (`servers.ts`) renders the plan as it is.
 *
 * @module
 */

import { isArgvFormat, type McpFormat } from "../profiles/mcp_formats.ts";
import type { Service } from "../services/loader.ts";
import { unsupportedServer } from "./formats.ts";

/** What config.toml's `[render] tokens` and a `[token] delivery` ask for. */
export type TokenDelivery = "inline" | "shim";

/**
 * One service's delivery. `inline` with `deferrable` (a stdio server) goes
 * through the shim instead when its token holds one of
 * {@linkcode EXPANDED_CHARACTERS}: the broker then keeps the token for the
 * session's shim instead of answering it (see {@linkcode settleDelivery}).
 */
export type ServiceDelivery =
  | { kind: "none" }
  | { kind: "inline"; deferrable: boolean }
  | { kind: "shim"; reason: string }
  /**
   * A remote server reached through `sherlock bridge`: the agent starts the
   * bridge as a stdio server, and the bridge asks the broker for the token.
   */
  | { kind: "bridge" }
  | {
    kind: "refused";
    /** The one line the session is refused with (exit 78). */
    reason: string;
    /** A server the format cannot carry at all, or its token only. */
    cause: "transport" | "token";
  };

/** Every service's delivery, by service name, in the services' order. */
export type DeliveryPlan = ReadonlyMap<string, ServiceDelivery>;

/**
 * The characters that Claude Code, Copilot and Gemini expand in a server's
 * `env` values (`$HOME`, `${X}`, `$$`): a value holding one would not reach
 * the server as written, so it goes through the shim, which passes it as is.
 */
export const EXPANDED_CHARACTERS: readonly string[] = ["$"];

/** What {@linkcode planDelivery} decides from. */
export interface PlanDeliveryOptions {
  /** The session's services. */
  services: readonly Service[];
  /** The agent's `[mcp] format`. */
  format: McpFormat;
  /** The operator's file, when the profile merges into it (`merge = true`). */
  mergePath?: string;
  /** The profile's `config-file` path, when it writes one without merging. */
  configFilePath?: string;
  /** config.toml's `[render] tokens`. */
  configured: TokenDelivery;
  /** The agent's profile name (for the refusals' messages). */
  agent: string;
}

/**
 * Decides each service's delivery:
 * - a service without a token: `none`;
 * - a remote server with a token: through the bridge, for every agent and
 *   format (the entry is a stdio one that holds no token, only the session's
 *   capability, and the agent speaks stdio to it, so an SSE server works
 *   for Codex too), unless its `[token] delivery` is `"inline"`;
 * - a format that puts the config in argv (Codex), the merge delivery
 *   (Gemini) or a `config-file` path: every stdio token through the shim,
 *   since argv is readable by every local user, the operator's own file is
 *   no place for a token, and a config-file path lies on persistent disk
 *   outside sherlock's private runtime folder (a kill, a crash or a power
 *   loss would leave the token there); a remote server with a token cannot
 *   use the shim (the agent connects to it itself), so it is refused;
 * - a server the format cannot carry (SSE for Codex): refused;
 * - otherwise a stdio server follows its `[token] delivery`, else
 *   config.toml's `[render] tokens`, and goes through the shim when its
 *   `[token] format` holds an expanded character; a remote one is inline.
 */
export function planDelivery(options: PlanDeliveryOptions): DeliveryPlan {
  const { agent } = options;
  const forcedBecause = isArgvFormat(options.format)
    ? "put it in argv, which every local user can read"
    : options.mergePath !== undefined
    ? `write it into ${options.mergePath}, a file of yours`
    : options.configFilePath !== undefined
    ? `write it into ${options.configFilePath}, on disk outside sherlock's private runtime folder`
    : undefined;
  const plan = new Map<string, ServiceDelivery>();
  for (const service of options.services) {
    const name = service.service.name;
    const { server, token } = service;
    const unsupported = unsupportedServer(options.format, server);
    if (
      token.source !== "none" && !("command" in server) &&
      token.delivery !== "inline"
    ) {
      plan.set(name, { kind: "bridge" });
    } else if (unsupported !== undefined) {
      plan.set(name, {
        kind: "refused",
        reason: `service ${name} ${unsupported}; agent ${agent} cannot use it`,
        cause: "transport",
      });
    } else if (token.source === "none") {
      plan.set(name, { kind: "none" });
    } else if (!("command" in server)) {
      plan.set(
        name,
        forcedBecause === undefined ? { kind: "inline", deferrable: false } : {
          kind: "refused",
          reason:
            `service ${name} is a remote server with a token, and agent ${agent} ` +
            `would ${forcedBecause}; remove its [token] delivery = "inline" (the bridge carries it), or use another agent`,
          cause: "token",
        },
      );
    } else if (forcedBecause !== undefined) {
      plan.set(name, {
        kind: "shim",
        reason: `agent ${agent} would ${forcedBecause}`,
      });
    } else if ((token.delivery ?? options.configured) === "shim") {
      plan.set(name, {
        kind: "shim",
        reason: token.delivery === "shim"
          ? 'its [token] delivery is "shim"'
          : 'config.toml\'s [render] tokens is "shim"',
      });
    } else if (holdsExpanded(token.format)) {
      plan.set(name, {
        kind: "shim",
        reason: "its [token] format holds $, which the agent would expand",
      });
    } else {
      plan.set(name, { kind: "inline", deferrable: true });
    }
  }
  return plan;
}

/**
 * Why the session cannot run, if the plan refuses a service: the first
 * server the format cannot carry, else the first token it cannot.
 */
export function refusal(plan: DeliveryPlan): string | undefined {
  let first: string | undefined;
  for (const delivery of plan.values()) {
    if (delivery.kind !== "refused") continue;
    if (delivery.cause === "transport") return delivery.reason;
    first ??= delivery.reason;
  }
  return first;
}

/** The services of a plan that need a token, however it is delivered. */
export function servicesNeedingTokens(plan: DeliveryPlan): string[] {
  return [...plan].filter(([, delivery]) =>
    delivery.kind === "inline" || delivery.kind === "shim" ||
    delivery.kind === "bridge"
  ).map(([name]) => name);
}

/**
 * The tokens a session fetches before it renders: every inline service's,
 * and which of them the broker may defer (keep for the shim) when they hold
 * one of `ifContains`.
 */
export function inlineFetch(
  plan: DeliveryPlan,
): { services: string[]; defer: { services: string[]; ifContains: string[] } } {
  const services: string[] = [];
  const deferrable: string[] = [];
  for (const [name, delivery] of plan) {
    if (delivery.kind !== "inline") continue;
    services.push(name);
    if (delivery.deferrable) deferrable.push(name);
  }
  return {
    services,
    defer: { services: deferrable, ifContains: [...EXPANDED_CHARACTERS] },
  };
}

/**
 * The plan once the broker has answered: a service whose token the broker
 * deferred goes through the shim, which gets the token from the broker.
 * The broker's answer is the whole rule: only a daemon of this very
 * version is asked for tokens (the client refuses any other before a
 * request), and it defers every deferrable token holding an expanded
 * character, so none comes back inline.
 */
export function settleDelivery(
  plan: DeliveryPlan,
  fetched: { deferred: readonly string[] },
): DeliveryPlan {
  const settled = new Map(plan);
  for (const [name, delivery] of plan) {
    if (delivery.kind !== "inline" || !delivery.deferrable) continue;
    if (fetched.deferred.includes(name)) {
      settled.set(name, {
        kind: "shim",
        reason: "its token holds $, which the agent would expand",
      });
    }
  }
  return settled;
}

function holdsExpanded(value: string): boolean {
  return EXPANDED_CHARACTERS.some((character) => value.includes(character));
}
