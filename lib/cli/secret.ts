/**
 * `sherlock secret set|rm|ls`: the secrets in the local store that services
 * with `[token] source = "secret"` use, by service name. Values are read
 * from stdin or a no-echo prompt, never from argv (which every local user
 * can see), and are never printed.
 *
 * @module
 */

import {
  ensureBroker,
  listSecrets,
  removeSecret,
  setSecret,
  whoami,
} from "../broker/client.ts";
import { NoPermissionError, UsageError } from "../errors.ts";
import { NAME_PATTERN } from "../config/names.ts";
import { commandContext } from "./context.ts";
import { columns, printLine } from "./output.ts";
import { readHidden, readStdin, stdinIsTerminal } from "./terminal_input.ts";

/**
 * What `secret set|rm` says of an argument that is not a service name. It
 * never repeats the argument, which may be a token pasted in the wrong place.
 */
export const INVALID_NAME_MESSAGE =
  "the argument is not a service name (a service name is lowercase letters, digits, '-' and '_', starting with a letter or digit; it is not repeated here in case it is a secret)";

/** Runs the command; returns the exit code. */
export async function secretCommand(args: readonly string[]): Promise<number> {
  const [action, ...rest] = args;
  if (action === "ls") {
    if (rest.length > 0) throw new UsageError("usage: sherlock secret ls");
    const { secrets } = await listSecrets(await brokerSocket());
    if (secrets.length === 0) {
      printLine("no secrets stored");
      return 0;
    }
    const rows = [["NAME", "CREATED", "UPDATED"]];
    for (const secret of secrets) {
      rows.push([secret.name, secret.created, secret.updated]);
    }
    for (const line of columns(rows)) printLine(line);
    return 0;
  }
  if (action !== "set" && action !== "rm") {
    throw new UsageError(
      `unknown secret command ${action}; see sherlock secret --help`,
    );
  }
  if (rest.length !== 1) {
    throw new UsageError(
      action === "set"
        ? "usage: sherlock secret set <service> (the value comes from stdin or a prompt, never from argv)"
        : "usage: sherlock secret rm <service>",
    );
  }
  const name = rest[0];
  if (!NAME_PATTERN.test(name)) {
    // Not repeated: a wrong argument may be a token pasted in the wrong place.
    throw new UsageError(INVALID_NAME_MESSAGE);
  }
  if (action === "rm") {
    const removed = await removeSecret(await brokerSocket(), name);
    printLine(
      removed
        ? `removed the secret of ${name}`
        : `there was no secret for ${name}`,
    );
    return 0;
  }
  let value: string;
  let socket: string;
  if (stdinIsTerminal()) {
    // Do not ask for a secret that could not be stored.
    socket = await brokerSocket();
    const who = await whoami(socket);
    if (!who.loggedIn) {
      throw new NoPermissionError(
        `not logged in: the broker's store is locked; run "sherlock login"`,
      );
    }
    value = await readHidden(`Secret for ${name}: `);
  } else {
    // Piped input fails at once when empty, without starting a daemon.
    value = await readStdin("secret");
    socket = await brokerSocket();
  }
  if (value === "") {
    throw new UsageError("the secret is empty; nothing was stored");
  }
  await setSecret({ socket, name, value });
  printLine(`stored the secret of ${name}`);
  return 0;
}

async function brokerSocket(): Promise<string> {
  const { paths } = commandContext();
  const socket = paths.socket;
  await ensureBroker({ socket, logFile: paths.brokerLog });
  return socket;
}
