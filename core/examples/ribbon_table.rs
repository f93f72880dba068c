//! Builds Ribbon filters of `n` items at several error rates and prints, per filter: bits
//! per item against the minimum log2(1/ε), the seed the build took, build time and items/s
//! (one thread), and the false-positive rate measured on `probes` items never in the set.
//!
//! ```sh
//! cargo run --release -p redis-bf-core --example ribbon_table -- 100000 10000000 10000000
//! ```
//! Arguments: sizes `n` (any number), the last one the probe count (default: 1e5 and 1e7
//! items, 1e7 probes).

use redis_bf_core::ribbon::{build, item_hash};
use std::time::Instant;

fn main() {
    let mut args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a whole number"))
        .collect();
    if args.len() < 2 {
        args = vec![100_000, 10_000_000, 10_000_000];
    }
    let probes = args.pop().unwrap();
    println!("| n | ε | bits per item | log2(1/ε) | ratio | bumped | build s | Mitems/s | measured FP ({probes} probes) |");
    println!("|---|---|---|---|---|---|---|---|---|");
    for &n in &args {
        let hashes: Vec<u64> = (0..n)
            .map(|i| item_hash(format!("item:{i}").as_bytes()))
            .collect();
        for error_rate in [0.01, 0.001, 0.0001] {
            let t = Instant::now();
            let ribbon = build(hashes.clone(), error_rate).expect("built");
            let secs = t.elapsed().as_secs_f64();
            let missing = hashes.iter().filter(|&&h| !ribbon.contains_hash(h)).count();
            assert_eq!(missing, 0, "false negatives");
            let fp = (0..probes)
                .filter(|i| ribbon.contains(format!("probe:{i}").as_bytes()))
                .count() as f64
                / probes as f64;
            let minimum = (1.0 / error_rate).log2();
            println!(
                "| {n} | {error_rate} | {:.3} | {minimum:.3} | {:.4} | {} | {secs:.2} | {:.1} | {fp:.6} |",
                ribbon.bits_per_item(),
                ribbon.bits_per_item() / minimum,
                ribbon.bumped().len(),
                n as f64 / secs / 1e6,
            );
        }
    }
}
