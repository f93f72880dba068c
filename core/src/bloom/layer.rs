//! One Bloom layer ("link" / "sub-filter"): sizing, bit positions, test and set.
//!
//! Sizing follows `docs/format.md` ("Layer sizing") bit for bit; the formulas are the
//! classic optimum for a Bloom filter (bits per entry = −ln(p)/ln²2, k = ln2 · bits per entry,
//! e.g. Broder & Mitzenmacher, "Network Applications of Bloom Filters", 2004) with RedisBloom's
//! truncated constants and rounding.

use crate::hash::{HashPair, Modulus};
use prefetch_index::{prefetch_index, prefetch_index_nta};

/// ln 2, truncated exactly as RedisBloom's source has it (keep this literal to stay bit-exact;
/// `std::f64::consts::LN_2` differs in the last digits and would change some hash counts).
#[allow(clippy::approx_constant)]
pub const LN2: f64 = 0.693147180559945;
/// (ln 2)², truncated exactly as RedisBloom's source has it.
pub const LN2_SQUARED: f64 = 0.480453013918201;

/// Option bit: exact bit count (no power-of-two rounding).
pub const OPT_NOROUND: u32 = 1;
/// Option bit: capacity argument is log2(bits) (never produced by commands; legacy).
pub const OPT_ENTS_IS_BITS: u32 = 2;
/// Option bit: 64-bit MurmurHash64A hashing (clear = legacy 32-bit MurmurHash2).
pub const OPT_FORCE64: u32 = 4;
/// Option bit: the chain never grows; a full filter rejects new items.
pub const OPT_NO_SCALING: u32 = 8;
/// Every option bit a valid chain may carry.
pub const OPT_ALL: u32 = OPT_NOROUND | OPT_ENTS_IS_BITS | OPT_FORCE64 | OPT_NO_SCALING;

/// Upper bound on the hash count (k) we accept from stored data. A layer built by any
/// RedisBloom-compatible module has k ≤ 1076 (its error rate is ≥ the smallest f64);
/// a larger k can only come from a crafted payload and would make every lookup crawl.
pub const MAX_HASHES: u32 = 2048;

/// Why a layer could not be created.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayerError {
    /// The parameters do not describe a layer (capacity 0, error rate ∉ (0, 1), size overflow).
    Invalid,
    /// The bit array could not be allocated (or a memory limit refused it).
    OutOfMemory,
}

/// Bits per entry for an error rate: `|ln(error) / ln²2|` (`docs/format.md` ("Layer sizing")).
pub fn bits_per_entry(error: f64) -> f64 {
    (error.ln() / LN2_SQUARED).abs()
}

/// Hash count for a bits-per-entry value: `ceil(ln2 · bpe)` (`docs/format.md` ("Layer sizing")). Saturates at `u32::MAX`.
pub fn hash_count(bpe: f64) -> u32 {
    (LN2 * bpe).ceil() as u32
}

/// The shape of a layer without its bit array: what sizing computes and what dumps carry.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LayerParams {
    /// Capacity (items the layer is sized for).
    pub entries: u64,
    /// Target false-positive rate of this layer.
    pub error: f64,
    /// Bits per entry.
    pub bpe: f64,
    /// Hash count k.
    pub hashes: u32,
    /// Stored bit count (always `bytes × 8`).
    pub bits: u64,
    /// Size of the bit array in bytes (a multiple of 8).
    pub bytes: u64,
    /// log2 of the indexed bit count for power-of-two layers; 0 for exact-size layers.
    pub n2: u8,
}

impl LayerParams {
    /// Sizes a layer for `capacity` items at false-positive rate `error`, following `docs/format.md` ("Exact-size layers")
    /// (`options` has NOROUND) or `docs/format.md` ("Power-of-two layers") (legacy power-of-two layers).
    ///
    /// Errors: [`LayerError::Invalid`] when capacity is 0, error ∉ (0, 1), or the size does
    /// not fit in 64 bits.
    pub fn for_capacity(capacity: u64, error: f64, options: u32) -> Result<Self, LayerError> {
        if capacity < 1 || !(error > 0.0 && error < 1.0) {
            return Err(LayerError::Invalid);
        }
        let bpe = bits_per_entry(error);
        let hashes = hash_count(bpe);
        let product = capacity as f64 * bpe;
        let (entries, n2, raw_bits) = if options & OPT_NOROUND != 0 {
            // Float-to-int `as` saturates; C truncates. Both agree for every value that fits.
            ((capacity), 0u8, (product as u64).max(1))
        } else if options & OPT_ENTS_IS_BITS != 0 {
            if capacity > 63 {
                return Err(LayerError::Invalid);
            }
            let n2 = capacity as u8;
            let bits = 1u64 << n2;
            ((bits as f64 / bpe) as u64, n2, bits)
        } else {
            if !product.is_finite() || product <= 0.0 {
                return Err(LayerError::Invalid);
            }
            // C's logb: the exact binary exponent of the product.
            let exponent = exact_binary_exponent(product).ok_or(LayerError::Invalid)?;
            let n2 = exponent + 1;
            if !(1..=63).contains(&n2) {
                return Err(LayerError::Invalid);
            }
            let bits = 1u64 << n2;
            let spare = ((bits as f64 - product) as u64) as f64;
            let extra = (spare / bpe) as u64;
            (
                capacity.checked_add(extra).ok_or(LayerError::Invalid)?,
                n2 as u8,
                bits,
            )
        };
        let bytes = raw_bits
            .div_ceil(64)
            .checked_mul(8)
            .ok_or(LayerError::Invalid)?;
        let bits = bytes.checked_mul(8).ok_or(LayerError::Invalid)?;
        Ok(Self::from_fields(
            entries, error, bpe, hashes, bits, bytes, n2,
        ))
    }

    /// The parameters as given, unchecked: what a dump header or an RDB value stores for a
    /// layer, to be tested with [`LayerParams::is_consistent`].
    pub(crate) const fn from_fields(
        entries: u64,
        error: f64,
        bpe: f64,
        hashes: u32,
        bits: u64,
        bytes: u64,
        n2: u8,
    ) -> Self {
        LayerParams {
            entries,
            error,
            bpe,
            hashes,
            bits,
            bytes,
            n2,
        }
    }

    /// Integrity test applied to layers read from a dump header or an RDB value
    /// (`docs/format.md` ("LOADCHUNK", "RDB value")): 0 < error < 1, n2 ≤ 63, n2 = 0 or bits ≥ 2^n2, bits ≠ 0,
    /// bits = bytes × 8, hashes = ceil(ln2 · bpe); and, stricter than RedisBloom for data no
    /// filter can produce: 1 ≤ hashes ≤ [`MAX_HASHES`] (a layer with k = 0, from a bpe of NaN
    /// or ≤ 0, would report every item present).
    pub fn is_consistent(&self) -> bool {
        self.error > 0.0
            && self.error < 1.0
            && self.n2 <= 63
            && (self.n2 == 0 || self.bits >= 1u64 << self.n2)
            && self.bits != 0
            && self.bytes.checked_mul(8) == Some(self.bits)
            && self.hashes == hash_count(self.bpe)
            && (1..=MAX_HASHES).contains(&self.hashes)
    }

    /// The modulus M of bit positions: 2^n2 for power-of-two layers, else `bits`.
    pub fn modulus(&self) -> u64 {
        if self.n2 > 0 {
            1u64 << self.n2
        } else {
            self.bits
        }
    }
}

/// The binary exponent of a positive finite f64 (C's `logb`), or None for subnormals.
fn exact_binary_exponent(x: f64) -> Option<i64> {
    let biased = ((x.to_bits() >> 52) & 0x7ff) as i64;
    if biased == 0 || biased == 0x7ff {
        None
    } else {
        Some(biased - 1023)
    }
}

/// Allocates a zeroed buffer of `len` bytes without aborting on failure and without writing
/// it: the memory comes from the global allocator's `alloc_zeroed` (calloc), which hands out
/// fresh zero pages untouched, so a big bit array costs no time to create and the process'
/// resident memory grows only as its bits are set.
///
/// Errors: [`LayerError::OutOfMemory`] when `len` does not fit in memory.
pub fn try_zeroed(len: u64) -> Result<Box<[u8]>, LayerError> {
    let len = usize::try_from(len).map_err(|_| LayerError::OutOfMemory)?;
    bytemuck::allocation::try_zeroed_slice_box::<u8>(len).map_err(|_| LayerError::OutOfMemory)
}

/// Layers up to this many bytes compute bit positions with a prepared modulus ([`Modulus`],
/// multiplications); larger ones with the hardware division. Measured on the project's
/// machine (AMD EPYC, 512 KiB L2, 32 MiB L3), interleaved in one process: on layers of 1.3 and
/// 4 MiB the prepared modulus made checks 1.2–3.5× and sets 1.2–3× faster; on 8 MiB to 132 MiB
/// layers, where every probe misses the caches, it made sets and prefetched checks 10–25 %
/// slower (its extra instructions per probe leave fewer cache misses in flight in the
/// out-of-order window than one divide instruction does).
pub const PREPARED_MODULUS_MAX_BYTES: u64 = 4 << 20;

/// One Bloom layer: its parameters, its item count and its bit array.
///
/// Bit `x` lives in byte `x / 8` at mask `1 << (x % 8)` (LSB first), which is also the byte
/// order of SCANDUMP chunks and RDB strings (`docs/format.md`: every field is little-endian).
///
/// Build it with [`Layer::new`] or [`Layer::from_parts`]; its shape never changes afterwards
/// (the layer keeps its modulus prepared for fast remainders).
///
/// 64 bytes, as RedisBloom's layer struct, so that a million small filters cost no more here:
/// the shape is stored without its bit and byte counts (the bit array's length gives both),
/// and a prepared modulus, when the layer uses one, lives in its own allocation.
#[derive(Debug, Clone, PartialEq)]
pub struct Layer {
    /// Shape of the layer, less `bits` and `bytes` (see [`Layer::params`]).
    shape: Shape,
    /// Items accepted into this layer.
    pub size: u64,
    /// The bit array, `params().bytes` long (a boxed slice: 8 bytes less per layer than a
    /// `Vec`, whose capacity would always equal its length).
    pub data: Box<[u8]>,
    /// The modulus prepared once, for layers of [`PREPARED_MODULUS_MIN_BYTES`] to
    /// [`PREPARED_MODULUS_MAX_BYTES`]; `None` for the others (hardware division).
    prepared: Option<Box<Modulus>>,
}

/// [`LayerParams`] less `bits` and `bytes`, which are the bit array's length × 8 and its length.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Shape {
    entries: u64,
    error: f64,
    bpe: f64,
    hashes: u32,
    n2: u8,
}

/// Hash counts from which [`Layer::set`] on a small layer prepares a modulus for the call
/// instead of dividing k times (a preparation costs about two divisions).
pub const SET_PREPARE_MIN_HASHES: u32 = 4;

/// Layers from this many bytes (64 KiB) up to [`PREPARED_MODULUS_MAX_BYTES`] use a prepared
/// modulus. Smaller ones (filters of up to about 47 000 items at 1 %, the per-user kind) use
/// the hardware division: a few nanoseconds more per command, but no 32-byte allocation per
/// layer, which would make each small filter 50 % larger than the bit array it holds.
pub const PREPARED_MODULUS_MIN_BYTES: u64 = 64 << 10;

impl Layer {
    /// A new, empty layer. Errors: [`LayerError::OutOfMemory`] if the bit array cannot be
    /// allocated.
    pub fn new(params: LayerParams) -> Result<Layer, LayerError> {
        Ok(Layer::from_parts(params, 0, try_zeroed(params.bytes)?))
    }

    /// A layer of shape `params` holding `size` items with bit array `data` (loaded from a
    /// dump, an RDB value or a copy). `data` must be `params.bytes` long (every decoder checks
    /// it), since the layer keeps its bit and byte counts as the array's length.
    pub fn from_parts(params: LayerParams, size: u64, data: impl Into<Box<[u8]>>) -> Layer {
        let data = data.into();
        debug_assert_eq!(data.len() as u64, params.bytes);
        let bytes = data.len() as u64;
        Layer {
            prepared: (PREPARED_MODULUS_MIN_BYTES..=PREPARED_MODULUS_MAX_BYTES)
                .contains(&bytes)
                .then(|| Box::new(Modulus::new(params.modulus().max(1)))),
            shape: Shape {
                entries: params.entries,
                error: params.error,
                bpe: params.bpe,
                hashes: params.hashes,
                n2: params.n2,
            },
            size,
            data,
        }
    }

    /// The layer's shape: what sizing computed or the dump carried, with `bytes` the bit
    /// array's length and `bits` = `bytes × 8`.
    #[inline]
    pub fn params(&self) -> LayerParams {
        let bytes = self.data.len() as u64;
        LayerParams {
            entries: self.shape.entries,
            error: self.shape.error,
            bpe: self.shape.bpe,
            hashes: self.shape.hashes,
            bits: bytes * 8,
            bytes,
            n2: self.shape.n2,
        }
    }

    /// The modulus M of bit positions ([`LayerParams::modulus`]).
    #[inline(always)]
    pub fn modulus(&self) -> u64 {
        if self.shape.n2 > 0 {
            1u64 << self.shape.n2
        } else {
            self.data.len() as u64 * 8
        }
    }

    /// The prepared modulus when this layer uses one, else `None` (hardware division).
    #[inline(always)]
    fn prepared(&self) -> Option<&Modulus> {
        self.prepared.as_deref()
    }

    /// The i-th bit position of `h` in this layer ([`HashPair::position`] with this layer's
    /// modulus).
    #[inline]
    pub fn position(&self, h: &HashPair, i: u64) -> u64 {
        match self.prepared() {
            Some(m) => h.position_in(i, m),
            None => h.position(i, self.modulus()),
        }
    }

    /// True when every one of the k bits of `h` is set. Tests in order, stops at the first
    /// clear bit.
    #[inline]
    pub fn contains(&self, h: &HashPair) -> bool {
        self.contains_using(h, self.prepared())
    }

    /// The modulus a batch should use for this layer (see [`Layer::contains_using`]): the
    /// layer's own prepared one, or for a layer under [`PREPARED_MODULUS_MIN_BYTES`] one
    /// prepared now (a 128-bit division, worth it over a batch); `None` for layers over
    /// [`PREPARED_MODULUS_MAX_BYTES`] (hardware division).
    pub fn batch_modulus(&self) -> Option<Modulus> {
        match self.prepared() {
            Some(m) => Some(*m),
            None => ((self.data.len() as u64) <= PREPARED_MODULUS_MAX_BYTES)
                .then(|| Modulus::new(self.modulus().max(1))),
        }
    }

    /// [`Layer::contains`] with the modulus `m` from [`Layer::batch_modulus`] (`None`:
    /// hardware division), kept by the caller for a whole batch: the same answer, without
    /// reaching the layer's boxed modulus for every item.
    #[inline]
    pub fn contains_using(&self, h: &HashPair, m: Option<&Modulus>) -> bool {
        match m {
            Some(m) => self.contains_by(|i| h.position_in(i, m)),
            None => {
                let m = self.modulus();
                self.contains_by(|i| h.position(i, m))
            }
        }
    }

    #[inline(always)]
    fn contains_by(&self, position: impl Fn(u64) -> u64) -> bool {
        (0..u64::from(self.shape.hashes)).all(|i| self.bit(position(i)))
    }

    /// Sets the k bits of `h`. Does not touch the item count.
    ///
    /// A small layer (under [`PREPARED_MODULUS_MIN_BYTES`], which keeps no prepared modulus)
    /// prepares one for the call when k ≥ [`SET_PREPARE_MIN_HASHES`]: on the project's machine
    /// (AMD EPYC, a 1 152-bit layer) preparing it and 7 remainders by multiplication took 45 ns
    /// against 94 ns for 7 hardware divisions, while one division alone takes 14 ns and a
    /// preparation 32 (a throwaway loop over a million hash pairs, 3 rounds alike).
    #[inline]
    pub fn set(&mut self, h: &HashPair) {
        match self.prepared().copied() {
            Some(m) => self.set_by(|i| h.position_in(i, &m)),
            None if (self.data.len() as u64) < PREPARED_MODULUS_MIN_BYTES
                && self.shape.hashes >= SET_PREPARE_MIN_HASHES =>
            {
                let m = Modulus::new(self.modulus().max(1));
                self.set_by(|i| h.position_in(i, &m))
            }
            None => {
                let m = self.modulus();
                self.set_by(|i| h.position(i, m))
            }
        }
    }

    #[inline(always)]
    fn set_by(&mut self, position: impl Fn(u64) -> u64) {
        for i in 0..u64::from(self.shape.hashes) {
            let x = position(i);
            self.data[(x >> 3) as usize] |= 1u8 << (x & 7);
        }
    }

    /// Whether bit `x` (a position from [`Layer::position`]) is set.
    #[inline(always)]
    pub fn bit(&self, x: u64) -> bool {
        self.data[(x >> 3) as usize] & (1u8 << (x & 7)) != 0
    }

    /// Sets bit `x` (a position from [`Layer::position`]). Does not touch the item count.
    #[inline(always)]
    pub fn set_bit(&mut self, x: u64) {
        self.data[(x >> 3) as usize] |= 1u8 << (x & 7);
    }

    /// [`Layer::prefetch_bit`] into every cache level, for a bit about to be set (the write
    /// needs the line there) or read more than once; `prefetch_bit` keeps the line out of the
    /// outer levels.
    #[inline(always)]
    pub fn prefetch_bit_all_levels(&self, x: u64) {
        prefetch_index(&self.data, (x >> 3) as usize);
    }

    /// Asks the CPU to start loading the cache line of bit `x` (a position from
    /// [`Layer::position`]) without waiting for it: a hint that changes nothing.
    #[inline(always)]
    pub fn prefetch_bit(&self, x: u64) {
        prefetch_index_nta(&self.data, (x >> 3) as usize);
    }

    /// Asks the CPU to start loading the cache lines of the first `probes` bit positions of
    /// `h` (at most k), without waiting for them: a hint that changes no result. Software
    /// pipelining calls this a few items ahead of the item it tests, so that the cache misses
    /// of several items overlap.
    #[inline]
    pub fn prefetch(&self, h: &HashPair, probes: u32) {
        let probes = probes.min(self.shape.hashes);
        (0..u64::from(probes)).for_each(|i| self.prefetch_bit_all_levels(self.position(h, i)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODERN: u32 = OPT_NOROUND | OPT_FORCE64;

    #[test]
    fn sizing_table() {
        // (error, capacity, bpe, k, bytes, bits) from `docs/format.md` ("Exact-size layers").
        let rows: [(f64, u64, f64, u32, u64, u64); 8] = [
            (0.005, 100, 11.027753, 8, 144, 1152),
            (0.005, 1000, 11.027753, 8, 1384, 11072),
            (0.0005, 100, 15.820283, 11, 200, 1600),
            (0.025, 1000, 7.677919, 6, 960, 7680),
            (0.01, 3, 9.585058, 7, 8, 64),
            (0.005, 1_000_000, 11.027753, 8, 1_378_472, 11_027_776),
            (0.0005, 10_000_000, 15.820283, 11, 19_775_360, 158_202_880),
            (
                5e-7,
                300_000_000,
                30.197870,
                21,
                1_132_420_136,
                9_059_361_088,
            ),
        ];
        for (error, cap, bpe, k, bytes, bits) in rows {
            let p = LayerParams::for_capacity(cap, error, MODERN).unwrap();
            assert!(
                (p.bpe - bpe).abs() < 1e-6,
                "bpe for {error}/{cap}: {}",
                p.bpe
            );
            assert_eq!(p.hashes, k, "k for {error}/{cap}");
            assert_eq!(p.bytes, bytes, "bytes for {error}/{cap}");
            assert_eq!(p.bits, bits, "bits for {error}/{cap}");
            assert_eq!(p.entries, cap);
            assert_eq!(p.n2, 0);
            assert!(p.is_consistent());
        }
    }

    #[test]
    fn invalid_parameters() {
        assert_eq!(
            LayerParams::for_capacity(0, 0.01, MODERN),
            Err(LayerError::Invalid)
        );
        for e in [0.0, 1.0, -0.5, f64::NAN, f64::INFINITY] {
            assert_eq!(
                LayerParams::for_capacity(10, e, MODERN),
                Err(LayerError::Invalid)
            );
        }
    }

    #[test]
    fn power_of_two_layer() {
        // capacity 100 at 0.01: product 958.5 → logb 9 → n2 10 → 1024 bits;
        // entries = 100 + trunc(trunc(1024 − 958.5)/9.585) = 100 + trunc(65/9.585) = 106.
        let p = LayerParams::for_capacity(100, 0.01, OPT_FORCE64).unwrap();
        assert_eq!(p.n2, 10);
        assert_eq!(p.modulus(), 1024);
        assert_eq!(p.bytes, 128);
        assert_eq!(p.bits, 1024);
        assert_eq!(p.entries, 106);
        // Tiny layer: 8 bytes stored, 2^n2 < 64 indexed.
        let p = LayerParams::for_capacity(1, 0.1, 0).unwrap();
        assert_eq!(p.n2, 3);
        assert_eq!((p.bytes, p.bits, p.modulus()), (8, 64, 8));
    }

    #[test]
    fn zeroed_buffers_are_exact_and_zero() {
        for len in [0u64, 1, 8, 4096, 3 << 20] {
            let v = try_zeroed(len).unwrap();
            assert_eq!(v.len() as u64, len);
            assert!(v.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn huge_allocation_is_an_error() {
        assert_eq!(try_zeroed(u64::MAX).unwrap_err(), LayerError::OutOfMemory);
        assert_eq!(try_zeroed(1 << 62).unwrap_err(), LayerError::OutOfMemory);
    }

    /// Both ways of computing positions (prepared modulus for mid-sized layers, hardware
    /// division for small and large ones) give exactly `HashPair::position`, power-of-two
    /// layers included; and a layer gives back the exact shape it was made with.
    #[test]
    fn positions_are_exact_on_both_sides_of_the_threshold() {
        let small = LayerParams::for_capacity(1000, 0.005, MODERN).unwrap();
        let pow2 = LayerParams::for_capacity(100, 0.01, OPT_FORCE64).unwrap();
        let mid = LayerParams::for_capacity(100_000, 0.005, MODERN).unwrap();
        let pow2_mid = LayerParams::for_capacity(60_000, 0.01, OPT_FORCE64).unwrap();
        let large = LayerParams::for_capacity(5_000_000, 0.005, MODERN).unwrap();
        for params in [small, pow2, mid, pow2_mid, large] {
            // Lazily zeroed: the large array is never touched here.
            let layer = Layer::new(params).unwrap();
            assert_eq!(layer.params(), params);
            assert_eq!(
                layer.prepared().is_some(),
                (PREPARED_MODULUS_MIN_BYTES..=PREPARED_MODULUS_MAX_BYTES).contains(&params.bytes),
                "{params:?}"
            );
            for n in 0..2000u32 {
                let h = HashPair::hash64(&n.to_le_bytes());
                for i in 0..u64::from(params.hashes) {
                    assert_eq!(layer.position(&h, i), h.position(i, params.modulus()));
                }
            }
        }
    }

    #[test]
    fn set_then_contains() {
        let mut l = Layer::new(LayerParams::for_capacity(1000, 0.005, MODERN).unwrap()).unwrap();
        let h = HashPair::hash64(b"hello");
        assert!(!l.contains(&h));
        l.set(&h);
        assert!(l.contains(&h));
        let set: Vec<usize> = (0..l.data.len()).filter(|&i| l.data[i] != 0).collect();
        assert_eq!(set, vec![238, 343, 354, 460, 808, 925, 1273, 1379]);
    }
}
