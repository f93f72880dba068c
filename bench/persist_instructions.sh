#!/usr/bin/env bash
# Instructions of SAVE, DEBUG RELOAD and BGREWRITEAOF of one big cuckoo filter: each module in a
# server of its own under valgrind's callgrind, one after the other, with the same filter
# (bench/filters.py --cf-key: a table of CF_BYTES, three slots in four filled). Counts are
# zeroed before each command and dumped after it, so each holds that command alone (SAVE and
# DEBUG RELOAD on the main thread; BGREWRITEAOF in its child, counted from the fork to the
# child's exit, written without an RDB preamble so the module's AOF rewrite runs). Unlike a
# timing, a count does not move with the machine's load or the disk: it tells whether two
# modules make the server do the same work when their timings differ by a few percent.
#
# Usage: bench/persist_instructions.sh MODULE.so [MODULE.so …]
# Env:   SERVER=path (default: redis-server on PATH)  CF_BYTES=n (64 MiB; a power of two)
set -euo pipefail
cd "$(dirname "$0")/.."
SERVER=${SERVER:-redis-server}
CF_BYTES=${CF_BYTES:-67108864}
[ $# -gt 0 ] || { echo "usage: bench/persist_instructions.sh MODULE.so [MODULE.so …]" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "persist_instructions.sh: needs valgrind (apt-get install valgrind)" >&2; exit 2; }
WORK=$(mktemp -d /tmp/redis-bf-persist-instructions.XXXXXX)
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
total() { awk '/^(summary|totals):/ {print $2; exit}' "$1"; }
rewriting() {
  redis-cli -p "$PORT" INFO persistence | tr -d '\r' |
    awk -F: '/aof_rewrite_in_progress|aof_rewrite_scheduled/ {s+=$2} END {print s}'
}

echo "$("$SERVER" --version | cut -d' ' -f3); one cuckoo filter of $CF_BYTES bytes of table; instructions"
for module in "$@"; do
  name=$(basename "$module" .so)
  dir=$WORK/$name
  mkdir -p "$dir"
  PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  valgrind --tool=callgrind --callgrind-out-file="$dir/out.%p" --dump-instr=no \
    "$SERVER" --port "$PORT" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    --aof-use-rdb-preamble no --enable-debug-command yes \
    --loadmodule "$(realpath "$module")" --logfile "$dir/server.log" >"$dir/valgrind.log" 2>&1 &
  VG_PID=$!
  for _ in $(seq 300); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p "$PORT" ping >/dev/null 2>&1 || { cat "$dir/valgrind.log" "$dir/server.log" >&2; exit 1; }
  python3 bench/filters.py --cf-key cfbig "$CF_BYTES" "$PORT"
  for step in save "debug reload"; do
    callgrind_control -z "$VG_PID" >/dev/null 2>&1
    # shellcheck disable=SC2086
    redis-cli -p "$PORT" $step >/dev/null
    callgrind_control -d "${step// /-}" "$VG_PID" >/dev/null 2>&1
  done
  callgrind_control -z "$VG_PID" >/dev/null 2>&1
  redis-cli -p "$PORT" bgrewriteaof >/dev/null
  sleep 0.5
  while [ "$(rewriting)" != 0 ]; do sleep 0.5; done
  redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
  wait "$VG_PID" 2>/dev/null || true
  VG_PID=
  # out.PID.1 and .2 are the server's two dumps; the child's file is the other out.* (the
  # server's own final dump is out.PID).
  server='' child=''
  for f in "$dir"/out.*.1; do server=${f%.1}; done
  for f in "$dir"/out.*; do
    case $f in "$server" | "$server".*) ;; *) child=$f ;; esac
  done
  printf '%-24s SAVE %14s   DEBUG RELOAD %14s   BGREWRITEAOF (child) %12s\n' "$name" \
    "$(total "$server.1")" "$(total "$server.2")" "$(total "$child")"
done
