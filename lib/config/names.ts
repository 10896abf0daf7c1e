/**
 * The shapes of names that end up in file names, argv and config keys.
 * Shared by the schemas and the pure launch code; no dependencies.
 *
 * @module
 */

/**
 * A profile or service name: lowercase letters, digits, `-` and `_`, starting
 * with a letter or digit. No dots (they separate parts of rendered file
 * names) and nothing a shell or a TOML bare key would treat specially.
 */
export const NAME_PATTERN: RegExp = /^[a-z0-9][a-z0-9_-]*$/;

/** An environment variable name as POSIX shells accept it. */
export const ENV_NAME_PATTERN: RegExp = /^[A-Za-z_][A-Za-z0-9_]*$/;
