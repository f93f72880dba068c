//! Shared checks for the fuzz targets: exercise a decoded chain the way the module does after a
//! LOADCHUNK / RESTORE (lookups, adds with a bounded growth budget, a SCANDUMP walk, RDB
//! re-encoding) and assert the invariants every decoded chain must keep.
#![allow(dead_code)]

use redis_bf::bloom::dump::{chunk_at, decode_header, encode_header, MAX_CHUNK_BYTES};
use redis_bf::bloom::rdb::{self, Value, Values};
use redis_bf::bloom::Chain;

/// Largest bit-array total a fuzz input may make the decoders allocate (16 MiB).
pub const MEMORY_BOUND: u64 = 16 << 20;

/// Byte budget for a layer added while exercising a chain.
const GROWTH_BUDGET: u64 = 1 << 20;

/// Up to 8 bytes of `b`, zero-padded.
fn word(b: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    let n = b.len().min(8);
    w[..n].copy_from_slice(&b[..n]);
    w
}

/// The typed value stream an input describes: tag `t % 4` = 0 unsigned (8 bytes LE), 1 double
/// (8 bytes LE), 2 string (u16 LE length then bytes, clipped to the input), 3 small unsigned
/// (1 byte); a value cut short by the end of the input is zero-padded.
pub fn values(mut data: &[u8]) -> Vec<Value> {
    let mut out = Vec::new();
    while let [tag, rest @ ..] = data {
        data = rest;
        match tag % 4 {
            0 => {
                out.push(Value::Unsigned(u64::from_le_bytes(word(data))));
                data = &data[data.len().min(8)..];
            }
            1 => {
                out.push(Value::Double(f64::from_le_bytes(word(data))));
                data = &data[data.len().min(8)..];
            }
            2 => {
                let n = match data {
                    [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
                    _ => 0,
                };
                data = &data[data.len().min(2)..];
                let n = n.min(data.len());
                out.push(Value::Bytes(data[..n].to_vec()));
                data = &data[n..];
            }
            _ => {
                out.push(Value::Unsigned(u64::from(
                    data.first().copied().unwrap_or(0),
                )));
                data = &data[data.len().min(1)..];
            }
        }
    }
    out
}

/// The value stream of `data` (see [`values`]) ready to be read from its start, and the bytes
/// its string values carry: what a decoder may allocate at most for it.
pub fn reader(data: &[u8]) -> (Values, u64) {
    let values = values(data);
    let bytes = values
        .iter()
        .map(|v| match v {
            Value::Bytes(b) => b.len() as u64,
            _ => 0,
        })
        .sum();
    (Values { values, pos: 0 }, bytes)
}

/// Chain equality with doubles compared bit for bit (a decoded layer may carry a NaN `bpe`
/// when its hash count is 0, and NaN != NaN).
pub fn same(a: &Chain, b: &Chain) -> bool {
    a.size == b.size
        && a.options == b.options
        && a.growth == b.growth
        && a.layers.len() == b.layers.len()
        && a.layers.iter().zip(&b.layers).all(|(x, y)| {
            let (p, q) = (&x.params(), &y.params());
            x.size == y.size
                && x.data == y.data
                && p.entries == q.entries
                && p.error.to_bits() == q.error.to_bits()
                && p.bpe.to_bits() == q.bpe.to_bits()
                && p.hashes == q.hashes
                && p.bits == q.bits
                && p.bytes == q.bytes
                && p.n2 == q.n2
        })
}

/// Invariants of any chain a decoder accepted, then lookups, adds and a dump round trip.
pub fn exercise(chain: &mut Chain) {
    assert!(
        !chain.layers.is_empty(),
        "a decoded chain has at least one layer"
    );
    for l in &chain.layers {
        assert!(
            l.params().is_consistent(),
            "decoded layer fails its integrity test"
        );
        assert_eq!(
            l.data.len() as u64,
            l.params().bytes,
            "bit array length = bytes"
        );
    }
    // SCANDUMP walk: chunks never cross a layer, never exceed 16 MiB, and cover every byte.
    let mut iter = 1i64;
    let mut total = 0u64;
    loop {
        let (next, chunk) = chunk_at(chain, iter);
        if next == 0 {
            assert!(chunk.is_empty());
            break;
        }
        assert!(!chunk.is_empty() && chunk.len() <= MAX_CHUNK_BYTES);
        assert_eq!(next, iter + chunk.len() as i64);
        total += chunk.len() as u64;
        iter = next;
    }
    assert_eq!(total, chain.bit_array_bytes());
    // Whatever a decoder accepted must survive SCANDUMP → LOADCHUNK, which is also how the AOF
    // rewrite stores it: its header decodes again to the same shape.
    let header = encode_header(chain);
    let again = decode_header(&header, u64::MAX).unwrap_or_else(|e| {
        panic!(
            "the dump header of an accepted chain is refused ({e:?}): LOADCHUNK and an AOF \
             rewrite would lose this filter"
        )
    });
    assert_eq!(again.size, chain.size);
    assert_eq!(again.layers.len(), chain.layers.len());
    assert_eq!(encode_header(&again), header);
    // RDB round trip.
    let mut v = Values::default();
    rdb::save(chain, &mut v);
    let loaded = rdb::load(&mut v, rdb::ENCODING_VERSION).expect("saved chain loads");
    assert!(same(&loaded, chain), "RDB round trip");
    // Lookups and adds: an added item is always found afterwards; errors change nothing.
    let _ = chain.capacity();
    let _ = chain.mem_usage();
    for item in [&b""[..], b"a", b"hello", b"\xff\x00binary\x01"] {
        let before = chain.clone();
        match chain.add(item, GROWTH_BUDGET) {
            Ok(_) => assert!(chain.contains(item), "added item not found"),
            Err(_) => assert!(same(chain, &before), "a failed add changed the chain"),
        }
    }
}
