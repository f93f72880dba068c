#!/usr/bin/env bash
# Build the module and run redis-server in the foreground with it loaded, using ./redis.conf
# (127.0.0.1:6379, data and AOF under ./data). Extra arguments go to redis-server, e.g.
#   scripts/start.sh --port 6380
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release
mkdir -p data
exec redis-server ./redis.conf "$@"
