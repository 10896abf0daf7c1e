/**
 * The 2026-07-28 revision's wire as the bridge writes and reads it, in pure
 * functions (`modern_http.ts` does the I/O): the per-request `_meta`
 * envelope, the `Mcp-Method`/`Mcp-Name`/`Mcp-Param-*` headers, which era a
 * `server/discover` probe's outcome means, the `initialize` answer a 2025
 * agent gets from a `DiscoverResult`, and which client capability each
 * embedded input request needs.
 *
 * @module
 */

import { isObject, type JsonRpcId, type Message } from "./relay_core.ts";

/** The modern revision the bridge speaks to servers. */
export const MODERN_REVISION = "2026-07-28";

/** The 2025-era revisions an agent may ask for in `initialize`. */
export const LEGACY_REVISIONS: readonly string[] = [
  "2024-11-05",
  "2025-03-26",
  "2025-06-18",
  "2025-11-25",
];

/** The `_meta` key of the request's protocol version. */
export const PROTOCOL_VERSION_KEY = "io.modelcontextprotocol/protocolVersion";
/** The `_meta` key of the client's name and version. */
export const CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo";
/** The `_meta` key of the client's capabilities. */
export const CLIENT_CAPABILITIES_KEY =
  "io.modelcontextprotocol/clientCapabilities";
/** The `_meta` key of the request's log level (replaces `logging/setLevel`). */
export const LOG_LEVEL_KEY = "io.modelcontextprotocol/logLevel";
/** The `_meta` key a `subscriptions/listen` stream tags its messages with. */
export const SUBSCRIPTION_ID_KEY = "io.modelcontextprotocol/subscriptionId";
/** The `_meta` key of the server's name and version in a result. */
export const SERVER_INFO_KEY = "io.modelcontextprotocol/serverInfo";

/** The JSON-RPC error code of `UnsupportedProtocolVersion`. */
export const UNSUPPORTED_VERSION_CODE = -32022;
/** The JSON-RPC error code of `MissingRequiredClientCapability`. */
export const MISSING_CAPABILITY_CODE = -32021;

/** What the agent said of itself in its `initialize`. */
export interface AgentHello {
  /** The revision it asked for. */
  protocolVersion: string;
  /** Its `clientInfo`. */
  clientInfo: Record<string, unknown>;
  /** Its `capabilities`. */
  capabilities: Record<string, unknown>;
}

/**
 * The agent's `initialize` params as an {@linkcode AgentHello}; a message
 * that is not an `initialize` (or lacks a field) gets sherlock's defaults.
 */
export function agentHello(message: Message): AgentHello {
  const params = isObject(message.params) && message.method === "initialize"
    ? message.params
    : {};
  return {
    protocolVersion: typeof params.protocolVersion === "string"
      ? params.protocolVersion
      : LEGACY_REVISIONS[LEGACY_REVISIONS.length - 1],
    clientInfo: isObject(params.clientInfo)
      ? params.clientInfo
      : { name: "sherlock-bridge", version: "0" },
    capabilities: isObject(params.capabilities) ? params.capabilities : {},
  };
}

/**
 * `params` with the envelope the revision requires of every request (the
 * agent's protocol fields from its `initialize`, and its log level when it
 * set one); keys the message already carries win.
 */
export function withEnvelope(
  params: unknown,
  options: { hello: AgentHello; logLevel?: string },
): Message {
  const base = isObject(params) ? params : {};
  const meta = isObject(base._meta) ? base._meta : {};
  return {
    ...base,
    _meta: {
      [PROTOCOL_VERSION_KEY]: MODERN_REVISION,
      [CLIENT_INFO_KEY]: options.hello.clientInfo,
      [CLIENT_CAPABILITIES_KEY]: options.hello.capabilities,
      ...(options.logLevel ? { [LOG_LEVEL_KEY]: options.logLevel } : {}),
      ...meta,
    },
  };
}

/**
 * The request metadata headers of a request: `MCP-Protocol-Version`,
 * `Mcp-Method`, `Mcp-Name` (of `tools/call`, `prompts/get`,
 * `resources/read`) and the `Mcp-Param-*` headers a tool's `x-mcp-header`
 * annotations ask for (`paramHeaders`, from its `tools/list` entry).
 */
export function requestHeaders(
  message: Message,
  paramHeaders?: readonly ParamHeader[],
): Record<string, string> {
  const headers: Record<string, string> = {
    "MCP-Protocol-Version": MODERN_REVISION,
    "Mcp-Method": String(message.method),
  };
  const params = isObject(message.params) ? message.params : {};
  const name = message.method === "resources/read" ? params.uri : params.name;
  if (NAMED_METHODS.has(String(message.method)) && typeof name === "string") {
    headers["Mcp-Name"] = headerValue(name);
  }
  if (message.method === "tools/call" && paramHeaders) {
    const args = isObject(params.arguments) ? params.arguments : {};
    for (const { path, header } of paramHeaders) {
      const value = valueAt(args, path);
      const text = typeof value === "string"
        ? value
        : typeof value === "boolean" ||
            (typeof value === "number" && Number.isFinite(value))
        ? String(value)
        : undefined;
      if (text !== undefined) {
        headers[`Mcp-Param-${header}`] = headerValue(text);
      }
    }
  }
  return headers;
}

/** The methods whose `Mcp-Name` header is required. */
const NAMED_METHODS = new Set(["tools/call", "prompts/get", "resources/read"]);

/**
 * A header value as the revision's Value Encoding writes it: as is when it
 * is visible ASCII and spaces without leading or trailing whitespace, else
 * (or when it looks like the sentinel) `=?base64?<UTF-8 in Base64>?=`.
 */
export function headerValue(text: string): string {
  const plain = /^[\x20-\x7e]*$/.test(text) && text.trim() === text &&
    !(text.startsWith("=?base64?") && text.endsWith("?="));
  if (plain) return text;
  const bytes = new TextEncoder().encode(text);
  let binary = "";
  for (const byte of bytes) binary += String.fromCharCode(byte);
  return `=?base64?${btoa(binary)}?=`;
}

/** One `x-mcp-header` annotation of a tool's `inputSchema`. */
export interface ParamHeader {
  /** The property path from the arguments' root. */
  path: string[];
  /** The header's name after `Mcp-Param-`. */
  header: string;
}

/** A `tools/list` result as the bridge passes it on (see {@linkcode checkTools}). */
export interface CheckedTools {
  /** The result without the tools whose annotations are invalid. */
  result: Message;
  /** The `x-mcp-header` annotations of each kept tool that has some. */
  headers: Map<string, ParamHeader[]>;
  /** The tools left out, with why. */
  rejected: { name: string; reason: string }[];
}

/**
 * The revision's rule for `x-mcp-header` annotations, applied to a
 * `tools/list` result: a tool with an invalid one (empty or not an HTTP
 * token, a duplicate regardless of case, on a property that is not a
 * string, integer or boolean, or reached through anything but
 * `properties`) is left out of the list, as a client on Streamable HTTP
 * must; the annotations of the others are kept for their calls'
 * `Mcp-Param-*` headers.
 */
export function checkTools(result: unknown): CheckedTools {
  const headers = new Map<string, ParamHeader[]>();
  const rejected: { name: string; reason: string }[] = [];
  if (!isObject(result) || !Array.isArray(result.tools)) {
    return { result: isObject(result) ? result : {}, headers, rejected };
  }
  const kept = result.tools.filter((tool) => {
    if (!isObject(tool) || typeof tool.name !== "string") return true;
    const found: ParamHeader[] = [];
    const reason = annotations(tool.inputSchema, [], true, found);
    if (reason !== undefined) {
      rejected.push({ name: tool.name, reason });
      return false;
    }
    if (found.length > 0) headers.set(tool.name, found);
    return true;
  });
  return {
    result: rejected.length === 0 ? result : { ...result, tools: kept },
    headers,
    rejected,
  };
}

/** An HTTP field name (RFC 9110's `1*tchar`). */
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/**
 * Collects the annotations under `schema` into `found`; returns why they
 * are invalid, if they are. `reachable`: `schema` is reached from the root
 * through `properties` only.
 */
function annotations(
  schema: unknown,
  path: string[],
  reachable: boolean,
  found: ParamHeader[],
  depth = 0,
): string | undefined {
  if (depth > 32) return "its inputSchema is nested too deep";
  if (Array.isArray(schema)) {
    for (const item of schema) {
      const reason = annotations(item, path, false, found, depth + 1);
      if (reason) return reason;
    }
    return undefined;
  }
  if (!isObject(schema)) return undefined;
  const header = schema["x-mcp-header"];
  if (header !== undefined && path.length > 0) {
    if (!reachable) {
      return "an x-mcp-header is not reachable through properties alone";
    }
    if (typeof header !== "string" || !TOKEN.test(header)) {
      return "an x-mcp-header is not an HTTP header name";
    }
    if (!["string", "integer", "boolean"].includes(String(schema.type))) {
      return `x-mcp-header ${header} is on a property that is not a string, integer or boolean`;
    }
    if (
      found.some((one) => one.header.toLowerCase() === header.toLowerCase())
    ) return `x-mcp-header ${header} is there twice`;
    found.push({ path, header });
  } else if (header !== undefined) {
    return "the inputSchema itself has an x-mcp-header";
  }
  for (const [key, value] of Object.entries(schema)) {
    if (key === "x-mcp-header") continue;
    if (key === "properties" && isObject(value)) {
      for (const [name, property] of Object.entries(value)) {
        const reason = annotations(
          property,
          [...path, name],
          reachable,
          found,
          depth + 1,
        );
        if (reason) return reason;
      }
    } else if (typeof value === "object" && value !== null) {
      const reason = annotations(value, path, false, found, depth + 1);
      if (reason) return reason;
    }
  }
  return undefined;
}

function valueAt(root: Message, path: readonly string[]): unknown {
  let value: unknown = root;
  for (const key of path) {
    if (!isObject(value)) return undefined;
    value = value[key];
  }
  return value;
}

/** What a `server/discover` probe found out. */
export type EraVerdict =
  | { kind: "modern"; discover: Message }
  | { kind: "legacy" }
  | { kind: "error"; message: string };

/**
 * Which era a server speaks, from the answer to a `server/discover` probe
 * (the HTTP status and the JSON-RPC message of its body, if any), as the
 * revision's Backward Compatibility section says: a `DiscoverResult` that
 * lists {@linkcode MODERN_REVISION} or an `UnsupportedProtocolVersion`
 * error that does is modern; a modern error without it is an error (the
 * server speaks only revisions the bridge does not); a 5xx is an error;
 * anything else is a 2025-era server. 401 and 403 never get here (the
 * token's handling answers them).
 */
export function classifyDiscover(
  outcome: { status: number; message?: unknown },
): EraVerdict {
  const { status, message } = outcome;
  if (status >= 500) {
    return {
      kind: "error",
      message: `answered server/discover with HTTP ${status}`,
    };
  }
  if (!isObject(message)) return { kind: "legacy" };
  const result = message.result;
  if (status < 300 && isObject(result)) {
    const versions = result.supportedVersions;
    if (Array.isArray(versions) && versions.includes(MODERN_REVISION)) {
      return { kind: "modern", discover: result };
    }
    return { kind: "legacy" };
  }
  const error = message.error;
  if (!isObject(error) || error.code !== UNSUPPORTED_VERSION_CODE) {
    return { kind: "legacy" };
  }
  const supported = isObject(error.data) && Array.isArray(error.data.supported)
    ? error.data.supported.filter((one) => typeof one === "string")
    : [];
  if (supported.length === 0) return { kind: "legacy" };
  if (supported.some((one) => LEGACY_REVISIONS.includes(one))) {
    return { kind: "legacy" };
  }
  return {
    kind: "error",
    message: `speaks only ${
      supported.join(", ").slice(0, 200)
    }, and the bridge speaks ${MODERN_REVISION} and the 2025 revisions`,
  };
}

/**
 * The answer to the agent's `initialize` (id `id`) from a server's
 * `DiscoverResult`: the agent's own revision when it is a 2025 one (the
 * bridge speaks it to the agent), the server's capabilities, name and
 * instructions.
 */
export function initializeAnswer(
  id: JsonRpcId,
  hello: AgentHello,
  discover: Message,
): Message {
  const meta = isObject(discover._meta) ? discover._meta : {};
  const serverInfo = isObject(meta[SERVER_INFO_KEY])
    ? meta[SERVER_INFO_KEY]
    : { name: "remote", version: "0" };
  return {
    jsonrpc: "2.0",
    id,
    result: {
      protocolVersion: LEGACY_REVISIONS.includes(hello.protocolVersion)
        ? hello.protocolVersion
        : LEGACY_REVISIONS[LEGACY_REVISIONS.length - 1],
      capabilities: isObject(discover.capabilities)
        ? discover.capabilities
        : {},
      serverInfo,
      ...(typeof discover.instructions === "string"
        ? { instructions: discover.instructions }
        : {}),
    },
  };
}

/**
 * The client capability an embedded input request needs and the agent did
 * not declare, as `requiredCapabilities` of the revision's
 * `MissingRequiredClientCapability` error; undefined when it declared it.
 */
export function missingCapability(
  request: unknown,
  capabilities: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const method = isObject(request) ? request.method : undefined;
  const params = isObject(request) && isObject(request.params)
    ? request.params
    : {};
  switch (method) {
    case "elicitation/create": {
      const declared = capabilities.elicitation;
      if (!isObject(declared)) return { elicitation: {} };
      // An empty elicitation capability means form mode only.
      if (params.mode === "url" && !isObject(declared.url)) {
        return { elicitation: { url: {} } };
      }
      return undefined;
    }
    case "sampling/createMessage":
      return isObject(capabilities.sampling) ? undefined : { sampling: {} };
    case "roots/list":
      return isObject(capabilities.roots) ? undefined : { roots: {} };
    default:
      // A method this revision does not embed: nothing can answer it.
      return { [String(method)]: {} };
  }
}

/**
 * The filter of a `subscriptions/listen` request: every list the server
 * says can change, and the resources the agent subscribed to; undefined
 * when there is nothing to listen for.
 */
export function listenFilter(
  serverCapabilities: unknown,
  resources: ReadonlySet<string>,
): Message | undefined {
  const caps = isObject(serverCapabilities) ? serverCapabilities : {};
  const changes = (name: string) =>
    isObject(caps[name]) && (caps[name] as Message).listChanged === true;
  const filter: Message = {};
  if (changes("tools")) filter.toolsListChanged = true;
  if (changes("prompts")) filter.promptsListChanged = true;
  if (changes("resources")) filter.resourcesListChanged = true;
  if (resources.size > 0) filter.resourceSubscriptions = [...resources];
  return Object.keys(filter).length === 0 ? undefined : filter;
}

/**
 * A message from the server as a 2025 agent reads it: a complete result
 * without `resultType`, a notification without the subscription tag.
 */
export function forAgent(message: Message, id?: JsonRpcId): Message {
  const out: Message = { ...message };
  if (id !== undefined) out.id = id;
  if (isObject(out.result) && out.result.resultType === "complete") {
    const { resultType: _, ...rest } = out.result;
    out.result = rest;
  }
  if (isObject(out.params) && isObject(out.params._meta)) {
    const { [SUBSCRIPTION_ID_KEY]: _, ...meta } = out.params._meta;
    const params: Message = { ...out.params, _meta: meta };
    if (Object.keys(meta).length === 0) delete params._meta;
    out.params = params;
  }
  return out;
}
