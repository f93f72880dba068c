//! The SCANDUMP / LOADCHUNK dump format (`docs/format.md` ("SCANDUMP")): a packed
//! little-endian header for iterator 0, then the layers' bit arrays as chunks addressed by a
//! 1-based byte iterator.

use super::chain::Chain;
use super::layer::{try_zeroed, Layer, LayerParams, OPT_ALL};
use crate::sparse::write_sparse;

/// Largest chunk SCANDUMP returns, in bytes (16 MiB, as RedisBloom).
pub const MAX_CHUNK_BYTES: usize = 16 * 1024 * 1024;
/// Bytes of the chain part of the header.
pub const HEADER_FIXED_BYTES: usize = 20;
/// Bytes per layer in the header.
pub const HEADER_LAYER_BYTES: usize = 53;

/// Why a LOADCHUNK payload was refused. Nothing changes on any of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChunkError {
    /// The header or the iterator is malformed (`ERR received bad data`).
    BadData,
    /// The chunk's start is outside every layer (`ERR invalid offset - no link found`).
    NoLink,
    /// The chunk runs past the end of its layer (`ERR invalid chunk - Too big for current filter`).
    TooBig,
    /// A valid header whose bit arrays are over the memory budget or cannot be allocated
    /// (`ERR Insufficient memory to create filter`).
    OutOfMemory,
    /// Window filters only: the filter changed during the SCANDUMP walk so that the walk
    /// cannot give a consistent copy (a generation it names is gone at the source, or the
    /// copy's header has no such generation or layer): the client starts again from
    /// iterator 0 ([`CHANGED_MESSAGE`]).
    Changed,
}

/// The reply text of [`ChunkError::Changed`].
pub const CHANGED_MESSAGE: &str =
    "ERR window filter changed during SCANDUMP, start again from iterator 0";

/// Encodes the header of `chain`: 20 + 53 × layers bytes (`docs/format.md` ("SCANDUMP header")).
pub fn encode_header(chain: &Chain) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_FIXED_BYTES + HEADER_LAYER_BYTES * chain.layers.len());
    out.extend_from_slice(&chain.size.to_le_bytes());
    out.extend_from_slice(&(chain.layers.len() as u32).to_le_bytes());
    out.extend_from_slice(&chain.options.to_le_bytes());
    out.extend_from_slice(&chain.growth.to_le_bytes());
    for l in &chain.layers {
        let p = &l.params();
        out.extend_from_slice(&(l.data.len() as u64).to_le_bytes());
        out.extend_from_slice(&p.bits.to_le_bytes());
        out.extend_from_slice(&l.size.to_le_bytes());
        out.extend_from_slice(&p.error.to_le_bytes());
        out.extend_from_slice(&p.bpe.to_le_bytes());
        out.extend_from_slice(&p.hashes.to_le_bytes());
        out.extend_from_slice(&p.entries.to_le_bytes());
        out.push(p.n2);
    }
    out
}

/// Little-endian field reader over a slice whose length was already checked.
struct Fields<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Fields<'_> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], ChunkError> {
        let end = self.pos.checked_add(N).ok_or(ChunkError::BadData)?;
        let bytes = self.data.get(self.pos..end).ok_or(ChunkError::BadData)?;
        self.pos = end;
        bytes.try_into().map_err(|_| ChunkError::BadData)
    }
    fn u64(&mut self) -> Result<u64, ChunkError> {
        self.take::<8>().map(u64::from_le_bytes)
    }
    fn u32(&mut self) -> Result<u32, ChunkError> {
        self.take::<4>().map(u32::from_le_bytes)
    }
    fn f64(&mut self) -> Result<f64, ChunkError> {
        self.take::<8>().map(f64::from_le_bytes)
    }
    fn u8(&mut self) -> Result<u8, ChunkError> {
        self.take::<1>().map(|b| b[0])
    }
}

/// Decodes a header into a chain with zeroed bit arrays, applying every check of `docs/format.md` ("LOADCHUNK")
/// (exact length, layer count > 0, per-layer integrity, option mask, Σ layer sizes = chain
/// size) before allocating anything. The bit arrays together may be at most `max_bytes`.
///
/// Errors: [`ChunkError::BadData`] for any violation; [`ChunkError::OutOfMemory`] for a valid
/// header whose arrays total more than `max_bytes` or cannot be allocated.
pub fn decode_header(data: &[u8], max_bytes: u64) -> Result<Chain, ChunkError> {
    if data.len() < HEADER_FIXED_BYTES {
        return Err(ChunkError::BadData);
    }
    let mut f = Fields { data, pos: 0 };
    let size = f.u64()?;
    let nfilters = f.u32()?;
    let options = f.u32()?;
    let growth = f.u32()?;
    let expected_len = (nfilters as usize)
        .checked_mul(HEADER_LAYER_BYTES)
        .and_then(|n| n.checked_add(HEADER_FIXED_BYTES));
    if nfilters == 0
        || u64::from(nfilters) > crate::chain::MAX_LAYERS
        || expected_len != Some(data.len())
        || options & !OPT_ALL != 0
    {
        return Err(ChunkError::BadData);
    }
    // First pass: validate every field and the totals; nothing is allocated yet.
    let mut shapes = Vec::with_capacity(nfilters as usize);
    let mut total_size: u64 = 0;
    let mut total_bytes: u64 = 0;
    for _ in 0..nfilters {
        let bytes = f.u64()?;
        let bits = f.u64()?;
        let layer_size = f.u64()?;
        let error = f.f64()?;
        let bpe = f.f64()?;
        let hashes = f.u32()?;
        let entries = f.u64()?;
        let n2 = f.u8()?;
        let params = LayerParams::from_fields(entries, error, bpe, hashes, bits, bytes, n2);
        if !params.is_consistent() {
            return Err(ChunkError::BadData);
        }
        total_size = total_size
            .checked_add(layer_size)
            .ok_or(ChunkError::BadData)?;
        total_bytes = total_bytes.checked_add(bytes).ok_or(ChunkError::BadData)?;
        shapes.push((params, layer_size));
    }
    if total_size != size {
        return Err(ChunkError::BadData);
    }
    if total_bytes > max_bytes {
        return Err(ChunkError::OutOfMemory);
    }
    let mut layers = Vec::with_capacity(shapes.len());
    for (params, layer_size) in shapes {
        layers.push(Layer::from_parts(
            params,
            layer_size,
            try_zeroed(params.bytes).map_err(|_| ChunkError::OutOfMemory)?,
        ));
    }
    Ok(Chain {
        size,
        options,
        growth,
        layers: layers.into_boxed_slice(),
    })
}

/// Locates byte `offset` of a chain's concatenated bit arrays: (layer index, offset inside
/// it). Window filters address each generation's chain with it too.
pub(crate) fn locate(chain: &Chain, offset: u64) -> Option<(usize, usize)> {
    let mut start = 0u64;
    for (i, l) in chain.layers.iter().enumerate() {
        let len = l.data.len() as u64;
        if offset < start + len {
            return Some((i, (offset - start) as usize));
        }
        start += len;
    }
    None
}

/// One SCANDUMP step for `iter` ≥ 1 (`docs/format.md` ("SCANDUMP")): the bytes from offset `iter − 1` to the end of its
/// layer, at most [`MAX_CHUNK_BYTES`], and the next iterator (`iter + len`). Past the end, or
/// for `iter` < 1: `(0, [])`.
pub fn chunk_at(chain: &Chain, iter: i64) -> (i64, &[u8]) {
    if iter < 1 {
        return (0, &[]);
    }
    match locate(chain, (iter - 1) as u64) {
        None => (0, &[]),
        Some((i, off)) => {
            let data = &chain.layers[i].data;
            let end = data.len().min(off + MAX_CHUNK_BYTES);
            let chunk = &data[off..end];
            (iter + chunk.len() as i64, chunk)
        }
    }
}

/// The whole SCANDUMP walk of `chain`: every `(iterator, chunk)` pair [`chunk_at`] returns from
/// iterator 1 on, up to the closing `(0, [])`; each pair is what [`apply_chunk`] takes.
pub fn walk(chain: &Chain) -> impl Iterator<Item = (i64, &[u8])> {
    let mut iter = 1;
    std::iter::from_fn(move || {
        let (next, chunk) = chunk_at(chain, iter);
        iter = next;
        (next != 0).then_some((next, chunk))
    })
}

/// Applies a LOADCHUNK data chunk to an existing chain (`docs/format.md` ("LOADCHUNK")): `iter` is the iterator SCANDUMP
/// returned *with* the chunk, so the chunk starts at byte `iter − len − 1`. Counters are not
/// touched.
///
/// Errors: [`ChunkError::BadData`] when `iter` ≤ 0 or `iter` < len; [`ChunkError::NoLink`] when
/// the start is outside every layer; [`ChunkError::TooBig`] when the chunk runs past its layer.
pub fn apply_chunk(chain: &mut Chain, iter: i64, data: &[u8]) -> Result<(), ChunkError> {
    let offset = chunk_offset(iter, data.len())?;
    let (i, off) = locate(chain, offset).ok_or(ChunkError::NoLink)?;
    copy_into(&mut chain.layers[i].data, off, data)
}

/// The byte offset (0-based, in the concatenated bit arrays) where a LOADCHUNK chunk of `len`
/// bytes sent with iterator `iter` starts: `iter − len − 1`.
///
/// Errors: [`ChunkError::BadData`] when `iter` ≤ 0 or `iter` < len; [`ChunkError::NoLink`] when
/// the chunk would start before the first byte.
pub(crate) fn chunk_offset(iter: i64, len: usize) -> Result<u64, ChunkError> {
    let len = i64::try_from(len).map_err(|_| ChunkError::BadData)?;
    if iter <= 0 || iter < len {
        return Err(ChunkError::BadData);
    }
    let start = iter - len;
    if start < 1 {
        return Err(ChunkError::NoLink);
    }
    Ok((start - 1) as u64)
}

/// Copies a chunk into a bit array at byte `off` (< its length), writing only the pages that
/// change ([`write_sparse`]): a copy filled into a fresh zeroed array stays as sparse as its
/// source.
///
/// Errors: [`ChunkError::TooBig`], nothing copied, when the chunk runs past the array's end.
pub(crate) fn copy_into(array: &mut [u8], off: usize, data: &[u8]) -> Result<(), ChunkError> {
    if data.len() > array.len() - off {
        return Err(ChunkError::TooBig);
    }
    write_sparse(&mut array[off..off + data.len()], data);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::MAX_LAYERS;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    #[test]
    fn layer_counts_over_the_limit_are_refused() {
        // An empty one-layer filter's layer record repeated: sizes still add up (all 0).
        let c = Chain::new(1, 0.5, 1, false, u64::MAX).unwrap();
        let h = encode_header(&c);
        let layer = &h[HEADER_FIXED_BYTES..];
        for (n, ok) in [(1, true), (MAX_LAYERS, true), (MAX_LAYERS + 1, false)] {
            let mut d = h[..HEADER_FIXED_BYTES].to_vec();
            d[8..12].copy_from_slice(&(n as u32).to_le_bytes());
            for _ in 0..n {
                d.extend_from_slice(layer);
            }
            assert_eq!(decode_header(&d, u64::MAX).is_ok(), ok, "{n} layers");
        }
    }

    #[test]
    fn gv1_header_and_chunk() {
        let mut c = Chain::new(1000, 0.01, 2, false, u64::MAX).unwrap();
        c.add(b"hello", u64::MAX).unwrap();
        assert_eq!(
            hex(&encode_header(&c)),
            "01000000000000000100000005000000020000006805000000000000402b0000000000000100000000000000\
             7b14ae47e17a743fe9862fb2350e264008000000e80300000000000000"
        );
        let (next, chunk) = chunk_at(&c, 1);
        assert_eq!((next, chunk.len()), (1385, 1384));
        assert_eq!(chunk_at(&c, 1385), (0, &[][..]));
        // An arbitrary iterator inside a layer.
        let (next, chunk) = chunk_at(&c, 5);
        assert_eq!((next, chunk.len()), (1385, 1380));
    }

    #[test]
    fn header_round_trip_and_rejections() {
        let mut c = Chain::new(4, 0.1, 3, false, u64::MAX).unwrap();
        for x in b"abcdefghijkl" {
            c.add(&[*x], u64::MAX).unwrap();
        }
        let h = encode_header(&c);
        let mut restored = decode_header(&h, u64::MAX).unwrap();
        for (next, chunk) in walk(&c) {
            apply_chunk(&mut restored, next, chunk).unwrap();
        }
        assert_eq!(restored, c);
        // Wrong length, zero layers, bad option bit, sizes that do not add up, budget.
        assert_eq!(
            decode_header(&h[..h.len() - 1], u64::MAX),
            Err(ChunkError::BadData)
        );
        let mut bad = h.clone();
        bad[12] = 16;
        assert_eq!(decode_header(&bad, u64::MAX), Err(ChunkError::BadData));
        let mut bad = h.clone();
        bad[0] ^= 1;
        assert_eq!(decode_header(&bad, u64::MAX), Err(ChunkError::BadData));
        assert_eq!(decode_header(&h, 8), Err(ChunkError::OutOfMemory));
        assert!(decode_header(&h, 24).is_ok());
    }

    #[test]
    fn chunk_offsets() {
        let mut c = Chain::new(4, 0.1, 3, false, u64::MAX).unwrap();
        for x in b"abcdefghijkl" {
            c.add(&[*x], u64::MAX).unwrap();
        }
        // Layers of 8 and 16 bytes: offsets 0..24.
        assert_eq!(apply_chunk(&mut c, 0, b""), Err(ChunkError::BadData));
        assert_eq!(apply_chunk(&mut c, 2, b"abc"), Err(ChunkError::BadData));
        assert_eq!(apply_chunk(&mut c, 3, b"abc"), Err(ChunkError::NoLink));
        assert_eq!(apply_chunk(&mut c, 26, b""), Err(ChunkError::NoLink));
        assert_eq!(apply_chunk(&mut c, 25, b""), Err(ChunkError::NoLink));
        assert_eq!(apply_chunk(&mut c, 24, b""), Ok(()));
        assert_eq!(
            apply_chunk(&mut c, 12, b"0123456789"),
            Err(ChunkError::TooBig)
        );
        assert_eq!(apply_chunk(&mut c, 9, b"01234567"), Ok(()));
        assert_eq!(&c.layers[0].data[..], b"01234567");
    }
}
