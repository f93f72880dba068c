//! `cuckoo::rdb::load` (RDB load / RESTORE of an `MBbloomCF` value) over an in-memory value
//! stream built from the input, for every encoding version, then the module's operations on
//! what it accepted.
//!
//! Input: byte 0 picks the encoding version (`b % 7`: 5 and 6 are invalid ones), byte 1 the
//! number of operation bytes at the end (`b * 2`), then typed values as in `rdb_value` (tag
//! `t % 4` = 0 unsigned (8 bytes LE), 1 double, 2 string (u16 LE length then bytes), 3 small
//! unsigned (1 byte)), then the operations (see `cuckoo_common::exercise`). An accepted value
//! allocates no more table bytes than the stream carried, saves and loads back equal, and
//! keeps every invariant through adds, deletions, compactions and a SCANDUMP walk.
#![no_main]

#[path = "common.rs"]
mod common;
#[path = "cuckoo_common.rs"]
mod cuckoo_common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::cuckoo::rdb;

fuzz_target!(|data: &[u8]| {
    let [v, n_ops, rest @ ..] = data else {
        return;
    };
    let encver = i32::from(v % 7);
    let split = rest.len().saturating_sub(usize::from(*n_ops) * 2);
    let (stream, ops) = rest.split_at(split);
    let (mut reader, input_bytes) = common::reader(stream);
    if let Ok(mut cf) = rdb::load(&mut reader, encver) {
        assert!((0..=rdb::ENCODING_VERSION).contains(&encver));
        assert!(
            cf.table_bytes() <= input_bytes,
            "allocated beyond the stream"
        );
        cuckoo_common::exercise(&mut cf, ops, input_bytes + (64 << 10));
    }
});
