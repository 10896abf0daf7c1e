/**
 * sherlock's version, read from deno.json so that there is one source.
 *
 * @module
 */

import denoJson from "../deno.json" with { type: "json" };

/** The version of this sherlock build. */
export const VERSION: string = denoJson.version;
