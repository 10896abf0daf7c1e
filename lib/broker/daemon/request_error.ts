/**
 * The error of a request the daemon refuses, in a module of its own so that
 * the token sources can throw it without importing the broker that calls
 * them.
 *
 * @module
 */

import { ERROR_CODES } from "../../errors.ts";
import type { ErrorCode } from "../protocol.ts";

/** A request the broker refuses; `code` and `status` go into the answer. */
export class BrokerRequestError extends Error {
  /** The error code of the answer. */
  readonly code: ErrorCode;

  /** Creates the error; the message must be secret-free. */
  constructor(options: { code: ErrorCode; message: string }) {
    super(options.message);
    this.name = "BrokerRequestError";
    this.code = options.code;
  }

  /** The HTTP status of the answer: the code's (`ERROR_CODES`). */
  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}
