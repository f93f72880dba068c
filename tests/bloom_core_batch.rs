//! The batch paths of the pure core give exactly the simple paths' results: the
//! software-pipelined batch check and add (with prefetching, which only layers of at least
//! `PREFETCH_MIN_BYTES` use) against item-by-item calls on a clone of the same filter.

use redis_bf::bloom::chain::{
    AddError, AddOutcome, LOOKUPS_IN_FLIGHT, PREFETCH_DISTANCE, PREFETCH_MIN_BYTES,
};
use redis_bf::bloom::layer::Layer;
use redis_bf::bloom::{Chain, HashPair};

/// Fills a layer's bits pseudo-randomly to about half density (a full layer) and marks it as
/// holding `size` items.
fn fill_half(layer: &mut Layer, size: u64, seed: u64) {
    let mut x = seed;
    for byte in layer.data.iter_mut() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        *byte = (x >> 24) as u8;
    }
    layer.size = size;
}

/// A two-layer filter whose layers are both big enough to be prefetched; the newest one is
/// `room` items short of full, so a batch also makes it grow a third layer.
fn big_chain(room: u64) -> Chain {
    let mut c = Chain::new(1_000_000, 0.01, 2, false, u64::MAX).unwrap();
    let entries = c.layers[0].params().entries;
    fill_half(&mut c.layers[0], entries, 1);
    let second = c.next_layer_params().unwrap();
    c.layers = [c.layers[0].clone(), Layer::new(second).unwrap()].into();
    fill_half(&mut c.layers[1], second.entries - room, 2);
    c.size = entries + second.entries - room;
    assert!(c
        .layers
        .iter()
        .all(|l| l.data.len() as u64 >= PREFETCH_MIN_BYTES));
    c
}

/// `big_chain(room)` with `old` items set in its oldest layer only (bits, no counters) and
/// `new` items added to its newest layer; returns the chain and both item lists.
fn planted(room: u64, old: u32, new: u32) -> (Chain, Vec<HashPair>, Vec<HashPair>) {
    let mut chain = big_chain(room);
    let old = named("old", old);
    for h in &old {
        chain.layers[0].set(h);
    }
    let new = named("new", new);
    for h in &new {
        chain.add_hashed(h, u64::MAX).unwrap();
    }
    (chain, old, new)
}

fn named(prefix: &str, n: u32) -> Vec<HashPair> {
    (0..n)
        .map(|i| HashPair::hash64(format!("{prefix}:{i}").as_bytes()))
        .collect()
}

/// Adds `hashes` to two clones of `chain`, by `add_many` and item by item (stopping after the
/// first "full" error, as `add_many` does). Asserts the same outcomes, reported once each and in
/// order, and the same filters afterwards; returns the outcomes and the filter.
fn add_both(
    chain: &Chain,
    hashes: &[HashPair],
    budget: u64,
) -> (Vec<Result<AddOutcome, AddError>>, Chain) {
    let mut simple = chain.clone();
    let mut expected = Vec::new();
    for h in hashes {
        let r = simple.add_hashed(h, budget);
        expected.push(r);
        if r == Err(AddError::Full) {
            break;
        }
    }
    let mut batched = chain.clone();
    let mut got = Vec::new();
    batched.add_many(hashes, |_| budget, |i, r| got.push((i, r)));
    assert!(
        got.iter().enumerate().all(|(n, (i, _))| n == *i),
        "outcomes out of order"
    );
    let got: Vec<_> = got.into_iter().map(|(_, r)| r).collect();
    assert_eq!(got, expected);
    assert_eq!(batched, simple, "the filters differ");
    (got, batched)
}

/// Checks `probes` by `contains_many` and item by item; asserts the same answers, each given
/// once; returns them.
fn check_both(chain: &Chain, probes: &[HashPair]) -> Vec<bool> {
    let mut answers = vec![None; probes.len()];
    chain.contains_many(probes, |i, p| {
        assert!(answers[i].is_none(), "item {i} answered twice");
        answers[i] = Some(p)
    });
    let expected: Vec<bool> = probes.iter().map(|h| chain.contains_hashed(h)).collect();
    assert_eq!(
        answers,
        expected.iter().map(|e| Some(*e)).collect::<Vec<_>>()
    );
    expected
}

fn added(outcomes: &[Result<AddOutcome, AddError>]) -> usize {
    outcomes
        .iter()
        .filter(|r| **r == Ok(AddOutcome::Added))
        .count()
}

fn items(n: u32, distinct: u32) -> Vec<HashPair> {
    (0..n)
        .map(|i| HashPair::hash64(format!("user:{}", i % distinct).as_bytes()))
        .collect()
}

#[test]
fn batched_paths_equal_item_by_item_on_small_layers() {
    // Layers of 50, 100, 200, … items: no prefetching, growth inside the batch, duplicates.
    let chain = Chain::new(50, 0.01, 2, false, u64::MAX).unwrap();
    let hashes = items(500, 350);
    let (outcomes, grown) = add_both(&chain, &hashes, u64::MAX);
    assert_eq!(outcomes.len(), 500);
    // At most 350 new items; a few are false positives of the earlier layers (error 0.01).
    assert!(
        (335..=350).contains(&added(&outcomes)),
        "{}",
        added(&outcomes)
    );
    assert_eq!(grown.layers.len(), 3);
    let mut probes = named("probe", 2000);
    probes.extend_from_slice(&hashes);
    let answers = check_both(&grown, &probes);
    assert!(answers[2000..].iter().all(|a| *a), "a false negative");
    // A full non-scaling filter: stops after the first "full" error, as BF.MADD.
    let full = Chain::new(2, 0.01, 2, true, u64::MAX).unwrap();
    let (outcomes, _) = add_both(&full, &hashes[..5], u64::MAX);
    assert_eq!(outcomes.len(), 3);
    assert_eq!(outcomes[2], Err(AddError::Full));
}

#[test]
fn batched_check_equals_item_by_item_on_prefetched_layers() {
    // Items present in the oldest layer only, items added now (newest layer), absent items.
    let (chain, old_only, new) = planted(1000, 50, 200);
    let mut probes = named("absent", 5000);
    probes.extend_from_slice(&old_only);
    probes.extend_from_slice(&new);
    // Interleave so that present items sit within the prefetch distance of absent ones.
    probes.sort_by_key(|h| h.a.rotate_left(7));
    assert!(probes.len() > 4 * PREFETCH_DISTANCE);
    let answers = check_both(&chain, &probes);
    let present = answers.iter().filter(|a| **a).count();
    // 250 planted items, plus the false positives of two half-full layers (k = 8 and 9:
    // 5000 × (2^-8 + 2^-9) ≈ 29 expected).
    assert!((255..=320).contains(&present), "{present} present");
    for (h, a) in probes.iter().zip(&answers) {
        if old_only.contains(h) || new.contains(h) {
            assert!(*a, "a false negative");
        }
    }
}

#[test]
fn batched_add_equals_item_by_item_on_prefetched_layers() {
    // Duplicates inside the batch, 1000 items of room, then growth into a third layer.
    let hashes = items(6000, 4000);
    let (outcomes, grown) = add_both(&big_chain(1000), &hashes, u64::MAX);
    assert_eq!(outcomes.len(), hashes.len());
    assert_eq!(grown.layers.len(), 3);
    assert!((3900..=4000).contains(&added(&outcomes)));

    // A refused growth in the middle of a batch: the same refusals, nothing else changes.
    let budget = 1 << 20; // less than the third layer needs
    let (outcomes, refused) = add_both(&big_chain(10), &hashes[..100], budget);
    assert!(outcomes.contains(&Err(AddError::CannotGrow)));
    assert_eq!(refused.layers.len(), 2);
}

/// Items the older layers hold are found by the first pass of `add_many` (the whole batch
/// at once), items of the newest layer by the in-order pass; batches shorter and longer than
/// the lookups kept in flight; a small layer between two big ones.
#[test]
fn batched_add_finds_items_of_every_layer_in_batches_of_any_length() {
    let (chain, old_only, newest_only) = planted(3000, 40, 40);
    let mut mixed: Vec<HashPair> = named("fresh", 120);
    mixed.extend_from_slice(&old_only);
    mixed.extend_from_slice(&newest_only);
    mixed.extend_from_slice(&named("fresh", 30)); // duplicates of the batch's own items
    mixed.sort_by_key(|h| h.a.rotate_left(11));
    for len in [
        0,
        1,
        2,
        LOOKUPS_IN_FLIGHT - 1,
        LOOKUPS_IN_FLIGHT,
        LOOKUPS_IN_FLIGHT + 1,
        100,
        mixed.len(),
    ] {
        let batch = &mixed[..len];
        let (outcomes, _) = add_both(&chain, batch, u64::MAX);
        for (h, r) in batch.iter().zip(&outcomes) {
            if old_only.contains(h) || newest_only.contains(h) {
                assert_eq!(*r, Ok(AddOutcome::Exists), "batch of {len}");
            }
        }
        check_both(&chain, batch);
    }
    // A small layer between two big ones (the middle one is checked with the others).
    let mut three = big_chain(0);
    let small = Chain::new(1000, 0.001, 2, false, u64::MAX).unwrap().layers[0].clone();
    let big = three.layers[1].clone();
    three.layers = [three.layers[0].clone(), small, big].into();
    three.layers[1].set(&old_only[0]);
    let (outcomes, _) = add_both(&three, &mixed, u64::MAX);
    assert_eq!(
        outcomes[mixed.iter().position(|h| *h == old_only[0]).unwrap()],
        Ok(AddOutcome::Exists)
    );
    check_both(&three, &mixed);
}

/// A small older layer under a big newest one (expansion 1000): no first pass over the older
/// layers (they stay in cache), while the newest layer's positions are computed ahead of each
/// add; items of the small layer must still be found there.
#[test]
fn batched_add_checks_small_older_layers_under_a_big_newest_one() {
    let mut chain = Chain::new(1000, 0.01, 1000, false, u64::MAX).unwrap();
    let old = named("small-layer", 1000);
    for h in &old {
        chain.add_hashed(h, u64::MAX).unwrap();
    }
    chain
        .add_hashed(&HashPair::hash64(b"grow"), u64::MAX)
        .unwrap();
    assert_eq!(chain.layers.len(), 2);
    assert!(chain.layers[0].data.len() as u64 <= PREFETCH_MIN_BYTES / 64);
    assert!(chain.layers[1].data.len() as u64 >= PREFETCH_MIN_BYTES);
    let mut batch = named("fresh", 300);
    batch.extend_from_slice(&old[..300]);
    batch.extend_from_slice(&named("fresh", 50));
    batch.sort_by_key(|h| h.b.rotate_left(5));
    let (outcomes, _) = add_both(&chain, &batch, u64::MAX);
    for (h, r) in batch.iter().zip(&outcomes) {
        if old.contains(h) {
            assert_eq!(*r, Ok(AddOutcome::Exists));
        }
    }
    assert!(
        (290..=300).contains(&added(&outcomes)),
        "{}",
        added(&outcomes)
    );
}

#[test]
fn batched_add_on_full_nonscaling_prefetched_layer_stops_at_first_full() {
    let mut chain = Chain::new(1_000_000, 0.01, 2, true, u64::MAX).unwrap();
    let entries = chain.layers[0].params().entries;
    fill_half(&mut chain.layers[0], entries - 3, 9);
    chain.size = entries - 3;
    let (outcomes, full) = add_both(&chain, &items(100, 100), u64::MAX);
    assert_eq!(outcomes.last(), Some(&Err(AddError::Full)));
    assert_eq!(added(&outcomes), 3);
    assert_eq!(full.size, entries);
}
