use super::*;

/// Distinct items `prefix:0 … prefix:(n-1)`.
fn items(prefix: &str, n: u64) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}:{i}").into_bytes())
        .collect()
}

fn built(prefix: &str, n: u64, error_rate: f64) -> (Vec<Vec<u8>>, Ribbon) {
    let set = items(prefix, n);
    let ribbon = build(set.iter().map(|i| item_hash(i)).collect(), error_rate).unwrap();
    (set, ribbon)
}

/// False positives among `probes` items never in the set.
fn false_positives(ribbon: &Ribbon, probes: u64) -> u64 {
    items("probe", probes)
        .iter()
        .filter(|p| ribbon.contains(p))
        .count() as u64
}

#[test]
fn every_item_of_the_set_is_found() {
    for (n, error_rate) in [
        (0, 0.01),
        (1, 0.01),
        (2, 0.5),
        (10, 0.001),
        (127, 0.01),
        (128, 0.01),
        (129, 0.25),
        (1_000, 0.0001),
        (20_000, 0.01),
        (20_000, 1e-9),
    ] {
        let (set, ribbon) = built("in", n, error_rate);
        assert_eq!(ribbon.items(), n, "n={n}");
        let missing = set.iter().filter(|i| !ribbon.contains(i)).count();
        assert_eq!(missing, 0, "false negatives at n={n}, ε={error_rate}");
    }
}

#[test]
fn shape_error_rates_stay_under_what_was_asked() {
    // (ε, r): r = ⌊log2(1 / 0.95 ε)⌋.
    for (error_rate, r) in [
        (0.5, 1),
        (0.1, 3),
        (0.01, 6),
        (0.001, 10),
        (0.0001, 13),
        (1e-9, 29),
    ] {
        for n in [0, 1, 1_000, 10_000_000, MAX_ITEMS] {
            let shape = Shape::for_items(n, error_rate).unwrap();
            assert_eq!(shape.lower_bits(), r, "ε={error_rate} n={n}");
            assert!(
                shape.error_rate() <= error_rate,
                "ε={error_rate} n={n}: {}",
                shape.error_rate()
            );
            assert!(shape.slots() as f64 >= n as f64 * 1.025, "n={n}");
        }
    }
}

#[test]
fn measured_false_positive_rate_is_the_shapes() {
    for (n, error_rate, probes) in [
        (50_000, 0.01, 400_000),
        (50_000, 0.001, 1_000_000),
        (5_000, 0.25, 100_000),
        (300, 0.0001, 2_000_000),
    ] {
        let (_, ribbon) = built("fp", n, error_rate);
        let expected = ribbon.shape().error_rate();
        assert!(
            expected <= error_rate * 0.951,
            "n={n} ε={error_rate}: {expected}"
        );
        // Within 4 standard deviations of the binomial count the shape predicts.
        let fp = false_positives(&ribbon, probes) as f64;
        let mean = expected * probes as f64;
        let spread = 4.0 * (mean * (1.0 - expected)).sqrt();
        assert!(
            (fp - mean).abs() <= spread,
            "n={n} ε={error_rate}: {fp} false positives, expected {mean} ± {spread}"
        );
    }
}

#[test]
fn bits_per_item_within_seven_per_cent_of_the_minimum() {
    for error_rate in [0.01, 0.001, 0.0001] {
        let (_, ribbon) = built("size", 100_000, error_rate);
        let minimum = (1.0 / error_rate).log2();
        let bits = ribbon.bits_per_item();
        assert!(
            bits <= 1.07 * minimum,
            "ε={error_rate}: {bits} bits per item, minimum {minimum}"
        );
        assert_eq!(ribbon.bytes(), ribbon.shape().bytes());
    }
}

#[test]
fn the_same_set_gives_the_same_filter_in_any_order_and_with_duplicates() {
    let set = items("order", 3_000);
    let forward: Vec<u64> = set.iter().map(|i| item_hash(i)).collect();
    let mut backward = forward.clone();
    backward.reverse();
    let mut doubled = forward.clone();
    doubled.extend_from_slice(&forward[..1_000]);
    let a = build(forward, 0.01).unwrap();
    assert_eq!(a, build(backward, 0.01).unwrap());
    assert_eq!(a, build(doubled, 0.01).unwrap());
    assert_eq!(a.items(), 3_000);
    // Another set of the same size is another filter.
    let other = build(
        items("other", 3_000).iter().map(|i| item_hash(i)).collect(),
        0.01,
    );
    assert_ne!(a.words(), other.unwrap().words());
}

#[test]
fn bad_error_rates_and_shapes_are_refused() {
    for error_rate in [0.0, 1.0, -0.5, 1.5, f64::NAN, 1e-10] {
        assert_eq!(
            build(vec![1, 2, 3], error_rate),
            Err(BuildError::Shape(ShapeError::ErrorRate)),
            "ε={error_rate}"
        );
    }
    for (blocks, bits, upper, want) in [
        (0, 7, 0, Err(ShapeError::Invalid)),
        (1, 0, 1, Err(ShapeError::Invalid)),
        (1, 32, 0, Err(ShapeError::Invalid)),
        (2, 7, 3, Err(ShapeError::Invalid)),
        (u64::MAX, 7, 0, Err(ShapeError::TooLarge)),
        (1 << 55, 7, 0, Err(ShapeError::TooLarge)),
    ] {
        assert_eq!(
            Shape::new(blocks, bits, upper),
            want,
            "{blocks} {bits} {upper}"
        );
    }
    let shape = Shape::new(2, 32, 2).unwrap();
    assert_eq!(shape.words(), 128);
    assert_eq!(
        Ribbon::from_parts(shape, 0, 0, vec![0; 127], vec![]),
        Err(PartsError::WordCount(128))
    );
}

#[test]
fn from_parts_gives_back_the_same_answers() {
    let (set, ribbon) = built("parts", 5_000, 0.01);
    let copy = Ribbon::from_parts(
        *ribbon.shape(),
        ribbon.seed(),
        ribbon.items(),
        ribbon.words().to_vec(),
        ribbon.bumped().to_vec(),
    )
    .unwrap();
    assert_eq!(copy, ribbon);
    assert!(set.iter().all(|i| copy.contains(i)));
}

#[test]
fn blocks_have_r_then_r_plus_one_columns() {
    let shape = Shape::new(4, 6, 1).unwrap();
    let columns: Vec<u32> = (0..4).map(|b| shape.columns_of(b)).collect();
    assert_eq!(columns, [6, 7, 7, 7]);
    let offsets: Vec<u64> = (0..=4).map(|b| shape.word_offset(b)).collect();
    assert_eq!(offsets, [0, 12, 26, 40, 54]);
    assert_eq!(shape.words(), 54);
    // ε: starts 0..=384, 128 of the 385 in the 6-column block.
    let expected = (128.0 / 64.0 + 257.0 / 128.0) / 385.0;
    assert!((shape.error_rate() - expected).abs() < 1e-15);
}

#[test]
fn items_the_band_cannot_take_are_kept_exactly() {
    // Hashes 0 … 999 all start at slot 0: at most 128 rows fit the first band window; of the
    // rest, those whose equation the others already imply (about 1 in 2^7 at 1 %) need no
    // slot, the others are bumped, and every one is still found.
    let hashes: Vec<u64> = (0..1_000).collect();
    let ribbon = build(hashes.clone(), 0.01).unwrap();
    let bumped = ribbon.bumped().len();
    assert!((800..=1_000 - 128).contains(&bumped), "{bumped}");
    assert!(ribbon.bumped().windows(2).all(|w| w[0] < w[1]));
    assert!(hashes.iter().all(|&h| ribbon.contains_hash(h)));
    // A spread-out set of a million bumps a few dozen (the queue outgrowing 128 slots).
    let (set, big) = built("bump", 1_000_000, 0.01);
    assert!(
        (20..=120).contains(&big.bumped().len()),
        "{}",
        big.bumped().len()
    );
    assert!(set.iter().all(|i| big.contains(i)));
    // Bumped hashes must be increasing and no more than the items.
    let parts = |bumped: Vec<u64>, items| {
        Ribbon::from_parts(*big.shape(), 0, items, big.words().to_vec(), bumped)
    };
    assert_eq!(parts(vec![5, 5], 10), Err(PartsError::Bumped));
    assert_eq!(parts(vec![6, 5], 10), Err(PartsError::Bumped));
    assert_eq!(parts(vec![1, 2, 3], 2), Err(PartsError::Bumped));
    assert!(parts(vec![1, 2, 3], 3).is_ok());
}

mod properties {
    use super::super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any set of hashes, any error rate: every hash is found, and the filter does not
        /// depend on the order the hashes came in.
        #[test]
        fn no_false_negatives_and_order_free(
            mut hashes in proptest::collection::vec(any::<u64>(), 0..3_000),
            error_rate in 1e-6f64..0.9,
            clustered in any::<bool>(),
        ) {
            if clustered {
                // Crowd the start slots: keep the low bits only.
                for h in &mut hashes {
                    *h &= 0xffff_ffff;
                }
            }
            let ribbon = build(hashes.clone(), error_rate).unwrap();
            prop_assert!(hashes.iter().all(|&h| ribbon.contains_hash(h)));
            let mut reversed = hashes.clone();
            reversed.reverse();
            prop_assert_eq!(&ribbon, &build(reversed, error_rate).unwrap());
        }
    }
}
