//! The window filter's decoders: `window::decode_header` (BF.LOADCHUNK iterator 1 of a window
//! dump) and `window::load` (RDB load / RESTORE of a `bf-window` value), with a memory bound.
//!
//! Input: byte 0 picks the decoder. Even: the rest is a header, prefixed with the window magic
//! and a zero layer count when bit 1 is set (so the fuzzer starts past them). Odd: the rest is
//! a typed value stream as in `rdb_value` (tag `t % 4` = 0 unsigned, 1 double, 2 string with a
//! u16 length, 3 small unsigned). An accepted value must re-encode to exactly the input
//! (header) or to a stream that loads back equal (RDB), and then take adds over several
//! generations, lookups and a SCANDUMP walk (loaded back into a copy equal to it).
#![no_main]

#[path = "common.rs"]
mod common;

use libfuzzer_sys::fuzz_target;
use redis_bf::bloom::rdb::Values;
use redis_bf::bloom::window::{self, Window};

fn exercise(w: &mut Window) {
    assert!(w.gens.len() as u64 <= window::LIVE);
    assert!(w.gens.windows(2).all(|p| p[0].0 < p[1].0));
    // A SCANDUMP walk covers exactly the bit arrays, with iterators in 1 .. 2^52, and loads
    // into a copy made from the header that equals the filter.
    let mut copy = window::decode_header(&window::encode_header(w), u64::MAX).ok();
    let mut total = 0u64;
    let mut iter = 1;
    loop {
        let (next, chunk) = window::scan_chunk(w, iter).expect("an unchanged filter's walk");
        if next == 0 {
            break;
        }
        assert!(next > 0 && next < window::ITER_LIMIT);
        if let Some(c) = copy.as_mut() {
            window::apply_chunk(c, next, chunk).expect("its own chunk");
        }
        total += chunk.len() as u64;
        iter = next;
    }
    assert_eq!(total, w.bit_array_bytes());
    if let Some(c) = copy {
        assert!(c == *w, "SCANDUMP → LOADCHUNK round trip");
    }
    let g = w.generation;
    for step in 0..7u64 {
        for i in 0..4u8 {
            let h = Window::hash(&[i, step as u8]);
            let r = w.add_hashed(&h, g.saturating_add(step), |existing| {
                common::MEMORY_BOUND.saturating_sub(existing)
            });
            if r.is_ok() {
                assert!(w.contains_at(&h, w.generation));
            }
            assert!(w.bit_array_bytes() <= common::MEMORY_BOUND.max(total));
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        let input = if mode & 2 != 0 {
            [&window::HEADER_MAGIC[..], &[0, 0, 0, 0], rest].concat()
        } else {
            rest.to_vec()
        };
        if let Ok(mut w) = window::decode_header(&input, common::MEMORY_BOUND) {
            assert!(w.bit_array_bytes() <= common::MEMORY_BOUND);
            // A version 1 header (older builds) re-encodes as the current version; only its
            // chunks' addressing differs, and the walk below uses the current one.
            let mut expected = input.clone();
            if w.offset_chunks {
                expected[12..16].copy_from_slice(&window::HEADER_VERSION.to_le_bytes());
                w.offset_chunks = false;
            }
            assert_eq!(window::encode_header(&w), expected, "header round trip");
            exercise(&mut w);
        }
    } else {
        let mut reader = Values {
            values: common::values(rest),
            pos: 0,
        };
        if let Ok(mut w) = window::load(&mut reader, window::ENCODING_VERSION) {
            let mut saved = Values::default();
            window::save(&w, &mut saved);
            let again = window::load(&mut saved, window::ENCODING_VERSION).expect("reloads");
            assert_eq!(again, w, "RDB round trip");
            exercise(&mut w);
        }
    }
});
