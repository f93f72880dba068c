#!/usr/bin/env bash
# Ribbon filters on the server (issue #33's targets): bench/ribbon.py on this tree's release
# build, one server: stages N items by pipelined RF.MADD (and the same items into a
# BF.RESERVE … NONSCALING filter of the same n and ε), times RF.BUILD while a PING loop records
# the longest gap and LATENCY LATEST, then RF.MEXISTS x1000 against BF.MEXISTS x1000 and
# RF.EXISTS against BF.EXISTS at pipeline 32 (redis-benchmark, runs interleaved, a ratio per
# round). Note `uptime` with every run; keep the ratios.
#
# Usage: bench/ribbon.sh            (defaults: 1e8 items, ε 0.01, 3 rounds, 200 000 requests;
#                                    1e8 needs about 6 GiB of memory and 3–6 minutes)
# Env:   N=items  ERROR=rate  ROUNDS=n  REQUESTS=n (single-item commands per run; the x1000 runs
#        send REQUESTS/100 commands)  SERVER=path (default redis-server)
#        BUILD_ONLY=1 (stage and build only: the RF.BUILD time and PING gap, no Bloom filter)
#        BF_MODULE=path (benchmark that build; otherwise this tree is built first)
#        RB_SO=path (RedisBloom's module: a second server with its Bloom filter of the same
#                    items, its BF.MEXISTS x1000 against RF.MEXISTS x1000; same SERVER binary)
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -n "${BF_MODULE:-}" ]; then
  MODULE=$BF_MODULE
else
  cargo build --release --quiet # a no-op when nothing changed; never benchmark a stale build
  MODULE=$PWD/target/release/libredis_bf.so
fi
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD -- core src || echo '+changes')"
exec python3 bench/ribbon.py --module "$MODULE" --server "${SERVER:-redis-server}" \
  --items "${N:-100000000}" --error "${ERROR:-0.01}" --rounds "${ROUNDS:-3}" \
  --requests "${REQUESTS:-200000}" ${BUILD_ONLY:+--build-only} \
  ${RB_SO:+--rb-module "$RB_SO"}
