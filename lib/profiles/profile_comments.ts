/**
 * The comments that explain a profile's keys, for the text
 * `sherlock agents override NAME` writes and `sherlock agents show` prints:
 * an operator who edits a copy of a built-in reads, next to each key, what
 * it does. Added to the text (never stored in `profiles/`), so the built-ins
 * stay short and a key without a comment here is simply left bare. Pure.
 *
 * @module
 */

import { schemaDirective } from "../config/editor_schemas.ts";

/**
 * The text `sherlock agents override NAME` writes: what the file is and how
 * to undo it, then the built-in's text with every key explained.
 */
export function overrideText(name: string, builtinText: string): string {
  return [
    // taplo / Even Better TOML: keys completed and checked in the editor.
    schemaDirective("profile").trimEnd(),
    `# Your copy of sherlock's built-in "${name}" profile, written by`,
    `# "sherlock agents override ${name}". It replaces the built-in entirely`,
    "# (nothing is merged), so keep every table; change what you need.",
    `# Remove this file to go back to the built-in; "sherlock agents show`,
    `# --builtin ${name}" shows the built-in meanwhile.`,
    "#",
    annotateProfile(builtinText),
  ].join("\n");
}

/**
 * A profile's text with a comment line above each table and key that
 * {@linkcode KEY_COMMENTS} explains. Everything else is kept as it was.
 */
export function annotateProfile(text: string): string {
  const out: string[] = [];
  let table = "";
  for (const line of text.split("\n")) {
    const header = /^\s*\[([A-Za-z0-9_-]+)\]\s*(?:#.*)?$/.exec(line);
    const assignment = /^\s*([A-Za-z0-9_-]+)\s*=/.exec(line);
    let key: string | undefined;
    if (header) {
      table = header[1];
      key = table;
    } else if (assignment) {
      key = `${table}.${assignment[1]}`;
    }
    const comment = key === undefined ? undefined : KEY_COMMENTS[key];
    if (comment !== undefined) {
      // A table's comment goes above it, after the blank line before it.
      out.push(...comment.split("\n").map((part) => `# ${part}`));
    }
    out.push(line);
  }
  return out.join("\n");
}

/** What each table and key does, by `table` or `table.key`. */
export const KEY_COMMENTS: Readonly<Record<string, string>> = {
  agent: "[agent]: which program this profile starts.",
  "agent.name": "Must equal the file's basename (agents.d/<name>.toml).",
  "agent.executable":
    "The program; looked up on PATH (or [env] PATH) unless it contains a /.",
  "agent.description": 'Shown by "sherlock agents".',
  mcp: "[mcp]: how the rendered MCP config reaches the agent.",
  "mcp.mode":
    'cli-flag: a flag names the file | env-var: a variable names it |\nconfig-file: the file is written at "path" | none: no MCP config and no\nbroker (an agent without MCP, such as Aider).',
  "mcp.flag": "cli-flag: the agent's flag that takes the config.",
  "mcp.var":
    "env-var: the variable that holds the config's path (sherlock's own:\nnot allowed in [env] or [forbid]).",
  "mcp.path":
    "config-file: where the file goes; ~ and ${VAR} expand from your environment.",
  "mcp.merge":
    "config-file: merge into your own file for the session and put it back\nbyte for byte after.",
  "mcp.value":
    "The flag's (or variable's) value; {path} is the rendered file (Copilot:\n\"@{path}\").",
  "mcp.joined": 'true: one argv word "--flag=value"; false: "--flag" "value".',
  "mcp.format":
    "The document the agent reads: mcp-json | servers-map | opencode | gemini |\ncodex-overrides | continue (see Formats in docs/manual/agents.md).",
  env:
    '[env]: added to the agent\'s environment; ${VAR} expands from yours,\ne.g. SOME_SETTING = "${XDG_CONFIG_HOME}/x".',
  argv: "[argv]: <executable> <prefix…> [flag value] <your args…> <suffix…>.",
  "argv.prefix": "Words before the MCP flag and your arguments.",
  "argv.no_session":
    "When your first argument is one of these (help, version), the agent starts with no broker and no MCP servers.",
  "argv.suffix": "Words after your arguments.",
  services: "[services]: which services its sessions get (default: every one).",
  "services.include": 'Only these, e.g. ["github", "docs"].',
  "services.exclude": 'Every service but these, e.g. ["jira"].',
  forbid:
    "[forbid]: removed from the agent's environment, even when [env] sets\nthem.",
  "forbid.env": 'Variable names, e.g. ["ANTHROPIC_API_KEY"].',
  credentials:
    "[credentials]: the agent's own keys from the broker, e.g.\nANTHROPIC_API_KEY = \"anthropic\" (a service of that name, else a stored\nsecret); set in its environment only, your shell's copy removed.",
  api_key_helper:
    "[api_key_helper]: Claude Code asks sherlock for its key (apiKeyHelper),\nso the key is in no environment.",
  "api_key_helper.credential":
    "The service or secret name whose value is the key.",
};
