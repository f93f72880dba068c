//! `apply_chunk` (BF.LOADCHUNK with a data chunk) with arbitrary iterators and chunks on a
//! chain decoded from a header.
//!
//! Input: `u16 LE header length`, the header, then operations `i64 LE iter, u16 LE length,
//! bytes`. A header that does not decode is replaced by a fixed two-layer chain, so every input
//! reaches `apply_chunk`. Each accepted chunk must land exactly where SCANDUMP would have read
//! it; each refused one must change nothing.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::dump::{apply_chunk, decode_header, walk, ChunkError};
use redis_bf::bloom::Chain;

fn fallback() -> Chain {
    let mut c = Chain::new(4, 0.1, 3, false, u64::MAX).expect("fixed chain");
    for x in b"abcdefghijkl" {
        c.add(&[*x], u64::MAX).expect("fixed adds");
    }
    c
}

/// The bytes at absolute offset `start` (0-based) of the concatenated bit arrays.
fn read_at(chain: &Chain, start: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut base = 0u64;
    for l in &chain.layers {
        let n = l.data.len() as u64;
        if start >= base && start < base + n {
            let off = (start - base) as usize;
            out.extend_from_slice(&l.data[off..off + len]);
            return out;
        }
        base += n;
    }
    out
}

fuzz_target!(|data: &[u8]| {
    let (mut chain, mut rest) = match data {
        [a, b, rest @ ..] => {
            let n = usize::from(u16::from_le_bytes([*a, *b])).min(rest.len());
            let chain =
                decode_header(&rest[..n], common::MEMORY_BOUND).unwrap_or_else(|_| fallback());
            (chain, &rest[n..])
        }
        _ => (fallback(), data),
    };
    let total = chain.bit_array_bytes();
    while rest.len() >= 10 {
        let iter = i64::from_le_bytes(rest[..8].try_into().unwrap());
        let len = usize::from(u16::from_le_bytes([rest[8], rest[9]])).min(rest.len() - 10);
        let chunk = &rest[10..10 + len];
        rest = &rest[10 + len..];
        let before = chain.clone();
        match apply_chunk(&mut chain, iter, chunk) {
            Ok(()) => {
                // The chunk starts at byte iter - len - 1 and lies inside one layer.
                let start = (iter - len as i64 - 1) as u64;
                assert!(start + len as u64 <= total);
                assert_eq!(read_at(&chain, start, len), chunk, "chunk landed elsewhere");
                assert_eq!(chain.size, before.size);
                assert_eq!(chain.layers.len(), before.layers.len());
            }
            Err(e) => {
                assert!(
                    common::same(&chain, &before),
                    "a refused chunk changed the chain"
                );
                if iter <= 0 {
                    assert_eq!(e, ChunkError::BadData);
                }
            }
        }
    }
    // A SCANDUMP walk of the result still covers every byte.
    let seen: u64 = walk(&chain).map(|(_, c)| c.len() as u64).sum();
    assert_eq!(seen, total);
    common::exercise(&mut chain);
});
