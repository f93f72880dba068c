#!/usr/bin/env bash
# Set the project's version everywhere it is stated (CONTRIBUTING.md "Releases"):
#   scripts/set-version.sh 0.5.0
# Cargo.toml's [workspace.package] version drives both crates, `MODULE LIST` and `INFO bf`; this
# script also sets the copies that cannot be derived from it: the redis-bf-core requirement in
# Cargo.toml, both lock files (Cargo.lock, fuzz/Cargo.lock), clients/js/package.json and the
# Python checker's __version__ (its pyproject.toml reads that). CHANGELOG.md's release heading
# is written by hand; `cargo test --release --test module_load` then checks that all agree.
set -euo pipefail
cd "$(dirname "$0")/.."

v=${1:-}
if ! [[ $v =~ ^(0|[1-9][0-9]?)\.(0|[1-9][0-9]?)\.(0|[1-9][0-9]?)$ ]]; then
  # RedisBloom's encoding (major·10000 + minor·100 + patch) needs minor and patch below 100;
  # a pre-release suffix would read differently in Cargo, npm and Python.
  echo "usage: scripts/set-version.sh MAJOR.MINOR.PATCH (each below 100), e.g. 0.5.0" >&2
  exit 2
fi

set_line() { # set_line FILE SED_SCRIPT: apply it, and fail when it changed nothing it should
  local before
  before=$(cksum <"$1")
  sed -i "$2" "$1"
  if [ "$(cksum <"$1")" = "$before" ] && ! grep -q "$v" "$1"; then
    echo "set-version.sh: nothing to change in $1 (format changed?)" >&2
    exit 1
  fi
}

# The first `version = ` of Cargo.toml is [workspace.package]'s.
set_line Cargo.toml "0,/^version = \".*\"$/s//version = \"$v\"/"
set_line Cargo.toml "s/^\(redis-bf-core = {.*version = \"\)[^\"]*\"/\1$v\"/"
for lock in Cargo.lock fuzz/Cargo.lock; do
  for name in redis-bf redis-bf-core; do
    set_line "$lock" "/^name = \"$name\"$/{n;s/^version = \".*\"$/version = \"$v\"/}"
  done
done
set_line clients/js/package.json "0,/\"version\": \".*\"/s//\"version\": \"$v\"/"
set_line clients/python/redis_bf_check/__init__.py "s/^__version__ = \".*\"$/__version__ = \"$v\"/"

echo "set-version.sh: version $v in Cargo.toml, Cargo.lock, fuzz/Cargo.lock, clients/js/package.json,"
echo "  clients/python/redis_bf_check/__init__.py"
if ! grep -q "^## \[$v\]" CHANGELOG.md; then
  echo "set-version.sh: now rename CHANGELOG.md's [Unreleased] entries to '## [$v] - $(date -u +%F)'"
  echo "  (a new empty [Unreleased] above it), then: cargo test --release --test module_load"
fi
