//! `CF.LOADCHUNK` on the core: `dump::parse_header` / `decode_header` (iterator 1, the 38-byte
//! header) under a small memory budget, then `dump::scan` at arbitrary positions and
//! `apply_chunk` with arbitrary positions and chunks, then the module's operations.
//!
//! Input: byte 0: bit 0 picks RedisBloom 8's expansion limit (32768) or 2.8's (none), bit 1
//! replaces a refused header by a fixed two-sub-filter filter (so chunks always land
//! somewhere); then 38 header bytes (fewer: `Invalid header`); then records `u8 kind, i64 LE
//! pos, u16 LE len, bytes`: kind even = a chunk at `pos`, odd = SCANDUMP at `pos`; a kind of
//! 0xff ends the records, the rest being operations (see `cuckoo_common::exercise`). Nothing
//! may allocate more than [`cuckoo_common::MEMORY_BOUND`] of tables; an accepted chunk lands
//! exactly where SCANDUMP reads it back; a refused one changes nothing.
#![no_main]

#[path = "cuckoo_common.rs"]
mod cuckoo_common;

use cuckoo_common::MEMORY_BOUND;
use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::cuckoo::dump::{self, HeaderLimits, Scan, HEADER_BYTES};
use redis_bf::bloom::cuckoo::{Cuckoo, Insert};

fn fallback() -> Cuckoo {
    let mut cf = Cuckoo::new(8, 2, 20, 2, u64::MAX).expect("fixed filter");
    let mut i = 0u32;
    while cf.filters.len() < 2 {
        assert_eq!(
            cf.insert(&i.to_le_bytes(), false, u64::MAX),
            Insert::Inserted
        );
        i += 1;
    }
    cf
}

/// Bytes `start..start + len` of the tables laid end to end, if they lie in one sub-filter;
/// for a start past the end, bytes `start - total ..` of the last sub-filter (where
/// LOADCHUNK writes such a chunk).
fn read_at(cf: &Cuckoo, start: u64, len: usize) -> Option<&[u8]> {
    let mut base = 0u64;
    for f in &cf.filters {
        let n = f.bytes();
        if start >= base && start < base + n {
            let off = (start - base) as usize;
            return f.data().get(off..off + len);
        }
        base += n;
    }
    // Past the end: LOADCHUNK keeps the offset it has left after subtracting every
    // sub-filter, and writes at that offset of the last one.
    let last = cf.filters.last()?;
    let off = usize::try_from(start - base).ok()?;
    last.data().get(off..off.checked_add(len)?)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let limits = if mode & 1 != 0 {
        HeaderLimits {
            max_expansion: 32768,
        }
    } else {
        cuckoo_common::LIMITS
    };
    let (head, mut rest) = rest.split_at(rest.len().min(HEADER_BYTES));
    let decoded = dump::parse_header(head).and_then(|h| {
        let cf = dump::decode_header(&h, limits, MEMORY_BOUND)?;
        // What was accepted is what the header said, within the budget and the limits.
        // The sub-filter count is kept in 16 bits (as RedisBloom stores it): its upper six
        // bytes are not sent back.
        let mut expected = [0u8; HEADER_BYTES];
        expected.copy_from_slice(head);
        expected[26..32].fill(0);
        assert_eq!(dump::encode_header(&cf), expected, "header round trip");
        assert!(cf.table_bytes() <= MEMORY_BOUND);
        assert!(cf.expansion <= limits.max_expansion);
        assert!(cf.buckets().is_power_of_two());
        assert!(cuckoo_common::conforming(&cf));
        cuckoo_common::invariants(&cf);
        Some(cf)
    });
    let mut cf = match decoded {
        Some(cf) => cf,
        None if mode & 2 != 0 => fallback(),
        None => return,
    };
    let total = cf.table_bytes();
    let shape: Vec<u64> = cf.bucket_counts().collect();
    while let [kind, tail @ ..] = rest {
        if *kind == 0xff || tail.len() < 10 {
            rest = if *kind == 0xff { tail } else { &[] };
            break;
        }
        let pos = i64::from_le_bytes(tail[..8].try_into().unwrap());
        let len = usize::from(u16::from_le_bytes([tail[8], tail[9]])).min(tail.len() - 10);
        let chunk = &tail[10..10 + len];
        rest = &tail[10 + len..];
        if kind % 2 == 1 {
            match dump::scan(&cf, pos) {
                Scan::Header(h) => {
                    assert_eq!(pos, 0);
                    assert_eq!(h, dump::encode_header(&cf));
                }
                Scan::Chunk(next, d) => {
                    assert!(pos != 0 && !d.is_empty());
                    assert!(next > pos);
                    assert!(d.len() as u64 <= total);
                }
                Scan::End => assert!(pos != 0 || cf.items == 0),
            }
            continue;
        }
        let before = cf.clone();
        match dump::apply_chunk(&mut cf, pos, chunk) {
            Ok(()) => {
                let start = (i128::from(pos) - len as i128 - 1) as u64;
                assert_eq!(
                    read_at(&cf, start, len),
                    Some(chunk),
                    "chunk landed elsewhere"
                );
                let shape_now: Vec<u64> = cf.bucket_counts().collect();
                assert_eq!(shape_now, shape);
                assert_eq!((cf.items, cf.deletes), (before.items, before.deletes));
            }
            Err(_) => assert_eq!(cf, before, "a refused chunk changed the filter"),
        }
    }
    assert_eq!(cf.table_bytes(), total);
    let budget = MEMORY_BOUND.max(total);
    cuckoo_common::exercise(&mut cf, rest, budget);
    assert!(cf.table_bytes() <= budget, "grew beyond the budget");
});
