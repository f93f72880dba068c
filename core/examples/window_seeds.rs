//! Writes seed inputs for the `window_value` fuzz target: real window filters (a few windows,
//! scaling and not, with one to five live generations, one of them grown to a second layer),
//! as their SCANDUMP header and as their RDB value, in the target's input format (see
//! `fuzz/fuzz_targets/window_value.rs`: byte 0 even = a header, odd = a typed value stream).
//!
//! ```sh
//! cargo run --release -p redis-bf-core --example window_seeds -- fuzz/corpus/window_value
//! ```
//! `fuzz/make_seeds.py` runs it; file names are the inputs' FNV-1a hashes, so reruns add
//! nothing twice.

use redis_bf_core::rdb::{Value, Values};
use redis_bf_core::window::{self, Window};
use std::path::Path;

/// The target's typed value stream: tag 0 = u64 LE, 1 = f64 LE, 2 = u16 LE length + bytes.
fn typed_stream(values: &[Value]) -> Option<Vec<u8>> {
    let mut out = vec![1u8]; // odd first byte: the RDB decoder
    for v in values {
        match v {
            Value::Unsigned(u) => {
                out.push(0);
                out.extend_from_slice(&u.to_le_bytes());
            }
            Value::Double(d) => {
                out.push(1);
                out.extend_from_slice(&d.to_le_bytes());
            }
            Value::Bytes(b) => {
                out.push(2);
                out.extend_from_slice(&u16::try_from(b.len()).ok()?.to_le_bytes());
                out.extend_from_slice(b);
            }
        }
    }
    Some(out)
}

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn write(dir: &Path, data: &[u8]) -> std::io::Result<()> {
    std::fs::write(dir.join(format!("{:016x}", fnv1a(data))), data)
}

fn main() -> std::io::Result<()> {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "fuzz/corpus/window_value".into());
    let dir = Path::new(&dir);
    std::fs::create_dir_all(dir)?;
    let mut count = 0;
    // (window ms, capacity, error, expansion, nonscaling, generations with items, items each)
    let shapes: [(u64, u64, f64, u32, bool, u64, u32); 5] = [
        (1000, 100, 0.01, 2, false, 1, 10),
        (60_000, 400, 0.001, 4, false, 5, 30),
        (5000, 40, 0.05, 1, false, 3, 40), // the busiest generation grows a second layer
        (86_400_000, 200, 0.01, 2, true, 2, 20),
        (7, 8, 0.2, 3, false, 7, 5), // more generations than live: the oldest were dropped
    ];
    for (ms, capacity, error, expansion, nonscaling, gens, per_gen) in shapes {
        let mut w =
            Window::new(ms, capacity, error, expansion, nonscaling, 1000).expect("a valid window");
        for g in 0..gens {
            for i in 0..per_gen {
                let item = format!("seed:{g}:{i}");
                // A full non-scaling generation refuses the rest: fine for a seed.
                let _ = w.add_hashed(&Window::hash(item.as_bytes()), 1000 + g, |_| 1 << 20);
            }
        }
        // Seeds the decoders accept (so the fuzzer starts from valid inputs).
        let encoded = window::encode_header(&w);
        let decoded = window::decode_header(&encoded, 1 << 30).expect("a header that decodes");
        assert_eq!(window::encode_header(&decoded), encoded);
        let mut header = vec![0u8];
        header.extend_from_slice(&encoded);
        write(dir, &header)?;
        let mut values = Values::default();
        window::save(&w, &mut values);
        let mut reread = Values {
            values: values.values.clone(),
            pos: 0,
        };
        assert_eq!(
            window::load(&mut reread, window::ENCODING_VERSION).ok(),
            Some(w)
        );
        if let Some(stream) = typed_stream(&values.values) {
            write(dir, &stream)?;
            count += 1;
        }
        count += 1;
    }
    println!("{count} window seeds written under {}", dir.display());
    Ok(())
}
