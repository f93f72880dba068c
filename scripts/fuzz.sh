#!/usr/bin/env bash
# Coverage-guided fuzzing (cargo-fuzz / libFuzzer) of every decoder of the pure core:
#
#   scripts/fuzz.sh [SECONDS]        each target for SECONDS (default 20)
#
#   dump_header   decode_header (BF.LOADCHUNK iterator 1) on arbitrary bytes, 16 MiB memory bound
#   chunk_apply   apply_chunk (BF.LOADCHUNK data chunks) with arbitrary iterators and chunks
#   rdb_value     rdb::load (RDB load / RESTORE) over an in-memory typed value stream
#   args          the module's integer and double parsers (round trips with their printed text)
#   window_value  window::decode_header and window::load (window filters' dump header and RDB value)
#   batch         the batch checks and adds (interleaved lookups) against item by item
#   ribbon_chunks ribbon::dump::Loader (RF.LOADCHUNK header and chunks) and build, copy round trips
#   ribbon_rdb    ribbon::rdb::load (RDB load / RESTORE of a bf-ribbon value) and save/load round trips
#
# The seed corpus is generated from tests/data/golden-vectors.json (and, for window_value, real
# window filters from the core's `window_seeds` example) by fuzz/make_seeds.py into
# fuzz/corpus/<target>/ (kept between runs, ignored by git); crashes land in
# fuzz/artifacts/<target>/ and make the script fail. Reproduce one with
#   cargo fuzz run -O -s none <target> fuzz/artifacts/<target>/<file>
#
# Works on the stable toolchain: cargo-fuzz with `-s none` (no sanitizer) needs no nightly
# feature. FUZZ_SANITIZER=address adds AddressSanitizer; on stable that needs RUSTC_BOOTSTRAP=1,
# which this script then sets (the first build takes several minutes either way: the fuzz crate
# is its own workspace with its own target directory, fuzz/target).
# cargo-fuzz is installed with `cargo install cargo-fuzz --locked` when missing (~3 minutes).
set -euo pipefail
cd "$(dirname "$0")/.."

SECS="${1:-20}"
if ! [[ "$SECS" =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS > 0]" >&2 # libFuzzer reads 0 as "forever"
  exit 2
fi
SANITIZER="${FUZZ_SANITIZER:-none}"
TARGETS=(dump_header chunk_apply rdb_value args window_value batch cuckoo_rdb cuckoo_chunks ribbon_chunks ribbon_rdb)

if [ -d "${CARGO_HOME:-$HOME/.cargo}/bin" ]; then
  PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
fi
if ! cargo fuzz --version >/dev/null 2>&1; then
  echo "fuzz: installing cargo-fuzz"
  cargo install cargo-fuzz --locked
fi
if [ "$SANITIZER" != "none" ]; then
  export RUSTC_BOOTSTRAP=1
fi

python3 fuzz/make_seeds.py fuzz/corpus

cd fuzz
start=$(date +%s)
cargo fuzz build -O -s "$SANITIZER"
echo "fuzz: build took $(( $(date +%s) - start )) s"

status=0
for t in "${TARGETS[@]}"; do
  max_len=4096
  [ "$t" = args ] && max_len=128
  [ "$t" = rdb_value ] && max_len=8192
  [ "$t" = cuckoo_rdb ] && max_len=8192
  echo "fuzz: $t for ${SECS}s"
  mkdir -p "corpus/$t" # a target without golden-vector seeds starts from an empty corpus
  t0=$(date +%s)
  if ! cargo fuzz run -O -s "$SANITIZER" "$t" "corpus/$t" -- \
      -max_total_time="$SECS" -max_len="$max_len" -rss_limit_mb=2048 -malloc_limit_mb=256 \
      -print_final_stats=1 >"target/fuzz-$t.log" 2>&1; then
    status=1
    echo "fuzz: $t FAILED (log fuzz/target/fuzz-$t.log, inputs in fuzz/artifacts/$t/)"
    tail -40 "target/fuzz-$t.log"
  fi
  runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "target/fuzz-$t.log" | grep -o '[0-9]*$' || echo "?")
  cov=$(grep -o 'cov: [0-9]*' "target/fuzz-$t.log" | tail -1 || true)
  corpus=$(find "corpus/$t" -type f | wc -l)
  echo "fuzz: $t: $runs runs in $(( $(date +%s) - t0 )) s, $cov, corpus $corpus files"
done
exit "$status"
