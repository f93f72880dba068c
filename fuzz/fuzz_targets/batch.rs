//! The batch paths of the chain against item by item: `check_interleaved` (BF.MEXISTS on big
//! layers, here run on any layers) and `contains_many` answer exactly `contains_hashed`, and
//! `add_many` (BF.MADD / BF.INSERT: the older layers checked for the whole batch first when one
//! of them is at least 1 MiB) gives the same outcomes and the same bits as `add_hashed` item by
//! item, on chains of one to many layers with duplicates, growth, refused growth and full
//! non-scaling filters.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::chain::{check_interleaved, AddError, AddOutcome};
use redis_bf::bloom::{Chain, HashPair};

fuzz_target!(|data: &[u8]| {
    let Some((&shape, rest)) = data.split_first() else {
        return;
    };
    // Items: the rest of the input in pieces of 1–4 bytes (many duplicates).
    let items: Vec<HashPair> = rest
        .chunks(1 + usize::from(shape >> 6))
        .map(HashPair::hash64)
        .collect();
    let capacity = [1u64, 3, 50, 1000][usize::from(shape & 3)];
    let error = [0.5, 0.1, 0.01, 1e-6][usize::from((shape >> 2) & 3)];
    let nonscaling = shape & 16 != 0;
    let budget = if shape & 32 != 0 { u64::MAX } else { 256 };
    let Ok(mut chain) = Chain::new(
        capacity,
        error,
        1 + u32::from(shape & 1),
        nonscaling,
        u64::MAX,
    ) else {
        return;
    };
    if shape & 0x80 != 0 && !nonscaling {
        // An older layer of more than 1 MiB (full, a few of the items in it), so that add_many
        // checks it for the whole batch first.
        let Ok(mut big) = Chain::new(900_000, 0.01, 2, false, u64::MAX) else {
            return;
        };
        for h in items.iter().step_by(3) {
            big.layers[0].set(h);
        }
        big.layers[0].size = big.layers[0].params().entries;
        big.size = big.layers[0].size;
        chain = big;
    }
    // Half of the items go in first, item by item, so that the chain has layers and content.
    let (first, second) = items.split_at(items.len() / 2);
    for h in first {
        let _ = chain.add_hashed(h, budget);
    }
    let expected: Vec<bool> = items.iter().map(|h| chain.contains_hashed(h)).collect();
    let mut found = vec![false; items.len()];
    check_interleaved(&chain.layers, &items, &mut found);
    assert_eq!(found, expected, "check_interleaved");
    let mut answers = Vec::new();
    chain.contains_many(&items, |i, p| answers.push((i, p)));
    assert!(answers.iter().enumerate().all(|(n, (i, _))| n == *i));
    assert!(
        answers.iter().map(|(_, p)| *p).eq(expected.iter().copied()),
        "contains_many"
    );

    let mut simple = chain.clone();
    let mut outcomes: Vec<Result<AddOutcome, AddError>> = Vec::new();
    for h in second {
        let r = simple.add_hashed(h, budget);
        outcomes.push(r);
        if r == Err(AddError::Full) {
            break;
        }
    }
    let mut batched = chain;
    let mut got = Vec::new();
    batched.add_many(second, |_| budget, |_, r| got.push(r));
    assert_eq!(got, outcomes, "add_many outcomes");
    assert!(batched == simple, "add_many bits");
});
