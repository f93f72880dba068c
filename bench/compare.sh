#!/usr/bin/env bash
# Runs bench/server.sh (without the persistence part) against the module built from another
# commit and against this tree's, one after the other, and prints the batch rows side by side.
#
# Usage: bench/compare.sh [REF]    REF defaults to 9d817e2, the last commit before software
#                                  pipelining of BF.MEXISTS / BF.MADD (issue 5).
# Env:   as bench/server.sh (REQUESTS, LARGE_ITEMS, RUNS).
set -euo pipefail
cd "$(dirname "$0")/.."
REF=${1:-9d817e2}
WORK=$(mktemp -d /tmp/redis-bf-compare.XXXXXX)
trap 'git worktree remove --force "$WORK/src" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
git worktree add --quiet --detach "$WORK/src" "$REF"
(cd "$WORK/src" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release --quiet)
cargo build --release --quiet
cp "$WORK/target/release/libredis_bf.so" "$WORK/before.so"
cp target/release/libredis_bf.so "$WORK/after.so"
for side in before after; do
  echo "== $side ($([ "$side" = before ] && echo "$REF" || git rev-parse --short HEAD))"
  PERSIST_BYTES=0 BF_MODULE="$WORK/$side.so" bench/server.sh | tee "$WORK/$side.txt"
done
# "BF.MADD large x1000 P=1 (vs …)   … items/s …" → "BF.MADD large x1000 P=1|items/s"
rows() {
  grep -E '^BF\.M' "$1" | sed -E 's/ \(vs [^)]*\)//; s/ {2,}[0-9].*ops\/s +([0-9]+) items\/s.*/|\1/' | sort
}
echo
echo "items/s (median)                                       before        after    after/before"
join -t'|' \
  <(rows "$WORK/before.txt") <(rows "$WORK/after.txt") |
  awk -F'|' '{printf "%-50s %12d %12d %8.2fx\n", $1, $2, $3, $3 / $2}'
