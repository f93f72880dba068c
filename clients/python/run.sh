#!/usr/bin/env bash
# Run the redis-py compatibility test: creates clients/python/.venv on first use, installs the
# `redis` package from PyPI into it, builds the module if it is missing, and runs
# test_redis_py.py (which starts and stops its own redis-server).
#   BF_MODULE=/path/to/libredis_bf.so clients/python/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -n "${BF_MODULE:-}" ]; then
  BF_MODULE="$(realpath "$BF_MODULE")"
  export BF_MODULE
fi
cd "$here"

if [ -z "${BF_MODULE:-}" ] && [ ! -f ../../target/release/libredis_bf.so ]; then
  (cd ../.. && cargo build --release)
fi

if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
if ! .venv/bin/python -c 'import redis' 2>/dev/null; then
  .venv/bin/pip install --quiet --disable-pip-version-check redis
fi

exec .venv/bin/python test_redis_py.py "$@"
