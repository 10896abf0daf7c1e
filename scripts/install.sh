#!/bin/sh
# Installs a downloaded sherlock binary without network access:
#
#   sh install.sh [--sums FILE] [--prefix DIR] [--force] [BINARY]
#
# BINARY defaults to the one sherlock-<target> file next to this script;
# SHA256SUMS defaults to the file of that name next to BINARY. The binary is
# verified against its SHA256SUMS line (sha256sum or shasum -a 256), then
# copied to DIR/sherlock (default ~/.local/bin) with mode 0755 through a
# temporary file in DIR and a rename, so a half-copied file is never on PATH.
# An existing DIR/sherlock that is not sherlock is kept unless --force.
# Then check the installed binary: `sherlock demo` runs a whole session on
# built-in stand-ins in a throwaway home, touching nothing of yours.
#
# Exit codes: 0 installed, 1 verification failed (nothing installed),
# 2 usage, 66 the binary or SHA256SUMS is missing, 73 cannot write DIR or
# the file there is not sherlock (use --force).
set -eu

say() { printf 'install.sh: %s\n' "$*" >&2; }
info() { printf '%s\n' "$*"; }
die() {
  code=$1
  shift
  say "$*"
  exit "$code"
}

prefix="${HOME:?HOME is not set}/.local/bin"
sums=""
binary=""
force=0
while [ $# -gt 0 ]; do
  case $1 in
  --prefix)
    [ $# -ge 2 ] && [ -n "$2" ] || die 2 "--prefix needs a folder"
    prefix=$2
    shift 2
    ;;
  --prefix=*) prefix=${1#--prefix=} && shift ;;
  --sums)
    [ $# -ge 2 ] && [ -n "$2" ] || die 2 "--sums needs a file"
    sums=$2
    shift 2
    ;;
  --sums=*) sums=${1#--sums=} && shift ;;
  --force) force=1 && shift ;;
  -h | --help)
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
    ;;
  -*) die 2 "unknown option $1; see --help" ;;
  *)
    [ -z "$binary" ] || die 2 "one binary at a time; got $binary and $1"
    binary=$1
    shift
    ;;
  esac
done

if [ -z "$binary" ]; then
  here=$(dirname "$0")
  found=""
  for candidate in "$here"/sherlock-*; do
    [ -f "$candidate" ] || continue
    case $candidate in *.sh | *SHA256SUMS*) continue ;; esac
    [ -z "$found" ] || die 2 "several sherlock-* binaries in $here; name the one to install"
    found=$candidate
  done
  [ -n "$found" ] || die 66 "no sherlock-<target> binary in $here; name the downloaded file"
  binary=$found
fi
[ -f "$binary" ] || die 66 "$binary: no such file; name the downloaded sherlock-<target> binary"
[ -n "$sums" ] || sums="$(dirname "$binary")/SHA256SUMS"
[ -f "$sums" ] || die 66 "$sums: no such file; download SHA256SUMS from the same release (or give --sums FILE)"

name=$(basename "$binary")
# The SHA256SUMS line for this file: "<hex>  <name>" (or "<hex> *<name>").
expected=$(awk -v n="$name" '$2 == n || $2 == "*" n { print $1; exit }' "$sums")
[ -n "$expected" ] || die 1 "$sums has no line for $name; is it the SHA256SUMS of the release you downloaded?"
if command -v sha256sum >/dev/null 2>&1; then
  actual=$(sha256sum <"$binary" | awk '{ print $1 }')
elif command -v shasum >/dev/null 2>&1; then
  actual=$(shasum -a 256 <"$binary" | awk '{ print $1 }')
else
  die 1 "neither sha256sum nor shasum is installed; cannot verify $name"
fi
[ "$actual" = "$expected" ] || die 1 "$name does not match $sums (sha256 $actual, expected $expected); download it again, nothing was installed"

target="$prefix/sherlock"
mkdir -p "$prefix" 2>/dev/null || die 73 "cannot create $prefix"
if [ -e "$target" ] && [ "$force" -ne 1 ]; then
  # Only a sherlock is replaced: its --version prints "sherlock <version>".
  current=$("$target" --version 2>/dev/null || true)
  case $current in
  "sherlock "*) ;;
  *) die 73 "$target exists and is not sherlock; move it away or use --force" ;;
  esac
fi
temp="$prefix/.sherlock.install.$$"
trap 'rm -f "$temp"' EXIT
cp "$binary" "$temp" 2>/dev/null || die 73 "cannot write to $prefix"
chmod 0755 "$temp"
mv -f "$temp" "$target" || die 73 "cannot move the binary to $target"
trap - EXIT

version=$("$target" --version 2>/dev/null || true)
info "installed ${version:-$name} as $target (sha256 verified)"
case ":${PATH:-}:" in
*":$prefix:"*) ;;
*) info "$prefix is not on PATH; add it: export PATH=\"$prefix:\$PATH\"" ;;
esac
info "check it: $target demo   (a whole session on built-in stand-ins, in a throwaway home)"
info "completions: add to ~/.bashrc: eval \"\$(sherlock completions bash)\" (zsh: sherlock completions zsh, fish: sherlock completions fish | source)"
