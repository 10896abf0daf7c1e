/**
 * The remembered key in Windows Credential Manager, through Windows
 * PowerShell and the WinRT `PasswordVault` (the Credential Locker, shown
 * under "Web Credentials"): no compiler, no module to install. Untested
 * here (no Windows in this project's CI); written against the documented
 * `Windows.Security.Credentials.PasswordVault` API. The script is in argv
 * and holds no secret; the key is read from stdin. The item: resource
 * `sherlock`, user name the store's id; adding it again replaces it. Its
 * value (44 characters) is far below Credential Manager's 2,560-byte limit.
 *
 * @module
 */

import { KEYRING_TIMEOUT_MS, runBounded } from "./bounded_command.ts";
import {
  type Keyring,
  KEYRING_SERVICE,
  type KeyringItem,
  type KeyringLookup,
  type KeyringOptions,
  KeyringUnavailableError,
} from "./keyring.ts";

const NAME = "Credential Manager";
const TOOL = "powershell.exe";
/** The script's exit code for "no such item". */
const ABSENT = 3;

/** Loads the WinRT type; `$r` is the resource, `$u` the user name. */
const PRELUDE = `$ErrorActionPreference='Stop';` +
  `[void][Windows.Security.Credentials.PasswordVault,Windows.Security.Credentials,ContentType=WindowsRuntime];` +
  `$v=New-Object Windows.Security.Credentials.PasswordVault;` +
  `$r='${KEYRING_SERVICE}';`;

/** Windows Credential Manager, through PowerShell. */
export function credentialManager(options: KeyringOptions = {}): Keyring {
  // PowerShell alone takes most of a second to start.
  const timeoutMs = options.timeoutMs ?? 2 * KEYRING_TIMEOUT_MS;
  const run = (script: string, stdin?: string) =>
    runBounded({
      program: TOOL,
      args: ["-NoProfile", "-NonInteractive", "-Command", script],
      stdin: stdin === undefined ? undefined : new TextEncoder().encode(stdin),
      timeoutMs,
    });
  // The id is base64: no quote can end the string it is put in.
  const user = (id: string) => `$u='${id}';`;
  const find = `try{$c=$v.Retrieve($r,$u)}catch{exit ${ABSENT}};`;
  return {
    name: NAME,
    async lookup(id: string): Promise<KeyringLookup> {
      const result = await run(
        `${PRELUDE}${
          user(id)
        }${find}$c.RetrievePassword();[Console]::Out.Write($c.Password)`,
      );
      if (result.failure) {
        return { kind: "unavailable", reason: result.failure };
      }
      if (result.code === ABSENT) return { kind: "absent" };
      const value = new TextDecoder().decode(result.stdout).trim();
      result.stdout.fill(0);
      if (result.code === 0 && value !== "") return { kind: "found", value };
      return {
        kind: "unavailable",
        reason: `PowerShell exited with ${result.code}`,
      };
    },
    async store(item: KeyringItem, value: string): Promise<void> {
      const result = await run(
        `${PRELUDE}${user(item.id)}$p=[Console]::In.ReadLine();` +
          `$v.Add((New-Object Windows.Security.Credentials.PasswordCredential($r,$u,$p)))`,
        `${value}\n`,
      );
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code !== 0) {
        throw new KeyringUnavailableError(
          NAME,
          `PowerShell exited with ${result.code}`,
        );
      }
    },
    async remove(id: string): Promise<boolean> {
      const result = await run(`${PRELUDE}${user(id)}${find}$v.Remove($c)`);
      if (result.failure) {
        throw new KeyringUnavailableError(NAME, result.failure);
      }
      if (result.code === ABSENT) return false;
      if (result.code !== 0) {
        throw new KeyringUnavailableError(
          NAME,
          `PowerShell exited with ${result.code}`,
        );
      }
      return true;
    },
  };
}
