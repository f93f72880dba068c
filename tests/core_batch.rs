//! The batch paths of the pure core give exactly the simple paths' results (issue 5): the
//! software-pipelined batch check and add (with prefetching, which only layers of at least
//! `PREFETCH_MIN_BYTES` use) against item-by-item calls on a clone of the same filter.

use redis_bf::bloom::chain::{AddError, AddOutcome, PREFETCH_DISTANCE, PREFETCH_MIN_BYTES};
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
    let entries = c.layers[0].params.entries;
    fill_half(&mut c.layers[0], entries, 1);
    let second = c.next_layer_params().unwrap();
    c.layers.push(Layer::new(second).unwrap());
    fill_half(&mut c.layers[1], second.entries - room, 2);
    c.size = entries + second.entries - room;
    assert!(c
        .layers
        .iter()
        .all(|l| l.data.len() as u64 >= PREFETCH_MIN_BYTES));
    c
}

fn named(prefix: &str, n: u32) -> Vec<HashPair> {
    (0..n)
        .map(|i| HashPair::hash64(format!("{prefix}:{i}").as_bytes()))
        .collect()
}

fn items(n: u32, distinct: u32) -> Vec<HashPair> {
    (0..n)
        .map(|i| HashPair::hash64(format!("user:{}", i % distinct).as_bytes()))
        .collect()
}

#[test]
fn batched_check_equals_item_by_item_on_prefetched_layers() {
    let mut chain = big_chain(1000);
    // Items present in the oldest layer only, items added now (newest layer), absent items.
    let old_only = named("old", 50);
    for h in &old_only {
        chain.layers[0].set(h);
    }
    let added = named("new", 200);
    for h in &added {
        chain.add_hashed(h, u64::MAX).unwrap();
    }
    let mut probes = named("absent", 5000);
    probes.extend_from_slice(&old_only);
    probes.extend_from_slice(&added);
    // Interleave so that present items sit within the prefetch distance of absent ones.
    probes.sort_by_key(|h| h.a.rotate_left(7));
    let mut answers = vec![None; probes.len()];
    chain.contains_many(&probes, |i, p| {
        assert!(answers[i].is_none());
        answers[i] = Some(p)
    });
    let expected: Vec<Option<bool>> = probes
        .iter()
        .map(|h| Some(chain.contains_hashed(h)))
        .collect();
    assert_eq!(answers, expected);
    let present = expected.iter().filter(|a| **a == Some(true)).count();
    // 250 planted items, plus the false positives of two half-full layers (k = 8 and 9:
    // 5000 × (2^-8 + 2^-9) ≈ 29 expected).
    assert!((255..=320).contains(&present), "{present} present");
    for (h, a) in probes.iter().zip(&answers) {
        if old_only.contains(h) || added.contains(h) {
            assert_eq!(*a, Some(true));
        }
    }
    assert!(probes.len() > 4 * PREFETCH_DISTANCE);
}

#[test]
fn batched_add_equals_item_by_item_on_prefetched_layers() {
    // Duplicates inside the batch, 1000 items of room, then growth into a third layer.
    let hashes = items(6000, 4000);
    let mut simple = big_chain(1000);
    let mut batched = simple.clone();
    let expected: Vec<_> = hashes
        .iter()
        .map(|h| simple.add_hashed(h, u64::MAX))
        .collect();
    let mut got = Vec::new();
    batched.add_many(&hashes, |_| u64::MAX, |i, r| got.push((i, r)));
    assert_eq!(got.len(), hashes.len());
    assert!(got.iter().enumerate().all(|(n, (i, _))| n == *i));
    assert_eq!(got.iter().map(|x| x.1).collect::<Vec<_>>(), expected);
    assert_eq!(batched.layers.len(), 3);
    assert_eq!(batched, simple);
    let added = expected
        .iter()
        .filter(|r| **r == Ok(AddOutcome::Added))
        .count();
    assert!((3900..=4000).contains(&added), "{added} added");

    // A refused growth in the middle of a batch stops exactly where item by item stops.
    let mut simple = big_chain(10);
    let mut batched = simple.clone();
    let budget = 1 << 20; // less than the third layer needs
    let expected: Vec<_> = hashes[..100]
        .iter()
        .map(|h| simple.add_hashed(h, budget))
        .collect();
    let mut got = Vec::new();
    batched.add_many(&hashes[..100], |_| budget, |_, r| got.push(r));
    assert_eq!(got, expected);
    assert!(got.contains(&Err(AddError::CannotGrow)));
    assert_eq!(batched, simple);
}

#[test]
fn batched_add_on_full_nonscaling_prefetched_layer_stops_at_first_full() {
    let mut chain = Chain::new(1_000_000, 0.01, 2, true, u64::MAX).unwrap();
    let entries = chain.layers[0].params.entries;
    fill_half(&mut chain.layers[0], entries - 3, 9);
    chain.size = entries - 3;
    let before = chain.clone();
    let hashes = items(100, 100);
    let mut got = Vec::new();
    chain.add_many(&hashes, |_| u64::MAX, |i, r| got.push((i, r)));
    let last = *got.last().unwrap();
    assert_eq!(last.1, Err(AddError::Full));
    assert_eq!(
        got.iter()
            .filter(|(_, r)| *r == Ok(AddOutcome::Added))
            .count(),
        3
    );
    assert_eq!(chain.size, entries);
    assert_ne!(chain, before);
}
