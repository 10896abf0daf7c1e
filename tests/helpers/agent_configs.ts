/**
 * Realistic MCP configs of each agent, as an operator's HOME holds them:
 * Claude Code's `~/.claude.json` (user and project scopes, among its other
 * keys) and a project's `.mcp.json`, Copilot CLI's
 * `~/.copilot/mcp-config.json`, Codex's `~/.codex/config.toml` (quoted
 * names, inline tables), Gemini's `~/.gemini/settings.json` (JSONC:
 * comments, trailing commas) — with plaintext tokens in them, as people
 * really leave them. For `sherlock import`'s tests.
 *
 * @module
 */

import { join } from "node:path";

/** The plaintext tokens the configs hold, by where they are. */
export interface AgentTokens {
  /** Claude, user scope: `mcpServers.github.env.GITHUB_PERSONAL_ACCESS_TOKEN`. */
  github: string;
  /** Claude, user scope: `mcpServers.linear.headers.Authorization` (Bearer). */
  linear: string;
  /** Claude, project scope: `projects["/src/app"].mcpServers.sentry.env.SENTRY_AUTH_TOKEN`. */
  sentry: string;
  /** Copilot: `mcpServers.notion.headers.Authorization`. */
  notion: string;
  /** Codex: `mcp_servers."my.docs".env.DOCS_API_KEY`. */
  docs: string;
  /** Gemini: `mcpServers.slack.env.SLACK_BOT_TOKEN`. */
  slack: string;
  /** `.mcp.json`: `mcpServers.openai.env.OPENAI_API_KEY`. */
  openai: string;
}

/** Fresh random tokens with real-looking prefixes. */
export function agentTokens(): AgentTokens {
  const random = () => crypto.randomUUID().replaceAll("-", "");
  return {
    github: `ghp_${random()}`,
    linear: `lin_api_${random()}`,
    sentry: `sntrys_${random()}`,
    notion: `ntn_${random()}`,
    docs: `sk-proj-${random()}`,
    slack: `xoxb-1234-${random()}`,
    openai: `sk-${random()}`,
  };
}

/** `~/.claude.json`: user scope, two project scopes, Claude's other keys. */
export function claudeJson(tokens: AgentTokens): string {
  return JSON.stringify(
    {
      numStartups: 42,
      installMethod: "npm-global",
      autoUpdates: true,
      userID: "0f3c…",
      mcpServers: {
        github: {
          type: "stdio",
          command: "npx",
          args: ["-y", "@modelcontextprotocol/server-github"],
          env: { GITHUB_PERSONAL_ACCESS_TOKEN: tokens.github },
        },
        linear: {
          type: "http",
          url: "https://mcp.linear.app/mcp",
          headers: { Authorization: `Bearer ${tokens.linear}` },
        },
      },
      projects: {
        "/src/app": {
          allowedTools: [],
          history: [{ display: "fix the build", pastedContents: {} }],
          mcpServers: {
            sentry: {
              type: "stdio",
              command: "npx",
              args: ["-y", "@sentry/mcp-server"],
              env: {
                SENTRY_AUTH_TOKEN: tokens.sentry,
                SENTRY_HOST: "sentry.example.com",
              },
            },
            "Puppeteer Browser": {
              type: "stdio",
              command: "npx",
              args: ["-y", "@modelcontextprotocol/server-puppeteer"],
              env: {},
            },
          },
          hasTrustDialogAccepted: true,
        },
        "/src/other": {
          mcpServers: {
            github: {
              type: "stdio",
              command: "docker",
              args: [
                "run",
                "-i",
                "--rm",
                "-e",
                "GITHUB_PERSONAL_ACCESS_TOKEN",
                "ghcr.io/github/github-mcp-server",
              ],
              env: { GITHUB_PERSONAL_ACCESS_TOKEN: "${GITHUB_TOKEN}" },
            },
          },
        },
      },
    },
    null,
    2,
  );
}

/** A project's `.mcp.json` (Claude Code's project scope file). */
export function projectMcpJson(tokens: AgentTokens): string {
  return JSON.stringify(
    {
      mcpServers: {
        openai: {
          command: "uvx",
          args: ["openai-mcp"],
          env: { OPENAI_API_KEY: tokens.openai },
        },
      },
    },
    null,
    2,
  );
}

/** `~/.copilot/mcp-config.json`. */
export function copilotJson(tokens: AgentTokens): string {
  return JSON.stringify(
    {
      mcpServers: {
        notion: {
          type: "http",
          url: "https://mcp.notion.com/mcp",
          headers: { Authorization: `Bearer ${tokens.notion}` },
          tools: ["*"],
        },
        playwright: {
          type: "local",
          command: "npx",
          args: ["@playwright/mcp@latest"],
          env: {},
          tools: ["*"],
        },
      },
    },
    null,
    2,
  );
}

/** `~/.codex/config.toml`: a quoted name, inline env tables, a KEY_PATH. */
export function codexToml(tokens: AgentTokens): string {
  return `model = "o4-mini"
approval_policy = "on-request"

[mcp_servers."my.docs"]
command = "docs-mcp"
args = ["--stdio"]
env = { DOCS_KEY_PATH = "/home/me/.config/docs/key.pem", DOCS_API_KEY = "${tokens.docs}" }

[mcp_servers.context7]
url = "https://mcp.context7.com/mcp"

[mcp_servers.disabled-one]
command = "old-server"
enabled = false
`;
}

/** `~/.gemini/settings.json`: JSON with comments and trailing commas. */
export function geminiJsonc(tokens: AgentTokens): string {
  return `{
  // Gemini CLI settings
  "theme": "GitHub",
  "selectedAuthType": "oauth-personal",
  "mcpServers": {
    /* Slack, for the team channel */
    "slack": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-slack"],
      "env": {
        "SLACK_BOT_TOKEN": "${tokens.slack}", // rotate me
        "SLACK_TEAM_ID": "T01234567",
      },
    },
    "events": {
      "url": "https://events.example.com/sse", // legacy SSE
    },
    "search": { "httpUrl": "https://search.example.com/mcp" },
  },
}
`;
}

/** The agents' files a HOME holds, by path. */
export interface AgentHomeFiles {
  /** `~/.claude.json`. */
  claude: string;
  /** `<project>/.mcp.json`. */
  project: string;
  /** `~/.copilot/mcp-config.json`. */
  copilot: string;
  /** `~/.codex/config.toml`. */
  codex: string;
  /** `~/.gemini/settings.json`. */
  gemini: string;
}

/** Writes every agent's file into `home` (and `.mcp.json` into `project`). */
export function writeAgentFiles(
  home: string,
  project: string,
  tokens: AgentTokens,
): AgentHomeFiles {
  const write = (path: string, text: string) => {
    Deno.mkdirSync(join(path, ".."), { recursive: true });
    Deno.writeTextFileSync(path, text, { mode: 0o600 });
    return path;
  };
  return {
    claude: write(join(home, ".claude.json"), claudeJson(tokens)),
    project: write(join(project, ".mcp.json"), projectMcpJson(tokens)),
    copilot: write(
      join(home, ".copilot", "mcp-config.json"),
      copilotJson(tokens),
    ),
    codex: write(join(home, ".codex", "config.toml"), codexToml(tokens)),
    gemini: write(join(home, ".gemini", "settings.json"), geminiJsonc(tokens)),
  };
}
