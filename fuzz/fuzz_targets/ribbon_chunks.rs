//! `RF.LOADCHUNK` on the core: `ribbon::dump::Loader::new` (the 49-byte header) under a 16 MiB
//! body bound, then `apply` with arbitrary positions and chunks, `finish`, and queries of the
//! loaded filter; and a filter built from the input's hashes copied through SCANDUMP's walk.
//!
//! Input: byte 0 even: 49 header bytes, then records `u64 LE position, u16 LE length,
//! bytes`. A refused chunk changes nothing (the next position stays); an accepted one moves
//! it by its length; a complete body either finishes into a filter whose walk gives back the
//! bytes fed, or is refused for its bumped hashes. Byte 0 odd: the rest as u64 LE hashes
//! (at most 4096), built at an error rate from byte 1: every hash is found, before and after
//! a copy, and the copy equals the original.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::ribbon::dump::HEADER_BYTES;
use redis_bf::bloom::ribbon::dump::{body_bytes, chunk_at, encode_header, ChunkError, Loader};
use redis_bf::bloom::ribbon::{build, Ribbon};

const MEMORY_BOUND: u64 = 16 << 20;

fn walk(ribbon: &Ribbon) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    let mut position = 1;
    while let Some((next, data)) = chunk_at(ribbon, position) {
        out.push((position, data));
        position = next;
    }
    out
}

fn loaded(data: &[u8]) {
    if data.len() < HEADER_BYTES {
        assert!(Loader::new(data, MEMORY_BOUND).is_err());
        return;
    }
    let (header, mut rest) = data.split_at(HEADER_BYTES);
    let Ok(mut loader) = Loader::new(header, MEMORY_BOUND) else {
        return;
    };
    assert!(loader.body_bytes() <= MEMORY_BOUND);
    let mut fed = Vec::new();
    while rest.len() >= 10 {
        let position = u64::from_le_bytes(rest[..8].try_into().unwrap());
        let len = u16::from_le_bytes([rest[8], rest[9]]) as usize;
        rest = &rest[10..];
        let chunk = &rest[..len.min(rest.len())];
        rest = &rest[chunk.len()..];
        let before = loader.next_position();
        match loader.apply(position, chunk) {
            Ok(()) => {
                assert_eq!(loader.next_position(), before + chunk.len() as u64);
                fed.extend_from_slice(chunk);
            }
            Err(ChunkError::Position | ChunkError::TooLarge) => {
                assert_eq!(loader.next_position(), before)
            }
            Err(ChunkError::Bumped) => {
                // Refused whole: the loader is as it was, never complete.
                assert_eq!(loader.next_position(), before);
                assert!(!loader.is_complete());
                return;
            }
            Err(ChunkError::Incomplete) => unreachable!("apply never says incomplete"),
        }
        if loader.is_complete() {
            break;
        }
    }
    match loader.finish() {
        Ok(ribbon) => {
            let again: Vec<u8> = walk(&ribbon).into_iter().flat_map(|(_, c)| c).collect();
            assert_eq!(again, fed);
            assert_eq!(&encode_header(&ribbon)[..], header);
            for h in [0u64, 1, u64::MAX, 0x9e37_79b9_7f4a_7c15] {
                let _ = ribbon.contains_hash(h);
            }
            for &b in ribbon.bumped() {
                assert!(ribbon.contains_hash(b));
            }
        }
        Err(e) => assert!(matches!(e, ChunkError::Incomplete | ChunkError::Bumped)),
    }
}

fn built(data: &[u8]) {
    let Some((&rate, rest)) = data.split_first() else {
        return;
    };
    let hashes: Vec<u64> = rest
        .chunks_exact(8)
        .take(4096)
        .map(|c| u64::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let error_rate = 0.5f64.powi(1 + i32::from(rate % 30));
    let ribbon = build(hashes.clone(), error_rate).expect("valid rate");
    assert!(hashes.iter().all(|&h| ribbon.contains_hash(h)));
    let mut loader = Loader::new(&encode_header(&ribbon), u64::MAX).expect("own header");
    for (position, chunk) in walk(&ribbon) {
        loader.apply(position, &chunk).expect("own chunk");
    }
    assert_eq!(loader.body_bytes(), body_bytes(&ribbon));
    assert_eq!(loader.finish().expect("complete"), ribbon);
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        loaded(rest)
    } else {
        built(rest)
    }
});
