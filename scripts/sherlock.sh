#!/usr/bin/env bash
# Runs sherlock from source: ./scripts/sherlock.sh agents
# Bootstraps Deno 2.9.x from the npm registry when it is missing.
# Works through symlinks (ln -s "$PWD/scripts/sherlock.sh" ~/bin/sherlock):
# the script's real location is where the clone is.
set -euo pipefail
script="${BASH_SOURCE[0]}"
while [ -L "$script" ]; do
  target="$(readlink "$script")"
  case "$target" in
  /*) script="$target" ;;
  *) script="$(dirname "$script")/$target" ;;
  esac
done
source "$(cd "$(dirname "$script")" && pwd)/ensure_deno.sh"
exec "$DENO" run --allow-all --quiet "$sherlock_root/main.ts" "$@"
