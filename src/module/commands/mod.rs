//! BF.* command handlers, one file per command family:
//! `reserve` (BF.RESERVE), `add` (BF.ADD, BF.MADD, BF.INSERT), `exists` (BF.EXISTS,
//! BF.MEXISTS), `info` (BF.INFO, BF.CARD, BF.DEBUG), `dump` (BF.SCANDUMP, BF.LOADCHUNK).
//! Handlers only parse, call the core and build a [`Reply`].

pub mod add;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;

use crate::bloom::layer::LayerError;
use crate::bloom::Chain;
use crate::module::bloom_type::store_new;
use crate::module::memory::new_array_budget;
use crate::module::reply::Reply;
use redis_module::key::RedisKeyWritable;
use redis_module::Context;

/// Creates an empty filter in `key` (opened for writing, known to be empty): a first layer of
/// `capacity` items at `error` (see [`Chain::new`]), limited by the memory budget. Shared by
/// BF.RESERVE and the implicit creation of BF.ADD / BF.MADD / BF.INSERT.
///
/// Errors: `ERR Insufficient memory to create filter` (allocation or budget),
/// `ERR could not create filter` (parameters that size no layer, or a key that refuses it).
pub(crate) fn create_filter(
    ctx: &Context,
    key: &RedisKeyWritable,
    capacity: u64,
    error: f64,
    expansion: u32,
    nonscaling: bool,
) -> Result<(), Reply> {
    let chain = Chain::new(
        capacity,
        error,
        expansion,
        nonscaling,
        new_array_budget(ctx, 0),
    )
    .map_err(|e| {
        Reply::Error(match e {
            LayerError::OutOfMemory => "ERR Insufficient memory to create filter",
            LayerError::Invalid => "ERR could not create filter",
        })
    })?;
    store_new(key, chain, "ERR could not create filter")
}
