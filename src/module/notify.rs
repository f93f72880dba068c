//! Keyspace events, as every family's commands fire them.

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
