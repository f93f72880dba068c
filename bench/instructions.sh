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
command -v valgrind >/dev/null || { echo "instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/redis-bf-instructions.XXXXXX)
VG_PID=
PORT=
cleanup() {
  if [ -n "$VG_PID" ] && kill -0 "$VG_PID" 2>/dev/null; then
    redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$VG_PID" 2>/dev/null || true
    wait "$VG_PID" 2>/dev/null || true
  fi
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

echo "$("$SERVER" --version | cut -d' ' -f3); $N commands after $WARMUP, pipeline $PIPELINE: $*"
for module in "${modules[@]}"; do
  name=$(basename "$module" .so)
  dir=$WORK/$name
  mkdir -p "$dir"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$dir/out.%p" --dump-instr=no \
    "$SERVER" --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    --loadmodule "$(realpath "$module")" --logfile "$dir/server.log" >"$dir/valgrind.log" 2>&1 &
  VG_PID=$!
  for _ in $(seq 300); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$PORT" ping >/dev/null 2>&1 || { cat "$dir/valgrind.log" "$dir/server.log" >&2; exit 1; }
  # shellcheck disable=SC2086
  [ -z "${SETUP:-}" ] || redis-cli -p "$PORT" $SETUP >/dev/null
  redis-benchmark -p "$PORT" -q -r 1000000000 -n "$WARMUP" -P "$PIPELINE" "$@" >/dev/null
  callgrind_control -z "$VG_PID" >/dev/null 2>&1
  redis-benchmark -p "$PORT" -q -r 1000000000 -n "$N" -P "$PIPELINE" "$@" >/dev/null
  callgrind_control -d counted "$VG_PID" >/dev/null 2>&1
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$VG_PID" 2>/dev/null || true
  VG_PID=
  out=$(ls "$dir"/out.*.1)
  total=$(awk '/^(summary|totals):/ {print $2; exit}' "$out")
  awk -v n="$N" -v t="$total" -v m="$name" 'BEGIN {printf "%-24s %8.0f instructions per command\n", m, t / n}'
  if [ -n "${KEEP:-}" ]; then
    mkdir -p "$KEEP"
    cp "$out" "$KEEP/$name.callgrind"
  fi
done
