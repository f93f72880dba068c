//! The items a Ribbon filter keeps exactly: the hashes its band could not take, with a
//! directory by their top bits so that a lookup reads one or two entries, not a binary
//! search (every "no" of the solution asks here).

/// Sorted distinct hashes and, for `2^bits` ranges of their top bits, where each range
/// starts: range `i` is `hashes[index[i] .. index[i + 1]]`. The directory is built from the
/// hashes and never persisted.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub(super) struct Bumped {
    hashes: Vec<u64>,
    index: Vec<u32>,
    /// 64 − bits: a hash's range is `hash >> shift` (64 when there are no hashes).
    shift: u32,
}

impl Bumped {
    /// The directory over `hashes`; `None` when they are not strictly increasing or more than
    /// 2^32 − 1.
    pub(super) fn new(hashes: Vec<u64>) -> Option<Bumped> {
        if hashes.windows(2).any(|w| w[0] >= w[1]) || hashes.len() >= u32::MAX as usize {
            return None;
        }
        if hashes.is_empty() {
            return Some(Bumped {
                hashes,
                index: Vec::new(),
                shift: 64,
            });
        }
        // About one hash per range: bits = ⌈log2(len)⌉, at least 1.
        let bits = (usize::BITS - (hashes.len() - 1).leading_zeros()).max(1);
        let shift = 64 - bits;
        let mut index = Vec::with_capacity((1 << bits) + 1);
        let mut at = 0;
        for range in 0..=(1u64 << bits) {
            while at < hashes.len() && (hashes[at] >> shift) < range {
                at += 1;
            }
            index.push(at as u32);
        }
        Some(Bumped {
            hashes,
            index,
            shift,
        })
    }

    /// The hashes, increasing.
    pub(super) fn hashes(&self) -> &[u64] {
        &self.hashes
    }

    /// Bytes held: 8 per hash, 4 per directory entry.
    pub(super) fn bytes(&self) -> u64 {
        self.hashes.len() as u64 * 8 + self.index.len() as u64 * 4
    }

    /// Is `hash` one of the hashes?
    #[inline]
    pub(super) fn contains(&self, hash: u64) -> bool {
        if self.shift == 64 {
            return false;
        }
        let range = (hash >> self.shift) as usize;
        let (from, to) = (self.index[range] as usize, self.index[range + 1] as usize);
        self.hashes[from..to].contains(&hash)
    }
}
