/**
 * `sherlock login` with `[login] provider = "oidc"`: the daemon signs in at
 * the OpenID provider (it holds every token); this command starts the
 * login, opens the browser or prints the device code, and waits; a CI
 * runner's login with a workload token is `login_workload.ts`. `login.ts`
 * dispatches here.
 *
 * @module
 */

import {
  ensureBroker,
  finishOidcLogin,
  startOidcLogin,
} from "../broker/client.ts";
import { loadSettings } from "../config/settings.ts";
import { ValidationCache } from "../config/validation_cache.ts";
import { ConfigError, UsageError } from "../errors.ts";
import {
  browserOpenable,
  ignoredWarning,
  openBrowser,
  writeLaunchPage,
} from "./browser.ts";
import type { CommandContext } from "./context.ts";
import { describeOidcLogin } from "./login_text.ts";
import {
  parseWorkloadFlags,
  WORKLOAD_FLAGS,
  workloadLoginCommand,
  type WorkloadTokenSource,
} from "./login_workload.ts";
import { printer } from "./output.ts";

/** How the OIDC login runs. */
export interface OidcLoginOptions {
  /** The device grant (RFC 8628), asked for with `--device`. */
  device: boolean;
  /** Print the URL only (`--no-browser`). */
  noBrowser: boolean;
  /** A CI runner's workload token (`--subject-token-file`…) instead. */
  workload?: WorkloadTokenSource;
}

/** Signs in at the provider; returns the exit code. */
export async function oidcLoginCommand(
  options: OidcLoginOptions,
  context: CommandContext,
): Promise<number> {
  if (options.workload) {
    return await workloadLoginCommand(options.workload, context);
  }
  const out = printer(context);
  const { env, paths } = context;
  // Over SSH or without a display no browser can show the page: the
  // device grant needs none on this machine.
  const device = options.device ||
    (!options.noBrowser && !browserOpenable(env));
  await ensureBroker({ socket: paths.socket, logFile: paths.brokerLog });
  const { flow, url, userCode } = await startOidcLogin(paths.socket, {
    device,
  });
  // Ask for the result before the browser runs: a headless one may finish
  // before it exits.
  const finished = finishOidcLogin(paths.socket, flow);
  finished.catch(() => {});
  if (userCode !== undefined) {
    out.warning(
      `to log in, open ${url} on any device and enter the code ${userCode}`,
    );
  } else if (options.noBrowser) {
    // The operator's own stderr: the URL goes in no argv (docs/security.md).
    out.warning(`to log in, open: ${url}`);
  }
  // The URL is in no argv: the browser gets a 0600 launch page for it.
  using page = userCode === undefined && !options.noBrowser
    ? writeLaunchPage(url, paths.runtimeDir)
    : undefined;
  if (page) {
    out.warning(
      `to log in, sherlock opens your browser at ${page.url} (it forwards to the provider; --no-browser prints the URL)`,
    );
  }
  const browser = page
    ? openBrowser({
      page,
      url,
      browser: env.BROWSER,
      otherwise:
        `or run "sherlock login --device" where the provider offers it`,
    })
    : undefined;
  const status = await finished;
  await browser?.catch(() => {});
  if (status.ignoredRequests) {
    out.warning(ignoredWarning(status.ignoredRequests));
  }
  out.line(`logged in: ${describeOidcLogin(status)}`);
  return 0;
}

/**
 * Which login `sherlock login ARGS` is: the OIDC one when config.toml says
 * `provider = "oidc"` and `--local` is not given (its flags `--device`,
 * `--no-browser`, or a workload token's `--subject-token-file`…), else the
 * local store's, with the remaining arguments.
 */
export async function chooseLogin(
  args: readonly string[],
  context: CommandContext,
): Promise<{ oidc: OidcLoginOptions } | { local: string[] }> {
  const local = args.includes("--local");
  const parsed = parseWorkloadFlags(args.filter((arg) => arg !== "--local"));
  const rest = parsed.rest;
  const oidcFlags = [
    ...rest.filter((arg) => arg === "--device" || arg === "--no-browser"),
    ...(parsed.source ? [sourceFlag(parsed.source)] : []),
  ];
  if (local) {
    if (oidcFlags.length > 0) {
      throw new UsageError(`${oidcFlags[0]} does not go with --local`);
    }
    return { local: rest };
  }
  const { paths } = context;
  const settings = await loadSettings({
    paths,
    cache: new ValidationCache(paths.cacheDir),
  });
  if (settings.login.provider !== "oidc") {
    if (parsed.source) {
      throw new ConfigError(
        `${
          oidcFlags.at(-1)
        } needs [login] provider = "oidc" (with issuer and client_id) in config.toml; see the CI recipe in docs/manual/login_sso.md`,
      );
    }
    if (oidcFlags.length > 0) {
      throw new UsageError(
        `${
          oidcFlags[0]
        } is for [login] provider = "oidc" in config.toml; the local store takes a passphrase`,
      );
    }
    return { local: rest };
  }
  const usage =
    "usage: sherlock login [--device | --no-browser], sherlock login --subject-token-file PATH | --subject-token-env VAR [--subject-token-type TYPE], sherlock login --id-token-file PATH | --id-token-env VAR, or sherlock login --local [--passphrase-file PATH] [--remember | --forget | --change-passphrase]";
  if (rest.some((arg) => arg !== "--device" && arg !== "--no-browser")) {
    throw new UsageError(usage);
  }
  if (parsed.source && rest.length > 0) {
    throw new UsageError(
      `${rest[0]} does not go with ${
        parsed.source.hold ? "an ID token" : "a workload token"
      }: that login needs no browser`,
    );
  }
  return {
    oidc: {
      device: rest.includes("--device"),
      noBrowser: rest.includes("--no-browser"),
      ...(parsed.source ? { workload: parsed.source } : {}),
    },
  };
}

/** The flag that named a token source, for an error about it. */
function sourceFlag(source: WorkloadTokenSource): string {
  const [file, env] = source.hold
    ? [WORKLOAD_FLAGS[3], WORKLOAD_FLAGS[4]]
    : [WORKLOAD_FLAGS[0], WORKLOAD_FLAGS[1]];
  return source.file !== undefined ? file : env;
}
