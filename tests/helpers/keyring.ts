/**
 * A real, private Secret Service for tests: a D-Bus session bus of its own
 * (no service activation, so nothing else starts on it, no prompter) and
 * Debian's gnome-keyring-daemon on it, with its login collection created
 * and unlocked in a throwaway HOME. Nothing here touches the machine's own
 * session bus or keyring.
 *
 * ```ts
 * const keyring = await startPrivateKeyring();
 * if (keyring === undefined) // gnome-keyring, secret-tool or dbus missing
 * home.sherlock(["login", "--remember"], { env: keyring.env, … });
 * ```
 *
 * @module
 */

import { join } from "node:path";
import { waitUntil } from "./wait.ts";

/** The programs the private keyring needs (Debian: gnome-keyring, libsecret-tools, dbus). */
export const KEYRING_PROGRAMS = [
  "dbus-daemon",
  "dbus-send",
  "gnome-keyring-daemon",
  "secret-tool",
] as const;

/** A running private keyring. */
export interface PrivateKeyring {
  /** The variables that point a process at it. */
  env: { DBUS_SESSION_BUS_ADDRESS: string };
  /** The item `service = sherlock, store = id`'s value, or undefined. */
  lookup(id: string): Promise<string | undefined>;
  /** How many items `service = sherlock, store = id` there are. */
  count(id: string): Promise<number>;
  /** Creates or replaces that item with `value` (through secret-tool's stdin). */
  store(id: string, value: string): Promise<void>;
  /** Locks the login collection (as the desktop's screen lock may). */
  lock(): Promise<void>;
  /** Stops (SIGSTOP) or resumes (SIGCONT) the keyring daemon: a stalled keyring. */
  stall(stalled: boolean): void;
  /** Stops both daemons and removes the folder. */
  stop(): void;
}

/** The programs of {@linkcode KEYRING_PROGRAMS} that are not installed. */
export function missingKeyringPrograms(): string[] {
  return KEYRING_PROGRAMS.filter((program) => !onPath(program));
}

/** Starts one; undefined when a program is missing (see {@linkcode missingKeyringPrograms}). */
export async function startPrivateKeyring(): Promise<
  PrivateKeyring | undefined
> {
  if (missingKeyringPrograms().length > 0) return undefined;
  const dir = await Deno.realPath(
    await Deno.makeTempDir({ prefix: "sherlock-keyring-" }),
  );
  const socket = join(dir, "bus");
  // No <servicedir>: nothing is activated on this bus, not even a prompter,
  // so a locked collection answers at once instead of showing a dialog.
  Deno.writeTextFileSync(
    join(dir, "bus.conf"),
    `<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=${socket}</listen>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
`,
  );
  const bus = new Deno.Command("dbus-daemon", {
    args: [`--config-file=${join(dir, "bus.conf")}`, "--nofork"],
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  bus.unref();
  await waitUntil(() => isSocket(socket), "the private D-Bus to listen");
  const address = `unix:path=${socket}`;
  const env = {
    HOME: dir,
    XDG_RUNTIME_DIR: dir,
    XDG_DATA_HOME: join(dir, "data"),
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    DBUS_SESSION_BUS_ADDRESS: address,
  };
  const keyringDaemon = new Deno.Command("gnome-keyring-daemon", {
    args: ["--foreground", "--unlock", "--components=secrets"],
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "null",
    stderr: "null",
  }).spawn();
  keyringDaemon.unref();
  const writer = keyringDaemon.stdin.getWriter();
  await writer.write(new TextEncoder().encode(KEYRING_PASSWORD));
  await writer.close();
  const run = async (args: string[], stdin?: string) => {
    const child = new Deno.Command(args[0], {
      args: args.slice(1),
      env,
      clearEnv: true,
      stdin: stdin === undefined ? "null" : "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    if (stdin !== undefined) {
      const input = child.stdin.getWriter();
      await input.write(new TextEncoder().encode(stdin));
      await input.close();
    }
    const output = await child.output();
    return {
      code: output.code,
      stdout: new TextDecoder().decode(output.stdout),
    };
  };
  const service = (method: string, ...args: string[]) =>
    run([
      "dbus-send",
      "--session",
      "--print-reply",
      "--dest=org.freedesktop.secrets",
      "/org/freedesktop/secrets",
      `org.freedesktop.Secret.Service.${method}`,
      ...args,
    ]);
  // Its login collection is made on the first store: one item makes it.
  for (let attempt = 0;; attempt++) {
    const warmUp = await run(
      ["secret-tool", "store", "--label=warm-up", "service", "warm-up"],
      "x",
    );
    if (warmUp.code === 0) break;
    if (attempt >= 100) {
      throw new Error("the private gnome-keyring never served");
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const keyring: PrivateKeyring = {
    env: { DBUS_SESSION_BUS_ADDRESS: address },
    async lookup(id) {
      const result = await run([
        "secret-tool",
        "lookup",
        "service",
        "sherlock",
        "store",
        id,
      ]);
      return result.code === 0 ? result.stdout.trim() : undefined;
    },
    async count(id) {
      const result = await run([
        "secret-tool",
        "search",
        "--all",
        "service",
        "sherlock",
        "store",
        id,
      ]);
      // One "[/org/freedesktop/secrets/collection/…]" line per item.
      return result.stdout.split("\n").filter((line) => line.startsWith("[/"))
        .length;
    },
    async store(id, value) {
      const result = await run([
        "secret-tool",
        "store",
        "--label=planted by a test",
        "service",
        "sherlock",
        "store",
        id,
      ], value);
      if (result.code !== 0) throw new Error("secret-tool store failed");
    },
    async lock() {
      const result = await service("Lock", `array:objpath:${LOGIN}`);
      if (result.code !== 0) throw new Error("cannot lock the collection");
    },
    stall(stalled) {
      Deno.kill(keyringDaemon.pid, stalled ? "SIGSTOP" : "SIGCONT");
    },
    stop() {
      for (const child of [keyringDaemon, bus]) {
        try {
          Deno.kill(child.pid, "SIGCONT");
          Deno.kill(child.pid, "SIGKILL");
        } catch {
          // Gone already.
        }
      }
      try {
        Deno.removeSync(dir, { recursive: true });
      } catch {
        // Best effort.
      }
    },
  };
  return keyring;
}

/** The private keyring's password: what unlocks its login collection. */
const KEYRING_PASSWORD = "keyring-password-of-the-test";

const LOGIN = "/org/freedesktop/secrets/collection/login";

function onPath(program: string): boolean {
  for (const folder of (Deno.env.get("PATH") ?? "").split(":")) {
    try {
      if (Deno.statSync(join(folder, program)).isFile) return true;
    } catch {
      // Not there.
    }
  }
  return false;
}

function isSocket(path: string): boolean {
  try {
    return Deno.statSync(path).isSocket === true;
  } catch {
    return false;
  }
}
