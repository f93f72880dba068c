//! Where a filter's false positives come from, computed offline with the crate's pure core
//! (`redis_bf::bloom::Chain`, the same code the module runs; no server needed).
//!
//! For error 0.01 and 0.001 × EXPANSION 1, 2, 4 (filled to 10× the initial capacity of 1000) and
//! NONSCALING (filled to its capacity), it builds the filter from several independent item sets
//! and measures each one's false-positive rate on fresh probes, to show how much a single
//! filter varies around the expected rate. For the first item set it then breaks the rate down
//! per layer: measured, the textbook prediction `(1 - e^(-k·n/m))^k` from the layer's real bit
//! count m, hash count k and fill n, and the part contributed by probes whose k bit positions
//! are not all distinct (double hashing `a + i·b mod m` lets positions coincide, which the
//! textbook formula does not account for).
//!
//! ```sh
//! cargo run --release --example fp_layers              # 10 item sets, 1,000,000 probes each
//! cargo run --release --example fp_layers -- 3 200000  # fewer sets / probes
//! ```

use std::collections::HashSet;

use redis_bf::bloom::Chain;

const CAPACITY: u64 = 1000;

struct Config {
    error: f64,
    /// `None` = NONSCALING.
    expansion: Option<u32>,
}

impl Config {
    fn label(&self) -> String {
        match self.expansion {
            Some(e) => format!("{} EXPANSION {e}", self.error),
            None => format!("{} NONSCALING", self.error),
        }
    }
    fn items(&self) -> u64 {
        if self.expansion.is_some() {
            10 * CAPACITY
        } else {
            CAPACITY
        }
    }
    fn build(&self, set: usize) -> Chain {
        let mut chain = Chain::new(
            CAPACITY,
            self.error,
            self.expansion.unwrap_or(2),
            self.expansion.is_none(),
            u64::MAX,
        )
        .expect("valid parameters");
        for i in 0..self.items() {
            chain
                .add(format!("set{set}:item:{i}").as_bytes(), u64::MAX)
                .expect("the filter takes every item");
        }
        chain
    }
}

fn rate(chain: &Chain, set: usize, probes: u64) -> f64 {
    let fp = (0..probes)
        .filter(|j| chain.contains(format!("set{set}:probe:{j}").as_bytes()))
        .count();
    fp as f64 / probes as f64
}

fn breakdown(chain: &Chain, probes: u64) {
    let n = chain.layers.len();
    let (mut any, mut per_layer, mut repeated_fp, mut repeated) =
        (0u64, vec![0u64; n], vec![0u64; n], vec![0u64; n]);
    for j in 0..probes {
        let h = chain.hash(format!("breakdown:probe:{j}").as_bytes());
        let mut hit = false;
        for (i, layer) in chain.layers.iter().enumerate() {
            let m = layer.params().modulus();
            let k = u64::from(layer.params().hashes);
            let distinct: HashSet<u64> = (0..k).map(|x| h.position(x, m)).collect();
            let degenerate = (distinct.len() as u64) < k;
            repeated[i] += u64::from(degenerate);
            if layer.contains(&h) {
                hit = true;
                per_layer[i] += 1;
                repeated_fp[i] += u64::from(degenerate);
            }
        }
        any += u64::from(hit);
    }
    let p = probes as f64;
    let mut target_sum = 0.0;
    let mut predicted_miss = 1.0;
    println!(
        "    layer  entries   fill      bits   k    target  predicted   measured  (from repeated positions; share of such probes)"
    );
    for (i, layer) in chain.layers.iter().enumerate() {
        let lp = &layer.params();
        let k = f64::from(lp.hashes);
        let predicted = (1.0 - (-k * layer.size as f64 / lp.bits as f64).exp()).powf(k);
        predicted_miss *= 1.0 - predicted;
        target_sum += lp.error;
        println!(
            "    {i:>5} {:>8} {:>6} {:>9} {:>3} {:>9.2e} {:>10.2e} {:>10.2e}  ({:.2e}; {:.2e})",
            lp.entries,
            layer.size,
            lp.bits,
            lp.hashes,
            lp.error,
            predicted,
            per_layer[i] as f64 / p,
            repeated_fp[i] as f64 / p,
            repeated[i] as f64 / p,
        );
    }
    println!(
        "    chain: sum of layer targets {target_sum:.3e}, predicted {:.3e}, measured {:.3e}",
        1.0 - predicted_miss,
        any as f64 / p
    );
}

fn main() {
    let mut args = std::env::args().skip(1);
    let sets: usize = args.next().and_then(|s| s.parse().ok()).unwrap_or(10);
    let probes: u64 = args
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let configs: Vec<Config> = [0.01, 0.001]
        .iter()
        .flat_map(|&error| {
            [Some(1), Some(2), Some(4), None]
                .into_iter()
                .map(move |expansion| Config { error, expansion })
        })
        .collect();
    println!(
        "initial capacity {CAPACITY}; scaling filters filled to {} items, NONSCALING to {CAPACITY}; \
         {sets} item sets, {probes} fresh probes each",
        10 * CAPACITY
    );
    for cfg in &configs {
        let mut rates: Vec<f64> = (0..sets).map(|s| rate(&cfg.build(s), s, probes)).collect();
        rates.sort_by(f64::total_cmp);
        let mean = rates.iter().sum::<f64>() / rates.len() as f64;
        let above = rates.iter().filter(|r| **r > cfg.error).count();
        println!(
            "{:<20} measured min {:.3e}  mean {mean:.3e}  max {:.3e}  ({above} of {sets} above {})",
            cfg.label(),
            rates[0],
            rates[rates.len() - 1],
            cfg.error
        );
        breakdown(&cfg.build(0), probes);
    }
}
