/**
 * The secret store's version 2: key slots. A remembered key (the one the OS
 * keyring keeps) opens the store without the passphrase; a new passphrase
 * keeps it valid; forgetting it removes its slot; a wrong key changes
 * nothing. Real files in temporary folders; the format is checked by an
 * independent decoder written from docs/secret_store.md.
 *
 * @module
 */

import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { createDecipheriv, createHash, randomBytes } from "node:crypto";
import { join } from "node:path";
import {
  CorruptStoreError,
  createStore,
  readStoreSummary,
  REMEMBERED_KEY_BYTES,
  type ScryptParams,
  type SecretStore,
  unlockStore,
  unlockStoreWithKey,
  WrongPassphraseError,
  WrongRememberedKeyError,
} from "../../lib/broker/daemon/secret_store.ts";

const PASSPHRASE = "PASSPHRASE-MARKER correct horse";
const NEW_PASSPHRASE = "NEWPASS-MARKER battery staple";
const VALUE = "VALUE-MARKER-ghp_0123456789abcdef";
const FAST: ScryptParams = { N: 2 ** 10, r: 8, p: 1 };

async function withStorePath(
  body: (path: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "sherlock-slots-" });
  try {
    await body(join(dir, "data", "secrets.enc"));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

function fileHash(path: string): string {
  return createHash("sha256").update(Deno.readFileSync(path)).digest("hex");
}

function header(path: string): Record<string, unknown> {
  return JSON.parse(Deno.readTextFileSync(path).split("\n")[0]);
}

async function storeWithOneSecret(path: string): Promise<SecretStore> {
  const store = await createStore(path, PASSPHRASE, { kdf: FAST });
  await store.set("github", VALUE);
  return store;
}

function newKey(): Uint8Array {
  return new Uint8Array(randomBytes(REMEMBERED_KEY_BYTES));
}

/**
 * Decrypts a version 2 store with a remembered key using only what
 * docs/secret_store.md says: the remembered slot's `key` is IV (12), the
 * wrapped data key (32) and the tag (16), AES-256-GCM under the remembered
 * key with the AAD `sherlock-secrets v2 remembered slot <id>`; the data key
 * decrypts line 2 with line 1's bytes as AAD.
 */
function decryptWithRemembered(path: string, remembered: Uint8Array): unknown {
  const [line, body] = Deno.readTextFileSync(path).split("\n");
  const h = JSON.parse(line);
  const slot = h.slots.find((s: { kind: string }) => s.kind === "remembered");
  const wrapped = Buffer.from(slot.key, "base64");
  const unwrap = createDecipheriv(
    "aes-256-gcm",
    Buffer.from(remembered),
    wrapped.subarray(0, 12),
  );
  unwrap.setAAD(Buffer.from(`sherlock-secrets v2 remembered slot ${h.id}`));
  unwrap.setAuthTag(wrapped.subarray(44));
  const dataKey = Buffer.concat([
    unwrap.update(wrapped.subarray(12, 44)),
    unwrap.final(),
  ]);
  const sealed = Buffer.from(body, "base64");
  const decipher = createDecipheriv(
    "aes-256-gcm",
    dataKey,
    Buffer.from(h.cipher.iv, "base64"),
  );
  decipher.setAAD(Buffer.from(line, "utf8"));
  decipher.setAuthTag(sealed.subarray(sealed.length - 16));
  return JSON.parse(
    Buffer.concat([
      decipher.update(sealed.subarray(0, sealed.length - 16)),
      decipher.final(),
    ]).toString("utf8"),
  );
}

Deno.test("a new store is version 1 and has no remembered key", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    assert.equal(header(path).version, 1);
    assert.equal(store.remembered, false);
    assert.deepEqual(await readStoreSummary(path), {
      version: 1,
      id: (header(path).kdf as { salt: string }).salt,
      remembered: false,
    });
    const before = fileHash(path);
    const error = await unlockStoreWithKey(path, newKey()).catch((e) => e);
    assert.ok(error instanceof WrongRememberedKeyError, String(error));
    assert.match(error.message, /has no remembered key/);
    assert.equal(error.exitCode, 77);
    assert.equal(fileHash(path), before);
  });
});

Deno.test("remembering a key upgrades the store to version 2; the key and the passphrase both open it", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const id = store.id;
    const key = newKey();
    await store.setRememberedKey(key);
    const h = header(path);
    assert.equal(h.version, 2);
    assert.equal(h.id, id, "the version 1 salt is the store's id");
    assert.deepEqual(
      Object.keys(h),
      ["format", "version", "id", "slots", "cipher"],
    );
    assert.deepEqual(
      (h.slots as { kind: string }[]).map((slot) => slot.kind),
      ["passphrase", "remembered"],
    );
    assert.equal(store.remembered, true);
    assert.deepEqual(await readStoreSummary(path), {
      version: 2,
      id,
      remembered: true,
    });
    // Written as the docs say.
    const plain = decryptWithRemembered(path, key) as {
      entries: Record<string, { value: string }>;
    };
    assert.equal(plain.entries.github.value, VALUE);
    // The store in memory goes on working with the new data key.
    await store.set("gitlab", "second");
    const byKey = await unlockStoreWithKey(path, key);
    assert.equal(byKey.get("github"), VALUE);
    assert.equal(byKey.get("gitlab"), "second");
    assert.equal(byKey.id, id);
    const byPassphrase = await unlockStore(path, PASSPHRASE);
    assert.equal(byPassphrase.get("gitlab"), "second");
    // A store opened by the key writes too, and keeps the slot.
    await byKey.set("jira", "third");
    assert.equal((await unlockStoreWithKey(path, key)).get("jira"), "third");
  });
});

Deno.test("a wrong or stale remembered key is refused; the file is unchanged and the passphrase still works", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const old = newKey();
    await store.setRememberedKey(old);
    await store.setRememberedKey(newKey()); // remembered anew: `old` is stale
    const before = fileHash(path);
    for (const key of [old, newKey(), new Uint8Array(5)]) {
      const error = await unlockStoreWithKey(path, key).catch((e) => e);
      assert.ok(error instanceof WrongRememberedKeyError, String(error));
      assert.match(error.message, /sherlock login --remember/);
      assert.equal(fileHash(path), before);
    }
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);
  });
});

Deno.test("changing the passphrase keeps the remembered key valid", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const key = newKey();
    await store.setRememberedKey(key);
    const salt = (header(path).slots as { kdf: { salt: string } }[])[0].kdf
      .salt;
    await store.changePassphrase(NEW_PASSPHRASE);
    const slot = (header(path).slots as { kdf: { salt: string } }[])[0];
    assert.notEqual(slot.kdf.salt, salt, "a new passphrase gets a new salt");
    const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
    assert.ok(error instanceof WrongPassphraseError, String(error));
    assert.equal(
      (await unlockStore(path, NEW_PASSPHRASE)).get("github"),
      VALUE,
    );
    assert.equal((await unlockStoreWithKey(path, key)).get("github"), VALUE);
    // And a store opened by the key can change it too.
    const byKey = await unlockStoreWithKey(path, key);
    await byKey.changePassphrase(PASSPHRASE);
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);
  });
});

Deno.test("changing the passphrase of a version 1 store", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    await store.changePassphrase(NEW_PASSPHRASE);
    assert.equal(header(path).version, 2);
    assert.equal(store.remembered, false);
    assert.ok(
      await unlockStore(path, PASSPHRASE).catch((e) => e) instanceof
        WrongPassphraseError,
    );
    assert.equal(
      (await unlockStore(path, NEW_PASSPHRASE)).get("github"),
      VALUE,
    );
  });
});

Deno.test("forgetting the remembered key removes its slot; the old key opens nothing", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const key = newKey();
    await store.setRememberedKey(key);
    await store.setRememberedKey(undefined);
    assert.equal(store.remembered, false);
    assert.deepEqual(
      (header(path).slots as { kind: string }[]).map((slot) => slot.kind),
      ["passphrase"],
    );
    const error = await unlockStoreWithKey(path, key).catch((e) => e);
    assert.ok(error instanceof WrongRememberedKeyError, String(error));
    assert.equal((await unlockStore(path, PASSPHRASE)).get("github"), VALUE);
    // Nothing to forget: no write at all.
    const before = fileHash(path);
    await store.setRememberedKey(undefined);
    assert.equal(fileHash(path), before);
  });
});

Deno.test("two daemons on one store: an upgrade by one is followed by the other, and neither drops the other's slot", async () => {
  await withStorePath(async (path) => {
    const first = await storeWithOneSecret(path);
    const second = await unlockStore(path, PASSPHRASE);
    const key = newKey();
    await first.setRememberedKey(key); // version 1 → 2 under `second`'s feet
    await second.set("gitlab", "from-second");
    assert.equal(second.remembered, true);
    const byKey = await unlockStoreWithKey(path, key);
    assert.equal(byKey.get("gitlab"), "from-second");
    await first.reload();
    assert.equal(first.get("gitlab"), "from-second");
    // A passphrase changed by one: the other keeps writing, with the slot.
    await first.changePassphrase(NEW_PASSPHRASE);
    await second.set("jira", "x");
    assert.equal((await unlockStore(path, NEW_PASSPHRASE)).get("jira"), "x");
  });
});

Deno.test("a version 2 store whose slots were tampered with fails as a wrong key or a damaged file, unchanged", async () => {
  await withStorePath(async (path) => {
    const store = await storeWithOneSecret(path);
    const key = newKey();
    await store.setRememberedKey(key);
    const good = Deno.readTextFileSync(path);
    const [line, body] = good.split("\n");
    const h = JSON.parse(line);
    const flip = (b64: string) => {
      const bytes = Buffer.from(b64, "base64");
      bytes[20] ^= 1;
      return bytes.toString("base64");
    };
    const cases: [string, (x: typeof h) => void, "key" | "passphrase"][] = [
      ["a bit of the remembered slot", (x) => {
        x.slots[1].key = flip(x.slots[1].key);
      }, "key"],
      ["the slots swapped in kind", (x) => {
        x.slots[1].key = x.slots[0].key;
      }, "key"],
      ["a bit of the passphrase slot's key", (x) => {
        x.slots[0].key = flip(x.slots[0].key);
      }, "passphrase"],
      ["another id", (x) => {
        x.id = randomBytes(16).toString("base64");
      }, "passphrase"],
    ];
    for (const [name, change, by] of cases) {
      const copy = JSON.parse(line);
      change(copy);
      Deno.writeTextFileSync(path, `${JSON.stringify(copy)}\n${body}\n`);
      const before = fileHash(path);
      const error = await (by === "key"
        ? unlockStoreWithKey(path, key)
        : unlockStore(path, PASSPHRASE)).catch((e) =>
          e
        );
      assert.ok(
        by === "key"
          ? error instanceof WrongRememberedKeyError
          : error instanceof CorruptStoreError,
        `${name}: ${error}`,
      );
      assert.equal(fileHash(path), before, name);
    }
    for (
      const bad of [
        { slots: [] },
        { slots: [h.slots[1]] },
        { slots: [h.slots[0], h.slots[0]] },
        { slots: [h.slots[0], { ...h.slots[1], extra: 1 }] },
      ]
    ) {
      Deno.writeTextFileSync(
        path,
        `${JSON.stringify({ ...h, ...bad })}\n${body}\n`,
      );
      const error = await unlockStore(path, PASSPHRASE).catch((e) => e);
      assert.ok(error instanceof CorruptStoreError, String(error));
    }
    Deno.writeTextFileSync(path, good);
    assert.equal((await unlockStoreWithKey(path, key)).get("github"), VALUE);
  });
});
