//! Criterion benchmarks of the pure core. Run: `cargo bench --bench core`; one family's groups:
//! `cargo bench --bench core -- bloom_` or `-- cuckoo_` (`hash64_pair` is the shared hashing).
//! Large cases (1e8-item layer, 100 MiB encodings) allocate about 120 MiB each.

use criterion::measurement::WallTime;
use criterion::{
    criterion_group, criterion_main, BatchSize, BenchmarkGroup, BenchmarkId, Criterion, Throughput,
};
use redis_bf::bloom::chain::AddOutcome;
use redis_bf::bloom::cuckoo::{batch, Cuckoo, Insert};
use redis_bf::bloom::dump::{apply_chunk, decode_header, encode_header, walk};
use redis_bf::bloom::hash::HashPair;
use redis_bf::bloom::rdb::{load, save, Values};
use redis_bf::bloom::Chain;

/// A deterministic pseudo-random generator (xorshift64*), so runs are repeatable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545f4914f6cdd1d)
    }
}

/// A one-layer filter sized for `capacity` items at 0.01 whose bits are half set, as a full
/// filter's are (filling it item by item would take minutes at 1e8).
fn half_full(capacity: u64) -> Chain {
    let mut c = Chain::new(capacity, 0.01, 2, false, u64::MAX).unwrap();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    for chunk in c.layers[0].data.chunks_mut(8) {
        let v = (rng.next() & rng.next() | rng.next() & rng.next()).to_le_bytes();
        chunk.copy_from_slice(&v[..chunk.len()]);
    }
    c.layers[0].size = capacity;
    c.size = capacity;
    c
}

fn probes(n: usize) -> Vec<HashPair> {
    (0..n)
        .map(|i| HashPair::hash64(format!("probe:{i}").as_bytes()))
        .collect()
}

fn hashing(c: &mut Criterion) {
    let mut g = c.benchmark_group("hash64_pair");
    for len in [8usize, 16, 64, 1024] {
        let item = vec![0xabu8; len];
        g.throughput(Throughput::Bytes(len as u64));
        g.bench_with_input(BenchmarkId::from_parameter(len), &item, |b, item| {
            b.iter(|| HashPair::hash64(std::hint::black_box(item)))
        });
    }
    g.finish();
}

/// Check and set per item on one layer in cache (1e4 items) and far beyond it (1e8 items,
/// 132 MiB). Every iteration takes 4096 fresh items (hashed outside the timing), so the large
/// layer's lines are not warm from the previous iteration.
fn layer_ops(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom_layer");
    for capacity in [10_000u64, 100_000_000] {
        let chain = half_full(capacity);
        let mut layer = chain.layers[0].clone();
        let mut rng = Rng(capacity);
        let mut fresh = move || -> Vec<HashPair> {
            (0..4096)
                .map(|_| HashPair::hash64(&rng.next().to_le_bytes()))
                .collect()
        };
        g.throughput(Throughput::Elements(4096));
        g.bench_function(BenchmarkId::new("check_per_item", capacity), |b| {
            b.iter_batched_ref(
                &mut fresh,
                |hs: &mut Vec<HashPair>| hs.iter().filter(|h| layer.contains(h)).count(),
                BatchSize::SmallInput,
            )
        });
        g.bench_function(BenchmarkId::new("set_per_item", capacity), |b| {
            b.iter_batched_ref(
                &mut fresh,
                |hs: &mut Vec<HashPair>| hs.iter().for_each(|h| layer.set(h)),
                BatchSize::SmallInput,
            )
        });
    }
    g.finish();
}

/// Benchmarks `routine` on a fresh batch of items from `fresh` every iteration (made outside
/// the timing).
fn on_fresh_items(
    g: &mut BenchmarkGroup<'_, WallTime>,
    name: &str,
    fresh: &mut impl FnMut() -> Vec<Vec<u8>>,
    mut routine: impl FnMut(&mut Vec<Vec<u8>>) -> usize,
) {
    g.bench_function(name, |b| {
        b.iter_batched_ref(&mut *fresh, &mut routine, BatchSize::SmallInput)
    });
}

/// The batch benchmark: 1000 items per call on a 1e8-item filter (132 MiB, far beyond the
/// caches), the batch path (hash the batch, then `contains_many` / `add_many` with prefetching)
/// against a straightforward loop (`contains` / `add` per item) over the same items.
fn batch_1000(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom_batch_1000_items_1e8_filter");
    g.throughput(Throughput::Elements(1000));
    let mut chain = half_full(100_000_000);
    // Room to add: the bits stay half set, the counters say empty.
    chain.layers[0].size = 0;
    chain.size = 0;
    let mut rng = Rng(7);
    let mut fresh_items = move || -> Vec<Vec<u8>> {
        (0..1000)
            .map(|_| format!("user:{:016x}", rng.next()).into_bytes())
            .collect()
    };
    on_fresh_items(&mut g, "mexists_item_by_item", &mut fresh_items, |items| {
        items.iter().filter(|i| chain.contains(i)).count()
    });
    on_fresh_items(&mut g, "mexists_batched", &mut fresh_items, |items| {
        let hashes: Vec<HashPair> = items.iter().map(|i| chain.hash(i)).collect();
        let mut n = 0;
        chain.contains_many(&hashes, |_, p| n += usize::from(p));
        n
    });
    on_fresh_items(&mut g, "madd_item_by_item", &mut fresh_items, |items| {
        items
            .iter()
            .filter(|i| chain.add(i, u64::MAX) == Ok(AddOutcome::Added))
            .count()
    });
    on_fresh_items(&mut g, "madd_batched", &mut fresh_items, |items| {
        let hashes: Vec<HashPair> = items.iter().map(|i| chain.hash(i)).collect();
        let mut n = 0;
        chain.add_many(
            &hashes,
            |_| u64::MAX,
            |_, r| n += usize::from(r == Ok(AddOutcome::Added)),
        );
        n
    });
    g.finish();
}

fn chain_check(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom_chain_check_absent");
    for layers in [1usize, 5, 20] {
        let mut chain = Chain::new(1000, 0.01, 1, false, u64::MAX).unwrap();
        let mut i = 0u64;
        while chain.layers.len() < layers || chain.layers.last().unwrap().size < 1000 {
            chain.add(&i.to_le_bytes(), u64::MAX).unwrap();
            i += 1;
            if chain.layers.len() == layers && chain.needs_new_layer() {
                break;
            }
        }
        let hs = probes(1024);
        g.throughput(Throughput::Elements(hs.len() as u64));
        g.bench_function(BenchmarkId::from_parameter(layers), |b| {
            b.iter(|| hs.iter().filter(|h| chain.contains_hashed(h)).count())
        });
    }
    g.finish();
}

fn encodings(c: &mut Criterion) {
    let mut g = c.benchmark_group("bloom_encoding");
    g.sample_size(10);
    // About 100 MiB of bits: 84e6 items at 0.01 (halved for the first layer).
    let chain = half_full(84_000_000);
    let bytes = chain.bit_array_bytes();
    g.throughput(Throughput::Bytes(bytes));
    g.bench_function("scandump_header_encode", |b| {
        b.iter(|| encode_header(&chain))
    });
    let header = encode_header(&chain);
    g.bench_function("scandump_header_decode_alloc", |b| {
        b.iter(|| decode_header(&header, u64::MAX).unwrap())
    });
    g.bench_function("scandump_walk", |b| {
        b.iter(|| walk(&chain).map(|(_, data)| data.len()).sum::<usize>())
    });
    let mut target = decode_header(&header, u64::MAX).unwrap();
    g.bench_function("loadchunk_walk", |b| {
        b.iter(|| {
            for (next, data) in walk(&chain) {
                apply_chunk(&mut target, next, data).unwrap();
            }
        })
    });
    g.bench_function("rdb_encode", |b| {
        b.iter(|| {
            let mut v = Values::default();
            save(&chain, &mut v);
            v
        })
    });
    let mut encoded = Values::default();
    save(&chain, &mut encoded);
    g.bench_function("rdb_decode", |b| {
        b.iter(|| {
            let mut v = encoded.clone();
            load(&mut v, 4).unwrap()
        })
    });
    g.finish();
}

/// A cuckoo filter made for `capacity` items (bucket size 2, the default), its table filled
/// directly with pseudo-random fingerprints in `capacity / slots` of its slots, as `capacity`
/// insertions would leave it (inserting 1e8 items one by one would take minutes; lookups and
/// insertions see the same occupancy and fingerprint distribution).
fn cuckoo_filled(capacity: u64) -> Cuckoo {
    let mut cf = Cuckoo::new(capacity, 2, 20, 1, u64::MAX).unwrap();
    let slots = cf.table_bytes();
    let keep = (capacity as f64 / slots as f64 * u32::MAX as f64) as u64;
    let mut rng = Rng(0x2545f4914f6cdd1d);
    for b in cf.filters[0].data_mut().iter_mut() {
        let r = rng.next();
        if (r >> 32) < keep {
            *b = (r % 255 + 1) as u8;
        }
    }
    cf.items = capacity;
    cf
}

/// CF.MEXISTS of the items `fresh` gives on `cf`, two ways: `mexists_{what}_item_by_item`
/// (`contains` per item) and `mexists_{what}_batched` (`cuckoo::batch::contains_each`).
fn cuckoo_mexists(
    g: &mut BenchmarkGroup<'_, WallTime>,
    cf: &Cuckoo,
    what: &str,
    fresh: &mut impl FnMut() -> Vec<Vec<u8>>,
) {
    on_fresh_items(g, &format!("mexists_{what}_item_by_item"), fresh, |items| {
        items.iter().filter(|i| cf.contains(i)).count()
    });
    on_fresh_items(g, &format!("mexists_{what}_batched"), fresh, |items| {
        let mut n = 0;
        batch::contains_each(cf, items.len(), |i| &items[i], |_, p| n += usize::from(p));
        n
    });
}

/// The cuckoo filter (CF.*) operations, 1000 items per call, on a filter in cache (1e4 items,
/// 8 KiB) and on a 1e8-item one (128 MiB, 75 % of its slots used): CF.MEXISTS item by item
/// (what RedisBloom does) against the batch path (`cuckoo::batch::contains_each`), for items
/// never added and for members; CF.ADD, CF.DEL (of the items just added, the adding outside
/// the timing) and CF.COUNT item by item.
fn cuckoo_ops(c: &mut Criterion) {
    for capacity in [10_000u64, 100_000_000] {
        let mut g = c.benchmark_group(format!("cuckoo_1000_items_{capacity:.0e}_filter"));
        g.throughput(Throughput::Elements(1000));
        let mut cf = cuckoo_filled(capacity);
        // Members: 1000 × 64 real items, added over the fill (those the eviction walks place
        // without growing: a few percent of them fail at this load).
        let mut members: Vec<Vec<u8>> = Vec::new();
        let mut m = 0u64;
        while capacity > 100_000 && members.len() < 64_000 {
            let item = format!("member:{m}").into_bytes();
            m += 1;
            if cf.insert(&item, false, 0) == Insert::Inserted {
                members.push(item);
            }
        }
        let mut rng = Rng(capacity ^ 0x5bd1e995);
        let mut fresh_items = move || -> Vec<Vec<u8>> {
            (0..1000)
                .map(|_| format!("user:{:016x}", rng.next()).into_bytes())
                .collect()
        };
        let mut k = 0usize;
        let mut some_members = || -> Vec<Vec<u8>> {
            k = (k + 1) % 64;
            members[k * 1000..(k + 1) * 1000].to_vec()
        };
        cuckoo_mexists(&mut g, &cf, "absent", &mut fresh_items);
        if capacity > 100_000 {
            cuckoo_mexists(&mut g, &cf, "members", &mut some_members);
        }
        on_fresh_items(&mut g, "count_item_by_item", &mut fresh_items, |items| {
            items.iter().map(|i| cf.count(i) as usize).sum()
        });
        // CF.ADD then CF.DEL of the same fresh items: the filter ends as it began.
        g.bench_function("add_item_by_item_then_untimed_del", |b| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let items = fresh_items();
                    let t = std::time::Instant::now();
                    for i in &items {
                        std::hint::black_box(cf.insert(i, false, u64::MAX));
                    }
                    total += t.elapsed();
                    for i in &items {
                        cf.delete(i);
                    }
                }
                total
            })
        });
        g.bench_function("del_item_by_item_after_untimed_add", |b| {
            b.iter_custom(|iters| {
                let mut total = std::time::Duration::ZERO;
                for _ in 0..iters {
                    let items = fresh_items();
                    for i in &items {
                        cf.insert(i, false, u64::MAX);
                    }
                    let t = std::time::Instant::now();
                    for i in &items {
                        std::hint::black_box(cf.delete(i));
                    }
                    total += t.elapsed();
                }
                total
            })
        });
        g.finish();
    }
}

/// CF.COMPACT of a filter of two sub-filters of 64 MiB each (bucket size 2, expansion 1, as a
/// `CF.LOADCHUNK` header makes it, lazily zeroed): the newest never written (compaction reads
/// it all and frees it), and the newest with 1 % of its slots used (they move to the older
/// one; the writing outside the timing).
fn cuckoo_compact(c: &mut Criterion) {
    use redis_bf::bloom::cuckoo::dump::{decode_header, Header, HeaderLimits};
    let mut g = c.benchmark_group("cuckoo_compact_2x64MiB");
    g.sample_size(10);
    let header = Header {
        items: 1,
        buckets: 1 << 25,
        deletes: 0,
        filters: 2,
        bucket_size: 2,
        max_iterations: 20,
        expansion: 1,
    };
    let limits = HeaderLimits {
        max_expansion: u16::MAX,
    };
    g.throughput(Throughput::Bytes(64 << 20));
    for (name, every) in [("newest_never_written", 0usize), ("newest_1pct_used", 100)] {
        g.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let mut cf = decode_header(&header, limits, u64::MAX).unwrap();
                    if every > 0 {
                        let mut rng = Rng(0x5bd1e995);
                        for s in cf.filters[1].data_mut().iter_mut().step_by(every) {
                            *s = (rng.next() % 255 + 1) as u8;
                        }
                    }
                    cf
                },
                |mut cf| cf.compact(true),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    hashing,
    layer_ops,
    batch_1000,
    chain_check,
    encodings,
    cuckoo_ops,
    cuckoo_compact
);
criterion_main!(benches);
