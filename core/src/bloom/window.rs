//! Filters that forget: a sliding-window Bloom filter made of a ring of generation filters.
//!
//! # Structure
//!
//! A window of `W` milliseconds is cut into [`SLICES`] = 4 generations of `W / 4` each,
//! numbered from the Unix epoch: generation `g` covers the times `t` (ms) with
//! `⌊4t / W⌋ = g` ([`generation_at`]). Every generation has its own scalable [`Chain`]; an item
//! is always added to the newest generation. The ring keeps the newest [`LIVE`] = 5
//! generations and drops the sixth-newest when time moves into a new generation. So an item
//! added at time `t` in generation `g` stays until generation `g + 5` starts:
//! - at least `W` (it was added before `(g + 1)·W/4` and stays until `(g + 5)·W/4`);
//! - at most `1.25 · W` (it was added at or after `g·W/4`), to the millisecond.
//!
//! A query asks every live generation; a re-add puts the item into the newest generation
//! again, which refreshes its age.
//!
//! # Sizing and false positives
//!
//! Each generation's first layer holds `⌈capacity / 4⌉` items at `error / 6`
//! ([`ERROR_DIVISOR`]), in at least [`min_generation_bits`] bits, so with a steady stream of `capacity` distinct items per window each
//! generation receives about `capacity / 4` items and the union of the five answers has a
//! false-positive rate of at most `5 × error / 6` (measured 0.85 × `error` at the worst
//! moment, the end of a generation). A generation that receives more (a burst) grows like a
//! scalable filter: next layer `expansion ×` larger at half the error rate, so a burst
//! generation's own rate stays below `2 × error / 6` and the memory follows the load. With NONSCALING a
//! generation refuses new items once it holds `⌈capacity / 4⌉` (`non scaling filter is full`).
//!
//! # Memory (bit arrays, steady state)
//!
//! With `b(p) = −ln p / ln²2` bits per item (the optimum; the same formula the plain filters
//! use):
//! - this window filter: `5 · (capacity / 4) · b(error / 6) = 1.25 · capacity · b(error / 6)`;
//! - a plain non-scaling filter of the same capacity and rate (which never forgets):
//!   `capacity · b(error)`; ratio `1.25 · (1 + ln 6 / ln(1/error))`: 1.74× at 1 %, 1.57× at
//!   0.1 %, 1.49× at 0.01 % (≤ 1.8× for every error ≤ 1.7 %; 2.00× at 5 %);
//! - the two-daily-keys pattern (a key per window with EXPIRE, checking this window's key and
//!   the previous one, each key sized for a window's `capacity` at `error / 2` so that the two
//!   answers together stay within `error`): `2 · capacity · b(error / 2)`; 2.30× at 1 %, 2.20×
//!   at 0.1 %; and it remembers an item for anything between one and two windows.
//!
//! Why a generation ring rather than age-partitioned Bloom filters (Shtul, Baquero & Almeida,
//! "Age-Partitioned Bloom Filters", 2020): APBF slices shift after a fixed number of
//! insertions, so its window is counted in items, and a time window with a varying rate
//! leaves slices over- or under-filled with no way to grow; the ring's generations are plain
//! scalable filters (same layers, hashing and encodings as every other filter here), grow
//! under bursts, and drop a whole generation in one step — a freed array, never a clear.
//!
//! # Determinism
//!
//! Nothing here reads a clock. The caller passes the generation number (from the primary's
//! clock, or from the replicated / persisted command), so the same sequence of calls gives the
//! same state everywhere.

use super::chain::{AddError, Chain};
use super::dump::{self, ChunkError};
use super::layer::{Layer, LayerError, LayerParams, OPT_FORCE64, OPT_NOROUND, OPT_NO_SCALING};
use super::rdb::{self, DecodeError, ValueReader, ValueWriter};
use crate::hash::HashPair;

/// Generations per window: an item is kept between `W` and `W · (1 + 1/SLICES)`.
pub const SLICES: u64 = 4;
/// Generations kept: the newest one and the [`SLICES`] before it.
pub const LIVE: u64 = SLICES + 1;
/// A generation's first layer is sized for `error / ERROR_DIVISOR`: [`LIVE`] generations are
/// asked, and a layer filled to its capacity answers slightly above its nominal rate (its hash
/// count is rounded up: 0.00169 for a nominal 1/600), so 5 would leave the union at 1.005 ×
/// `error` at the end of each generation; 6 keeps it at 0.85 × `error`.
pub const ERROR_DIVISOR: f64 = 6.0;

/// A generation's first layer has at least `MIN_BITS_TIMES_ERROR / error` bits (see
/// [`min_generation_bits`]).
pub const MIN_BITS_TIMES_ERROR: f64 = 64.0;
/// ... and never needs more than this for that reason (2^23 bits, 1 MiB).
pub const MIN_BITS_CAP: u64 = 1 << 23;

/// The fewest bits of a generation's first layer for a window of `error`:
/// `min(⌈64 / error⌉, 2^23)`.
///
/// Why: positions are `a + i·b mod m` (the plain filters' hashing), and an item whose `b` is a
/// multiple of `m` (probability `1/m`) probes one bit k times, so it is a false positive with
/// the layer's fill (about 1/2) rather than its rate; shorter cycles add a little more.
/// Measured on a layer of 250 items at 0.001 / 6 (m = 4 544 bits, k = 13): 0.000253 against
/// 0.000155 predicted from its bits, an excess of about `0.45 / m`. Five generations are
/// asked, so the excess is `2.25 / m`: at most 3.5 % of `error` with `m ≥ 64 / error`. Large
/// windows are unaffected (their layers are far larger); small ones get a larger bit array.
pub fn min_generation_bits(error: f64) -> u64 {
    let bits = (MIN_BITS_TIMES_ERROR / error).ceil();
    if bits >= MIN_BITS_CAP as f64 {
        MIN_BITS_CAP
    } else {
        bits as u64
    }
}

/// `p` with its bit count raised to [`min_generation_bits`] of a window of `error` when smaller
/// (capacity, error and hash count unchanged): every layer of a generation, the first and
/// those it grows under a burst.
fn at_least_min_bits(mut p: LayerParams, error: f64) -> LayerParams {
    let min = min_generation_bits(error);
    if p.bits < min {
        p.bytes = min.div_ceil(64) * 8;
        p.bits = p.bytes * 8;
    }
    p
}

/// First 8 bytes of a window filter's SCANDUMP header. A RedisBloom-format reader takes them
/// as the chain's item count and then reads a layer count of 0 at bytes 8..12, which every
/// RedisBloom-format reader refuses (`ERR received bad data`), so a window dump can never be
/// loaded as a plain filter.
pub const HEADER_MAGIC: [u8; 8] = *b"BFwindow";
/// Version of the window dump: 2, the header layout of version 1 with chunks addressed by
/// generation ([`scan_chunk`]). A version 1 header ([`HEADER_VERSION_OFFSETS`]) is still read,
/// and the filter it creates takes its chunks by offset ([`Window::offset_chunks`]); a build
/// that reads only version 1 refuses these, so no chunk is ever filed under the other
/// addressing.
pub const HEADER_VERSION: u32 = 2;
/// The window header version older builds wrote, whose chunks were addressed by a byte offset
/// into all generations' arrays together (consistent in a snapshot such as an AOF rewrite, not
/// across writes): still read, so that an AOF or a dump made by an older build loads after an
/// upgrade.
pub const HEADER_VERSION_OFFSETS: u32 = 1;
/// Bytes of the fixed part of the window header.
pub const HEADER_FIXED_BYTES: usize = 64;
/// The RDB encoding version of the window type.
pub const ENCODING_VERSION: i32 = 1;
/// Header overhead charged per window by [`Window::mem_usage`] (the struct itself).
pub const WINDOW_OVERHEAD: u64 = 64;

/// Largest window length and generation number a stored window filter may carry: what a
/// replicated `GENERATION` / `WINDOW` argument (a signed 64-bit integer) can express, so that
/// every write to a loaded filter replicates to something a replica accepts.
pub const MAX_REPLICATED: u64 = i64::MAX as u64;

/// The generation containing time `now_ms` (ms since the Unix epoch) for a window of
/// `window_ms` ms: `⌊4 · now_ms / window_ms⌋`, saturating. `window_ms` must be ≥ 1.
pub fn generation_at(now_ms: u64, window_ms: u64) -> u64 {
    let g = u128::from(now_ms) * u128::from(SLICES) / u128::from(window_ms.max(1));
    u64::try_from(g).unwrap_or(u64::MAX)
}

/// What adding one item did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowAdd {
    /// The item was in no live generation; it is now in the newest one (reply 1).
    New,
    /// The item was in an older generation only; it is now also in the newest one, so it is
    /// remembered for another window (reply 0).
    Refreshed,
    /// The newest generation already reports it; nothing changed (reply 0).
    Present,
}

/// A sliding-window filter: parameters, the newest generation number reached and the live
/// generations.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// Window length in milliseconds (≥ 1).
    pub window_ms: u64,
    /// Distinct items expected per window (≥ 1).
    pub capacity: u64,
    /// Requested false-positive rate, in (0, 1).
    pub error: f64,
    /// Growth factor of a generation's layers (≥ 1; stored even when non-scaling).
    pub expansion: u32,
    /// Generations never grow past their first layer.
    pub nonscaling: bool,
    /// The newest generation number this filter has advanced to.
    pub generation: u64,
    /// Live generations, oldest first: (generation number, filter). Numbers are strictly
    /// increasing, each in `generation − SLICES ..= generation`; a generation that received
    /// no item has no entry.
    pub gens: Vec<(u64, Chain)>,
    /// True only for a filter created from a [`HEADER_VERSION_OFFSETS`] header (written by an
    /// older build, e.g. in an AOF rewritten without the RDB preamble): its chunks are addressed
    /// by byte offset into all generations' arrays together (see [`apply_chunk`]). Not stored:
    /// every RDB value, new filter and new dump uses generation addressing.
    pub offset_chunks: bool,
}

impl Window {
    /// A new, empty window filter at generation `generation`.
    ///
    /// Errors: [`LayerError::Invalid`] when `window_ms` or `capacity` is 0, `error` ∉ (0, 1),
    /// `expansion` is 0, or a generation's first layer cannot be sized.
    pub fn new(
        window_ms: u64,
        capacity: u64,
        error: f64,
        expansion: u32,
        nonscaling: bool,
        generation: u64,
    ) -> Result<Window, LayerError> {
        let w = Window {
            window_ms,
            capacity,
            error,
            expansion,
            nonscaling,
            generation,
            gens: Vec::new(),
            offset_chunks: false,
        };
        if window_ms == 0 || expansion == 0 {
            return Err(LayerError::Invalid);
        }
        w.generation_params()?;
        Ok(w)
    }

    /// Option bits of every generation's chain.
    pub fn chain_options(&self) -> u32 {
        OPT_NOROUND | OPT_FORCE64 | if self.nonscaling { OPT_NO_SCALING } else { 0 }
    }

    /// The first layer of a generation: `⌈capacity / 4⌉` items at `error / 6`, with at least
    /// [`min_generation_bits`] bits (same capacity and hash count; only the bit array is
    /// larger).
    ///
    /// Errors: [`LayerError::Invalid`] for parameters that size no layer.
    pub fn generation_params(&self) -> Result<LayerParams, LayerError> {
        let p = LayerParams::for_capacity(
            self.capacity.div_ceil(SLICES),
            self.error / ERROR_DIVISOR,
            self.chain_options(),
        )?;
        Ok(at_least_min_bits(p, self.error))
    }

    /// Bytes of the bit arrays this window holds at its capacity: [`LIVE`] generations, each
    /// with its first layer ([`Window::generation_params`]); what a new window filter is
    /// admitted against, so that one that can never hold its capacity is refused at creation
    /// rather than refusing adds a generation later. Growth under bursts comes on top.
    ///
    /// Errors: as [`Window::generation_params`].
    pub fn bytes_at_capacity(&self) -> Result<u64, LayerError> {
        Ok(self.generation_params()?.bytes.saturating_mul(LIVE))
    }

    /// Bytes of the bit array the next add of a new item may have to allocate: the newest
    /// generation's next layer when the current generation has its chain, else a new
    /// generation's first layer (0 when neither can be sized). For the log line of a
    /// replicated add that could not allocate it.
    pub fn next_array_bytes(&self) -> u64 {
        let next = match self.gens.last() {
            Some((n, c)) if *n == self.generation => c
                .next_layer_params()
                .map(|p| at_least_min_bits(p, self.error)),
            _ => self.generation_params(),
        };
        next.map_or(0, |p| p.bytes)
    }

    /// The generation containing `now_ms` for this window.
    pub fn generation_at(&self, now_ms: u64) -> u64 {
        generation_at(now_ms, self.window_ms)
    }

    /// Moves to generation `g` (no-op when `g` is not newer): generations older than
    /// `g − SLICES` leave the filter and are returned, so that the caller may free their bit
    /// arrays where it likes (they are never cleared). The generation number changed when
    /// `g` was newer.
    pub fn advance(&mut self, g: u64) -> Vec<(u64, Chain)> {
        if g <= self.generation {
            return Vec::new();
        }
        self.generation = g;
        let oldest = g.saturating_sub(SLICES);
        let keep = self.gens.iter().position(|(n, _)| *n >= oldest);
        let cut = keep.unwrap_or(self.gens.len());
        self.gens.drain(..cut).collect()
    }

    /// The generations live at effective generation `g` (the newer of `g` and the filter's
    /// own): those numbered `max(g, generation) − SLICES` or later.
    fn live(&self, g: u64) -> impl DoubleEndedIterator<Item = &Chain> {
        let oldest = g.max(self.generation).saturating_sub(SLICES);
        self.gens
            .iter()
            .filter(move |(n, _)| *n >= oldest)
            .map(|(_, c)| c)
    }

    /// The hash pair of an item (64-bit hashing, as every modern filter).
    #[inline]
    pub fn hash(item: &[u8]) -> HashPair {
        HashPair::hash64(item)
    }

    /// True when `h` is in a generation live at `g` (see `Window::live`); does not change
    /// the filter, so reads never depend on who last wrote it.
    pub fn contains_at(&self, h: &HashPair, g: u64) -> bool {
        self.live(g).rev().any(|c| c.contains_hashed(h))
    }

    /// Items accepted by the generations live at `g` (BF.CARD, BF.INFO Items): distinct per
    /// generation, so an item re-added in another generation counts once per generation.
    pub fn items_at(&self, g: u64) -> u64 {
        self.live(g).fold(0u64, |a, c| a.saturating_add(c.size))
    }

    /// Adds `h` to generation `g` after advancing to it (a `g` older than the filter's own
    /// generation means its own). `budget(existing)` gives the bytes a new bit array may take
    /// when the window already holds `existing` bytes; it is asked only when an array is about
    /// to be created. Nothing changes on error (except the advance, which stands).
    ///
    /// Errors: [`AddError::Full`] (non-scaling generation full), [`AddError::CannotGrow`]
    /// (allocation refused or failed, or the generation's arrays would exceed
    /// [`MAX_GENERATION_BYTES`]).
    pub fn add_hashed(
        &mut self,
        h: &HashPair,
        g: u64,
        mut budget: impl FnMut(u64) -> u64,
    ) -> Result<WindowAdd, AddError> {
        drop(self.advance(g));
        let current = self.generation;
        let newest_is_current = self.gens.last().is_some_and(|(n, _)| *n == current);
        if newest_is_current && self.gens.last().is_some_and(|(_, c)| c.contains_hashed(h)) {
            return Ok(WindowAdd::Present);
        }
        let older = self.contains_at(h, current);
        let existing = self.bit_array_bytes();
        if !newest_is_current {
            let params = self.generation_params().map_err(|_| AddError::CannotGrow)?;
            if params.bytes > budget(existing).min(MAX_GENERATION_BYTES) {
                return Err(AddError::CannotGrow);
            }
            let layer = Layer::new(params).map_err(|_| AddError::CannotGrow)?;
            self.gens.try_reserve(1).map_err(|_| AddError::CannotGrow)?;
            self.gens.push((
                current,
                Chain {
                    size: 0,
                    options: self.chain_options(),
                    growth: self.expansion,
                    layers: Box::new([layer]),
                },
            ));
        }
        let error = self.error;
        let (_, chain) = self.gens.last_mut().ok_or(AddError::CannotGrow)?;
        let others = existing.saturating_sub(chain.bit_array_bytes());
        // A full scaling generation grows with at least the minimum bit count, and never past
        // MAX_GENERATION_BYTES (its SCANDUMP iterators address at most that).
        let r = chain.add_hashed_sized(
            h,
            |c| {
                let own = c.bit_array_bytes();
                budget(others + own).min(MAX_GENERATION_BYTES.saturating_sub(own))
            },
            |p| at_least_min_bits(p, error),
        );
        if r.is_err() && chain.size == 0 && !newest_is_current {
            // Leave no empty generation behind an error: state as before (but advanced).
            self.gens.pop();
        }
        r?;
        Ok(if older {
            WindowAdd::Refreshed
        } else {
            WindowAdd::New
        })
    }

    /// Every layer of every generation, oldest generation first: the order of the SCANDUMP
    /// chunks and of the RDB value.
    pub fn layers(&self) -> impl Iterator<Item = &Layer> {
        self.gens.iter().flat_map(|(_, c)| c.layers.iter())
    }

    /// Layers of live generations (BF.INFO "Number of filters").
    pub fn layer_count(&self) -> u64 {
        self.layers().count() as u64
    }

    /// Bytes of all bit arrays together.
    pub fn bit_array_bytes(&self) -> u64 {
        self.gens.iter().map(|(_, c)| c.bit_array_bytes()).sum()
    }

    /// Memory in bytes: [`WINDOW_OVERHEAD`] + Σ generation [`Chain::mem_usage`].
    pub fn mem_usage(&self) -> u64 {
        WINDOW_OVERHEAD + self.gens.iter().map(|(_, c)| c.mem_usage()).sum::<u64>()
    }

    /// The parameters and generation checks shared by both decoders: window ≥ 1 ms,
    /// capacity ≥ 1, error ∈ (0, 1), expansion ≥ 1, generations strictly increasing within
    /// `generation − SLICES ..= generation`, each a chain with this window's option bits and
    /// expansion and a non-empty item count.
    fn is_consistent(&self) -> bool {
        let oldest = self.generation.saturating_sub(SLICES);
        self.window_ms >= 1
            && self.window_ms <= MAX_REPLICATED
            && self.generation <= MAX_REPLICATED
            && self.capacity >= 1
            && self.error > 0.0
            && self.error < 1.0
            && self.expansion >= 1
            && self.generation_params().is_ok()
            && self.gens.len() as u64 <= LIVE
            && self.gens.windows(2).all(|p| p[0].0 < p[1].0)
            && self.gens.iter().all(|(n, c)| {
                *n >= oldest
                    && *n <= self.generation
                    && c.options == self.chain_options()
                    && c.growth == self.expansion
                    && !c.layers.is_empty()
                    && c.bit_array_bytes() <= MAX_GENERATION_BYTES
            })
    }
}

/// Encodes the SCANDUMP header (the data of iterator 0), little-endian:
///
/// | offset | type | field |
/// |---|---|---|
/// | 0 | 8 bytes | [`HEADER_MAGIC`] `BFwindow` |
/// | 8 | u32 | 0 (a RedisBloom-format reader's layer count: refused there) |
/// | 12 | u32 | [`HEADER_VERSION`] |
/// | 16 | u64 | window (ms) |
/// | 24 | u64 | capacity |
/// | 32 | f64 | error |
/// | 40 | u32 | expansion |
/// | 44 | u32 | flags (1 = non-scaling) |
/// | 48 | u64 | generation |
/// | 56 | u32 | generation count n (≤ 5) |
/// | 60 | u32 | 0 (reserved) |
/// | 64 | n × | u64 generation number, u32 length L, L bytes of that generation's chain header |
///
/// The chunks that follow are the bit arrays of every layer, oldest generation first, each
/// generation's layers oldest first, addressed by generation (see [`scan_chunk`]).
pub fn encode_header(w: &Window) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_FIXED_BYTES + 128 * w.gens.len());
    out.extend_from_slice(&HEADER_MAGIC);
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&HEADER_VERSION.to_le_bytes());
    out.extend_from_slice(&w.window_ms.to_le_bytes());
    out.extend_from_slice(&w.capacity.to_le_bytes());
    out.extend_from_slice(&w.error.to_le_bytes());
    out.extend_from_slice(&w.expansion.to_le_bytes());
    out.extend_from_slice(&u32::from(w.nonscaling).to_le_bytes());
    out.extend_from_slice(&w.generation.to_le_bytes());
    out.extend_from_slice(&(w.gens.len() as u32).to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    for (n, c) in &w.gens {
        let h = dump::encode_header(c);
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&(h.len() as u32).to_le_bytes());
        out.extend_from_slice(&h);
    }
    out
}

/// The window length (ms) and generation a window header declares (bytes 16..24 and 48..56),
/// read without decoding the rest; `None` when `data` is not that long or not a window header.
/// For checks that need a clock, which this crate does not read.
pub fn header_window_and_generation(data: &[u8]) -> Option<(u64, u64)> {
    if data.len() < HEADER_FIXED_BYTES || !is_window_header(data) {
        return None;
    }
    let field = |at: usize| u64::from_le_bytes(data[at..at + 8].try_into().unwrap_or([0; 8]));
    Some((field(16), field(48)))
}

/// True when `data` starts like a window header (magic and a zero layer count), so a
/// LOADCHUNK of it is meant for a window filter.
pub fn is_window_header(data: &[u8]) -> bool {
    data.len() >= 12 && data[..8] == HEADER_MAGIC && data[8..12] == [0, 0, 0, 0]
}

fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Result<&'a [u8], ChunkError> {
    let end = pos.checked_add(n).ok_or(ChunkError::BadData)?;
    let s = data.get(*pos..end).ok_or(ChunkError::BadData)?;
    *pos = end;
    Ok(s)
}

fn u32_at(data: &[u8], pos: &mut usize) -> Result<u32, ChunkError> {
    let b = take(data, pos, 4)?;
    Ok(u32::from_le_bytes(
        b.try_into().map_err(|_| ChunkError::BadData)?,
    ))
}

fn u64_at(data: &[u8], pos: &mut usize) -> Result<u64, ChunkError> {
    let b = take(data, pos, 8)?;
    Ok(u64::from_le_bytes(
        b.try_into().map_err(|_| ChunkError::BadData)?,
    ))
}

/// Decodes a window header into a window with zeroed bit arrays. Every length, count and
/// parameter is checked, and the bytes announced by all generations together are summed and
/// compared with `max_bytes`, before any bit array is allocated; each generation's chain
/// header gets every check of [`dump::decode_header`].
///
/// Errors: [`ChunkError::BadData`] for any violation (wrong magic or version, trailing or
/// missing bytes, more than [`LIVE`] generations, inconsistent parameters);
/// [`ChunkError::OutOfMemory`] for a well-formed header whose arrays exceed `max_bytes`.
pub fn decode_header(data: &[u8], max_bytes: u64) -> Result<Window, ChunkError> {
    if data.len() < HEADER_FIXED_BYTES || !is_window_header(data) {
        return Err(ChunkError::BadData);
    }
    let mut pos = 12;
    let version = u32_at(data, &mut pos)?;
    if version != HEADER_VERSION && version != HEADER_VERSION_OFFSETS {
        return Err(ChunkError::BadData);
    }
    let window_ms = u64_at(data, &mut pos)?;
    let capacity = u64_at(data, &mut pos)?;
    let error = f64::from_bits(u64_at(data, &mut pos)?);
    let expansion = u32_at(data, &mut pos)?;
    let flags = u32_at(data, &mut pos)?;
    let generation = u64_at(data, &mut pos)?;
    let count = u32_at(data, &mut pos)?;
    let reserved = u32_at(data, &mut pos)?;
    if flags > 1 || reserved != 0 || u64::from(count) > LIVE {
        return Err(ChunkError::BadData);
    }
    // First pass: slice out every generation and sum its announced bytes; nothing allocated.
    let mut parts = Vec::with_capacity(count as usize);
    let mut total: u64 = 0;
    for _ in 0..count {
        let n = u64_at(data, &mut pos)?;
        let len = u32_at(data, &mut pos)? as usize;
        let h = take(data, &mut pos, len)?;
        if h.len() < dump::HEADER_FIXED_BYTES {
            return Err(ChunkError::BadData);
        }
        let layers = u32::from_le_bytes([h[8], h[9], h[10], h[11]]) as usize;
        if layers
            .checked_mul(dump::HEADER_LAYER_BYTES)
            .and_then(|b| b.checked_add(dump::HEADER_FIXED_BYTES))
            != Some(h.len())
        {
            return Err(ChunkError::BadData);
        }
        let mut gen_bytes: u64 = 0;
        for j in 0..layers {
            let at = dump::HEADER_FIXED_BYTES + j * dump::HEADER_LAYER_BYTES;
            let mut p = at;
            gen_bytes = gen_bytes
                .checked_add(u64_at(h, &mut p)?)
                .ok_or(ChunkError::BadData)?;
        }
        total = total.checked_add(gen_bytes).ok_or(ChunkError::BadData)?;
        parts.push((n, h, gen_bytes));
    }
    if pos != data.len() {
        return Err(ChunkError::BadData);
    }
    if total > max_bytes {
        // As for a plain header: a well-formed dump that does not fit the memory budget.
        return Err(ChunkError::OutOfMemory);
    }
    if parts.iter().any(|p| p.2 > MAX_GENERATION_BYTES) {
        // Its chunk iterators could not address it.
        return Err(ChunkError::BadData);
    }
    // Parameters first (cheap), then the allocations. `Window::new` refuses only what
    // `is_consistent` refuses too.
    let mut w = Window::new(
        window_ms,
        capacity,
        error,
        expansion,
        flags == 1,
        generation,
    )
    .map_err(|_| ChunkError::BadData)?;
    w.offset_chunks = version == HEADER_VERSION_OFFSETS;
    if !w.is_consistent() {
        return Err(ChunkError::BadData);
    }
    // Admitted as a new window filter is: against all its generations at capacity.
    if w.bytes_at_capacity().map_or(true, |b| b > max_bytes) {
        return Err(ChunkError::OutOfMemory);
    }
    for (n, h, _) in parts {
        let c = dump::decode_header(h, max_bytes)?;
        w.gens.push((n, c));
    }
    if !w.is_consistent() {
        return Err(ChunkError::BadData);
    }
    Ok(w)
}

/// Bits of a window chunk iterator that hold the 1-based byte position inside its generation.
pub const ITER_POS_BITS: u32 = 36;
/// Bits of each of the two generation tags (generation number mod 256) of an iterator.
pub const ITER_TAG_BITS: u32 = 8;
/// Iterators are below this (2^52): exact as doubles (JavaScript, node-redis) and positive.
pub const ITER_LIMIT: i64 = 1 << (ITER_POS_BITS + 2 * ITER_TAG_BITS);
/// Largest total of one generation's bit arrays: 64 GiB less one 8-byte word, so that every
/// position of a walk (1 ..= bytes + 1) fits in [`ITER_POS_BITS`]. A growth beyond it is
/// refused ([`AddError::CannotGrow`]) and both decoders refuse a generation above it.
pub const MAX_GENERATION_BYTES: u64 = (1 << ITER_POS_BITS) - 8;

const POS_MASK: u64 = (1 << ITER_POS_BITS) - 1;
const TAG_MASK: u64 = (1 << ITER_TAG_BITS) - 1;

/// A generation number's tag: the number mod 256.
fn tag(n: u64) -> u64 {
    n & TAG_MASK
}

/// The iterator of position `pos` (1-based) in generation `gen` of a walk whose newest
/// generation is `newest`.
fn encode_iter(newest: u64, gen: u64, pos: u64) -> i64 {
    debug_assert!(pos <= POS_MASK);
    ((tag(newest) << (ITER_POS_BITS + ITER_TAG_BITS)) | (tag(gen) << ITER_POS_BITS) | pos) as i64
}

/// (newest tag, generation tag, position) of an iterator in `1 .. ITER_LIMIT`.
fn decode_iter(iter: i64) -> Option<(u64, u64, u64)> {
    if !(1..ITER_LIMIT).contains(&iter) {
        return None;
    }
    let i = iter as u64;
    Some((
        (i >> (ITER_POS_BITS + ITER_TAG_BITS)) & TAG_MASK,
        (i >> ITER_POS_BITS) & TAG_MASK,
        i & POS_MASK,
    ))
}

/// Index of the kept generation whose tag is `t`. The kept generations are numbered within
/// five consecutive numbers, so their tags are distinct.
fn by_tag(w: &Window, t: u64) -> Option<usize> {
    w.gens.iter().position(|(n, _)| tag(*n) == t)
}

/// One SCANDUMP step of a window filter for `iter` ≥ 1: the chunk and the iterator to send
/// with it (and to ask for next); `(0, [])` when the walk is over, for `iter` < 1 and for
/// `iter` ≥ [`ITER_LIMIT`].
///
/// Chunks are addressed by generation, not by a global offset, so that writes between two
/// steps (a generation dropped at the front, a new one at the back, a growth layer) never
/// shift a chunk onto another generation. An iterator (below 2^52) is
/// - bits 0–35: the 1-based byte position inside the generation's concatenated layers, just
///   past the chunk sent with it (a generation holds at most [`MAX_GENERATION_BYTES`]);
/// - bits 36–43: the chunk's generation number mod 256;
/// - bits 44–51: the walk's newest generation number mod 256.
///
/// Iterator 1 starts the walk: the newest generation kept now becomes the walk's newest and
/// the walk starts at the oldest generation kept. A position at the end of its generation
/// goes on with the next kept generation, up to the walk's newest: a generation created
/// during the walk is not walked. Each chunk stays inside one layer and is at most
/// [`dump::MAX_CHUNK_BYTES`].
///
/// **Why tags mod 256 are enough.** A walk's generations lie within five consecutive
/// numbers, and so do the kept generations of any window, so a tag names at most one
/// generation of either. A tag can name a generation other than the one it was made for only
/// when the filter advanced by more than 250 generations since the header was taken (the
/// number it was made for is gone and a kept one has the same residue, at least 256 further
/// on). By then every generation the copy's header describes is more than 250 generations
/// old: dead at the source and, by the same clock, at the copy (a read asks only the
/// generations within four of the current one), so whatever lands in them is never asked;
/// and every item the source holds then was added during the walk, which a walk never
/// promises to copy. Mis-filed bits can therefore never make the copy answer 0 for an item
/// the source held when the walk began and still holds at its end.
///
/// Errors: [`ChunkError::Changed`] when the walk cannot go on consistently: the iterator's
/// generation or its walk's newest generation is no longer kept (dropped by a write since),
/// or its position is past its generation's end. The client starts again from iterator 0.
pub fn scan_chunk(w: &Window, iter: i64) -> Result<(i64, &[u8]), ChunkError> {
    let Some((newest_tag, gen_tag, pos)) = decode_iter(iter) else {
        return Ok((0, &[]));
    };
    let (newest, gi, offset) = if iter == 1 {
        let Some(last) = w.gens.len().checked_sub(1) else {
            return Ok((0, &[]));
        };
        (last, 0, 0)
    } else {
        let newest = by_tag(w, newest_tag).ok_or(ChunkError::Changed)?;
        let gi = by_tag(w, gen_tag)
            .filter(|&g| g <= newest)
            .ok_or(ChunkError::Changed)?;
        let offset = pos.checked_sub(1).ok_or(ChunkError::Changed)?;
        let bytes = w.gens[gi].1.bit_array_bytes();
        if offset < bytes {
            (newest, gi, offset)
        } else if offset == bytes && gi < newest {
            (newest, gi + 1, 0)
        } else if offset == bytes {
            return Ok((0, &[]));
        } else {
            return Err(ChunkError::Changed);
        }
    };
    let (n, chain) = &w.gens[gi];
    let (li, off) = dump::locate(chain, offset).ok_or(ChunkError::Changed)?;
    let data = &chain.layers[li].data;
    let chunk = &data[off..data.len().min(off + dump::MAX_CHUNK_BYTES)];
    let next = encode_iter(w.gens[newest].0, *n, offset + 1 + chunk.len() as u64);
    Ok((next, chunk))
}

/// [`scan_chunk`] for a filter that does not change during the walk (the AOF rewrite walks
/// the fork's snapshot): never [`ChunkError::Changed`] there; answers `(0, [])` in its place.
pub fn chunk_at(w: &Window, iter: i64) -> (i64, &[u8]) {
    scan_chunk(w, iter).unwrap_or((0, &[]))
}

/// Applies a LOADCHUNK data chunk sent with iterator `iter` by [`scan_chunk`]: the chunk
/// ends just before position `pos` of the iterator's generation, so it starts at
/// `pos − length`. Counters and generations are not touched. The copy's header fixed its
/// generations and layers: a chunk of any other comes from a source that changed since.
///
/// Errors, in this order: [`ChunkError::BadData`] for `iter` ≤ 0, `iter` ≥ [`ITER_LIMIT`] or
/// a position below the chunk's length; [`ChunkError::NoLink`] for a chunk starting at
/// position 0; [`ChunkError::Changed`] when the walk's newest generation is not this
/// filter's newest, the chunk's generation is not kept here, or the chunk starts past that
/// generation's layers; [`ChunkError::TooBig`] for a chunk running past its layer's end.
pub fn apply_chunk(w: &mut Window, iter: i64, data: &[u8]) -> Result<(), ChunkError> {
    if w.offset_chunks {
        return apply_offset_chunk(w, iter, data);
    }
    let (newest_tag, gen_tag, pos) = decode_iter(iter).ok_or(ChunkError::BadData)?;
    let len = data.len() as u64;
    if pos < len {
        return Err(ChunkError::BadData);
    }
    let start = pos - len;
    if start < 1 {
        return Err(ChunkError::NoLink);
    }
    if w.gens.last().map(|(n, _)| tag(*n)) != Some(newest_tag) {
        return Err(ChunkError::Changed);
    }
    let gi = by_tag(w, gen_tag).ok_or(ChunkError::Changed)?;
    let chain = &mut w.gens[gi].1;
    let (li, off) = dump::locate(chain, start - 1).ok_or(ChunkError::Changed)?;
    dump::copy_into(&mut chain.layers[li].data, off, data)
}

/// [`apply_chunk`] for a filter created from a [`HEADER_VERSION_OFFSETS`] header: `iter` is
/// 1 + the byte offset just past the chunk in all generations' arrays together, oldest first
/// (as a plain filter's iterators address its layers).
///
/// Errors: [`ChunkError::BadData`] for `iter` ≤ 0 or below the chunk's length;
/// [`ChunkError::NoLink`] for a start outside every array; [`ChunkError::TooBig`] for a chunk
/// running past its array's end.
fn apply_offset_chunk(w: &mut Window, iter: i64, data: &[u8]) -> Result<(), ChunkError> {
    let mut offset = dump::chunk_offset(iter, data.len())?;
    let layer = w
        .gens
        .iter_mut()
        .flat_map(|(_, c)| c.layers.iter_mut())
        .find_map(|l| {
            let n = l.data.len() as u64;
            if offset < n {
                Some(l)
            } else {
                offset -= n;
                None
            }
        })
        .ok_or(ChunkError::NoLink)?;
    dump::copy_into(&mut layer.data, offset as usize, data)
}

/// Writes the RDB value (encoding version [`ENCODING_VERSION`]): U window, U capacity,
/// D error, U expansion, U non-scaling (0/1), U generation, U generation count, then per
/// generation, oldest first: U number and the chain in the plain filter's RDB layout.
pub fn save(w: &Window, out: &mut impl ValueWriter) {
    out.write_unsigned(w.window_ms);
    out.write_unsigned(w.capacity);
    out.write_double(w.error);
    out.write_unsigned(u64::from(w.expansion));
    out.write_unsigned(u64::from(w.nonscaling));
    out.write_unsigned(w.generation);
    out.write_unsigned(w.gens.len() as u64);
    for (n, c) in &w.gens {
        out.write_unsigned(*n);
        rdb::save(c, out);
    }
}

/// Reads an RDB value written by [`save`]. The generation count is checked (≤ [`LIVE`])
/// before any generation is read, each chain gets every check of [`rdb::load`], and the whole
/// window the checks of a decoded header.
///
/// Errors: [`DecodeError`] for another encoding version, fields out of range or any read
/// error.
pub fn load(r: &mut impl ValueReader, encver: i32) -> Result<Window, DecodeError> {
    if encver != ENCODING_VERSION {
        return Err(DecodeError);
    }
    let window_ms = r.read_unsigned()?;
    let capacity = r.read_unsigned()?;
    let error = r.read_double()?;
    let expansion = u32::try_from(r.read_unsigned()?).map_err(|_| DecodeError)?;
    let nonscaling = match r.read_unsigned()? {
        0 => false,
        1 => true,
        _ => return Err(DecodeError),
    };
    let generation = r.read_unsigned()?;
    let count = r.read_unsigned()?;
    if count > LIVE {
        return Err(DecodeError);
    }
    // `Window::new` refuses only what `is_consistent` refuses too.
    let mut w = Window::new(
        window_ms, capacity, error, expansion, nonscaling, generation,
    )
    .map_err(|_| DecodeError)?;
    if !w.is_consistent() {
        return Err(DecodeError);
    }
    for _ in 0..count {
        let n = r.read_unsigned()?;
        let c = rdb::load(r, rdb::ENCODING_VERSION)?;
        w.gens.push((n, c));
    }
    if !w.is_consistent() {
        return Err(DecodeError);
    }
    Ok(w)
}

/// Steady-state bit-array bytes of the three ways to remember `capacity` items per window at
/// `error`: (this window filter: 5 generations' first layers, a plain non-scaling filter of
/// the same capacity and rate, the two-keys pattern: 2 filters at `error / 2`).
///
/// Errors: [`LayerError::Invalid`] for parameters that size no layer.
pub fn memory_comparison(capacity: u64, error: f64) -> Result<(u64, u64, u64), LayerError> {
    let w = Window::new(1000, capacity, error, 2, false, 0)?;
    let plain = LayerParams::for_capacity(capacity, error, OPT_NOROUND | OPT_FORCE64)?;
    let half = LayerParams::for_capacity(capacity, error / 2.0, OPT_NOROUND | OPT_FORCE64)?;
    Ok((
        LIVE * w.generation_params()?.bytes,
        plain.bytes,
        2 * half.bytes,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rdb::Values;

    fn add(w: &mut Window, item: &[u8], g: u64) -> Result<WindowAdd, AddError> {
        w.add_hashed(&Window::hash(item), g, |_| u64::MAX)
    }

    fn has(w: &Window, item: &[u8], g: u64) -> bool {
        w.contains_at(&Window::hash(item), g)
    }

    #[test]
    fn generations_from_time() {
        assert_eq!(generation_at(0, 1000), 0);
        assert_eq!(generation_at(249, 1000), 0);
        assert_eq!(generation_at(250, 1000), 1);
        assert_eq!(generation_at(1_000, 1000), 4);
        assert_eq!(generation_at(u64::MAX, 1), u64::MAX);
        // 86 400 000 ms: a generation is 6 hours.
        assert_eq!(generation_at(6 * 3_600_000 - 1, 86_400_000), 0);
        assert_eq!(generation_at(6 * 3_600_000, 86_400_000), 1);
    }

    #[test]
    fn small_generations_get_the_minimum_bit_array() {
        // 1000 items per window at 0.001: a quarter is 250 items (4 544 bits by the formula).
        let w = Window::new(1000, 1000, 0.001, 2, false, 0).unwrap();
        let p = w.generation_params().unwrap();
        assert_eq!((p.entries, p.hashes, p.bits), (250, 13, 64_000));
        assert!(p.is_consistent());
        // Large windows keep the formula's size.
        let big = Window::new(1000, 864_000_000, 0.001, 2, false, 0).unwrap();
        let f = LayerParams::for_capacity(216_000_000, 0.001 / 6.0, big.chain_options()).unwrap();
        assert_eq!(big.generation_params().unwrap(), f);
        assert_eq!(min_generation_bits(0.01), 6_400);
        assert_eq!(min_generation_bits(1e-300), MIN_BITS_CAP);
    }

    /// A small window at its capacity (five full quarters of 250 items) answers at most its
    /// error rate for 400 000 never-added items. With the formula's 4 544-bit layers it
    /// answered 0.0013 (the `b ≡ 0 mod m` excess, see `min_generation_bits`).
    #[test]
    fn small_window_at_capacity_stays_within_its_error_rate() {
        let mut w = Window::new(1000, 1000, 0.001, 2, false, 0).unwrap();
        for g in 0..5u64 {
            for i in 0..250 {
                add(&mut w, format!("item:{g}:{i}").as_bytes(), g).unwrap();
            }
        }
        assert_eq!(w.items_at(4), 1250);
        let probes = 400_000;
        let fp = (0..probes)
            .filter(|i| has(&w, format!("probe:{i}").as_bytes(), 4))
            .count();
        let rate = fp as f64 / probes as f64;
        assert!(rate <= 0.001, "false-positive rate {rate}");
    }

    /// A burst (40 times a quarter's capacity in one generation) grows layers that all have
    /// the minimum bit count, so the rate stays within the error even then. With the plain
    /// growth rule the layers were 448 and 896 bits and the rate 0.0136.
    #[test]
    fn burst_growth_layers_get_the_minimum_bit_array() {
        let mut w = Window::new(1000, 40, 0.001, 2, false, 0).unwrap();
        for i in 0..400 {
            add(&mut w, format!("burst:{i}").as_bytes(), 0).unwrap();
        }
        let chain = &w.gens[0].1;
        assert!(chain.layers.len() > 3, "{} layers", chain.layers.len());
        assert!(chain.layers.iter().all(|l| l.params().bits >= 64_000));
        let probes = 200_000;
        let fp = (0..probes)
            .filter(|i| has(&w, format!("probe:{i}").as_bytes(), 0))
            .count();
        assert!(fp as f64 / probes as f64 <= 0.001, "{fp} false positives");
    }

    #[test]
    fn kept_for_a_window_forgotten_by_five_quarters() {
        let mut w = Window::new(1000, 100, 0.01, 2, false, 0).unwrap();
        assert_eq!(add(&mut w, b"a", 0), Ok(WindowAdd::New));
        assert_eq!(add(&mut w, b"a", 0), Ok(WindowAdd::Present));
        for g in 0..=4 {
            assert!(has(&w, b"a", g), "generation {g}");
        }
        assert!(!has(&w, b"a", 5));
        // Reads do not change the filter; a write advances it and frees the old generation.
        assert_eq!(w.gens.len(), 1);
        assert_eq!(add(&mut w, b"b", 5), Ok(WindowAdd::New));
        assert_eq!(w.gens.len(), 1);
        assert_eq!(w.gens[0].0, 5);
        assert_eq!(add(&mut w, b"a", 5), Ok(WindowAdd::New));
    }

    #[test]
    fn re_add_refreshes() {
        let mut w = Window::new(1000, 100, 0.01, 2, false, 10).unwrap();
        assert_eq!(add(&mut w, b"x", 10), Ok(WindowAdd::New));
        assert_eq!(add(&mut w, b"x", 13), Ok(WindowAdd::Refreshed));
        assert_eq!(add(&mut w, b"x", 13), Ok(WindowAdd::Present));
        assert!(has(&w, b"x", 17));
        assert!(!has(&w, b"x", 18));
        assert_eq!(w.items_at(13), 2);
        assert_eq!(w.items_at(15), 1);
        // An older generation number is the filter's own.
        assert_eq!(add(&mut w, b"y", 2), Ok(WindowAdd::New));
        assert_eq!(w.generation, 13);
        assert_eq!(w.gens.last().unwrap().0, 13);
    }

    #[test]
    fn nonscaling_generation_fills_up_and_leaves_no_empty_generation() {
        let mut w = Window::new(1000, 8, 0.01, 2, true, 0).unwrap();
        for i in 0..2u8 {
            assert_eq!(add(&mut w, &[i], 0), Ok(WindowAdd::New));
        }
        assert_eq!(add(&mut w, b"z", 0), Err(AddError::Full));
        assert_eq!(add(&mut w, b"z", 1), Ok(WindowAdd::New));
        let before = w.clone();
        assert_eq!(
            w.add_hashed(&Window::hash(b"q"), 2, |_| 0),
            Err(AddError::CannotGrow)
        );
        assert_eq!(w.gens, before.gens);
        assert_eq!(w.generation, 2);
    }

    #[test]
    fn no_false_negatives_and_rate_across_advances() {
        // 4 000 items per window, 1 000 per generation, 20 generations.
        let mut w = Window::new(1000, 4000, 0.01, 2, false, 0).unwrap();
        let mut fp = 0;
        let mut probes = 0;
        for g in 0..20u64 {
            for i in 0..1000u64 {
                let item = (g * 1000 + i).to_le_bytes();
                // New, or Present on a false positive.
                assert!(add(&mut w, &item, g).is_ok());
            }
            // Everything added in the last 4 generations (one window) is present.
            for back in g.saturating_sub(4)..=g {
                for i in 0..1000u64 {
                    assert!(has(&w, &(back * 1000 + i).to_le_bytes(), g));
                }
            }
            if g >= 4 {
                for i in 0..20_000u64 {
                    probes += 1;
                    if has(&w, &(u64::MAX - i - g * 20_000).to_le_bytes(), g) {
                        fp += 1;
                    }
                }
            }
            assert_eq!(w.layer_count(), (g + 1).min(5));
        }
        let rate = fp as f64 / probes as f64;
        assert!(rate <= 0.01, "false-positive rate {rate}");
        assert!(rate > 0.001, "suspiciously low rate {rate}");
    }

    #[test]
    fn memory_against_plain_and_two_keys() {
        for (error, max_ratio) in [(0.01, 1.75), (0.001, 1.58), (0.0001, 1.5)] {
            let (window, plain, two) = memory_comparison(1_000_000, error).unwrap();
            let ratio = window as f64 / plain as f64;
            assert!(ratio <= max_ratio && ratio <= 1.8, "{error}: {ratio}");
            assert!(window < two, "{error}: {window} vs {two}");
        }
        // Day window for 864 million ids at 0.1 %.
        let (window, plain, two) = memory_comparison(864_000_000, 0.001).unwrap();
        assert_eq!(plain, 1_552_779_464);
        assert_eq!((window, two), (2_444_431_520, 3_417_181_056));
    }

    fn sample() -> Window {
        let mut w = Window::new(1000, 40, 0.01, 3, false, 7).unwrap();
        for g in 7..12 {
            for i in 0..(g * 5) {
                add(&mut w, format!("{g}-{i}").as_bytes(), g).unwrap();
            }
        }
        w
    }

    fn dump_and_load(w: &Window) -> Window {
        let mut restored = decode_header(&encode_header(w), u64::MAX).unwrap();
        let mut it = 1;
        loop {
            let (next, chunk) = chunk_at(w, it);
            if next == 0 {
                break;
            }
            apply_chunk(&mut restored, next, chunk).unwrap();
            it = next;
        }
        restored
    }

    /// A dump as older builds wrote it: the version 1 header and chunks addressed by offset
    /// into all generations' arrays together, each at most 5 bytes here (so that chunks cross
    /// layer and generation boundaries nowhere but at their ends).
    fn offset_dump(w: &Window) -> (Vec<u8>, Vec<(i64, Vec<u8>)>) {
        let mut header = encode_header(w);
        header[12..16].copy_from_slice(&HEADER_VERSION_OFFSETS.to_le_bytes());
        let mut chunks = Vec::new();
        let mut at = 0i64;
        for l in w.layers() {
            for piece in l.data.chunks(5) {
                at += piece.len() as i64;
                chunks.push((at + 1, piece.to_vec()));
            }
        }
        (header, chunks)
    }

    #[test]
    fn decoded_headers_are_admitted_against_every_generation() {
        // No generation yet: nothing announced, but five first layers to come.
        let w = Window::new(600_000, 4_000_000, 0.01, 2, false, 3).unwrap();
        let full = w.bytes_at_capacity().unwrap();
        assert_eq!(full, 5 * w.generation_params().unwrap().bytes);
        let h = encode_header(&w);
        assert_eq!(decode_header(&h, full - 1), Err(ChunkError::OutOfMemory));
        assert!(decode_header(&h, full).is_ok());
        assert_eq!(header_window_and_generation(&h), Some((600_000, 3)));
        assert_eq!(header_window_and_generation(&h[..63]), None);
    }

    #[test]
    fn version_1_dumps_load_with_offset_chunks() {
        let w = sample();
        let (header, chunks) = offset_dump(&w);
        let mut restored = decode_header(&header, u64::MAX).unwrap();
        assert!(restored.offset_chunks);
        // Applied in reverse, so that order is not what makes it right.
        for (iter, data) in chunks.iter().rev() {
            apply_chunk(&mut restored, *iter, data).unwrap();
        }
        restored.offset_chunks = false;
        assert_eq!(restored, w);
        // Its offsets are checked as a plain filter's.
        let total: i64 = w.layers().map(|l| l.data.len() as i64).sum();
        let mut r = decode_header(&header, u64::MAX).unwrap();
        for (iter, data, e) in [
            (0, &b"x"[..], ChunkError::BadData),
            (1, &b"xy"[..], ChunkError::BadData),
            (1, &b"x"[..], ChunkError::NoLink),
            (total + 2, &b"x"[..], ChunkError::NoLink),
            (total + 2, &b"xy"[..], ChunkError::TooBig),
        ] {
            assert_eq!(apply_chunk(&mut r, iter, data), Err(e), "{iter}");
        }
        // A filter from a version 2 header never takes offset chunks.
        assert!(
            !decode_header(&encode_header(&w), u64::MAX)
                .unwrap()
                .offset_chunks
        );
    }

    #[test]
    fn header_round_trip() {
        let w = sample();
        assert_eq!(w.gens.len(), 5);
        assert!(w.gens.iter().any(|(_, c)| c.layers.len() > 1));
        assert_eq!(dump_and_load(&w), w);
        let empty = Window::new(5, 1, 0.5, 1, true, 0).unwrap();
        assert_eq!(dump_and_load(&empty), empty);
    }

    #[test]
    fn header_refused_as_a_plain_filter_and_checked() {
        let w = sample();
        let h = encode_header(&w);
        assert_eq!(
            dump::decode_header(&h, u64::MAX),
            Err(ChunkError::BadData),
            "a plain-filter reader must refuse it"
        );
        assert!(is_window_header(&h));
        assert_eq!(
            decode_header(&h[..h.len() - 1], u64::MAX),
            Err(ChunkError::BadData)
        );
        let mut longer = h.clone();
        longer.push(0);
        assert_eq!(decode_header(&longer, u64::MAX), Err(ChunkError::BadData));
        // A well-formed header over the budget: out of memory, as a plain header.
        assert_eq!(
            decode_header(&h, w.bit_array_bytes() - 1),
            Err(ChunkError::OutOfMemory)
        );
        assert!(decode_header(&h, w.bit_array_bytes()).is_ok());
        // Flip every byte of the fixed part: each is either refused or still consistent.
        for i in 0..HEADER_FIXED_BYTES {
            let mut bad = h.clone();
            bad[i] ^= 0x80;
            if let Ok(d) = decode_header(&bad, u64::MAX) {
                assert!(d.is_consistent(), "byte {i}");
            }
        }
        // Version (1 is read: `version_1_dumps_load_with_offset_chunks`), flags, count,
        // generation out of range.
        for (at, v) in [(12usize, 0u8), (12, 3), (44, 2), (56, 6), (60, 1)] {
            let mut bad = h.clone();
            bad[at] = v;
            assert_eq!(
                decode_header(&bad, u64::MAX),
                Err(ChunkError::BadData),
                "{at}"
            );
        }
        let mut bad = h.clone();
        bad[48..56].copy_from_slice(&100u64.to_le_bytes());
        assert_eq!(decode_header(&bad, u64::MAX), Err(ChunkError::BadData));
    }

    #[test]
    fn rdb_round_trip_and_rejections() {
        let w = sample();
        let v = Values::saved(|v| save(&w, v));
        let mut r = v.clone();
        assert_eq!(load(&mut r, ENCODING_VERSION).unwrap(), w);
        assert_eq!(load(&mut v.clone(), 2), Err(DecodeError));
        // Truncations anywhere fail.
        for cut in 0..v.values.len() {
            let mut t = Values {
                values: v.values[..cut].to_vec(),
                pos: 0,
            };
            assert_eq!(
                load(&mut t, ENCODING_VERSION),
                Err(DecodeError),
                "cut {cut}"
            );
        }
        // Count over LIVE, a non-scaling flag of 2, a generation out of order.
        for (at, value) in [(6usize, 6u64), (4, 2)] {
            let mut bad = v.clone();
            bad.values[at] = crate::rdb::Value::Unsigned(value);
            assert_eq!(load(&mut bad, ENCODING_VERSION), Err(DecodeError));
        }
        let mut bad = v.clone();
        bad.values[7] = crate::rdb::Value::Unsigned(11);
        assert_eq!(load(&mut bad, ENCODING_VERSION), Err(DecodeError));
    }

    #[test]
    fn generations_and_windows_past_i64_are_refused() {
        // A filter at generation 2^63 (or with a window of 2^63 ms) could not replicate its
        // writes (GENERATION and WINDOW are signed 64-bit arguments): dumps of it are refused.
        for (window_ms, g, ok) in [
            (1000, MAX_REPLICATED, true),
            (1000, MAX_REPLICATED + 1, false),
            (MAX_REPLICATED, 7, true),
            (MAX_REPLICATED + 1, 7, false),
        ] {
            let mut w = Window::new(window_ms, 40, 0.01, 2, false, g).unwrap();
            add(&mut w, b"item", g).unwrap();
            let header = encode_header(&w);
            assert_eq!(
                decode_header(&header, u64::MAX).is_ok(),
                ok,
                "{window_ms} {g}"
            );
            let mut v = Values::saved(|v| save(&w, v));
            assert_eq!(
                load(&mut v, ENCODING_VERSION).is_ok(),
                ok,
                "{window_ms} {g}"
            );
        }
    }

    #[test]
    fn chunk_addressing() {
        let mut w = sample();
        let (n0, n4) = (w.gens[0].0, w.gens[4].0);
        let first = w.gens[0].1.layers[0].data.len() as u64;
        // Step 1 starts at the oldest generation; its iterator names it and the newest.
        let (next, chunk) = scan_chunk(&w, 1).unwrap();
        assert_eq!(chunk, &w.gens[0].1.layers[0].data[..]);
        assert_eq!(next, encode_iter(n4, n0, first + 1));
        assert_eq!(decode_iter(next), Some((tag(n4), tag(n0), first + 1)));
        assert!(next > 0 && next < ITER_LIMIT);
        // Past the end, negative, or above the limit: the end of the walk.
        for it in [-1, ITER_LIMIT, i64::MAX] {
            assert_eq!(scan_chunk(&w, it), Ok((0, &[][..])), "{it}");
        }
        // A generation that is not kept, or a position past a generation's end.
        let gone = encode_iter(n4, n0 + 5, 9);
        assert_eq!(scan_chunk(&w, gone), Err(ChunkError::Changed));
        let bytes0 = w.gens[0].1.bit_array_bytes();
        let past = encode_iter(n4, n0, bytes0 + 2);
        assert_eq!(scan_chunk(&w, past), Err(ChunkError::Changed));
        assert_eq!(chunk_at(&w, past), (0, &[][..]));
        // Its end goes on with the next generation.
        let (_, c) = scan_chunk(&w, encode_iter(n4, n0, bytes0 + 1)).unwrap();
        assert_eq!(c, &w.gens[1].1.layers[0].data[..]);

        // LOADCHUNK addressing.
        assert_eq!(apply_chunk(&mut w, 0, b""), Err(ChunkError::BadData));
        assert_eq!(apply_chunk(&mut w, -5, b"a"), Err(ChunkError::BadData));
        assert_eq!(
            apply_chunk(&mut w, ITER_LIMIT, b"a"),
            Err(ChunkError::BadData)
        );
        assert_eq!(
            apply_chunk(&mut w, encode_iter(n4, n0, 1), b"ab"),
            Err(ChunkError::BadData)
        );
        assert_eq!(
            apply_chunk(&mut w, encode_iter(n4, n0, 2), b"ab"),
            Err(ChunkError::NoLink)
        );
        assert_eq!(apply_chunk(&mut w, 3, b"abc"), Err(ChunkError::NoLink));
        // Chunk running past its layer.
        assert_eq!(
            apply_chunk(&mut w, encode_iter(n4, n0, first + 2), b"ab"),
            Err(ChunkError::TooBig)
        );
        // Another walk's newest generation, a generation or a layer this copy lacks.
        let before = w.clone();
        for it in [
            encode_iter(n4 + 1, n0, 3),
            encode_iter(n4, n4 + 1, 3),
            encode_iter(n4, n0, bytes0 + 3),
        ] {
            assert_eq!(apply_chunk(&mut w, it, b"ab"), Err(ChunkError::Changed));
        }
        assert_eq!(w, before, "refused chunks change nothing");
        assert_eq!(apply_chunk(&mut w, encode_iter(n4, n0, 3), b"ab"), Ok(()));
        assert_eq!(&w.gens[0].1.layers[0].data[..2], b"ab");
        let n2 = w.gens[2].0;
        assert_eq!(apply_chunk(&mut w, encode_iter(n4, n2, 6), b"xyz"), Ok(()));
        assert_eq!(&w.gens[2].1.layers[0].data[2..5], b"xyz");
        // An empty window: its walk is the header alone; any chunk is refused as changed.
        let mut empty = Window::new(1000, 40, 0.01, 2, false, 3).unwrap();
        assert_eq!(scan_chunk(&empty, 1), Ok((0, &[][..])));
        assert_eq!(
            apply_chunk(&mut empty, encode_iter(3, 3, 3), b"ab"),
            Err(ChunkError::Changed)
        );
    }

    /// Why a walk failed: the source (SCANDUMP) or the copy (LOADCHUNK) refused a step.
    #[derive(Debug, PartialEq)]
    enum WalkEnd {
        Source,
        Copy,
    }

    /// A SCANDUMP walk of `src` into a copy made from its header, with `between(step, src)`
    /// run after every chunk step: the copy, or which side answered `Changed`. Any other
    /// refusal is a bug.
    fn walk(
        src: &mut Window,
        mut between: impl FnMut(usize, &mut Window),
    ) -> Result<Window, WalkEnd> {
        let mut copy = decode_header(&encode_header(src), u64::MAX).unwrap();
        let mut it = 1;
        for step in 0.. {
            assert!(step < 10_000, "endless walk");
            let (next, chunk) = match scan_chunk(src, it) {
                Ok((0, _)) => return Ok(copy),
                Ok(c) => c,
                Err(ChunkError::Changed) => return Err(WalkEnd::Source),
                Err(e) => panic!("SCANDUMP {it}: {e:?}"),
            };
            assert!(next > 0 && next < ITER_LIMIT);
            match apply_chunk(&mut copy, next, chunk) {
                Ok(()) => {}
                Err(ChunkError::Changed) => return Err(WalkEnd::Copy),
                Err(e) => panic!("LOADCHUNK {next}: {e:?}"),
            }
            it = next;
            between(step, src);
        }
        unreachable!()
    }

    /// The copy of a completed walk, against the source at the header (`before`) and at the
    /// end (`src`): every generation's bits are the header's at least and the end's at most
    /// (so each chunk was filed under its own generation), and every item held at the
    /// header and still held at the end is held by the copy.
    fn check_copy(before: &Window, src: &Window, copy: &Window, items: &[Vec<u8>]) {
        let now = src.generation;
        for (n, c) in &copy.gens {
            let b = before.gens.iter().find(|(m, _)| m == n).map(|(_, c)| c);
            let s = src.gens.iter().find(|(m, _)| m == n).map(|(_, c)| c);
            for (li, l) in c.layers.iter().enumerate() {
                if let Some(b) = b {
                    let bl = &b.layers[li].data;
                    assert!(
                        bl.iter().zip(l.data.iter()).all(|(x, y)| x & !y == 0),
                        "generation {n} layer {li} lost bits of the header's state"
                    );
                }
                // A generation still kept at the source (and not re-used past 256).
                if let Some(s) = s.filter(|_| *n + SLICES >= now) {
                    let sl = &s.layers[li].data;
                    assert!(
                        sl.iter().zip(l.data.iter()).all(|(x, y)| y & !x == 0),
                        "generation {n} layer {li} has bits the source does not"
                    );
                }
            }
        }
        for item in items {
            let h = Window::hash(item);
            if before.contains_at(&h, now) && src.contains_at(&h, now) {
                assert!(copy.contains_at(&h, now), "{:?} lost", item);
            }
        }
    }

    /// Five full generations of a single layer each, equal sizes (the worst case for a walk
    /// addressed by offset), and the items added to them.
    fn ring() -> (Window, Vec<Vec<u8>>) {
        let mut items = Vec::new();
        let mut w = Window::new(1000, 40, 0.01, 2, false, 20).unwrap();
        for g in 20..25u64 {
            for i in 0..10 {
                let item = format!("ring:{g}:{i}").into_bytes();
                add(&mut w, &item, g).unwrap();
                items.push(item);
            }
        }
        assert!(w.gens.iter().all(|(_, c)| c.layers.len() == 1));
        (w, items)
    }

    #[test]
    fn walk_survives_a_drop_behind_it_and_a_new_generation() {
        let (mut src, items) = ring();
        let before = src.clone();
        let copy = walk(&mut src, |step, w| {
            // After the walk left generation 20: 20 dropped, 25 and 26 created.
            if step == 1 || step == 2 {
                let g = w.generation + 1;
                for i in 0..10 {
                    add(w, format!("later:{g}:{i}").as_bytes(), g).unwrap();
                }
            }
        })
        .expect("a consistent copy");
        assert_eq!(src.gens[0].0, 22);
        check_copy(&before, &src, &copy, &items);
        // The copy holds exactly the header's generations, with their bits.
        for (c, b) in copy.gens.iter().zip(&before.gens) {
            assert_eq!(c, b);
        }
        // Items of generations 22–24, held by both at 26.
        for g in 22..25 {
            for i in 0..10 {
                assert!(has(&copy, format!("ring:{g}:{i}").as_bytes(), 26));
            }
        }
    }

    #[test]
    fn walk_refused_when_its_generation_is_dropped() {
        let (mut src, _) = ring();
        let r = walk(&mut src, |step, w| {
            if step == 0 {
                add(w, b"next", 25).unwrap();
            }
        });
        assert_eq!(r.unwrap_err(), WalkEnd::Source);
        // Started again, it completes.
        let before = src.clone();
        let copy = walk(&mut src, |_, _| {}).unwrap();
        assert_eq!(copy, before);
    }

    #[test]
    fn walk_refused_by_the_copy_for_a_growth_layer_or_a_new_generation() {
        let (mut src, _) = ring();
        // A burst grows the newest generation while the walk is in the oldest.
        let r = walk(&mut src, |step, w| {
            if step == 0 {
                for i in 0..40 {
                    add(w, format!("burst:{i}").as_bytes(), 24).unwrap();
                }
            }
        });
        assert!(src.gens[4].1.layers.len() > 1);
        assert_eq!(r.unwrap_err(), WalkEnd::Copy);
        // A generation created between the header and the first chunk step.
        let mut copy = decode_header(&encode_header(&src), u64::MAX).unwrap();
        add(&mut src, b"new", 25).unwrap();
        let (next, chunk) = scan_chunk(&src, 1).unwrap();
        assert_eq!(
            apply_chunk(&mut copy, next, chunk),
            Err(ChunkError::Changed)
        );
    }

    /// Random walks interleaved with adds, bursts, advances of one to three generations and
    /// rare jumps past 256: every walk either gives a copy filed by generation with every
    /// item it must hold, or is refused; started again without writes, it always completes.
    #[test]
    fn walks_interleaved_with_writes_never_lose_an_item() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move |n: u64| {
            seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (seed >> 33) % n
        };
        let (mut completed_across_changes, mut refused) = (0, 0);
        for round in 0..300u64 {
            let mut w = Window::new(1000, 40, 0.01, 2, false, 100).unwrap();
            let mut items = Vec::new();
            let mut g = 100;
            for _ in 0..rnd(12) + 1 {
                g += rnd(2);
                for i in 0..rnd(25) + 1 {
                    let item = format!("{round}:{g}:{i}:{}", rnd(1000)).into_bytes();
                    add(&mut w, &item, g).unwrap();
                    items.push(item);
                }
            }
            let before = w.clone();
            let mut changed_generations = false;
            let r = walk(&mut w, |_, w| match rnd(8) {
                0 | 1 => {
                    let g = w.generation + 1 + rnd(3);
                    add(w, format!("adv:{round}:{g}").as_bytes(), g).unwrap();
                    changed_generations = true;
                }
                2 => {
                    let g = w.generation;
                    for i in 0..rnd(40) {
                        add(w, format!("burst:{round}:{g}:{i}").as_bytes(), g).unwrap();
                    }
                }
                3 if rnd(20) == 0 => {
                    let g = w.generation + 250 + rnd(12);
                    add(w, format!("jump:{round}:{g}").as_bytes(), g).unwrap();
                    changed_generations = true;
                }
                _ => {}
            });
            match r {
                Ok(copy) => {
                    check_copy(&before, &w, &copy, &items);
                    if changed_generations {
                        completed_across_changes += 1;
                    }
                }
                Err(_) => {
                    refused += 1;
                    let still = w.clone();
                    assert_eq!(walk(&mut w, |_, _| {}).unwrap(), still, "round {round}");
                }
            }
        }
        assert!(
            completed_across_changes > 20 && refused > 20,
            "{completed_across_changes} completed across generation changes, {refused} refused"
        );
    }

    #[test]
    fn generations_over_the_iterator_range_are_refused() {
        // A window whose generation's first layer would exceed 64 GiB: adds refuse to make it.
        let mut w = Window::new(1000, 400_000_000_000, 0.001, 2, false, 0).unwrap();
        assert!(w.generation_params().unwrap().bytes > MAX_GENERATION_BYTES);
        assert_eq!(add(&mut w, b"a", 0), Err(AddError::CannotGrow));
        assert!(w.gens.is_empty());
        // A header announcing such a generation: refused before anything is allocated.
        let mut small = sample();
        small.gens.truncate(1);
        let mut h = encode_header(&small);
        let at = HEADER_FIXED_BYTES + 12 + dump::HEADER_FIXED_BYTES;
        let bytes = MAX_GENERATION_BYTES + 8;
        h[at..at + 8].copy_from_slice(&bytes.to_le_bytes());
        h[at + 8..at + 16].copy_from_slice(&(bytes * 8).to_le_bytes());
        assert_eq!(decode_header(&h, u64::MAX), Err(ChunkError::BadData));
        assert_eq!(decode_header(&h, bytes - 1), Err(ChunkError::OutOfMemory));
    }
}
