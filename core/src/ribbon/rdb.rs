//! The RDB value of a Ribbon key (`docs/format.md` "Ribbon RDB value"), over the module-API
//! value stream ([`ValueReader`] / [`ValueWriter`]): a state tag, then the staged hashes in
//! ascending order, the copy form of a built filter, or a half copy. The decoder validates
//! every count and length before it allocates, and its work is bounded by its input's size
//! (a RESTORE payload is hostile input).

use super::dump::{self, Loader, HEADER_BYTES};
use super::{Ribbon, MAX_ITEMS};
use crate::bloom::rdb::{DecodeError, ValueReader, ValueWriter};
use std::collections::BTreeSet;

/// The type's RDB encoding version.
pub const ENCODING_VERSION: i32 = 1;

/// Hashes per string of a staging value's RDB form (and per `RF.LOADCHUNK key 0` command of
/// its AOF rewrite): 65 536 hashes, 512 KiB.
pub const STAGED_BATCH: usize = 65_536;

/// The staged item hashes of one key, sorted (so every walk is in ascending order).
pub type Staged = BTreeSet<u64>;

/// The state tags.
const STAGING: u64 = 0;
const BUILT: u64 = 1;
const LOADING: u64 = 2;

/// A decoded value.
#[derive(Debug)]
pub enum Stored {
    /// Staged hashes.
    Staging(Staged),
    /// A built filter.
    Built(Ribbon),
    /// A copy arriving by `RF.LOADCHUNK`: its header and the body bytes received so far.
    Loading(Loader),
}

/// The staged hashes in ascending order, as little-endian bytes, [`STAGED_BATCH`] at a time
/// (none for an empty set).
pub fn staged_batches(staged: &Staged) -> impl Iterator<Item = Vec<u8>> + '_ {
    let mut it = staged.iter();
    std::iter::from_fn(move || {
        let batch: Vec<u8> = it
            .by_ref()
            .take(STAGED_BATCH)
            .flat_map(|h| h.to_le_bytes())
            .collect();
        (!batch.is_empty()).then_some(batch)
    })
}

/// Adds the hashes of `bytes` (little-endian u64s) to `staged`, checking, when `ascending`,
/// that they continue strictly ascending after `last`: how many were new, or `None` (a length
/// not a multiple of 8, or out of order; the hashes before the fault are staged).
pub fn stage_bytes(
    staged: &mut Staged,
    bytes: &[u8],
    last: &mut Option<u64>,
    ascending: bool,
) -> Option<u64> {
    if bytes.len() % 8 != 0 {
        return None;
    }
    let mut added = 0;
    for c in bytes.chunks_exact(8) {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        let h = u64::from_le_bytes(b);
        if ascending && last.is_some_and(|l| l >= h) {
            return None;
        }
        *last = Some(h);
        added += u64::from(staged.insert(h));
    }
    Some(added)
}

/// The body chunks of a built filter, in order: `(next position, bytes)` as
/// [`dump::chunk_at`] walks it from position 1.
pub fn body_chunks(r: &Ribbon) -> impl Iterator<Item = (u64, Vec<u8>)> + '_ {
    let mut position = 1;
    std::iter::from_fn(move || {
        let (next, data) = dump::chunk_at(r, position)?;
        position = next;
        Some((next, data))
    })
}

/// Writes a staging value: its tag, its count, then its hashes ascending in strings of at
/// most [`STAGED_BATCH`] hashes.
pub fn save_staging(staged: &Staged, w: &mut impl ValueWriter) {
    w.write_unsigned(STAGING);
    w.write_unsigned(staged.len() as u64);
    staged_batches(staged).for_each(|b| w.write_bytes(&b));
}

/// Writes a built filter: its tag, the 49-byte header, then the body chunks.
pub fn save_built(r: &Ribbon, w: &mut impl ValueWriter) {
    w.write_unsigned(BUILT);
    w.write_bytes(&dump::encode_header(r));
    body_chunks(r).for_each(|(_, data)| w.write_bytes(&data));
}

/// Writes a half copy: its tag, the header, then the body bytes received so far (one string,
/// possibly empty).
pub fn save_loading(l: &Loader, w: &mut impl ValueWriter) {
    w.write_unsigned(LOADING);
    w.write_bytes(&l.header());
    w.write_bytes(&l.received_body());
}

/// Reads a string of exactly `len` bytes.
fn read_exact(r: &mut impl ValueReader, len: usize) -> Result<Vec<u8>, DecodeError> {
    let b = r.read_bytes()?;
    if b.len() != len {
        return Err(DecodeError);
    }
    Ok(b)
}

/// Reads a value written at encoding version `encver`; a built or loading value's body may
/// need at most `max_bytes` (the `bf.max-filter-bytes` bound; `u64::MAX`: none). Errors
/// ([`DecodeError`]): another version or tag; a staged count over [`MAX_ITEMS`], a string
/// empty, longer than the hashes left or than [`STAGED_BATCH`] hashes, not a multiple of 8
/// bytes, or hashes not strictly ascending; a header the copy form refuses (checked before
/// allocating); a body chunk past the end or a complete body whose bumped hashes are not
/// strictly ascending; a "loading" value whose body is complete.
pub fn load(r: &mut impl ValueReader, encver: i32, max_bytes: u64) -> Result<Stored, DecodeError> {
    if encver != ENCODING_VERSION {
        return Err(DecodeError);
    }
    let loader_of = |header: &[u8]| Loader::new(header, max_bytes).map_err(|_| DecodeError);
    match r.read_unsigned()? {
        STAGING => {
            let n = r.read_unsigned()?;
            if n > MAX_ITEMS {
                return Err(DecodeError);
            }
            let mut staged = Staged::new();
            let mut last = None;
            while (staged.len() as u64) < n {
                let bytes = r.read_bytes()?;
                let left = (n - staged.len() as u64) * 8;
                if bytes.is_empty() || bytes.len() as u64 > left.min(STAGED_BATCH as u64 * 8) {
                    return Err(DecodeError);
                }
                stage_bytes(&mut staged, &bytes, &mut last, true).ok_or(DecodeError)?;
            }
            Ok(Stored::Staging(staged))
        }
        BUILT => {
            let mut loader = loader_of(&read_exact(r, HEADER_BYTES)?)?;
            while !loader.is_complete() {
                let chunk = r.read_bytes()?;
                loader
                    .apply(loader.next_position(), &chunk)
                    .map_err(|_| DecodeError)?;
            }
            Ok(Stored::Built(loader.finish().map_err(|_| DecodeError)?))
        }
        LOADING => {
            let mut loader = loader_of(&read_exact(r, HEADER_BYTES)?)?;
            let body = r.read_bytes()?;
            if !body.is_empty() {
                loader.apply(1, &body).map_err(|_| DecodeError)?;
            }
            if loader.is_complete() {
                return Err(DecodeError);
            }
            Ok(Stored::Loading(loader))
        }
        _ => Err(DecodeError),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bloom::rdb::{Value, Values};
    use crate::ribbon::{build, item_hash};

    fn staged(n: u64) -> Staged {
        (0..n)
            .map(|i| item_hash(format!("rdb:{i}").as_bytes()))
            .collect()
    }

    #[test]
    fn every_state_round_trips() {
        let s = staged(70_000);
        let r = build(s.iter().copied().collect(), 0.01).unwrap();
        let mut half = Loader::new(&dump::encode_header(&r), u64::MAX).unwrap();
        let (_, first) = dump::chunk_at(&r, 1).unwrap();
        half.apply(1, &first[..64]).unwrap();

        let v = Values::saved(|w| save_staging(&s, w));
        // Tag, count, then two strings: 65 536 hashes and the other 4 464.
        assert_eq!(v.values.len(), 4);
        assert!(matches!(load(&mut v.clone(), 1, u64::MAX), Ok(Stored::Staging(t)) if t == s));

        let v = Values::saved(|w| save_built(&r, w));
        match load(&mut v.clone(), 1, u64::MAX) {
            Ok(Stored::Built(b)) => {
                assert_eq!(dump::encode_header(&b), dump::encode_header(&r));
                assert_eq!(b.words(), r.words());
                assert_eq!(b.bumped(), r.bumped());
            }
            other => panic!("{other:?}"),
        }

        let v = Values::saved(|w| save_loading(&half, w));
        match load(&mut v.clone(), 1, u64::MAX) {
            Ok(Stored::Loading(l)) => {
                assert_eq!(l.header(), half.header());
                assert_eq!(l.received_body(), half.received_body());
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn malformed_values_are_refused() {
        let s = staged(3);
        let sorted: Vec<u8> = s.iter().flat_map(|h| h.to_le_bytes()).collect();
        let mut reversed = sorted.clone();
        reversed.reverse();
        let r = build(s.iter().copied().collect(), 0.01).unwrap();
        let header = dump::encode_header(&r).to_vec();
        let body: Vec<u8> = body_chunks(&r).flat_map(|(_, d)| d).collect();
        let u = Value::Unsigned;
        let b = |x: &[u8]| Value::Bytes(x.to_vec());
        for (name, encver, values) in [
            ("another version", 2, vec![u(0), u(0)]),
            ("another tag", 1, vec![u(3)]),
            (
                "a count over the most items",
                1,
                vec![u(0), u(MAX_ITEMS + 1)],
            ),
            ("fewer hashes than counted", 1, vec![u(0), u(4), b(&sorted)]),
            ("an empty string", 1, vec![u(0), u(3), b(&[])]),
            ("more hashes than counted", 1, vec![u(0), u(2), b(&sorted)]),
            (
                "a length not a multiple of 8",
                1,
                vec![u(0), u(3), b(&sorted[..23])],
            ),
            ("hashes out of order", 1, vec![u(0), u(3), b(&reversed)]),
            ("a short header", 1, vec![u(1), b(&header[..48])]),
            ("a body cut short", 1, vec![u(1), b(&header), b(&body[..8])]),
            (
                "a body past its end",
                1,
                vec![u(1), b(&header), b(&[body.clone(), vec![0; 8]].concat())],
            ),
            (
                "a half copy that is whole",
                1,
                vec![u(2), b(&header), b(&body)],
            ),
            ("a double for the tag", 1, vec![Value::Double(0.0)]),
        ] {
            let mut v = Values { values, pos: 0 };
            assert!(load(&mut v, encver, u64::MAX).is_err(), "{name}");
        }
        // The same body within the memory bound loads; under it, the header is refused.
        let v = Values::saved(|w| save_built(&r, w));
        assert!(load(&mut v.clone(), 1, body.len() as u64 + 64).is_ok());
        assert!(load(&mut v.clone(), 1, 8).is_err());
    }
}
