#!/usr/bin/env bash
# Test the JavaScript checker: golden vectors, RedisBloom fixture walks, hostile input, and
# identity with BF.MEXISTS on a live server (started and stopped by the tests; no npm packages
# needed); the Ribbon filter checker against the Rust core's vectors (ribbon.test.mjs runs
# core/examples/ribbon_vectors.rs: about 3 s once built) and identity with RF.MEXISTS on a live
# server (ribbon.live.test.mjs: 1 030 000 probes of nine shapes). Builds the module if it is missing.
#   BF_MODULE=/path/to/libredis_bf.so clients/js/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../common.sh"
bf_module_ready
cd "$here"
exec node --test --test-concurrency=1 test/golden.test.mjs test/hostile.test.mjs test/live.test.mjs \
  test/cuckoo.test.mjs test/cuckoo.live.test.mjs test/ribbon.test.mjs test/ribbon.live.test.mjs
