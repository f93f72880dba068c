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
use crate::module::args::Arg;
use crate::module::bloom_type::store_new;
use crate::module::memory::{abort_diverging, with_budget};
use crate::module::reply::Reply;
use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context, NotifyEvent};
use std::ffi::CStr;

/// Creates an empty filter in `key` (opened for writing, known to be empty): a first layer of
/// `capacity` items at `error` (see [`Chain::new`]), limited by the memory budget. Shared by
/// BF.RESERVE and the implicit creation of BF.MADD / BF.INSERT (`command` names the caller for
/// the log). A replicated or loaded creation that cannot be allocated aborts the server (see
/// [`abort_diverging`]).
///
/// Errors: `ERR Insufficient memory to create filter` (allocation or budget),
/// `ERR could not create filter` (parameters that size no layer, or a key that refuses it).
pub(crate) fn create_filter(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &[u8],
    command: &str,
    params: (u64, f64, u32, bool),
) -> Result<(), Reply> {
    let chain = new_filter(ctx, key_name, command, params)?;
    store_new(key, chain, "ERR could not create filter")
}

/// The filter [`create_filter`] stores, not stored yet (BF.ADD adds its item first), with the
/// same budget, abort and errors.
pub(crate) fn new_filter(
    ctx: &Context,
    key_name: &[u8],
    command: &str,
    params: (u64, f64, u32, bool),
) -> Result<Chain, Reply> {
    let (capacity, error, expansion, nonscaling) = params;
    with_budget(
        ctx,
        0,
        |e| *e == LayerError::OutOfMemory,
        |budget| Chain::new(capacity, error, expansion, nonscaling, budget),
    )
    .map_err(|e| {
        Reply::Error(match e {
            LayerError::OutOfMemory => {
                abort_diverging(ctx, command, key_name, first_layer_bytes(params));
                "ERR Insufficient memory to create filter"
            }
            LayerError::Invalid => "ERR could not create filter",
        })
    })
}

/// Fires a module keyspace event without building a string (the crate's
/// `notify_keyspace_event` allocates a C string per call).
pub(crate) fn notify(ctx: &Context, event: &CStr, key: &Arg) {
    // SAFETY: live context of the running command; `event` is NUL-terminated and `key.inner`
    // is a valid string, both outliving the call (Redis copies what it keeps).
    unsafe {
        if let Some(f) = raw::RedisModule_NotifyKeyspaceEvent {
            f(
                ctx.get_raw(),
                NotifyEvent::MODULE.bits(),
                event.as_ptr(),
                key.inner,
            );
        }
    }
}

/// Bytes of the first layer `create_filter` would allocate (for the log only; 0 if unknown).
fn first_layer_bytes((capacity, error, _, nonscaling): (u64, f64, u32, bool)) -> u64 {
    use crate::bloom::layer::{LayerParams, OPT_FORCE64, OPT_NOROUND};
    let error = if nonscaling {
        error
    } else {
        error * crate::bloom::chain::TIGHTENING_RATIO
    };
    LayerParams::for_capacity(capacity, error, OPT_NOROUND | OPT_FORCE64).map_or(0, |p| p.bytes)
}
