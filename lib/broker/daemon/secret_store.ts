/**
 * The `local` login provider's secret store: one file, AES-256-GCM under a
 * key that scrypt derives from the operator's passphrase. Only the daemon
 * imports it, and keeps the key (never the passphrase) while logged in. The
 * header is authenticated with the ciphertext and carries a key check, so
 * that a wrong passphrase is told from a damaged file without making a guess
 * cheaper; writes are atomic; no message or log line holds a secret. Format,
 * parameters and their cost: `docs/secret_store.md`.
 *
 * @module
 */

import { Buffer } from "node:buffer";
import {
  createCipheriv,
  createDecipheriv,
  createHmac,
  randomBytes,
  scrypt,
  timingSafeEqual,
} from "node:crypto";
import { ExitCode, SherlockError } from "../../errors.ts";
import { NAME_PATTERN } from "../../config/names.ts";
import { dirname, join } from "../../runtime/path.ts";
import {
  describeFsError,
  ensurePrivateParent,
  removeDeadTemporariesOf,
  removeIfPresent,
  writeFileExclusively,
  writePrivateFile,
} from "../../private_files.ts";

/** The scrypt cost parameters of a store (RFC 7914 names). */
export interface ScryptParams {
  /** CPU/memory cost: a power of two. Memory used is 128 · N · r bytes. */
  readonly N: number;
  /** Block size. */
  readonly r: number;
  /** Parallelization. */
  readonly p: number;
}

/**
 * The KDF parameters of new stores: OWASP's recommended minimum for scrypt
 * (128 MiB per derivation; its time is measured in `docs/secret_store.md`).
 * Raising them later is safe: every store records its own parameters.
 */
export const DEFAULT_SCRYPT_PARAMS: Readonly<ScryptParams> = Object.freeze({
  N: 2 ** 17,
  r: 8,
  p: 1,
});

/**
 * The newest file format version this module reads and writes. A store is
 * written as version 1 until it needs key slots (a remembered key, a
 * changed passphrase), then as version 2: `docs/secret_store.md`.
 */
export const STORE_FORMAT_VERSION = 2;

/** The length of a remembered key (`SecretStore.setRememberedKey`), in bytes. */
export const REMEMBERED_KEY_BYTES = 32;

/** The longest secret value accepted, in UTF-16 code units (64 KiB). */
export const MAX_SECRET_VALUE_LENGTH = 64 * 1024;

/** One secret's metadata, as {@linkcode SecretStore.list} returns it. */
export interface SecretInfo {
  /** The secret's name: the service it belongs to. */
  readonly name: string;
  /** When the secret was first set (RFC 3339, UTC, milliseconds). */
  readonly created: string;
  /** When the secret's value was last set (RFC 3339, UTC, milliseconds). */
  readonly updated: string;
}

/**
 * An unlocked secret store. Obtained from {@linkcode createStore} or
 * {@linkcode unlockStore}; every method but `lock` throws
 * {@linkcode StoreLockedError} once {@linkcode SecretStore.lock} was called.
 */
export interface SecretStore {
  readonly path: string;
  /** When the store was created (RFC 3339, UTC, milliseconds). */
  readonly createdAt: string;
  /** The scrypt parameters this store's key was derived with. */
  readonly kdf: Readonly<ScryptParams>;
  /**
   * The store's identity, base64: the same across passphrase changes and
   * remembered keys (a version 1 store's salt, kept as its version 2 id).
   */
  readonly id: string;
  /** Whether the store holds a remembered-key slot (format version 2). */
  readonly remembered: boolean;
  /** Whether {@linkcode SecretStore.lock} was called. */
  readonly locked: boolean;
  /** Every secret's name and times, sorted by name; never the values. */
  list(): SecretInfo[];
  /** A secret's value, or undefined when there is none by that name. */
  get(name: string): string | undefined;
  /**
   * Sets a secret's value and writes the store to disk atomically. A new
   * secret gets `created` = `updated` = now; an existing one keeps its
   * `created`. When the write fails, nothing changes, on disk or in memory.
   */
  set(name: string, value: string): Promise<void>;
  /**
   * Removes a secret and writes the store to disk atomically. Resolves to
   * false (and writes nothing) when there was no secret by that name.
   */
  remove(name: string): Promise<boolean>;
  /**
   * Reads the file again, under the store's lock: `get` then answers what
   * another daemon sharing the store wrote since.
   */
  reload(): Promise<void>;
  /**
   * Compare-and-swap of one secret: under the store's lock, with the file
   * read again, `change` gets the value on disk now and returns the value
   * to write, or undefined to write nothing (so a daemon never overwrites
   * what another one wrote meanwhile with what it last saw). Resolves to
   * whether it wrote; a failed write changes nothing, as with `set`.
   */
  update(
    name: string,
    change: (current: string | undefined) => string | undefined,
  ): Promise<boolean>;
  /**
   * Runs `work` holding `<store>.<topic>.lock` exclusively: of all the
   * daemons sharing this store, one at a time runs work of one topic. Not
   * the store's own lock, so `work` may read and write the store (and
   * other topics' work and other writes go on meanwhile). `topic` is
   * lowercase letters, digits, '.', '-' and '_'.
   */
  exclusively<T>(topic: string, work: () => Promise<T>): Promise<T>;
  /**
   * Writes (given a key of {@linkcode REMEMBERED_KEY_BYTES} random bytes)
   * or removes (given undefined) the store's remembered-key slot: its data
   * key wrapped under `key`, which the OS keyring keeps. Upgrades a
   * version 1 store to version 2. Atomic, under the store's lock, like
   * `set`; a failed write changes nothing.
   */
  setRememberedKey(key: Uint8Array | undefined): Promise<void>;
  /**
   * Protects the store with a new passphrase: a new salt and passphrase
   * slot, the same data key, so a remembered key stays valid. Upgrades a
   * version 1 store to version 2. Atomic, like `set`.
   */
  changePassphrase(
    passphrase: string,
    options?: { kdf?: ScryptParams },
  ): Promise<void>;
  /**
   * Forgets the key and the secrets: zeroes the key's bytes and drops the
   * entries. Idempotent. JavaScript strings cannot be zeroed, so values that
   * were read remain in the heap until collected.
   */
  lock(): void;
}

/** Options for {@linkcode createStore}. */
export interface CreateStoreOptions {
  /** The KDF parameters (default {@linkcode DEFAULT_SCRYPT_PARAMS}). */
  kdf?: ScryptParams;
  /** The clock (default: the system clock); for tests. */
  now?: () => Date;
}

/** Options for {@linkcode unlockStore}. */
export interface UnlockStoreOptions {
  /** The clock used for later `set` calls (default: the system clock). */
  now?: () => Date;
}

/** The `code` of every {@linkcode SecretStoreError}, one per subclass. */
export type SecretStoreErrorCode =
  | "not-found"
  | "exists"
  | "wrong-passphrase"
  | "corrupt"
  | "newer-version"
  | "locked"
  | "invalid-name"
  | "invalid-value"
  | "invalid-passphrase"
  | "wrong-remembered-key"
  | "read-failed"
  | "write-failed";

/**
 * Any failure of the secret store. `code` tells the daemon which one it is
 * (to map it to an HTTP status); `exitCode` is the CLI's. The message never
 * contains a secret value or the passphrase.
 */
export class SecretStoreError extends SherlockError {
  readonly code: SecretStoreErrorCode;

  /** Creates a secret store error. */
  constructor(
    message: string,
    init: { code: SecretStoreErrorCode; exitCode: number; cause?: unknown },
  ) {
    super(message, init.exitCode);
    this.name = "SecretStoreError";
    this.code = init.code;
    if (init.cause !== undefined) this.cause = init.cause;
  }
}

/** {@linkcode unlockStore} found no file: run `sherlock login` to create one. */
export class StoreNotFoundError extends SecretStoreError {
  /** Creates the error for the store at `path`. */
  constructor(path: string) {
    super(
      `no secret store at ${path}; run \`sherlock login\` to create one`,
      { code: "not-found", exitCode: ExitCode.NoPermission },
    );
    this.name = "StoreNotFoundError";
  }
}

/** {@linkcode createStore} found something at the path already. */
export class StoreExistsError extends SecretStoreError {
  /** Creates the error for the store at `path`. */
  constructor(path: string) {
    super(
      `a secret store already exists at ${path}; unlock it instead, or move it away to start a new one`,
      { code: "exists", exitCode: ExitCode.CantCreate },
    );
    this.name = "StoreExistsError";
  }
}

/**
 * The passphrase does not open a well-formed store. (An attacker who changed
 * the salt or the KDF parameters in the header causes this too: the key
 * derived from them cannot match.)
 */
export class WrongPassphraseError extends SecretStoreError {
  /** Creates the error for the store at `path`. */
  constructor(path: string) {
    super(`wrong passphrase for the secret store ${path}`, {
      code: "wrong-passphrase",
      exitCode: ExitCode.NoPermission,
    });
    this.name = "WrongPassphraseError";
  }
}

/**
 * The file is not a store this sherlock can read: unparseable, truncated, a
 * bad header, or contents that fail authentication although the passphrase
 * is right (damaged or altered). The file is left as it was.
 */
export class CorruptStoreError extends SecretStoreError {
  /** Creates the error; `reason` says what is wrong, without secrets. */
  constructor(path: string, reason: string) {
    super(
      `the secret store ${path} is damaged (${reason}); it was left unchanged`,
      { code: "corrupt", exitCode: ExitCode.Config },
    );
    this.name = "CorruptStoreError";
  }
}

/** The store was written by a newer sherlock, in a format this one cannot read. */
export class NewerStoreError extends SecretStoreError {
  /** The store's format version. */
  readonly version: number;
  /** The newest format version this sherlock reads. */
  readonly supported: number;

  /** Creates the error for a store of format `version`. */
  constructor(path: string, version: number) {
    super(
      `the secret store ${path} has format version ${version}, newer than this sherlock reads (${STORE_FORMAT_VERSION}); upgrade sherlock`,
      { code: "newer-version", exitCode: ExitCode.Config },
    );
    this.name = "NewerStoreError";
    this.version = version;
    this.supported = STORE_FORMAT_VERSION;
  }
}

/**
 * A remembered key does not open the store: the store has no remembered
 * slot (it was forgotten, or the file was replaced), or the keyring's item
 * is stale or wrong. The store is unchanged; the passphrase still opens it.
 */
export class WrongRememberedKeyError extends SecretStoreError {
  /** Creates the error; `reason` says which, without secrets. */
  constructor(path: string, reason: string) {
    super(
      `the keyring's remembered key does not open the secret store ${path} (${reason}); log in with the passphrase, and run \`sherlock login --remember\` again to remember it anew`,
      { code: "wrong-remembered-key", exitCode: ExitCode.NoPermission },
    );
    this.name = "WrongRememberedKeyError";
  }
}

/** The store was used after {@linkcode SecretStore.lock}. */
export class StoreLockedError extends SecretStoreError {
  /** Creates the error. */
  constructor() {
    super("the secret store is locked; run `sherlock login`", {
      code: "locked",
      exitCode: ExitCode.NoPermission,
    });
    this.name = "StoreLockedError";
  }
}

/**
 * A secret name is not a service name. The offending name is not repeated:
 * it might be a token pasted in the wrong place.
 */
export class InvalidSecretNameError extends SecretStoreError {
  /** Creates the error. */
  constructor() {
    super(
      "invalid secret name: use the service's name (lowercase letters, digits, '-' and '_', starting with a letter or digit)",
      { code: "invalid-name", exitCode: ExitCode.Usage },
    );
    this.name = "InvalidSecretNameError";
  }
}

/** A secret value is empty, too long or not a string. */
export class InvalidSecretValueError extends SecretStoreError {
  /** Creates the error; `reason` never quotes the value. */
  constructor(reason: string) {
    super(`invalid secret value: ${reason}`, {
      code: "invalid-value",
      exitCode: ExitCode.Usage,
    });
    this.name = "InvalidSecretValueError";
  }
}

/** A passphrase for a new store is empty or not a string. */
export class InvalidPassphraseError extends SecretStoreError {
  /** Creates the error; `reason` never quotes the passphrase. */
  constructor(reason: string) {
    super(`invalid passphrase: ${reason}`, {
      code: "invalid-passphrase",
      exitCode: ExitCode.Usage,
    });
    this.name = "InvalidPassphraseError";
  }
}

/** Reading the store failed (e.g. permission denied); it was not changed. */
export class StoreReadError extends SecretStoreError {
  /** Creates the error; `cause` is the file-system failure. */
  constructor(path: string, cause: unknown) {
    super(
      `cannot read the secret store ${path} (${describeFsError(cause)})`,
      { code: "read-failed", exitCode: ExitCode.Config, cause },
    );
    this.name = "StoreReadError";
  }
}

/** Writing the store failed; the old file and the store in memory are intact. */
export class StoreWriteError extends SecretStoreError {
  /** Creates the error; `cause` is the file-system failure. */
  constructor(path: string, cause: unknown) {
    // private_files.ts already names the path and the reason.
    const what = cause instanceof SherlockError
      ? cause.message
      : `cannot write the secret store ${path}: ${describeFsError(cause)}`;
    super(
      `${what}; the secret store was left as it was`,
      { code: "write-failed", exitCode: ExitCode.CantCreate, cause },
    );
    this.name = "StoreWriteError";
  }
}

/**
 * Whether anything (a file, a folder, even a dangling symlink) is at `path`.
 * False also when a parent is not a folder. Throws the file-system error
 * when that cannot be told (e.g. a parent folder that cannot be searched).
 */
export function storeExists(path: string): boolean {
  try {
    Deno.lstatSync(path);
    return true;
  } catch (error) {
    if (isMissing(error)) return false;
    throw error;
  }
}

/**
 * Creates a new, empty store at `path` protected by `passphrase`: creates the
 * parent folder 0700 if needed, derives a key from a fresh random salt, and
 * writes the file 0600. Refuses with {@linkcode StoreExistsError} when
 * anything is at `path` already; never overwrites.
 *
 * The passphrase is NFC-normalized before use, so the same characters typed
 * on different systems give the same key.
 */
export async function createStore(
  path: string,
  passphrase: string,
  options: CreateStoreOptions = {},
): Promise<SecretStore> {
  const kdf = options.kdf ?? DEFAULT_SCRYPT_PARAMS;
  const kdfProblem = scryptParamsProblem(kdf);
  if (kdfProblem) throw new RangeError(`scrypt parameters: ${kdfProblem}`);
  if (typeof passphrase !== "string") {
    throw new InvalidPassphraseError("it must be a string");
  }
  if (passphrase.normalize("NFC").length === 0) {
    throw new InvalidPassphraseError("it must not be empty");
  }
  if (storeExists(path)) throw new StoreExistsError(path);
  removeLeftovers(path, { locked: false });
  try {
    ensurePrivateParent(path);
  } catch (error) {
    throw new StoreWriteError(path, error);
  }
  const now = options.now ?? systemNow;
  const salt = randomBytes(SALT_BYTES);
  const keys = await deriveKeys(passphrase, { salt, kdf });
  const header: FixedHeader = {
    version: 1,
    kdf: { N: kdf.N, r: kdf.r, p: kdf.p, salt: salt.toString("base64") },
    check: keyCheck(keys.check).toString("base64"),
  };
  keys.check.fill(0);
  const contents: StoreContents = {
    created: timestamp(now()),
    entries: new Map(),
  };
  try {
    // The KDF took a while: refuse a file that appeared meanwhile, and
    // publish with link(), which fails rather than replace one that appears
    // in the very last moment.
    if (storeExists(path)) throw new StoreExistsError(path);
    writeStore(path, {
      key: keys.encryption,
      header,
      contents,
      exclusive: true,
    });
  } catch (error) {
    keys.encryption.fill(0);
    throw error;
  }
  return new UnlockedStore({
    path,
    header,
    key: keys.encryption,
    contents,
    now,
  });
}

/**
 * Opens the store at `path` with `passphrase`. Reads the file and never
 * changes its bytes; on success, a file readable by others is narrowed to
 * 0600. Throws {@linkcode StoreNotFoundError}, {@linkcode StoreReadError},
 * {@linkcode CorruptStoreError} (checked before the slow KDF runs, where
 * possible), {@linkcode NewerStoreError}, {@linkcode WrongPassphraseError}, or
 * {@linkcode InvalidPassphraseError} for a passphrase that is not a string.
 * After any failure the file is unchanged and another call (with the right
 * passphrase) works: nothing is cached between calls.
 */
export async function unlockStore(
  path: string,
  passphrase: string,
  options: UnlockStoreOptions = {},
): Promise<SecretStore> {
  if (typeof passphrase !== "string") {
    throw new InvalidPassphraseError("it must be a string");
  }
  removeLeftovers(path, { locked: false });
  const file = await readStoreFile(path);
  const parsed = parseStoreFile(path, file.bytes);
  const slot = passphraseSlotOf(parsed.header);
  const keys = await deriveKeys(passphrase, {
    salt: Buffer.from(slot.kdf.salt, "base64"),
    kdf: slot.kdf,
  });
  const checkMatches = timingSafeEqual(
    keyCheck(keys.check),
    Buffer.from(slot.check, "base64"),
  );
  keys.check.fill(0);
  if (!checkMatches) {
    keys.encryption.fill(0);
    throw new WrongPassphraseError(path);
  }
  let key = keys.encryption;
  if (parsed.header.version === 2) {
    // Version 2: the passphrase's key only unwraps the data key.
    const unwrapped = unwrapKey(keys.encryption, {
      wrapped: parsed.header.passphrase.key,
      label: slotLabel("passphrase", parsed.header.id),
    });
    keys.encryption.fill(0);
    if (unwrapped === undefined) {
      throw new CorruptStoreError(
        path,
        "the passphrase is right, but its key slot fails authentication: the file was altered or damaged",
      );
    }
    key = unwrapped;
  }
  return openParsed({
    path,
    parsed,
    key,
    mode: file.mode,
    now: options.now ?? systemNow,
    failed:
      "the passphrase is right, but the contents fail authentication: the file was altered or damaged",
  });
}

/**
 * Opens the store at `path` with a remembered key (from the OS keyring)
 * instead of the passphrase: no KDF runs. Throws
 * {@linkcode WrongRememberedKeyError} when the store has no remembered
 * slot or `key` does not unwrap it (a stale or wrong keyring item), and
 * the errors of {@linkcode unlockStore} for a missing, unreadable, corrupt
 * or newer file. Never changes the file's bytes.
 */
export async function unlockStoreWithKey(
  path: string,
  rememberedKey: Uint8Array,
  options: UnlockStoreOptions = {},
): Promise<SecretStore> {
  removeLeftovers(path, { locked: false });
  const file = await readStoreFile(path);
  const parsed = parseStoreFile(path, file.bytes);
  const header = parsed.header;
  if (header.version !== 2 || header.remembered === undefined) {
    throw new WrongRememberedKeyError(path, "the store has no remembered key");
  }
  if (rememberedKey.length !== REMEMBERED_KEY_BYTES) {
    throw new WrongRememberedKeyError(path, "the item is not a key");
  }
  const kek = Buffer.from(rememberedKey);
  const key = unwrapKey(kek, {
    wrapped: header.remembered,
    label: slotLabel("remembered", header.id),
  });
  kek.fill(0);
  if (key === undefined) {
    throw new WrongRememberedKeyError(
      path,
      "the item is stale or belongs to another store",
    );
  }
  return openParsed({
    path,
    parsed,
    key,
    mode: file.mode,
    now: options.now ?? systemNow,
    failed:
      "the remembered key is right, but the contents fail authentication: the file was altered or damaged",
  });
}

/** What can be told about a store without a key. */
export interface StoreSummary {
  /** The format version. */
  readonly version: number;
  /** The store's identity (see {@linkcode SecretStore.id}). */
  readonly id: string;
  /** Whether it holds a remembered-key slot. */
  readonly remembered: boolean;
}

/**
 * Reads the store's header, without a key: its version, identity and
 * whether a remembered key can open it. Throws as {@linkcode unlockStore}
 * does for a missing, unreadable, corrupt or newer file.
 */
export async function readStoreSummary(path: string): Promise<StoreSummary> {
  const file = await readStoreFile(path);
  const header = parseStoreFile(path, file.bytes).header;
  return {
    version: header.version,
    id: storeIdOf(header),
    remembered: header.version === 2 && header.remembered !== undefined,
  };
}

/**
 * Whether the store at `path` has a remembered-key slot, read at once
 * (for whoami); false when there is no readable, well-formed store.
 */
export function storeHasRememberedKey(path: string): boolean {
  try {
    const info = Deno.lstatSync(path);
    if (!info.isFile || info.size > MAX_FILE_BYTES) return false;
    const header = parseStoreFile(path, Deno.readFileSync(path)).header;
    return header.version === 2 && header.remembered !== undefined;
  } catch {
    return false;
  }
}

/** Decrypts a parsed file with its data key and makes the store. */
function openParsed(
  options: {
    path: string;
    parsed: ParsedStoreFile;
    key: Buffer;
    mode: number | null;
    now: () => Date;
    /** The reason when the contents fail authentication. */
    failed: string;
  },
): SecretStore {
  const { path, parsed, key, mode } = options;
  let plaintext: Buffer;
  try {
    plaintext = decrypt(key, parsed);
  } catch {
    key.fill(0);
    throw new CorruptStoreError(path, options.failed);
  }
  let contents: StoreContents;
  try {
    contents = parseContents(path, plaintext);
  } catch (error) {
    key.fill(0);
    throw error;
  } finally {
    plaintext.fill(0);
  }
  if (mode !== null && (mode & 0o077) !== 0) {
    try {
      Deno.chmodSync(path, 0o600);
    } catch {
      // Best effort: the next write creates the file 0600 anyway.
    }
  }
  return new UnlockedStore({
    path,
    header: parsed.header,
    key,
    contents,
    now: options.now,
  });
}

// ---------------------------------------------------------------------------
// Internals.

/** The first line's `format`: every version of the store keeps it. */
const FORMAT_NAME = "sherlock-secrets";
/** The KDF name in a version 1 header. */
const KDF_NAME = "scrypt";
/** The cipher name in a version 1 header. */
const CIPHER_NAME = "aes-256-gcm";
const SALT_BYTES = 16;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const KEY_BYTES = 32;
const CHECK_BYTES = 32;
/** A wrapped key in a version 2 slot: IV, the 32-byte key, GCM tag. */
const WRAPPED_KEY_BYTES = IV_BYTES + KEY_BYTES + TAG_BYTES;
/** The HMAC message whose MAC is the header's `check`. */
const CHECK_LABEL = "sherlock-secrets v1 key check";
/** Larger files are refused unread: a store of secrets is a few KiB. */
const MAX_FILE_BYTES = 16 * 1024 * 1024;

/** Bounds on KDF parameters read from a file, so a bad one cannot hang us. */
const MIN_LOG2_N = 10;
const MAX_LOG2_N = 20;
const MAX_R = 32;
const MAX_P = 16;
/** 128 · N · r: the memory scrypt needs. */
const MAX_KDF_MEMORY = 1024 * 1024 * 1024;
/** N · r · p: proportional to the time scrypt needs (16× the default). */
const MAX_KDF_WORK = 2 ** 24;

/** A version 1 header's KDF part. */
interface KdfHeader extends ScryptParams {
  /** The salt, base64. */
  readonly salt: string;
}

/** The parts of a version 1 header that stay the same across writes. */
interface FixedHeaderV1 {
  readonly version: 1;
  readonly kdf: KdfHeader;
  /** The key check value, base64. */
  readonly check: string;
}

/** A version 2 passphrase slot: a version 1 header's KDF and check, and the wrapped data key. */
interface PassphraseSlot {
  readonly kdf: KdfHeader;
  /** The key check value, base64. */
  readonly check: string;
  /** The data key wrapped under the passphrase's key (IV, key, tag), base64. */
  readonly key: string;
}

/** The parts of a version 2 header that stay the same across writes. */
interface FixedHeaderV2 {
  readonly version: 2;
  /** The store's identity, base64 (a version 1 store's salt when upgraded). */
  readonly id: string;
  readonly passphrase: PassphraseSlot;
  /** The data key wrapped under the remembered key, base64, if one is kept. */
  readonly remembered?: string;
}

/** A header of either version, without its IV. */
type FixedHeader = FixedHeaderV1 | FixedHeaderV2;

/** A parsed store file, before decryption. */
interface ParsedStoreFile {
  readonly header: FixedHeader;
  /** The first line's exact bytes: the GCM AAD. */
  readonly aad: Buffer;
  readonly iv: Buffer;
  readonly ciphertext: Buffer;
  readonly tag: Buffer;
}

/** One secret as stored. */
interface Entry {
  readonly value: string;
  readonly created: string;
  readonly updated: string;
}

/** The decrypted contents. */
interface StoreContents {
  readonly created: string;
  readonly entries: Map<string, Entry>;
}

/** The two keys scrypt's 64-byte output is split into. */
interface DerivedKeys {
  /** The AES-256-GCM key: the first 32 bytes. */
  readonly encryption: Buffer;
  /** The key of the `check` HMAC: the last 32 bytes. */
  readonly check: Buffer;
}

/** The store behind the {@linkcode SecretStore} interface. */
class UnlockedStore implements SecretStore {
  readonly path: string;
  readonly createdAt: string;
  #header: FixedHeader;
  #key: Buffer;
  #entries: Map<string, Entry>;
  #now: () => Date;
  #locked = false;

  constructor(init: {
    path: string;
    header: FixedHeader;
    key: Buffer;
    contents: StoreContents;
    now: () => Date;
  }) {
    this.path = init.path;
    this.createdAt = init.contents.created;
    this.#header = init.header;
    this.#key = init.key;
    this.#entries = init.contents.entries;
    this.#now = init.now;
  }

  get locked(): boolean {
    return this.#locked;
  }

  get kdf(): Readonly<ScryptParams> {
    const { N, r, p } = passphraseSlotOf(this.#header).kdf;
    return Object.freeze({ N, r, p });
  }

  get id(): string {
    return storeIdOf(this.#header);
  }

  get remembered(): boolean {
    return this.#header.version === 2 &&
      this.#header.remembered !== undefined;
  }

  async setRememberedKey(key: Uint8Array | undefined): Promise<void> {
    this.#assertUnlocked();
    if (key !== undefined && key.length !== REMEMBERED_KEY_BYTES) {
      throw new RangeError(
        `a remembered key is ${REMEMBERED_KEY_BYTES} random bytes`,
      );
    }
    await this.#update((draft) => {
      if (key === undefined && !this.remembered) return false;
      const v2 = upgradedDraft(draft);
      let remembered: string | undefined;
      if (key !== undefined) {
        const kek = Buffer.from(key);
        remembered = wrapKey(kek, {
          key: v2.key,
          label: slotLabel("remembered", v2.header.id),
        });
        kek.fill(0);
      }
      const { remembered: _old, ...rest } = v2.header;
      draft.header = remembered === undefined ? rest : { ...rest, remembered };
      draft.key = v2.key;
      return true;
    });
  }

  async changePassphrase(
    passphrase: string,
    options: { kdf?: ScryptParams } = {},
  ): Promise<void> {
    this.#assertUnlocked();
    const kdf = options.kdf ?? this.kdf;
    const kdfProblem = scryptParamsProblem(kdf);
    if (kdfProblem) throw new RangeError(`scrypt parameters: ${kdfProblem}`);
    if (typeof passphrase !== "string") {
      throw new InvalidPassphraseError("it must be a string");
    }
    if (passphrase.normalize("NFC").length === 0) {
      throw new InvalidPassphraseError("it must not be empty");
    }
    const salt = randomBytes(SALT_BYTES);
    const keys = await deriveKeys(passphrase, { salt, kdf });
    try {
      await this.#update((draft) => {
        const v2 = upgradedDraft(draft);
        const passphraseSlot: PassphraseSlot = {
          kdf: { N: kdf.N, r: kdf.r, p: kdf.p, salt: salt.toString("base64") },
          check: keyCheck(keys.check).toString("base64"),
          key: wrapKey(keys.encryption, {
            key: v2.key,
            label: slotLabel("passphrase", v2.header.id),
          }),
        };
        draft.header = { ...v2.header, passphrase: passphraseSlot };
        draft.key = v2.key;
        return true;
      });
    } finally {
      keys.encryption.fill(0);
      keys.check.fill(0);
    }
  }

  list(): SecretInfo[] {
    this.#assertUnlocked();
    return sortedByName(this.#entries).map(([name, entry]) => ({
      name,
      created: entry.created,
      updated: entry.updated,
    }));
  }

  get(name: string): string | undefined {
    this.#assertUnlocked();
    assertSecretName(name);
    return this.#entries.get(name)?.value;
  }

  async set(name: string, value: string): Promise<void> {
    this.#assertUnlocked();
    assertSecretName(name);
    assertSecretValue(value);
    await this.#update(({ entries }) => {
      const now = timestamp(this.#now());
      const previous = entries.get(name);
      entries.set(name, {
        value,
        created: previous?.created ?? now,
        updated: now,
      });
      return true;
    });
  }

  async remove(name: string): Promise<boolean> {
    this.#assertUnlocked();
    assertSecretName(name);
    let removed = false;
    await this.#update(({ entries }) => removed = entries.delete(name));
    return removed;
  }

  async reload(): Promise<void> {
    this.#assertUnlocked();
    await this.#update(() => false);
  }

  async update(
    name: string,
    change: (current: string | undefined) => string | undefined,
  ): Promise<boolean> {
    this.#assertUnlocked();
    assertSecretName(name);
    let wrote = false;
    await this.#update(({ entries }) => {
      const value = change(entries.get(name)?.value);
      if (value === undefined) return false;
      assertSecretValue(value);
      const now = timestamp(this.#now());
      entries.set(name, {
        value,
        created: entries.get(name)?.created ?? now,
        updated: now,
      });
      return wrote = true;
    });
    return wrote;
  }

  async exclusively<T>(topic: string, work: () => Promise<T>): Promise<T> {
    this.#assertUnlocked();
    if (!LOCK_TOPIC_PATTERN.test(topic)) {
      throw new RangeError(
        "a lock topic is lowercase letters, digits, '.', '-' and '_'",
      );
    }
    let lock: Deno.FsFile;
    try {
      lock = await Deno.open(`${this.path}.${topic}.lock`, {
        create: true,
        write: true,
        mode: 0o600,
      });
    } catch (error) {
      throw new StoreWriteError(this.path, error);
    }
    try {
      await lock.lock(true);
      return await work();
    } finally {
      lock.close();
    }
  }

  lock(): void {
    this.#key.fill(0);
    // Clear the map itself, not only this reference: whoever else still
    // holds it (an update in progress) must not keep the values alive.
    this.#entries.clear();
    this.#entries = new Map();
    this.#locked = true;
  }

  /**
   * Changes the secrets on disk, then in memory. Another daemon may share
   * the store (an SSH session without XDG_RUNTIME_DIR runs its own broker
   * beside the desktop's): under an exclusive lock on `<store>.lock`, the
   * file is read again, `change` is applied to what it holds now, and the
   * result is written, so that neither daemon loses the other's secrets.
   * `change` returns false to write nothing.
   */
  async #update(change: (draft: Draft) => boolean): Promise<void> {
    const lock = await openStoreLock(this.path);
    try {
      // Locked while waiting for the lock: the key is zeroed.
      this.#assertUnlocked();
      this.#reload();
      const draft: Draft = {
        entries: new Map(this.#entries),
        header: this.#header,
        key: this.#key,
      };
      let written = false;
      try {
        if (!change(draft)) return;
        writeStore(this.path, {
          key: draft.key,
          header: draft.header,
          contents: { created: this.createdAt, entries: draft.entries },
        });
        written = true;
      } finally {
        // A new data key (an upgrade to version 2) replaces the old one
        // only once it is on disk.
        if (draft.key !== this.#key) (written ? this.#key : draft.key).fill(0);
      }
      this.#entries = draft.entries;
      this.#header = draft.header;
      this.#key = draft.key;
    } finally {
      lock.close();
    }
  }

  /**
   * Reads the file again with the key in memory. A file that is now a
   * different store (another salt) cannot be merged with: the operator must
   * log in again. A file that is gone is written again from memory.
   */
  #reload(): void {
    let bytes: Uint8Array;
    try {
      bytes = Deno.readFileSync(this.path);
    } catch (error) {
      // Gone (the folder was removed?): the next write puts back what is
      // in memory.
      if (isMissing(error)) return;
      throw new StoreReadError(this.path, error);
    }
    const parsed = parseStoreFile(this.path, bytes);
    const replaced = (why: string) =>
      new CorruptStoreError(
        this.path,
        `${why} since the login; run \`sherlock login\` again`,
      );
    if (storeIdOf(parsed.header) !== storeIdOf(this.#header)) {
      throw replaced("it was replaced by another store");
    }
    let key = this.#key;
    if (parsed.header.version === 2 && this.#header.version === 1) {
      // Another daemon upgraded it: this daemon's version 1 key is the
      // passphrase slot's key as long as the passphrase is the same.
      if (parsed.header.passphrase.kdf.salt !== this.#header.kdf.salt) {
        throw replaced("its passphrase was changed");
      }
      const unwrapped = unwrapKey(this.#key, {
        wrapped: parsed.header.passphrase.key,
        label: slotLabel("passphrase", parsed.header.id),
      });
      if (unwrapped === undefined) {
        throw new CorruptStoreError(
          this.path,
          "its key slot fails authentication: the file was altered or damaged",
        );
      }
      key = unwrapped;
    } else if (parsed.header.version !== this.#header.version) {
      // Version 2 back to 1: an older copy was put back.
      throw replaced("it was replaced by an older copy");
    }
    let plaintext: Buffer;
    try {
      plaintext = decrypt(key, parsed);
    } catch {
      if (key !== this.#key) key.fill(0);
      throw new CorruptStoreError(
        this.path,
        "its contents fail authentication: the file was altered or damaged",
      );
    }
    try {
      this.#entries = parseContents(this.path, plaintext).entries;
    } catch (error) {
      if (key !== this.#key) key.fill(0);
      throw error;
    } finally {
      plaintext.fill(0);
    }
    // Another daemon may have changed the slots (a passphrase, a
    // remembered key): the next write keeps what the file holds now.
    this.#header = parsed.header;
    if (key !== this.#key) {
      this.#key.fill(0);
      this.#key = key;
    }
  }

  /** What `console.log` and `Deno.inspect` show: never the key or values. */
  [Symbol.for("Deno.customInspect")](): string {
    return this.#describe();
  }

  /** What `JSON.stringify` shows: never the key or values. */
  toJSON(): Record<string, unknown> {
    return {
      path: this.path,
      createdAt: this.createdAt,
      locked: this.#locked,
      secrets: this.#entries.size,
    };
  }

  /** What `String(store)` shows. */
  toString(): string {
    return this.#describe();
  }

  #describe(): string {
    return this.#locked
      ? `SecretStore { path: ${this.path}, locked }`
      : `SecretStore { path: ${this.path}, ${this.#entries.size} secrets }`;
  }

  #assertUnlocked(): void {
    if (this.#locked) throw new StoreLockedError();
  }
}

/** What a write changes: the entries, and for slots the header and data key. */
interface Draft {
  entries: Map<string, Entry>;
  header: FixedHeader;
  key: Buffer;
}

/**
 * The draft's header and data key as version 2. A version 1 store gets a
 * new random data key, wrapped under its old key (which scrypt derived
 * from the passphrase, so the passphrase slot keeps the same salt and
 * check), and its salt as its id; a version 2 one is returned as it is.
 */
function upgradedDraft(draft: Draft): { header: FixedHeaderV2; key: Buffer } {
  if (draft.header.version === 2) {
    return { header: draft.header, key: draft.key };
  }
  const key = randomBytes(KEY_BYTES);
  const id = draft.header.kdf.salt;
  return {
    header: {
      version: 2,
      id,
      passphrase: {
        kdf: draft.header.kdf,
        check: draft.header.check,
        key: wrapKey(draft.key, { key, label: slotLabel("passphrase", id) }),
      },
    },
    key,
  };
}

/** The store's identity: a version 2 id, or a version 1 salt. */
function storeIdOf(header: FixedHeader): string {
  return header.version === 2 ? header.id : header.kdf.salt;
}

/** The KDF and check of the passphrase: the header's or its slot's. */
function passphraseSlotOf(
  header: FixedHeader,
): { kdf: KdfHeader; check: string } {
  return header.version === 2 ? header.passphrase : header;
}

/**
 * The AAD of a slot's wrapped key: binds it to its kind and its store, so
 * a slot copied into another store, or from one kind to the other, fails.
 */
function slotLabel(kind: "passphrase" | "remembered", id: string): string {
  return `sherlock-secrets v2 ${kind} slot ${id}`;
}

/** `key` encrypted under `kek` (AES-256-GCM, fresh IV): IV, ciphertext, tag, base64. */
function wrapKey(kek: Buffer, options: { key: Buffer; label: string }): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv(CIPHER_NAME, kek, iv, {
    authTagLength: TAG_BYTES,
  });
  cipher.setAAD(Buffer.from(options.label, "utf8"));
  return Buffer.concat([
    iv,
    cipher.update(options.key),
    cipher.final(),
    cipher.getAuthTag(),
  ]).toString("base64");
}

/** The key {@linkcode wrapKey} wrapped, or undefined when `kek` or the slot is wrong. */
function unwrapKey(
  kek: Buffer,
  options: { wrapped: string; label: string },
): Buffer | undefined {
  const bytes = decodeBase64(options.wrapped, WRAPPED_KEY_BYTES);
  if (!bytes) return undefined;
  try {
    const decipher = createDecipheriv(
      CIPHER_NAME,
      kek,
      bytes.subarray(0, IV_BYTES),
      { authTagLength: TAG_BYTES },
    );
    decipher.setAAD(Buffer.from(options.label, "utf8"));
    decipher.setAuthTag(bytes.subarray(IV_BYTES + KEY_BYTES));
    return Buffer.concat([
      decipher.update(bytes.subarray(IV_BYTES, IV_BYTES + KEY_BYTES)),
      decipher.final(),
    ]);
  } catch {
    return undefined;
  }
}

/** The topics of {@linkcode SecretStore.exclusively}: safe in a file name. */
const LOCK_TOPIC_PATTERN = /^[a-z0-9][a-z0-9._-]{0,100}$/;

/** Whether a file-system error means that nothing is at the path. */
function isMissing(error: unknown): boolean {
  return error instanceof Deno.errors.NotFound ||
    error instanceof Deno.errors.NotADirectory;
}

function systemNow(): Date {
  return new Date();
}

/** RFC 3339 in UTC with milliseconds, as `Date#toISOString` writes it. */
function timestamp(date: Date): string {
  return date.toISOString();
}

function isTimestamp(value: unknown): value is string {
  if (typeof value !== "string") return false;
  const date = new Date(value);
  return !Number.isNaN(date.getTime()) && date.toISOString() === value;
}

/**
 * The names the broker keeps for itself (OAuth grants and client
 * registrations): a dot, which no service name has, keeps them apart from
 * the operator's secrets, and `sherlock secret` never reaches them.
 */
const INTERNAL_NAME_PATTERN = /^oauth\.(grant|client)\.[a-z0-9_-]{1,64}$/;

/** True for a name the broker keeps for itself (see `secret ls`). */
export function isInternalSecretName(name: string): boolean {
  return INTERNAL_NAME_PATTERN.test(name);
}

function isSecretName(name: string): boolean {
  return NAME_PATTERN.test(name) || INTERNAL_NAME_PATTERN.test(name);
}

function assertSecretName(name: unknown): asserts name is string {
  if (typeof name !== "string" || !isSecretName(name)) {
    throw new InvalidSecretNameError();
  }
}

function assertSecretValue(value: unknown): asserts value is string {
  if (typeof value !== "string") {
    throw new InvalidSecretValueError("it must be a string");
  }
  if (value.length === 0) {
    throw new InvalidSecretValueError("it must not be empty");
  }
  if (value.length > MAX_SECRET_VALUE_LENGTH) {
    throw new InvalidSecretValueError(
      `it is longer than ${MAX_SECRET_VALUE_LENGTH} characters`,
    );
  }
}

/** Why `kdf` is unacceptable, or undefined when it is fine. */
function scryptParamsProblem(kdf: ScryptParams): string | undefined {
  const { N, r, p } = kdf;
  if (![N, r, p].every((n) => Number.isSafeInteger(n) && n > 0)) {
    return "N, r and p must be positive integers";
  }
  const log2N = Math.log2(N);
  if (!Number.isInteger(log2N) || log2N < MIN_LOG2_N || log2N > MAX_LOG2_N) {
    return `N must be a power of two from 2^${MIN_LOG2_N} to 2^${MAX_LOG2_N}`;
  }
  if (r > MAX_R) return `r must be at most ${MAX_R}`;
  if (p > MAX_P) return `p must be at most ${MAX_P}`;
  if (128 * N * r > MAX_KDF_MEMORY) return "128·N·r must be at most 1 GiB";
  if (N * r * p > MAX_KDF_WORK) return "N·r·p must be at most 2^24";
  return undefined;
}

/**
 * Runs scrypt off the main thread (Deno's `node:crypto` scrypt is native and
 * asynchronous) and splits its 64 bytes into the two keys.
 */
function deriveKeys(
  passphrase: string,
  options: { salt: Buffer; kdf: ScryptParams },
): Promise<DerivedKeys> {
  const { N, r, p } = options.kdf;
  const secret = Buffer.from(passphrase.normalize("NFC"), "utf8");
  return new Promise<DerivedKeys>((resolve, reject) => {
    const done = (error: Error | null, output: Buffer) => {
      secret.fill(0);
      if (error) {
        // The library's message names parameters only, but be sure.
        reject(new Error("scrypt failed", { cause: error.name }));
        return;
      }
      const encryption = Buffer.alloc(KEY_BYTES);
      const check = Buffer.alloc(CHECK_BYTES);
      output.copy(encryption, 0, 0, KEY_BYTES);
      output.copy(check, 0, KEY_BYTES, KEY_BYTES + CHECK_BYTES);
      output.fill(0);
      resolve({ encryption, check });
    };
    try {
      scrypt(secret, options.salt, KEY_BYTES + CHECK_BYTES, {
        N,
        r,
        p,
        // Node's default limit (32 MiB) is below the default parameters'.
        maxmem: 128 * N * r + 128 * r * p + 1024 * 1024,
      }, done);
    } catch (error) {
      secret.fill(0);
      reject(
        new Error("scrypt failed", {
          cause: error instanceof Error ? error.name : "unknown",
        }),
      );
    }
  });
}

/** The header's `check`: proves the key right without decrypting. */
function keyCheck(checkKey: Buffer): Buffer {
  return createHmac("sha256", checkKey).update(CHECK_LABEL).digest();
}

/**
 * Encrypts `contents` with a fresh IV and writes the file atomically (0600,
 * in a 0700 folder); on failure the old file is left as it was. With
 * `exclusive`, a file already at `path` is never replaced: that is
 * {@linkcode StoreExistsError}.
 */
function writeStore(
  path: string,
  options: {
    key: Buffer;
    header: FixedHeader;
    contents: StoreContents;
    exclusive?: boolean;
  },
): void {
  const text = serializeStore(options);
  try {
    ensurePrivateParent(path);
    if (!options.exclusive) {
      writePrivateFile(path, text);
      return;
    }
    const written = writeFileExclusively({
      path,
      bytes: new TextEncoder().encode(text),
      mode: 0o600,
    });
    if (!written) throw new StoreExistsError(path);
  } catch (error) {
    if (error instanceof StoreExistsError) throw error;
    throw new StoreWriteError(path, error);
  }
}

/** The temporary names older versions wrote beside the store (no writer in them). */
const LEGACY_TEMPORARY = /^[0-9a-f]{8}\.(tmp|new|new\.[0-9a-f]{8}\.tmp)$/;

/**
 * Removes what a daemon killed in the middle of a write left beside the
 * store — each such file holds the secrets of its moment, including those
 * `secret rm` later took out of the store: the temporaries of writers that
 * are gone (`private_files.ts` `temporaryPath`), and, while the store's lock
 * is held (no update can be under way then), the names older versions used,
 * which do not say their writer. Best effort: a leftover that cannot be
 * removed is no reason to refuse the store.
 */
function removeLeftovers(path: string, options: { locked: boolean }): void {
  try {
    removeDeadTemporariesOf(path);
    if (!options.locked) return;
    const folder = dirname(path);
    const name = path.slice(folder.length).replace(/^[\\/]+/, "");
    for (const entry of Deno.readDirSync(folder)) {
      if (!entry.isFile || !entry.name.startsWith(`${name}.`)) continue;
      if (LEGACY_TEMPORARY.test(entry.name.slice(name.length + 1))) {
        removeIfPresent(join(folder, entry.name));
      }
    }
  } catch {
    // Left for the next time.
  }
}

/** Opens and exclusively locks `<store>.lock`; close it to unlock. */
async function openStoreLock(path: string): Promise<Deno.FsFile> {
  let lock: Deno.FsFile;
  try {
    ensurePrivateParent(path);
    lock = await Deno.open(`${path}.lock`, {
      create: true,
      write: true,
      mode: 0o600,
    });
  } catch (error) {
    throw new StoreWriteError(path, error);
  }
  await lock.lock(true);
  removeLeftovers(path, { locked: true });
  return lock;
}

/** The file's text for `contents`, encrypted under `key` with a fresh IV. */
function serializeStore(
  options: { key: Buffer; header: FixedHeader; contents: StoreContents },
): string {
  const { key, header, contents } = options;
  const iv = randomBytes(IV_BYTES);
  const kdfField = (kdf: KdfHeader) => ({
    name: KDF_NAME,
    N: kdf.N,
    r: kdf.r,
    p: kdf.p,
    salt: kdf.salt,
  });
  const cipherField = { name: CIPHER_NAME, iv: iv.toString("base64") };
  // Key order is fixed here; the reader authenticates the exact bytes.
  const headerLine = header.version === 1
    ? JSON.stringify({
      format: FORMAT_NAME,
      version: 1,
      kdf: kdfField(header.kdf),
      check: header.check,
      cipher: cipherField,
    })
    : JSON.stringify({
      format: FORMAT_NAME,
      version: 2,
      id: header.id,
      slots: [
        {
          kind: "passphrase",
          kdf: kdfField(header.passphrase.kdf),
          check: header.passphrase.check,
          key: header.passphrase.key,
        },
        ...(header.remembered === undefined
          ? []
          : [{ kind: "remembered", key: header.remembered }]),
      ],
      cipher: cipherField,
    });
  const entries: Record<string, Entry> = {};
  for (const [name, entry] of sortedByName(contents.entries)) {
    entries[name] = {
      value: entry.value,
      created: entry.created,
      updated: entry.updated,
    };
  }
  const plaintext = Buffer.from(
    JSON.stringify({ created: contents.created, entries }),
    "utf8",
  );
  const cipher = createCipheriv(CIPHER_NAME, key, iv, {
    authTagLength: TAG_BYTES,
  });
  cipher.setAAD(Buffer.from(headerLine, "utf8"));
  const body = Buffer.concat([
    cipher.update(plaintext),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  plaintext.fill(0);
  return `${headerLine}\n${body.toString("base64")}\n`;
}

/** Reads the store's bytes and mode; refuses anything but a regular file. */
async function readStoreFile(
  path: string,
): Promise<{ bytes: Uint8Array; mode: number | null }> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (error) {
    if (isMissing(error)) {
      throw new StoreNotFoundError(path);
    }
    throw new StoreReadError(path, error);
  }
  if (!info.isFile) {
    throw new CorruptStoreError(
      path,
      "it is not a regular file (a symlink, folder or device)",
    );
  }
  if (info.size > MAX_FILE_BYTES) {
    throw new CorruptStoreError(path, "it is far larger than a store can be");
  }
  try {
    return { bytes: await Deno.readFile(path), mode: info.mode };
  } catch (error) {
    if (isMissing(error)) {
      throw new StoreNotFoundError(path);
    }
    throw new StoreReadError(path, error);
  }
}

/**
 * Checks everything that can be checked without the key: the layout, the
 * header (format, version, KDF parameters, sizes) and the base64.
 */
function parseStoreFile(path: string, bytes: Uint8Array): ParsedStoreFile {
  const corrupt = (reason: string) => new CorruptStoreError(path, reason);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw corrupt("it is not text");
  }
  const lines = text.split("\n");
  const headerLine = lines[0];
  // Check the version first: a newer format may lay out the rest otherwise.
  let header: unknown;
  try {
    header = JSON.parse(headerLine);
  } catch {
    throw corrupt("its first line is not a JSON header");
  }
  if (!isRecord(header) || header.format !== FORMAT_NAME) {
    throw corrupt("it is not a sherlock secret store");
  }
  const version = header.version;
  if (!Number.isSafeInteger(version) || (version as number) < 1) {
    throw corrupt("its format version is invalid");
  }
  if ((version as number) > STORE_FORMAT_VERSION) {
    throw new NewerStoreError(path, version as number);
  }
  if (lines.length !== 3 || lines[2] !== "") {
    throw corrupt("it does not have exactly two lines (truncated?)");
  }
  const fixed = version === 1
    ? parseHeaderV1(header, corrupt)
    : parseHeaderV2(header, corrupt);
  const { cipher } = header;
  if (
    !isRecord(cipher) || !hasExactKeys(cipher, ["name", "iv"]) ||
    cipher.name !== CIPHER_NAME
  ) {
    throw corrupt("its header's cipher is not aes-256-gcm with an iv");
  }
  const iv = decodeBase64(cipher.iv, IV_BYTES);
  if (!iv) throw corrupt("its header's salt, check or iv is malformed");
  const body = decodeBase64(lines[1]);
  if (!body || body.length < TAG_BYTES) {
    throw corrupt("its encrypted contents are malformed or truncated");
  }
  return {
    header: fixed,
    aad: Buffer.from(headerLine, "utf8"),
    iv,
    ciphertext: body.subarray(0, body.length - TAG_BYTES),
    tag: body.subarray(body.length - TAG_BYTES),
  };
}

/** A version 1 header's fields but the cipher's. */
function parseHeaderV1(
  header: Record<string, unknown>,
  corrupt: (reason: string) => CorruptStoreError,
): FixedHeaderV1 {
  if (
    !hasExactKeys(header, ["format", "version", "kdf", "check", "cipher"])
  ) {
    throw corrupt("its header has missing or unknown fields");
  }
  const { kdf, check } = parseKdfAndCheck(header, corrupt);
  return { version: 1, kdf, check };
}

/** A version 2 header's fields but the cipher's: the id and the slots. */
function parseHeaderV2(
  header: Record<string, unknown>,
  corrupt: (reason: string) => CorruptStoreError,
): FixedHeaderV2 {
  if (
    !hasExactKeys(header, ["format", "version", "id", "slots", "cipher"])
  ) {
    throw corrupt("its header has missing or unknown fields");
  }
  const { id, slots } = header;
  if (!decodeBase64(id, SALT_BYTES)) {
    throw corrupt("its header's id is malformed");
  }
  if (!Array.isArray(slots) || slots.length < 1 || slots.length > 2) {
    throw corrupt("its header's slots are not one or two");
  }
  const [first, second] = slots as unknown[];
  if (
    !isRecord(first) || !hasExactKeys(first, ["kind", "kdf", "check", "key"]) ||
    first.kind !== "passphrase" || !decodeBase64(first.key, WRAPPED_KEY_BYTES)
  ) {
    throw corrupt("its header's first slot is not a passphrase slot");
  }
  const { kdf, check } = parseKdfAndCheck(first, corrupt);
  const fixed: FixedHeaderV2 = {
    version: 2,
    id: id as string,
    passphrase: { kdf, check, key: first.key as string },
  };
  if (second === undefined) return fixed;
  if (
    !isRecord(second) || !hasExactKeys(second, ["kind", "key"]) ||
    second.kind !== "remembered" ||
    !decodeBase64(second.key, WRAPPED_KEY_BYTES)
  ) {
    throw corrupt("its header's second slot is not a remembered-key slot");
  }
  return { ...fixed, remembered: second.key as string };
}

/** The `kdf` and `check` fields of a version 1 header or a passphrase slot. */
function parseKdfAndCheck(
  record: Record<string, unknown>,
  corrupt: (reason: string) => CorruptStoreError,
): { kdf: KdfHeader; check: string } {
  const { kdf } = record;
  if (
    !isRecord(kdf) || !hasExactKeys(kdf, ["name", "N", "r", "p", "salt"]) ||
    kdf.name !== KDF_NAME
  ) {
    throw corrupt("its header's kdf is not scrypt with N, r, p and salt");
  }
  const params = { N: kdf.N, r: kdf.r, p: kdf.p } as ScryptParams;
  const kdfProblem = scryptParamsProblem(params);
  if (kdfProblem) throw corrupt(`its scrypt parameters are out of range`);
  if (
    !decodeBase64(kdf.salt, SALT_BYTES) ||
    !decodeBase64(record.check, CHECK_BYTES)
  ) {
    throw corrupt("its header's salt, check or iv is malformed");
  }
  return {
    kdf: { ...params, salt: kdf.salt as string },
    check: record.check as string,
  };
}

/** Decrypts and authenticates; throws when authentication fails. */
function decrypt(key: Buffer, parsed: ParsedStoreFile): Buffer {
  const decipher = createDecipheriv(CIPHER_NAME, key, parsed.iv, {
    authTagLength: TAG_BYTES,
  });
  decipher.setAAD(parsed.aad);
  decipher.setAuthTag(parsed.tag);
  return Buffer.concat([decipher.update(parsed.ciphertext), decipher.final()]);
}

/** Validates the decrypted JSON. Messages never quote its contents. */
function parseContents(path: string, plaintext: Buffer): StoreContents {
  const corrupt = (reason: string) => new CorruptStoreError(path, reason);
  let data: unknown;
  try {
    data = JSON.parse(
      new TextDecoder("utf-8", { fatal: true }).decode(plaintext),
    );
  } catch {
    throw corrupt("its decrypted contents are not JSON");
  }
  if (
    !isRecord(data) || !hasExactKeys(data, ["created", "entries"]) ||
    !isTimestamp(data.created) || !isRecord(data.entries)
  ) {
    throw corrupt("its decrypted contents are not a store");
  }
  const entries = new Map<string, Entry>();
  for (const [name, entry] of Object.entries(data.entries)) {
    if (
      !isSecretName(name) || !isRecord(entry) ||
      !hasExactKeys(entry, ["value", "created", "updated"]) ||
      typeof entry.value !== "string" || entry.value.length === 0 ||
      !isTimestamp(entry.created) || !isTimestamp(entry.updated)
    ) {
      throw corrupt("an entry of its decrypted contents is malformed");
    }
    entries.set(name, {
      value: entry.value,
      created: entry.created,
      updated: entry.updated,
    });
  }
  return { created: data.created, entries };
}

/** The entries of `map`, sorted by name (code unit order, like `sort()`). */
function sortedByName<T>(map: Map<string, T>): [string, T][] {
  return [...map].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function hasExactKeys(
  record: Record<string, unknown>,
  keys: readonly string[],
): boolean {
  const actual = Object.keys(record);
  return actual.length === keys.length &&
    keys.every((key) => Object.hasOwn(record, key));
}

/**
 * Strict base64 (standard alphabet, padded, canonical), optionally of an
 * exact decoded length; undefined when `value` is anything else.
 */
function decodeBase64(value: unknown, length?: number): Buffer | undefined {
  if (typeof value !== "string" || value.length % 4 !== 0) return undefined;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(value)) return undefined;
  const bytes = Buffer.from(value, "base64");
  if (bytes.toString("base64") !== value) return undefined;
  if (length !== undefined && bytes.length !== length) return undefined;
  return bytes;
}
