#!/usr/bin/env bash
# Before/after table: the module built from another commit ("before") and this
# tree's ("after") run side by side, one redis-server each (the same binary), with the same
# filters (bench/filters.py). Every row is measured ROUNDS times, alternating which server goes
# first, and the table shows medians of redis-benchmark's ops/s turned into items/s and the
# ratio after/before measured in this one run. SMISMEMBER on a one-member set is the server's
# own ceiling for a command of that many arguments, GET / SET of one short string (and SET of new
# keys) for a single-item command; the last lines give the BF commands as fractions of them, per
# side.
#
# Usage: bench/compare.sh [REF]   REF defaults to 58457b4 (the build before the single-item and batch work); it is
#                                 built in a temporary worktree (target dir target/compare).
# Env:   ROUNDS=n (5)  SCALE=x (1: requests per run ×x)  LARGE_ITEMS=n (1e8)
#        PROFILE=dir   also `perf record -g` each server during one extra run of every row and
#                      write dir/<row>.<side>.txt (perf report, top symbols by self time)
#        BEFORE_SO=path AFTER_SO=path  use these builds instead of building (any module with the
#                      BF.* commands: bench/vs_redisbloom.sh passes RedisBloom as "before")
#        BEFORE_NAME=text AFTER_NAME=text  what the header calls the two sides
#        SERVER=path   the redis-server binary for both sides (default: redis-server on PATH); the
#                      header names its version and each side's `bf` module version
#        ONLY=id,id…   run only these rows (ids: the first field of ROWS below)
#        CF=1          the cuckoo-filter rows (CF_ROWS below, filters from `filters.py --cf`)
#                      instead of the Bloom ones; CF_FILL=n (LARGE_ITEMS) items of the `cffill`
#                      row, which fills a freshly reserved filter of that capacity each run
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
REF=${1:-58457b4}
ROUNDS=${ROUNDS:-5}
SCALE=${SCALE:-1}
LARGE_ITEMS=${LARGE_ITEMS:-100000000}
SERVER=${SERVER:-redis-server}
WORK=$(mktemp -d /tmp/redis-bf-compare.XXXXXX)
declare -A PORT DIR
SIDES=(before after)

cleanup() {
  for side in "${SIDES[@]}"; do
    [ -n "${PORT[$side]:-}" ] || continue
    local pid
    pid=$(cat "${DIR[$side]}/redis.pid" 2>/dev/null || true)
    redis-cli -p "${PORT[$side]}" shutdown nosave >/dev/null 2>&1 || true
    for _ in $(seq 100); do [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  git -C "$ROOT" worktree remove --force "$WORK/src" >/dev/null 2>&1 || true
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

if [ -n "${BEFORE_SO:-}" ]; then
  cp "$BEFORE_SO" "$WORK/before.so"
else
  git worktree add --quiet --detach "$WORK/src" "$REF"
  (cd "$WORK/src" && CARGO_TARGET_DIR="$ROOT/target/compare" cargo build --release --quiet)
  cp "$ROOT/target/compare/release/libredis_bf.so" "$WORK/before.so"
fi
if [ -n "${AFTER_SO:-}" ]; then
  cp "$AFTER_SO" "$WORK/after.so"
else
  cargo build --release --quiet # never benchmark a stale build
  cp target/release/libredis_bf.so "$WORK/after.so"
fi

for side in "${SIDES[@]}"; do
  PORT[$side]=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  DIR[$side]=$WORK/$side
  mkdir -p "${DIR[$side]}"
  "$SERVER" --port "${PORT[$side]}" --bind 127.0.0.1 --dir "${DIR[$side]}" --save "" \
    --appendonly no --loadmodule "$WORK/$side.so" --daemonize yes \
    --logfile "${DIR[$side]}/server.log" --pidfile "${DIR[$side]}/redis.pid"
done
for side in "${SIDES[@]}"; do
  for _ in $(seq 50); do redis-cli -p "${PORT[$side]}" ping >/dev/null 2>&1 && break; sleep 0.1; done
done
if [ "${CF:-0}" = 1 ]; then
  python3 bench/filters.py --cf "$LARGE_ITEMS" "${PORT[before]}" "${PORT[after]}"
else
  python3 bench/filters.py "$LARGE_ITEMS" "${PORT[before]}" "${PORT[after]}"
fi

args() { local n=$1 s=""; for _ in $(seq "$n"); do s="$s __rand_int__"; done; echo "$s"; }
A100=$(args 100)
A1000=$(args 1000)
# id|label|items per command|requests per run|redis-benchmark arguments[|setup]
# setup: redis-cli commands, `;`-separated, run on the side before each of its runs (not timed)
ROWS=(
  "add10m|BF.ADD, pipeline 32, 10M-capacity filter|1|1000000|-P 32 BF.ADD f10m __rand_int__"
  "exists10m|BF.EXISTS, pipeline 32, 10M-capacity filter|1|1000000|-P 32 BF.EXISTS f10m __rand_int__"
  "missing|BF.EXISTS on a missing key, pipeline 32|1|1000000|-P 32 BF.EXISTS nokey __rand_int__"
  "set|SET of one existing key, pipeline 32 (reference)|1|1000000|-P 32 SET str1 __rand_int__"
  "get|GET of one existing key, pipeline 32 (reference)|1|1000000|-P 32 GET str1"
  "madd|BF.MADD x1000 into the 1e8 layer|1000|3000|BF.MADD large $A1000"
  "insert|BF.INSERT x1000 into the 1e8 layer|1000|3000|BF.INSERT large ITEMS $A1000"
  "mexists|BF.MEXISTS x1000 on the full 1e8 layer|1000|3000|BF.MEXISTS large $A1000"
  "grown|BF.MADD x1000, 1e8 layer full, into layer 2|1000|3000|BF.MADD grown $A1000"
  "mexists_grown|BF.MEXISTS x1000 on the 2-layer filter|1000|3000|BF.MEXISTS grown $A1000"
  "mexists_small|BF.MEXISTS x1000 on a 1e6 filter (1.3 MiB)|1000|6000|BF.MEXISTS small $A1000"
  "mexists_small100|BF.MEXISTS x100 on a 1e6 filter|100|40000|BF.MEXISTS small $A100"
  "madd_small|BF.MADD x1000 of new items, 1e6 filter|1000|600|BF.MADD smalladd $A1000"
  "insert_small|BF.INSERT x1000 of new items, 1e6 filter|1000|600|BF.INSERT smallins ITEMS $A1000"
  "smis1000|SMISMEMBER x1000, one-member set (ceiling)|1000|10000|SMISMEMBER set1 $A1000"
  "smis100|SMISMEMBER x100, one-member set (ceiling)|100|60000|SMISMEMBER set1 $A100"
  "newkey|BF.ADD on new keys, pipeline 32|1|200000|-P 32 BF.ADD nk:__rand_int__ __rand_int__"
  "setnew|SET of new keys, pipeline 32 (reference)|1|200000|-P 32 SET ns:__rand_int__ x"
)
CF_FILL=${CF_FILL:-$LARGE_ITEMS}
CF_ROWS=(
  "cfadd|CF.ADD, pipeline 32, 1e6 filter (1 MiB, grows)|1|1000000|-P 32 CF.ADD cfadd __rand_int__"
  "cfexists|CF.EXISTS, pipeline 32, 1e6 filter, 3/4 full|1|1000000|-P 32 CF.EXISTS cfsmall __rand_int__"
  "cfcount|CF.COUNT, pipeline 32, the same filter|1|1000000|-P 32 CF.COUNT cfsmall __rand_int__"
  "cfdel|CF.DEL of random items, pipeline 32, 1e6 filter|1|1000000|-P 32 CF.DEL cfdel __rand_int__"
  "get|GET of one existing key, pipeline 32 (reference)|1|1000000|-P 32 GET str1"
  "set|SET of one existing key, pipeline 32 (reference)|1|1000000|-P 32 SET str1 __rand_int__"
  "cfmexists|CF.MEXISTS x1000, 1e8 filter (3/4 full)|1000|3000|CF.MEXISTS cflarge $A1000"
  "cfmexists_small|CF.MEXISTS x1000, 1e6 filter|1000|6000|CF.MEXISTS cfsmall $A1000"
  "cfinsert|CF.INSERT x1000 of new items, empty 1e8 filter|1000|3000|CF.INSERT cfins ITEMS $A1000"
  "smis1000|SMISMEMBER x1000, one-member set (ceiling)|1000|10000|SMISMEMBER set1 $A1000"
  "cffill|CF.INSERT x1000 filling a new $CF_FILL filter|1000|$((CF_FILL / 1000))|CF.INSERT cffill ITEMS $A1000|DEL cffill;CF.RESERVE cffill $CF_FILL"
)
[ "${CF:-0}" = 1 ] && ROWS=("${CF_ROWS[@]}")

cpu_ns() { cut -d' ' -f1 "/proc/$(cat "${DIR[$1]}/redis.pid")/schedstat"; }
run() { # side requests args… → "ops/s commands-per-CPU-second" (CPU time of the server's main thread)
  local side=$1 n=$2 t0 ops
  shift 2
  t0=$(cpu_ns "$side")
  # shellcheck disable=SC2068
  ops=$(redis-benchmark -p "${PORT[$side]}" -q --csv -r 1000000000 -n "$n" $@ | tail -1 | cut -d, -f2 | tr -d '"')
  echo "$ops $(awk -v n="$n" -v a="$t0" -v b="$(cpu_ns "$side")" 'BEGIN {printf "%.0f", n / ((b - a) / 1e9)}')"
}
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

bf_ver() { # side → the version MODULE LIST gives the module named bf
  redis-cli -p "${PORT[$1]}" module list | awk 'k == "name" {m = $0} k == "ver" && m == "bf" {print; exit} {k = $0}'
}
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); $("$SERVER" --version | cut -d' ' -f3); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "before = ${BEFORE_NAME:-$REF} (bf ver $(bf_ver before)), after = ${AFTER_NAME:-$(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core src || echo '+changes')} (bf ver $(bf_ver after)); $ROUNDS rounds, alternating; medians"
echo "wall: items/s as redis-benchmark sees them; cpu: items per second of the server's CPU time"
printf '%-46s %12s %12s %7s %-11s| %12s %12s %7s %s\n' "items/s (median of $ROUNDS)" "wall before" after ratio "(by round)" \
  "cpu before" after ratio "(by round)"
declare -A MED
if [ -n "${ONLY:-}" ]; then
  kept=()
  for row in "${ROWS[@]}"; do
    case ",$ONLY," in *",${row%%|*},"*) kept+=("$row") ;; esac
  done
  for want in ${ONLY//,/ }; do
    printf '%s\n' "${ROWS[@]%%|*}" | grep -qx "$want" || echo "compare.sh: no row '$want' (ONLY)" >&2
  done
  if [ ${#kept[@]} -eq 0 ]; then
    echo "compare.sh: ONLY=$ONLY matches no row; ids: $(printf '%s ' "${ROWS[@]%%|*}")" >&2
    exit 2
  fi
  ROWS=("${kept[@]}")
fi
setup() { # side "cmd args;cmd args…" → runs each on that side's server
  local side=$1 c
  IFS=';' read -ra cmds <<<"$2"
  # shellcheck disable=SC2086
  for c in "${cmds[@]}"; do redis-cli -p "${PORT[$side]}" $c >/dev/null; done
}
for row in "${ROWS[@]}"; do
  IFS='|' read -r id label k n cmd pre <<<"$row"
  n=$(awk -v n="$n" -v s="$SCALE" 'BEGIN {printf "%d", n * s}')
  : >"$WORK/$id.before"
  : >"$WORK/$id.after"
  : >"$WORK/$id.ratio"
  for r in $(seq "$ROUNDS"); do
    if [ $((r % 2)) = 1 ]; then order="before after"; else order="after before"; fi
    for side in $order; do
      [ -z "$pre" ] || setup "$side" "$pre"
      # shellcheck disable=SC2086
      run "$side" "$n" $cmd >"$WORK/$id.$side.last"
      cat "$WORK/$id.$side.last" >>"$WORK/$id.$side"
    done
    paste -d' ' "$WORK/$id.before.last" "$WORK/$id.after.last" | awk '{print $3 / $1, $4 / $2}' >>"$WORK/$id.ratio"
  done
  line="$(printf '%-46s' "$label")"
  for col in 1 2; do
    b=$(cut -d' ' -f"$col" "$WORK/$id.before" | median)
    a=$(cut -d' ' -f"$col" "$WORK/$id.after" | median)
    MED[$id.before.$col]=$(awk -v v="$b" -v k="$k" 'BEGIN {print v * k}')
    MED[$id.after.$col]=$(awk -v v="$a" -v k="$k" 'BEGIN {print v * k}')
    spread=$(cut -d' ' -f"$col" "$WORK/$id.ratio" | sort -g | awk 'NR==1 {lo=$1} {hi=$1} END {printf "%.2f..%.2f", lo, hi}')
    line="$line$(awk -v b="${MED[$id.before.$col]}" -v a="${MED[$id.after.$col]}" -v s="$spread" \
      'BEGIN {printf " %12.0f %12.0f %6.2fx %-11s", b, a, a / b, s}')"
    [ "$col" = 2 ] || line="$line|"
  done
  echo "$line"
done
echo "load at the end of the rows: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
[ -n "${ONLY:-}" ] || [ "${CF:-0}" = 1 ] || for side in "${SIDES[@]}"; do
  for col in 1 2; do
    awk -v s="$side $([ $col = 1 ] && echo wall || echo cpu)" -v l="${MED[mexists.$side.$col]}" \
      -v g="${MED[mexists_grown.$side.$col]}" -v m="${MED[mexists_small.$side.$col]}" \
      -v c="${MED[smis1000.$side.$col]}" -v m1="${MED[mexists_small100.$side.$col]}" \
      -v c1="${MED[smis100.$side.$col]}" 'BEGIN {
      printf "%-11s of SMISMEMBER: MEXISTS x1000 1e8 layer %.2f, 2 layers %.2f, small %.2f; x100 small %.2f\n",
        s, l / c, g / c, m / c, m1 / c1 }'
  done
done
[ -n "${ONLY:-}" ] || [ "${CF:-0}" = 1 ] || for side in "${SIDES[@]}"; do
  for col in 1 2; do
    awk -v s="$side $([ $col = 1 ] && echo wall || echo cpu)" -v a="${MED[add10m.$side.$col]}" \
      -v e="${MED[exists10m.$side.$col]}" -v st="${MED[set.$side.$col]}" -v g="${MED[get.$side.$col]}" \
      -v n="${MED[newkey.$side.$col]}" -v sn="${MED[setnew.$side.$col]}" 'BEGIN {
      printf "%-11s of SET/GET: BF.ADD P32 %.2f of SET, BF.EXISTS P32 %.2f of GET; BF.ADD on new keys %.2f of SET on new keys\n",
        s, a / st, e / g, n / sn }'
  done
done
[ -n "${ONLY:-}" ] || [ "${CF:-0}" != 1 ] || for side in "${SIDES[@]}"; do
  for col in 1 2; do
    awk -v s="$side $([ $col = 1 ] && echo wall || echo cpu)" -v a="${MED[cfadd.$side.$col]}" \
      -v e="${MED[cfexists.$side.$col]}" -v c="${MED[cfcount.$side.$col]}" -v d="${MED[cfdel.$side.$col]}" \
      -v g="${MED[get.$side.$col]}" -v m="${MED[cfmexists.$side.$col]}" -v ms="${MED[cfmexists_small.$side.$col]}" \
      -v sm="${MED[smis1000.$side.$col]}" 'BEGIN {
      printf "%-11s of GET: CF.ADD %.2f, CF.EXISTS %.2f, CF.COUNT %.2f, CF.DEL %.2f; of SMISMEMBER: CF.MEXISTS 1e8 %.2f, 1e6 %.2f\n",
        s, a / g, e / g, c / g, d / g, m / sm, ms / sm }'
  done
done
[ "${CF:-0}" != 1 ] || for side in "${SIDES[@]}"; do
  line="$side, server CPU per op (ns):"
  for row in "${ROWS[@]}"; do
    id=${row%%|*}
    [ -n "${MED[$id.$side.2]:-}" ] || continue
    line="$line $id $(awk -v v="${MED[$id.$side.2]}" 'BEGIN {printf "%.0f", 1e9 / v}')"
  done
  echo "$line"
done

if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  for row in "${ROWS[@]}"; do
    IFS='|' read -r id label k n cmd pre <<<"$row"
    n=$(awk -v n="$n" -v s="$SCALE" 'BEGIN {printf "%d", n * s}')
    for side in "${SIDES[@]}"; do
      [ -z "$pre" ] || setup "$side" "$pre"
      pid=$(cat "${DIR[$side]}/redis.pid")
      perf record -q -g -F 2000 -p "$pid" -o "$WORK/perf.data" 2>/dev/null &
      perf_pid=$!
      sleep 0.5
      # shellcheck disable=SC2086
      run "$side" "$n" $cmd >/dev/null
      kill -INT "$perf_pid"
      wait "$perf_pid" || true
      { echo "# $label — $side"; perf report -i "$WORK/perf.data" --stdio --no-children \
          --sort symbol -g none --percent-limit 1 2>/dev/null | grep -E '^ +[0-9]'; } \
        >"$PROFILE/$id.$side.txt"
    done
  done
  echo "profiles in $PROFILE"
fi
