//! The Ribbon series of the false-positive plot (`docs/fp-rates.png`, `docs/fp-rates-ribbon.csv`):
//! for each set size and asked error rate ε, builds the filter of the items `item:0` …
//! `item:{n−1}` with the core, checks that every item answers "maybe" (no false negative), and
//! counts the "maybe" answers of never-added probes (`probe:0` …).
//!
//! ```sh
//! cargo run --release -p redis-bf-core --example ribbon_fp            # CSV on stdout
//! cargo run --release -p redis-bf-core --example ribbon_fp -- 1000000 # at least this many probes a point
//! ```
//! `scripts/fp_plot.sh --parts ribbon` runs it, adds the 95 % intervals, writes the CSV and
//! redraws the figure. Probes per point: the larger of the argument (default 1 000 000) and
//! 1 000 / ε (about 1 000 expected false positives), at most 10 000 000.
//!
//! Columns: `n`, `error` (ε asked), `expected` (the shape's own rate, `Shape::error_rate`:
//! what the chosen mix of r and r + 1 result bits gives), `bits_per_item` (solution and bumped
//! list, × 8 / n), `minimum_bits` (log2(1/ε)), `bumped`, `probes`, `false_positives`.

use redis_bf_core::ribbon::{build, item_hash};

/// Set sizes measured: the false-positive rate depends on ε alone, not on n.
const SIZES: [u64; 2] = [100_000, 1_000_000];

/// Asked error rates, from 1 in 2 to 1 in 10 000.
const ERRORS: [f64; 13] = [
    0.5, 0.2, 0.1, 0.05, 0.02, 0.01, 0.005, 0.002, 0.001, 0.0005, 0.0002, 0.0001, 0.00005,
];

fn main() {
    let least: u64 = match std::env::args().nth(1) {
        Some(a) => a.parse().expect("probes: a whole number"),
        None => 1_000_000,
    };
    println!("n,error,expected,bits_per_item,minimum_bits,bumped,probes,false_positives");
    for n in SIZES {
        let hashes: Vec<u64> = (0..n)
            .map(|i| item_hash(format!("item:{i}").as_bytes()))
            .collect();
        for error in ERRORS {
            let ribbon = build(hashes.clone(), error).expect("a valid error rate");
            let missing = hashes.iter().filter(|&&h| !ribbon.contains_hash(h)).count();
            assert_eq!(missing, 0, "false negatives at n {n}, error {error}");
            let probes = least.max((1000.0 / error) as u64).min(10_000_000);
            let false_positives = (0..probes)
                .filter(|i| ribbon.contains(format!("probe:{i}").as_bytes()))
                .count();
            println!(
                "{n},{error},{:.8},{:.4},{:.4},{},{probes},{false_positives}",
                ribbon.shape().error_rate(),
                ribbon.bits_per_item(),
                (1.0 / error).log2(),
                ribbon.bumped().len(),
            );
        }
    }
}
