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
    // (ε, r): r = ⌊log2(1 / 0.9 ε)⌋.
    for (error_rate, r) in [
        (0.5, 1),
        (0.1, 3),
        (0.01, 6),
        (0.001, 10),
        (0.0001, 13),
        (1e-9, 30),
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
            expected <= error_rate * 0.901,
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
        Ribbon::from_parts(0.01, shape, 0, 0, vec![0; 127], vec![]),
        Err(PartsError::WordCount(128))
    );
}

#[test]
fn from_parts_gives_back_the_same_answers() {
    let (set, ribbon) = built("parts", 5_000, 0.01);
    let copy = Ribbon::from_parts(
        ribbon.error_rate(),
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
        Ribbon::from_parts(0.01, *big.shape(), 0, items, big.words().to_vec(), bumped)
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

mod copies {
    use super::super::dump::*;
    use super::super::*;
    use super::built;

    /// SCANDUMP's walk: the header, then `(position, chunk)` from position 1 on.
    fn walk(ribbon: &Ribbon) -> ([u8; HEADER_BYTES], Vec<(u64, Vec<u8>)>) {
        let mut chunks = Vec::new();
        let mut position = 1;
        while let Some((next, data)) = chunk_at(ribbon, position) {
            chunks.push((position, data));
            position = next;
        }
        (encode_header(ribbon), chunks)
    }

    fn load(header: &[u8], chunks: &[(u64, Vec<u8>)]) -> Result<Ribbon, ChunkError> {
        let mut loader = Loader::new(header, u64::MAX).unwrap();
        for (position, data) in chunks {
            loader.apply(*position, data)?;
        }
        loader.finish()
    }

    #[test]
    fn a_walk_loads_back_the_same_filter() {
        for (n, error_rate) in [(0, 0.01), (1, 0.5), (5_000, 0.001), (300_000, 0.01)] {
            let (set, ribbon) = built("copy", n, error_rate);
            let (header, chunks) = walk(&ribbon);
            let copy = load(&header, &chunks).unwrap();
            assert_eq!(copy, ribbon, "n={n}");
            assert!(set.iter().all(|i| copy.contains(i)));
            let bytes: usize = chunks.iter().map(|(_, c)| c.len()).sum();
            assert_eq!(bytes as u64, body_bytes(&ribbon));
        }
        // A body of more than one chunk (16 MiB), with bumped hashes after the words.
        let shape = Shape::new(40_000, 31, 0).unwrap();
        let words = (0..shape.words())
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        let big = Ribbon::from_parts(0.001, shape, 7, 10, words, vec![3, 9, u64::MAX]).unwrap();
        assert!(body_bytes(&big) > MAX_CHUNK_BYTES);
        let (header, chunks) = walk(&big);
        assert_eq!(chunks.len(), 2);
        assert_eq!(chunks[1].0, MAX_CHUNK_BYTES + 1);
        assert_eq!(load(&header, &chunks).unwrap(), big);
    }

    #[test]
    fn a_header_memory_cannot_hold_takes_only_what_arrives() {
        // 2^46 blocks of one column: 2^47 words, 1 PiB, within every bound but memory. The
        // loader allocates nothing for it up front (a RESTORE or an RDB value claiming it
        // once aborted Redis 7.0, whose zeroed allocation aborts on failure); its memory grows
        // with the chunks, at most twice what they hold.
        let mut header = [0u8; HEADER_BYTES];
        header[0] = VERSION;
        header[1..9].copy_from_slice(&0.5f64.to_le_bytes());
        header[17..25].copy_from_slice(&(1u64 << 46).to_le_bytes());
        header[25..29].copy_from_slice(&1u32.to_le_bytes());
        header[29..37].copy_from_slice(&(1u64 << 46).to_le_bytes());
        let mut loader = Loader::new(&header, u64::MAX).unwrap();
        assert_eq!(loader.body_bytes(), 1 << 50);
        assert_eq!(loader.allocated_bytes(), 0);
        for (i, chunk) in [vec![7u8; 3], vec![9u8; 4093], vec![1u8; 1 << 16]]
            .iter()
            .enumerate()
        {
            loader.apply(loader.next_position(), chunk).unwrap();
            let received = loader.next_position() - 1;
            assert!(
                loader.allocated_bytes() <= 2 * received.next_multiple_of(8),
                "chunk {i}: {} bytes held for {received} received",
                loader.allocated_bytes()
            );
        }
        assert_eq!(loader.received_body()[..3], [7, 7, 7]);
        assert_eq!(
            Loader::new(&header, 1 << 20).unwrap_err(),
            HeaderError::TooLarge
        );
    }

    #[test]
    fn a_half_loaded_filter_gives_back_its_header_and_received_bytes() {
        let (_, ribbon) = built("half", 3_000, 0.01);
        let (header, chunks) = walk(&ribbon);
        let body: Vec<u8> = chunks.iter().flat_map(|(_, c)| c.clone()).collect();
        for cut in [0usize, 1, 7, 8, 13, body.len() - 1] {
            let mut loader = Loader::new(&header, u64::MAX).unwrap();
            if cut > 0 {
                loader.apply(1, &body[..cut]).unwrap();
            }
            assert_eq!(loader.header(), header, "cut {cut}");
            assert_eq!(loader.items(), 3_000, "cut {cut}");
            assert_eq!(loader.received_body(), &body[..cut], "cut {cut}");
            // What it gives back continues into the same filter.
            let mut again = Loader::new(&loader.header(), u64::MAX).unwrap();
            if cut > 0 {
                again.apply(1, &loader.received_body()).unwrap();
            }
            again.apply(cut as u64 + 1, &body[cut..]).unwrap();
            assert_eq!(again.finish().unwrap(), ribbon, "cut {cut}");
        }
    }

    #[test]
    fn chunks_split_anywhere_load_in_order_only() {
        let hashes: Vec<u64> = (0..600).collect(); // crowded: many bumped hashes
        let ribbon = build(hashes, 0.01).unwrap();
        let (header, chunks) = walk(&ribbon);
        let body: Vec<u8> = chunks.concat_body();
        // Odd pieces (3, 5, 7 … bytes) starting anywhere in a word load the same filter.
        let mut pieces = Vec::new();
        let (mut at, mut len) = (0usize, 3usize);
        while at < body.len() {
            let end = body.len().min(at + len);
            pieces.push((at as u64 + 1, body[at..end].to_vec()));
            at = end;
            len += 2;
        }
        assert_eq!(load(&header, &pieces).unwrap(), ribbon);
        // Out of order, repeated, empty, past the end, or finished early: refused, unchanged.
        let mut loader = Loader::new(&header, u64::MAX).unwrap();
        loader.apply(1, &body[..8]).unwrap();
        for (position, data) in [
            (1, &body[..8]),
            (17, &body[16..24]),
            (9, &body[8..8]),
            (9, &body[8..]),
        ] {
            let mut longer = data.to_vec();
            if data.len() == body.len() - 8 {
                longer.push(0); // one byte past the end
            }
            assert_eq!(loader.apply(position, &longer), Err(ChunkError::Position));
            assert_eq!(loader.next_position(), 9);
        }
        assert_eq!(loader.finish().unwrap_err(), ChunkError::Incomplete);
        // Bumped hashes out of order: refused when the body completes.
        let words = ribbon.words().len() * 8;
        let mut swapped = body.clone();
        swapped[words..words + 16].rotate_left(8);
        let mut loader = Loader::new(&header, u64::MAX).unwrap();
        assert_eq!(loader.apply(1, &swapped), Err(ChunkError::Bumped));
    }

    #[test]
    fn headers_are_validated_before_allocating() {
        let (_, ribbon) = built("hdr", 1_000, 0.01);
        let good = encode_header(&ribbon);
        let body = body_bytes(&ribbon);
        assert!(Loader::new(&good, body).is_ok());
        assert_eq!(
            Loader::new(&good, body - 1).unwrap_err(),
            HeaderError::TooLarge
        );
        let with = |at: usize, bytes: &[u8]| {
            let mut h = good;
            h[at..at + bytes.len()].copy_from_slice(bytes);
            Loader::new(&h, u64::MAX).map(|_| ())
        };
        use HeaderError::*;
        for (what, at, bytes, want) in [
            ("version 2", 0, vec![2], Invalid),
            ("error rate 0", 1, 0f64.to_le_bytes().to_vec(), Invalid),
            ("error rate 1", 1, 1f64.to_le_bytes().to_vec(), Invalid),
            (
                "error rate NaN",
                1,
                f64::NAN.to_le_bytes().to_vec(),
                Invalid,
            ),
            (
                "items past the most",
                9,
                (MAX_ITEMS + 1).to_le_bytes().to_vec(),
                Invalid,
            ),
            ("no blocks", 17, 0u64.to_le_bytes().to_vec(), Invalid),
            (
                "2^62 blocks",
                17,
                (1u64 << 62).to_le_bytes().to_vec(),
                TooLarge,
            ),
            ("no result bits", 25, 0u32.to_le_bytes().to_vec(), Invalid),
            ("33 result bits", 25, 33u32.to_le_bytes().to_vec(), Invalid),
            (
                "upper past the end",
                29,
                u64::MAX.to_le_bytes().to_vec(),
                Invalid,
            ),
            (
                "more bumped than items",
                41,
                1_001u64.to_le_bytes().to_vec(),
                Invalid,
            ),
        ] {
            assert_eq!(with(at, &bytes), Err(want), "{what}");
        }
        assert_eq!(Loader::new(&good[..48], u64::MAX).unwrap_err(), Invalid);
        let mut long = good.to_vec();
        long.push(0);
        assert_eq!(Loader::new(&long, u64::MAX).unwrap_err(), Invalid);
    }

    trait ConcatBody {
        fn concat_body(&self) -> Vec<u8>;
    }
    impl ConcatBody for Vec<(u64, Vec<u8>)> {
        fn concat_body(&self) -> Vec<u8> {
            self.iter().flat_map(|(_, c)| c.iter().copied()).collect()
        }
    }
}

#[test]
fn batch_answers_are_the_item_by_item_answers() {
    // Batches shorter than, equal to and longer than the prefetch ring, members and strangers
    // interleaved, on filters with and without upper blocks.
    for (n, error_rate) in [(20_000, 0.01), (3_000, 0.001), (500, 0.5)] {
        let (set, ribbon) = built("batch", n, error_rate);
        let strangers = items("batch-stranger", n);
        let mixed: Vec<&[u8]> = set
            .iter()
            .zip(&strangers)
            .flat_map(|(a, b)| [a.as_slice(), b.as_slice()])
            .collect();
        for len in [
            0,
            1,
            QUERY_PREFETCH - 1,
            QUERY_PREFETCH,
            QUERY_PREFETCH + 1,
            1000,
            mixed.len(),
        ] {
            let batch = &mixed[..len];
            let mut got = Vec::with_capacity(len);
            ribbon.contains_many(batch.iter().copied(), |b| got.push(b));
            let want: Vec<bool> = batch.iter().map(|i| ribbon.contains(i)).collect();
            assert_eq!(got, want, "n={n} ε={error_rate} len={len}");
        }
        let mut found = 0;
        ribbon.contains_many(set.iter().map(Vec::as_slice), |b| found += u64::from(b));
        assert_eq!(found, n, "no false negative in a batch");
    }
}

/// The solution's answer for `hash` computed the plain way: the 128 slots from the start slot
/// as one window per column, masked by the coefficient row, one parity per column.
fn solves_by_window(ribbon: &Ribbon, hash: u64) -> bool {
    let row = Row::of(hash, &ribbon.shape, ribbon.seed);
    let (block, shift) = (row.start / WIDTH, (row.start % WIDTH) as u32);
    let columns = ribbon.shape.columns_of(block) as usize;
    let base = ribbon.shape.word_offset(block) as usize;
    let column = |at: usize| u128::from(ribbon.words[at]) | u128::from(ribbon.words[at + 1]) << 64;
    (0..columns).all(|j| {
        let here = column(base + 2 * j);
        let window = if shift == 0 {
            here
        } else {
            (here >> shift) | (column(base + 2 * columns + 2 * j) << (128 - shift))
        };
        (window & row.coefficients).count_ones() & 1 == (row.result >> j) & 1
    })
}

#[test]
fn the_solution_answers_as_the_plain_window_computation() {
    // Shapes of 1 to 30 columns (more than 8 and 16: several groups of parities), with and
    // without upper blocks; members (all true) and strangers (true about ε of the time).
    for (n, error_rate) in [(5_000, 0.5), (20_000, 0.01), (3_000, 0.0001), (2_000, 1e-9)] {
        let (set, ribbon) = built("window", n, error_rate);
        let strangers = items("window-stranger", 20_000);
        let mut yes = 0;
        for item in set.iter().chain(&strangers) {
            let hash = item_hash(item);
            let want = solves_by_window(&ribbon, hash);
            assert_eq!(ribbon.solves(hash), want, "n={n} ε={error_rate}");
            yes += u64::from(want);
        }
        assert!(
            yes >= n - ribbon.bumped().len() as u64,
            "members solve: n={n}"
        );
    }
}
