//! Static Ribbon filters: built once from a known set of items, then read-only, in a few per
//! cent more than the information-theoretic minimum of log2(1/ε) bits per item (a Bloom filter
//! needs 1.44× that).
//!
//! The structure (Dillinger & Walzer, "Ribbon filter: practically smaller than Bloom and Xor",
//! 2021, the "standard Ribbon" with interleaved storage): a solution matrix Z of `m` slots ×
//! `r` result bits, `m` a multiple of the band width [`WIDTH`] (128). Each item's 64-bit hash
//! ([`item_hash`]) gives a start slot `s` in `[0, m − 128]`, a 128-bit coefficient row `c`
//! (bit 0 always set; bit `k` stands for slot `s + k`) and a result row `b`; the filter is a
//! solution of every item's equation `XOR over k of c_k · Z[s + k] = b`. A query recomputes
//! `s`, `c` and `b` and compares: equal, "maybe"; different, "certainly not" (no false
//! negatives: every item's equation holds). For an item that was not in the set, `b` is an
//! independent hash, so it matches with probability 2^−r.
//!
//! Fractional result bits: slots come in blocks of 128; the first [`Shape::upper_start`] blocks
//! hold `r` columns, the rest `r + 1`, and an item checks as many columns as its start block
//! has. The error rate is then the mix of 2^−r and 2^−(r+1) that [`Shape::for_items`] chooses
//! (so that 1 % costs about 6.8 bits per slot rather than 7).
//!
//! Determinism: [`build`] sorts and deduplicates the items' hashes first, so the filter is a
//! function of the set and the error rate alone — the same bytes whatever order the items
//! arrived in, on a primary, a replica, an AOF replay or an offline builder.
//!
//! Nothing here depends on Redis; the module stores [`Ribbon::words`] as they are.

mod build;
mod bumped;
pub mod dump;
pub mod rdb;
mod shape;

pub use build::{build, BuildError, MAX_ITEMS};
pub use shape::{Shape, ShapeError, MAX_RESULT_BITS};

use crate::hash::{murmur64a, SEED64};
use prefetch_index::prefetch_index;

/// How many items ahead of the one being answered [`Ribbon::contains_many`] requests the
/// cache lines of (as the Bloom batch paths' prefetch distance).
pub const QUERY_PREFETCH: usize = 8;
use bumped::Bumped;

/// The band width w in slots (bits of a coefficient row): every item's equation spans 128
/// consecutive slots, and slots come in blocks of 128.
pub const WIDTH: u64 = 128;

/// An item's 64-bit hash: MurmurHash64A with the seed of Bloom filters' first hash
/// ([`SEED64`]), so that a checker that can check a Bloom filter already has it. The start
/// slot comes from this hash alone, the coefficient and result rows from it and the build's
/// seed ([`Row::of`]).
pub fn item_hash(item: &[u8]) -> u64 {
    murmur64a(item, SEED64)
}

/// The MurmurHash3 64-bit finalizer (a bijection of u64 mixing every input bit into every
/// output bit), used to derive the rows from an item's hash and the seed.
#[inline]
fn fmix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^= x >> 33;
    x
}

/// One item's equation: start slot, coefficient row and result row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Row {
    /// The first slot the equation covers, in `[0, slots − 128]`.
    pub start: u64,
    /// Bit `k` is the coefficient of slot `start + k`; bit 0 is always 1.
    pub coefficients: u128,
    /// The result bits: column `j` of the solution must XOR to bit `j` (only the low
    /// [`MAX_RESULT_BITS`] bits are ever read).
    pub result: u32,
}

impl Row {
    /// The equation of the item whose [`item_hash`] is `hash`, in a filter of `shape` built
    /// with `seed`. The start slot is `hash` scaled to `[0, slots − 128]` (multiply-shift, so
    /// it grows with `hash`: sorted hashes band in slot order); coefficients and result come
    /// from `hash` mixed with the seed, so another seed gives another system of equations.
    #[inline]
    pub fn of(hash: u64, shape: &Shape, seed: u32) -> Row {
        let starts = shape.slots() - WIDTH + 1;
        let start = ((u128::from(hash) * u128::from(starts)) >> 64) as u64;
        let k = fmix64(hash ^ u64::from(seed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let high = fmix64(k ^ 0x5851_f42d_4c95_7f2d);
        let coefficients = (u128::from(high) << 64 | u128::from(k)) | 1;
        let result = fmix64(k ^ 0x1405_7b7e_f767_814f) as u32;
        Row {
            start,
            coefficients,
            result,
        }
    }
}

/// A built Ribbon filter: its shape, the seed its rows were derived with, the number of
/// distinct item hashes it was built from, the solution in interleaved blocks, and the
/// hashes of the few items the band could not take ("bumped"), kept exactly.
///
/// `words` layout (u64, little-endian when persisted): block after block; block `i` holds
/// [`Shape::columns_of`]`(i)` columns, each one 128-bit word of the solution's bits for the
/// block's 128 slots as two u64 (low half first; bit `k` of the column is slot `128·i + k`).
#[derive(Clone, Debug, PartialEq)]
pub struct Ribbon {
    /// The error rate asked for (the shape's own is at most this).
    error_rate: f64,
    shape: Shape,
    seed: u32,
    items: u64,
    words: Vec<u64>,
    bumped: Bumped,
}

/// Why a set of parts is not a Ribbon filter ([`Ribbon::from_parts`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PartsError {
    /// `words.len()` is not [`Shape::words`] (the expected count is given).
    WordCount(u64),
    /// The bumped hashes are not strictly increasing, or more than the items.
    Bumped,
    /// The error rate is not in (0, 1).
    ErrorRate,
}

impl std::fmt::Display for PartsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PartsError::WordCount(n) => write!(f, "the solution must be {n} words"),
            PartsError::Bumped => {
                f.write_str("bumped hashes must be increasing and at most the items")
            }
            PartsError::ErrorRate => f.write_str("error rate must be in (0, 1)"),
        }
    }
}

impl std::error::Error for PartsError {}

impl Ribbon {
    /// A filter from its parts, as a decoder finds them. Errors: [`PartsError::ErrorRate`]
    /// when `error_rate` is not in (0, 1); [`PartsError::WordCount`]
    /// when `words` is not exactly [`Shape::words`] long; [`PartsError::Bumped`] when
    /// `bumped` is not strictly increasing or longer than `items`.
    pub fn from_parts(
        error_rate: f64,
        shape: Shape,
        seed: u32,
        items: u64,
        words: Vec<u64>,
        bumped: Vec<u64>,
    ) -> Result<Ribbon, PartsError> {
        if !(error_rate > 0.0 && error_rate < 1.0) {
            return Err(PartsError::ErrorRate);
        }
        if words.len() as u64 != shape.words() {
            return Err(PartsError::WordCount(shape.words()));
        }
        if bumped.len() as u64 > items {
            return Err(PartsError::Bumped);
        }
        let bumped = Bumped::new(bumped).ok_or(PartsError::Bumped)?;
        Ok(Ribbon {
            error_rate,
            shape,
            seed,
            items,
            words,
            bumped,
        })
    }

    /// The error rate the filter was built for (its shape's expected rate,
    /// [`Shape::error_rate`], is at most this).
    pub fn error_rate(&self) -> f64 {
        self.error_rate
    }

    /// The shape: blocks, result bits, where the `r + 1`-column blocks start.
    pub fn shape(&self) -> &Shape {
        &self.shape
    }

    /// The seed the rows were derived with (the first that let every equation band).
    pub fn seed(&self) -> u32 {
        self.seed
    }

    /// Distinct item hashes the filter was built from.
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The solution, as laid out in [`Ribbon`]'s doc.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// The hashes of the items kept exactly, increasing: those whose rows the band could not
    /// take (about 55 per million items; see [`build`]).
    pub fn bumped(&self) -> &[u64] {
        self.bumped.hashes()
    }

    /// Bytes of the solution (8 per word) and the bumped hashes (8 per hash and about 4 to
    /// 8 of their directory): what the filter holds beyond a few header bytes.
    pub fn bytes(&self) -> u64 {
        self.words.len() as u64 * 8 + self.bumped.bytes()
    }

    /// Bits of solution per item built from (`bytes × 8 / items`; the slots × mean columns
    /// when empty). The information-theoretic minimum is log2(1/ε).
    pub fn bits_per_item(&self) -> f64 {
        self.bytes() as f64 * 8.0 / self.items.max(1) as f64
    }

    /// May `item` be in the set the filter was built from? `false` is certain; `true` is wrong
    /// with probability about [`Shape::error_rate`].
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hash(item_hash(item))
    }

    /// [`Ribbon::contains`] for an item whose [`item_hash`] is `hash`: its equation holds in
    /// the solution, or it is one of the bumped hashes.
    #[inline]
    pub fn contains_hash(&self, hash: u64) -> bool {
        self.solves(hash) || self.bumped.contains(hash)
    }

    /// [`Ribbon::contains`] for each of `items`, in order, each answer given to `answer`: the
    /// same answers, faster on a filter larger than the caches. Software pipelining: the
    /// cache lines an item's query reads (its start block's columns and the next block's) are
    /// requested [`QUERY_PREFETCH`] items before it is answered, so that the misses of
    /// several items overlap; each item is hashed once (a ring of hashes on the stack: the
    /// batch allocates nothing).
    pub fn contains_many<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        mut answer: impl FnMut(bool),
    ) {
        let mut items = items.into_iter();
        let mut ring = [0u64; QUERY_PREFETCH];
        let mut pending = 0;
        for slot in ring.iter_mut() {
            let Some(item) = items.next() else { break };
            *slot = item_hash(item);
            self.prefetch(*slot);
            pending += 1;
        }
        let mut head = 0;
        while pending > 0 {
            let hash = ring[head];
            match items.next() {
                Some(item) => {
                    ring[head] = item_hash(item);
                    self.prefetch(ring[head]);
                }
                None => pending -= 1,
            }
            answer(self.contains_hash(hash));
            head = (head + 1) % QUERY_PREFETCH;
        }
    }

    /// Asks the CPU to start loading the solution's cache lines that the query of `hash`
    /// reads, without waiting: a hint that changes nothing.
    #[inline]
    fn prefetch(&self, hash: u64) {
        let starts = self.shape.slots() - WIDTH + 1;
        let block = ((u128::from(hash) * u128::from(starts)) >> 64) as u64 / WIDTH;
        let base = self.shape.word_offset(block) as usize;
        let span = 2 * self.shape.columns_of(block) as usize;
        // Every cache line of this block's columns and of the next block's: a word every 64
        // bytes from the first, and the last (a prefetch past the end is harmless: it never
        // faults).
        for at in (base..base + 2 * span).step_by(8) {
            prefetch_index(&self.words, at);
        }
        prefetch_index(&self.words, base + 2 * span - 1);
    }

    /// Does the equation of the item whose hash is `hash` hold in the solution?
    ///
    /// Branch-free over the columns: the coefficient row is moved once into the frame of the
    /// two blocks it spans (`c << shift` over the start block's 128 slots, `c >> (128 − shift)`
    /// over the next block's), so that column `j`'s parity is the parity of four masked words,
    /// and all the columns' parities are compared with the result row at once. (The same
    /// answer as the window `(here >> shift) | (next << (128 − shift))` masked by `c`.)
    #[inline]
    fn solves(&self, hash: u64) -> bool {
        let row = Row::of(hash, &self.shape, self.seed);
        let block = row.start / WIDTH;
        let shift = (row.start % WIDTH) as u32;
        let columns = self.shape.columns_of(block) as usize;
        let base = self.shape.word_offset(block) as usize;
        let here_mask = row.coefficients << shift;
        // A start in the last block is its first slot (shift 0): no next block is read then
        // (its mask is zero, and `here` stands in for it).
        let (next_mask, next) = if shift == 0 {
            (0, base)
        } else {
            (row.coefficients >> (128 - shift), base + 2 * columns)
        };
        let masks = [
            here_mask as u64,
            (here_mask >> 64) as u64,
            next_mask as u64,
            (next_mask >> 64) as u64,
        ];
        let here = &self.words[base..base + 2 * columns];
        let there = &self.words[next..next + 2 * columns];
        // Eight columns at a time: each column's masked bits folded to a byte of the same
        // parity, the eight bytes folded to one bit each, the bits gathered (a multiply
        // moves bit 8·j to bit 56 + j) — no population count, which a CPU may lack.
        let mut parities = 0u64;
        for (group, (h, t)) in here.chunks(16).zip(there.chunks(16)).enumerate() {
            let mut bytes = 0u64;
            for (j, (h, t)) in h.chunks_exact(2).zip(t.chunks_exact(2)).enumerate() {
                let mut x =
                    (h[0] & masks[0]) ^ (h[1] & masks[1]) ^ (t[0] & masks[2]) ^ (t[1] & masks[3]);
                x ^= x >> 32;
                x ^= x >> 16;
                x ^= x >> 8;
                bytes |= (x & 0xff) << (8 * j);
            }
            bytes ^= bytes >> 4;
            bytes ^= bytes >> 2;
            bytes ^= bytes >> 1;
            bytes &= 0x0101_0101_0101_0101;
            parities |= (bytes.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * group);
        }
        parities == u64::from(row.result) & ((1u64 << columns) - 1)
    }
}

#[cfg(test)]
mod tests;
