//! The RDB value of a `MBbloomCF` key (`docs/format.md` ("Cuckoo RDB value")), through the
//! same [`ValueReader`] / [`ValueWriter`] traits as the Bloom value.
//!
//! Layout (encoding version 4; U = unsigned, S = string buffer): U sub-filters, U buckets,
//! U items, U deletes, U bucket size, U max iterations, U expansion, then per sub-filter,
//! oldest first: U its buckets, S its table. Versions 0–3 stop the fixed part after items
//! (deletes 0, bucket size 2, max iterations 20, expansion 1) and write per sub-filter only
//! its table, every sub-filter having the first one's bucket count.

use super::{Cuckoo, SubFilter, DEFAULT_BUCKET_SIZE, DEFAULT_EXPANSION, DEFAULT_MAX_ITERATIONS};
use super::{MAX_BUCKETS, MAX_BUCKET_SIZE, MAX_SUB_FILTERS};
use crate::rdb::{DecodeError, ValueReader, ValueWriter};

/// The encoding version we write.
pub const ENCODING_VERSION: i32 = 4;

/// Writes `cf` in the encoding-version-4 layout.
pub fn save(cf: &Cuckoo, w: &mut impl ValueWriter) {
    w.write_unsigned(cf.filters.len() as u64);
    w.write_unsigned(cf.buckets());
    w.write_unsigned(cf.items);
    w.write_unsigned(cf.deletes);
    w.write_unsigned(u64::from(cf.bucket_size));
    w.write_unsigned(u64::from(cf.max_iterations));
    w.write_unsigned(u64::from(cf.expansion));
    for (f, n) in cf.filters.iter().zip(cf.bucket_counts()) {
        w.write_unsigned(n);
        w.write_bytes(f.data());
    }
}

/// Reads a filter written with encoding version `encver` (0–4). Sub-filters are read one at
/// a time (nothing sized by the announced count is allocated up front).
///
/// Errors: [`DecodeError`] for encver > 4; 0 or more than 65 535 sub-filters; a bucket size
/// outside 1–255, max iterations 0 or a 16-bit field out of range; a first bucket count of 0,
/// above 2^56 or not a power of two; several sub-filters with expansion 0; a sub-filter whose
/// bucket count is not `buckets × expansion^i` (what growth and `CF.LOADCHUNK` give it); a
/// table whose length is not its buckets × bucket size; a read error. (RedisBloom checks less; a value failing these could not be looked up
/// consistently.)
pub fn load(r: &mut impl ValueReader, encver: i32) -> Result<Cuckoo, DecodeError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(DecodeError);
    }
    let count = r.read_unsigned()?;
    let buckets = r.read_unsigned()?;
    if count == 0 || count > MAX_SUB_FILTERS as u64 || !valid_buckets(buckets) {
        return Err(DecodeError);
    }
    let items = r.read_unsigned()?;
    let u16_of = |v: u64| u16::try_from(v).map_err(|_| DecodeError);
    let (deletes, bucket_size, max_iterations, expansion) = if encver < 4 {
        (
            0,
            DEFAULT_BUCKET_SIZE,
            DEFAULT_MAX_ITERATIONS,
            DEFAULT_EXPANSION,
        )
    } else {
        let deletes = r.read_unsigned()?;
        let bs = u16_of(r.read_unsigned()?)?;
        let mi = u16_of(r.read_unsigned()?)?;
        let ex = u16_of(r.read_unsigned()?)?;
        (deletes, bs, mi, ex)
    };
    if bucket_size == 0
        || bucket_size > MAX_BUCKET_SIZE
        || max_iterations == 0
        || (expansion == 0 && count > 1)
    {
        return Err(DecodeError);
    }
    let mut filters: Vec<SubFilter> = Vec::new();
    let buckets_log2 = super::log2_of_buckets(buckets);
    // The header's fields, then the sub-filters read against its shape.
    let mut cuckoo = Cuckoo {
        buckets_log2,
        items,
        deletes,
        bucket_size,
        max_iterations,
        expansion,
        filters: Box::new([]),
    };
    for i in 0..count {
        let n = if encver < 4 {
            buckets
        } else {
            r.read_unsigned()?
        };
        if Some(n) != cuckoo.buckets_of(i as usize) {
            return Err(DecodeError);
        }
        let data = r.read_bytes()?;
        if Some(data.len() as u64) != n.checked_mul(u64::from(bucket_size)) {
            return Err(DecodeError);
        }
        filters.try_reserve(1).map_err(|_| DecodeError)?;
        filters.push(SubFilter::from_data(data.into_boxed_slice()));
    }
    cuckoo.filters = filters.into_boxed_slice();
    Ok(cuckoo)
}

fn valid_buckets(n: u64) -> bool {
    n > 0 && n <= MAX_BUCKETS && n.is_power_of_two()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::{Value, Values};

    #[test]
    fn round_trip_and_truncations() {
        let mut cf = Cuckoo::new(64, 4, 5, 2, u64::MAX).unwrap();
        for i in 0..300u32 {
            cf.insert(format!("r{i}").as_bytes(), false, u64::MAX);
        }
        cf.delete(b"r1");
        let w = Values::saved(|v| save(&cf, v));
        let back = load(&mut w.clone(), ENCODING_VERSION).unwrap();
        assert_eq!(back, cf);
        for cut in 0..w.values.len() {
            let mut short = Values {
                values: w.values[..cut].to_vec(),
                pos: 0,
            };
            assert!(load(&mut short, ENCODING_VERSION).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn sub_filter_sizes_must_follow_the_expansion() {
        // 8, 16, 32 buckets with expansion 1: growth would append 8, which no load takes back.
        let mut w = Values::default();
        for v in [3u64, 8, 0, 0, 1, 20, 1] {
            w.values.push(Value::Unsigned(v));
        }
        for n in [8u64, 16, 32] {
            w.values.push(Value::Unsigned(n));
            w.values.push(Value::Bytes(vec![0; n as usize]));
        }
        assert!(load(&mut w, ENCODING_VERSION).is_err());
    }

    #[test]
    fn later_sub_filters_need_not_be_powers_of_two() {
        // What `CF.LOADCHUNK` makes of a header with expansion 3 and 3 sub-filters: 4, 12 and
        // 36 buckets. Its own RDB value must load again.
        let h = super::super::dump::Header {
            items: 20,
            buckets: 4,
            deletes: 0,
            filters: 3,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 3,
        };
        let limits = super::super::dump::HeaderLimits {
            max_expansion: u16::MAX,
        };
        let cf = super::super::dump::decode_header(&h, limits, u64::MAX).unwrap();
        let sizes: Vec<u64> = cf.bucket_counts().collect();
        assert_eq!(sizes, [4, 12, 36]);
        let w = Values::saved(|v| save(&cf, v));
        assert_eq!(load(&mut w.clone(), ENCODING_VERSION).unwrap(), cf);
        // The first count stays a power of two, and the second is 3 × the first.
        for (first, second) in [(6u64, 18u64), (8, 4), (8, 16), (8, 25)] {
            let mut bad = Values::default();
            for v in [2, first, 0, 0, 2, 20, 3, first] {
                bad.values.push(Value::Unsigned(v));
            }
            bad.values.push(Value::Bytes(vec![0; first as usize * 2]));
            bad.values.push(Value::Unsigned(second));
            bad.values.push(Value::Bytes(vec![0; second as usize * 2]));
            assert!(
                load(&mut bad, ENCODING_VERSION).is_err(),
                "{first} then {second}"
            );
        }
    }

    #[test]
    fn version_3_values_have_defaults() {
        let mut w = Values::default();
        for v in [2u64, 4, 3] {
            w.values.push(Value::Unsigned(v));
        }
        w.values.push(Value::Bytes(vec![1, 0, 0, 0, 0, 0, 0, 2]));
        w.values.push(Value::Bytes(vec![0, 0, 3, 0, 0, 0, 0, 0]));
        let cf = load(&mut w, 3).unwrap();
        assert_eq!(
            (cf.bucket_size, cf.max_iterations, cf.expansion, cf.deletes),
            (2, 20, 1, 0)
        );
        assert_eq!(cf.filters.len(), 2);
        assert_eq!(cf.filters[1].buckets(cf.bucket_size), 4);
    }
}
