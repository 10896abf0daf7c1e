/**
 * `sherlock secret set|rm|ls`: the secrets in the local store that services
 * with `[token] source = "secret"` use, by service name. Values are read
 * from stdin or a no-echo prompt, never from argv (which every local user
 * can see), and are never printed.
 *
 * @module
 */

import {
  listSecrets,
  loggedInBroker,
  removeSecret,
  setSecret,
  whoami,
} from "../broker/client.ts";
import { NoPermissionError, UsageError } from "../errors.ts";
import { NAME_PATTERN } from "../config/names.ts";
import type { ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { printer } from "./output.ts";
import { didYouMean } from "../config/suggestion.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { loadServices } from "../services/loader.ts";
import { readHidden, readStdin, stdinIsTerminal } from "./terminal_input.ts";
import type { SecretsJson } from "./json_shapes.ts";

/**
 * What `secret set|rm` says of an argument that is not a service name. It
 * never repeats the argument, which may be a token pasted in the wrong place.
 */
export const INVALID_NAME_MESSAGE =
  "the argument is not a service name (a service name is lowercase letters, digits, '-' and '_', starting with a letter or digit; it is not repeated here in case it is a secret)";

/** The exit code of `secret rm` for a name that has no secret. */
export const NOTHING_REMOVED = 1;

/** The services of `services.d/`, as far as a secret's name is concerned. */
export interface ServicesSeen {
  /** Each valid service's name and token source. */
  services: readonly { name: string; source: string }[];
  /** The basenames of malformed service files (their source is unknown). */
  malformed: readonly string[];
}

/**
 * The warning for storing a secret under `name` when no service reads it:
 * none is named so (with the name of one that reads a secret, when `name`
 * looks like a typo of it), or the one named so takes its token from
 * elsewhere. Undefined when a service reads it, or may (a malformed file).
 */
export function unreadSecretProblem(
  name: string,
  seen: ServicesSeen,
): string | undefined {
  if (seen.malformed.includes(name)) return undefined;
  const service = seen.services.find((each) => each.name === name);
  if (service?.source === "secret") return undefined;
  const stored = "stored anyway, in case a service reads it later";
  if (service !== undefined) {
    return `service ${name} does not read a secret ([token] source = "${service.source}", not "secret"); ${stored}`;
  }
  const readers = seen.services.filter((each) => each.source === "secret")
    .map((each) => each.name);
  return `no service in services.d is named ${name}${
    didYouMean(name, readers)
  }; ${stored}`;
}

/** Runs the command; returns the exit code. */
export async function secretCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const brokerSocket = () => loggedInSocket(context);
  const action = args.subcommand;
  if (action === "ls") {
    const json = args.has("--json");
    const { secrets } = await listSecrets(await brokerSocket());
    if (json) {
      // Names and dates only: the broker never sends a value here.
      const shape: SecretsJson = {
        secrets: secrets.map(({ name, created, updated }) => ({
          name,
          created,
          updated,
        })),
      };
      out.json(shape);
      return 0;
    }
    if (secrets.length === 0) {
      out.line("no secrets stored");
      return 0;
    }
    const rows = [["NAME", "CREATED", "UPDATED"]];
    for (const secret of secrets) {
      rows.push([secret.name, secret.created, secret.updated]);
    }
    out.columns(rows, "header");
    return 0;
  }
  const [name] = args.positionals;
  if (!NAME_PATTERN.test(name)) {
    // Not repeated: a wrong argument may be a token pasted in the wrong place.
    throw new UsageError(INVALID_NAME_MESSAGE);
  }
  if (action === "rm") {
    const socket = await brokerSocket();
    if (await removeSecret(socket, name)) {
      out.line(`removed the secret of ${name}`);
      return 0;
    }
    const { secrets } = await listSecrets(socket);
    out.warning(
      `no secret stored for ${name}${
        didYouMean(name, secrets.map((secret) => secret.name))
      }; nothing was removed (see sherlock secret ls)`,
    );
    return NOTHING_REMOVED;
  }
  // A secret no service reads is stored anyway (the service may come
  // later) with a warning: on a terminal before the prompt, so that a typo
  // can be dropped with Ctrl-C; otherwise once it is stored.
  let value: string;
  let socket: string;
  let unread: string | undefined;
  if (stdinIsTerminal()) {
    // Do not ask for a secret that could not be stored.
    socket = await brokerSocket();
    const who = await whoami(socket);
    if (!who.loggedIn) {
      throw new NoPermissionError(
        `not logged in: the broker's store is locked; run "sherlock login"`,
      );
    }
    const warning = await unreadSecretWarning(name, context);
    if (warning !== undefined) out.warning(warning);
    value = await readHidden(`Secret for ${name}: `);
  } else {
    // Piped input fails at once when empty, before the broker is asked.
    value = await readStdin("secret");
    socket = await brokerSocket();
    unread = await unreadSecretWarning(name, context);
  }
  if (value === "") {
    throw new UsageError("the secret is empty; nothing was stored");
  }
  await setSecret({ socket, name, value });
  out.line(`stored the secret of ${name}`);
  if (unread !== undefined) out.warning(unread);
  return 0;
}

/** {@linkcode unreadSecretProblem} for the services in services.d/. */
async function unreadSecretWarning(
  name: string,
  context: CommandContext,
): Promise<string | undefined> {
  const { paths } = context;
  const cache = new ValidationCache(paths.cacheDir);
  const listing = await loadServices({ paths, cache });
  cache.save();
  return unreadSecretProblem(name, {
    services: listing.services.map((service) => ({
      name: service.service.name,
      source: service.token.source,
    })),
    malformed: listing.problems.map((problem) =>
      problem.path.slice(problem.path.lastIndexOf("/") + 1)
        .replace(/\.toml$/, "")
    ),
  });
}

/** The running broker's socket: every secret command needs a login. */
async function loggedInSocket(context: CommandContext): Promise<string> {
  const socket = context.paths.socket;
  await loggedInBroker(socket);
  return socket;
}
