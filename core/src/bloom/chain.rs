//! The scalable chain of Bloom layers (Almeida, Baquero, Preguiça & Hutchison, "Scalable Bloom
//! Filters", Information Processing Letters 101(6), 2007), with RedisBloom's parameters:
//! tightening ratio 0.5, growth = the filter's expansion (`docs/format.md` ("The chain")).

use super::layer::{Layer, LayerError, LayerParams, OPT_FORCE64, OPT_NOROUND, OPT_NO_SCALING};
use crate::hash::HashPair;

/// Each new layer's error rate is the previous one's times this (and a scaling filter's first
/// layer gets the requested error rate times this), so the chain's compound error stays below
/// the requested rate (Almeida et al. 2007, `docs/format.md` ("The chain")).
pub const TIGHTENING_RATIO: f64 = 0.5;

/// Default expansion (growth factor) of a new filter.
pub const DEFAULT_EXPANSION: u32 = 2;

/// Most layers a chain read from a dump or an RDB value may have. A chain grown by commands
/// stops near 1075 layers (each layer halves the error rate, which underflows after about as
/// many halvings of an f64), so 4096 refuses nothing real; a crafted value announcing millions
/// of layers would otherwise make every lookup walk all of them and stall the server.
pub const MAX_LAYERS: u64 = 4096;

/// `sizeof` of RedisBloom's chain struct on 64-bit builds; part of the memory formula (`docs/format.md` ("Memory accounting")).
pub const CHAIN_OVERHEAD: u64 = 32;
/// `sizeof` of RedisBloom's layer struct on 64-bit builds; part of the memory formula (`docs/format.md` ("Memory accounting")).
pub const LAYER_OVERHEAD: u64 = 64;

/// How many items ahead of the one being tested the batch paths prefetch bit positions.
pub const PREFETCH_DISTANCE: usize = 8;
/// How many of an item's bit positions BF.MEXISTS prefetches per layer. An absent item is
/// usually rejected by its first or second probe (half the bits of a full layer are set), so
/// prefetching all k would mostly fetch lines that are never read.
pub const CHECK_PREFETCH_PROBES: u32 = 3;
/// How many of an item's bit positions BF.MADD prefetches in the newest layer: all k of a
/// usual filter (k ≤ 16 for layer error rates down to about 1.5e-5). Beyond that the cost of computing
/// and fetching positions that may never be written (an item already present, a refused growth)
/// outgrows the gain, so the rest are loaded when needed.
pub const ADD_PREFETCH_PROBES: u32 = 16;
/// Layers with fewer bytes than this are tested without prefetching: they stay in cache.
pub const PREFETCH_MIN_BYTES: u64 = 1 << 20;
/// Items the batch entry points ([`Chain::contains_each`]; BF.MADD's hashing in the module)
/// work on at a time: bounds the memory a batch of any length takes (16 bytes of hash and one
/// flag per item) while keeping enough items in hand to overlap their cache misses.
pub const BATCH_ITEMS: usize = 1024;
/// How many items [`check_interleaved`] keeps in flight. Measured on the project's machine
/// (2-core AMD EPYC VM; 132 MiB layer, half its bits set, fresh items): 16 and 32 give the
/// same 64–66 ns per item, against 114 ns for prefetching a few items ahead and 129 ns item by
/// item; a random read there costs about 30 ns when many overlap.
pub const LOOKUPS_IN_FLIGHT: usize = 16;

/// What adding one item did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddOutcome {
    /// The item was new: its bits were set and the counters went up (reply 1).
    Added,
    /// Some layer already had all its bits (reply 0); nothing changed.
    Exists,
}

/// Why an item could not be added. Nothing changed in either case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddError {
    /// The filter is non-scaling and its only layer is full (`ERR non scaling filter is full`).
    Full,
    /// A new layer was needed but could not be created: zero or overflowing capacity, error
    /// rate underflow, allocation failure or a memory limit; or the item counter is at its
    /// maximum (`ERR problem inserting into filter`).
    CannotGrow,
}

/// A scalable Bloom filter: one or more layers, newest last.
#[derive(Debug, Clone, PartialEq)]
pub struct Chain {
    /// Items accepted as new over the whole chain.
    pub size: u64,
    /// Option bits (`layer::OPT_*`); 5 for filters made by commands, 13 when non-scaling.
    pub options: u32,
    /// Expansion: each new layer's capacity is the previous layer's `entries` times this.
    pub growth: u32,
    /// The layers, oldest first. Never empty for a valid chain. A boxed slice (a new layer
    /// rebuilds it), so that the chain is 32 bytes, as RedisBloom's.
    pub layers: Box<[Layer]>,
}

impl Chain {
    /// A new chain whose first layer holds `capacity` items; its error rate is `error`
    /// for a non-scaling filter and `error × TIGHTENING_RATIO` otherwise. `max_bytes` bounds
    /// the bit array (pass `u64::MAX` for no bound).
    ///
    /// Errors: [`LayerError::Invalid`] for capacity 0, error ∉ (0, 1) or a size overflow;
    /// [`LayerError::OutOfMemory`] when the bit array is over `max_bytes` or cannot be allocated.
    pub fn new(
        capacity: u64,
        error: f64,
        expansion: u32,
        nonscaling: bool,
        max_bytes: u64,
    ) -> Result<Chain, LayerError> {
        if !(error > 0.0 && error < 1.0) {
            return Err(LayerError::Invalid);
        }
        let options = OPT_NOROUND | OPT_FORCE64 | if nonscaling { OPT_NO_SCALING } else { 0 };
        let first_error = if nonscaling {
            error
        } else {
            error * TIGHTENING_RATIO
        };
        let params = LayerParams::for_capacity(capacity, first_error, options)?;
        if params.bytes > max_bytes {
            return Err(LayerError::OutOfMemory);
        }
        Ok(Chain {
            size: 0,
            options,
            growth: expansion,
            layers: Box::new([Layer::new(params)?]),
        })
    }

    /// True when the chain never grows.
    pub fn is_nonscaling(&self) -> bool {
        self.options & OPT_NO_SCALING != 0
    }

    /// True when the newest layer is full, so adding a new item needs a new layer (or, for a
    /// non-scaling chain, fails).
    pub fn needs_new_layer(&self) -> bool {
        self.layers
            .last()
            .is_none_or(|l| l.size >= l.params().entries)
    }

    /// The hash pair of `item` under this chain's hash function (64-bit unless legacy).
    #[inline]
    pub fn hash(&self, item: &[u8]) -> HashPair {
        if self.options & OPT_FORCE64 != 0 {
            HashPair::hash64(item)
        } else {
            HashPair::hash32(item)
        }
    }

    /// True when any layer has all k bits of `h` set (newest layer first).
    #[inline]
    pub fn contains_hashed(&self, h: &HashPair) -> bool {
        self.layers.iter().rev().any(|l| l.contains(h))
    }

    /// True when `item` may have been added; false means it certainly was not.
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_hashed(&self.hash(item))
    }

    /// Checks a batch of hashed items, calling `answer(index, present)` in order; the answers
    /// are exactly [`Chain::contains_hashed`]'s. [`Chain::contains_each`] with the hashes
    /// given.
    pub fn contains_many(&self, hashes: &[HashPair], answer: impl FnMut(usize, bool)) {
        self.contains_each(hashes.len(), |i| hashes[i], answer);
    }

    /// Checks `count` items, whose hash pairs `hash_of(index)` gives, calling
    /// `answer(index, present)` in order; the answers are exactly [`Chain::contains_hashed`]'s
    /// (the batch entry point of BF.MEXISTS). Works on [`BATCH_ITEMS`] items at a time, so a
    /// batch of any length takes bounded memory: a vector of one part's hash pairs, and one
    /// flag per item of the part on the stack.
    ///
    /// Each part is hashed first, in one tight loop (reading the items is itself a chain of
    /// cache misses, which overlap best there). A chain with a layer of at least
    /// [`PREFETCH_MIN_BYTES`] is then checked by [`check_interleaved`]: [`LOOKUPS_IN_FLIGHT`]
    /// items at a time, each probe prefetched one step before it is read, so that the cache
    /// misses of many items overlap whatever number of probes each item needs. A chain of
    /// smaller layers (in cache) is tested layer by layer, newest first, skipping items
    /// already found, with each layer's modulus prepared once per part.
    pub fn contains_each(
        &self,
        count: usize,
        mut hash_of: impl FnMut(usize) -> HashPair,
        mut answer: impl FnMut(usize, bool),
    ) {
        let mut found = [false; BATCH_ITEMS];
        let interleaved = interleave(&self.layers);
        let mut hashes = Vec::new();
        for first in (0..count).step_by(BATCH_ITEMS) {
            let found = &mut found[..(count - first).min(BATCH_ITEMS)];
            hashes.clear();
            hashes.extend((first..first + found.len()).map(&mut hash_of));
            if interleaved {
                check_interleaved(&self.layers, &hashes, found);
            } else {
                found.fill(false);
                for layer in self.layers.iter().rev() {
                    // One prepared modulus per part, on the stack (small layers keep none).
                    let m = layer.batch_modulus();
                    let m = m.as_ref();
                    for (f, h) in found.iter_mut().zip(&hashes) {
                        if !*f {
                            *f = layer.contains_using(h, m);
                        }
                    }
                }
            }
            for (i, f) in found.iter().enumerate() {
                answer(first + i, *f);
            }
        }
    }

    /// Adds a batch of hashed items in order, calling `result(index, outcome)` for each and
    /// stopping after the first [`AddError::Full`] (as BF.MADD does). `budget()` gives the
    /// bytes a new layer may take and is asked only when a new layer is about to be created.
    /// Same results and same bits as [`Chain::add_hashed`] item by item.
    ///
    /// Only the newest layer (and layers the batch appends) can change during the batch, so
    /// the older layers are looked up first, for the whole batch at once, by
    /// [`check_interleaved`] (when one of them is at least [`PREFETCH_MIN_BYTES`]): an item
    /// found there exists, at any point of the batch. The items are then added strictly in
    /// order, each tested against the newest layers only, so duplicates inside the batch and
    /// layer growth behave as item by item. Software pipelining in that pass: while item `i`
    /// is added, the k bit positions of item `i + PREFETCH_DISTANCE` in the newest layer
    /// (where a new item is tested and then set) are computed and prefetched, and item
    /// `i + PREFETCH_DISTANCE` later tests and sets exactly those, computing none again, as
    /// long as that layer is still the newest and takes new items (for k ≤
    /// [`ADD_PREFETCH_PROBES`], every usual filter). Otherwise (a full newest layer: the item
    /// will go to a layer that does not exist yet; a small one; a larger k) the first
    /// [`CHECK_PREFETCH_PROBES`] or [`ADD_PREFETCH_PROBES`] positions are prefetched as hints
    /// and the item is added the usual way. Allocates one flag per item when the first pass
    /// runs.
    pub fn add_many(
        &mut self,
        hashes: &[HashPair],
        mut budget: impl FnMut(&Chain) -> u64,
        mut result: impl FnMut(usize, Result<AddOutcome, AddError>),
    ) {
        let newest = self.layers.len().saturating_sub(1);
        let (older_checked, in_older) = if interleave(&self.layers[..newest]) {
            let mut found = vec![false; hashes.len()];
            check_interleaved(&self.layers[..newest], hashes, &mut found);
            (newest, found)
        } else {
            (0, Vec::new())
        };
        let known = |i: usize| in_older.get(i).copied().unwrap_or(false);
        // The newest layer's bit positions of the items PREFETCH_DISTANCE ahead, computed (and
        // prefetched) once and used again by their own add.
        let mut ahead = [Ahead::NONE; PREFETCH_DISTANCE];
        let prepare = |chain: &Chain, j: usize, slot: &mut Ahead| {
            *slot = Ahead::NONE;
            if !known(j) && !chain.prepare_newest(&hashes[j], slot) {
                chain.prefetch_for_add(&hashes[j], older_checked);
            }
        };
        for (j, slot) in ahead.iter_mut().enumerate().take(hashes.len()) {
            prepare(self, j, slot);
        }
        for (i, h) in hashes.iter().enumerate() {
            let slot = &mut ahead[i % PREFETCH_DISTANCE];
            let r = if known(i) {
                Ok(AddOutcome::Exists)
            } else {
                // The positions apply while the layer they were computed for is the newest.
                let positions = (self.layers.len().checked_sub(1) == Some(slot.layer))
                    .then(|| &slot.positions[..slot.count]);
                self.add_checking_from(older_checked, h, positions, &mut budget, |p| p)
            };
            result(i, r);
            if r == Err(AddError::Full) {
                return;
            }
            if i + PREFETCH_DISTANCE < hashes.len() {
                prepare(self, i + PREFETCH_DISTANCE, slot);
            }
        }
    }

    /// Computes and prefetches the newest layer's k bit positions of `h` into `slot` when the
    /// newest layer will take a new item (not full), is out of cache (at least
    /// [`PREFETCH_MIN_BYTES`]) and k ≤ [`ADD_PREFETCH_PROBES`]. Returns whether it did.
    fn prepare_newest(&self, h: &HashPair, slot: &mut Ahead) -> bool {
        let Some(newest) = self.layers.len().checked_sub(1) else {
            return false;
        };
        let layer = &self.layers[newest];
        let k = layer.params().hashes as usize;
        if (layer.data.len() as u64) < PREFETCH_MIN_BYTES
            || k > slot.positions.len()
            || self.needs_new_layer()
        {
            return false;
        }
        for (i, p) in slot.positions.iter_mut().take(k).enumerate() {
            *p = layer.position(h, i as u64);
            layer.prefetch_bit_all_levels(*p);
        }
        slot.layer = newest;
        slot.count = k;
        true
    }

    /// The prefetching of [`Chain::add_many`] for one item, in layers `from..`.
    #[inline]
    fn prefetch_for_add(&self, h: &HashPair, from: usize) {
        let full = self.needs_new_layer();
        let newest = self.layers.len().saturating_sub(1);
        for (n, layer) in self.layers.iter().enumerate().skip(from) {
            if (layer.data.len() as u64) < PREFETCH_MIN_BYTES {
                continue;
            }
            let probes = if n == newest && !full {
                ADD_PREFETCH_PROBES
            } else {
                CHECK_PREFETCH_PROBES
            };
            layer.prefetch(h, probes);
        }
    }

    /// Adds `item` (`docs/format.md` ("The chain")): an item some layer already reports is not added again; otherwise,
    /// when the newest layer is full, a non-scaling chain refuses and a scaling one appends a
    /// layer of `entries × growth` capacity and half the error rate, whose bit array may be
    /// at most `max_new_layer_bytes` long. Nothing changes on error.
    pub fn add(&mut self, item: &[u8], max_new_layer_bytes: u64) -> Result<AddOutcome, AddError> {
        let h = self.hash(item);
        self.add_hashed(&h, max_new_layer_bytes)
    }

    /// [`Chain::add`] for an already hashed item.
    pub fn add_hashed(
        &mut self,
        h: &HashPair,
        max_new_layer_bytes: u64,
    ) -> Result<AddOutcome, AddError> {
        self.add_hashed_with(h, |_| max_new_layer_bytes)
    }

    /// [`Chain::add_hashed`] with the new-layer byte limit computed by `budget` only when a
    /// new layer is actually needed (computing it may be costly).
    pub fn add_hashed_with(
        &mut self,
        h: &HashPair,
        budget: impl FnOnce(&Chain) -> u64,
    ) -> Result<AddOutcome, AddError> {
        self.add_hashed_sized(h, budget, |p| p)
    }

    /// [`Chain::add_hashed_with`], where a new layer takes the shape `size_layer` makes of
    /// [`Chain::next_layer_params`] (window filters give every layer a minimum bit count:
    /// `window::min_generation_bits`); the budget applies to that shape.
    pub fn add_hashed_sized(
        &mut self,
        h: &HashPair,
        budget: impl FnOnce(&Chain) -> u64,
        size_layer: impl FnOnce(LayerParams) -> LayerParams,
    ) -> Result<AddOutcome, AddError> {
        self.add_checking_from(0, h, None, budget, size_layer)
    }

    /// [`Chain::add_hashed_sized`] for an item the caller knows is in none of the layers
    /// before `first` (they are not looked at). `newest_positions`, when given, are the item's
    /// k bit positions in the current newest layer (from [`Layer::position`]): that layer is
    /// then tested, and set if it takes the item, at those positions instead of computing
    /// them again.
    fn add_checking_from(
        &mut self,
        first: usize,
        h: &HashPair,
        newest_positions: Option<&[u64]>,
        budget: impl FnOnce(&Chain) -> u64,
        size_layer: impl FnOnce(LayerParams) -> LayerParams,
    ) -> Result<AddOutcome, AddError> {
        let newest = self.layers.len().checked_sub(1);
        let present = |n: usize, l: &Layer| match newest_positions {
            Some(p) if Some(n) == newest => p.iter().all(|&x| l.bit(x)),
            _ => l.contains(h),
        };
        if self
            .layers
            .iter()
            .enumerate()
            .skip(first)
            .rev()
            .any(|(n, l)| present(n, l))
        {
            return Ok(AddOutcome::Exists);
        }
        // Counters never wrap (only a crafted header can bring them near 2^64). Every layer's
        // size is at most the chain size, so this also keeps the layer count from wrapping.
        if self.size == u64::MAX {
            return Err(AddError::CannotGrow);
        }
        let mut set_at = newest_positions;
        if self.needs_new_layer() {
            if self.is_nonscaling() {
                return Err(AddError::Full);
            }
            let params = self
                .next_layer_params()
                .map(size_layer)
                .map_err(|_| AddError::CannotGrow)?;
            if params.bytes > budget(self) {
                return Err(AddError::CannotGrow);
            }
            self.push_layer(params)?;
            // The positions were those of the layer that was newest.
            set_at = None;
        }
        let last = self.layers.last_mut().ok_or(AddError::CannotGrow)?;
        match set_at {
            Some(p) => p.iter().for_each(|&x| last.set_bit(x)),
            None => last.set(h),
        }
        last.size += 1;
        self.size += 1;
        Ok(AddOutcome::Added)
    }

    /// Appends an empty layer of shape `params` (its bit array lazily zeroed). Nothing changes
    /// on error.
    ///
    /// Errors: [`AddError::CannotGrow`] when the bit array or the new layer table cannot be
    /// allocated.
    fn push_layer(&mut self, params: LayerParams) -> Result<(), AddError> {
        let layer = Layer::new(params).map_err(|_| AddError::CannotGrow)?;
        let mut layers = Vec::new();
        layers
            .try_reserve_exact(self.layers.len() + 1)
            .map_err(|_| AddError::CannotGrow)?;
        layers.extend(std::mem::take(&mut self.layers).into_vec());
        layers.push(layer);
        self.layers = layers.into_boxed_slice();
        Ok(())
    }

    /// Parameters of the layer the chain would append next: capacity = newest `entries` ×
    /// growth, error = newest error × [`TIGHTENING_RATIO`].
    ///
    /// Errors: [`LayerError::Invalid`] when the capacity is 0 or overflows, or the error rate
    /// underflows to 0.
    pub fn next_layer_params(&self) -> Result<LayerParams, LayerError> {
        let last = self.layers.last().ok_or(LayerError::Invalid)?;
        let capacity = last
            .params()
            .entries
            .checked_mul(u64::from(self.growth))
            .ok_or(LayerError::Invalid)?;
        let error = last.params().error * TIGHTENING_RATIO;
        LayerParams::for_capacity(capacity, error, self.options)
    }

    /// Total capacity: Σ layer `entries` (BF.INFO Capacity).
    pub fn capacity(&self) -> u64 {
        self.layers
            .iter()
            .fold(0u64, |acc, l| acc.saturating_add(l.params().entries))
    }

    /// Bytes of all bit arrays together.
    pub fn bit_array_bytes(&self) -> u64 {
        self.layers.iter().map(|l| l.data.len() as u64).sum()
    }

    /// Memory usage in bytes as RedisBloom reports it: 32 + Σ (64 + layer bytes)
    /// (`docs/format.md` ("Memory accounting"); BF.INFO Size and the type's mem_usage callback).
    pub fn mem_usage(&self) -> u64 {
        CHAIN_OVERHEAD
            + self
                .layers
                .iter()
                .map(|l| LAYER_OVERHEAD + l.data.len() as u64)
                .sum::<u64>()
    }
}

/// Whether a batch should look `layers` up by [`check_interleaved`]: some layer is at least
/// [`PREFETCH_MIN_BYTES`] (out of cache), and every layer has k ≥ 1 (always true of a valid
/// layer; the interleaved walk reads a first probe before it counts them).
fn interleave(layers: &[Layer]) -> bool {
    layers
        .iter()
        .any(|l| l.data.len() as u64 >= PREFETCH_MIN_BYTES)
        && layers.iter().all(|l| l.params().hashes > 0)
}

/// An item's bit positions in the newest layer, computed ahead of its add by
/// [`Chain::add_many`] (`layer` is that layer's index; `usize::MAX`: none computed).
#[derive(Debug, Clone, Copy)]
struct Ahead {
    layer: usize,
    count: usize,
    positions: [u64; ADD_PREFETCH_PROBES as usize],
}

impl Ahead {
    const NONE: Ahead = Ahead {
        layer: usize::MAX,
        count: 0,
        positions: [0; ADD_PREFETCH_PROBES as usize],
    };
}

/// One item's lookup in progress in [`check_interleaved`]: the layer and probe it is at, and
/// that probe's bit position, whose cache line was prefetched when it was computed.
#[derive(Debug, Clone, Copy)]
struct Lookup {
    item: usize,
    layer: usize,
    probe: u32,
    position: u64,
}

/// Sets `found[i]` to whether any of `layers` has all k bits of `hashes[i]` set: the answers
/// of [`Chain::contains_hashed`] over these layers, computed for many items at once
/// ("asynchronous memory access chaining": Kocberber, Falsafi & Grot, "Asynchronous Memory
/// Access Chaining", VLDB 2015).
///
/// [`LOOKUPS_IN_FLIGHT`] items are looked up side by side, each a small state machine (layer,
/// probe). A round visits each one: it reads the bit its probe prefetched in the previous
/// round, then either computes and prefetches its next probe (the bit was set), moves to the
/// next older layer (clear bit), or ends, handing its place to the next item. Every probe
/// thus has a round's worth of other lookups to hide its cache miss behind, whether an item
/// needs one probe or k, in one layer or several. Each layer is tested newest first and from
/// its first probe on, as item by item. `found` must be as long as `hashes`; every layer must
/// have k ≥ 1.
pub fn check_interleaved(layers: &[Layer], hashes: &[HashPair], found: &mut [bool]) {
    debug_assert_eq!(found.len(), hashes.len());
    let Some(top) = layers.len().checked_sub(1) else {
        found.fill(false);
        return;
    };
    let count = found.len().min(hashes.len());
    let start = |item: usize, layer: usize| {
        let position = layers[layer].position(&hashes[item], 0);
        layers[layer].prefetch_bit(position);
        Lookup {
            item,
            layer,
            probe: 0,
            position,
        }
    };
    let mut next = 0;
    let mut slots = [None; LOOKUPS_IN_FLIGHT];
    for slot in slots.iter_mut().take(count) {
        *slot = Some(start(next, top));
        next += 1;
    }
    let mut in_flight = next;
    while in_flight > 0 {
        for slot in slots.iter_mut() {
            let Some(s) = slot else { continue };
            let layer = &layers[s.layer];
            let answer = if layer.bit(s.position) {
                s.probe += 1;
                if s.probe < layer.params().hashes {
                    s.position = layer.position(&hashes[s.item], u64::from(s.probe));
                    layer.prefetch_bit(s.position);
                    None
                } else {
                    Some(true)
                }
            } else if s.layer > 0 {
                *s = start(s.item, s.layer - 1);
                None
            } else {
                Some(false)
            };
            if let Some(present) = answer {
                found[s.item] = present;
                if next < count {
                    *slot = Some(start(next, top));
                    next += 1;
                } else {
                    *slot = None;
                    in_flight -= 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Per-filter memory: the chain is 32 bytes and a layer 64, as RedisBloom's structs.
    #[test]
    fn struct_sizes() {
        assert_eq!(std::mem::size_of::<Chain>(), 32);
        assert_eq!(std::mem::size_of::<Layer>(), 64);
    }

    #[test]
    fn growth_example() {
        // `docs/format.md` ("The chain"): BF.RESERVE bf 0.01 10 then 100 distinct adds.
        let mut c = Chain::new(10, 0.01, 2, false, u64::MAX).unwrap();
        let mut added = 0;
        for i in 0..100 {
            if c.add(format!("{i}").as_bytes(), u64::MAX).unwrap() == AddOutcome::Added {
                added += 1;
            }
        }
        let shape: Vec<(u64, f64, u64, u32, u64)> = c
            .layers
            .iter()
            .map(|l| {
                (
                    l.params().entries,
                    l.params().error,
                    l.params().bytes,
                    l.params().hashes,
                    l.size,
                )
            })
            .collect();
        assert_eq!(
            shape,
            vec![
                (10, 0.005, 16, 8, 10),
                (20, 0.0025, 32, 9, 20),
                (40, 0.00125, 72, 10, 40),
                (80, 0.000625, 160, 11, 29)
            ]
        );
        assert_eq!(c.size, 99);
        assert_eq!(added, 99);
        for i in 0..100 {
            assert!(c.contains(format!("{i}").as_bytes()));
        }
    }

    #[test]
    fn nonscaling_fills_up() {
        let mut c = Chain::new(2, 0.01, 2, true, u64::MAX).unwrap();
        assert_eq!(c.options, 13);
        assert_eq!(c.layers[0].params().error, 0.01);
        assert_eq!(c.add(b"a", u64::MAX), Ok(AddOutcome::Added));
        assert_eq!(c.add(b"b", u64::MAX), Ok(AddOutcome::Added));
        assert_eq!(c.add(b"a", u64::MAX), Ok(AddOutcome::Exists));
        assert_eq!(c.add(b"c", u64::MAX), Err(AddError::Full));
        assert_eq!(c.size, 2);
        assert_eq!(c.layers.len(), 1);
    }

    #[test]
    fn growth_refused_by_budget_changes_nothing() {
        let mut c = Chain::new(1, 0.01, 2, false, u64::MAX).unwrap();
        c.add(b"a", u64::MAX).unwrap();
        let before = c.clone();
        assert_eq!(c.add(b"b", 7), Err(AddError::CannotGrow));
        assert_eq!(c, before);
        assert_eq!(c.add(b"b", u64::MAX), Ok(AddOutcome::Added));
        assert_eq!(c.layers.len(), 2);
    }

    #[test]
    fn error_underflow_stops_growth() {
        let mut c = Chain::new(1, 0.5, 1, false, u64::MAX).unwrap();
        let mut i = 0u64;
        let err = loop {
            match c.add(&i.to_le_bytes(), u64::MAX) {
                Ok(_) => i += 1,
                Err(e) => break e,
            }
            assert!(
                i < 5000,
                "the chain must stop growing once the error rate underflows"
            );
        };
        assert_eq!(err, AddError::CannotGrow);
        assert!(c.layers.len() > 1000, "{} layers", c.layers.len());
        assert!(c.layers.last().unwrap().params().error > 0.0);
    }

    #[test]
    fn counters_never_wrap() {
        let mut c = Chain::new(10, 0.01, 2, false, u64::MAX).unwrap();
        c.size = u64::MAX;
        c.layers[0].size = 0;
        assert_eq!(c.add(b"x", u64::MAX), Err(AddError::CannotGrow));
        assert_eq!(c.size, u64::MAX);
        assert!(!c.contains(b"x"));
    }

    #[test]
    fn memory_formula() {
        for (capacity, error, nonscaling, bytes) in [
            (100, 0.01, false, 240),
            (100, 0.001, false, 296),
            (3, 0.01, true, 104),
            (1000, 0.05, false, 1056),
            (1_000_000, 0.01, false, 1_378_568),
        ] {
            let c = Chain::new(capacity, error, 2, nonscaling, u64::MAX).unwrap();
            assert_eq!(c.mem_usage(), bytes, "{capacity} items at {error}");
        }
    }

    #[test]
    fn absurd_capacity_is_an_error() {
        assert_eq!(
            Chain::new(1_000_000_000_000_000_000, 0.01, 2, false, u64::MAX).unwrap_err(),
            LayerError::OutOfMemory
        );
    }
}
