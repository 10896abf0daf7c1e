/**
 * `sherlock login`, `sherlock logout` and `sherlock whoami`.
 *
 * login unlocks the local secret store in the broker (the first login
 * creates it and asks for the passphrase twice). On a terminal the
 * passphrase is read without echo; otherwise from stdin (its first line) or
 * from `--passphrase-file` (e.g. /dev/fd/3). sherlock never prompts when
 * nobody can answer. `--remember` then keeps a key that unlocks the store
 * in the OS keyring, `--forget` removes it, `--change-passphrase` asks
 * for a new passphrase after the login.
 *
 * @module
 */

import {
  brokerHealth,
  changePassphrase,
  ensureBroker,
  login,
  logout,
  remember,
  whoami,
} from "../broker/client.ts";
import {
  type LoginAnswer,
  MIN_PASSPHRASE_LENGTH,
  type RememberAnswer,
} from "../broker/protocol.ts";
import { ExitCode, UsageError, WrongPassphraseError } from "../errors.ts";
import { describeFsError } from "../private_files.ts";
import { describeLogin, loginDetails, loginJson } from "./login_text.ts";
import { chooseLogin, oidcLoginCommand } from "./login_oidc.ts";
import type { WhoamiJson } from "./json_shapes.ts";
import { COMMANDS, flagWords, type ParsedArguments } from "./commands.ts";
import type { CommandContext } from "./context.ts";
import { type Printer, printer } from "./output.ts";
import { readHidden, readStdin, stdinIsTerminal } from "./terminal_input.ts";

/** `sherlock login`: the OIDC provider's (login_oidc.ts) or the local store's. */
export async function loginCommand(
  parsed: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const chosen = await chooseLogin(
    flagWords(parsed, COMMANDS.login.flags),
    context,
  );
  if ("oidc" in chosen) return await oidcLoginCommand(chosen.oidc, context);
  const { passphraseFile, action } = parseLocalLogin(chosen.local);
  const { paths } = context;
  if (action === "forget") {
    await ensureBroker({ socket: paths.socket, logFile: paths.brokerLog });
    return forgot(await remember(paths.socket, false), out);
  }
  if (action === "change-passphrase") {
    return await changePassphraseCommand(paths, out);
  }
  // Input that needs no prompt is read first: a login that cannot work
  // fails at once, without starting a daemon.
  const given = passphraseFile !== undefined
    ? await readPassphraseFile(passphraseFile)
    : stdinIsTerminal()
    ? undefined
    : await readStdin("passphrase", { firstLine: true });
  const socket = paths.socket;
  await ensureBroker({ socket, logFile: paths.brokerLog });
  await passphraseLogin({ socket, given, out });
  if (action === "remember") {
    const answer = await remember(socket, true);
    out.line(
      `remembered: the ${answer.keyring} keyring keeps a key that unlocks the store; "sherlock login --forget" removes it`,
    );
  }
  return 0;
}

/** What `sherlock login` (the local store's) was asked to do. */
interface LocalLogin {
  passphraseFile?: string;
  action?: "remember" | "forget" | "change-passphrase";
}

const LOCAL_USAGE =
  "usage: sherlock login [--passphrase-file PATH] [--remember | --forget | --change-passphrase]";

/** The local login's flags: one action at most, and `--passphrase-file`. */
function parseLocalLogin(args: readonly string[]): LocalLogin {
  const result: LocalLogin = {};
  for (let index = 0; index < args.length; index++) {
    const arg = args[index];
    if (arg === "--passphrase-file" && index + 1 < args.length) {
      if (result.passphraseFile !== undefined) {
        throw new UsageError(LOCAL_USAGE);
      }
      result.passphraseFile = args[++index];
    } else if (
      arg === "--remember" || arg === "--forget" ||
      arg === "--change-passphrase"
    ) {
      if (result.action !== undefined) throw new UsageError(LOCAL_USAGE);
      result.action = arg.slice(2) as LocalLogin["action"];
    } else {
      throw new UsageError(LOCAL_USAGE);
    }
  }
  if (result.action === "forget" && result.passphraseFile !== undefined) {
    throw new UsageError("--forget needs no passphrase");
  }
  if (
    result.action === "change-passphrase" && result.passphraseFile !== undefined
  ) {
    throw new UsageError(
      "--change-passphrase reads the current and the new passphrase from the terminal, or as two lines on stdin",
    );
  }
  return result;
}

/**
 * Logs in with the passphrase `given`, or asks for it on the terminal
 * (creating the store when there is none), and prints the login.
 */
async function passphraseLogin(
  options: { socket: string; given: string | undefined; out: Printer },
): Promise<LoginAnswer> {
  const { socket, given, out } = options;
  const before = await whoami(socket);
  const create = !before.storeExists;
  // A remembered key that no longer opens the store: say so once, then ask.
  if (before.remembered?.state === "wrong" && before.remembered.reason) {
    out.warning(before.remembered.reason);
  }
  if (given !== undefined) {
    return loggedIn(
      await loginWith({ socket, passphrase: given, create }),
      out,
    );
  }
  // On a terminal a mistake costs a retry, not the command (as sudo does).
  for (let attempt = 1;; attempt++) {
    const passphrase = create
      ? await promptNewPassphrase(out)
      : await readHidden("Passphrase: ");
    try {
      return loggedIn(await loginWith({ socket, passphrase, create }), out);
    } catch (error) {
      if (!(error instanceof WrongPassphraseError) || attempt >= TRIES) {
        throw error;
      }
      out.warning(`${error.message}; try again`);
    }
  }
}

/**
 * `sherlock login --change-passphrase`: the current passphrase (a login),
 * then the new one, twice on a terminal; without a terminal, two lines on
 * stdin. The store keeps its data key, so a remembered key stays valid.
 */
async function changePassphraseCommand(
  paths: { socket: string; brokerLog: string },
  out: Printer,
): Promise<number> {
  let given: [string, string] | undefined;
  if (!stdinIsTerminal()) {
    const lines = (await readStdin("passphrase")).split(/\r?\n/);
    if (lines.length < 2 || lines[1] === "") {
      throw new UsageError(
        "no new passphrase: stdin must hold two lines, the current passphrase and the new one",
      );
    }
    given = [lines[0], lines[1]];
  }
  const socket = paths.socket;
  await ensureBroker({ socket, logFile: paths.brokerLog });
  const answer = await passphraseLogin({ socket, given: given?.[0], out });
  if (!answer.storeUnlocked || answer.created) {
    throw new UsageError(
      answer.created
        ? "the store was just created with that passphrase; nothing to change"
        : "the local store is not unlocked",
    );
  }
  const next = given?.[1] ?? await promptNewPassphrase(out);
  const short = tooShort(next);
  if (short !== undefined) throw new UsageError(short);
  await changePassphrase(socket, next);
  out.line(
    "changed the passphrase; a key the keyring remembers still unlocks the store",
  );
  return 0;
}

/** What `login --forget` did, in one line. */
function forgot(answer: RememberAnswer, out: Printer): number {
  const item = answer.removedItem
    ? `removed the remembered key from the ${answer.keyring} keyring`
    : `the ${answer.keyring} keyring held no remembered key`;
  out.line(
    answer.slotKept
      ? `${item}; the locked store keeps its slot, which nothing opens any more, until the next "sherlock login --forget" while logged in`
      : `${item}; the next broker start asks for the passphrase`,
  );
  return 0;
}

/** `sherlock logout`. */
export async function logoutCommand(
  _args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const socket = await runningBrokerSocket(context);
  if (socket === undefined) return 0;
  const before = await whoami(socket);
  const answer = await logout(socket);
  if (answer.revokedAtProvider !== undefined) {
    out.line(
      answer.revokedAtProvider
        ? "logged out: the provider revoked the login; the store is locked and cached tokens are dropped"
        : "logged out: the login is forgotten (the provider took no revocation); the store is locked and cached tokens are dropped",
    );
    return 0;
  }
  out.line(
    before.loggedIn
      ? "logged out: the store is locked and cached tokens are dropped"
      : "was not logged in: the store was already locked",
  );
  return 0;
}

/**
 * `sherlock whoami [--verbose | --json]`: exit 0 when logged in, 77 when
 * not.
 */
export async function whoamiCommand(
  args: ParsedArguments,
  context: CommandContext,
): Promise<number> {
  const out = printer(context);
  const verbose = args.has("--verbose");
  if (args.has("--json")) {
    if (verbose) throw new UsageError("give --verbose or --json, not both");
    return await whoamiJson(context);
  }
  const socket = await runningBrokerSocket(context);
  if (socket === undefined) return ExitCode.NoPermission;
  const who = await whoami(socket);
  out.line(describeLogin(who));
  if (verbose) {
    for (const line of loginDetails(who)) out.line(line);
  }
  return who.loggedIn ? 0 : ExitCode.NoPermission;
}

/** `sherlock whoami --json`: the same exit codes, the login as JSON. */
async function whoamiJson(context: CommandContext): Promise<number> {
  const out = printer(context);
  const socket = context.paths.socket;
  const running = (await brokerHealth(socket)) !== undefined;
  const who = running ? await whoami(socket) : undefined;
  const shape: WhoamiJson = { brokerRunning: running, ...loginJson(who) };
  out.json(shape);
  return who?.loggedIn ? 0 : ExitCode.NoPermission;
}

/** How often a terminal may be asked for a passphrase in one login. */
const TRIES = 3;

async function loginWith(
  options: { socket: string; passphrase: string; create: boolean },
): Promise<LoginAnswer> {
  const { socket, passphrase, create } = options;
  if (passphrase === "") throw new UsageError("no passphrase was given");
  const short = create ? tooShort(passphrase) : undefined;
  if (short !== undefined) throw new UsageError(short);
  return await login(socket, { passphrase, create });
}

function loggedIn(answer: LoginAnswer, out: Printer): LoginAnswer {
  out.line(
    `${answer.created ? "created the store; " : ""}logged in: ${
      describeLogin(answer)
    }`,
  );
  return answer;
}

/** Why a new store's passphrase is refused, or undefined. */
function tooShort(passphrase: string): string | undefined {
  return passphrase.length < MIN_PASSPHRASE_LENGTH
    ? `the passphrase is too short: a new store needs at least ${MIN_PASSPHRASE_LENGTH} characters`
    : undefined;
}

/**
 * At most this much is read from `--passphrase-file`: the passphrase is its
 * first line, and a path such as /dev/zero never ends.
 */
const MAX_PASSPHRASE_FILE_BYTES = 64 * 1024;

/**
 * The first line of `path`. A pipe or FIFO is fine (e.g. /dev/fd/3): the
 * read stops at the first line end, and refuses input that has none within
 * {@linkcode MAX_PASSPHRASE_FILE_BYTES}.
 */
async function readPassphraseFile(path: string): Promise<string> {
  let bytes: Uint8Array;
  try {
    using file = await Deno.open(path);
    bytes = await readUntilLineEnd(file, MAX_PASSPHRASE_FILE_BYTES);
  } catch (error) {
    throw new UsageError(
      `cannot read the passphrase from ${path}: ${describeFsError(error)}`,
    );
  }
  const end = bytes.indexOf(0x0a);
  if (end === -1 && bytes.length >= MAX_PASSPHRASE_FILE_BYTES) {
    throw new UsageError(
      `${path}: no line end in its first 64 KiB; the passphrase must be its first line`,
    );
  }
  const text = new TextDecoder("utf-8", { ignoreBOM: true })
    .decode(end === -1 ? bytes : bytes.subarray(0, end));
  bytes.fill(0); // No copy of the passphrase left in the buffer.
  // As before: the line ends at "\n" or "\r\n".
  const line = end !== -1 && text.endsWith("\r") ? text.slice(0, -1) : text;
  if (line === "") throw new UsageError(`${path} holds no passphrase`);
  return line;
}

/** Reads until a line end, the end of input, or `limit` bytes. */
async function readUntilLineEnd(
  file: Deno.FsFile,
  limit: number,
): Promise<Uint8Array> {
  const buffer = new Uint8Array(limit);
  let length = 0;
  while (length < limit) {
    const count = await file.read(buffer.subarray(length));
    if (count === null) break;
    const newline = buffer.subarray(length, length + count).includes(0x0a);
    length += count;
    if (newline) break;
  }
  return buffer.subarray(0, length);
}

/**
 * A new store's passphrase, typed twice. A passphrase that is too short is
 * refused before it is repeated; each mistake asks again, {@linkcode TRIES}
 * times in all.
 */
async function promptNewPassphrase(out: Printer): Promise<string> {
  for (let attempt = 1;; attempt++) {
    const first = await readHidden("New passphrase for the sherlock store: ");
    let problem = first === "" ? "no passphrase was given" : tooShort(first);
    if (problem === undefined) {
      const second = await readHidden("Repeat it: ");
      if (first === second) return first;
      problem = "the two passphrases differ";
    }
    if (attempt >= TRIES) {
      throw new UsageError(`${problem}; nothing was created`);
    }
    out.warning(`${problem}; try again`);
  }
}

/**
 * The broker's socket when a broker answers on it; otherwise says that
 * nobody is logged in and returns undefined (logout and whoami never start
 * a broker just to find it locked).
 */
async function runningBrokerSocket(
  context: CommandContext,
): Promise<string | undefined> {
  const socket = context.paths.socket;
  if ((await brokerHealth(socket)) !== undefined) return socket;
  const out = printer(context);
  out.line("not logged in (the broker is not running)");
  return undefined;
}
