/**
 * The `local` provider's encrypted secret store
 * (lib/broker/daemon/secret_store.ts), with real files and permissions in a
 * temporary folder. Stores are made with a cheap KDF (N = 2^10) except in
 * one test of the defaults; nothing here asserts on timing.
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import {
  createCipheriv,
  createDecipheriv,
  createHash,
  createHmac,
  scryptSync,
} from "node:crypto";
import { join } from "node:path";
import { SherlockError } from "../../lib/errors.ts";
import { temporaryPath } from "../../lib/private_files.ts";
import {
  CorruptStoreError,
  createStore,
  DEFAULT_SCRYPT_PARAMS,
  InvalidPassphraseError,
  InvalidSecretNameError,
  InvalidSecretValueError,
  MAX_SECRET_VALUE_LENGTH,
  NewerStoreError,
  type ScryptParams,
  type SecretStore,
  SecretStoreError,
  storeExists,
  StoreExistsError,
  StoreLockedError,
  StoreNotFoundError,
  StoreReadError,
  StoreWriteError,
  unlockStore,
  WrongPassphraseError,
} from "../../lib/broker/daemon/secret_store.ts";

const PASSPHRASE = "PASSPHRASE-MARKER correct horse";
const WRONG = "WRONG-MARKER battery staple";
const VALUE = "VALUE-MARKER-ghp_0123456789abcdef";
const FAST: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };
const IS_ROOT = Deno.uid() === 0;

/** Runs `body` with a fresh temp folder and a store path two levels below. */
async function withStorePath(
  body: (path: string, dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "sherlock-secret-store-" });
  try {
    await body(join(dir, "data", "sherlock", "secrets.enc"), dir);
  } finally {
    await Deno.chmod(dir, 0o700).catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
}

/** A clock that returns the given instants, then keeps the last one. */
function clock(...isoTimes: string[]): () => Date {
  let index = 0;
  return () => new Date(isoTimes[Math.min(index++, isoTimes.length - 1)]);
}

function fileHash(path: string): string {
  return createHash("sha256").update(Deno.readFileSync(path)).digest("hex");
}

function mode(path: string): number {
  return (Deno.statSync(path).mode ?? 0) & 0o777;
}

interface FileParts {
  headerLine: string;
  header: {
    format: string;
    version: number;
    kdf: { name: string; N: number; r: number; p: number; salt: string };
    check: string;
    cipher: { name: string; iv: string };
  };
  body: string;
}

function readParts(path: string): FileParts {
  const text = Deno.readTextFileSync(path);
  const [headerLine, body] = text.split("\n");
  return { headerLine, header: JSON.parse(headerLine), body };
}

/** A new store at `path` holding `github` = VALUE, created with FAST. */
async function storeWithOneSecret(path: string): Promise<SecretStore> {
  const store = await createStore(path, PASSPHRASE, { kdf: FAST });
  await store.set("github", VALUE);
  return store;
}

/**
 * Decrypts a store file using only what docs/secret_store.md says: scrypt
 * (64 bytes) of the NFC passphrase, first half the AES-256-GCM key, the first
 * line's bytes as AAD, the tag as the last 16 bytes of the second line.
 */
function decryptIndependently(path: string, passphrase: string): unknown {
  const { headerLine, header, body } = readParts(path);
  const { N, r, p } = header.kdf;
  const derived = scryptSync(
    passphrase.normalize("NFC"),
    Buffer.from(header.kdf.salt, "base64"),
    64,
    { N, r, p, maxmem: 256 * N * r },
  );
  const check = createHmac("sha256", derived.subarray(32))
    .update("sherlock-secrets v1 key check").digest("base64");
  assert.equal(check, header.check, "the key check is the documented HMAC");
  const sealed = Buffer.from(body, "base64");
  const decipher = createDecipheriv(
    "aes-256-gcm",
    derived.subarray(0, 32),
    Buffer.from(header.cipher.iv, "base64"),
  );
  decipher.setAAD(Buffer.from(headerLine, "utf8"));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  const plaintext = Buffer.concat([
    decipher.update(sealed.subarray(0, sealed.length - 16)),
    decipher.final(),
  ]);
  return JSON.parse(plaintext.toString("utf8"));
}

/**
 * Replaces a store's contents with `plaintext`, encrypted properly under the
 * store's own key and header (fresh IV): a file that authenticates but whose
 * contents are whatever the test wants.
 */
function sealIndependently(
  path: string,
  options: { passphrase: string; plaintext: string },
): void {
  const { header } = readParts(path);
  const { N, r, p } = header.kdf;
  const derived = scryptSync(
    options.passphrase,
    Buffer.from(header.kdf.salt, "base64"),
    64,
    { N, r, p, maxmem: 256 * N * r },
  );
  const iv = Buffer.from("000102030405060708090a0b", "hex");
  const headerLine = JSON.stringify({
    ...header,
    cipher: { name: "aes-256-gcm", iv: iv.toString("base64") },
  });
  const cipher = createCipheriv("aes-256-gcm", derived.subarray(0, 32), iv);
  cipher.setAAD(Buffer.from(headerLine, "utf8"));
  const sealed = Buffer.concat([
    cipher.update(Buffer.from(options.plaintext, "utf8")),
    cipher.final(),
    cipher.getAuthTag(),
  ]);
  Deno.writeTextFileSync(path, `${headerLine}\n${sealed.toString("base64")}\n`);
}

/** Every string an error exposes: message, stack, inspect, JSON, cause. */
function everythingShown(error: unknown): string {
  return [
    String(error),
    (error as Error).stack ?? "",
    Deno.inspect(error, { depth: 10 }),
    JSON.stringify(error),
    Deno.inspect((error as Error).cause, { depth: 10 }),
  ].join("\n");
}

function assertNoSecretIn(text: string): void {
  for (const secret of [PASSPHRASE, WRONG, VALUE, "MARKER"]) {
    assert.ok(!text.includes(secret), `leaked ${secret} in: ${text}`);
  }
}

// ---------------------------------------------------------------------------
// Creating.

Deno.test("createStore: makes the folder 0700 and the file 0600, empty", async () => {
  await withStorePath(async (path) => {
    assert.equal(storeExists(path), false);
    const store = await createStore(path, PASSPHRASE, {
      kdf: FAST,
      now: clock("2026-01-02T03:04:05.678Z"),
    });
    assert.equal(storeExists(path), true);
    assert.equal(mode(join(path, "..")), 0o700);
    assert.equal(mode(path), 0o600);
    assert.equal(store.path, path);
    assert.equal(store.createdAt, "2026-01-02T03:04:05.678Z");
    assert.deepEqual(store.kdf, FAST);
    assert.equal(store.locked, false);
    assert.deepEqual(store.list(), []);
    assert.equal(store.get("github"), undefined);
    assert.deepEqual(
      [...Deno.readDirSync(join(path, ".."))].map((entry) => entry.name),
      ["secrets.enc"],
      "no temp file is left behind",
    );
  });
});

Deno.test("createStore: writes the documented two-line format", async () => {
  await withStorePath(async (path) => {
    await createStore(path, PASSPHRASE, {
      kdf: { N: 2 ** 11, r: 4, p: 2 },
      now: clock("2026-01-02T03:04:05.678Z"),
    });
    const text = Deno.readTextFileSync(path);
    assert.match(text, /^[\x20-\x7e]+\n[A-Za-z0-9+/=]+\n$/);
    const { header } = readParts(path);
    assert.deepEqual(Object.keys(header), [
      "format",
      "version",
      "kdf",
      "check",
      "cipher",
    ]);
    assert.equal(header.format, "sherlock-secrets");
    assert.equal(header.version, 1);
    assert.deepEqual(
      { ...header.kdf, salt: undefined },
      { name: "scrypt", N: 2048, r: 4, p: 2, salt: undefined },
    );
    assert.equal(Buffer.from(header.kdf.salt, "base64").length, 16);
    assert.equal(Buffer.from(header.check, "base64").length, 32);
    assert.equal(header.cipher.name, "aes-256-gcm");
    assert.equal(Buffer.from(header.cipher.iv, "base64").length, 12);
    assert.deepEqual(decryptIndependently(path, PASSPHRASE), {
      created: "2026-01-02T03:04:05.678Z",
      entries: {},
    });
  });
});

Deno.test("createStore: the plaintext holds entries with value and times", async () => {
  await withStorePath(async (path) => {
    const store = await createStore(path, PASSPHRASE, {
      kdf: FAST,
      now: clock(
        "2026-01-01T00:00:00.000Z",
        "2026-01-02T00:00:00.000Z",
        "2026-01-03T00:00:00.000Z",
      ),
    });
    await store.set("github", VALUE);
    await store.set("github", `${VALUE}-2`);
    assert.deepEqual(decryptIndependently(path, PASSPHRASE), {
      created: "2026-01-01T00:00:00.000Z",
      entries: {
        github: {
          value: `${VALUE}-2`,
          created: "2026-01-02T00:00:00.000Z",
          updated: "2026-01-03T00:00:00.000Z",
        },
      },
    });
    assert.ok(
      !Deno.readTextFileSync(path).includes("VALUE-MARKER"),
      "the value is not in the file in clear",
    );
  });
});

Deno.test("createStore: a fresh salt per store", async () => {
  await withStorePath(async (_path, dir) => {
    const a = join(dir, "a.enc");
    const b = join(dir, "b.enc");
    await createStore(a, PASSPHRASE, { kdf: FAST });
    await createStore(b, PASSPHRASE, { kdf: FAST });
    assert.notEqual(readParts(a).header.kdf.salt, readParts(b).header.kdf.salt);
    assert.notEqual(readParts(a).header.check, readParts(b).header.check);
  });
});

Deno.test("createStore: refuses a path that holds anything, unchanged", async () => {
  await withStorePath(async (path, dir) => {
    await storeWithOneSecret(path);
    const before = fileHash(path);
    await assert.rejects(
      createStore(path, "another passphrase", { kdf: FAST }),
      StoreExistsError,
    );
    assert.equal(fileHash(path), before);
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);

    const dangling = join(dir, "dangling.enc");
    Deno.symlinkSync(join(dir, "nowhere"), dangling);
    assert.equal(storeExists(dangling), true);
    await assert.rejects(
      createStore(dangling, PASSPHRASE, { kdf: FAST }),
      StoreExistsError,
    );
    assert.equal(storeExists(join(dir, "nowhere")), false);

    const folder = join(dir, "folder.enc");
    Deno.mkdirSync(folder);
    await assert.rejects(
      createStore(folder, PASSPHRASE, { kdf: FAST }),
      StoreExistsError,
    );
  });
});

Deno.test("createStore: two at once, one wins and the other is refused", async () => {
  await withStorePath(async (path) => {
    const results = await Promise.allSettled([
      createStore(path, "first passphrase", { kdf: FAST }),
      createStore(path, "second passphrase", { kdf: FAST }),
    ]);
    const won = results.filter((result) => result.status === "fulfilled");
    const lost = results.filter((result) => result.status === "rejected");
    assert.equal(won.length, 1);
    assert.equal(lost.length, 1);
    assert.ok(
      (lost[0] as PromiseRejectedResult).reason instanceof StoreExistsError,
    );
    const winner = results[0].status === "fulfilled"
      ? "first passphrase"
      : "second passphrase";
    await unlockStore(path, winner);
  });
});

Deno.test("createStore: refuses an empty or non-string passphrase and bad KDF parameters", async () => {
  await withStorePath(async (path) => {
    await assert.rejects(
      createStore(path, "", { kdf: FAST }),
      InvalidPassphraseError,
    );
    await assert.rejects(
      createStore(path, undefined as unknown as string, { kdf: FAST }),
      InvalidPassphraseError,
    );
    for (
      const kdf of [
        { N: 1000, r: 8, p: 1 },
        { N: 2 ** 9, r: 8, p: 1 },
        { N: 2 ** 21, r: 8, p: 1 },
        { N: 2 ** 20, r: 16, p: 1 },
        { N: 2 ** 14, r: 0, p: 1 },
        { N: 2 ** 14, r: 8, p: 0.5 },
        { N: 2 ** 14, r: 8, p: 17 },
        { N: 2 ** 20, r: 8, p: 4 },
      ]
    ) {
      await assert.rejects(createStore(path, PASSPHRASE, { kdf }), RangeError);
    }
    assert.equal(storeExists(path), false);
  });
});

Deno.test("createStore: the default KDF parameters are recorded and work", async () => {
  await withStorePath(async (path) => {
    assert.deepEqual(DEFAULT_SCRYPT_PARAMS, { N: 2 ** 17, r: 8, p: 1 });
    const store = await createStore(path, PASSPHRASE);
    await store.set("github", VALUE);
    assert.deepEqual(readParts(path).header.kdf.N, 2 ** 17);
    const again = await unlockStore(path, PASSPHRASE);
    assert.deepEqual(again.kdf, DEFAULT_SCRYPT_PARAMS);
    assert.equal(again.get("github"), VALUE);
  });
});

// ---------------------------------------------------------------------------
// Using an unlocked store.

Deno.test("SecretStore: set, get, list and remove, persisted across unlocks", async () => {
  await withStorePath(async (path) => {
    const store = await createStore(path, PASSPHRASE, {
      kdf: FAST,
      now: clock(
        "2026-01-01T00:00:00.000Z",
        "2026-01-02T00:00:00.000Z",
        "2026-01-03T00:00:00.000Z",
      ),
    });
    await store.set("slack", "xoxb-1");
    await store.set("github", VALUE);
    assert.equal(store.get("github"), VALUE);
    assert.deepEqual(store.list(), [
      {
        name: "github",
        created: "2026-01-03T00:00:00.000Z",
        updated: "2026-01-03T00:00:00.000Z",
      },
      {
        name: "slack",
        created: "2026-01-02T00:00:00.000Z",
        updated: "2026-01-02T00:00:00.000Z",
      },
    ]);
    assert.ok(!JSON.stringify(store.list()).includes("MARKER"));

    const reopened = await unlockStore(path, PASSPHRASE, {
      now: clock("2026-02-01T00:00:00.000Z"),
    });
    assert.equal(reopened.createdAt, "2026-01-01T00:00:00.000Z");
    assert.deepEqual(reopened.list(), store.list());
    assert.equal(reopened.get("github"), VALUE);
    assert.equal(reopened.get("slack"), "xoxb-1");

    await reopened.set("slack", "xoxb-2");
    assert.deepEqual(reopened.list()[1], {
      name: "slack",
      created: "2026-01-02T00:00:00.000Z",
      updated: "2026-02-01T00:00:00.000Z",
    });
    assert.equal(await reopened.remove("github"), true);
    assert.equal(reopened.get("github"), undefined);

    const third = await unlockStore(path, PASSPHRASE);
    assert.deepEqual(third.list().map((info) => info.name), ["slack"]);
    assert.equal(third.get("slack"), "xoxb-2");
    assert.equal(third.get("github"), undefined);
  });
});

Deno.test("SecretStore: removing a missing secret writes nothing", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const before = fileHash(path);
    assert.equal(await store.remove("slack"), false);
    assert.equal(fileHash(path), before);
    assert.equal(store.get("github"), VALUE);
  });
});

Deno.test("SecretStore: every write has a fresh IV, the same salt and check, mode 0600", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const first = readParts(path);
    await store.set("github", VALUE);
    const second = readParts(path);
    assert.notEqual(second.header.cipher.iv, first.header.cipher.iv);
    assert.notEqual(second.body, first.body);
    assert.deepEqual(second.header.kdf, first.header.kdf);
    assert.equal(second.header.check, first.header.check);
    assert.equal(mode(path), 0o600);
    // The store and the (empty) lock file that serializes writers.
    assert.deepEqual(
      [...Deno.readDirSync(join(path, ".."))].map((entry) => entry.name)
        .sort(),
      ["secrets.enc", "secrets.enc.lock"],
    );
  });
});

Deno.test("SecretStore: values of any shape round-trip", async () => {
  await withStorePath(async (path) => {
    const store = await createStore(path, PASSPHRASE, { kdf: FAST });
    const values: Record<string, string> = {
      "unicode": 'pässwörd 🔑 中文 \u0000 "quoted" \\ </script>',
      "newlines": "-----BEGIN KEY-----\nabc\r\ndef\n-----END KEY-----\n",
      "json": JSON.stringify({ token: "t", expires_at: "2026-01-01" }),
      "longest": "x".repeat(MAX_SECRET_VALUE_LENGTH),
      "lone-surrogate": "a\ud800b",
      "constructor": "names that are Object.prototype keys are fine",
      "0": "a name may start with a digit",
    };
    for (const [name, value] of Object.entries(values)) {
      await store.set(name, value);
    }
    const reopened = await unlockStore(path, PASSPHRASE);
    for (const [name, value] of Object.entries(values)) {
      assert.equal(reopened.get(name), value, name);
    }
    assert.equal(reopened.get("tostring"), undefined);
    assert.equal(reopened.get("hasownproperty"), undefined);
  });
});

Deno.test("SecretStore: names must be service names; the bad name is not echoed", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const before = fileHash(path);
    for (
      const name of [
        "",
        "GitHub",
        "-github",
        "_github",
        "git.hub",
        "git hub",
        "../github",
        "__proto__",
        "VALUE-MARKER-pasted-token",
        42 as unknown as string,
      ]
    ) {
      for (
        const attempt of [
          () => store.set(name, "v"),
          () => store.remove(name),
          () => Promise.resolve().then(() => store.get(name)),
        ]
      ) {
        const error = await attempt().then(
          () => assert.fail(`accepted ${String(name)}`),
          (error: unknown) => error,
        );
        assert.ok(error instanceof InvalidSecretNameError);
        assert.equal(error.code, "invalid-name");
        assertNoSecretIn(everythingShown(error));
      }
    }
    assert.equal(fileHash(path), before);
  });
});

Deno.test("SecretStore: values must be non-empty strings of bounded length", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const before = fileHash(path);
    for (
      const value of [
        "",
        "x".repeat(MAX_SECRET_VALUE_LENGTH + 1),
        undefined as unknown as string,
        42 as unknown as string,
      ]
    ) {
      await assert.rejects(store.set("github", value), InvalidSecretValueError);
    }
    assert.equal(fileHash(path), before);
    assert.equal(store.get("github"), VALUE);
  });
});

Deno.test("SecretStore: concurrent sets are all kept", async () => {
  await withStorePath(async (path) => {
    const store = await createStore(path, PASSPHRASE, { kdf: FAST });
    await Promise.all(
      Array.from({ length: 20 }, (_, i) => store.set(`service-${i}`, `v${i}`)),
    );
    const reopened = await unlockStore(path, PASSPHRASE);
    assert.equal(reopened.list().length, 20);
    for (let i = 0; i < 20; i++) {
      assert.equal(reopened.get(`service-${i}`), `v${i}`);
    }
  });
});

Deno.test("SecretStore: lock forgets everything and refuses further use", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const before = fileHash(path);
    store.lock();
    store.lock();
    assert.equal(store.locked, true);
    assert.throws(() => store.list(), StoreLockedError);
    assert.throws(() => store.get("github"), StoreLockedError);
    await assert.rejects(store.set("github", "v"), StoreLockedError);
    await assert.rejects(store.remove("github"), StoreLockedError);
    assert.equal(fileHash(path), before);
    assert.ok(!Deno.inspect(store).includes("MARKER"));
    const again = await unlockStore(path, PASSPHRASE);
    assert.equal(again.get("github"), VALUE);
  });
});

Deno.test("SecretStore: inspect, JSON and String never show the key or a value", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const shown = [
      Deno.inspect(store, { depth: 10, showHidden: true }),
      JSON.stringify(store),
      String(store),
      `${store}`,
      Deno.inspect({ nested: { store } }, { depth: 10 }),
    ].join("\n");
    assertNoSecretIn(shown);
    assert.ok(shown.includes("1 secrets"));
    assert.deepEqual(Object.keys(store), ["path", "createdAt"]);
  });
});

// ---------------------------------------------------------------------------
// Unlocking, and every way it can fail.

Deno.test("unlockStore: a missing store", async () => {
  await withStorePath(async (path, dir) => {
    Deno.writeTextFileSync(join(dir, "file"), "");
    await assert.rejects(
      unlockStore(join(dir, "file", "secrets.enc"), PASSPHRASE),
      StoreNotFoundError,
      "a parent that is a file",
    );
    assert.equal(storeExists(join(dir, "file", "secrets.enc")), false);
    const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
    assert.ok(error instanceof StoreNotFoundError);
    assert.equal(error.code, "not-found");
    assert.equal(storeExists(path), false, "unlock creates nothing");
    assert.equal(storeExists(join(path, "..")), false);
  });
});

Deno.test("unlockStore: a wrong passphrase, then the right one", async () => {
  await withStorePath(async (path) => {
    await storeWithOneSecret(path);
    const before = fileHash(path);
    const stat = Deno.statSync(path);
    for (
      const wrong of [WRONG, "", PASSPHRASE.toUpperCase(), `${PASSPHRASE} `]
    ) {
      const error = await unlockStore(path, wrong).catch((e) => e);
      assert.ok(error instanceof WrongPassphraseError, String(error));
      assert.equal(error.code, "wrong-passphrase");
      assertNoSecretIn(everythingShown(error));
      assert.equal(fileHash(path), before);
    }
    assert.equal(Deno.statSync(path).mtime?.getTime(), stat.mtime?.getTime());
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);
    assert.equal(fileHash(path), before, "a successful unlock writes nothing");
  });
});

Deno.test("unlockStore: the passphrase is NFC-normalized", async () => {
  await withStorePath(async (path) => {
    await createStore(path, "caf\u00e9 passphrase", { kdf: FAST });
    await unlockStore(path, "cafe\u0301 passphrase");
    await assert.rejects(
      unlockStore(path, "cafe passphrase"),
      WrongPassphraseError,
    );
  });
});

Deno.test("unlockStore: stores keep their own KDF parameters", async () => {
  await withStorePath(async (path) => {
    const kdf = { N: 2 ** 11, r: 4, p: 3 };
    const store = await createStore(path, PASSPHRASE, { kdf });
    await store.set("github", VALUE);
    const reopened = await unlockStore(path, PASSPHRASE);
    assert.deepEqual(reopened.kdf, kdf);
    await reopened.set("slack", "x");
    assert.deepEqual(
      { ...readParts(path).header.kdf, salt: undefined },
      { name: "scrypt", ...kdf, salt: undefined },
      "a rewrite keeps the store's parameters",
    );
  });
});

/** A change to a valid store file and the error it must cause. */
interface Tampering {
  name: string;
  change: (text: string, parts: FileParts) => string | Uint8Array;
  expect: new (...args: never[]) => SecretStoreError;
}

function withHeader(
  parts: FileParts,
  edit: (header: Record<string, unknown>) => unknown,
): string {
  const header = structuredClone(parts.header) as Record<string, unknown>;
  const result = edit(header) ?? header;
  return `${JSON.stringify(result)}\n${parts.body}\n`;
}

function flipBase64Char(value: string, index: number): string {
  const chars = value.split("");
  const i = index < 0 ? chars.length + index : index;
  chars[i] = chars[i] === "A" ? "B" : "A";
  return chars.join("");
}

/** Flips one bit of the decoded body at `index` (negative: from the end). */
function flipBodyByte(parts: FileParts, index: number): string {
  const bytes = Buffer.from(parts.body, "base64");
  bytes[index < 0 ? bytes.length + index : index] ^= 0x01;
  return `${parts.headerLine}\n${bytes.toString("base64")}\n`;
}

const TAMPERINGS: Tampering[] = [
  { name: "empty file", change: () => "", expect: CorruptStoreError },
  {
    name: "not UTF-8",
    change: () => new Uint8Array([0xff, 0xfe, 0x00, 0x80, 0x0a]),
    expect: CorruptStoreError,
  },
  { name: "random text", change: () => "hello\n", expect: CorruptStoreError },
  {
    name: "truncated inside the header",
    change: (text) => text.slice(0, 40),
    expect: CorruptStoreError,
  },
  {
    name: "header only",
    change: (_text, parts) => `${parts.headerLine}\n`,
    expect: CorruptStoreError,
  },
  {
    name: "final newline missing",
    change: (text) => text.slice(0, -1),
    expect: CorruptStoreError,
  },
  {
    name: "body truncated to a shorter valid base64",
    change: (_text, parts) =>
      `${parts.headerLine}\n${parts.body.slice(0, parts.body.length - 8)}\n`,
    expect: CorruptStoreError,
  },
  {
    name: "body shorter than a tag",
    change: (_text, parts) => `${parts.headerLine}\nAAAA\n`,
    expect: CorruptStoreError,
  },
  {
    name: "body not base64",
    change: (_text, parts) => `${parts.headerLine}\n${parts.body}!\n`,
    expect: CorruptStoreError,
  },
  {
    name: "a third line",
    change: (text) => `${text}extra\n`,
    expect: CorruptStoreError,
  },
  {
    name: "CRLF line endings",
    change: (text) => text.replaceAll("\n", "\r\n"),
    expect: CorruptStoreError,
  },
  {
    name: "header is an array",
    change: (_text, parts) => `[1]\n${parts.body}\n`,
    expect: CorruptStoreError,
  },
  {
    name: "another format name",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.format = "age-encryption";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "version 0",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.version = 0;
      }),
    expect: CorruptStoreError,
  },
  {
    name: "version as a string",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.version = "1";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "version 1.5",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.version = 1.5;
      }),
    expect: CorruptStoreError,
  },
  {
    name: "an unknown header field",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.comment = "hi";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "another KDF",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).name = "argon2id";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "N not a power of two",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).N = 1000;
      }),
    expect: CorruptStoreError,
  },
  {
    name: "N far too large (would take forever)",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).N = 2 ** 30;
      }),
    expect: CorruptStoreError,
  },
  {
    name: "p far too large",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).p = 1000;
      }),
    expect: CorruptStoreError,
  },
  {
    name: "salt of the wrong length",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).salt = "AAAA";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "iv not base64",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.cipher as Record<string, unknown>).iv = "not base64!!";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "another cipher",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.cipher as Record<string, unknown>).name = "aes-128-gcm";
      }),
    expect: CorruptStoreError,
  },
  {
    name: "check missing",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        delete h.check;
      }),
    expect: CorruptStoreError,
  },
  // Well-formed headers whose values were changed.
  {
    name: "another salt (a different key: looks like a wrong passphrase)",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        const kdf = h.kdf as Record<string, string>;
        kdf.salt = flipBase64Char(kdf.salt, 0);
      }),
    expect: WrongPassphraseError,
  },
  {
    name: "another N (a different key: looks like a wrong passphrase)",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        (h.kdf as Record<string, unknown>).N = FAST.N * 2;
      }),
    expect: WrongPassphraseError,
  },
  {
    name: "another check",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        h.check = flipBase64Char(h.check as string, 0);
      }),
    expect: WrongPassphraseError,
  },
  {
    name: "another iv (authentication fails)",
    change: (_t, parts) =>
      withHeader(parts, (h) => {
        const cipher = h.cipher as Record<string, string>;
        cipher.iv = flipBase64Char(cipher.iv, 0);
      }),
    expect: CorruptStoreError,
  },
  {
    name: "header re-serialized with spaces (the AAD is the exact bytes)",
    change: (_t, parts) =>
      `${
        JSON.stringify(parts.header, null, 1).replaceAll("\n", "")
      }\n${parts.body}\n`,
    expect: CorruptStoreError,
  },
  {
    name: "header fields reordered",
    change: (_t, parts) => {
      const { version, ...rest } = parts.header;
      return `${JSON.stringify({ version, ...rest })}\n${parts.body}\n`;
    },
    expect: CorruptStoreError,
  },
  {
    name: "a flipped bit in the ciphertext",
    change: (_t, parts) => flipBodyByte(parts, 0),
    expect: CorruptStoreError,
  },
  {
    name: "a flipped bit in the tag",
    change: (_t, parts) => flipBodyByte(parts, -1),
    expect: CorruptStoreError,
  },
  {
    name: "the body of another store of the same passphrase",
    change: (_t, parts) =>
      `${parts.headerLine}\n${Buffer.alloc(64, 7).toString("base64")}\n`,
    expect: CorruptStoreError,
  },
];

Deno.test("unlockStore: every damaged file is refused and left byte for byte", async (t) => {
  await withStorePath(async (path) => {
    await storeWithOneSecret(path);
    const original = Deno.readFileSync(path);
    const text = new TextDecoder().decode(original);
    const parts = readParts(path);
    for (const tampering of TAMPERINGS) {
      await t.step(tampering.name, async () => {
        const changed = tampering.change(text, parts);
        if (typeof changed === "string") Deno.writeTextFileSync(path, changed);
        else Deno.writeFileSync(path, changed);
        Deno.chmodSync(path, 0o600);
        const before = fileHash(path);
        const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
        assert.ok(
          error instanceof tampering.expect,
          `expected ${tampering.expect.name}, got ${error}`,
        );
        assertNoSecretIn(everythingShown(error));
        assert.equal(fileHash(path), before, "the file is unchanged");
        // A second try fails the same way: nothing was cached or repaired.
        const again = await unlockStore(path, PASSPHRASE).catch((e) => e);
        assert.equal(again.name, error.name);
        assert.equal(fileHash(path), before);
        // Restored, the store opens with the right passphrase.
        Deno.writeFileSync(path, original);
        assert.equal(
          (await unlockStore(path, PASSPHRASE)).get("github"),
          VALUE,
        );
      });
    }
  });
});

Deno.test("unlockStore: a newer format version, whatever follows it", async () => {
  await withStorePath(async (path) => {
    await storeWithOneSecret(path);
    const parts = readParts(path);
    for (
      const text of [
        withHeader(parts, (h) => {
          h.version = 3;
        }),
        `{"format":"sherlock-secrets","version":7,"anything":"else"}\n`,
        `{"format":"sherlock-secrets","version":3}`,
      ]
    ) {
      Deno.writeTextFileSync(path, text);
      const before = fileHash(path);
      const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
      assert.ok(error instanceof NewerStoreError, String(error));
      assert.equal(error.code, "newer-version");
      assert.equal(error.version, JSON.parse(text.split("\n")[0]).version);
      assert.equal(error.supported, 2);
      assert.match(error.message, /upgrade sherlock/);
      assert.equal(fileHash(path), before);
    }
  });
});

Deno.test("unlockStore: authenticated contents that are not a store", async (t) => {
  await withStorePath(async (path) => {
    await storeWithOneSecret(path);
    const original = Deno.readFileSync(path);
    const at = "2026-01-01T00:00:00.000Z";
    const entry = { value: "v", created: at, updated: at };
    const contents: Record<string, unknown> = {
      "not JSON": "{",
      "an array": [],
      "created missing": { entries: {} },
      "created not a timestamp": { created: "yesterday", entries: {} },
      "an extra field": { created: at, entries: {}, extra: 1 },
      "a bad entry name": { created: at, entries: { "Bad.Name": entry } },
      "an entry without value": {
        created: at,
        entries: { github: { created: at, updated: at } },
      },
      "an empty value": {
        created: at,
        entries: { github: { ...entry, value: "" } },
      },
      "an entry with an extra field": {
        created: at,
        entries: { github: { ...entry, note: "x" } },
      },
    };
    for (const [name, plaintext] of Object.entries(contents)) {
      await t.step(name, async () => {
        sealIndependently(path, {
          passphrase: PASSPHRASE,
          plaintext: typeof plaintext === "string"
            ? plaintext
            : JSON.stringify(plaintext),
        });
        const before = fileHash(path);
        await assert.rejects(unlockStore(path, PASSPHRASE), CorruptStoreError);
        assert.equal(fileHash(path), before);
        Deno.writeFileSync(path, original);
      });
    }
    // The independent sealer itself makes valid stores.
    sealIndependently(path, {
      passphrase: PASSPHRASE,
      plaintext: JSON.stringify({ created: at, entries: { github: entry } }),
    });
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), "v");
  });
});

Deno.test("unlockStore: refuses a symlink, a folder and an oversized file", async () => {
  await withStorePath(async (path, dir) => {
    await storeWithOneSecret(path);
    const link = join(dir, "link.enc");
    Deno.symlinkSync(path, link);
    await assert.rejects(unlockStore(link, PASSPHRASE), CorruptStoreError);
    await assert.rejects(unlockStore(dir, PASSPHRASE), CorruptStoreError);
    const huge = join(dir, "huge.enc");
    Deno.writeTextFileSync(huge, "");
    Deno.truncateSync(huge, 17 * 1024 * 1024);
    await assert.rejects(unlockStore(huge, PASSPHRASE), CorruptStoreError);
    assert.equal(Deno.statSync(huge).size, 17 * 1024 * 1024);
  });
});

Deno.test("unlockStore: narrows a file readable by others to 0600, only on success", async () => {
  await withStorePath(async (path) => {
    await storeWithOneSecret(path);
    Deno.chmodSync(path, 0o644);
    await assert.rejects(unlockStore(path, WRONG), WrongPassphraseError);
    assert.equal(mode(path), 0o644, "a failed unlock changes nothing");
    await unlockStore(path, PASSPHRASE);
    assert.equal(mode(path), 0o600);
  });
});

// ---------------------------------------------------------------------------
// Writing, and failed writes.

Deno.test("SecretStore: a failed write leaves the file and the store as they were", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    await store.set("slack", "xoxb-1");
    const before = fileHash(path);
    const listBefore = store.list();
    // writePrivateFile names its temp file with crypto.randomUUID(): plant a
    // non-empty folder where the next one will go, so creating it fails.
    const fixed = "deadbeef-0000-4000-8000-000000000000" as const;
    const original = crypto.randomUUID;
    crypto.randomUUID = () => fixed;
    const planted = temporaryPath(path);
    Deno.mkdirSync(planted);
    Deno.writeTextFileSync(join(planted, "keep"), "");
    try {
      for (
        const attempt of [
          () => store.set("github", "new value"),
          () => store.set("new-service", "new value"),
          () => store.remove("slack"),
        ]
      ) {
        const error = await attempt().catch((e) => e);
        assert.ok(error instanceof StoreWriteError, String(error));
        assert.equal(error.code, "write-failed");
        assert.ok(error.cause !== undefined);
        assert.match(error.message, /left as it was$/);
        assertNoSecretIn(everythingShown(error));
        assert.ok(!everythingShown(error).includes("new value"));
        assert.equal(fileHash(path), before, "the old file is intact");
        assert.deepEqual(store.list(), listBefore, "memory is unchanged");
        assert.equal(store.get("github"), VALUE);
        assert.equal(store.get("slack"), "xoxb-1");
      }
    } finally {
      crypto.randomUUID = original;
      Deno.removeSync(planted, { recursive: true });
    }
    await store.set("github", "new value");
    assert.equal(
      (await unlockStore(path, PASSPHRASE)).get("github"),
      "new value",
    );
  });
});

Deno.test({
  name: "SecretStore: a read-only folder fails the write, old file intact",
  ignore: IS_ROOT, // root writes into read-only folders anyway
  fn: async () => {
    await withStorePath(async (path) => {
      const store = await storeWithOneSecret(path);
      const before = fileHash(path);
      Deno.chmodSync(join(path, ".."), 0o500);
      try {
        await assert.rejects(store.set("github", "v2"), StoreWriteError);
        assert.equal(fileHash(path), before);
        assert.equal(store.get("github"), VALUE);
      } finally {
        Deno.chmodSync(join(path, ".."), 0o700);
      }
    });
  },
});

Deno.test({
  name: "unlockStore: an unreadable file is a read error, left as it was",
  ignore: IS_ROOT, // root reads files of mode 000 anyway
  fn: async () => {
    await withStorePath(async (path) => {
      await storeWithOneSecret(path);
      Deno.chmodSync(path, 0o000);
      try {
        const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
        assert.ok(error instanceof StoreReadError, String(error));
        assert.equal(error.code, "read-failed");
        assert.equal(mode(path), 0o000);
      } finally {
        Deno.chmodSync(path, 0o600);
      }
      assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);
    });
  },
});

Deno.test("SecretStore: a write makes the folder private again, or recreates it", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const folder = join(path, "..");
    Deno.chmodSync(folder, 0o755);
    await store.set("slack", "x");
    assert.equal(mode(folder), 0o700);
    Deno.removeSync(folder, { recursive: true });
    await store.set("jira", "y");
    assert.equal(mode(folder), 0o700);
    assert.equal(mode(path), 0o600);
    const reopened = await unlockStore(path, PASSPHRASE);
    assert.deepEqual(reopened.list().map((info) => info.name), [
      "github",
      "jira",
      "slack",
    ]);
  });
});

Deno.test("createStore: a folder that cannot be made private is refused", async () => {
  await withStorePath(async (_path, dir) => {
    const notAFolder = join(dir, "file");
    Deno.writeTextFileSync(notAFolder, "");
    const error = await createStore(
      join(notAFolder, "secrets.enc"),
      PASSPHRASE,
      {
        kdf: FAST,
      },
    ).catch((e) => e);
    assert.ok(error instanceof StoreWriteError, String(error));
    const symlinked = join(dir, "link");
    Deno.mkdirSync(join(dir, "real"));
    Deno.symlinkSync(join(dir, "real"), symlinked);
    await assert.rejects(
      createStore(join(symlinked, "secrets.enc"), PASSPHRASE, { kdf: FAST }),
      StoreWriteError,
    );
    assert.deepEqual([...Deno.readDirSync(join(dir, "real"))], []);
  });
});

// ---------------------------------------------------------------------------
// Errors.

Deno.test("errors: typed, coded, mapped to exit codes, and secret-free", () => {
  const cases: [SecretStoreError, string, number][] = [
    [new StoreNotFoundError("/p"), "not-found", 77],
    [new StoreExistsError("/p"), "exists", 73],
    [new WrongPassphraseError("/p"), "wrong-passphrase", 77],
    [new CorruptStoreError("/p", "why"), "corrupt", 78],
    [new NewerStoreError("/p", 2), "newer-version", 78],
    [new StoreLockedError(), "locked", 77],
    [new InvalidSecretNameError(), "invalid-name", 2],
    [new InvalidSecretValueError("why"), "invalid-value", 2],
    [new InvalidPassphraseError("why"), "invalid-passphrase", 2],
    [new StoreReadError("/p", new Error("EIO")), "read-failed", 78],
    [new StoreWriteError("/p", new Error("disk full")), "write-failed", 73],
  ];
  for (const [error, code, exitCode] of cases) {
    assert.ok(error instanceof SecretStoreError);
    assert.ok(error instanceof SherlockError);
    assert.ok(error instanceof Error);
    assert.equal(error.code, code);
    assert.equal(error.exitCode, exitCode);
    assert.equal(error.name, error.constructor.name);
    assert.ok(!error.message.includes("\n"), "one line");
  }
});

Deno.test("SecretStore: two brokers sharing one store keep each other's secrets", async () => {
  // E.g. an SSH session without XDG_RUNTIME_DIR runs a broker of its own
  // beside the desktop's, on the same data folder.
  await withStorePath(async (path) => {
    const desktop = await storeWithOneSecret(path);
    const ssh = await unlockStore(path, PASSPHRASE);
    await desktop.set("slack", "s");
    await ssh.set("jira", "j");
    await Promise.all([desktop.set("a", "1"), ssh.set("b", "2")]);
    assert.equal(await ssh.remove("slack"), true);
    const names = (await unlockStore(path, PASSPHRASE)).list()
      .map((info) => info.name);
    assert.deepEqual(names, ["a", "b", "github", "jira"]);
    // Each sees the other's writes on its next write.
    await desktop.set("c", "3");
    assert.equal(desktop.get("jira"), "j");
    assert.equal(desktop.get("slack"), undefined);
  });
});

Deno.test("createStore: two at once, one store, the other refused", async () => {
  await withStorePath(async (path) => {
    const results = await Promise.allSettled(
      Array.from(
        { length: 4 },
        () => createStore(path, PASSPHRASE, { kdf: FAST }),
      ),
    );
    const created = results.filter((result) => result.status === "fulfilled");
    assert.equal(created.length, 1);
    for (const result of results) {
      if (result.status === "rejected") {
        assert.ok(
          result.reason instanceof StoreExistsError,
          String(result.reason),
        );
      }
    }
  });
});

Deno.test("SecretStore: a store replaced by another one since the login is refused, not merged", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    Deno.removeSync(path);
    await createStore(path, "another passphrase", { kdf: FAST });
    const before = Deno.readFileSync(path);
    const error = await store.set("x", "y").catch((e) => e);
    assert.ok(error instanceof CorruptStoreError, String(error));
    assert.deepEqual(Deno.readFileSync(path), before);
  });
});
