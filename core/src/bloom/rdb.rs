//! The RDB value of a `MBbloom--` key (`docs/format.md` ("RDB value")), written and read
//! through small reader/writer traits so the encoding is testable without Redis.
//!
//! Layout (encoding version 4; U = unsigned, D = double, S = string buffer):
//! U chain size, U layer count, U options, U growth, then per layer, oldest first:
//! U entries, D error, U hashes, D bpe, U bits, U n2, S bit array, U layer size.
//! Versions 0–3 omit fields: options (< 2), growth (< 4), bits and n2 (0).

use super::chain::{Chain, DEFAULT_EXPANSION};
use super::layer::{Layer, LayerParams, OPT_ALL};

/// The encoding version we write.
pub const ENCODING_VERSION: i32 = 4;

/// A value could not be decoded: short read, bad field, or a layer that fails the integrity
/// test. RESTORE answers `Bad data format`; an RDB load fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DecodeError;

/// Source of module-API values (RDB file, DUMP payload, or memory in tests).
pub trait ValueReader {
    /// Next unsigned value.
    fn read_unsigned(&mut self) -> Result<u64, DecodeError>;
    /// Next double.
    fn read_double(&mut self) -> Result<f64, DecodeError>;
    /// Next string buffer (its length is the reader's to bound).
    fn read_bytes(&mut self) -> Result<Vec<u8>, DecodeError>;
}

/// Sink of module-API values.
pub trait ValueWriter {
    /// Writes an unsigned value.
    fn write_unsigned(&mut self, v: u64);
    /// Writes a double.
    fn write_double(&mut self, v: f64);
    /// Writes a string buffer.
    fn write_bytes(&mut self, v: &[u8]);
}

/// Writes `chain` in the encoding-version-4 layout.
pub fn save(chain: &Chain, w: &mut impl ValueWriter) {
    w.write_unsigned(chain.size);
    w.write_unsigned(chain.layers.len() as u64);
    w.write_unsigned(u64::from(chain.options));
    w.write_unsigned(u64::from(chain.growth));
    for l in &chain.layers {
        let p = &l.params();
        w.write_unsigned(p.entries);
        w.write_double(p.error);
        w.write_unsigned(u64::from(p.hashes));
        w.write_double(p.bpe);
        w.write_unsigned(p.bits);
        w.write_unsigned(u64::from(p.n2));
        w.write_bytes(&l.data);
        w.write_unsigned(l.size);
    }
}

/// Reads a chain written with encoding version `encver` (0–4). Layers are read one at a time
/// (no allocation sized by the announced count), each must pass the integrity test, and the
/// string must hold at least ⌈bits/8⌉ bytes. The chain must also pass the checks a SCANDUMP
/// header gets (option bits within `OPT_ALL`, Σ layer sizes = chain size): RedisBloom skips
/// them on RDB load, but a value that fails them could not be written back by an AOF rewrite
/// (its `BF.LOADCHUNK` header would be refused) and would be lost there.
///
/// Errors: [`DecodeError`] for encver > 4, zero layers, fields out of range, a failed layer
/// or chain test or any read error.
pub fn load(r: &mut impl ValueReader, encver: i32) -> Result<Chain, DecodeError> {
    if !(0..=ENCODING_VERSION).contains(&encver) {
        return Err(DecodeError);
    }
    let size = r.read_unsigned()?;
    let nfilters = r.read_unsigned()?;
    let options = if encver >= 2 {
        u32::try_from(r.read_unsigned()?).map_err(|_| DecodeError)?
    } else {
        0
    };
    let growth = if encver >= 4 {
        u32::try_from(r.read_unsigned()?).map_err(|_| DecodeError)?
    } else {
        DEFAULT_EXPANSION
    };
    if nfilters == 0 || nfilters > crate::chain::MAX_LAYERS {
        return Err(DecodeError);
    }
    let mut layers = Vec::new();
    for _ in 0..nfilters {
        let entries = r.read_unsigned()?;
        let error = r.read_double()?;
        let hashes = u32::try_from(r.read_unsigned()?).map_err(|_| DecodeError)?;
        let bpe = r.read_double()?;
        let (bits, n2) = if encver == 0 {
            ((entries as f64 * bpe) as u64, 0)
        } else {
            let bits = r.read_unsigned()?;
            let n2 = u8::try_from(r.read_unsigned()?).map_err(|_| DecodeError)?;
            (bits, n2)
        };
        let data = r.read_bytes()?;
        let layer_size = r.read_unsigned()?;
        if (data.len() as u64) < bits.div_ceil(8) {
            return Err(DecodeError);
        }
        let bytes = data.len() as u64;
        let params = LayerParams::from_fields(entries, error, bpe, hashes, bits, bytes, n2);
        if !params.is_consistent() {
            return Err(DecodeError);
        }
        layers.try_reserve(1).map_err(|_| DecodeError)?;
        layers.push(Layer::from_parts(params, layer_size, data));
    }
    let total: Option<u64> = layers
        .iter()
        .try_fold(0u64, |acc: u64, l: &Layer| acc.checked_add(l.size));
    if options & !OPT_ALL != 0 || total != Some(size) {
        return Err(DecodeError);
    }
    Ok(Chain {
        size,
        options,
        growth,
        layers: layers.into_boxed_slice(),
    })
}

/// One value of the module-API stream, for in-memory encodings.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// An unsigned value.
    Unsigned(u64),
    /// A double.
    Double(f64),
    /// A string buffer.
    Bytes(Vec<u8>),
}

/// An in-memory value stream: a [`ValueWriter`] that records, and a [`ValueReader`] that
/// replays (from the front) and fails with [`DecodeError`] on a type mismatch or at the end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Values {
    /// The recorded values.
    pub values: Vec<Value>,
    /// Read position.
    pub pos: usize,
}

impl Values {
    /// The values `save` writes into an empty stream, to be read from the front (for tests:
    /// `Values::saved(|v| save(&chain, v))`).
    #[cfg(test)]
    pub(crate) fn saved(save: impl FnOnce(&mut Values)) -> Values {
        let mut v = Values::default();
        save(&mut v);
        v
    }

    fn next(&mut self) -> Result<Value, DecodeError> {
        let v = self.values.get(self.pos).cloned().ok_or(DecodeError)?;
        self.pos += 1;
        Ok(v)
    }
}

impl ValueWriter for Values {
    fn write_unsigned(&mut self, v: u64) {
        self.values.push(Value::Unsigned(v));
    }
    fn write_double(&mut self, v: f64) {
        self.values.push(Value::Double(v));
    }
    fn write_bytes(&mut self, v: &[u8]) {
        self.values.push(Value::Bytes(v.to_vec()));
    }
}

impl ValueReader for Values {
    fn read_unsigned(&mut self) -> Result<u64, DecodeError> {
        match self.next()? {
            Value::Unsigned(v) => Ok(v),
            _ => Err(DecodeError),
        }
    }
    fn read_double(&mut self) -> Result<f64, DecodeError> {
        match self.next()? {
            Value::Double(v) => Ok(v),
            _ => Err(DecodeError),
        }
    }
    fn read_bytes(&mut self) -> Result<Vec<u8>, DecodeError> {
        match self.next()? {
            Value::Bytes(v) => Ok(v),
            _ => Err(DecodeError),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chain::MAX_LAYERS;

    fn sample() -> Chain {
        let mut c = Chain::new(4, 0.1, 3, false, u64::MAX).unwrap();
        for x in b"abcdefghijkl" {
            c.add(&[*x], u64::MAX).unwrap();
        }
        c
    }

    #[test]
    fn round_trip_v4() {
        let c = sample();
        let mut v = Values::saved(|v| save(&c, v));
        assert_eq!(v.values.len(), 4 + 8 * 2);
        assert_eq!(load(&mut v, 4).unwrap(), c);
    }

    #[test]
    fn older_versions_omit_fields() {
        let c = sample();
        let v = Values::saved(|v| save(&c, v));
        // encver 3: no growth field → growth defaults to 2.
        let mut v3 = v.clone();
        v3.values.remove(3);
        let got = load(&mut v3, 3).unwrap();
        assert_eq!(got.growth, 2);
        assert_eq!(got.layers, c.layers);
        // encver 1: no options either → legacy 32-bit hashing (options 0).
        let mut v1 = v3.clone();
        v1.values.remove(2);
        v1.pos = 0;
        assert_eq!(load(&mut v1, 1).unwrap().options, 0);
    }

    #[test]
    fn rejects_bad_values() {
        let c = sample();
        let good = Values::saved(|v| save(&c, v));
        assert_eq!(load(&mut good.clone(), 5), Err(DecodeError));
        // Truncated anywhere.
        for n in 0..good.values.len() {
            let mut v = good.clone();
            v.values.truncate(n);
            assert_eq!(load(&mut v, 4), Err(DecodeError), "truncated at {n}");
        }
        // Zero layers; error out of range; hashes inconsistent; short bit array.
        let mut v = good.clone();
        v.values[1] = Value::Unsigned(0);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        let mut v = good.clone();
        v.values[5] = Value::Double(1.5);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        let mut v = good.clone();
        v.values[6] = Value::Unsigned(99);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        let mut v = good.clone();
        v.values[10] = Value::Bytes(vec![0; 4]);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        // Chain size that is not the sum of the layer sizes; unknown option bit.
        let mut v = good.clone();
        v.values[0] = Value::Unsigned(13);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        let mut v = good.clone();
        v.values[2] = Value::Unsigned(5 | 16);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
        // More layers than MAX_LAYERS, even when every one of them is there.
        let one = Chain::new(1, 0.5, 1, false, u64::MAX).unwrap();
        let v = Values::saved(|v| save(&one, v));
        let layer = v.values[4..].to_vec();
        for (n, ok) in [(MAX_LAYERS, true), (MAX_LAYERS + 1, false)] {
            let mut many = v.clone();
            many.values[1] = Value::Unsigned(n);
            for _ in 1..n {
                many.values.extend_from_slice(&layer);
            }
            assert_eq!(load(&mut many, 4).is_ok(), ok, "{n} layers");
        }
        // A huge announced layer count is not pre-allocated: it just runs out of data.
        let mut v = good.clone();
        v.values[1] = Value::Unsigned(u64::MAX);
        assert_eq!(load(&mut v, 4), Err(DecodeError));
    }
}
