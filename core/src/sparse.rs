//! Filling a bit array from a stream so that a destination of fresh zeroed memory stays sparse.
//!
//! A big bit array is allocated zeroed and untouched ([`crate::layer::try_zeroed`]: calloc,
//! whose fresh pages the kernel zeroes on first touch), so its pages cost no resident memory
//! until written. A plain copy into it (a `LOADCHUNK` chunk, an RDB value, a `RESTORE`
//! payload) would write every page, zeros included, and a copy of a 1 GiB filter holding one
//! item would become 1 GiB resident. [`write_sparse`] writes only the blocks that change.

/// Bytes of a block of [`write_sparse`] (4 KiB): the smallest page size of the platforms the
/// module runs on, so a block never straddles two pages. On larger pages (16 or 64 KiB) a
/// page is several blocks and gets written if any of them is.
pub const BLOCK_BYTES: usize = 4096;

/// Bytes of the runs [`is_zero`] checks before it stops at a non-zero one (a full run is
/// one vectorised OR, cheaper to scan than to stop byte by byte).
const RUN_BYTES: usize = 256;

/// Whether every byte of `bytes` is zero: an OR over runs of 256 bytes (vectorised by the
/// compiler), stopping at the first run that is not zero.
pub fn is_zero(bytes: &[u8]) -> bool {
    bytes
        .chunks(RUN_BYTES)
        .all(|run| run.iter().fold(0u8, |acc, &b| acc | b) == 0)
}

/// Writes `src` into `dst` (over the shorter of the two lengths) block by block, blocks being
/// the [`BLOCK_BYTES`] of `dst` between multiples of [`BLOCK_BYTES`] of its address (its
/// pages): a block whose bytes in `src` are not all zero is copied; one whose bytes in `src`
/// are all zero is written (zeroed) only when `dst` holds something else there, and otherwise
/// left untouched. Afterwards `dst` equals `src` whatever it held before; when `dst` was
/// fresh zeroed memory, only the pages that received a non-zero byte were written, so it is
/// resident as far as `src` holds data. (Checking a fresh page of `dst` for zeros reads it,
/// which maps the kernel's shared zero page: no resident memory.)
///
/// Cost: one read of `src` (a fast OR scan) and, for its all-zero blocks, one of `dst`; the
/// copy of every non-zero block, as a plain copy would.
pub fn write_sparse(dst: &mut [u8], src: &[u8]) {
    let len = dst.len().min(src.len());
    let (dst, src) = (&mut dst[..len], &src[..len]);
    let mut lo = 0;
    // The first block ends at dst's next block boundary (a partial block), the others are whole.
    let mut hi = (BLOCK_BYTES - dst.as_ptr() as usize % BLOCK_BYTES).min(len);
    while lo < len {
        let (d, s) = (&mut dst[lo..hi], &src[lo..hi]);
        if !is_zero(s) {
            d.copy_from_slice(s);
        } else if !is_zero(d) {
            d.fill(0);
        }
        lo = hi;
        hi = (hi + BLOCK_BYTES).min(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_runs() {
        for (len, at, want) in [
            (0, None, true),
            (1, None, true),
            (1, Some(0), false),
            (255, Some(254), false),
            (257, Some(256), false),
            (5000, None, true),
            (5000, Some(4999), false),
            (5000, Some(2500), false),
        ] {
            let mut v = vec![0u8; len];
            if let Some(i) = at {
                v[i] = 0x80;
            }
            assert_eq!(is_zero(&v), want, "{len} bytes, non-zero at {at:?}");
        }
    }

    /// The destination ends equal to the source whatever it held (the pages written are
    /// checked on fresh memory by the module's `pages` tests, through `/proc/self/pagemap`).
    #[test]
    fn the_destination_ends_equal_to_the_source() {
        let b = BLOCK_BYTES;
        // At each offset within a block (jemalloc offsets big blocks by a random multiple of
        // the cache line): lengths below, at and above a block; data in the first, last and a
        // middle block; a destination holding data where the source is zero, and the reverse.
        for shift in [0, 1, 64, b - 1] {
            for len in [0, 1, b - 1, b, 3 * b + 5, 10 * b] {
                for (src_at, dst_at) in [
                    (vec![], vec![]),
                    (vec![0], vec![]),
                    (vec![len.saturating_sub(1)], vec![len / 2]),
                    (vec![len / 2, len / 2 + 1], vec![0, len.saturating_sub(1)]),
                ] {
                    let mut backing = vec![0u8; len + 2 * b];
                    let start = (b - backing.as_ptr() as usize % b) % b + shift;
                    let mut src = vec![0u8; len];
                    for &i in src_at.iter().filter(|&&i| i < len) {
                        src[i] = 7;
                    }
                    let dst = &mut backing[start..start + len];
                    for &i in dst_at.iter().filter(|&&i| i < len) {
                        dst[i] = 9;
                    }
                    write_sparse(dst, &src);
                    assert_eq!(
                        dst,
                        &src[..],
                        "shift {shift}, len {len}, {src_at:?} over {dst_at:?}"
                    );
                }
            }
        }
    }
}
