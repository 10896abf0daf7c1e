/**
 * Which keyring this OS has (`keyring.ts` says what a keyring is).
 *
 * @module
 */

import { credentialManager } from "./credential_manager.ts";
import type { Keyring, KeyringOptions } from "./keyring.ts";
import { keychain } from "./keychain.ts";
import { secretService } from "./secret_service.ts";

/**
 * The keyring of this OS: Secret Service on Linux and the BSDs, the
 * Keychain on macOS, Credential Manager on Windows.
 */
export function systemKeyring(
  os: typeof Deno.build.os = Deno.build.os,
  options: KeyringOptions = {},
): Keyring {
  switch (os) {
    case "darwin":
      return keychain(options);
    case "windows":
      return credentialManager(options);
    default:
      return secretService(options);
  }
}
