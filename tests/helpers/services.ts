/**
 * Services as the schema normalizes them, for the rendering tests: a stdio
 * server with a helper token (`github`), a remote one with a header token
 * inline (`docs`), a remote one with a token through the bridge (`linear`),
 * an SSE one (`events`) and a stdio one without a token (`plain`).
 *
 * @module
 */

import { parse } from "smol-toml";
import type { Service } from "../../lib/services/loader.ts";
import { serviceSchema } from "../../lib/services/schema.ts";

/** A service as the schema normalizes it from TOML text. */
export function service(toml: string): Service {
  return serviceSchema.parse(parse(toml));
}

/** A stdio server whose token comes from `gh auth token` into its env. */
export const github: Service = service(`
[service]
name = "github"
[server]
command = "github-mcp-server"
args = ["stdio", "--read-only"]
env = { GITHUB_TOOLSETS = "repos,issues" }
[token]
source = "command"
command = ["gh", "auth", "token"]
env = "GITHUB_PERSONAL_ACCESS_TOKEN"
`);

/** A remote server whose stored secret goes into `Authorization`, inline. */
export const docs: Service = service(`
[service]
name = "docs"
[server]
url = "https://mcp.example.com/mcp"
headers = { "X-Team" = "platform" }
[token]
source = "secret"
header = "Authorization"
delivery = "inline"
`);

/** A remote server with a token, through the bridge (the default). */
export const linear: Service = service(`
[service]
name = "linear"
[server]
url = "https://mcp.linear.example/sse"
transport = "sse"
headers = { "X-Team" = "platform" }
[token]
source = "secret"
header = "Authorization"
`);

/** A remote SSE server without a token. */
export const events: Service = service(`
[service]
name = "events"
[server]
url = "http://127.0.0.1:8080/sse"
transport = "sse"
`);

/** A stdio server without a token. */
export const plain: Service = service(`
[service]
name = "plain"
[server]
command = "/opt/mcp/plain"
`);
