/**
 * The verified offline recipe of each built-in agent profile, run through
 * sherlock: the agent's own arguments after `sherlock <agent>`, and the
 * environment that makes the real CLI start its MCP servers without network
 * or login. sherlock adds the MCP config itself (flag, variable or merged
 * file, as the built-in profile says). docs/agent_clis.md explains each
 * choice; keep the two in step.
 *
 * Six of them also have a tool-calling recipe (`<agent>CallingTool`, a
 * {@linkcode ToolCallingAgent}): what makes that CLI answer one prompt with
 * a call of an MCP tool, its model a scripted endpoint on loopback; one
 * builder, {@linkcode callingToolRecipe}, turns each into a recipe.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { TestHome } from "../helpers/home.ts";
import { type CliKey, PERSISTENT_CACHES, testServer } from "./harness.ts";
import { startScriptedAnthropic } from "./fixtures/scripted_anthropic.ts";
import { startScriptedChatCompletions } from "./fixtures/scripted_chat_completions.ts";
import { startScriptedGemini } from "./fixtures/scripted_gemini.ts";
import type { ModelScript, ScriptedModel } from "./fixtures/scripted_model.ts";
import { startScriptedResponses } from "./fixtures/scripted_responses.ts";

/**
 * A model API address that refuses connections, so that no CLI reaches the
 * network: port 9 (discard) on the loopback interface, where nothing
 * listens.
 */
export const CLOSED_MODEL_URL = "http://127.0.0.1:9";

/** How one real CLI is run through a sherlock profile. */
export interface AgentRecipe {
  /** The profile's name (a built-in's is also its key in clis.json). */
  agent: string;
  /** The CLI's key in clis.json; it is linked into the PATH as its bin. */
  cli: CliKey;
  /**
   * The text of `agents.d/<agent>.toml`, for an agent that is not a
   * built-in; `bin` is the executable's name on the PATH.
   */
  profile?(bin: string): string;
  /**
   * The server's events to wait for before stopping the CLI (default:
   * `start`, `initialize`, `initialized`, `tools/list`).
   */
  events?: string[];
  /**
   * Wait for the CLI to exit by itself (with a hang guard) instead of
   * sending SIGTERM once the server has reported.
   */
  awaitExit?: boolean;
  /** The `clientInfo.name` it sends in `initialize`. */
  clientName: string;
  /** The `clientInfo.version` it sends, when not its npm version. */
  clientVersion?: string;
  /** Its arguments after `sherlock <agent>` (no MCP flag: sherlock adds it). */
  args: string[];
  /** Variables it needs on top of the throwaway home's environment. */
  env(home: TestHome): Record<string, string>;
  /**
   * Writes what the operator would already have (Gemini's settings file);
   * returns the files it wrote. `record` is the test server's record file.
   */
  seed?(home: TestHome, record: string): Promise<string[]>;
  /** Servers of the seeded files that must complete the handshake too. */
  otherServers?: string[];
  /** Whether its format forces the token shim (argv or the operator's file). */
  shimForced: boolean;
  /** Whether it exits by itself once its servers are up (no signal needed). */
  endsByItself: boolean;
}

/** One tool of one MCP server. */
export interface McpTool {
  /** The server's name (the sherlock service's). */
  server: string;
  /** The tool's name on that server. */
  tool: string;
}

/** What a tool-calling recipe is made for: the tool, and the model's URL. */
export interface ToolCall extends McpTool {
  /** The base URL of the scripted model endpoint (its `url`). */
  modelUrl: string;
}

/**
 * How a real CLI answers one prompt with a call of one MCP tool, when its
 * model is a scripted endpoint on loopback (tests/e2e/fixtures/scripted_*.ts:
 * it calls the tool, then answers a final text once the tool's result came
 * back; the real model APIs cannot be reached here). Only what differs from
 * CLI to CLI; {@linkcode callingToolRecipe} makes the runnable recipe.
 */
export interface ToolCallingAgent {
  /** The agent's listing recipe, which this one changes (env, seed, …). */
  base: AgentRecipe;
  /** Starts the scripted endpoint of the model API the CLI speaks. */
  startModel(script: ModelScript): ScriptedModel;
  /** The name the CLI gives the tool in what it offers the model. */
  toolName(tool: McpTool): string;
  /**
   * Its arguments after `sherlock <agent>`: the prompt, the model at
   * `call.modelUrl`, and whatever lets it run the call without asking.
   */
  args(call: ToolCall): string[];
  /** Variables it needs on top of the base recipe's. */
  env?(call: ToolCall): Record<string, string>;
  /** Writes the operator's files it needs, instead of the base's seed. */
  seed?(home: TestHome, call: ToolCall): Promise<string[]>;
  /**
   * How the tool's text shows in the results the CLI sends the model:
   * `alone`, the only text; `among`, one of its texts, to the letter;
   * `inside`, within one of its texts (the CLI wraps it).
   */
  toolResult: "alone" | "among" | "inside";
}

/** The prompt of every tool-calling recipe (the scripted model ignores it). */
const CALL_PROMPT = "Call the tool you were given.";

/**
 * The recipe that runs `agent` for `call`: its base recipe with the
 * tool-calling arguments, variables and seed. The CLI exits by itself
 * after the final answer, and starts no server but sherlock's.
 */
export function callingToolRecipe(
  agent: ToolCallingAgent,
  call: ToolCall,
): AgentRecipe {
  const { base, seed } = agent;
  return {
    ...base,
    args: agent.args(call),
    env: (home) => ({ ...base.env(home), ...agent.env?.(call) }),
    seed: seed ? (home) => seed(home, call) : base.seed,
    otherServers: [],
    awaitExit: true,
    endsByItself: true,
  };
}

/**
 * GitHub Copilot CLI: sherlock adds `--additional-mcp-config @<file>`.
 * Offline mode with a BYOK provider at a closed port skips GitHub login;
 * the unpacked package is kept in `.cache/e2e/copilot`
 * (`COPILOT_PKG_CACHE_HOME`).
 */
export const copilot: AgentRecipe = {
  agent: "copilot",
  cli: "copilot",
  clientName: "copilot-cli",
  args: ["-p", "hi", "--allow-all-tools"],
  env: () => ({
    COPILOT_OFFLINE: "true",
    COPILOT_PROVIDER_BASE_URL: `${CLOSED_MODEL_URL}/v1`,
    COPILOT_PROVIDER_API_KEY: "e2e-dummy",
    COPILOT_MODEL: "gpt-4o",
    COPILOT_AUTO_UPDATE: "false",
    COPILOT_PKG_CACHE_HOME: PERSISTENT_CACHES.copilotPkg,
  }),
  shimForced: false,
  endsByItself: false,
};

/**
 * Copilot calling a tool: its BYOK provider at the scripted Chat
 * Completions endpoint (`completions` is the provider's default wire API).
 * `--allow-all-tools` runs the call without asking; `-p` exits by itself
 * after the final answer. It names an MCP tool `<server>-<tool>`.
 */
export const copilotCallingTool: ToolCallingAgent = {
  base: copilot,
  startModel: startScriptedChatCompletions,
  toolName: ({ server, tool }) => `${server}-${tool}`,
  args: () => ["-p", CALL_PROMPT, "--allow-all-tools"],
  env: ({ modelUrl }) => ({ COPILOT_PROVIDER_BASE_URL: modelUrl }),
  toolResult: "inside",
};

/**
 * Claude Code: sherlock adds `--mcp-config=<file>` (joined: the option is
 * variadic); a print-mode prompt and the Anthropic API at a closed port
 * (it then retries until stopped).
 */
export const claude: AgentRecipe = {
  agent: "claude",
  cli: "claude",
  clientName: "claude-code",
  args: ["-p", "hi", "--strict-mcp-config"],
  env: () => ({
    ANTHROPIC_BASE_URL: CLOSED_MODEL_URL,
    ANTHROPIC_API_KEY: "e2e-dummy",
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
  }),
  shimForced: false,
  endsByItself: false,
};

/**
 * Claude Code calling a tool: the Anthropic API at the scripted Messages
 * endpoint; the tool allowed by `--allowedTools` under its MCP name,
 * `mcp__<server>__<tool>`. Tool search is off, else the MCP tools wait
 * behind its `ToolSearch` tool and the first request offers only a
 * placeholder. Print mode exits by itself after the final answer. The
 * tool's text comes back to the model as the result's only text.
 */
export const claudeCallingTool: ToolCallingAgent = {
  base: claude,
  startModel: startScriptedAnthropic,
  toolName: ({ server, tool }) => `mcp__${server}__${tool}`,
  args: (call) => [
    "-p",
    CALL_PROMPT,
    "--strict-mcp-config",
    `--allowedTools=${claudeCallingTool.toolName(call)}`,
  ],
  env: ({ modelUrl }) => ({
    ANTHROPIC_BASE_URL: modelUrl,
    ENABLE_TOOL_SEARCH: "false",
  }),
  toolResult: "alone",
};

/** A TOML basic string (Codex's `-c` values are TOML). */
function tomlString(text: string): string {
  return JSON.stringify(text); // JSON escapes are valid TOML basic-string escapes
}

/**
 * Codex's `exec` arguments with a Responses provider at `modelUrl`, the
 * `-c` overrides in `more`, then the prompt.
 */
function codexExec(
  options: { modelUrl: string; more?: string[]; prompt: string },
): string[] {
  return [
    "exec",
    "--skip-git-repo-check",
    "-c",
    'model_provider="e2e"',
    "-c",
    `model_providers.e2e={name="e2e",base_url=${
      tomlString(options.modelUrl)
    },wire_api="responses"}`,
    ...(options.more ?? []).flatMap((override) => ["-c", override]),
    options.prompt,
  ];
}

/**
 * OpenAI Codex CLI: sherlock adds `-c mcp_servers.<name>={…}` before the
 * agent's arguments, so before `exec`; a mock Responses provider at a
 * closed port.
 */
export const codex: AgentRecipe = {
  agent: "codex",
  cli: "codex",
  clientName: "codex-mcp-client",
  args: codexExec({ modelUrl: `${CLOSED_MODEL_URL}/v1`, prompt: "hi" }),
  env: () => ({}),
  shimForced: true,
  endsByItself: false,
};

/**
 * Codex calling a tool: the Responses API at the scripted endpoint. A
 * model name its catalog does not know, else the default model's tools are
 * JavaScript-only ("code mode": MCP tools only inside its `exec` tool); the
 * tool's `approval_mode = "approve"`, else `exec` refuses MCP calls
 * ("requires approval, but approval policy is never"). `exec` exits by
 * itself after the final answer. It offers a server's tools in the
 * namespace `mcp__<server>`, and sends back a wall-time line, then the
 * tool's text.
 */
export const codexCallingTool: ToolCallingAgent = {
  base: codex,
  startModel: startScriptedResponses,
  toolName: ({ server, tool }) => `mcp__${server}.${tool}`,
  args: ({ modelUrl, server, tool }) =>
    codexExec({
      modelUrl,
      more: [
        'model="e2e-model"',
        `mcp_servers.${server}.tools.${tool}.approval_mode="approve"`,
      ],
      prompt: CALL_PROMPT,
    }),
  toolResult: "among",
};

/**
 * What the tests put in the throwaway `~/.gemini/settings.json` before
 * sherlock merges into it: the auth choice that `gemini -p` needs, and an
 * operator-owned server. Written with four-space indentation, no final
 * newline and mode 0640, so that any rewrite by sherlock shows.
 */
export function geminiOperatorSettings(
  operatorServer: { command: string; args: string[] },
): string {
  return JSON.stringify(
    {
      security: { auth: { selectedType: "gemini-api-key" } },
      mcpServers: { operator: operatorServer },
    },
    null,
    4,
  );
}

/** The operator's Gemini settings file in a throwaway home. */
export function geminiSettingsPath(home: TestHome): string {
  return join(home.home, ".gemini", "settings.json");
}

/**
 * Gemini CLI: sherlock merges its servers into `~/.gemini/settings.json`;
 * the folder is trusted by `GEMINI_CLI_TRUST_WORKSPACE=true` (from the
 * operator's environment, which sherlock passes on), and API-key auth is
 * chosen in the settings and pointed at a closed port. The seed is the
 * operator's own settings file (see {@linkcode geminiOperatorSettings})
 * with a server of the operator's, `operator` (the test server too, with
 * no token), which must keep working beside sherlock's.
 */
export const gemini: AgentRecipe = {
  agent: "gemini",
  cli: "gemini",
  clientName: "gemini-cli-mcp-client",
  args: ["-p", "hi"],
  env: () => ({
    GEMINI_CLI_TRUST_WORKSPACE: "true",
    GEMINI_API_KEY: "e2e-dummy",
    GOOGLE_GEMINI_BASE_URL: CLOSED_MODEL_URL,
  }),
  async seed(home, record) {
    const path = geminiSettingsPath(home);
    const { command, args } = testServer({ record, name: "operator" });
    await Deno.mkdir(join(home.home, ".gemini"), { mode: 0o700 });
    await writeFile(path, geminiOperatorSettings({ command, args }), {
      mode: 0o640,
    });
    await Deno.chmod(path, 0o640);
    return [path];
  },
  otherServers: ["operator"],
  shimForced: true,
  endsByItself: false,
};

/**
 * Gemini CLI calling a tool: API-key auth at the scripted Gemini API
 * endpoint. The seed is the base recipe's (the operator's settings, with
 * their own server); `--allowed-mcp-server-names` keeps that server's
 * same-named tool out of the model's list, and `--approval-mode yolo` runs
 * the call in `-p` without asking. A model named with `-m` skips its model
 * router, whose classifier request wants a JSON verdict and retries a
 * plain text for over a minute. `-p` exits by itself after the final
 * answer. It names an MCP tool `mcp_<server>_<tool>`.
 */
export const geminiCallingTool: ToolCallingAgent = {
  base: gemini,
  startModel: startScriptedGemini,
  toolName: ({ server, tool }) => `mcp_${server}_${tool}`,
  args: ({ server }) => [
    "-p",
    CALL_PROMPT,
    "-m",
    "e2e-model",
    "--allowed-mcp-server-names",
    server,
    "--approval-mode",
    "yolo",
  ],
  env: ({ modelUrl }) => ({ GOOGLE_GEMINI_BASE_URL: modelUrl }),
  toolResult: "inside",
};

/** Qwen Code's arguments for the OpenAI auth type at `baseUrl`. */
function qwenModel(baseUrl: string): string[] {
  return [
    "--auth-type",
    "openai",
    "--openai-api-key",
    "e2e-dummy",
    "--openai-base-url",
    baseUrl,
    "-m",
    "e2e-model",
  ];
}

/**
 * Qwen Code: sherlock adds `--mcp-config <file>`; the OpenAI auth type at a
 * closed port and a one-shot prompt. It relaunches itself (the launcher
 * ignores SIGTERM; sherlock signals the relaunched child too).
 */
export const qwen: AgentRecipe = {
  agent: "qwen",
  cli: "qwen",
  clientName: "qwen-cli-mcp-client-probe",
  clientVersion: "0.0.1",
  args: [...qwenModel(`${CLOSED_MODEL_URL}/v1`), "hi"],
  env: () => ({}),
  shimForced: false,
  endsByItself: false,
};

/**
 * Qwen Code calling a tool: the OpenAI auth type at the scripted Chat
 * Completions endpoint; `--allowed-mcp-server-names` keeps the operator's
 * other servers out and `--approval-mode yolo` lets the one-shot prompt
 * run the call without asking. Tool search is off in
 * `~/.qwen/settings.json` (`tools.toolSearch.enabled`), else MCP tools wait
 * behind its `tool_search`/`tool_call` pair and the model is never offered
 * the tool itself. The one-shot prompt exits by itself after the final
 * answer. It names an MCP tool `mcp__<server>__<tool>`.
 */
export const qwenCallingTool: ToolCallingAgent = {
  base: qwen,
  startModel: startScriptedChatCompletions,
  toolName: ({ server, tool }) => `mcp__${server}__${tool}`,
  args: ({ modelUrl, server }) => [
    ...qwenModel(modelUrl),
    "--allowed-mcp-server-names",
    server,
    "--approval-mode",
    "yolo",
    CALL_PROMPT,
  ],
  async seed(home) {
    const path = join(home.home, ".qwen", "settings.json");
    await Deno.mkdir(join(home.home, ".qwen"), { mode: 0o700 });
    await writeFile(
      path,
      JSON.stringify({ tools: { toolSearch: { enabled: false } } }),
    );
    return [path];
  },
  toolResult: "inside",
};

/**
 * Amp: sherlock adds `--mcp-config <file>` (a bare `{name: entry}` map);
 * execute mode, a dummy API key and the Amp server at a closed port. It
 * starts the servers, fails to reach its server and exits 1 by itself.
 */
export const amp: AgentRecipe = {
  agent: "amp",
  cli: "amp",
  clientName: "amp-mcp-client",
  clientVersion: "0.0.0-dev",
  args: ["-x", "hi"],
  env: () => ({
    AMP_API_KEY: "e2e-dummy",
    AMP_URL: CLOSED_MODEL_URL,
    AMP_SKIP_UPDATE_CHECK: "1",
  }),
  shimForced: false,
  endsByItself: true,
};

/**
 * opencode: sherlock sets `OPENCODE_CONFIG=<file>` (`{"mcp": …}`);
 * `opencode mcp list` connects every server and exits 0 (`opencode run`
 * would install provider packages from npm first).
 */
export const opencode: AgentRecipe = {
  agent: "opencode",
  cli: "opencode",
  clientName: "opencode",
  args: ["mcp", "list"],
  env: () => ({}),
  shimForced: false,
  endsByItself: true,
};

/**
 * opencode calling a tool: `opencode run` with a provider of the
 * operator's global config (`~/.config/opencode/opencode.json`, beside
 * sherlock's `OPENCODE_CONFIG`) whose `baseURL` is the scripted Chat
 * Completions endpoint. `run` first installs the provider's package
 * (`@ai-sdk/openai-compatible`) from the npm registry into
 * `~/.config/opencode/node_modules` (~30 s; the registry is the one network
 * this machine reaches), runs MCP tools without asking, and exits by itself
 * after the final answer. It names an MCP tool `<server>_<tool>`.
 */
export const opencodeCallingTool: ToolCallingAgent = {
  base: opencode,
  startModel: startScriptedChatCompletions,
  toolName: ({ server, tool }) => `${server}_${tool}`,
  args: () => ["run", "-m", "e2e/e2e-model", CALL_PROMPT],
  async seed(home, { modelUrl }) {
    const folder = join(home.home, ".config", "opencode");
    await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
    const path = join(folder, "opencode.json");
    await writeFile(
      path,
      JSON.stringify({
        $schema: "https://opencode.ai/config.json",
        provider: {
          e2e: {
            npm: "@ai-sdk/openai-compatible",
            name: "e2e",
            options: { baseURL: modelUrl, apiKey: "e2e-dummy" },
            models: { "e2e-model": { name: "e2e-model", tool_call: true } },
          },
        },
      }),
    );
    return [path];
  },
  toolResult: "inside",
};

/**
 * The MCP Inspector CLI as an agent of the operator's (`agents.d`): sherlock
 * adds `--config <file>` after `--cli` (its mode flag must come first); the
 * Inspector connects to one server, calls a tool, prints the result as JSON
 * and exits by itself. A second witness besides the agent CLIs: the tool's
 * answer carries the hash of the token the server got.
 */
export const inspector: AgentRecipe = {
  agent: "inspector",
  cli: "inspector",
  profile: (bin) =>
    [
      "[agent]",
      'name = "inspector"',
      `executable = ${JSON.stringify(bin)}`,
      'description = "MCP Inspector CLI"',
      "",
      "[mcp]",
      'mode = "cli-flag"',
      'flag = "--config"',
      "",
      "[argv]",
      'prefix = ["--cli"]',
    ].join("\n") + "\n",
  clientName: "inspector-cli",
  args: [
    "--server",
    "probe",
    "--method",
    "tools/call",
    "--tool-name",
    "whoami",
  ],
  env: () => ({ MCP_INSPECTOR_SECRET_STORE: "memory" }),
  events: ["start", "initialize", "initialized", "tools/call"],
  awaitExit: true,
  shimForced: false,
  endsByItself: true,
};

/**
 * Auggie (Augment Code): sherlock adds `--mcp-config <file>`; print mode
 * and a session in `AUGMENT_SESSION_AUTH` (what `auggie login` would save)
 * whose tenant is a closed port, so it never reaches Augment: it starts its
 * servers, then retries the service until stopped.
 */
export const auggie: AgentRecipe = {
  agent: "auggie",
  cli: "auggie",
  clientName: "augment-mcp-client",
  clientVersion: "1.0.0",
  args: ["--print", "hi"],
  env: () => ({
    AUGMENT_SESSION_AUTH: JSON.stringify({
      accessToken: "e2e-dummy",
      tenantURL: `${CLOSED_MODEL_URL}/`,
      scopes: ["read", "write"],
    }),
  }),
  shimForced: false,
  endsByItself: false,
};

/**
 * Kilo Code CLI (a fork of opencode): sherlock sets `KILO_CONFIG=<file>`
 * (opencode's `{"mcp": …}` shape); `kilo mcp list` connects every server
 * and exits 0, with no login and no model.
 */
export const kilo: AgentRecipe = {
  agent: "kilo",
  cli: "kilo",
  clientName: "kilo",
  args: ["mcp", "list"],
  env: () => ({}),
  shimForced: false,
  endsByItself: true,
};

/**
 * What the tests put in the throwaway `~/.continue/config.yaml` before the
 * session: the operator's own assistant, one OpenAI model at a closed port
 * (Continue needs a model, and reads it from here, with no login). Mode
 * 0640 and no final newline, so that any rewrite by sherlock shows.
 */
export const CONTINUE_OPERATOR_CONFIG = [
  "name: operator",
  "version: 0.0.1",
  "schema: v1",
  "models:",
  "  - name: e2e",
  "    provider: openai",
  "    model: e2e-model",
  `    apiBase: ${CLOSED_MODEL_URL}/v1`,
  "    apiKey: e2e-dummy",
].join("\n");

/**
 * Continue CLI (`cn`): sherlock adds `--mcp <file>`, a block of
 * `mcpServers` that Continue adds to the operator's config. Headless
 * `-p`, the model from the seeded `~/.continue/config.yaml`; it starts the
 * servers, fails to reach the model and exits 1 by itself.
 */
export const continueCli: AgentRecipe = {
  agent: "continue",
  cli: "continue",
  clientName: "continue-cli-client",
  clientVersion: "1.0.0",
  args: ["-p", "hi"],
  env: () => ({}),
  async seed(home) {
    const path = join(home.home, ".continue", "config.yaml");
    await Deno.mkdir(join(home.home, ".continue"), { mode: 0o700 });
    await writeFile(path, CONTINUE_OPERATOR_CONFIG, { mode: 0o640 });
    await Deno.chmod(path, 0o640);
    return [path];
  },
  shimForced: false,
  endsByItself: true,
};
