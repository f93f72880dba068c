//! The module's number parsers (`redis_bf::module::args`): no panic on any bytes; an accepted
//! integer is exactly its canonical decimal text (Redis' string2ll rules); every i64 and every
//! non-NaN f64 printed the way the module prints it (`docs/commands.md` "Replication and AOF": the module replicates implicit creations with
//! `format!("{}", error)`, and `CONFIG GET bf.error-rate` with `format!("{:?}", rate)`) parses
//! back to the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use redis_bf::module::args::{is_keyword, parse_f64, parse_i64};

fuzz_target!(|data: &[u8]| {
    if let Some(v) = parse_i64(data) {
        assert_eq!(
            v.to_string().as_bytes(),
            data,
            "integer text is not canonical"
        );
    }
    if let Some(v) = parse_f64(data) {
        assert!(!v.is_nan(), "NaN accepted");
        let text = format!("{v}");
        let back = parse_f64(text.as_bytes()).expect("printed double parses");
        assert_eq!(back.to_bits(), v.to_bits(), "double round trip via {text}");
        let short = format!("{v:?}");
        let back = parse_f64(short.as_bytes()).expect("shortest double parses");
        assert_eq!(back.to_bits(), v.to_bits(), "double round trip via {short}");
    }
    let _ = is_keyword(data, "NONSCALING");
    if data.len() >= 8 {
        let i = i64::from_le_bytes(data[..8].try_into().unwrap());
        assert_eq!(parse_i64(i.to_string().as_bytes()), Some(i));
        let f = f64::from_le_bytes(data[..8].try_into().unwrap());
        if !f.is_nan() {
            let text = format!("{f}");
            let back = parse_f64(text.as_bytes());
            assert_eq!(
                back.map(f64::to_bits),
                Some(f.to_bits()),
                "double round trip via {text}"
            );
        }
    }
});
