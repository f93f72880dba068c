//! Building a Ribbon filter: banding (on-the-fly Gaussian elimination over GF(2), slot by
//! slot, as in Dillinger & Walzer 2021, section 2) in start-slot order, then back-substitution
//! into interleaved blocks. An item whose row cannot be banded is kept exactly instead
//! ([`Ribbon::bumped`]), so a build never fails and never retries.

use super::{Bumped, Ribbon, Row, Shape, ShapeError, WIDTH};

/// The most distinct items one filter is built from (2^32 − 1, so that positions in the
/// bumped list fit a u32): 32 GiB of staged hashes, beyond what one key should hold.
pub const MAX_ITEMS: u64 = u32::MAX as u64 - 1;

/// The seed every build derives its rows with. It is recorded in the filter (and its
/// persisted forms), so that another seed can serve a later build without a new format.
const SEED: u32 = 0;

/// Why a set could not be built into a filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BuildError {
    /// The error rate or the size ([`Shape::for_items`]).
    Shape(ShapeError),
    /// More than [`MAX_ITEMS`] distinct items.
    TooManyItems,
}

impl std::fmt::Display for BuildError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BuildError::Shape(e) => e.fmt(f),
            BuildError::TooManyItems => write!(f, "more than {MAX_ITEMS} items"),
        }
    }
}

impl std::error::Error for BuildError {}

impl From<ShapeError> for BuildError {
    fn from(e: ShapeError) -> BuildError {
        BuildError::Shape(e)
    }
}

/// Builds the filter of the items whose [`super::item_hash`]es are `hashes` (any order,
/// duplicates allowed) at error rate `error_rate`.
///
/// The hashes are sorted and deduplicated first, so the result depends on the set alone, and
/// the rows band in start-slot order (start slots grow with the hash). Each row is eliminated
/// into the band; a row that reduces to nothing with a non-zero result — the queue of rows
/// waiting for a slot outgrew the band width, or the set's equations are dependent — leaves
/// the band as it was, and its hash is kept in the sorted exact list [`Ribbon::bumped`]
/// (about 55 per million items). Then back-substitution fills the solution.
///
/// Work: O(n log n) to sort, at most 128 row operations per item, O(slots × columns) to
/// solve. Memory while it runs: the hashes (8 bytes each) and the band, 20 bytes per slot (a
/// 128-bit coefficient row and a 32-bit result per slot), besides the result.
/// Errors: [`BuildError::Shape`] for an error rate outside (0, 1) or below 2^−32 / 0.9, or a
/// shape too large; [`BuildError::TooManyItems`].
pub fn build(mut hashes: Vec<u64>, error_rate: f64) -> Result<Ribbon, BuildError> {
    hashes.sort_unstable();
    hashes.dedup();
    let items = hashes.len() as u64;
    if items > MAX_ITEMS {
        return Err(BuildError::TooManyItems);
    }
    let shape = Shape::for_items(items, error_rate)?;
    let mut band = Band::new(&shape);
    let mut bumped = Vec::new();
    for &h in &hashes {
        let row = Row::of(h, &shape, SEED);
        if !band.add(row.start as usize, row.coefficients, row.result & band.mask) {
            bumped.push(h);
        }
    }
    drop(hashes);
    let words = band.solve(&shape);
    // Sorted, distinct and fewer than 2^32 − 1 (MAX_ITEMS): always a list.
    let bumped = Bumped::new(bumped).ok_or(BuildError::TooManyItems)?;
    Ok(Ribbon {
        error_rate,
        shape,
        seed: SEED,
        items,
        words,
        bumped,
    })
}

/// The band being built: slot `i` holds the row whose first coefficient is at `i` (0: none
/// yet) and its result bits.
struct Band {
    coefficients: Vec<u128>,
    results: Vec<u32>,
    /// The result bits every row must agree on: as many as the widest block has columns.
    mask: u32,
}

impl Band {
    fn new(shape: &Shape) -> Band {
        let slots = shape.slots() as usize;
        let top = shape.columns_of(shape.blocks() - 1);
        Band {
            coefficients: vec![0; slots],
            results: vec![0; slots],
            mask: if top >= 32 { u32::MAX } else { (1 << top) - 1 },
        }
    }

    /// Eliminates one row into the band: while its first slot is taken, XOR the row there
    /// into it and move to its next set coefficient. A row that vanishes with a zero result
    /// was implied by the others and needs no slot (true). False: it vanished with a non-zero
    /// result, and the band is unchanged (nothing is written before a free slot is found).
    #[inline]
    fn add(&mut self, mut start: usize, mut coefficients: u128, mut result: u32) -> bool {
        loop {
            let there = self.coefficients[start];
            if there == 0 {
                self.coefficients[start] = coefficients;
                self.results[start] = result;
                return true;
            }
            coefficients ^= there;
            result ^= self.results[start];
            if coefficients == 0 {
                return result == 0;
            }
            let skip = coefficients.trailing_zeros();
            coefficients >>= skip;
            start += skip as usize;
        }
    }

    /// Back-substitution from the last slot down, column by column at once: `state[j]` bit `k`
    /// is column `j`'s value at slot `i + k`. A slot with no row (a free variable) is 0. At
    /// each block's first slot the state is the block's columns, written to the solution.
    fn solve(&self, shape: &Shape) -> Vec<u64> {
        let top = shape.columns_of(shape.blocks() - 1) as usize;
        let mut words = vec![0u64; shape.words() as usize];
        let mut state = [0u128; super::MAX_RESULT_BITS as usize];
        let state = &mut state[..top];
        for i in (0..self.coefficients.len()).rev() {
            let c = self.coefficients[i];
            let r = self.results[i];
            for (j, column) in state.iter_mut().enumerate() {
                let above = *column << 1;
                let bit = if c == 0 {
                    0
                } else {
                    ((r >> j) ^ (c & above).count_ones()) & 1
                };
                *column = above | u128::from(bit);
            }
            if i as u64 % WIDTH == 0 {
                let block = i as u64 / WIDTH;
                let at = shape.word_offset(block) as usize;
                let columns = shape.columns_of(block) as usize;
                for (j, column) in state[..columns].iter().enumerate() {
                    words[at + 2 * j] = *column as u64;
                    words[at + 2 * j + 1] = (*column >> 64) as u64;
                }
            }
        }
        words
    }
}
