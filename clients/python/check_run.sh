#!/usr/bin/env bash
# Test the pure-Python checker (redis_bf_check): golden vectors, RedisBloom fixture walks and
# hostile input (test_check.py, no server), then identity with BF.MEXISTS on a live server
# (test_check_identity.py, redis-py from the local .venv shared with run.sh), the Ribbon filter
# checker against the Rust core's vectors (test_check_ribbon.py runs
# core/examples/ribbon_vectors.rs: about 10 s of CPU for 1 007 601 items once built) and against
# RF.MEXISTS on a live server (test_check_ribbon_live.py: 1 030 000 probes of nine shapes), then a
# `pip install` of the package folder into a throwaway venv. Builds the module if it is missing.
#   clients/python/check_run.sh            all tests
#   clients/python/check_run.sh --bench    the checks/s benchmark instead
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../common.sh"
bf_module_ready
bf_python_venv
cd "$here"
if [ "${1:-}" = "--bench" ]; then
  exec .venv/bin/python bench_check.py
fi
.venv/bin/python -m unittest -v test_check test_check_identity test_check_cuckoo test_check_ribbon test_check_ribbon_live
# The folder installs with pip and imports without clients/python on the path.
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
python3 -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install --quiet --disable-pip-version-check "$here/redis_bf_check"
(cd "$tmp" && "$tmp/venv/bin/python" -c '
import redis_bf_check as r
assert r.hash_pair("hello") == (0x5ba5b8a59803e699, 0xa7d451d588a0c2a4)
print("pip install of redis_bf_check: ok")')
