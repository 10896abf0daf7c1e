/**
 * What can make the broker's socket path unusable or untrustworthy, checked
 * by the client before it connects or starts a daemon and by the daemon
 * before it listens, so both report the same thing in one line instead of a
 * timeout, and neither ever talks to a socket that another user could have
 * put there (docs/security.md).
 *
 * @module
 */

import { describeFsError, foreignDirProblem } from "../private_files.ts";
import { dirname } from "../runtime/path.ts";

/** The longest socket path Linux takes (`sun_path` is 108 bytes). */
export const MAX_SOCKET_PATH_BYTES = 107;

/** Why `socket` is too long for a Unix socket, or undefined. */
export function socketLengthProblem(socket: string): string | undefined {
  const bytes = new TextEncoder().encode(socket).length;
  return bytes > MAX_SOCKET_PATH_BYTES
    ? `the broker's socket path ${socket} is ${bytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} a Unix socket allows; set XDG_RUNTIME_DIR to a shorter folder`
    : undefined;
}

/**
 * Why no daemon could listen at `socket`, or undefined: a path too long for
 * a Unix socket, or something that is not a socket in the way (which sherlock
 * never removes: it is not its own).
 */
export function socketPathProblem(socket: string): string | undefined {
  const tooLong = socketLengthProblem(socket);
  if (tooLong !== undefined) return tooLong;
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(socket);
  } catch {
    return undefined;
  }
  return info.isSocket
    ? undefined
    : `${socket} exists and is not a socket, so the broker cannot listen there; move it away`;
}

/**
 * Why `socket` may not be the current user's own broker, or undefined: its
 * folder is a symlink, not a folder, another user's, or open to other users
 * (anyone who can write there can put their own socket in), or what is at
 * the socket's path belongs to another user. Only `lstat`: nothing is
 * followed, opened or connected. A folder that does not exist is no
 * problem: nothing answers there, and whoever starts a daemon creates it
 * private first.
 */
export function untrustedSocketProblem(socket: string): string | undefined {
  const folder = dirname(socket);
  let info: Deno.FileInfo;
  try {
    info = Deno.lstatSync(folder);
  } catch (error) {
    if (
      error instanceof Deno.errors.NotFound ||
      error instanceof Deno.errors.NotADirectory
    ) return undefined;
    return `cannot check the broker's folder ${folder}: ${
      describeFsError(error)
    }`;
  }
  const foreign = foreignDirProblem(folder, info);
  if (foreign !== undefined) return foreign;
  const mode = (info.mode ?? 0) & 0o777;
  if ((mode & 0o077) !== 0) {
    return `${folder} is open to other users (mode 0${
      mode.toString(8)
    }); run "chmod 700 ${folder}" if you made it, or remove it`;
  }
  let owner: number | null;
  try {
    owner = Deno.lstatSync(socket).uid;
  } catch {
    return undefined;
  }
  const uid = Deno.uid();
  return uid !== null && owner !== null && owner !== uid
    ? `${socket} belongs to another user (uid ${owner}); remove it`
    : undefined;
}
