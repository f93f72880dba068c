//! The window filter data type `bf-window` (a [`Window`] per key) and its callbacks: RDB
//! save/load, AOF rewrite, memory usage, free, free effort, copy and digest. What the
//! commands do with a window filter (the clock, generations, the `GENERATION` rewrite) is the
//! window kind's, in `filter::window`.

use crate::bloom::rdb::DecodeError;
use crate::bloom::window::{self, Window};
use crate::module::data_type::{type_methods, FilterValue, IoReader, IoWriter};
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::c_int;

impl FilterValue for Window {
    const TYPE_NAME: &'static str = "bf-window";
    fn mem_usage(&self) -> u64 {
        Window::mem_usage(self)
    }
    fn try_copy(&self) -> Option<Window> {
        try_clone(self)
    }
    fn count_created(&self) {
        count(self, 1)
    }
    fn load(io: &mut IoReader, encver: c_int) -> Result<Window, DecodeError> {
        window::load(io, encver)
    }
    fn save(&self, io: &mut IoWriter) {
        window::save(self, io)
    }
    fn rewrite(&self, aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString) {
        crate::module::bloom::bloom_type::emit_scandump_walk(
            aof,
            key,
            &window::encode_header(self),
            |i| window::chunk_at(self, i),
        )
    }
    /// The SCANDUMP header, then every generation's layers' bit arrays.
    fn digest(&self, md: *mut raw::RedisModuleDigest) {
        let arrays = self.layers().map(|l| &*l.data);
        crate::module::data_type::digest_filter(md, &window::encode_header(self), arrays)
    }
    fn free(self) {
        count(&self, -1);
        free_elsewhere(self.gens)
    }
    /// Work to free a window filter in Redis' units: as for a plain filter
    /// (`bloom_type::free_effort_of`), summed over its generations, capped at Redis' lazyfree
    /// threshold, so Redis frees it synchronously (bounded, see `free_elsewhere`).
    fn free_effort(&self) -> usize {
        use crate::module::bloom::bloom_type::free_effort_of;
        use crate::module::data_type::LAZYFREE_THRESHOLD;
        let effort = self
            .gens
            .iter()
            .map(|(_, c)| free_effort_of(c))
            .sum::<usize>();
        effort.clamp(1, LAZYFREE_THRESHOLD)
    }
}

/// The window filter type. Its own 9-character name and RDB layout: a server or module that
/// only knows `MBbloom--` refuses it instead of misreading it.
pub static WINDOW_TYPE: RedisType =
    RedisType::new("bf-window", window::ENCODING_VERSION, type_methods!(Window));

/// The window of a key opened read-only, if it holds one.
pub fn get(key: &RedisKey) -> Option<&Window> {
    key.get_value::<Window>(&WINDOW_TYPE).ok().flatten()
}

/// The window of a key opened for writing, if it holds one.
pub(crate) fn get_mut(key: &RedisKeyWritable) -> Option<&mut Window> {
    key.get_value::<Window>(&WINDOW_TYPE).ok().flatten()
}

/// What a window adds to the `INFO bf` counters: (layers, items, bytes) of every kept
/// generation (items as stored, not only those live now).
pub(crate) fn footprint(w: &Window) -> (i64, i64, i64) {
    let items = w
        .gens
        .iter()
        .map(|(_, c)| c.size)
        .fold(0u64, u64::saturating_add);
    (
        w.layer_count() as i64,
        items.min(i64::MAX as u64) as i64,
        w.bit_array_bytes().min(i64::MAX as u64) as i64,
    )
}

/// Counts a window filter in `INFO bf` (`sign` 1: created or loaded, −1: freed).
fn count(w: &Window, sign: i64) {
    let (l, i, b) = footprint(w);
    stats::add_raw(sign, sign * l, sign * i, sign * b);
}

/// Stores a window in an empty key and counts it in `INFO bf`.
pub(crate) fn store(key: &RedisKeyWritable, w: Window, failure: &'static str) -> Result<(), Reply> {
    count(&w, 1);
    key.set_value(&WINDOW_TYPE, w)
        .map_err(|_| Reply::Error(failure))
}

/// Frees generations that aged out (or all of a deleted window filter's) as a deleted filter's
/// are freed, within one budget for all of them (`alloc::free_bit_array`: big arrays' pages go
/// to the module's background thread), so the main thread spends a bounded time whatever
/// their shape.
pub(crate) fn free_elsewhere(dropped: Vec<(u64, crate::bloom::Chain)>) {
    let mut budget = crate::module::alloc::FreeBudget::new();
    for (_, chain) in dropped {
        crate::module::bloom::bloom_type::free_arrays(chain, &mut budget);
    }
}

/// A deep copy whose bit arrays are allocated fallibly.
fn try_clone(w: &Window) -> Option<Window> {
    let mut gens = Vec::new();
    gens.try_reserve_exact(w.gens.len()).ok()?;
    for (n, c) in &w.gens {
        gens.push((*n, crate::module::bloom::bloom_type::try_clone(c)?));
    }
    Some(Window {
        window_ms: w.window_ms,
        capacity: w.capacity,
        error: w.error,
        expansion: w.expansion,
        nonscaling: w.nonscaling,
        generation: w.generation,
        gens,
        offset_chunks: w.offset_chunks,
    })
}
