/**
 * sherlock's own commands: their names (which no agent alias may shadow),
 * one-line summaries for the help, and how to load each one. Commands are
 * imported only when they run, so `sherlock run` never loads the others.
 *
 * @module
 */

/** One command. */
export interface CommandSpec {
  /** The one-line summary shown by `sherlock --help`. */
  summary: string;
  /** Loads the command's module and returns its entry point. */
  load: () => Promise<(args: readonly string[]) => Promise<number>>;
}

/** Every command, by name. */
export const COMMANDS: Readonly<Record<string, CommandSpec>> = {
  run: {
    summary: "start an agent with its per-session MCP config",
    load: async () => (await import("./run.ts")).runCommand,
  },
  agents: {
    summary: "list the agent profiles, or show one",
    load: async () => (await import("./agents.ts")).agentsCommand,
  },
  login: {
    summary:
      "unlock the secret store in the broker (creates it the first time)",
    load: async () => (await import("./login.ts")).loginCommand,
  },
  logout: {
    summary: "lock the store and drop cached tokens",
    load: async () => (await import("./login.ts")).logoutCommand,
  },
  whoami: {
    summary: "who is logged in, through which provider, since when",
    load: async () => (await import("./login.ts")).whoamiCommand,
  },
  secret: {
    summary: "set, remove or list the secrets of the local store",
    load: async () => (await import("./secret.ts")).secretCommand,
  },
  broker: {
    summary:
      "serve, start, stop or inspect the credential broker; its audit log",
    load: async () => (await import("./broker.ts")).brokerCommand,
  },
  shim: {
    summary: "(used inside rendered configs) run an MCP server with its token",
    load: async () => (await import("./shim.ts")).shimCommand,
  },
  help: {
    summary: "show this help, or a command's",
    load: async () => (await import("./help.ts")).helpCommand,
  },
  version: {
    summary: "print sherlock's version",
    load: async () => (await import("./help.ts")).versionCommand,
  },
};

/** True when `name` is one of sherlock's commands. */
export function isCommandName(name: string): boolean {
  return Object.hasOwn(COMMANDS, name);
}
