/**
 * Opening a URL in the operator's browser, for `sherlock auth` and
 * `sherlock login` at an OpenID provider; and whether one can be opened
 * at all (over SSH without a display, the device grant is used instead).
 *
 * @module
 */

import { printWarning } from "./output.ts";

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

/**
 * Opens `url` with `$BROWSER` when set (the convention of git, gh and the
 * xdg tools), else the platform's opener when there is one. A browser that
 * fails is only a warning: the URL is printed.
 */
export async function openBrowser(
  url: string,
  browser?: string,
): Promise<void> {
  const program = browser || platformOpener();
  if (!program) return;
  try {
    const child = new Deno.Command(program, {
      args: [url],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const { code } = await child.status;
    if (code !== 0) {
      printWarning(`the browser (${program}) exited with ${code}`);
    }
  } catch {
    printWarning(
      `could not start the browser (${program}); open the URL above`,
    );
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
