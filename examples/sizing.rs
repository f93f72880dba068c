//! How big a filter is, and what happens past its capacity, computed with the crate's pure
//! core (`redis_bf::bloom`, the sizing code the module runs; no server needed, nothing is
//! allocated). The tables of docs/sizing.md ("Sizing a filter") are this program's output, and
//! `tests/bloom_sizing_table.rs` checks that they still are.
//!
//! ```sh
//! cargo run --release --example sizing                      # the tables of docs/sizing.md
//! cargo run --release --example sizing -- 5000000 0.001 4   # one plan: capacity, error, expansion
//! cargo run --release --example sizing -- 5000000 0.001 NONSCALING
//! cargo run --release --example sizing -- 864000000 0.001 2 WINDOW 86400000   # a window filter
//! cargo run --release --example sizing -- families          # Bloom / cuckoo / Ribbon (builds 1e8)
//! ```

use redis_bf::bloom::chain::{CHAIN_OVERHEAD, LAYER_OVERHEAD, TIGHTENING_RATIO};
use redis_bf::bloom::cuckoo::{FILTER_RECORD_BYTES, SUB_FILTER_RECORD_BYTES};
use redis_bf::bloom::layer::{LayerParams, OPT_FORCE64, OPT_NOROUND, OPT_NO_SCALING};
use redis_bf::bloom::ribbon::{build, item_hash, Shape};
use std::fmt::Write;

/// Options of filters made by commands: exact bit counts, 64-bit hash.
const OPTIONS: u32 = OPT_NOROUND | OPT_FORCE64;

/// The layers a filter reserved with (capacity, error, expansion) has once it holds `items`
/// items (every add new), oldest first; `None` for NONSCALING.
pub fn layers(capacity: u64, error: f64, expansion: Option<u32>, items: u64) -> Vec<LayerParams> {
    let Some(growth) = expansion else {
        return vec![LayerParams::for_capacity(capacity, error, OPTIONS | OPT_NO_SCALING).unwrap()];
    };
    let mut out =
        vec![LayerParams::for_capacity(capacity, error * TIGHTENING_RATIO, OPTIONS).unwrap()];
    let mut total = capacity;
    while total < items {
        let last = out.last().unwrap();
        let next = LayerParams::for_capacity(
            last.entries * u64::from(growth),
            last.error * TIGHTENING_RATIO,
            OPTIONS,
        )
        .unwrap();
        total += next.entries;
        out.push(next);
    }
    out
}

/// `BF.INFO Size` (and `MEMORY USAGE` without Redis' key overhead): 32 + Σ (64 + bytes).
pub fn info_size(layers: &[LayerParams]) -> u64 {
    CHAIN_OVERHEAD + layers.iter().map(|l| LAYER_OVERHEAD + l.bytes).sum::<u64>()
}

/// Bytes as a short human figure (KiB, MiB, GiB with 3 significant digits).
fn human(bytes: u64) -> String {
    let units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut u = 0;
    while v >= 1024.0 && u + 1 < units.len() {
        v /= 1024.0;
        u += 1;
    }
    if u == 0 {
        format!("{bytes} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", units[u])
    } else if v >= 10.0 {
        format!("{v:.1} {}", units[u])
    } else {
        format!("{v:.2} {}", units[u])
    }
}

/// A number with thin thousands separators (1,000,000).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The textbook false-positive rate of a layer holding `n` items.
fn layer_fp(l: &LayerParams, n: u64) -> f64 {
    let k = f64::from(l.hashes);
    (1.0 - (-k * n as f64 / l.bits as f64).exp()).powf(k)
}

/// Expected number of adds of new items answered 0 (a false positive at the time of the add,
/// so not counted by BF.CARD) while `items` distinct items are added, by the textbook rate
/// of each layer at its fill (integrated in 10,000 steps).
fn expected_card_shortfall(capacity: u64, error: f64, expansion: Option<u32>, items: u64) -> f64 {
    let plan = layers(capacity, error, expansion, items);
    let steps = 10_000u64;
    let mut missed = 0.0;
    for s in 0..steps {
        let added = items as f64 * (s as f64 + 0.5) / steps as f64;
        let mut left = added as u64;
        let mut miss = 1.0;
        for l in &plan {
            let n = left.min(l.entries);
            left -= n;
            miss *= 1.0 - layer_fp(l, n);
        }
        missed += (1.0 - miss) * items as f64 / steps as f64;
    }
    missed
}

/// The tables of docs/sizing.md.
pub fn report() -> String {
    let mut s = String::new();
    let w = &mut s;
    writeln!(w, "| capacity | error rate | `BF.INFO Size` (bytes) | bits per item | hashes (k) | first layer's rate | NONSCALING: Size, k |").unwrap();
    writeln!(w, "|---:|---:|---:|---:|---:|---:|---:|").unwrap();
    for capacity in [
        1_000u64,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
        1_000_000_000,
    ] {
        for error in [0.01, 0.001, 0.0001] {
            let l = layers(capacity, error, Some(2), 0);
            let n = layers(capacity, error, None, 0);
            let size = info_size(&l);
            writeln!(
                w,
                "| {} | {} | {} ({}) | {:.1} | {} | {} | {} ({}), {} |",
                thousands(capacity),
                error,
                thousands(size),
                human(size),
                l[0].bits as f64 / capacity as f64,
                l[0].hashes,
                l[0].error,
                thousands(info_size(&n)),
                human(info_size(&n)),
                n[0].hashes
            )
            .unwrap();
        }
    }
    writeln!(w).unwrap();
    let (capacity, error) = (1_000_000u64, 0.01);
    writeln!(w, "Past the capacity: `BF.RESERVE k {error} {}` with each expansion, after 1×, 2×, 4× and 10× the capacity in distinct items.", thousands(capacity)).unwrap();
    writeln!(w).unwrap();
    writeln!(w, "| expansion | items added | layers | newest layer: capacity, rate, k, bytes | `BF.INFO Capacity` | `BF.INFO Size` |").unwrap();
    writeln!(w, "|---:|---:|---:|---|---:|---:|").unwrap();
    for growth in [1u32, 2, 4] {
        for times in [1u64, 2, 4, 10] {
            let plan = layers(capacity, error, Some(growth), capacity * times);
            let last = plan.last().unwrap();
            let size = info_size(&plan);
            writeln!(
                w,
                "| {growth} | {}× = {} | {} | {}, {:e}, {}, {} | {} | {} ({}) |",
                times,
                thousands(capacity * times),
                plan.len(),
                thousands(last.entries),
                last.error,
                last.hashes,
                thousands(last.bytes),
                thousands(plan.iter().map(|l| l.entries).sum()),
                thousands(size),
                human(size)
            )
            .unwrap();
        }
    }
    writeln!(w).unwrap();
    for error in [0.01, 0.001] {
        let short = expected_card_shortfall(capacity, error, Some(2), capacity);
        writeln!(
            w,
            "- error {error}: {} distinct adds leave `BF.CARD` about {:.0} lower ({:.3}%).",
            thousands(capacity),
            short,
            100.0 * short / capacity as f64
        )
        .unwrap();
    }
    s
}

/// The plan of `BF.RESERVE k error capacity WINDOW ms EXPANSION growth`: its generations'
/// first layer, and its memory at `capacity` distinct items per window (five live generations
/// of a quarter window each, every one holding a quarter of the capacity) beside a plain
/// NONSCALING filter of the same capacity and rate (which never forgets) and the two-key
/// pattern (a key per window with EXPIRE, both asked, each sized for the capacity at half the
/// rate).
pub fn window_plan(capacity: u64, error: f64, growth: u32, ms: u64) -> String {
    use redis_bf::bloom::window::{Window, LIVE, SLICES, WINDOW_OVERHEAD};
    let w = Window::new(ms, capacity, error, growth, false, 0).expect("a valid window filter");
    let g = w.generation_params().expect("a generation's first layer");
    let size = WINDOW_OVERHEAD + LIVE * (CHAIN_OVERHEAD + LAYER_OVERHEAD + g.bytes);
    let plain = layers(capacity, error, None, 0);
    let plain_size = info_size(&plain);
    let two_keys = 2 * info_size(&layers(capacity, error / 2.0, None, 0));
    let mut s = String::new();
    let w = &mut s;
    writeln!(
        w,
        "BF.RESERVE k {error} {capacity} WINDOW {ms} EXPANSION {growth}"
    )
    .unwrap();
    writeln!(
        w,
        "  {LIVE} live generations of {} ms: an item is kept {ms} to {} ms after its last add",
        ms / SLICES,
        ms + ms / SLICES
    )
    .unwrap();
    writeln!(
        w,
        "  each generation's first layer: capacity {}, rate {:.4e}, k {}, {} bytes",
        thousands(g.entries),
        g.error,
        g.hashes,
        thousands(g.bytes)
    )
    .unwrap();
    writeln!(
        w,
        "  at {} distinct items per window: BF.INFO Size {} ({})",
        thousands(capacity),
        thousands(size),
        human(size)
    )
    .unwrap();
    writeln!(
        w,
        "  plain NONSCALING filter, same capacity and rate (never forgets): {} ({}), window/plain {:.2}x",
        thousands(plain_size),
        human(plain_size),
        size as f64 / plain_size as f64
    )
    .unwrap();
    writeln!(
        w,
        "  two keys, one per window, both asked (each at rate {}): {} ({}), window/two keys {:.2}x",
        error / 2.0,
        thousands(two_keys),
        human(two_keys),
        size as f64 / two_keys as f64
    )
    .unwrap();
    s
}

/// Set sizes of the family table (docs/sizing.md, "Bloom, cuckoo or Ribbon").
pub const FAMILY_SIZES: [u64; 3] = [100_000, 10_000_000, 100_000_000];

/// Error rates of the family table.
pub const FAMILY_ERRORS: [f64; 3] = [0.01, 0.001, 0.0001];

/// Bytes of a Ribbon filter's bumped list of `count` hashes, as the core holds it: 8 per
/// hash and a directory of 2^⌈log2 count⌉ + 1 (at least 3) u32 entries; nothing when empty.
pub fn ribbon_bumped_bytes(count: u64) -> u64 {
    if count == 0 {
        return 0;
    }
    8 * count + 4 * (count.next_power_of_two().max(2) + 1)
}

/// Builds the Ribbon filter of `item:0` … `item:{n−1}` at `error` with the core and returns
/// how many items it bumped (kept exactly) and its bytes ([`redis_bf::bloom::ribbon::Ribbon::bytes`]).
pub fn ribbon_of_items(n: u64, error: f64) -> (u64, u64) {
    let hashes = (0..n)
        .map(|i| item_hash(format!("item:{i}").as_bytes()))
        .collect();
    let ribbon = build(hashes, error).expect("a valid error rate");
    (ribbon.bumped().len() as u64, ribbon.bytes())
}

/// The Bloom / cuckoo / Ribbon table of docs/sizing.md for the sets `item:0` … `item:{n−1}`.
/// `bumped(n, error)` gives the Ribbon filter's bumped count for that set (the program builds
/// it with [`ribbon_of_items`]); everything else is computed here from the sizing code:
/// Bloom, a NONSCALING filter of capacity n at the rate (`BF.INFO Size`); cuckoo, the
/// smallest single table of bucket size 2 whose fill estimate 2n / (255 × buckets) is at most
/// the rate (`CF.INFO Size`); Ribbon, [`Shape::for_items`]' solution plus the bumped list.
pub fn families(bumped: &mut dyn FnMut(u64, f64) -> u64) -> String {
    let mut s = String::new();
    let w = &mut s;
    writeln!(w, "| items n | error rate ε | log2(1/ε) | Bloom (NONSCALING): bytes, bits per item | cuckoo (bucket size 2): `CF.RESERVE` capacity, bytes, bits per item | Ribbon: bytes (bumped items), bits per item | Ribbon over log2(1/ε) | Ribbon / Bloom |").unwrap();
    writeln!(w, "|---:|---:|---:|---|---|---|---:|---:|").unwrap();
    for n in FAMILY_SIZES {
        for error in FAMILY_ERRORS {
            let minimum = (1.0 / error).log2();
            let bloom = info_size(&layers(n, error, None, 0));
            let buckets = ((2.0 * n as f64 / (255.0 * error)).ceil() as u64).next_power_of_two();
            let cuckoo = FILTER_RECORD_BYTES + SUB_FILTER_RECORD_BYTES + 2 * buckets;
            let count = bumped(n, error);
            let shape = Shape::for_items(n, error).expect("a valid shape");
            let ribbon = shape.bytes() + ribbon_bumped_bytes(count);
            let bits = |bytes: u64| bytes as f64 * 8.0 / n as f64;
            writeln!(
                w,
                "| {} | {error} | {minimum:.2} | {} ({}), {:.2} | {}, {} ({}), {:.2} | {} ({}; {}), {:.2} | +{:.1} % | {:.2} |",
                thousands(n),
                thousands(bloom),
                human(bloom),
                bits(bloom),
                thousands(2 * buckets),
                thousands(cuckoo),
                human(cuckoo),
                bits(cuckoo),
                thousands(ribbon),
                human(ribbon),
                thousands(count),
                bits(ribbon),
                100.0 * (bits(ribbon) / minimum - 1.0),
                ribbon as f64 / bloom as f64,
            )
            .unwrap();
        }
    }
    s
}

/// What the program accepts.
#[allow(dead_code)]
const USAGE: &str = "usage: sizing                                   the tables of docs/sizing.md
       sizing CAPACITY [ERROR [EXPANSION|NONSCALING]]  one filter's layers as it fills
       sizing CAPACITY ERROR EXPANSION WINDOW MS       a window filter's memory
       sizing families                                 the Bloom / cuckoo / Ribbon table
(ERROR defaults to 0.01, EXPANSION to 2)";

/// One plan from the command line, or what is wrong with it.
#[allow(dead_code)]
fn plan(args: &[String]) -> Result<String, String> {
    let capacity: u64 = match args[0].parse() {
        Ok(c) if c >= 1 => c,
        _ => return Err(format!("capacity {:?}: a positive integer", args[0])),
    };
    let error: f64 = match args.get(1).map(|e| e.parse::<f64>()) {
        None => 0.01,
        Some(Ok(e)) if e > 0.0 && e < 1.0 => e,
        Some(_) => return Err(format!("error {:?}: a number in (0, 1)", args[1])),
    };
    let growth: Option<u32> = match args.get(2).map(String::as_str) {
        None => Some(2),
        Some(g) if g.eq_ignore_ascii_case("NONSCALING") => None,
        Some(g) => match g.parse() {
            Ok(g) if g >= 1 => Some(g),
            _ => return Err(format!("expansion {g:?}: an integer >= 1, or NONSCALING")),
        },
    };
    match (args.get(3), growth) {
        (None, _) => {}
        (Some(w), Some(growth)) if w.eq_ignore_ascii_case("WINDOW") && args.len() == 5 => {
            return match args[4].parse() {
                Ok(ms) if ms >= 1 => Ok(window_plan(capacity, error, growth, ms)),
                _ => Err(format!(
                    "window {:?}: milliseconds, an integer >= 1",
                    args[4]
                )),
            };
        }
        (Some(_), _) => return Err("after the expansion: WINDOW milliseconds".into()),
    }
    let mut out = match growth {
        Some(g) => format!("BF.RESERVE k {error} {capacity} EXPANSION {g}\n"),
        None => format!("BF.RESERVE k {error} {capacity} NONSCALING\n"),
    };
    // A non-scaling filter never grows: its one layer, full.
    let fills: &[u64] = if growth.is_some() {
        &[1, 2, 4, 10]
    } else {
        &[1]
    };
    for &times in fills {
        let plan = layers(capacity, error, growth, capacity * times);
        let size = info_size(&plan);
        let line = format!(
            "  {times:>2}× capacity: {} layer(s), BF.INFO Size {size} ({})\n",
            plan.len(),
            human(size)
        );
        out.push_str(&line);
        for (i, l) in plan.iter().enumerate() {
            let line = format!(
                "      layer {i}: capacity {}, rate {:e}, k {}, {} bytes\n",
                l.entries, l.error, l.hashes, l.bytes
            );
            out.push_str(&line);
        }
    }
    Ok(out)
}

#[allow(dead_code)]
fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.is_empty() {
        print!("{}", report());
        return;
    }
    if args[0] == "families" {
        print!("{}", families(&mut |n, error| ribbon_of_items(n, error).0));
        return;
    }
    if args[0] == "-h" || args[0] == "--help" {
        println!("{USAGE}");
        return;
    }
    match plan(&args) {
        Ok(text) => print!("{text}"),
        Err(e) => {
            eprintln!("sizing: {e}\n{USAGE}");
            std::process::exit(2);
        }
    }
}
