//! Criterion benchmarks of the pure core's Ribbon filters. Run: `cargo bench --bench ribbon`.
//! The build of 1e7 items allocates about 300 MiB while it runs.

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use redis_bf_core::ribbon::{build, item_hash, Ribbon};

fn hashes(prefix: &str, n: u64) -> Vec<u64> {
    (0..n)
        .map(|i| item_hash(format!("{prefix}:{i}").as_bytes()))
        .collect()
}

/// Building from hashed items (sorting included), items per second, one thread.
fn building(c: &mut Criterion) {
    let mut g = c.benchmark_group("ribbon_build");
    g.sample_size(10);
    for n in [100_000u64, 1_000_000, 10_000_000] {
        let set = hashes("item", n);
        g.throughput(Throughput::Elements(n));
        g.bench_with_input(BenchmarkId::from_parameter(n), &set, |b, set| {
            b.iter_batched(
                || set.clone(),
                |set| build(set, 0.01).unwrap(),
                BatchSize::PerIteration,
            )
        });
    }
    g.finish();
}

/// Checks of 4096 items a batch on a filter in cache (1e4 items) and far beyond it (1e7
/// items, 8.3 MiB; 1e8 with `RIBBON_BENCH_BIG=1`, 83 MiB and a minute to build), members
/// and items never added.
fn querying(c: &mut Criterion) {
    let mut g = c.benchmark_group("ribbon_contains");
    let mut sizes = vec![10_000u64, 10_000_000];
    if std::env::var_os("RIBBON_BENCH_BIG").is_some() {
        sizes.push(100_000_000);
    }
    for n in sizes {
        let members = hashes("item", n);
        let ribbon: Ribbon = build(members.clone(), 0.01).unwrap();
        let absent = hashes("probe", 1 << 16);
        for (kind, probes) in [("members", &members), ("absent", &absent)] {
            g.throughput(Throughput::Elements(4096));
            let mut at = 0;
            g.bench_function(BenchmarkId::new(kind, n), |b| {
                b.iter(|| {
                    let from = at % (probes.len() - 4096).max(1);
                    at += 4096;
                    probes[from..from + 4096.min(probes.len())]
                        .iter()
                        .filter(|&&h| ribbon.contains_hash(h))
                        .count()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, building, querying);
criterion_main!(benches);
