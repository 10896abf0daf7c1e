/**
 * The build script (scripts/build.ts): its command line, how it finds each
 * target's runtime, and its one-line failures. Nothing here compiles.
 */

import assert from "node:assert/strict";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  binaryKind,
  BuildError,
  isTarget,
  outputName,
  parseBuildArgs,
  resolveRuntime,
  type RuntimeContext,
  runtimeVariable,
  type Target,
  targetKind,
  TARGETS,
} from "../../scripts/build.ts";

const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
const BUILD_TS = fileURLToPath(
  new URL("../../scripts/build.ts", import.meta.url),
);

function isUsageError(error: unknown): boolean {
  return error instanceof BuildError && error.exitCode === 2 &&
    !error.message.includes("\n");
}

Deno.test("parseBuildArgs: every target by default, or the ones named, once each", () => {
  assert.deepEqual(parseBuildArgs([]).targets, [...TARGETS]);
  assert.deepEqual(
    parseBuildArgs([
      "--target",
      "aarch64-apple-darwin",
      "--target=x86_64-unknown-linux-gnu",
      "--target",
      "aarch64-apple-darwin",
    ]).targets,
    ["aarch64-apple-darwin", "x86_64-unknown-linux-gnu"],
  );
  const options = parseBuildArgs(["--offline", "--out", "/tmp/x"]);
  assert.equal(options.offline, true);
  assert.equal(options.outDir, "/tmp/x");
  assert.equal(parseBuildArgs(["--help"]).help, true);
});

Deno.test("parseBuildArgs: unknown targets and arguments are usage errors (exit 2)", () => {
  for (
    const args of [
      ["--target", "x86_64-unknown-freebsd"],
      ["--target"],
      ["--target="],
      ["--out"],
      ["--release"],
      ["main.ts"],
    ]
  ) {
    assert.throws(() => parseBuildArgs(args), isUsageError, args.join(" "));
  }
});

Deno.test("runtimeVariable, outputName: one variable and one file per target", () => {
  assert.equal(
    runtimeVariable("aarch64-apple-darwin"),
    "DENORT_BIN_AARCH64_APPLE_DARWIN",
  );
  assert.equal(
    runtimeVariable("x86_64-unknown-linux-gnu"),
    "DENORT_BIN_X86_64_UNKNOWN_LINUX_GNU",
  );
  assert.equal(
    outputName("x86_64-pc-windows-msvc"),
    "sherlock-x86_64-pc-windows-msvc.exe",
  );
  assert.equal(
    outputName("aarch64-unknown-linux-gnu"),
    "sherlock-aarch64-unknown-linux-gnu",
  );
  assert.equal(new Set(TARGETS.map(runtimeVariable)).size, TARGETS.length);
  assert.equal(isTarget("x86_64-apple-darwin"), true);
  assert.equal(isTarget("DENORT_BIN"), false);
});

/** The first 4 KiB of the running deno executable: the host's header. */
function hostHeader(): Uint8Array {
  const file = Deno.openSync(Deno.execPath());
  try {
    const bytes = new Uint8Array(4096);
    return bytes.subarray(0, file.readSync(bytes) ?? 0);
  } finally {
    file.close();
  }
}

/** A header of `size` bytes with `bytes` written at `offset`s. */
function header(size: number, writes: [number, number[]][]): Uint8Array {
  const bytes = new Uint8Array(size);
  for (const [offset, values] of writes) bytes.set(values, offset);
  return bytes;
}

Deno.test("binaryKind: reads OS and CPU from ELF, Mach-O and PE headers", () => {
  const host = hostHeader();
  if (isTarget(Deno.build.target)) {
    assert.deepEqual(binaryKind(host), targetKind(Deno.build.target));
  }
  // ELF, little-endian, e_machine = EM_AARCH64.
  assert.deepEqual(
    binaryKind(header(64, [[0, [0x7f, 0x45, 0x4c, 0x46, 2, 1]], [18, [0xb7]]])),
    { os: "linux", arch: "aarch64" },
  );
  // 64-bit Mach-O, CPU_TYPE_ARM64 and CPU_TYPE_X86_64.
  assert.deepEqual(
    binaryKind(header(32, [[0, [0xcf, 0xfa, 0xed, 0xfe, 0x0c, 0, 0, 1]]])),
    { os: "darwin", arch: "aarch64" },
  );
  assert.deepEqual(
    binaryKind(header(32, [[0, [0xcf, 0xfa, 0xed, 0xfe, 0x07, 0, 0, 1]]])),
    { os: "darwin", arch: "x86_64" },
  );
  // PE: "MZ", e_lfanew = 0x80, "PE\0\0", machine = AMD64.
  assert.deepEqual(
    binaryKind(
      header(256, [[0, [0x4d, 0x5a]], [0x3c, [0x80]], [0x80, [
        0x50,
        0x45,
        0,
        0,
        0x64,
        0x86,
      ]]]),
    ),
    { os: "windows", arch: "x86_64" },
  );
  assert.equal(binaryKind(new TextEncoder().encode("#!/bin/sh\n")), undefined);
  assert.equal(binaryKind(new Uint8Array()), undefined);
});

Deno.test("resolveRuntime: per-target variable, DENORT_BIN for the host only, cache, download", async () => {
  const folder = await Deno.makeTempDir();
  try {
    const host = isTarget(Deno.build.target)
      ? Deno.build.target
      : "x86_64-unknown-linux-gnu";
    const other = host === "aarch64-apple-darwin"
      ? "x86_64-apple-darwin"
      : "aarch64-apple-darwin";
    const context = (env: Record<string, string>): RuntimeContext => ({
      env,
      hostTarget: host,
      denoDir: join(folder, "deno"),
      denoVersion: "2.9.6",
    });
    // A file with the host's header stands in for the host's denort.
    const hostRuntime = join(folder, "denort");
    Deno.writeFileSync(hostRuntime, hostHeader());

    assert.deepEqual(resolveRuntime(host, context({})), { kind: "download" });
    assert.deepEqual(
      resolveRuntime(host, context({ DENORT_BIN: hostRuntime })),
      { kind: "variable", variable: "DENORT_BIN", path: hostRuntime },
    );
    // Deno would put DENORT_BIN into every target; the build does not.
    assert.deepEqual(
      resolveRuntime(other, context({ DENORT_BIN: hostRuntime })),
      { kind: "download" },
    );
    // The per-target variable wins, and its header must fit the target.
    assert.throws(
      () =>
        resolveRuntime(
          other,
          context({ [runtimeVariable(other)]: hostRuntime }),
        ),
      (error: unknown) =>
        error instanceof BuildError && error.exitCode === 78 &&
        error.message.includes(runtimeVariable(other)) &&
        error.message.includes(`not one for ${other}`),
    );
    assert.throws(
      () =>
        resolveRuntime(host, context({ DENORT_BIN: join(folder, "missing") })),
      (error: unknown) =>
        error instanceof BuildError && error.exitCode === 78 &&
        error.message.includes("no such file"),
    );

    const cached = join(
      folder,
      "deno",
      "dl",
      "release",
      "v2.9.6",
      `denort-${other}.zip`,
    );
    Deno.mkdirSync(join(cached, ".."), { recursive: true });
    Deno.writeTextFileSync(cached, "zip");
    assert.deepEqual(resolveRuntime(other, context({})), {
      kind: "cache",
      path: cached,
    });
  } finally {
    await Deno.remove(folder, { recursive: true });
  }
});

/** Runs the build script with `args`, an empty Deno cache and no DENORT_BIN. */
async function runBuild(
  args: string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string }> {
  const denoDir = await Deno.makeTempDir();
  try {
    const childEnv = Deno.env.toObject();
    for (const name of Object.keys(childEnv)) {
      if (name.startsWith("DENORT_BIN")) delete childEnv[name];
    }
    const output = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", "--quiet", BUILD_TS, ...args],
      env: { ...childEnv, DENO_DIR: denoDir, NO_COLOR: "1", ...env },
      clearEnv: true,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    return {
      code: output.code,
      stderr: new TextDecoder().decode(output.stderr),
    };
  } finally {
    await Deno.remove(denoDir, { recursive: true });
  }
}

Deno.test("build --offline without a runtime: one line per target, exit 69, nothing built", async () => {
  const out = await Deno.makeTempDir();
  try {
    const result = await runBuild([
      "--offline",
      "--out",
      out,
      "--target",
      "aarch64-apple-darwin",
      "--target",
      "x86_64-pc-windows-msvc",
    ]);
    assert.equal(result.code, 69, result.stderr);
    const lines = result.stderr.trimEnd().split("\n");
    assert.equal(lines.length, 2, result.stderr);
    const targets: Target[] = [
      "aarch64-apple-darwin",
      "x86_64-pc-windows-msvc",
    ];
    for (const [index, target] of targets.entries()) {
      assert.match(
        lines[index],
        new RegExp(
          `^build: no Deno runtime for ${target}: set ${
            runtimeVariable(target)
          } `,
        ),
      );
      assert.match(lines[index], /dl\.deno\.land is reachable$/);
    }
    assert.deepEqual([...Deno.readDirSync(out)], []);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("build: a wrong DENORT_BIN is one line and exit 78; a bad target exit 2", async () => {
  const missing = await runBuild(
    ["--offline", "--target", "x86_64-unknown-linux-gnu"],
    { DENORT_BIN: "/nonexistent/denort" },
  );
  if (Deno.build.target === "x86_64-unknown-linux-gnu") {
    assert.equal(missing.code, 78, missing.stderr);
    assert.match(
      missing.stderr,
      /^build: DENORT_BIN=\/nonexistent\/denort cannot be read \(no such file\); point it at denort [\d.]+ for x86_64-unknown-linux-gnu\n$/,
    );
  }
  const usage = await runBuild(["--target", "sparc"]);
  assert.equal(usage.code, 2);
  assert.match(usage.stderr, /^build: unknown target sparc; the targets are /);
  assert.equal(usage.stderr.trimEnd().split("\n").length, 1);
});

Deno.test("build --dry-run: prints the includes, outputs and one deno compile per target, compiles nothing", async () => {
  const out = await Deno.makeTempDir({ prefix: "sherlock-build-dry-" });
  const outDir = join(out, "dist");
  try {
    const result = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--allow-all", BUILD_TS, "--dry-run", "--out", outDir],
      cwd: REPO_ROOT,
      env: { DENORT_BIN: "", NO_COLOR: "1" },
      stdin: "null",
    }).output();
    const stdout = new TextDecoder().decode(result.stdout);
    assert.equal(result.code, 0, new TextDecoder().decode(result.stderr));
    const commands = stdout.split("\n").filter((line) =>
      line.startsWith("deno compile ")
    );
    assert.deepEqual(
      commands.map((line) => line.match(/--target (\S+)/)?.[1]),
      [...TARGETS],
    );
    const includes = [...stdout.matchAll(/^# {3}(lib\/\S+)$/gm)].map((m) =>
      m[1]
    );
    assert.ok(includes.includes("lib/cli/run.ts"), stdout);
    for (const [index, target] of TARGETS.entries()) {
      const words = commands[index].split(" ");
      assert.deepEqual(
        words.filter((_, at) => words[at - 1] === "--include"),
        includes,
        `${target} includes every listed module`,
      );
      const output = join(outDir, outputName(target));
      assert.equal(words[words.indexOf("--output") + 1], output);
      assert.match(stdout, new RegExp(`^# {3}${output}$`, "m"));
      assert.equal(words.at(-1), "main.ts");
    }
    assert.match(
      stdout,
      new RegExp(`^# {3}${join(outDir, "SHA256SUMS")}$`, "m"),
    );
    // Each included module is a real file, so compile can embed it.
    for (const module of includes) {
      assert.ok(
        (await Deno.stat(join(REPO_ROOT, module))).isFile,
        `${module} exists`,
      );
    }
    await assert.rejects(Deno.stat(outDir), Deno.errors.NotFound);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
