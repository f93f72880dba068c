#!/usr/bin/env bash
# Big-filter stall probe: runs bench/stall.py on this tree's module, or, given REF, on the module
# of commit REF (built in a temporary worktree) and this tree's, interleaved round by round.
#
# Usage: bench/stall.sh [REF]      e.g. bench/stall.sh ef28687 (the last build that zeroed bit
#                                  arrays by writing them)
# Env:   GIB (filter size, default 2), ROUNDS (default 3), SCENARIOS (space-separated subset of
#        idle reserve grow del del-lazy unlink unlink-lazy flushall-async chain-del chain-many-del
#        chain-unlink chain-expire chain-evict chain-evict-lazy evict evict-lazy window-unlink
#        window-idle-add copy-sparse copy-dense bgsave-after-del bgsave-later cf-reserve cf-del
#        cf-compact cf-compact-touched cf-compact-many cf-del-compact cf-del-compact-4g
#        cf-full-insert),
#        REDIS_SERVER.
set -euo pipefail
cd "$(dirname "$0")/.."
REF=${1:-}
GIB=${GIB:-2}
ROUNDS=${ROUNDS:-3}
args=(--gib "$GIB" --rounds "$ROUNDS")
for s in ${SCENARIOS:-}; do args+=(--scenario "$s"); done
cargo build --release --quiet
WORK=$(mktemp -d /tmp/redis-bf-stall.XXXXXX)
if [ -n "$REF" ]; then
  trap 'git worktree remove --force "$WORK/src" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
  git worktree add --quiet --detach "$WORK/src" "$REF"
  (cd "$WORK/src" && CARGO_TARGET_DIR="$PWD/../target" cargo build --release --quiet)
  cp "$WORK/target/release/libredis_bf.so" "$WORK/before.so"
  args=(--module "before=$WORK/before.so" "${args[@]}")
else
  trap 'rm -rf "$WORK"' EXIT
fi
cp target/release/libredis_bf.so "$WORK/after.so"
python3 bench/stall.py --module "after=$WORK/after.so" "${args[@]}"
