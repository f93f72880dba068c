#!/usr/bin/env bash
# Build the module and run redis-server in the foreground with it loaded, using ./redis.conf
# (127.0.0.1:6379, data and AOF under ./data). Sets itself up first: stops with the rustup
# command when there is no Rust toolchain, installs missing system packages
# (scripts/install-deps.sh run: redis-server, libclang). Extra arguments go to redis-server, e.g.
#   scripts/start.sh --port 6380
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/rust-env.sh
scripts/install-deps.sh run
cargo build --release
mkdir -p data
exec redis-server ./redis.conf "$@"
