# Sourced by the other scripts: sets DENO to a Deno 2.9.x executable.
# Uses `deno` from PATH when it is 2.9.x; otherwise installs deno@2.9.6 from
# the npm registry into .cache/deno/ (no root needed, nothing global).
# Then makes sure node_modules/ matches deno.lock, so that nothing later
# touches the network.

sherlock_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
deno_version_wanted="2.9.6"

if command -v deno >/dev/null 2>&1 && deno --version 2>/dev/null | grep -q '^deno 2\.9\.'; then
  DENO="$(command -v deno)"
else
  DENO="$sherlock_root/.cache/deno/node_modules/deno/deno"
  if ! "$DENO" --version >/dev/null 2>&1; then
    echo "sherlock: installing deno@$deno_version_wanted from the npm registry into .cache/deno/" >&2
    npm install --prefix "$sherlock_root/.cache/deno" --no-save --no-audit --no-fund \
      --loglevel=error "deno@$deno_version_wanted" >&2
  fi
  if ! "$DENO" --version >/dev/null 2>&1; then
    echo "sherlock: could not install Deno from the npm registry; install deno 2.9.x and retry" >&2
    exit 69
  fi
fi
export DENO

# node_modules/ is filled from deno.lock once, then reused offline.
if [ ! -f "$sherlock_root/node_modules/.sherlock-installed" ] ||
  [ "$sherlock_root/deno.lock" -nt "$sherlock_root/node_modules/.sherlock-installed" ]; then
  (cd "$sherlock_root" && "$DENO" install --frozen --quiet) >&2
  touch "$sherlock_root/node_modules/.sherlock-installed"
fi
