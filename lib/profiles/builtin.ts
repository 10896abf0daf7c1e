/**
 * The built-in profiles: the TOML files under `profiles/`, embedded with text
 * imports so that `deno run`, `deno test` and `deno compile` see the same
 * bytes. A test validates each against the schema and checks that it spells
 * out every default, which is why the launch path may trust them unvalidated.
 *
 * @module
 */

import aider from "../../profiles/aider.toml" with { type: "text" };
import amp from "../../profiles/amp.toml" with { type: "text" };
import auggie from "../../profiles/auggie.toml" with { type: "text" };
import claude from "../../profiles/claude.toml" with { type: "text" };
import codex from "../../profiles/codex.toml" with { type: "text" };
import continueCli from "../../profiles/continue.toml" with { type: "text" };
import copilot from "../../profiles/copilot.toml" with { type: "text" };
import gemini from "../../profiles/gemini.toml" with { type: "text" };
import kilo from "../../profiles/kilo.toml" with { type: "text" };
import opencode from "../../profiles/opencode.toml" with { type: "text" };
import qwen from "../../profiles/qwen.toml" with { type: "text" };

/** The TOML text of each built-in profile, by name. */
export const BUILTIN_PROFILES: Readonly<Record<string, string>> = {
  aider,
  amp,
  auggie,
  claude,
  codex,
  continue: continueCli,
  copilot,
  gemini,
  kilo,
  opencode,
  qwen,
};

/** The path shown for a built-in profile in messages. */
export function builtinPath(name: string): string {
  return `built-in:${name}.toml`;
}
