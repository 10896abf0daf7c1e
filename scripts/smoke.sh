#!/usr/bin/env bash
# Smoke test of a sherlock program, as the release workflow runs it on each
# native runner against the compiled binary:
#
#   scripts/smoke.sh dist/sherlock-x86_64-unknown-linux-gnu
#   scripts/smoke.sh scripts/sherlock.sh            # from source, the same checks
#
# In a throwaway HOME (every XDG folder inside it, nothing inherited but
# PATH): `--version` prints deno.json's version, `agents` lists every
# profiles/*.toml as built-in, and `--dry-run claude` with one service in
# services.d renders that service into Claude Code's config. Exit 0 when all
# three hold; otherwise 1 with one line saying which did not.
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: scripts/smoke.sh PROGRAM" >&2
  exit 2
fi
program=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
fail() {
  echo "smoke: $program: $*" >&2
  exit 1
}

version=$(sed -n 's/^  "version": "\(.*\)",$/\1/p' "$root/deno.json")
[ -n "$version" ] || fail "cannot read the version from deno.json"

home=$(mktemp -d "${TMPDIR:-/tmp}/sherlock-smoke.XXXXXX")
trap 'rm -rf "$home"' EXIT
mkdir -p "$home/config/sherlock/services.d" "$home/run"
chmod 0700 "$home/run"
cat >"$home/config/sherlock/services.d/smoke.toml" <<'EOF'
[service]
name = "smoke"
[server]
command = "smoke-mcp-server"
args = ["stdio", "--smoke-marker"]
EOF
run() {
  env -i PATH="$PATH" HOME="$home" XDG_CONFIG_HOME="$home/config" \
    XDG_STATE_HOME="$home/state" XDG_CACHE_HOME="$home/cache" \
    XDG_DATA_HOME="$home/data" XDG_RUNTIME_DIR="$home/run" NO_COLOR=1 \
    ${SYSTEMROOT:+SYSTEMROOT="$SYSTEMROOT"} "$program" "$@"
}

got=$(run --version) || fail "--version failed"
got=${got%$'\r'}
[ "$got" = "sherlock $version" ] || fail "--version printed \"$got\", not \"sherlock $version\""

agents=$(run agents) || fail "agents failed"
for profile in "$root"/profiles/*.toml; do
  name=$(basename "$profile" .toml)
  grep -Eq "^$name[[:space:]]+built-in" <<<"$agents" ||
    fail "agents does not list the built-in profile $name"
done

dry=$(run --dry-run claude -p smoke 2>/dev/null) || fail "--dry-run claude failed"
grep -q '"smoke"' <<<"$dry" && grep -q -- '--smoke-marker' <<<"$dry" ||
  fail "--dry-run claude does not render the service smoke"
grep -q -- '--mcp-config=' <<<"$dry" ||
  fail "--dry-run claude does not pass the rendered config with --mcp-config"

echo "smoke: $program: --version, agents and --dry-run with a service OK"
