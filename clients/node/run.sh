#!/usr/bin/env bash
# Run the node-redis compatibility test: installs the locked `redis` package (npm ci) on first
# use, builds the module if it is missing, and runs test.mjs (which starts and stops its own
# redis-server).
#   BF_MODULE=/path/to/libredis_bf.so clients/node/run.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/../common.sh"
bf_module_ready
cd "$here"

if [ ! -d node_modules/redis ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi

exec node test.mjs "$@"
