/**
 * `sherlock login` with `[login] provider = "oidc"`: the daemon signs in at
 * the OpenID provider (it holds every token); this command starts the
 * login, opens the browser or prints the device code, and waits. `login.ts`
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
import { UsageError } from "../errors.ts";
import { browserOpenable, openBrowser } from "./browser.ts";
import { commandContext } from "./context.ts";
import { describeOidcLogin } from "./login_text.ts";
import { printLine, printWarning } from "./output.ts";

/** How the OIDC login runs. */
export interface OidcLoginOptions {
  /** The device grant (RFC 8628), asked for with `--device`. */
  device: boolean;
  /** Print the URL only (`--no-browser`). */
  noBrowser: boolean;
}

/** Signs in at the provider; returns the exit code. */
export async function oidcLoginCommand(
  options: OidcLoginOptions,
): Promise<number> {
  const { env, paths } = commandContext();
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
    printWarning(
      `to log in, open ${url} on any device and enter the code ${userCode}`,
    );
  } else printWarning(`to log in, open: ${url}`);
  const browser = device || options.noBrowser
    ? undefined
    : openBrowser(url, env.BROWSER);
  const status = await finished;
  await browser?.catch(() => {});
  printLine(`logged in: ${describeOidcLogin(status)}`);
  return 0;
}

/**
 * Which login `sherlock login ARGS` is: the OIDC one when config.toml says
 * `provider = "oidc"` and `--local` is not given (its flags `--device`,
 * `--no-browser`), else the local store's, with the remaining arguments.
 */
export async function chooseLogin(
  args: readonly string[],
): Promise<{ oidc: OidcLoginOptions } | { local: string[] }> {
  const local = args.includes("--local");
  const rest = args.filter((arg) => arg !== "--local");
  const oidcFlags = rest.filter((arg) =>
    arg === "--device" || arg === "--no-browser"
  );
  if (local) {
    if (oidcFlags.length > 0) {
      throw new UsageError(`${oidcFlags[0]} does not go with --local`);
    }
    return { local: rest };
  }
  const { paths } = commandContext();
  const settings = await loadSettings({
    paths,
    cache: new ValidationCache(paths.cacheDir),
  });
  if (settings.login.provider !== "oidc") {
    if (oidcFlags.length > 0) {
      throw new UsageError(
        `${
          oidcFlags[0]
        } is for [login] provider = "oidc" in config.toml; the local store takes a passphrase`,
      );
    }
    return { local: rest };
  }
  if (oidcFlags.length !== rest.length) {
    throw new UsageError(
      "usage: sherlock login [--device | --no-browser], or sherlock login --local [--passphrase-file PATH]",
    );
  }
  return {
    oidc: {
      device: oidcFlags.includes("--device"),
      noBrowser: oidcFlags.includes("--no-browser"),
    },
  };
}
