//! Batch lookups of a cuckoo filter (`CF.MEXISTS`): the same answers as
//! [`Cuckoo::contains_lookup`] item by item, with the cache misses of many items overlapped.
//!
//! An item's lookup reads two buckets (a few bytes each) in every sub-filter: in a big table
//! each is a cache miss, and item by item the CPU waits for them one after the other. Here a
//! part of the batch ([`BATCH_ITEMS`] items) is hashed first, in one tight loop, and then
//! answered in order while the buckets of the item [`PREFETCH_DISTANCE`] places ahead are
//! prefetched in every sub-filter big enough to be out of cache
//! ([`PREFETCH_MIN_BYTES`]), so that about that many items' reads are in flight at once.
//! Prefetching is only a hint: it changes no answer.

use super::{reduce, Cuckoo, Lookup, Shape, SubFilter};
use crate::chain::{BATCH_ITEMS, PREFETCH_MIN_BYTES};
use prefetch_index::prefetch_index;

/// How many items ahead of the one being answered the buckets are prefetched. Each item
/// needs two lines per big sub-filter, so 16 items keep about 32 reads in flight.
pub const PREFETCH_DISTANCE: usize = 16;

/// Bytes of a cache line (for a bucket that straddles two).
const LINE: usize = 64;

/// Whether bucket `index` (unreduced) of `f` (of shape `b`) holds `fp`.
#[inline]
fn bucket_has(f: &SubFilter, b: Shape, index: u64, fp: u8) -> bool {
    let s = reduce(index, b.buckets) as usize * b.size;
    f.data()[s..s + b.size].contains(&fp)
}

/// Starts loading the cache line(s) of bucket `index` (unreduced) of `f`.
#[inline]
fn prefetch_bucket(f: &SubFilter, b: Shape, index: u64) {
    let s = reduce(index, b.buckets) as usize * b.size;
    prefetch_index(f.data(), s);
    if s % LINE + b.size > LINE {
        prefetch_index(f.data(), s + b.size - 1);
    }
}

/// Sub-filters whose shapes a batch computes once (on the stack: a batch allocates nothing);
/// later ones, only in filters grown that far, each time.
const CACHED_SHAPES: usize = 8;

/// The shapes of a filter's first [`CACHED_SHAPES`] sub-filters.
struct Shapes([Shape; CACHED_SHAPES]);

impl Shapes {
    fn of(cf: &Cuckoo) -> Shapes {
        let mut s = [Shape {
            buckets: 1,
            size: 1,
        }; CACHED_SHAPES];
        for (i, (b, f)) in s.iter_mut().zip(cf.filters.iter()).enumerate() {
            *b = cf.shape_of(i, f);
        }
        Shapes(s)
    }

    #[inline]
    fn get(&self, cf: &Cuckoo, i: usize, f: &SubFilter) -> Shape {
        self.0.get(i).copied().unwrap_or_else(|| cf.shape_of(i, f))
    }
}

/// [`Cuckoo::contains_lookup`], written out here so that the batch and item-by-item paths
/// visibly test the same slots: any sub-filter holding the fingerprint in bucket `h1` or `h2`.
#[inline]
fn has(cf: &Cuckoo, shapes: &Shapes, l: &Lookup) -> bool {
    cf.filters.iter().enumerate().any(|(i, f)| {
        let b = shapes.get(cf, i, f);
        bucket_has(f, b, l.h1, l.fp) || bucket_has(f, b, l.h2, l.fp)
    })
}

/// Answers prepared lookups: `found[i]` = [`Cuckoo::contains_lookup`]`(&lookups[i])`, with the
/// buckets of big sub-filters prefetched [`PREFETCH_DISTANCE`] lookups ahead. `found` must be
/// as long as `lookups` (extra entries on either side are left alone).
pub fn contains_lookups(cf: &Cuckoo, lookups: &[Lookup], found: &mut [bool]) {
    let n = lookups.len().min(found.len());
    let shapes = Shapes::of(cf);
    // The sub-filters worth prefetching (small ones stay in cache): none for a small filter.
    let big = |f: &SubFilter| f.bytes() >= PREFETCH_MIN_BYTES;
    if !cf.filters.iter().any(big) {
        for (f, l) in found[..n].iter_mut().zip(lookups) {
            *f = has(cf, &shapes, l);
        }
        return;
    }
    let prefetch = |l: &Lookup| {
        for (i, f) in cf.filters.iter().enumerate().filter(|(_, f)| big(f)) {
            let b = shapes.get(cf, i, f);
            prefetch_bucket(f, b, l.h1);
            prefetch_bucket(f, b, l.h2);
        }
    };
    lookups[..n.min(PREFETCH_DISTANCE)]
        .iter()
        .for_each(prefetch);
    for i in 0..n {
        if i + PREFETCH_DISTANCE < n {
            prefetch(&lookups[i + PREFETCH_DISTANCE]);
        }
        found[i] = has(cf, &shapes, &lookups[i]);
    }
}

/// Checks `count` items (`item_of(index)` gives each), calling `answer(index, present)` in
/// order; the answers are exactly [`Cuckoo::contains`]'s (the batch entry point of
/// `CF.MEXISTS`). A filter with a sub-filter of at least [`PREFETCH_MIN_BYTES`] is checked
/// by [`contains_lookups`], [`BATCH_ITEMS`] items at a time, so a batch of any length takes
/// bounded memory (one part's lookups and one flag per item of the part, on the stack: it
/// allocates nothing); a smaller one (in cache) item by item.
pub fn contains_each<T: AsRef<[u8]>>(
    cf: &Cuckoo,
    count: usize,
    mut item_of: impl FnMut(usize) -> T,
    mut answer: impl FnMut(usize, bool),
) {
    if !cf.filters.iter().any(|f| f.bytes() >= PREFETCH_MIN_BYTES) {
        // All in cache: item by item, nothing to overlap.
        for i in 0..count {
            answer(i, cf.contains(item_of(i).as_ref()));
        }
        return;
    }
    let mut found = [false; BATCH_ITEMS];
    let mut lookups = [Lookup::from_hash(0); BATCH_ITEMS];
    for first in (0..count).step_by(BATCH_ITEMS) {
        let part = (count - first).min(BATCH_ITEMS);
        for (i, l) in lookups[..part].iter_mut().enumerate() {
            *l = Lookup::of(item_of(first + i).as_ref());
        }
        contains_lookups(cf, &lookups[..part], &mut found[..part]);
        for (i, f) in found[..part].iter().enumerate() {
            answer(first + i, *f);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuckoo::Insert;

    fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| format!("{prefix}{i}").into_bytes())
            .collect()
    }

    fn check_same(cf: &Cuckoo, probes: &[Vec<u8>]) {
        let mut got = vec![None; probes.len()];
        contains_each(
            cf,
            probes.len(),
            |i| &probes[i],
            |i, p| {
                assert!(got[i].replace(p).is_none(), "answered twice");
            },
        );
        for (p, g) in probes.iter().zip(&got) {
            assert_eq!(*g, Some(cf.contains(p)), "{p:?}");
        }
    }

    #[test]
    fn same_answers_as_item_by_item_on_small_and_big_filters() {
        // (capacity, bucket size, expansion, items): in cache, several sub-filters, and
        // tables of at least PREFETCH_MIN_BYTES (the prefetching path), one and several.
        for (capacity, bs, expansion, n) in [
            (64u64, 2u16, 1u16, 500usize),
            (1000, 4, 2, 3000),
            (1000, 3, 1, 2500),
            (1 << 21, 1, 0, 1_000_000),
            (1 << 20, 2, 2, 1_500_000),
        ] {
            let mut cf = Cuckoo::new(capacity, bs, 20, expansion, u64::MAX).unwrap();
            let added = items("a", n);
            let mut stored = Vec::new();
            for it in &added {
                if cf.insert(it, false, u64::MAX) == Insert::Inserted {
                    stored.push(it.clone());
                }
            }
            let mut probes = stored.clone();
            probes.extend(items("never", 5000));
            check_same(&cf, &probes);
            // No false negatives through the batch path either.
            let mut all = true;
            contains_each(&cf, stored.len(), |i| &stored[i], |_, p| all &= p);
            assert!(all, "capacity {capacity}: an added item answered absent");
        }
    }

    #[test]
    fn empty_and_odd_lengths() {
        let cf = Cuckoo::new(100, 2, 20, 1, u64::MAX).unwrap();
        contains_each(&cf, 0, |_| &[][..], |_, _| panic!("no items"));
        for n in [
            1,
            BATCH_ITEMS - 1,
            BATCH_ITEMS,
            BATCH_ITEMS + 1,
            3 * BATCH_ITEMS + 7,
        ] {
            let probes = items("p", n);
            check_same(&cf, &probes);
        }
    }
}
