/**
 * Opening an authorization page in the operator's browser, for `sherlock
 * auth` and `sherlock login` at an OpenID provider; and whether one can be
 * opened at all (over SSH without a display, the device grant is used
 * instead).
 *
 * The authorization URL carries the flow's `state`, PKCE challenge and
 * nonce: whoever reads them can race the operator's browser with a code of
 * his own. Every local user can read every process's argv
 * (`/proc/PID/cmdline`), so the URL is never an argument: it goes into a
 * launch page, a 0600 file in the 0700 runtime folder that forwards the
 * browser to it, and the browser gets only that page's `file://` URL. The
 * URL itself is printed only to the operator's own stderr, when asked
 * (`--no-browser`) or when no browser could be started.
 *
 * @module
 */

import { ExitCode } from "../errors.ts";
import {
  ensurePrivateDir,
  removeIfPresent,
  writePrivateFile,
} from "../private_files.ts";
import { join } from "../runtime/path.ts";
import { browserArgv } from "./browser_command.ts";
import { printWarning } from "./output.ts";

/** A launch page older than this is left from a killed flow: removed. */
const STALE_PAGE_MS = 15 * 60_000;

/**
 * True when a browser can be opened here: `$BROWSER` is set, or there is a
 * display (an SSH session needs a forwarded one; Linux needs `DISPLAY` or
 * `WAYLAND_DISPLAY`) and an opener (`xdg-open`, `open`) on PATH.
 */
export function browserOpenable(
  env: Readonly<Record<string, string | undefined>>,
): boolean {
  if (env.BROWSER) return true;
  const display = Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);
  if ((env.SSH_CONNECTION || env.SSH_TTY) && !display) return false;
  if (Deno.build.os === "linux" && !display) return false;
  return platformOpener() !== undefined;
}

/** A launch page on disk: its path and the `file://` URL of it. */
export interface LaunchPage extends Disposable {
  path: string;
  url: string;
}

/**
 * Writes the launch page for `url` into `runtimeDir` (0600, in a 0700
 * folder): a page that forwards the browser to `url` at once. Disposing of
 * it removes the file, and so does SIGINT or SIGTERM before it (sherlock
 * then exits 130 or 143); pages a killed flow left are removed here.
 */
export function writeLaunchPage(url: string, runtimeDir: string): LaunchPage {
  ensurePrivateDir(runtimeDir);
  removeStalePages(runtimeDir);
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  const id = Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0"))
    .join("");
  const path = join(runtimeDir, `launch-${id}.html`);
  const target = escapeHtml(url);
  writePrivateFile(
    path,
    `<!doctype html>
<html><head><meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<meta http-equiv="refresh" content="0;url=${target}">
<title>sherlock: opening the sign-in page</title></head>
<body><p>Opening the sign-in page… <a href="${target}">continue</a></p></body></html>
`,
  );
  // Ctrl-C or a kill while the browser runs: the page goes too (it would
  // otherwise wait for the next flow's sweep).
  const onSignal = (code: number) => () => {
    removeIfPresent(path);
    Deno.exit(code);
  };
  const handlers = [
    ["SIGINT", onSignal(ExitCode.Interrupted)],
    ["SIGTERM", onSignal(128 + 15)],
  ] as const;
  for (const [signal, handler] of handlers) {
    Deno.addSignalListener(signal, handler);
  }
  return {
    path,
    url: `file://${encodeURI(path)}`,
    [Symbol.dispose]() {
      for (const [signal, handler] of handlers) {
        Deno.removeSignalListener(signal, handler);
      }
      removeIfPresent(path);
    },
  };
}

/**
 * Opens `page` with `$BROWSER` when set (a command line, as git and gh take
 * it; `%s` marks where the page goes) or the platform's opener. When no
 * browser starts, or it fails, one line says at once how to go on: the
 * URL to open by hand (`url`: on the operator's own stderr only) and
 * `otherwise` (e.g. the `--device` command).
 */
export async function openBrowser(options: {
  page: LaunchPage;
  url: string;
  browser?: string;
  otherwise: string;
}): Promise<void> {
  const { page, url } = options;
  const fallback = (why: string) =>
    printWarning(
      `${why}; open this URL in a browser by hand: ${url} — ${options.otherwise}`,
    );
  const opener = options.browser ? undefined : platformOpener();
  const command = options.browser
    ? browserArgv(options.browser, page.url)
    : opener
    ? { argv: [opener, page.url] }
    : undefined;
  if (!command) {
    fallback("no browser to open ($BROWSER is unset and no xdg-open/open)");
    return;
  }
  if ("problem" in command) {
    fallback(`$BROWSER cannot be read as a command line: ${command.problem}`);
    return;
  }
  const [name, ...args] = command.argv;
  let child: Deno.ChildProcess;
  try {
    child = new Deno.Command(name, {
      args,
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
  } catch (error) {
    const why = error instanceof Deno.errors.NotFound
      ? "no such program"
      : error instanceof Error
      ? error.message
      : String(error);
    fallback(`could not start the browser ${name} (${why})`);
    return;
  }
  const { code } = await child.status;
  if (code !== 0) fallback(`the browser ${name} exited with ${code}`);
}

/** The operator's warning when a flow's listener ignored forged requests. */
export function ignoredWarning(count: number): string {
  return `the redirect listener ignored ${count} request${
    count === 1 ? "" : "s"
  } without this flow's state (another local program may have tried to forge the answer); the flow went on`;
}

function escapeHtml(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll('"', "&quot;")
    .replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

function removeStalePages(folder: string): void {
  try {
    for (const entry of Deno.readDirSync(folder)) {
      if (!/^launch-[0-9a-f]+\.html$/.test(entry.name)) continue;
      const path = join(folder, entry.name);
      const modified = Deno.statSync(path).mtime?.getTime() ?? 0;
      if (Date.now() - modified > STALE_PAGE_MS) removeIfPresent(path);
    }
  } catch {
    // Another sherlock removed it first; nothing to do.
  }
}

function platformOpener(): string | undefined {
  const name = Deno.build.os === "darwin" ? "open" : "xdg-open";
  for (const folder of (Deno.env.get("PATH") ?? "").split(":")) {
    if (folder === "") continue;
    try {
      const path = `${folder}/${name}`;
      if (Deno.statSync(path).isFile) return path;
    } catch {
      // Not in this folder.
    }
  }
  return undefined;
}
