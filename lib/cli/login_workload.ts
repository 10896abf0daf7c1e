/**
 * `sherlock login --subject-token-file PATH` (or `--subject-token-env VAR`)
 * with `[login] provider = "oidc"`: a CI runner's login. The workload
 * identity token the CI platform gave the job is read here (the path or the
 * variable's name is in argv, never the token) and handed to the daemon
 * over its socket, which exchanges it at the provider (RFC 8693) and holds
 * what comes back. No terminal, no browser, no passphrase.
 *
 * `sherlock login --id-token-file PATH` (or `--id-token-env VAR`) takes the
 * same path with an ID token the provider issued to the `[login]
 * client_id` through another SSO client: the daemon holds it as the login
 * (no exchange) until it expires — the identity assertion that
 * Enterprise-Managed Authorization exchanges for ID-JAGs.
 *
 * @module
 */

import { ensureBroker, workloadLogin } from "../broker/client.ts";
import {
  DEFAULT_SUBJECT_TOKEN_TYPE,
  SUBJECT_TOKEN_TYPES,
} from "../broker/protocol.ts";
import { readOperatorFile } from "../config/toml_files.ts";
import { ConfigError, UsageError } from "../errors.ts";
import type { CommandContext } from "./context.ts";
import { describeOidcLogin } from "./login_text.ts";
import { printer } from "./output.ts";

/** Where the workload token is, and its type. */
export interface WorkloadTokenSource {
  /** `--subject-token-file PATH`. */
  file?: string;
  /** `--subject-token-env VAR`. */
  env?: string;
  /** The RFC 8693 type URN (`--subject-token-type`, short names mapped). */
  type: string;
  /** `--id-token-file`/`--id-token-env`: an ID token held, not exchanged. */
  hold?: boolean;
}

/** The flags of a workload login, as `chooseLogin` passes them on. */
export const WORKLOAD_FLAGS = [
  "--subject-token-file",
  "--subject-token-env",
  "--subject-token-type",
  "--id-token-file",
  "--id-token-env",
] as const;

/**
 * The most a subject token file may hold: a CI platform's token is a JWT
 * of a few KiB, and the file might be a device that never ends.
 */
export const MAX_SUBJECT_TOKEN_BYTES = 64 * 1024;

/** Logs in with the workload token; returns the exit code. */
export async function workloadLoginCommand(
  source: WorkloadTokenSource,
  context: CommandContext,
): Promise<number> {
  const { env, paths } = context;
  // Read first: a login that cannot work fails at once, with no daemon.
  const subjectToken = readSubjectToken(source, env);
  // The broker this command may start inherits its environment: not the
  // workload token (nor do the credential helpers it runs).
  if (source.env !== undefined) Deno.env.delete(source.env);
  await ensureBroker({ socket: paths.socket, logFile: paths.brokerLog });
  const status = await workloadLogin(paths.socket, {
    subjectToken,
    subjectTokenType: source.type,
    ...(source.hold ? { hold: true } : {}),
  });
  printer(context).line(`logged in: ${describeOidcLogin(status)}`);
  return 0;
}

/**
 * The workload flags of `args` (each `--flag VALUE` or `--flag=VALUE`):
 * the token source, or undefined when none of them is given. Exactly one
 * of the file and the variable; the type a known one.
 */
export function parseWorkloadFlags(
  args: readonly string[],
): { source?: WorkloadTokenSource; rest: string[] } {
  const values: Partial<Record<(typeof WORKLOAD_FLAGS)[number], string>> = {};
  const rest: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const [flag, inline] = splitFlag(args[i]);
    const known = WORKLOAD_FLAGS.find((name) => name === flag);
    if (!known) {
      rest.push(args[i]);
      continue;
    }
    const value = inline ?? args[++i];
    if (value === undefined || value === "") {
      throw new UsageError(`${known} needs a value`);
    }
    if (values[known] !== undefined) {
      throw new UsageError(`${known} is given twice`);
    }
    values[known] = value;
  }
  const given = WORKLOAD_FLAGS.filter((flag) =>
    flag !== "--subject-token-type" && values[flag] !== undefined
  );
  if (given.length > 1) {
    throw new UsageError(`give ${given[0]} or ${given[1]}, not both`);
  }
  const hold = values["--id-token-file"] !== undefined ||
    values["--id-token-env"] !== undefined;
  const file = values["--subject-token-file"] ?? values["--id-token-file"];
  const env = values["--subject-token-env"] ?? values["--id-token-env"];
  const typeName = values["--subject-token-type"];
  if (hold && typeName !== undefined) {
    throw new UsageError(
      "--subject-token-type goes with --subject-token-file or --subject-token-env; --id-token-file and --id-token-env take an ID token",
    );
  }
  if (file === undefined && env === undefined) {
    if (typeName !== undefined) {
      throw new UsageError(
        "--subject-token-type goes with --subject-token-file or --subject-token-env",
      );
    }
    return { rest };
  }
  const type = typeName === undefined
    ? DEFAULT_SUBJECT_TOKEN_TYPE
    : subjectTokenType(typeName);
  if (type === undefined) {
    throw new UsageError(
      `--subject-token-type ${typeName} is not one sherlock knows: use ${
        Object.keys(SUBJECT_TOKEN_TYPES).join(", ")
      } (or its urn:ietf:params:oauth:token-type: URN)`,
    );
  }
  return {
    source: {
      ...(file !== undefined ? { file } : {}),
      ...(env !== undefined ? { env } : {}),
      type,
      ...(hold ? { hold } : {}),
    },
    rest,
  };
}

/**
 * The workload token: the file's text or the variable's value, without
 * surrounding whitespace. A missing, empty or oversized one is the CI
 * job's configuration (78); no part of it is ever quoted.
 */
export function readSubjectToken(
  source: WorkloadTokenSource,
  env: Readonly<Record<string, string | undefined>>,
): string {
  let text: string | undefined;
  let where: string;
  const what = source.hold ? "the ID token" : "the workload token";
  const holder = source.hold ? "you" : "the CI job";
  if (source.file !== undefined) {
    where = `the ${source.hold ? "ID" : "subject"} token file ${source.file}`;
    text = readOperatorFile(
      source.file,
      "a subject token file",
      MAX_SUBJECT_TOKEN_BYTES,
    );
    if (text === undefined) {
      throw new ConfigError(
        `${where} does not exist: ${holder} must write ${what} there before "sherlock login"`,
      );
    }
  } else {
    where = `the environment variable ${source.env}`;
    text = env[source.env!];
    if (text === undefined) {
      throw new ConfigError(
        `${where} is not set: ${holder} must put ${what} in it before "sherlock login"`,
      );
    }
  }
  const token = text.trim();
  if (token === "") throw new ConfigError(`${where} holds no token`);
  // deno-lint-ignore no-control-regex
  if (/[\s\u0000-\u001f\u007f]/.test(token)) {
    throw new ConfigError(
      `${where} holds more than one token (whitespace or control characters inside); it must hold ${what} alone`,
    );
  }
  return token;
}

/**
 * The URN of a `--subject-token-type` value: a short name of
 * {@linkcode SUBJECT_TOKEN_TYPES} or one of their URNs; undefined for any
 * other.
 */
export function subjectTokenType(name: string): string | undefined {
  if (Object.hasOwn(SUBJECT_TOKEN_TYPES, name)) {
    return SUBJECT_TOKEN_TYPES[name as keyof typeof SUBJECT_TOKEN_TYPES];
  }
  return Object.values(SUBJECT_TOKEN_TYPES).find((urn) => urn === name);
}

function splitFlag(arg: string): [string, string | undefined] {
  const equals = arg.indexOf("=");
  return arg.startsWith("--") && equals !== -1
    ? [arg.slice(0, equals), arg.slice(equals + 1)]
    : [arg, undefined];
}
