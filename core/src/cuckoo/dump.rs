//! `CF.SCANDUMP` / `CF.LOADCHUNK` of a cuckoo filter (`docs/format.md` ("Cuckoo SCANDUMP")):
//! a 38-byte packed little-endian header for iterator 0, then the sub-filters' tables as
//! chunks addressed by a 1-based byte position over all tables laid end to end.
//!
//! Header: items u64, buckets u64, deletes u64, sub-filters u64, bucket size u16,
//! max iterations u16, expansion u16.

use super::{Cuckoo, SubFilter, MAX_BUCKETS, MAX_SUB_FILTERS};

/// Bytes of the header.
pub const HEADER_BYTES: usize = 38;
/// Largest chunk SCANDUMP returns, in bytes (16 MiB). A sub-filter at most this big is
/// returned whole, whatever the position inside it.
pub const MAX_CHUNK_BYTES: u64 = 16 * 1024 * 1024;

/// A `CF.LOADCHUNK` chunk was refused (`Couldn't load chunk!`); nothing was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkRefused;

/// What `CF.SCANDUMP key pos` answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scan<'a> {
    /// Position 0: `[1, header]`.
    Header([u8; HEADER_BYTES]),
    /// `[next, bytes]`.
    Chunk(i64, &'a [u8]),
    /// `[0, nil]`: past the last sub-filter, or a filter with no items (even at position 0).
    End,
}

/// Encodes the header of `cf`.
pub fn encode_header(cf: &Cuckoo) -> [u8; HEADER_BYTES] {
    let mut out = [0u8; HEADER_BYTES];
    out[0..8].copy_from_slice(&cf.items.to_le_bytes());
    out[8..16].copy_from_slice(&cf.buckets().to_le_bytes());
    out[16..24].copy_from_slice(&cf.deletes.to_le_bytes());
    out[24..32].copy_from_slice(&(cf.filters.len() as u64).to_le_bytes());
    out[32..34].copy_from_slice(&cf.bucket_size.to_le_bytes());
    out[34..36].copy_from_slice(&cf.max_iterations.to_le_bytes());
    out[36..38].copy_from_slice(&cf.expansion.to_le_bytes());
    out
}

/// The fields of a header, as sent (before any validation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Items.
    pub items: u64,
    /// Buckets of the first sub-filter.
    pub buckets: u64,
    /// Deletions since the last compaction.
    pub deletes: u64,
    /// Sub-filters, as sent (64 bits).
    pub filters: u64,
    /// Bucket size.
    pub bucket_size: u16,
    /// Max iterations.
    pub max_iterations: u16,
    /// Expansion.
    pub expansion: u16,
}

/// Parses a header: None unless exactly [`HEADER_BYTES`] long (`Invalid header`).
pub fn parse_header(data: &[u8]) -> Option<Header> {
    if data.len() != HEADER_BYTES {
        return None;
    }
    let u64_at = |i: usize| {
        let mut b = [0u8; 8];
        b.copy_from_slice(&data[i..i + 8]);
        u64::from_le_bytes(b)
    };
    let u16_at = |i: usize| u16::from_le_bytes([data[i], data[i + 1]]);
    Some(Header {
        items: u64_at(0),
        buckets: u64_at(8),
        deletes: u64_at(16),
        filters: u64_at(24),
        bucket_size: u16_at(32),
        max_iterations: u16_at(34),
        expansion: u16_at(36),
    })
}

/// Limits a header must meet, which differ between RedisBloom lines (the module passes its
/// server line's): the ranges of bucket size, max iterations, expansion and sub-filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeaderLimits {
    /// Largest expansion accepted (RedisBloom 8: 32768; 2.8: any 16-bit value).
    pub max_expansion: u16,
}

/// Builds the empty filter a header describes (`CF.LOADCHUNK key 1 header`): its tables
/// zeroed (lazily), to be filled by [`apply_chunk`]. The sub-filter count is read as
/// RedisBloom stores it, in 16 bits; sub-filter `i` has `buckets × expansion^i` buckets.
/// The counters are taken as sent.
///
/// Errors (`Couldn't create filter!`, nothing allocated that stays): bucket size outside
/// 1–255, max iterations 0, expansion above the limit, 0 sub-filters, several with
/// expansion 0, a bucket count of 0, above 2^56 or not a power of two, a sub-filter's bucket
/// count past 2^56, tables above `max_bytes` in all, or an allocation failure.
pub fn decode_header(h: &Header, limits: HeaderLimits, max_bytes: u64) -> Option<Cuckoo> {
    let filters = usize::from(h.filters as u16);
    if h.bucket_size == 0
        || h.bucket_size > super::MAX_BUCKET_SIZE
        || h.max_iterations == 0
        || h.expansion > limits.max_expansion
        || filters == 0
        || filters > MAX_SUB_FILTERS
        || (h.expansion == 0 && filters > 1)
        || h.buckets == 0
        || h.buckets > MAX_BUCKETS
        || !h.buckets.is_power_of_two()
    {
        return None;
    }
    let mut cf = Cuckoo {
        buckets_log2: super::log2_of_buckets(h.buckets),
        items: h.items,
        deletes: h.deletes,
        bucket_size: h.bucket_size,
        max_iterations: h.max_iterations,
        expansion: h.expansion,
        filters: Box::new([]),
    };
    let mut total: u64 = 0;
    let mut sizes = Vec::new();
    for i in 0..filters {
        let buckets = cf.buckets_of(i)?;
        let bytes = buckets.checked_mul(u64::from(h.bucket_size))?;
        total = total.checked_add(bytes)?;
        if total > max_bytes {
            return None;
        }
        sizes.try_reserve(1).ok()?;
        sizes.push(buckets);
    }
    let mut tables = Vec::new();
    tables.try_reserve_exact(filters).ok()?;
    for buckets in sizes {
        tables.push(SubFilter::new(buckets, h.bucket_size).ok()?);
    }
    cf.filters = tables.into_boxed_slice();
    Some(cf)
}

/// What `CF.SCANDUMP key pos` answers for `cf` (see [`Scan`]): at `pos` ≥ 1 the sub-filter
/// holding byte `pos - 1` of the tables laid end to end — whole, with next `pos + its size`,
/// when it is at most [`MAX_CHUNK_BYTES`]; else up to that many bytes from `pos - 1`.
/// A position before the start (negative) counts as inside the first sub-filter.
pub fn scan(cf: &Cuckoo, pos: i64) -> Scan<'_> {
    if cf.items == 0 {
        return Scan::End;
    }
    if pos == 0 {
        return Scan::Header(encode_header(cf));
    }
    table_chunk(cf, pos)
}

/// Where byte `offset` of the tables laid end to end falls: `Ok((i, o))` in sub-filter `i`, at
/// `o` within it (the first sub-filter whose end is past `offset`, so a negative offset falls
/// in the first), or `Err(o)` past the last, `o` being `offset` less the size of every table.
///
/// Sub-filters of one size — expansion 1, the only way to have many: any other growth passes
/// 2^56 buckets within 57 sub-filters — are found by a division, so that a SCANDUMP walk, an
/// AOF rewrite or its replay of a filter of 65 535 sub-filters (one 38-byte header makes one)
/// takes time linear in them, not quadratic (seconds). The others are scanned.
fn locate(cf: &Cuckoo, offset: i128) -> Result<(usize, i128), i128> {
    let n = cf.filters.len();
    if let (true, Some(first), Some(last)) =
        (cf.expansion == 1, cf.filters.first(), cf.filters.last())
    {
        // Every sub-filter has the first one's buckets (growth, a header and an RDB value give
        // `buckets × 1^i`); the last one is checked as a guard.
        let size = i128::from(first.bytes());
        if size > 0 && last.bytes() == first.bytes() {
            if offset < 0 {
                return Ok((0, offset));
            }
            let i = offset / size;
            return if i < n as i128 {
                Ok((i as usize, offset - i * size))
            } else {
                Err(offset - size * n as i128)
            };
        }
    }
    let mut offset = offset;
    for (i, f) in cf.filters.iter().enumerate() {
        let size = i128::from(f.bytes());
        if offset < size {
            return Ok((i, offset));
        }
        offset -= size;
    }
    Err(offset)
}

/// The chunk at `pos` ≥ 1 of the tables laid end to end, as [`scan`] gives it but whatever
/// the item count: the AOF rewrite writes the tables of filters without items too (RedisBloom
/// does), which SCANDUMP answers `[0, nil]` for. [`Scan::End`] past the last sub-filter.
pub fn table_chunk(cf: &Cuckoo, pos: i64) -> Scan<'_> {
    let Ok((i, offset)) = locate(cf, i128::from(pos) - 1) else {
        return Scan::End;
    };
    let f = &cf.filters[i];
    let size = i128::from(f.bytes());
    if size <= i128::from(MAX_CHUNK_BYTES) {
        return match i64::try_from(i128::from(pos) + size) {
            Ok(next) => Scan::Chunk(next, f.data()),
            Err(_) => Scan::End,
        };
    }
    if offset < 0 {
        return Scan::End;
    }
    let n = (size - offset).min(i128::from(MAX_CHUNK_BYTES));
    let start = offset as usize;
    match i64::try_from(i128::from(pos) + n) {
        Ok(next) => Scan::Chunk(next, &f.data()[start..start + n as usize]),
        Err(_) => Scan::End,
    }
}

/// Writes a chunk (`CF.LOADCHUNK key pos data`, `pos` ≥ 2 being the position SCANDUMP gave
/// with it, i.e. one past its last byte): its bytes go to positions `pos - len - 1 ..` of the
/// tables laid end to end. As RedisBloom, a start past the last sub-filter is taken relative
/// to the last one. Only the pages that change are written ([`crate::sparse::write_sparse`]):
/// a copy filled into a fresh zeroed table stays as sparse as its source.
///
/// Errors (`Couldn't load chunk!`, nothing written): an empty chunk, a start before the first
/// byte, or a chunk that runs past the end of the sub-filter it starts in.
pub fn apply_chunk(cf: &mut Cuckoo, pos: i64, data: &[u8]) -> Result<(), ChunkRefused> {
    if data.is_empty() {
        return Err(ChunkRefused);
    }
    let len = data.len() as i128;
    let (at, offset) = match locate(cf, i128::from(pos) - len - 1) {
        Ok(found) => found,
        Err(past) => (cf.filters.len().saturating_sub(1), past),
    };
    let f = cf.filters.get_mut(at).ok_or(ChunkRefused)?;
    if offset < 0 || i128::from(f.bytes()) < offset + len {
        return Err(ChunkRefused);
    }
    let start = offset as usize;
    f.write(start, data);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::{insert_new, Cuckoo};
    use super::*;

    fn limits() -> HeaderLimits {
        HeaderLimits {
            max_expansion: 32768,
        }
    }

    #[test]
    fn walk_and_reload_give_the_same_filter() {
        let mut cf = Cuckoo::new(64, 2, 20, 2, u64::MAX).unwrap();
        insert_new(&mut cf, "w", 400);
        let Scan::Header(h) = scan(&cf, 0) else {
            panic!()
        };
        let mut copy = decode_header(&parse_header(&h).unwrap(), limits(), u64::MAX).unwrap();
        let mut pos = 1;
        loop {
            match scan(&cf, pos) {
                Scan::Chunk(next, data) => {
                    apply_chunk(&mut copy, next, data).unwrap();
                    pos = next;
                }
                Scan::End => break,
                Scan::Header(_) => panic!(),
            }
        }
        assert_eq!(copy, cf);
    }

    #[test]
    fn scan_positions_inside_a_small_sub_filter_return_it_whole() {
        let mut cf = Cuckoo::new(20, 2, 20, 1, u64::MAX).unwrap();
        cf.insert(b"a", false, u64::MAX);
        // 16 buckets x 2 = 32 bytes.
        for (pos, next) in [(1, 33), (2, 34), (32, 64), (-1, 31)] {
            match scan(&cf, pos) {
                Scan::Chunk(n, d) => assert_eq!((n, d.len()), (next, 32), "{pos}"),
                other => panic!("{pos}: {other:?}"),
            }
        }
        assert_eq!(scan(&cf, 33), Scan::End);
        let empty = Cuckoo::new(20, 2, 20, 1, u64::MAX).unwrap();
        assert_eq!(scan(&empty, 0), Scan::End);
    }

    #[test]
    fn bad_headers_are_refused() {
        let cf = Cuckoo::new(1024, 2, 20, 1, u64::MAX).unwrap();
        let good = parse_header(&encode_header(&cf)).unwrap();
        assert!(decode_header(&good, limits(), u64::MAX).is_some());
        let cases: &[(&str, Header)] = &[
            ("buckets 3", Header { buckets: 3, ..good }),
            ("buckets 0", Header { buckets: 0, ..good }),
            (
                "buckets 2^56",
                Header {
                    buckets: 1 << 56,
                    ..good
                },
            ),
            (
                "bucket size 0",
                Header {
                    bucket_size: 0,
                    ..good
                },
            ),
            (
                "bucket size 256",
                Header {
                    bucket_size: 256,
                    ..good
                },
            ),
            (
                "max iterations 0",
                Header {
                    max_iterations: 0,
                    ..good
                },
            ),
            ("no sub-filters", Header { filters: 0, ..good }),
            (
                "two, non-scaling",
                Header {
                    filters: 2,
                    expansion: 0,
                    ..good
                },
            ),
            (
                "expansion 32769",
                Header {
                    expansion: 32769,
                    ..good
                },
            ),
        ];
        for (what, h) in cases {
            assert!(decode_header(h, limits(), u64::MAX).is_none(), "{what}");
        }
        assert!(
            decode_header(&good, limits(), 1023).is_none(),
            "over the budget"
        );
        assert!(parse_header(&[0u8; 37]).is_none());
    }

    /// [`locate`] by a scan of every sub-filter, whatever their sizes.
    fn locate_by_scan(cf: &Cuckoo, mut offset: i128) -> Result<(usize, i128), i128> {
        for (i, f) in cf.filters.iter().enumerate() {
            if offset < i128::from(f.bytes()) {
                return Ok((i, offset));
            }
            offset -= i128::from(f.bytes());
        }
        Err(offset)
    }

    #[test]
    fn equal_sub_filters_are_located_by_division_as_by_a_scan() {
        // 40 sub-filters of 8 buckets of 3 (expansion 1), and shapes found by the scan.
        let h = |filters, expansion| Header {
            items: 1,
            buckets: 8,
            deletes: 0,
            filters,
            bucket_size: 3,
            max_iterations: 20,
            expansion,
        };
        for (filters, expansion) in [(40, 1), (1, 1), (1, 0), (5, 2), (4, 3)] {
            let cf = decode_header(&h(filters, expansion), limits(), u64::MAX).unwrap();
            let total = i128::from(cf.table_bytes());
            for offset in -30..total + 30 {
                assert_eq!(
                    locate(&cf, offset),
                    locate_by_scan(&cf, offset),
                    "{filters} sub-filters, expansion {expansion}, offset {offset}"
                );
            }
        }
        // 65 535 sub-filters of one byte: the whole walk, reloaded.
        let mut cf = decode_header(
            &Header {
                buckets: 1,
                filters: 65535,
                bucket_size: 1,
                ..h(1, 1)
            },
            limits(),
            u64::MAX,
        )
        .unwrap();
        for (i, f) in cf.filters.iter_mut().enumerate() {
            f.data_mut()[0] = (i % 255) as u8 + 1;
        }
        let mut copy = decode_header(
            &parse_header(&encode_header(&cf)).unwrap(),
            limits(),
            u64::MAX,
        )
        .unwrap();
        let mut pos = 1;
        while let Scan::Chunk(next, data) = table_chunk(&cf, pos) {
            apply_chunk(&mut copy, next, data).unwrap();
            pos = next;
        }
        assert_eq!(pos, 65536);
        assert_eq!(copy, cf);
    }

    #[test]
    fn chunks_outside_their_sub_filter_are_refused() {
        let mut cf = Cuckoo::new(20, 2, 20, 1, u64::MAX).unwrap();
        let before = cf.clone();
        for (pos, len) in [(33, 0), (1, 1), (34, 33), (40, 10)] {
            assert!(
                apply_chunk(&mut cf, pos, &vec![7u8; len]).is_err(),
                "{pos} {len}"
            );
        }
        assert_eq!(cf, before);
        assert!(apply_chunk(&mut cf, 33, &[1u8; 32]).is_ok());
    }
}
