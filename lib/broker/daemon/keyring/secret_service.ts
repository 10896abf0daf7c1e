/**
 * The remembered key in the freedesktop Secret Service (GNOME Keyring,
 * KeePassXC, KWallet's bridge), through libsecret's `secret-tool`
 * (Debian: libsecret-tools): `store` reads the secret on stdin, `lookup`
 * prints it on stdout, so it is in no argv. The item's attributes are
 * `service = sherlock` and `store = <the store's id>`; storing with the same
 * attributes replaces the item, so there is one per store.
 *
 * secret-tool tells "no item" from "locked" by nothing but its stderr: a
 * locked collection whose unlock prompt cannot be shown (no display) ends
 * like a missing item (exit 1, nothing on stderr). Either way the broker
 * falls back to the passphrase.
 *
 * @module
 */

import { runBounded } from "./bounded_command.ts";
import {
  type Keyring,
  KEYRING_SERVICE,
  type KeyringItem,
  type KeyringLookup,
  type KeyringOptions,
  KeyringUnavailableError,
} from "./keyring.ts";

const NAME = "Secret Service";
const TOOL = "secret-tool";

/** The Secret Service keyring, through `secret-tool`. */
export function secretService(options: KeyringOptions = {}): Keyring {
  const timeoutMs = options.timeoutMs;
  const attributes = (id: string) => ["service", KEYRING_SERVICE, "store", id];
  return {
    name: NAME,
    async lookup(id: string): Promise<KeyringLookup> {
      const problem = noBusProblem();
      if (problem) return { kind: "unavailable", reason: problem };
      const result = await runBounded({
        program: TOOL,
        args: ["lookup", ...attributes(id)],
        timeoutMs,
      });
      if (result.failure) {
        return { kind: "unavailable", reason: result.failure };
      }
      const value = new TextDecoder().decode(result.stdout).trim();
      result.stdout.fill(0);
      if (result.code === 0 && value !== "") return { kind: "found", value };
      if (result.code === 1 && result.stderr === "") return { kind: "absent" };
      return {
        kind: "unavailable",
        reason: `${TOOL} exited with ${result.code}${
          result.stderr ? `: ${result.stderr}` : ""
        }`,
      };
    },
    async store(item: KeyringItem, value: string): Promise<void> {
      const problem = noBusProblem();
      if (problem) throw new KeyringUnavailableError(NAME, problem);
      const result = await runBounded({
        program: TOOL,
        args: ["store", `--label=${item.label}`, ...attributes(item.id)],
        stdin: new TextEncoder().encode(value),
        timeoutMs,
      });
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code !== 0) {
        throw new KeyringUnavailableError(
          NAME,
          `${TOOL} store exited with ${result.code}${
            result.stderr ? `: ${result.stderr}` : " (is the keyring locked?)"
          }`,
        );
      }
    },
    async remove(id: string): Promise<boolean> {
      const problem = noBusProblem();
      if (problem) throw new KeyringUnavailableError(NAME, problem);
      const before = await this.lookup(id);
      if (before.kind === "unavailable") {
        throw new KeyringUnavailableError(NAME, before.reason);
      }
      if (before.kind === "absent") return false;
      const result = await runBounded({
        program: TOOL,
        args: ["clear", ...attributes(id)],
        timeoutMs,
      });
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code !== 0) {
        throw new KeyringUnavailableError(
          NAME,
          `${TOOL} clear exited with ${result.code}${
            result.stderr ? `: ${result.stderr}` : ""
          }`,
        );
      }
      return true;
    },
  };
}

/**
 * Why there is no session bus to ask, or undefined. Without
 * `DBUS_SESSION_BUS_ADDRESS` (SSH without a session, a server, CI) libdbus
 * would try to autolaunch a bus through X11: no keyring is there to find.
 */
function noBusProblem(): string | undefined {
  const address = Deno.env.get("DBUS_SESSION_BUS_ADDRESS");
  if (address !== undefined && address !== "") return undefined;
  // The desktop's default bus socket, which libdbus does not look for by itself.
  const runtime = Deno.env.get("XDG_RUNTIME_DIR");
  if (runtime) {
    try {
      if (Deno.statSync(`${runtime}/bus`).isSocket) return undefined;
    } catch {
      // No bus there either.
    }
  }
  return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)";
}
