//! BF.* command handlers, one file per command family:
//! `reserve` (BF.RESERVE), `add` (BF.ADD, BF.MADD, BF.INSERT), `exists` (BF.EXISTS,
//! BF.MEXISTS), `info` (BF.INFO, BF.CARD, BF.DEBUG), `dump` (BF.SCANDUMP, BF.LOADCHUNK).
//! Each handler parses its arguments once, opens its key once (`filter::open` /
//! `filter::open_mut`, or `filter::with_existing` for a read of a filter that must exist), asks the filter kind (`filter::plain`, `filter::window`) what it
//! needs, then replies, replicates and notifies once.

pub mod add;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;

use crate::module::args::Arg;
use redis_module::{raw, Context, NotifyEvent};
use std::ffi::CStr;

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
