/**
 * The error of a request the daemon refuses, in a module of its own so that
 * the token sources can throw it without importing the broker that calls
 * them.
 *
 * @module
 */

import type { ErrorCode } from "../protocol.ts";

/** A request the broker refuses; `code` and `status` go into the answer. */
export class BrokerRequestError extends Error {
  /** The error code of the answer. */
  readonly code: ErrorCode;
  /** The HTTP status of the answer. */
  readonly status: number;

  /** Creates the error; the message must be secret-free. */
  constructor(options: { code: ErrorCode; status: number; message: string }) {
    super(options.message);
    this.name = "BrokerRequestError";
    this.code = options.code;
    this.status = options.status;
  }
}
