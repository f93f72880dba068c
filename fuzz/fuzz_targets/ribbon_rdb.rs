//! `ribbon::rdb::load` (RDB load / RESTORE of a `bf-ribbon` value) over an in-memory value
//! stream built from the input, under a 16 MiB body bound, then a save/load round trip of
//! what it accepted.
//!
//! Input: byte 0 picks the encoding version (`b % 3`: 0 and 2 are invalid ones), then typed
//! values as in `rdb_value` (tag `t % 4` = 0 unsigned (8 bytes LE), 1 double, 2 string (u16 LE
//! length then bytes), 3 small unsigned (1 byte)). An accepted staging value holds no more
//! hashes than the stream carried bytes / 8, strictly the count it announced; a built one no
//! more solution and bumped bytes than the stream carried; a half copy within the bound. Each
//! saves into a stream that loads back into the same stream.
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::rdb::Values;
use redis_bf::bloom::ribbon::rdb::{self, Stored};

const MEMORY_BOUND: u64 = 16 << 20;

fn saved(stored: &Stored) -> Values {
    let mut v = Values::default();
    match stored {
        Stored::Staging(s) => rdb::save_staging(s, &mut v),
        Stored::Built(r) => rdb::save_built(r, &mut v),
        Stored::Loading(l) => rdb::save_loading(l, &mut v),
    }
    v
}

fuzz_target!(|data: &[u8]| {
    let [v, stream @ ..] = data else {
        return;
    };
    let encver = i32::from(v % 3);
    let (mut reader, input_bytes) = common::reader(stream);
    let Ok(stored) = rdb::load(&mut reader, encver, MEMORY_BOUND) else {
        return;
    };
    assert_eq!(encver, rdb::ENCODING_VERSION);
    match &stored {
        Stored::Staging(s) => assert!(s.len() as u64 * 8 <= input_bytes, "more hashes than bytes"),
        Stored::Built(r) => assert!(
            r.bytes() + r.bumped().len() as u64 * 8 <= input_bytes,
            "a body larger than the stream"
        ),
        Stored::Loading(l) => {
            assert!(!l.is_complete());
            assert!(l.body_bytes() <= MEMORY_BOUND);
        }
    }
    let first = saved(&stored);
    let again = rdb::load(&mut first.clone(), encver, MEMORY_BOUND).expect("a saved value loads");
    assert_eq!(saved(&again), first, "save, load, save differs");
});
