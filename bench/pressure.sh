#!/usr/bin/env bash
# Small filters and transient memory (per-filter memory, peaks of big commands). For each SERVER:MODULE pair
# given (default: this tree's release build on redis-server), starts the server on a free port
# in a temp dir and prints:
#   - BF.ADD / BF.RESERVE on new keys (default parameters) against BF.ADD of new items on one
#     existing key, REQUESTS commands each sent with `redis-cli --pipe` (distinct keys: no
#     collisions), the ratio measured in the same run, rounds interleaved, medians;
#   - memory per filter: used_memory / filters after 400 000 BF.ADD on new keys;
#   - SAVE, DEBUG RELOAD and FLUSHALL (sync) of 500 000 small filters, in ms;
#   - peak RSS (VmHWM, reset before each command) of BF.MADD of 1 000 000 items on an existing
#     filter, peak used_memory (INFO memory, sampled by the server) of a BF.INSERT that grows ten
#     layers, and peak RSS of BF.ADD of one 300 MiB item on a missing key;
#   - cuckoo filters (parts cffilters, cfbig; not in the default PARTS): used_memory per
#     filter after 400 000 CF.ADD on new keys and MEMORY USAGE of a few CF.RESERVE sizes; SAVE,
#     DEBUG RELOAD and BGREWRITEAOF of one cuckoo filter of CF_BYTES (1 GiB) of table, three
#     slots in four filled (bench/filters.py --cf-key).
#
# Usage: bench/pressure.sh [SERVER:MODULE ...]
# Env:   PARTS=transient,rates,filters,persist (the default: those, in this order; also
#        cffilters, cfbig)  CF_BYTES=n (1073741824, a power of two)
#        REQUESTS=n (commands per rate run, default 200000)  ROUNDS=n (default 3)
#        LD_LIBRARY_PATH as the server binary needs (redis-stack's needs libssl 1.1)
set -euo pipefail
cd "$(dirname "$0")/.."
REQUESTS=${REQUESTS:-200000}
ROUNDS=${ROUNDS:-3}
PARTS=${PARTS:-transient,rates,filters,persist}
if [ $# -eq 0 ]; then
  cargo build --release --quiet
  set -- "redis-server:$PWD/target/release/libredis_bf.so"
fi

# Command files (RESP), distinct keys in every round so "new" keys are always new.
CMDS=$(mktemp -d /tmp/redis-bf-pressure-cmds.XXXXXX)
trap 'rm -rf "$CMDS"' EXIT
python3 - "$CMDS" "$REQUESTS" "$ROUNDS" <<'EOF'
import sys
out, n, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def cmd(*a):
    return b"*%d\r\n" % len(a) + b"".join(b"$%d\r\n%s\r\n" % (len(x), x) for x in a)
for r in range(1, rounds + 1):
    with open(f"{out}/add_old.{r}", "wb") as f:
        f.write(b"".join(cmd(b"BF.ADD", b"existing", b"i:%d:%d" % (r, i)) for i in range(n)))
    with open(f"{out}/add_new.{r}", "wb") as f:
        f.write(b"".join(cmd(b"BF.ADD", b"u:%d:%d" % (r, i), b"item") for i in range(n)))
    with open(f"{out}/res_new.{r}", "wb") as f:
        f.write(b"".join(cmd(b"BF.RESERVE", b"r:%d:%d" % (r, i), b"0.01", b"100") for i in range(n)))
for name, count in (("f", 400_000), ("p", 500_000)):
    with open(f"{out}/{name}", "wb") as f:
        f.write(b"".join(cmd(b"BF.ADD", b"%s:%d" % (name.encode(), i), b"x") for i in range(count)))
with open(f"{out}/cf", "wb") as f:
    f.write(b"".join(cmd(b"CF.ADD", b"c:%d" % i, b"x") for i in range(400_000)))
EOF

want() { case ",$PARTS," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }

median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

run_one() {
  local server=${1%%:*} module=${1#*:}
  local port dir
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  dir=$(mktemp -d /tmp/redis-bf-pressure.XXXXXX)
  "$server" --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --appendonly no \
    --enable-debug-command yes --aof-use-rdb-preamble no --loadmodule "$module" --daemonize yes \
    --logfile "$dir/server.log" --pidfile "$dir/redis.pid"
  for _ in $(seq 50); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
  local pid
  pid=$(cat "$dir/redis.pid")
  cli() { redis-cli -p "$port" "$@"; }
  mem() { cli info memory | tr -d '\r' | awk -F: -v k="$1" '$1==k {print $2}'; }
  hwm() { awk '/VmHWM/ {print $2*1024}' "/proc/$pid/status"; }
  rss() { awk '/VmRSS/ {print $2*1024}' "/proc/$pid/status"; }
  ms() { python3 -c 'import time; print(int(time.time()*1000))'; }
  # ops/s of sending a file of commands with redis-cli --pipe (C, pipelined, waits for all
  # replies).
  pipe_rate() {
    local t0 t1
    t0=$(ms); cli --pipe <"$1" >/dev/null; t1=$(ms)
    echo $((REQUESTS * 1000 / (t1 - t0)))
  }

  echo "== $server + $(basename "$module")"
  # Transient memory, first, on a fresh server (used_memory_peak is never reset).
  if want transient; then
  cli bf.reserve k 0.01 2000000 >/dev/null
  cli memory purge >/dev/null
  python3 - "$port" "$pid" <<'EOF'
import socket, sys, time
port, pid = int(sys.argv[1]), sys.argv[2]
def status(k):
    for l in open(f"/proc/{pid}/status"):
        if l.startswith(k + ":"):
            return int(l.split()[1]) * 1024
def send(args, read=True):
    s = socket.create_connection(("127.0.0.1", port))
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out += [b"$%d\r\n" % len(a), a, b"\r\n"]
    s.sendall(b"".join(out))
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        c = s.recv(1 << 20)
        if not c: break
        data += c
    s.close()
    return data
def info(field):
    for l in send(["INFO", "memory"]).decode().split("\r\n"):
        if l.startswith(field + ":"):
            return int(l.split(":")[1])
def reset():
    open(f"/proc/{pid}/clear_refs", "w").write("5")
# BF.INSERT growing ten layers: capacity 1000, expansion 2, 1 023 000 items; peak used_memory
# as the server records it after each command (never reset: measured first).
time.sleep(0.3)
base = info("used_memory")
items = [b"ins:%d" % i for i in range(1_023_000)]
send(["BF.INSERT", "ins", "CAPACITY", 1000, "ITEMS"] + items)
time.sleep(0.3)
layers = send(["BF.INFO", "ins", "FILTERS"])
print("BF.INSERT growing to %s layers: peak used_memory +%.0f MiB (filter %.0f MiB)" % (
    layers.split(b"\r\n")[1].decode().lstrip(":"), (info("used_memory_peak") - base) / 2**20,
    int(send(["BF.INFO", "ins", "SIZE"]).split(b"\r\n")[1][1:]) / 2**20))
del items
send(["DEL", "ins"]); send(["MEMORY", "PURGE"])
items = [b"item:%d" % i for i in range(1_000_000)]
send(["MEMORY", "PURGE"]); before = status("VmRSS"); reset()
send(["BF.MADD", "k"] + items)
print("BF.MADD 1 000 000 items: peak RSS +%.0f MiB" % ((status("VmHWM") - before) / 2**20))
del items
send(["DEL", "ins", "k"]); send(["MEMORY", "PURGE"])
item = b"x" * (300 << 20)
before = status("VmRSS"); reset()
send(["BF.ADD", "big", item])
print("BF.ADD one 300 MiB item, missing key: peak RSS +%.0f MiB" % ((status("VmHWM") - before) / 2**20))
EOF
  fi

  if want rates; then
  local add_new=() res_new=() add_old=() round
  for round in $(seq "$ROUNDS"); do
    cli flushall >/dev/null
    cli bf.reserve existing 0.01 100000000 >/dev/null
    add_old+=("$(pipe_rate "$CMDS/add_old.$round")")
    add_new+=("$(pipe_rate "$CMDS/add_new.$round")")
    res_new+=("$(pipe_rate "$CMDS/res_new.$round")")
  done
  local a o r
  a=$(printf '%s\n' "${add_new[@]}" | median)
  r=$(printf '%s\n' "${res_new[@]}" | median)
  o=$(printf '%s\n' "${add_old[@]}" | median)
  awk -v a="$a" -v r="$r" -v o="$o" 'BEGIN {
    printf "BF.ADD existing key       %9.0f ops/s\n", o
    printf "BF.ADD new key            %9.0f ops/s  %.2fx of BF.ADD existing\n", a, a/o
    printf "BF.RESERVE new key        %9.0f ops/s  %.2fx of BF.ADD existing\n", r, r/o }'
  fi

  # Memory per filter.
  if want filters; then
  cli flushall >/dev/null
  local base used n
  base=$(mem used_memory)
  cli --pipe <"$CMDS/f" >/dev/null
  used=$(mem used_memory)
  n=$(cli dbsize)
  # The keyspace's own hash table (buckets and entries) doubles at powers of two and is
  # rehashed step by step, so its share moves by ±30 bytes a key from run to run: also shown
  # without it (MEMORY STATS db.0 overhead.hashtable.main), the same for every module.
  local ht
  ht=$(cli memory stats | awk '/^overhead.hashtable.main$/ {getline; print; exit}')
  awk -v b="$base" -v u="$used" -v n="$n" -v h="${ht:-0}" 'BEGIN {
    printf "%d filters: used_memory +%.1f MB, %.1f bytes a filter (%.1f without the keyspace hash table)\n",
      n, (u-b)/1e6, (u-b)/n, (u-b-h)/n }'
  fi

  # Persistence of 500 000 small filters.
  if want persist; then
  cli flushall >/dev/null
  cli --pipe <"$CMDS/p" >/dev/null
  local t0 t1 t2 t3 filters
  filters=$(cli dbsize)
  t0=$(ms); cli save >/dev/null; t1=$(ms)
  cli debug reload >/dev/null; t2=$(ms)
  cli flushall >/dev/null; t3=$(ms)
  echo "$filters filters: SAVE $((t1 - t0)) ms, DEBUG RELOAD $((t2 - t1)) ms, FLUSHALL $((t3 - t2)) ms"
  fi

  # Cuckoo filters: memory per filter, as for the Bloom filters above.
  if want cffilters; then
  cli flushall >/dev/null
  local base used n ht
  base=$(mem used_memory)
  cli --pipe <"$CMDS/cf" >/dev/null
  used=$(mem used_memory)
  n=$(cli dbsize)
  ht=$(cli memory stats | awk '/^overhead.hashtable.main$/ {getline; print; exit}')
  awk -v b="$base" -v u="$used" -v n="$n" -v h="${ht:-0}" 'BEGIN {
    printf "%d cuckoo filters (CF.ADD): used_memory +%.1f MB, %.1f bytes a filter (%.1f without the keyspace hash table)\n",
      n, (u-b)/1e6, (u-b)/n, (u-b-h)/n }'
  echo "MEMORY USAGE of CF.ADD c:1 x: $(cli memory usage c:1)"
  local cap
  for cap in 100 1000 1000000; do
    cli cf.reserve "r$cap" "$cap" >/dev/null
    echo "CF.RESERVE r$cap $cap: MEMORY USAGE $(cli memory usage "r$cap"), CF.INFO Size $(cli cf.info "r$cap" | sed -n 2p)"
  done
  fi

  # One big cuckoo filter: SAVE, DEBUG RELOAD, BGREWRITEAOF.
  if want cfbig; then
  cli flushall >/dev/null
  python3 bench/filters.py --cf-key cfbig "${CF_BYTES:-1073741824}" "$port"
  local t0 t1 t2 t3 t4 c0 c1 c2 c3 c4
  busy() { cli INFO persistence | tr -d '\r' | awk -F: '/aof_rewrite_in_progress|aof_rewrite_scheduled/ {s+=$2} END {print s}'; }
  # CPU seconds of the main thread and of the server's finished children (INFO cpu), as
  # "main children": SAVE and DEBUG RELOAD run on the main thread, BGREWRITEAOF in a child.
  cpu() { cli INFO cpu | tr -d '\r' | awk -F: '/^used_cpu_(sys|user)_main_thread:/ {m+=$2}
    /^used_cpu_(sys|user)_children:/ {c+=$2} END {printf "%.3f %.3f\n", m, c}'; }
  c0=$(cpu); t0=$(ms); cli save >/dev/null; t1=$(ms); c1=$(cpu)
  cli debug reload >/dev/null; t2=$(ms); c2=$(cpu)
  while [ "$(busy)" != 0 ]; do sleep 0.1; done
  c3=$(cpu); t3=$(ms); cli bgrewriteaof >/dev/null; sleep 0.05
  while [ "$(busy)" != 0 ]; do sleep 0.05; done
  t4=$(ms); sleep 0.2; c4=$(cpu)
  echo "cuckoo filter of $(cli cf.info cfbig | sed -n 2p) bytes: SAVE $((t1 - t0)) ms, DEBUG RELOAD $((t2 - t1)) ms, BGREWRITEAOF $((t4 - t3)) ms (RSS $(($(rss) >> 20)) MiB)"
  awk -v a="$c0" -v b="$c1" -v c="$c2" -v d="$c3" -v e="$c4" 'BEGIN {
    split(a, A, " "); split(b, B, " "); split(c, C, " "); split(d, D, " "); split(e, E, " ")
    printf "  CPU: SAVE %.0f ms (main thread), DEBUG RELOAD %.0f ms (main thread), BGREWRITEAOF %.0f ms (child)\n",
      (B[1] - A[1]) * 1000, (C[1] - B[1]) * 1000, (E[2] - D[2]) * 1000 }'
  fi

  redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  rm -rf "$dir"
}

for pair in "$@"; do run_one "$pair"; done
