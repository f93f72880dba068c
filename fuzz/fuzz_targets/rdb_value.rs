//! `rdb::load` (RDB load / RESTORE of an `MBbloom--` value) over an in-memory value stream built
//! from the input.
//!
//! Input: byte 0 picks the encoding version (`b % 7`, so 5 and 6 are invalid ones), then typed
//! values: tag `t % 4` = 0 unsigned (8 bytes LE), 1 double (8 bytes LE), 2 string (u16 LE
//! length then bytes, clipped to the input), 3 small unsigned (1 byte). An accepted value must
//! re-encode (version 4) to a stream that loads back equal.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::rdb::{self, Values};

fuzz_target!(|data: &[u8]| {
    let Some((&v, rest)) = data.split_first() else {
        return;
    };
    let encver = i32::from(v % 7);
    let (mut reader, input_bytes) = common::reader(rest);
    if let Ok(mut chain) = rdb::load(&mut reader, encver) {
        assert!((0..=rdb::ENCODING_VERSION).contains(&encver));
        // No allocation beyond what the stream carried.
        assert!(chain.bit_array_bytes() <= input_bytes);
        let mut saved = Values::default();
        rdb::save(&chain, &mut saved);
        let again = rdb::load(&mut saved, rdb::ENCODING_VERSION).expect("saved chain loads");
        assert!(common::same(&again, &chain), "RDB round trip");
        common::exercise(&mut chain);
    }
});
