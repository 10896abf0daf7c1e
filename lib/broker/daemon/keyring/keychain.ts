/**
 * The remembered key in the macOS Keychain, through `/usr/bin/security`.
 * Untested here (no macOS in this project's CI); written against
 * security(1). `add-generic-password -w <password>` would put the key in
 * argv, so the item is written with `security -i`, which reads its
 * commands on stdin: the key is in no process's argv. Reading is
 * `find-generic-password -w`, which prints the password on stdout; a
 * missing item is exit 44. The item: service `sherlock`, account the
 * store's id, updated in place (`-U`).
 *
 * The item's access list trusts `/usr/bin/security`, the program that
 * created it: any process of the user that runs `security
 * find-generic-password` reads it without a prompt while the login
 * keychain is unlocked (docs/security.md).
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

const NAME = "Keychain";
const TOOL = "/usr/bin/security";
/** security(1)'s exit code for "the specified item could not be found". */
const ITEM_NOT_FOUND = 44;

/** The macOS Keychain, through `/usr/bin/security`. */
export function keychain(options: KeyringOptions = {}): Keyring {
  const timeoutMs = options.timeoutMs;
  const item = (id: string) => ["-s", KEYRING_SERVICE, "-a", id];
  return {
    name: NAME,
    async lookup(id: string): Promise<KeyringLookup> {
      const result = await runBounded({
        program: TOOL,
        args: ["find-generic-password", ...item(id), "-w"],
        timeoutMs,
      });
      if (result.failure) {
        return { kind: "unavailable", reason: result.failure };
      }
      if (result.code === ITEM_NOT_FOUND) return { kind: "absent" };
      const value = new TextDecoder().decode(result.stdout).trim();
      result.stdout.fill(0);
      if (result.code === 0 && value !== "") return { kind: "found", value };
      return {
        kind: "unavailable",
        reason: `security exited with ${result.code}${
          result.stderr ? `: ${result.stderr}` : ""
        }`,
      };
    },
    async store(entry: KeyringItem, value: string): Promise<void> {
      // One command line on stdin; the id and value are base64 and the
      // label is quoted, so no word splits where it should not.
      const label = `sherlock secret store key`;
      const command = [
        "add-generic-password",
        "-U",
        ...item(entry.id),
        "-l",
        `"${label}"`,
        "-w",
        value,
      ].join(" ");
      const result = await runBounded({
        program: TOOL,
        args: ["-i"],
        stdin: new TextEncoder().encode(`${command}\nquit\n`),
        timeoutMs,
      });
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code !== 0 || result.stderr !== "") {
        throw new KeyringUnavailableError(
          NAME,
          `security add-generic-password failed${
            result.stderr ? `: ${result.stderr}` : ` (exit ${result.code})`
          }`,
        );
      }
    },
    async remove(id: string): Promise<boolean> {
      const result = await runBounded({
        program: TOOL,
        args: ["delete-generic-password", ...item(id)],
        timeoutMs,
      });
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code === ITEM_NOT_FOUND) return false;
      if (result.code !== 0) {
        throw new KeyringUnavailableError(
          NAME,
          `security delete-generic-password exited with ${result.code}`,
        );
      }
      return true;
    },
  };
}
