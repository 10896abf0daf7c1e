/**
 * sherlock's own commands: their names (which no agent alias may shadow),
 * one-line summaries for the help, and how to load each one. Commands are
 * imported only when they run, so `sherlock run` never loads the others.
 *
 * @module
 */

import { importLazily } from "../runtime/lazy_import.ts";

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
    load: async () =>
      (await importLazily<typeof import("./run.ts")>(
        new URL("./run.ts", import.meta.url),
      )).runCommand,
  },
  agents: {
    summary: "list the agent profiles, or show one",
    load: async () =>
      (await importLazily<typeof import("./agents.ts")>(
        new URL("./agents.ts", import.meta.url),
      )).agentsCommand,
  },
  login: {
    summary:
      "unlock the secret store in the broker (creates it the first time)",
    load: async () =>
      (await importLazily<typeof import("./login.ts")>(
        new URL("./login.ts", import.meta.url),
      )).loginCommand,
  },
  logout: {
    summary: "lock the store and drop cached tokens",
    load: async () =>
      (await importLazily<typeof import("./login.ts")>(
        new URL("./login.ts", import.meta.url),
      )).logoutCommand,
  },
  whoami: {
    summary: "who is logged in, through which provider, since when",
    load: async () =>
      (await importLazily<typeof import("./login.ts")>(
        new URL("./login.ts", import.meta.url),
      )).whoamiCommand,
  },
  secret: {
    summary: "set, remove or list the secrets of the local store",
    load: async () =>
      (await importLazily<typeof import("./secret.ts")>(
        new URL("./secret.ts", import.meta.url),
      )).secretCommand,
  },
  broker: {
    summary:
      "serve, start, stop or inspect the credential broker; its audit log",
    load: async () =>
      (await importLazily<typeof import("./broker.ts")>(
        new URL("./broker.ts", import.meta.url),
      )).brokerCommand,
  },
  shim: {
    summary: "(used inside rendered configs) run an MCP server with its token",
    load: async () =>
      (await importLazily<typeof import("./shim.ts")>(
        new URL("./shim.ts", import.meta.url),
      )).shimCommand,
  },
  help: {
    summary: "show this help, or a command's",
    load: async () =>
      (await importLazily<typeof import("./help.ts")>(
        new URL("./help.ts", import.meta.url),
      )).helpCommand,
  },
  version: {
    summary: "print sherlock's version",
    load: async () =>
      (await importLazily<typeof import("./help.ts")>(
        new URL("./help.ts", import.meta.url),
      )).versionCommand,
  },
};

/** True when `name` is one of sherlock's commands. */
export function isCommandName(name: string): boolean {
  return Object.hasOwn(COMMANDS, name);
}
