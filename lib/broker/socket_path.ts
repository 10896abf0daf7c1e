/**
 * What can make the broker's socket path unusable, checked by the client
 * before it starts a daemon and by the daemon before it listens, so both
 * report the same thing in one line instead of a timeout.
 *
 * @module
 */

/** The longest socket path Linux takes (`sun_path` is 108 bytes). */
export const MAX_SOCKET_PATH_BYTES = 107;

/**
 * Why no daemon could listen at `socket`, or undefined: a path too long for
 * a Unix socket, or something that is not a socket in the way (which sherlock
 * never removes: it is not its own).
 */
export function socketPathProblem(socket: string): string | undefined {
  const bytes = new TextEncoder().encode(socket).length;
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    return `the broker's socket path ${socket} is ${bytes} bytes, longer than the ${MAX_SOCKET_PATH_BYTES} a Unix socket allows; set XDG_RUNTIME_DIR to a shorter folder`;
  }
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
