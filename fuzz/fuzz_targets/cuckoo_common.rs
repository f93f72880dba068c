//! Shared checks of the cuckoo fuzz targets: the invariants every decoded cuckoo filter must
//! keep, and the operations the module runs on one after an RDB load / RESTORE or a
//! LOADCHUNK (adds with a bounded growth budget, ADDNX, lookups, counts, deletions,
//! compaction, a SCANDUMP walk reloaded into a copy, an RDB round trip).
#![allow(dead_code)]

use redis_bf::bloom::cuckoo::dump::{self, HeaderLimits, Scan, MAX_CHUNK_BYTES};
use redis_bf::bloom::cuckoo::{rdb, Cuckoo, Insert};
use redis_bf::bloom::rdb::Values;

/// Largest table total the chunk target lets a header allocate (256 KiB).
pub const MEMORY_BOUND: u64 = 256 << 10;

/// Operations run on one filter at most (each may copy it, to check a refusal changed
/// nothing).
const MAX_OPS: usize = 256;

/// The loosest header limits (RedisBloom 2.8's: any 16-bit expansion).
pub const LIMITS: HeaderLimits = HeaderLimits {
    max_expansion: u16::MAX,
};

/// Whether every sub-filter has the `buckets × expansion^i` buckets a header implies (what
/// growth makes; an RDB value may announce other power-of-two counts, which no SCANDUMP
/// header can describe).
pub fn conforming(cf: &Cuckoo) -> bool {
    cf.filters
        .iter()
        .enumerate()
        .all(|(i, f)| cf.buckets_of(i) == Some(f.buckets(cf.bucket_size)))
}

/// Sub-filters past which a filter is not walked (a bound on the time of one input).
const MAX_WALKED_SUB_FILTERS: usize = 2048;

/// The SCANDUMP walk of `cf` loaded by LOADCHUNK into the filter its header describes (None
/// for a filter with no items: SCANDUMP answers `[0, nil]` at once). Checks each chunk: never
/// empty, at most [`MAX_CHUNK_BYTES`] unless a whole sub-filter, positions increasing, and
/// the chunks covering every table byte once. (None too past [`MAX_WALKED_SUB_FILTERS`].)
pub fn walk_reload(cf: &Cuckoo) -> Option<Cuckoo> {
    if cf.filters.len() > MAX_WALKED_SUB_FILTERS {
        return None;
    }
    let h = match dump::scan(cf, 0) {
        Scan::End => {
            assert_eq!(
                cf.items, 0,
                "SCANDUMP 0 ends only for a filter with no items"
            );
            return None;
        }
        Scan::Header(h) => h,
        Scan::Chunk(..) => panic!("SCANDUMP 0 answered a chunk"),
    };
    let header = dump::parse_header(&h).expect("our own header parses");
    assert_eq!(dump::encode_header(cf), h);
    let mut copy = dump::decode_header(&header, LIMITS, u64::MAX)
        .expect("the header of a conforming filter decodes");
    let mut pos = 1i64;
    let mut total = 0u64;
    loop {
        match dump::scan(cf, pos) {
            Scan::Chunk(next, data) => {
                assert!(!data.is_empty());
                assert_eq!(next, pos + data.len() as i64);
                assert!(data.len() as u64 <= MAX_CHUNK_BYTES);
                dump::apply_chunk(&mut copy, next, data).expect("LOADCHUNK of its own chunk");
                total += data.len() as u64;
                pos = next;
            }
            Scan::End => break,
            Scan::Header(_) => panic!("SCANDUMP {pos} answered a header"),
        }
    }
    assert_eq!(total, cf.table_bytes(), "the walk covers every table byte");
    Some(copy)
}

/// RDB save then load (version 4): the same filter.
pub fn rdb_round_trip(cf: &Cuckoo) {
    let mut v = Values::default();
    rdb::save(cf, &mut v);
    let back = rdb::load(&mut v, rdb::ENCODING_VERSION).expect("a saved filter loads");
    assert_eq!(&back, cf, "RDB round trip");
    assert_eq!(v.pos, v.values.len(), "load reads exactly what save wrote");
}

/// The structural invariants of an accepted filter.
pub fn invariants(cf: &Cuckoo) {
    assert!(!cf.filters.is_empty(), "a filter has a sub-filter");
    assert!(cf.filters.len() <= 65535);
    assert!((1..=255).contains(&cf.bucket_size));
    assert!(cf.max_iterations >= 1);
    for (f, n) in cf.filters.iter().zip(cf.bucket_counts()) {
        assert!(n > 0);
        assert_eq!(f.data().len() as u64, n * u64::from(cf.bucket_size));
    }
    assert_eq!(
        cf.mem_usage(),
        40 + 16 * cf.filters.len() as u64 + cf.table_bytes()
    );
}

/// Runs the module's operations on an accepted filter. `ops` picks items (1–3 byte pieces)
/// and what to do with each; `budget` bounds the bytes of all tables (growth included).
pub fn exercise(cf: &mut Cuckoo, ops: &[u8], budget: u64) {
    invariants(cf);
    rdb_round_trip(cf);
    if conforming(cf) {
        if let Some(copy) = walk_reload(cf) {
            assert_eq!(&copy, cf, "SCANDUMP → LOADCHUNK round trip");
        }
    }
    // Items we added and did not delete (a multiset): deleting only these, none is ever lost,
    // whatever fingerprints the decoded tables held before — where every sub-filter's bucket
    // count is a power of two. A crafted header with another expansion gives other counts,
    // where one deletion can clear another item's copy (as in RedisBloom: bucket pairs of one
    // fingerprint can overlap in one bucket, `bucket_pairs_overlap_partly_only_without_a_power
    // _of_two`): there what was added is no longer vouched for after a deletion.
    let mut added: Vec<Vec<u8>> = Vec::new();
    let pow2 = |cf: &Cuckoo| cf.bucket_counts().all(u64::is_power_of_two);
    let mut ops_done = 0usize;
    for op in ops.chunks(2).take(MAX_OPS) {
        let (code, item) = (op[0], vec![op.get(1).copied().unwrap_or(0) & 0x3f]);
        let before_items = cf.items;
        match code % 5 {
            0 | 1 => {
                let unique = code % 5 == 1;
                let present = cf.contains(&item);
                let room = budget.saturating_sub(cf.table_bytes());
                let before = (code & 0x80 == 0).then(|| cf.clone());
                let r = cf.insert(&item, unique, room);
                assert!(
                    cf.table_bytes() <= budget.max(cf.filters[0].bytes()),
                    "over budget"
                );
                match r {
                    Insert::Inserted => {
                        assert!(!(unique && present));
                        assert!(cf.contains(&item));
                        assert_eq!(cf.items, before_items.wrapping_add(1));
                        added.push(item);
                    }
                    Insert::Exists => {
                        assert!(unique && present);
                        if let Some(b) = before {
                            assert_eq!(&b, cf, "ADDNX of an existing item changed the filter");
                        }
                    }
                    Insert::Full | Insert::CannotGrow => {
                        assert!(!(r == Insert::Full && cf.expansion != 0));
                        if let Some(b) = before {
                            assert_eq!(&b, cf, "a refused insertion changed the filter");
                        }
                    }
                }
            }
            2 => {
                // Delete one of ours (by position), which must be found.
                if !added.is_empty() {
                    let it = added
                        .swap_remove(usize::from(op.get(1).copied().unwrap_or(0)) % added.len());
                    let vouched = pow2(cf);
                    let (found, freed) = cf.delete(&it);
                    assert!(found, "an added item was not found by CF.DEL");
                    assert_eq!(cf.items, before_items.wrapping_sub(1));
                    for f in &freed {
                        assert!(f.is_empty(), "compaction freed a non-empty sub-filter");
                    }
                    if !vouched {
                        added.clear();
                    }
                }
            }
            3 => {
                let n = cf.filters.len();
                let freed = cf.compact(code & 0x80 != 0);
                assert_eq!(cf.filters.len() + freed.len(), n);
                assert!(!cf.filters.is_empty());
                assert_eq!(cf.deletes, 0);
                assert_eq!(cf.items, before_items);
            }
            _ => {
                let c = cf.count(&item);
                let mine = added.iter().filter(|a| **a == item).count() as u64;
                assert!(c >= mine, "CF.COUNT {c} < {mine} copies added");
                assert_eq!(cf.contains(&item), c > 0);
            }
        }
        // Every item after each step while few; else a rotating eighth of them (all at the
        // end), so that long inputs stay fast.
        let n = added.len();
        let step = if n <= 32 { 1 } else { 8 };
        for a in added.iter().skip(ops_done % step).step_by(step) {
            assert!(cf.contains(a), "false negative for {a:?}");
        }
        ops_done += 1;
    }
    for a in &added {
        assert!(cf.contains(a), "false negative for {a:?}");
    }
    invariants(cf);
    rdb_round_trip(cf);
    if conforming(cf) {
        if let Some(copy) = walk_reload(cf) {
            assert_eq!(
                &copy, cf,
                "SCANDUMP → LOADCHUNK round trip after the operations"
            );
        }
    }
}
