//! The single-item paths allocate nothing: hashing an item, testing it and adding
//! it to an existing filter — including a filter of several layers, adds that land in the
//! newest one and adds of items already present — make no heap allocation at all.

use redis_bf_core::chain::{AddOutcome, Chain};
use redis_bf_core::hash::HashPair;

/// Allocations made by `f` on this thread (the `allocation-counter` crate's global allocator,
/// a dev-dependency: it counts per thread, so tests running in parallel do not interfere).
fn allocations<T>(f: impl FnOnce() -> T) -> (u64, T) {
    let mut out = None;
    let info = allocation_counter::measure(|| out = Some(f()));
    (info.count_total, out.expect("ran"))
}

#[test]
fn counting_allocator_counts() {
    // The check below must be able to fail: a Vec is one allocation (black_box: the optimizer
    // may otherwise drop an allocation whose contents nobody reads).
    let (n, v) = allocations(|| std::hint::black_box(vec![1u8; 10]));
    assert_eq!(n, 1);
    drop(v);
}

#[test]
fn single_item_add_and_check_allocate_nothing() {
    // Three layers (10, 20, 40 items), the newest with room left; items in every layer.
    let mut chain = Chain::new(10, 0.01, 2, false, u64::MAX).unwrap();
    let keys: Vec<Vec<u8>> = (0..50).map(|i| format!("item:{i}").into_bytes()).collect();
    for k in &keys {
        chain.add(k, u64::MAX).unwrap();
    }
    assert_eq!(chain.layers.len(), 3);
    let absent: Vec<Vec<u8>> = (0..200)
        .map(|i| format!("absent:{i}").into_bytes())
        .collect();
    let fresh: Vec<Vec<u8>> = (0..20).map(|i| format!("fresh:{i}").into_bytes()).collect();

    let (n, answers) = allocations(|| {
        let mut present = 0;
        for k in keys.iter().chain(&absent) {
            present += usize::from(chain.contains(k));
        }
        present
    });
    assert_eq!(n, 0, "checks allocated");
    assert!(answers >= keys.len());

    let layers = chain.layers.len();
    let (n, outcomes) = allocations(|| {
        let mut added = 0;
        for k in fresh.iter().chain(&keys) {
            let h = chain.hash(k);
            // The module's BF.ADD path: hash, then add with a budget asked only for growth.
            if chain.add_hashed_with(&h, |_| u64::MAX) == Ok(AddOutcome::Added) {
                added += 1;
            }
        }
        added
    });
    assert_eq!(
        chain.layers.len(),
        layers,
        "the test must not grow the chain"
    );
    assert_eq!(n, 0, "adds allocated");
    assert!(outcomes > 0 && outcomes <= fresh.len(), "{outcomes}");

    // Hashing alone, both hash functions.
    let (n, _) = allocations(|| (HashPair::hash64(b"x"), HashPair::hash32(b"x")));
    assert_eq!(n, 0);
}
