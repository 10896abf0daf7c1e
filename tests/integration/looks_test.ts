/**
 * Colour and emphasis: on a real terminal (a pseudo-terminal from
 * util-linux `script`) the tables' headers, the help's headings and the
 * error's prefix are emphasized; the same text, escape sequences aside,
 * as through a pipe, which never gets one; nor a terminal with NO_COLOR
 * set or TERM=dumb.
 */

import assert from "node:assert/strict";
import { createTestHome } from "../helpers/home.ts";
import { runSherlock } from "../helpers/sherlock.ts";
import { runSherlockOnPty } from "../helpers/terminal.ts";

const ESCAPE = "\x1b[";

/** What a terminal shows, as text: no SGR sequences, "\n" line ends. */
function visible(screen: string): string {
  // deno-lint-ignore no-control-regex -- removing the escape sequences
  return screen.replace(/\x1b\[[\d;]*m/g, "").replaceAll("\r\n", "\n");
}

/** The test HOME's environment as an operator's terminal has it: TERM set, no NO_COLOR. */
function colorEnv(env: Record<string, string>): Record<string, string> {
  const { NO_COLOR: _, ...rest } = env;
  return { ...rest, TERM: "xterm" };
}

Deno.test("on a terminal, table headers, help headings and the error prefix are emphasized; piped, the same text without escapes", async () => {
  await using home = await createTestHome();
  for (
    const [args, emphasized] of [
      [["agents"], "\x1b[1mNAME\x1b[22m"],
      [["help"], "\x1b[1mCommands:\x1b[22m"],
      [["services", "--help"], "\x1b[1mUsage:\x1b[22m"],
      [["nosuch"], "\x1b[1;31msherlock:\x1b[22;39m no command or agent"],
    ] as const
  ) {
    const terminal = await runSherlockOnPty(args, {
      env: colorEnv(home.env),
      steps: [],
    });
    assert.ok(
      terminal.screen.includes(emphasized),
      `${args.join(" ")}: ${JSON.stringify(terminal.screen)}`,
    );
    const piped = await runSherlock(args, { env: colorEnv(home.env) });
    assert.equal(terminal.code, piped.code);
    const printed = piped.stdout + piped.stderr;
    assert.ok(!printed.includes(ESCAPE), `${args.join(" ")} piped`);
    assert.equal(visible(terminal.screen), printed, args.join(" "));
  }
});

Deno.test("NO_COLOR or TERM=dumb: no escape sequence even on a terminal", async () => {
  await using home = await createTestHome();
  const cases: Record<string, string>[] = [{ NO_COLOR: "1" }, { TERM: "dumb" }];
  for (const extra of cases) {
    for (const args of [["agents"], ["help"], ["nosuch"]]) {
      const terminal = await runSherlockOnPty(args, {
        env: { ...colorEnv(home.env), ...extra },
        steps: [],
      });
      assert.ok(terminal.screen.length > 0);
      assert.ok(
        !terminal.screen.includes(ESCAPE),
        `${JSON.stringify(extra)} ${args.join(" ")}: ${
          JSON.stringify(terminal.screen)
        }`,
      );
    }
  }
});
