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
WORK=$(mktemp -d /tmp/redis-bf-persist-instructions.XXXXXX)
. bench/callgrind.sh
rewriting() {
  redis-cli -p "$PORT" INFO persistence | tr -d '\r' |
    awk -F: '/aof_rewrite_in_progress|aof_rewrite_scheduled/ {s+=$2} END {print s}'
}

echo "$("$SERVER" --version | cut -d' ' -f3); one cuckoo filter of $CF_BYTES bytes of table; instructions"
for module in "$@"; do
  name=$(basename "$module" .so)
  cg_start "$name" "$module" --aof-use-rdb-preamble no --enable-debug-command yes
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
  cg_stop
  # out.PID.1 and .2 are the server's two dumps; the child's file is the other out.* (the
  # server's own final dump is out.PID).
  server='' child=''
  for f in "$CG_DIR"/out.*.1; do server=${f%.1}; done
  for f in "$CG_DIR"/out.*; do
    case $f in "$server" | "$server".*) ;; *) child=$f ;; esac
  done
  printf '%-24s SAVE %14s   DEBUG RELOAD %14s   BGREWRITEAOF (child) %12s\n' "$name" \
    "$(cg_total "$server.1")" "$(cg_total "$server.2")" "$(cg_total "$child")"
done
