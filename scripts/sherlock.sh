#!/usr/bin/env bash
# Runs sherlock from source: ./scripts/sherlock.sh agents
# Bootstraps Deno 2.9.x from the npm registry when it is missing.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/ensure_deno.sh"
exec "$DENO" run --allow-all --quiet "$sherlock_root/main.ts" "$@"
