/**
 * The verified offline recipe of each real agent CLI: which file or flag
 * carries the MCP config, which environment makes it start its servers
 * without network or login, and how to stop it quickly. Each recipe writes
 * what the CLI reads into a {@linkcode Sandbox} and returns the command line.
 * docs/agent_clis.md explains each choice; keep the two in step.
 *
 * These drive the CLIs directly, with hand-written config documents. Tests
 * that go through sherlock replace `prepare` with sherlock's rendering and
 * keep `env` and `stop`.
 *
 * @module
 */

import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import {
  baseEnv,
  type CliKey,
  PERSISTENT_CACHES,
  type Sandbox,
  type StdioServerSpec,
  type StopOptions,
} from "./harness.ts";

/**
 * A model API address that refuses connections, so that no CLI reaches the
 * network: port 9 (discard) on the loopback interface, where nothing
 * listens.
 */
export const CLOSED_MODEL_URL = "http://127.0.0.1:9";

/** How to start a CLI. */
export interface Invocation {
  /** Its arguments. */
  args: string[];
  /** Its whole environment. */
  env: Record<string, string>;
  /** Its working folder. */
  cwd: string;
  /** The config documents written, by path. */
  files: Record<string, string>;
}

/** One CLI's recipe. */
export interface Recipe {
  /** The key in clis.json. */
  key: CliKey;
  /** The `clientInfo.name` it sends in `initialize`. */
  clientName: string;
  /** The `clientInfo.version` it sends, when not its npm version. */
  clientVersion?: string;
  /** Whether it asks `tools/list` as part of starting its servers. */
  listsTools: boolean;
  /** Writes the config for `servers` into `sandbox`; returns the command. */
  prepare(
    sandbox: Sandbox,
    servers: Record<string, StdioServerSpec>,
  ): Promise<Invocation>;
  /** How to stop it once the servers have reported. */
  stop: StopOptions;
}

/** The `{"mcpServers": {…}}` document read by Claude Code and Copilot CLI. */
export function mcpJson(
  servers: Record<string, StdioServerSpec>,
  extra: Record<string, unknown> = {},
): string {
  const entries = Object.fromEntries(
    Object.entries(servers).map(([name, server]) => [
      name,
      { ...extra, command: server.command, args: server.args, env: server.env },
    ]),
  );
  return JSON.stringify({ mcpServers: entries }, null, 2) + "\n";
}

/** A TOML basic string (Codex's `-c` values are TOML). */
export function tomlString(text: string): string {
  return JSON.stringify(text); // JSON escapes are valid TOML basic-string escapes
}

/** Codex's inline-table value for one `-c mcp_servers.<name>=…` override. */
export function codexServerValue(server: StdioServerSpec): string {
  const env = Object.entries(server.env)
    .map(([key, value]) => `${tomlKey(key)}=${tomlString(value)}`)
    .join(",");
  return `{command=${tomlString(server.command)},args=[${
    server.args.map(tomlString).join(",")
  }],env={${env}}}`;
}

function tomlKey(key: string): string {
  return /^[A-Za-z0-9_-]+$/.test(key) ? key : tomlString(key);
}

async function write(
  path: string,
  text: string,
  files: Record<string, string>,
) {
  await writeFile(path, text, { mode: 0o600 });
  files[path] = text;
}

/**
 * GitHub Copilot CLI: `--additional-mcp-config @<file>`. Offline mode with a
 * BYOK provider at a closed port skips GitHub login; the unpacked package
 * is kept in `.cache/e2e/copilot` (`COPILOT_PKG_CACHE_HOME`). The npm
 * launcher (`copilot` → node → native binary) does not pass signals on, so
 * the group is signalled.
 */
export const copilot: Recipe = {
  key: "copilot",
  clientName: "copilot-cli",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    const config = join(sandbox.root, "copilot.mcp.json");
    await write(config, mcpJson(servers, { type: "stdio" }), files);
    return {
      args: [
        "-p",
        "hi",
        "--allow-all-tools",
        "--additional-mcp-config",
        `@${config}`,
      ],
      env: {
        ...baseEnv(sandbox),
        COPILOT_OFFLINE: "true",
        COPILOT_PROVIDER_BASE_URL: `${CLOSED_MODEL_URL}/v1`,
        COPILOT_PROVIDER_API_KEY: "e2e-dummy",
        COPILOT_MODEL: "gpt-4o",
        COPILOT_AUTO_UPDATE: "false",
        COPILOT_PKG_CACHE_HOME: PERSISTENT_CACHES.copilotPkg,
      },
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM", target: "group" },
};

/**
 * Claude Code: `--mcp-config=<file>` (joined: the option is variadic) and
 * `--strict-mcp-config`, a print-mode prompt, and the Anthropic API at a
 * closed port (it then retries until stopped). SIGTERM is handled.
 */
export const claude: Recipe = {
  key: "claude",
  clientName: "claude-code",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    const config = join(sandbox.root, "claude.mcp.json");
    await write(config, mcpJson(servers, { type: "stdio" }), files);
    return {
      args: ["-p", "hi", `--mcp-config=${config}`, "--strict-mcp-config"],
      env: {
        ...baseEnv(sandbox),
        ANTHROPIC_BASE_URL: CLOSED_MODEL_URL,
        ANTHROPIC_API_KEY: "e2e-dummy",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: "1",
      },
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM" },
};

/**
 * OpenAI Codex CLI: `codex exec` with `-c mcp_servers.<name>={…}` (TOML)
 * and a mock Responses provider at a closed port. Its node launcher passes
 * SIGTERM on.
 */
export const codex: Recipe = {
  key: "codex",
  clientName: "codex-mcp-client",
  listsTools: true,
  prepare(sandbox, servers) {
    const overrides = [
      "-c",
      'model_provider="e2e"',
      "-c",
      `model_providers.e2e={name="e2e",base_url=${
        tomlString(`${CLOSED_MODEL_URL}/v1`)
      },wire_api="responses"}`,
    ];
    for (const [name, server] of Object.entries(servers)) {
      overrides.push("-c", `mcp_servers.${name}=${codexServerValue(server)}`);
    }
    return Promise.resolve({
      args: ["exec", "--skip-git-repo-check", ...overrides, "hi"],
      env: baseEnv(sandbox),
      cwd: sandbox.work,
      files: {},
    });
  },
  stop: { signal: "SIGTERM" },
};

/**
 * Gemini CLI: servers in `<cwd>/.gemini/settings.json`, the folder trusted
 * by `GEMINI_CLI_TRUST_WORKSPACE=true`, API-key auth chosen in the user
 * settings and pointed at a closed port. `GEMINI_CLI_NO_RELAUNCH=true` keeps
 * it one process (its relauncher ignores SIGTERM) and saves about 2 s.
 */
export const gemini: Recipe = {
  key: "gemini",
  clientName: "gemini-cli-mcp-client",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    await Deno.mkdir(join(sandbox.home, ".gemini"), { recursive: true });
    await Deno.mkdir(join(sandbox.work, ".gemini"), { recursive: true });
    await write(
      join(sandbox.home, ".gemini", "settings.json"),
      JSON.stringify(
        { security: { auth: { selectedType: "gemini-api-key" } } },
        null,
        2,
      ) + "\n",
      files,
    );
    await write(
      join(sandbox.work, ".gemini", "settings.json"),
      mcpJson(servers),
      files,
    );
    return {
      args: ["-p", "hi"],
      env: {
        ...baseEnv(sandbox),
        GEMINI_CLI_TRUST_WORKSPACE: "true",
        GEMINI_CLI_NO_RELAUNCH: "true",
        GEMINI_API_KEY: "e2e-dummy",
        GOOGLE_GEMINI_BASE_URL: CLOSED_MODEL_URL,
      },
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM" },
};

/**
 * MCP Inspector CLI: connects to one server of a `{"mcpServers": …}` file,
 * calls a tool, prints the result as JSON and exits by itself.
 */
export function inspectorCall(server: string, tool: string): Recipe {
  return {
    key: "inspector",
    clientName: "inspector-cli",
    listsTools: true,
    async prepare(sandbox, servers) {
      const files: Record<string, string> = {};
      const config = join(sandbox.root, "inspector.mcp.json");
      await write(config, mcpJson(servers, { type: "stdio" }), files);
      return {
        args: [
          "--cli",
          "--config",
          config,
          "--server",
          server,
          "--method",
          "tools/call",
          "--tool-name",
          tool,
        ],
        env: { ...baseEnv(sandbox), MCP_INSPECTOR_SECRET_STORE: "memory" },
        cwd: sandbox.work,
        files,
      };
    },
    stop: { signal: "SIGTERM" },
  };
}

/**
 * Amp (optional): `--mcp-config <file>` holding a bare `{name: entry}` map
 * (an `mcpServers` wrapper is rejected), execute mode, a dummy API key and
 * the Amp server at a closed port. It starts the servers, fails to reach
 * the server and exits 1 by itself.
 */
export const amp: Recipe = {
  key: "amp",
  clientName: "amp-mcp-client",
  clientVersion: "0.0.0-dev",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    const config = join(sandbox.root, "amp.mcp.json");
    const map = JSON.parse(mcpJson(servers)).mcpServers;
    await write(config, JSON.stringify(map, null, 2) + "\n", files);
    return {
      args: ["-x", "hi", "--mcp-config", config],
      env: {
        ...baseEnv(sandbox),
        AMP_API_KEY: "e2e-dummy",
        AMP_URL: CLOSED_MODEL_URL,
        AMP_SKIP_UPDATE_CHECK: "1",
      },
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM" },
};

/**
 * opencode (optional): `OPENCODE_CONFIG=<file>` with
 * `{"mcp": {name: {type: "local", command: [program, ...args],
 * environment}}}`; `opencode mcp list` connects every server and exits 0
 * (`opencode run` would install provider packages from npm first).
 */
export const opencode: Recipe = {
  key: "opencode",
  clientName: "opencode",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    const config = join(sandbox.root, "opencode.json");
    const mcp = Object.fromEntries(
      Object.entries(servers).map(([name, server]) => [name, {
        type: "local",
        command: [server.command, ...server.args],
        environment: server.env,
      }]),
    );
    await write(config, JSON.stringify({ mcp }, null, 2) + "\n", files);
    return {
      args: ["mcp", "list"],
      env: { ...baseEnv(sandbox), OPENCODE_CONFIG: config },
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM" },
};

/**
 * Qwen Code (optional): `--mcp-config <file>` (`{"mcpServers": …}`), the
 * OpenAI auth type at a closed port, a one-shot prompt. Like Gemini CLI it
 * relaunches itself, and its child survives a SIGTERM to the launcher: the
 * group is signalled.
 */
export const qwen: Recipe = {
  key: "qwen",
  clientName: "qwen-cli-mcp-client-probe",
  clientVersion: "0.0.1",
  listsTools: true,
  async prepare(sandbox, servers) {
    const files: Record<string, string> = {};
    const config = join(sandbox.root, "qwen.mcp.json");
    await write(config, mcpJson(servers), files);
    return {
      args: [
        "--mcp-config",
        config,
        "--auth-type",
        "openai",
        "--openai-api-key",
        "e2e-dummy",
        "--openai-base-url",
        `${CLOSED_MODEL_URL}/v1`,
        "-m",
        "e2e-model",
        "hi",
      ],
      env: baseEnv(sandbox),
      cwd: sandbox.work,
      files,
    };
  },
  stop: { signal: "SIGTERM", target: "group" },
};

/** The four agent CLIs' recipes by key. */
export const AGENT_RECIPES = { copilot, claude, codex, gemini } as const;

/** The optional CLIs' recipes by key. */
export const OPTIONAL_RECIPES = { amp, opencode, qwen } as const;
