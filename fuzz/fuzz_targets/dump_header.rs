//! `decode_header` (BF.LOADCHUNK iterator 1) on arbitrary bytes, with a memory bound: it must
//! never panic, never allocate more than the bound, and an accepted header must re-encode to
//! exactly the input bytes.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::dump::{decode_header, encode_header};

fuzz_target!(|data: &[u8]| {
    if let Ok(mut chain) = decode_header(data, common::MEMORY_BOUND) {
        assert!(chain.bit_array_bytes() <= common::MEMORY_BOUND);
        assert_eq!(encode_header(&chain), data, "header round trip");
        assert_eq!(chain.size, chain.layers.iter().map(|l| l.size).sum::<u64>());
        common::exercise(&mut chain);
    }
});
