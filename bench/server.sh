#!/usr/bin/env bash
# Server benchmark: starts redis-server with the release module on a free port in a
# temp dir, drives it with redis-benchmark (Debian's redis-tools), and prints ops/s and items/s
# next to the same server's GET/SET throughput at the same pipeline depth (the reference for the
# server's own per-command cost), as ratios measured in the same run; batch commands next to the
# same items sent one command each, and next to SMISMEMBER of as many arguments (the server's
# own ceiling for such a command). bench/compare.sh gives before/after tables. Then SAVE / DEBUG RELOAD / BGREWRITEAOF times and peak RSS
# for a large filter, next to a string of the same size.
#
# Usage: bench/server.sh            (defaults: 200 000 requests per run, 1e8-item large filter,
#                                    1 GiB persistence filter)
# Env:   REQUESTS=n  LARGE_ITEMS=n  PERSIST_BYTES=n (0 skips the persistence part)
#        RUNS=n (repeat each measurement; min/median/max)
#        BF_MODULE=path (benchmark that build; otherwise this tree is built first)
set -euo pipefail
cd "$(dirname "$0")/.."

REQUESTS=${REQUESTS:-200000}
LARGE_ITEMS=${LARGE_ITEMS:-100000000}
PERSIST_BYTES=${PERSIST_BYTES:-1073741824}
RUNS=${RUNS:-3}
if [ -n "${BF_MODULE:-}" ]; then
  MODULE=$BF_MODULE
else
  cargo build --release --quiet # a no-op when nothing changed; never benchmark a stale build
  MODULE=$PWD/target/release/libredis_bf.so
fi

# shellcheck source=bench/common.sh
. bench/common.sh
start_server redis-server "$MODULE" --enable-debug-command yes --aof-use-rdb-preamble no

# ops/s of one redis-benchmark command line (median of RUNS; min and max kept for the report).
rps() {
  local all=()
  for _ in $(seq "$RUNS"); do
    all+=("$(redis-benchmark -p "$PORT" -q --csv "$@" | tail -1 | cut -d, -f2 | tr -d '"')")
  done
  printf '%s\n' "${all[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%.0f %.0f %.0f\n", v[1], v[int((NR+1)/2)], v[NR]}'
}
rand_args() { local n=$1 s=""; for _ in $(seq "$n"); do s="$s __rand_int__"; done; echo "$s"; }

report() { # name items_per_call ref_median min median max
  awk -v n="$1" -v k="$2" -v ref="$3" -v lo="$4" -v med="$5" -v hi="$6" 'BEGIN {
    printf "%-50s %10.0f %10.0f %10.0f ops/s  %12.0f items/s", n, lo, med, hi, med*k
    if (ref > 0) printf "  %5.1f%% of ref", 100*med/ref
    printf "\n" }'
}

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $(redis-server --version | cut -d' ' -f3)"
echo "requests per run: $REQUESTS, runs: $RUNS (min / median / max)"
echo

cli BF.RESERVE small 0.01 1000000 >/dev/null
for P in 1 32; do
  read -r slo smed shi < <(rps -n "$REQUESTS" -P "$P" -r 1000000 -t set)
  read -r glo gmed ghi < <(rps -n "$REQUESTS" -P "$P" -r 1000000 -t get)
  report "SET (reference) P=$P" 1 "$smed" "$slo" "$smed" "$shi"
  report "GET (reference) P=$P" 1 "$gmed" "$glo" "$gmed" "$ghi"
  read -r lo med hi < <(rps -n "$REQUESTS" -P "$P" -r 1000000 BF.ADD small __rand_int__)
  report "BF.ADD small filter P=$P (vs SET)" 1 "$smed" "$lo" "$med" "$hi"
  read -r lo med hi < <(rps -n "$REQUESTS" -P "$P" -r 1000000 BF.EXISTS small __rand_int__)
  report "BF.EXISTS small filter P=$P (vs GET)" 1 "$gmed" "$lo" "$med" "$hi"
done
echo

# A large filter: reserved for LARGE_ITEMS, then its bit array loaded with pseudo-random bytes
# of half density (what a filter filled to capacity looks like) through BF.LOADCHUNK.
python3 - "$PORT" "$LARGE_ITEMS" <<'PY'
import random, socket, sys
port, items = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
def cmd(*args, lines=1):
    out = b"*%d\r\n" % len(args)
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += b"$%d\r\n%s\r\n" % (len(a), a)
    s.sendall(out)
    buf = b""
    while buf.count(b"\r\n") < lines:
        buf += s.recv(1 << 20)
    return buf
cmd("BF.RESERVE", "large", "0.01", items)
it, rnd = 1, random.Random(7)
# chunks of 16 MiB, as SCANDUMP would give them
total = int(cmd("BF.INFO", "large", "SIZE", lines=2).split(b"\r\n")[1][1:]) - 96
while total > 0:
    n = min(total, 16 << 20)
    chunk = rnd.randbytes(n)  # each bit set with probability 1/2
    it += n
    r = cmd("BF.LOADCHUNK", "large", it, chunk)
    assert r.startswith(b"+OK"), r
    total -= n
PY
# (Its item count stays 0: LOADCHUNK writes bits only, so BF.MADD keeps adding to this layer.)
echo "large filter, half of its bits set by LOADCHUNK: $(cli BF.DEBUG large | tail -1)"
cli SADD set1 member >/dev/null
for K in 100 1000; do
  ARGS=$(rand_args "$K")
  N=$((REQUESTS / K * 10)); [ "$N" -ge 200 ] || N=200
  # The server's own ceiling for a command of K arguments: SMISMEMBER on a one-member set
  # (parsing the arguments, one cheap lookup each, K replies).
  # shellcheck disable=SC2086
  read -r lo med hi < <(rps -n "$N" -P 1 -r 1000000000 SMISMEMBER set1 $ARGS)
  report "SMISMEMBER x$K, one-member set (ceiling)" "$K" 0 "$lo" "$med" "$hi"
  smis_med=$med
  # The same items one command each, K commands per round trip: the item-by-item reference.
  read -r lo med hi < <(rps -n $((N * K)) -P "$K" -r 1000000000 BF.EXISTS large __rand_int__)
  report "BF.EXISTS large P=$K (item by item)" 1 0 "$lo" "$med" "$hi"
  exists_med=$med
  read -r lo med hi < <(rps -n $((N * K)) -P "$K" -r 1000000000 BF.ADD large __rand_int__)
  report "BF.ADD large P=$K (item by item)" 1 0 "$lo" "$med" "$hi"
  add_med=$med
  # shellcheck disable=SC2086
  read -r lo med hi < <(rps -n "$N" -P 1 -r 1000000000 BF.MEXISTS large $ARGS)
  report "BF.MEXISTS large x$K P=1 (vs BF.EXISTS P=$K)" "$K" "$(( exists_med / K ))" "$lo" "$med" "$hi"
  report "BF.MEXISTS large x$K P=1 (vs SMISMEMBER x$K)" "$K" "$smis_med" "$lo" "$med" "$hi"
  # shellcheck disable=SC2086
  read -r lo med hi < <(rps -n "$N" -P 1 -r 1000000000 BF.MADD large $ARGS)
  report "BF.MADD large x$K P=1 (vs BF.ADD P=$K)" "$K" "$(( add_med / K ))" "$lo" "$med" "$hi"
  # shellcheck disable=SC2086
  read -r lo med hi < <(rps -n "$N" -P 1 -r 1000000000 BF.MEXISTS small $ARGS)
  report "BF.MEXISTS small x$K P=1 (vs SMISMEMBER x$K)" "$K" "$smis_med" "$lo" "$med" "$hi"
done
cli DEL large small set1 >/dev/null
echo
[ "$PERSIST_BYTES" -gt 0 ] || exit 0

# Persistence of one filter of about PERSIST_BYTES bytes of bits, against a string of the same
# size (the reference: what Redis needs to save and load that many bytes).
cli CONFIG SET rdbcompression no >/dev/null
CAP=$(python3 -c "print(int($PERSIST_BYTES * 8 / 9.585058377367446 / 1.0))")
cli BF.RESERVE big 0.02 "$CAP" >/dev/null
rss() { awk '/VmHWM/ {print $2 * 1024}' "/proc/$(cat "$DIR/redis.pid")/status"; }
now() { date +%s.%N; }
elapsed() { python3 -c "import sys; print(round(float(sys.argv[2]) - float(sys.argv[1]), 3))" "$1" "$(now)"; }
timeit() { local t0; t0=$(now); "$@" >/dev/null; elapsed "$t0"; }
echo "persistence filter: $(cli BF.INFO big SIZE | tail -1) bytes"
echo "SAVE:         $(timeit cli SAVE) s"
echo "DEBUG RELOAD: $(timeit cli DEBUG RELOAD) s  (peak RSS so far $(( $(rss) / 1048576 )) MiB)"
cli CONFIG SET appendonly yes >/dev/null
while [ "$(cli INFO persistence | tr -d '\r' | awk -F: '/aof_rewrite_in_progress|aof_rewrite_scheduled/ {s+=$2} END {print s}')" != 0 ]; do sleep 0.2; done
t0=$(now); cli BGREWRITEAOF >/dev/null; sleep 0.2
while [ "$(cli INFO persistence | tr -d '\r' | awk -F: '/aof_rewrite_in_progress|aof_rewrite_scheduled/ {s+=$2} END {print s}')" != 0 ]; do sleep 0.1; done
echo "BGREWRITEAOF: $(elapsed "$t0") s"
cli CONFIG SET appendonly no >/dev/null
cli DEL big >/dev/null
cli CONFIG SET proto-max-bulk-len 4gb >/dev/null
cli CONFIG SET client-query-buffer-limit 4gb >/dev/null
python3 - "$PORT" "$PERSIST_BYTES" <<'PY'
import socket, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
v = b"\x55" * n
s.sendall(b"*3\r\n$3\r\nSET\r\n$3\r\nstr\r\n$%d\r\n" % n + v + b"\r\n")
assert s.recv(100).startswith(b"+OK")
PY
echo "reference string of the same size: SAVE $(timeit cli SAVE) s, DEBUG RELOAD $(timeit cli DEBUG RELOAD) s"
echo "peak RSS of the server over the run: $(( $(rss) / 1048576 )) MiB"
