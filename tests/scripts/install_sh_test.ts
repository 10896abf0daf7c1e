/**
 * `scripts/install.sh`, run by dash (POSIX sh) from a real bash, the way the
 * README's "Install" section says, on a "download" folder holding a
 * stand-in binary (a shell script that prints a version, since no compiled
 * binary can be built here) and its SHA256SUMS.
 */

import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { createTestHome, type TestHome } from "../helpers/home.ts";
import { runBash, sh, type ShellResult } from "../helpers/shell.ts";
import { REPO_ROOT } from "../helpers/sherlock.ts";

const SCRIPT = join(REPO_ROOT, "scripts", "install.sh");
const NAME = "sherlock-x86_64-unknown-linux-gnu";
const STAND_IN = '#!/bin/sh\necho "sherlock 9.9.9"\n';

function sha256(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}

/** A download folder with the stand-in binary and a SHA256SUMS. */
function download(home: TestHome, sums?: string): string {
  const folder = join(home.scratch, "download");
  Deno.mkdirSync(folder, { recursive: true });
  Deno.writeTextFileSync(join(folder, NAME), STAND_IN);
  Deno.writeTextFileSync(
    join(folder, "SHA256SUMS"),
    sums ??
      `${sha256("other")}  sherlock-aarch64-apple-darwin\n${
        sha256(STAND_IN)
      }  ${NAME}\n`,
  );
  return folder;
}

function install(home: TestHome, args: string): Promise<ShellResult> {
  return runBash(`dash ${sh(SCRIPT)} ${args}`, {
    env: home.env,
    cwd: home.work,
  });
}

function names(folder: string): string[] {
  try {
    return [...Deno.readDirSync(folder)].map((entry) => entry.name).sort();
  } catch {
    return [];
  }
}

Deno.test("install.sh: a verified binary goes to ~/.local/bin/sherlock, mode 0755, with the PATH hint, the demo to check it and the completions line", async () => {
  await using home = await createTestHome();
  const folder = download(home);
  const result = await install(home, sh(join(folder, NAME)));
  assert.equal(result.code, 0, result.stderr);
  assert.equal(result.stderr, "");
  const bin = join(home.home, ".local", "bin");
  assert.deepEqual(names(bin), ["sherlock"]);
  const installed = join(bin, "sherlock");
  assert.equal(Deno.statSync(installed).mode! & 0o777, 0o755);
  assert.equal(Deno.readTextFileSync(installed), STAND_IN);
  assert.match(
    result.stdout,
    /installed sherlock 9\.9\.9 as .*\/\.local\/bin\/sherlock/,
  );
  assert.match(result.stdout, /is not on PATH; add it: export PATH=/);
  assert.match(result.stdout, /sherlock completions bash/);
  assert.match(result.stdout, /^check it: \S+\/sherlock demo /m);
  // The hint works: with it, `sherlock` runs from PATH.
  const run = await runBash(`export PATH=${sh(bin)}:"$PATH"; sherlock`, {
    env: home.env,
    cwd: home.work,
  });
  assert.equal(run.stdout, "sherlock 9.9.9\n");
});

Deno.test("install.sh: --prefix, the binary found next to the script, no PATH hint when the prefix is on PATH", async () => {
  await using home = await createTestHome();
  const folder = download(home);
  Deno.copyFileSync(SCRIPT, join(folder, "install.sh"));
  const result = await runBash(
    `cd ${sh(folder)} && dash ./install.sh --prefix ${sh(home.bin)}`,
    { env: home.env, cwd: home.work },
  );
  assert.equal(result.code, 0, result.stderr);
  assert.equal(Deno.readTextFileSync(join(home.bin, "sherlock")), STAND_IN);
  assert.doesNotMatch(result.stdout, /not on PATH/);
  assert.deepEqual(names(join(home.home, ".local", "bin")), []);
});

Deno.test("install.sh: a wrong checksum is refused with one line, exit 1, nothing installed", async () => {
  await using home = await createTestHome();
  const folder = download(home, `${sha256("tampered")}  ${NAME}\n`);
  const result = await install(
    home,
    `--prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(result.code, 1);
  assert.equal(result.stdout, "");
  assert.match(
    result.stderr,
    /^install\.sh: sherlock-x86_64-unknown-linux-gnu does not match .*SHA256SUMS .*nothing was installed\n$/,
  );
  assert.deepEqual(names(home.bin), []);
});

Deno.test("install.sh: no SHA256SUMS line for the binary, or no SHA256SUMS at all, installs nothing", async () => {
  await using home = await createTestHome();
  const folder = download(
    home,
    `${sha256(STAND_IN)}  sherlock-aarch64-apple-darwin\n`,
  );
  const noLine = await install(
    home,
    `--prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(noLine.code, 1);
  assert.match(
    noLine.stderr,
    /^install\.sh: .*SHA256SUMS has no line for sherlock-x86_64-unknown-linux-gnu;.*\n$/,
  );

  Deno.removeSync(join(folder, "SHA256SUMS"));
  const noFile = await install(
    home,
    `--prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(noFile.code, 66);
  assert.match(
    noFile.stderr,
    /^install\.sh: .*SHA256SUMS: no such file; download SHA256SUMS .*\n$/,
  );
  assert.deepEqual(names(home.bin), []);
});

Deno.test("install.sh: an existing non-sherlock file is kept unless --force; an older sherlock is replaced", async () => {
  await using home = await createTestHome();
  const folder = download(home);
  const target = join(home.bin, "sherlock");
  const theirs = "#!/bin/sh\necho someone else's tool\n";
  Deno.writeTextFileSync(target, theirs, { mode: 0o755 });
  const refused = await install(
    home,
    `--prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(refused.code, 73);
  assert.match(
    refused.stderr,
    /exists and is not sherlock; move it away or use --force\n$/,
  );
  assert.equal(Deno.readTextFileSync(target), theirs);
  assert.deepEqual(names(home.bin), ["sherlock"]);

  const forced = await install(
    home,
    `--force --prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(Deno.readTextFileSync(target), STAND_IN);

  Deno.writeTextFileSync(target, '#!/bin/sh\necho "sherlock 0.0.1"\n');
  const upgrade = await install(
    home,
    `--prefix ${sh(home.bin)} ${sh(join(folder, NAME))}`,
  );
  assert.equal(upgrade.code, 0, upgrade.stderr);
  assert.equal(Deno.readTextFileSync(target), STAND_IN);
  assert.deepEqual(names(home.bin), ["sherlock"]);
});

Deno.test("install.sh: bad options are usage errors (exit 2)", async () => {
  await using home = await createTestHome();
  for (const args of ["--prefix", "--bogus", "a b"]) {
    const result = await install(home, args);
    assert.equal(result.code, 2, args);
    assert.match(result.stderr, /^install\.sh: .+\n$/, args);
  }
  assert.deepEqual(names(join(home.home, ".local", "bin")), []);
});
