//! A Ribbon filter's shape: how many 128-slot blocks, how many result bits (columns) each
//! block has, and so the error rate and the size; and the choice of a shape for `n` items at
//! an error rate ε.

use super::WIDTH;

/// The most result bits (columns) a block may have: ε ≥ 2^−32 (about 2.3e-10).
pub const MAX_RESULT_BITS: u32 = 32;

/// The fraction of ε a shape aims at (the error rate it promises is ε; aiming below leaves
/// room for the binomial spread of a measured rate: at 1e7 probes and ε = 0.01 % the expected
/// 900 false positives are 3.3 standard deviations under 1 000, where an aim of 0.95 left 1.6
/// and a 1e7-probe measurement at 1e6 items came out 2.7 % over ε). Costs log2(0.95 / 0.9) =
/// 0.078 bits per item over an aim of 0.95.
const AIM: f64 = 0.9;

/// Slots per distinct item over 1: the build's space overhead before rounding up to whole
/// blocks. Banding in start order is a queue of rows waiting for a free slot; with 2.5 % more
/// slots than rows the queue outgrows the band width 128 about 55 times per million items
/// (measured: 747 at 1 %, 127 at 2 %, 16 at 3 %, whatever the seed, since start slots do not
/// depend on it), and those items are kept exactly instead ([`super::Ribbon::bumped`]): 2.5 %
/// is the least total size at 1 % – 0.01 %.
const OVERHEAD: f64 = 0.025;

/// The shape of a Ribbon filter: `blocks` blocks of [`WIDTH`] slots; blocks
/// `0 .. upper_start` have `lower_bits` columns (result bits), blocks `upper_start ..` have
/// `lower_bits + 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    blocks: u64,
    lower_bits: u32,
    upper_start: u64,
}

/// Why a shape cannot be made ([`Shape::new`], [`Shape::for_items`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShapeError {
    /// The error rate is not in (0, 1), or it needs more than [`MAX_RESULT_BITS`] bits.
    ErrorRate,
    /// Zero blocks, zero or too many result bits, or `upper_start` past the last block.
    Invalid,
    /// The solution would not fit in memory (its word count overflows).
    TooLarge,
}

impl std::fmt::Display for ShapeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ShapeError::ErrorRate => "error rate must be in (0, 1) and at least 2^-32",
            ShapeError::Invalid => "not a Ribbon filter shape",
            ShapeError::TooLarge => "filter too large",
        })
    }
}

impl std::error::Error for ShapeError {}

impl Shape {
    /// A shape from its three numbers, as a decoder reads them. Errors: [`ShapeError::Invalid`]
    /// when `blocks` is 0, `lower_bits` is 0, a block would have more than
    /// [`MAX_RESULT_BITS`] columns, or `upper_start > blocks`; [`ShapeError::TooLarge`] when
    /// the word count overflows u64 or exceeds 2^58 (2 EiB).
    pub fn new(blocks: u64, lower_bits: u32, upper_start: u64) -> Result<Shape, ShapeError> {
        let top = lower_bits + u32::from(upper_start < blocks);
        if blocks == 0 || lower_bits == 0 || top > MAX_RESULT_BITS || upper_start > blocks {
            return Err(ShapeError::Invalid);
        }
        let shape = Shape {
            blocks,
            lower_bits,
            upper_start,
        };
        let words = blocks
            .checked_mul(u64::from(lower_bits))
            .and_then(|w| w.checked_add(blocks - upper_start))
            .and_then(|w| w.checked_mul(2))
            .ok_or(ShapeError::TooLarge)?;
        if words > 1 << 58 {
            return Err(ShapeError::TooLarge);
        }
        Ok(shape)
    }

    /// The shape for `items` distinct items at error rate `error_rate`.
    ///
    /// Slots: `items × 1.025` rounded up to whole blocks (at least one). Result bits: the
    /// smallest mix of `r` and `r + 1` columns whose expected false-positive rate is at most
    /// 0.9 ε, where `r = ⌊log2(1 / 0.9 ε)⌋`: a query starting in a lower block matches a
    /// foreign item with probability 2^−r, in an upper block 2^−(r+1).
    /// Errors: [`ShapeError::ErrorRate`] (ε not in (0, 1), or below 2^−32 / 0.9);
    /// [`ShapeError::TooLarge`].
    pub fn for_items(items: u64, error_rate: f64) -> Result<Shape, ShapeError> {
        if !(error_rate > 0.0 && error_rate < 1.0) {
            return Err(ShapeError::ErrorRate);
        }
        let aim = error_rate * AIM;
        let r = (-aim.log2()).floor().max(1.0);
        if r + 1.0 > f64::from(MAX_RESULT_BITS) {
            return Err(ShapeError::ErrorRate);
        }
        let r = r as u32;
        let slots = (items as f64 * (1.0 + OVERHEAD)).ceil();
        if slots > (1u64 << 60) as f64 {
            return Err(ShapeError::TooLarge);
        }
        let blocks = (slots as u64).div_ceil(WIDTH).max(1);
        // The fraction of start positions that must be in upper blocks:
        // (1 − f)·2^−r + f·2^−(r+1) ≤ aim  ⇔  f ≥ 2 − aim·2^(r+1).
        let upper = (2.0 - aim * 2f64.powi(r as i32 + 1)).clamp(0.0, 1.0);
        let positions = blocks * WIDTH - WIDTH + 1;
        let lower_positions = ((1.0 - upper) * positions as f64).floor() as u64;
        let upper_start = (lower_positions / WIDTH).min(blocks);
        Shape::new(blocks, r, upper_start)
    }

    /// Blocks of [`WIDTH`] slots.
    pub fn blocks(&self) -> u64 {
        self.blocks
    }

    /// Slots: blocks × 128.
    pub fn slots(&self) -> u64 {
        self.blocks * WIDTH
    }

    /// Columns (result bits) of the lower blocks, `r`.
    pub fn lower_bits(&self) -> u32 {
        self.lower_bits
    }

    /// The first block with `r + 1` columns (`blocks` when none has).
    pub fn upper_start(&self) -> u64 {
        self.upper_start
    }

    /// Columns (result bits) of block `block`.
    #[inline]
    pub fn columns_of(&self, block: u64) -> u32 {
        self.lower_bits + u32::from(block >= self.upper_start)
    }

    /// The index in the solution's words of block `block`'s first column.
    #[inline]
    pub fn word_offset(&self, block: u64) -> u64 {
        2 * (block * u64::from(self.lower_bits) + block.saturating_sub(self.upper_start))
    }

    /// u64 words of the solution (2 per column of every block).
    pub fn words(&self) -> u64 {
        self.word_offset(self.blocks)
    }

    /// Bytes of the solution.
    pub fn bytes(&self) -> u64 {
        self.words() * 8
    }

    /// The expected false-positive rate of a foreign item: start slots are uniform over
    /// `[0, slots − 128]`, a start in a lower block matches with probability 2^−r, in an
    /// upper block 2^−(r+1).
    pub fn error_rate(&self) -> f64 {
        let positions = (self.slots() - WIDTH + 1) as f64;
        let lower = ((self.upper_start * WIDTH) as f64).min(positions);
        let r = self.lower_bits as i32;
        (lower * 2f64.powi(-r) + (positions - lower) * 2f64.powi(-r - 1)) / positions
    }
}
