/**
 * `sherlock login`, `sherlock logout` and `sherlock whoami`.
 *
 * login unlocks the local secret store in the broker (the first login
 * creates it and asks for the passphrase twice). On a terminal the
 * passphrase is read without echo; otherwise from stdin (its first line) or
 * from `--passphrase-file` (e.g. /dev/fd/3). sherlock never prompts when
 * nobody can answer.
 *
 * @module
 */

import {
  brokerHealth,
  ensureBroker,
  login,
  logout,
  whoami,
} from "../broker/client.ts";
import { MIN_PASSPHRASE_LENGTH } from "../broker/protocol.ts";
import { ExitCode, UsageError } from "../errors.ts";
import { describeFsError } from "../private_files.ts";
import { describeLogin } from "./login_text.ts";
import { commandContext } from "./context.ts";
import { printLine } from "./output.ts";
import { readHidden, readStdin, stdinIsTerminal } from "./terminal_input.ts";

/** `sherlock login`. */
export async function loginCommand(args: readonly string[]): Promise<number> {
  let passphraseFile: string | undefined;
  if (args.length > 0) {
    if (args[0] !== "--passphrase-file" || args.length !== 2) {
      throw new UsageError("usage: sherlock login [--passphrase-file PATH]");
    }
    passphraseFile = args[1];
  }
  const { paths } = commandContext();
  // Input that needs no prompt is read first: a login that cannot work
  // fails at once, without starting a daemon.
  const given = passphraseFile !== undefined
    ? await readPassphraseFile(passphraseFile)
    : stdinIsTerminal()
    ? undefined
    : await readStdin("passphrase", { firstLine: true });
  const socket = paths.socket;
  await ensureBroker({ socket, logFile: paths.brokerLog });
  const before = await whoami(socket);
  const create = !before.storeExists;
  const passphrase = given ?? await promptPassphrase(create);
  if (passphrase === "") throw new UsageError("no passphrase was given");
  if (create && passphrase.length < MIN_PASSPHRASE_LENGTH) {
    throw new UsageError(
      `the passphrase is too short: a new store needs at least ${MIN_PASSPHRASE_LENGTH} characters`,
    );
  }
  const after = await login(socket, { passphrase, create });
  printLine(
    `${after.created ? "created the store; " : ""}logged in: ${
      describeLogin(after)
    }`,
  );
  return 0;
}

/** `sherlock logout`. */
export async function logoutCommand(args: readonly string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`unexpected argument ${args[0]}`);
  const socket = await runningBrokerSocket();
  if (socket === undefined) return 0;
  await logout(socket);
  printLine("logged out: the store is locked and cached tokens are dropped");
  return 0;
}

/** `sherlock whoami`: exit 0 when logged in, 77 when not. */
export async function whoamiCommand(args: readonly string[]): Promise<number> {
  if (args.length > 0) throw new UsageError(`unexpected argument ${args[0]}`);
  const socket = await runningBrokerSocket();
  if (socket === undefined) return ExitCode.NoPermission;
  const who = await whoami(socket);
  printLine(describeLogin(who));
  return who.loggedIn ? 0 : ExitCode.NoPermission;
}

async function readPassphraseFile(path: string): Promise<string> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (error) {
    throw new UsageError(
      `cannot read the passphrase from ${path}: ${describeFsError(error)}`,
    );
  }
  const line = text.split(/\r?\n/)[0];
  if (line === "") throw new UsageError(`${path} holds no passphrase`);
  return line;
}

async function promptPassphrase(create: boolean): Promise<string> {
  if (!create) return await readHidden("Passphrase: ");
  const first = await readHidden("New passphrase for the sherlock store: ");
  const second = await readHidden("Repeat it: ");
  if (first !== second) {
    throw new UsageError("the two passphrases differ; nothing was created");
  }
  return first;
}

/**
 * The broker's socket when a broker answers on it; otherwise says that
 * nobody is logged in and returns undefined (logout and whoami never start
 * a broker just to find it locked).
 */
async function runningBrokerSocket(): Promise<string | undefined> {
  const socket = commandContext().paths.socket;
  if ((await brokerHealth(socket)) !== undefined) return socket;
  printLine("not logged in (the broker is not running)");
  return undefined;
}
