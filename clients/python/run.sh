#!/usr/bin/env bash
# Run the redis-py compatibility test: creates clients/python/.venv on first use, installs the
# `redis` package from PyPI into it, builds the module if it is missing, and runs
# test_redis_py.py (which starts and stops its own redis-server).
#   BF_MODULE=/path/to/libredis_bf.so clients/python/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../common.sh"
bf_module_ready
cd "$here"
bf_python_venv

exec .venv/bin/python test_redis_py.py "$@"
