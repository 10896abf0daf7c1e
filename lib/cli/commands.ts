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
