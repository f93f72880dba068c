#!/usr/bin/env bash
# Instructions per command: each module in a server of its own under valgrind's callgrind, one
# after the other, driven by redis-benchmark with the given command; counts are zeroed after a
# warm-up and dumped after N commands, so they hold exactly those N commands (the whole server:
# parsing, the module, the reply, the event loop). Unlike a timing, the count does not move with
# the machine's load, so rows that come out near 1.00× in bench/compare.sh can be told apart.
#
# Usage: bench/instructions.sh MODULE.so [MODULE.so …] -- REDIS-BENCHMARK COMMAND…
#   e.g. bench/instructions.sh redisbloom.so target/release/libredis_bf.so -- BF.ADD nk:__rand_int__ __rand_int__
# Env:   SERVER=path  the redis-server (default: redis-server on PATH)
#        N=n (20000)  commands counted; WARMUP=n (5000) commands before them
#        PIPELINE=n (32)  redis-benchmark's -P
#        SETUP="ARGS"     one redis-cli command run before the warm-up (e.g. "BF.RESERVE f10m 0.01 10000000")
#        KEEP=dir         keep each callgrind output as dir/<module>.callgrind (callgrind_annotate reads it)
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${SERVER:-redis-server}
N=${N:-20000}
WARMUP=${WARMUP:-5000}
PIPELINE=${PIPELINE:-32}
modules=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  modules+=("$1")
  shift
done
if [ $# -lt 2 ] || [ ${#modules[@]} -eq 0 ]; then
  echo "usage: bench/instructions.sh MODULE.so [MODULE.so …] -- COMMAND ARGS…" >&2
  exit 2
fi
shift
WORK=$(mktemp -d /tmp/redis-bf-instructions.XXXXXX)
. bench/callgrind.sh

echo "$("$SERVER" --version | cut -d' ' -f3); $N commands after $WARMUP, pipeline $PIPELINE: $*"
for module in "${modules[@]}"; do
  name=$(basename "$module" .so)
  cg_start "$name" "$module"
  # shellcheck disable=SC2086
  [ -z "${SETUP:-}" ] || redis-cli -p "$PORT" $SETUP >/dev/null
  redis-benchmark -p "$PORT" -q -r 1000000000 -n "$WARMUP" -P "$PIPELINE" "$@" >/dev/null
  callgrind_control -z "$VG_PID" >/dev/null 2>&1
  redis-benchmark -p "$PORT" -q -r 1000000000 -n "$N" -P "$PIPELINE" "$@" >/dev/null
  callgrind_control -d counted "$VG_PID" >/dev/null 2>&1
  cg_stop
  out=("$CG_DIR"/out.*.1)
  total=$(cg_total "${out[0]}")
  awk -v n="$N" -v t="$total" -v m="$name" 'BEGIN {printf "%-24s %8.0f instructions per command\n", m, t / n}'
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "${out[0]}" "$KEEP/$name.callgrind"
  fi
done
