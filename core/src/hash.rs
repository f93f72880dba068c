//! Item hashing: MurmurHash64A (all modern filters) and the legacy 32-bit MurmurHash2.
//!
//! Both functions are the textbook ones by Austin Appleby; the seeds and the
//! "two hashes per item" scheme follow `docs/format.md` ("Hashing") so the bit
//! positions we compute are identical to RedisBloom's (`docs/format.md` ("Hashing"): never `ahash`, never
//! `std`'s `DefaultHasher` — their output is not stable across builds).

use strength_reduce::StrengthReducedU64;

/// Seed of the first 64-bit hash (`a`); the second hash (`b`) is seeded with `a`.
pub const SEED64: u64 = 0xc6a4a7935bd1e995;
/// Seed of the first legacy 32-bit hash; the second one is seeded with the first result.
pub const SEED32: u32 = 0x9747b28c;

/// MurmurHash64A (64-bit, for 64-bit platforms) of `data` with `seed`.
///
/// Words are read little-endian, so the value is the same on every host.
pub fn murmur64a(data: &[u8], seed: u64) -> u64 {
    const M: u64 = 0xc6a4a7935bd1e995;
    const R: u32 = 47;
    let mut h = seed ^ (data.len() as u64).wrapping_mul(M);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        let mut k = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h ^= k;
        h = h.wrapping_mul(M);
    }
    let tail = words.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u64::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> R;
    h = h.wrapping_mul(M);
    h ^= h >> R;
    h
}

/// MurmurHash2 (32-bit) of `data` with `seed`; used only by legacy filters (FORCE64 clear).
pub fn murmur2_32(data: &[u8], seed: u32) -> u32 {
    const M: u32 = 0x5bd1e995;
    const R: u32 = 24;
    let mut h = seed ^ (data.len() as u32);
    let mut blocks = data.chunks_exact(4);
    for b in &mut blocks {
        let mut k = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
        k = k.wrapping_mul(M);
        k ^= k >> R;
        k = k.wrapping_mul(M);
        h = h.wrapping_mul(M);
        h ^= k;
    }
    let tail = blocks.remainder();
    if !tail.is_empty() {
        for (i, &b) in tail.iter().enumerate() {
            h ^= u32::from(b) << (8 * i);
        }
        h = h.wrapping_mul(M);
    }
    h ^= h >> 13;
    h = h.wrapping_mul(M);
    h ^= h >> 15;
    h
}

/// The two hash values from which all k bit positions of an item are derived (`docs/format.md` ("Bit positions")).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HashPair {
    /// First hash.
    pub a: u64,
    /// Second hash (the stride between successive bit positions).
    pub b: u64,
}

impl HashPair {
    /// 64-bit pair: `a = MurmurHash64A(item, SEED64)`, `b = MurmurHash64A(item, a)`.
    pub fn hash64(item: &[u8]) -> HashPair {
        let a = murmur64a(item, SEED64);
        HashPair {
            a,
            b: murmur64a(item, a),
        }
    }

    /// Legacy 32-bit pair, zero-extended: `a = MurmurHash2(item, SEED32)`, `b = MurmurHash2(item, a)`.
    pub fn hash32(item: &[u8]) -> HashPair {
        let a = murmur2_32(item, SEED32);
        HashPair {
            a: u64::from(a),
            b: u64::from(murmur2_32(item, a)),
        }
    }

    /// The i-th bit position modulo `modulus`: `(a + i·b) mod 2^64 mod modulus` (`docs/format.md` ("Bit positions")).
    #[inline]
    pub fn position(&self, i: u64, modulus: u64) -> u64 {
        self.a.wrapping_add(i.wrapping_mul(self.b)) % modulus
    }

    /// [`HashPair::position`] with a prepared modulus: the same value, computed by
    /// multiplications instead of a 64-bit division.
    #[inline]
    pub fn position_in(&self, i: u64, modulus: &Modulus) -> u64 {
        modulus.reduce(self.a.wrapping_add(i.wrapping_mul(self.b)))
    }
}

/// A bit-position modulus prepared once (per layer) for exact remainders without a hardware
/// division: the `strength_reduce` crate turns `x % m` into a 128-bit multiplication by a
/// precomputed reciprocal and a correction, exact for every `x` (a power of two becomes a mask).
#[derive(Debug, Clone, Copy)]
pub struct Modulus(StrengthReducedU64);

impl Modulus {
    /// Prepares `m`. Panics if `m` is 0 (no layer has a zero modulus: see
    /// `LayerParams::is_consistent`).
    pub fn new(m: u64) -> Modulus {
        Modulus(StrengthReducedU64::new(m))
    }

    /// The modulus itself.
    pub fn get(&self) -> u64 {
        self.0.get()
    }

    /// `x mod m`.
    #[inline]
    pub fn reduce(&self, x: u64) -> u64 {
        x % self.0
    }
}

impl PartialEq for Modulus {
    fn eq(&self, other: &Modulus) -> bool {
        self.get() == other.get()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair_hex(item: &[u8]) -> (String, String) {
        let p = HashPair::hash64(item);
        (format!("{:016x}", p.a), format!("{:016x}", p.b))
    }

    #[test]
    fn murmur64a_check_values() {
        for (item, a, b) in [
            (&b"hello"[..], "5ba5b8a59803e699", "a7d451d588a0c2a4"),
            (b"", "1ab11ea5a7b2c56e", "bbddcb5ab56dd547"),
            (b"a", "4292cee227b9150a", "7e9b527031f50c11"),
            (b"foobar123", "4b4889d61d22a420", "b6527c10fba0d72b"),
        ] {
            assert_eq!(pair_hex(item), (a.into(), b.into()), "{item:?}");
        }
    }

    #[test]
    fn murmur2_check_values() {
        let p = HashPair::hash32(b"hello");
        assert_eq!((p.a, p.b), (0x7f1ddbbd, 0xed999d2d));
        let p = HashPair::hash32(b"");
        assert_eq!((p.a, p.b), (0x106e08d9, 0x456d9087));
    }

    /// The prepared modulus gives exactly `%` (this is what keeps the bits identical).
    #[test]
    fn prepared_modulus_is_exact() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            x ^= x >> 12;
            x ^= x << 25;
            x ^= x >> 27;
            x.wrapping_mul(0x2545_f491_4f6c_dd1d)
        };
        let mut moduli = vec![1, 2, 3, 7, 8, 64, 1152, 11072, 11_027_776, 9_059_361_088];
        moduli.extend([1 << 40, (1 << 63) - 1, 1 << 63, u64::MAX - 1, u64::MAX]);
        moduli.extend(
            (0..200)
                .map(|_| next() >> (next() % 64))
                .filter(|m| *m != 0),
        );
        for m in moduli {
            let prepared = Modulus::new(m);
            assert_eq!(prepared.get(), m);
            let mut xs = vec![0, 1, m - 1, m, m.wrapping_add(1), u64::MAX, u64::MAX - 1];
            xs.extend((0..500).map(|_| next()));
            for x in xs {
                assert_eq!(prepared.reduce(x), x % m, "{x} mod {m}");
            }
            let h = HashPair {
                a: next(),
                b: next(),
            };
            for i in 0..40 {
                assert_eq!(h.position_in(i, &prepared), h.position(i, m));
            }
        }
    }

    #[test]
    fn bit_positions_example() {
        // `docs/format.md` ("Bit positions"): bits 11072, k = 8, item "hello".
        let p = HashPair::hash64(b"hello");
        let got: Vec<u64> = (0..8).map(|i| p.position(i, 11072)).collect();
        assert_eq!(got, vec![11033, 2749, 3681, 6469, 7401, 10189, 1905, 2837]);
    }
}
