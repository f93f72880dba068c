//! Accuracy of the cuckoo filter (the pure core, no server): the false-positive rate against
//! the bucket size (1, 2, 4, 8) with RedisBloom's 8-bit fingerprints, and CF.COUNT's
//! over-count. Run with `--nocapture` to see the numbers.
//!
//! RedisBloom documents the error rate of a cuckoo filter as about `2 × b / 2^8` for bucket
//! size `b` (two candidate buckets of `b` fingerprints each, an 8-bit fingerprint; 2/255 ≈
//! 0.78 % for `b` = 1) and says every extra sub-filter adds as much again. Precisely: a
//! fingerprint here is one of 255 values (0 marks an empty slot), and a probe never added
//! matches when one of the (at most) `2b` occupied slots of its two buckets holds its
//! fingerprint, so its rate is at most `2b/255` per sub-filter, and about `2b·load/255`.
//!
//! For each case, 200 000 items never added are probed; the test asserts
//! - the measured rate ≤ the documented bound (`2b/255` × sub-filters) plus a Chernoff margin,
//! - the measured rate within a two-sided Chernoff margin of the rate the filled table itself
//!   implies (the share of (fingerprint, first bucket) pairs whose fingerprint sits in one of
//!   its two buckets: what a probe with a uniform hash meets),
//! - CF.COUNT ≥ the multiplicity of every item added (no deletion here), its over-count
//!   (count − multiplicity) histogram printed; the share of items over-counted is bounded as
//!   the false-positive rate is.
//!
//! Each margin is the deviation a sum of independent probe outcomes exceeds with probability
//! at most 1e-9 (so a correct filter fails these for one item set in 10^9).

use redis_bf::bloom::cuckoo::{alt_index, batch, Cuckoo, Insert};
use std::collections::BTreeMap;

const PROBES: usize = 200_000;
/// Slots of each single-sub-filter case (capacity): 2^16.
const SLOTS: u64 = 1 << 16;
/// ln(1 / 1e-9): the margins' failure probability.
const LN_INV_FAIL: f64 = 20.723_265_836_946_41;

/// Upper Chernoff margin: the δ with exp(−δ²μ/(2+δ)) = 1e-9, i.e. P(X ≥ (1+δ)μ) ≤ 1e-9 for a
/// sum of independent Bernoulli variables of mean (at most) μ.
fn chernoff_upper(mu: f64) -> f64 {
    let l = LN_INV_FAIL;
    (l + (l * l + 8.0 * l * mu).sqrt()) / (2.0 * mu)
}

/// Lower Chernoff margin: P(X ≤ (1−δ)μ) ≤ exp(−δ²μ/2) = 1e-9.
fn chernoff_lower(mu: f64) -> f64 {
    (2.0 * LN_INV_FAIL / mu).sqrt()
}

/// The false-positive rate a probe has on this table, exactly, when its fingerprint is
/// uniform on 1–255 and its first bucket uniform and independent of it: the mean over
/// fingerprints `f` and buckets `b` of whether `f` is in bucket `b` or in its alternate
/// `alt(f, b)` of any sub-filter. (None unless all sub-filters have the same bucket count.)
fn table_rate(cf: &Cuckoo) -> Option<f64> {
    let n = cf.buckets();
    if cf.bucket_counts().any(|b| b != n) {
        return None;
    }
    let bs = usize::from(cf.bucket_size);
    // The fingerprints present at each bucket index, in any sub-filter: 256 bits.
    let mut sets = vec![[0u64; 4]; n as usize];
    for f in &cf.filters {
        for (set, bucket) in sets.iter_mut().zip(f.data().chunks(bs)) {
            for &x in bucket.iter().filter(|&&x| x != 0) {
                set[usize::from(x >> 6)] |= 1 << (x & 63);
            }
        }
    }
    let has =
        |b: u64, x: u8| sets[(b & (n - 1)) as usize][usize::from(x >> 6)] >> (x & 63) & 1 == 1;
    let mut hits = 0u64;
    for b in 0..n {
        for x in 1..=255u8 {
            hits += u64::from(has(b, x) || has(alt_index(x, b), x));
        }
    }
    Some(hits as f64 / (n as f64 * 255.0))
}

struct Row {
    bs: u16,
    fill: f64,
    expansion: u16,
    stored: u64,
    refused: u64,
    sub_filters: usize,
    load: f64,
    measured: f64,
    bound: f64,
    table: Option<f64>,
    over: BTreeMap<u64, u64>,
    over_probes: BTreeMap<u64, u64>,
}

fn case(bs: u16, fill: f64, expansion: u16) -> Row {
    let mut cf = Cuckoo::new(SLOTS, bs, 20, expansion, u64::MAX).unwrap();
    assert_eq!(cf.filters[0].bytes(), SLOTS);
    let target = (SLOTS as f64 * fill).round() as u64;
    // Every tenth item is added twice (CF.COUNT of a duplicate).
    let mut mult: BTreeMap<u64, u64> = BTreeMap::new();
    let (mut stored, mut refused) = (0u64, 0u64);
    let mut i = 0u64;
    while stored + refused < target {
        let key = i / 2 * 2; // i and i+1 name the same item for every tenth pair
        let key = if key % 20 == 0 { key } else { i };
        let item = format!("member:{key}");
        match cf.insert(item.as_bytes(), false, u64::MAX) {
            Insert::Inserted => {
                stored += 1;
                *mult.entry(key).or_default() += 1;
            }
            Insert::Full => refused += 1,
            other => panic!("{other:?}"),
        }
        i += 1;
    }
    assert_eq!(cf.items, stored);
    // No false negative, CF.COUNT ≥ multiplicity.
    let mut over = BTreeMap::new();
    for (key, m) in &mult {
        let item = format!("member:{key}");
        assert!(cf.contains(item.as_bytes()), "false negative {item}");
        let c = cf.count(item.as_bytes());
        assert!(c >= *m, "CF.COUNT {c} < {m} for {item}");
        *over.entry(c - m).or_default() += 1;
    }
    // Never-added probes, through the batch path (cross-checked item by item).
    let probes: Vec<String> = (0..PROBES).map(|i| format!("absent:{i}")).collect();
    let mut fp = 0usize;
    let mut over_probes = BTreeMap::new();
    batch::contains_each(
        &cf,
        probes.len(),
        |i| probes[i].as_bytes(),
        |i, p| {
            assert_eq!(p, cf.contains(probes[i].as_bytes()));
            fp += usize::from(p);
            *over_probes
                .entry(cf.count(probes[i].as_bytes()))
                .or_default() += 1;
        },
    );
    let measured = fp as f64 / PROBES as f64;
    let slots = cf.total_buckets() * u64::from(bs);
    Row {
        bs,
        fill,
        expansion,
        stored,
        refused,
        sub_filters: cf.filters.len(),
        load: stored as f64 / slots as f64,
        measured,
        bound: 2.0 * f64::from(bs) / 255.0 * cf.filters.len() as f64,
        table: table_rate(&cf),
        over,
        over_probes,
    }
}

#[test]
fn false_positive_rate_and_over_count_by_bucket_size() {
    let mut rows = Vec::new();
    for bs in [1u16, 2, 4, 8] {
        for fill in [0.50, 0.95] {
            // Non-scaling: the one sub-filter the bound is about (insertions past its fill
            // rate are refused); and the default expansion 1, growing sub-filters.
            for expansion in [0u16, 1] {
                rows.push(case(bs, fill, expansion));
            }
        }
    }
    println!(
        "cuckoo false positives, {PROBES} never-added probes, 2^16 slots per sub-filter, \
         max iterations 20"
    );
    println!(
        "bucket fill expansion | stored refused sub-filters load | measured  table-implied  \
         bound(2b/255 x subs) | over-count of members (count-mult: n) | count of probes"
    );
    for r in &rows {
        println!(
            "{:>6} {:>4.0}% {:>9} | {:>6} {:>7} {:>11} {:>5.1}% | {:>7.4}% {:>13} {:>10.4}% | {:?} | {:?}",
            r.bs,
            r.fill * 100.0,
            r.expansion,
            r.stored,
            r.refused,
            r.sub_filters,
            r.load * 100.0,
            r.measured * 100.0,
            r.table
                .map(|t| format!("{:.4}%", t * 100.0))
                .unwrap_or_else(|| "-".into()),
            r.bound * 100.0,
            r.over,
            r.over_probes,
        );
    }
    for r in &rows {
        let what = format!("b={} fill={} expansion={}", r.bs, r.fill, r.expansion);
        let n = PROBES as f64;
        // Documented bound, with the upper margin.
        let mu = r.bound * n;
        let limit = r.bound * (1.0 + chernoff_upper(mu));
        assert!(
            r.measured <= limit,
            "{what}: measured {} > bound {} (limit {limit})",
            r.measured,
            r.bound
        );
        // The rate the table implies, two-sided.
        if let Some(t) = r.table {
            let mu = t * n;
            let (lo, hi) = (
                t * (1.0 - chernoff_lower(mu)),
                t * (1.0 + chernoff_upper(mu)),
            );
            assert!(
                (lo..=hi).contains(&r.measured),
                "{what}: measured {} outside [{lo}, {hi}] around the table's {t}",
                r.measured
            );
        }
        // Over-count: a member is over-counted only when another of its 2b slots matches its
        // fingerprint, which is no likelier than a false positive.
        let members: u64 = r.over.values().sum();
        let over: u64 = r.over.iter().filter(|(k, _)| **k > 0).map(|(_, v)| v).sum();
        let mu = r.bound * members as f64;
        assert!(
            over as f64 <= mu * (1.0 + chernoff_upper(mu)),
            "{what}: {over} of {members} members over-counted"
        );
        // Probes: CF.COUNT > 0 exactly for the false positives.
        let positive: u64 = r
            .over_probes
            .iter()
            .filter(|(k, _)| **k > 0)
            .map(|(_, v)| v)
            .sum();
        assert_eq!(positive as f64, (r.measured * n).round(), "{what}");
        if r.expansion != 0 {
            assert_eq!(r.refused, 0, "{what}: a scaling filter refused");
        }
    }
}
