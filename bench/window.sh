#!/usr/bin/env bash
# A window filter's generation advance: how long the command that opens a new generation (and,
# from the sixth on, drops the oldest) takes, next to the same command on a plain filter of the
# same size in the same server. A window filter of WINDOW_ITEMS items over 4 s (five live
# generations, a new one every second), then one `BF.MADD w a$i b$i c$i` a second for CALLS
# calls, each opening a generation; the plain filter gets the same calls. Durations from
# SLOWLOG (slowlog-log-slower-than 0), in µs; then used_memory and RSS.
#
# Usage: bench/window.sh
# Env:   WINDOW_ITEMS=n (640000000: 1.25 GiB of bits, 266 MB a generation)  CALLS=n (9)
#        REDIS_SERVER=path (redis-server)  BF_MODULE=path (otherwise this tree is built first)
set -euo pipefail
cd "$(dirname "$0")/.."
WINDOW_ITEMS=${WINDOW_ITEMS:-640000000}
CALLS=${CALLS:-9}
SERVER=${REDIS_SERVER:-redis-server}
if [ -n "${BF_MODULE:-}" ]; then
  MODULE=$(realpath "$BF_MODULE")
else
  cargo build --release --quiet
  MODULE=$PWD/target/release/libredis_bf.so
fi
# shellcheck source=bench/common.sh
. bench/common.sh
start_server "$SERVER" "$MODULE"
echo "$("$SERVER" --version | cut -d' ' -f3); load $(cut -d' ' -f1-3 /proc/loadavg)"
cli config set slowlog-log-slower-than 0 >/dev/null
cli config set slowlog-max-len 1000 >/dev/null
cli bf.reserve w 0.01 "$WINDOW_ITEMS" WINDOW 4000 >/dev/null
cli bf.reserve p 0.01 "$WINDOW_ITEMS" >/dev/null
cli slowlog reset >/dev/null
for i in $(seq "$CALLS"); do
  cli bf.madd w "a$i" "b$i" "c$i" >/dev/null
  cli bf.madd p "a$i" "b$i" "c$i" >/dev/null
  sleep 1.05
done
# SLOWLOG GET lists the newest first: id, time, µs, then the arguments.
cli slowlog get "$((CALLS * 4))" | awk '
  { line[NR] = $0 }
  END {
    for (i = 1; i <= NR; i++) if (line[i] == "bf.madd" || line[i] == "BF.MADD") {
      key = line[i + 1]; us = line[i - 1]
      if (key == "w") w = us " " w; else if (key == "p") p = us " " p
    }
    print "window BF.MADD (µs), call 1..n: " w
    print "plain  BF.MADD (µs), call 1..n: " p
  }'
echo "used_memory $(cli info memory | tr -d '\r' | awk -F: '$1 == "used_memory_human" {print $2}'), RSS $(awk '/VmRSS/ {printf "%.0f MiB", $2 / 1024}' "/proc/$(cat "$DIR/redis.pid")/status")"
