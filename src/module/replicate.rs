//! What every family's writes use to replicate: whether a command comes from the primary or an
//! AOF / RDB load, and replicating a command made of strings Redis already holds.

use redis_module::{raw, Context, ContextFlags};
use std::ffi::CStr;

/// True when the command runs from the primary's replication stream or an AOF / RDB load
/// rather than from a client.
pub fn from_primary_or_aof(ctx: &Context) -> bool {
    ctx.get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// Replicates `command` followed by the strings of `parts`, in order, sharing them (Redis
/// takes a reference to each, copying none).
pub(crate) fn replicate_strings(
    ctx: &Context,
    command: &CStr,
    parts: &[&[*mut raw::RedisModuleString]],
) {
    // Up to 16 strings go as that many `s` specifiers, assembled on the stack: Redis then
    // sizes its argument vector exactly, where the `v` specifier makes it grow the vector (a
    // reallocation per command).
    const FORMAT: &[u8; 17] = b"ssssssssssssssss\0";
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len <= 16 {
        let format = &FORMAT[16 - len..];
        let mut a = [std::ptr::null_mut(); 16];
        for (slot, s) in a.iter_mut().zip(parts.iter().flat_map(|p| p.iter())) {
            *slot = *s;
        }
        // SAFETY: live context; `format` is NUL-terminated and has exactly `len` `s`
        // specifiers, each matched by a live string of this command (its arguments, or
        // strings that outlive the call); Redis increments their reference counts. The
        // remaining (null) arguments are never read: C ignores variadic arguments beyond the
        // ones the format consumes.
        unsafe {
            raw::RedisModule_Replicate.unwrap()(
                ctx.get_raw(),
                command.as_ptr(),
                format.as_ptr().cast(),
                a[0],
                a[1],
                a[2],
                a[3],
                a[4],
                a[5],
                a[6],
                a[7],
                a[8],
                a[9],
                a[10],
                a[11],
                a[12],
                a[13],
                a[14],
                a[15],
            );
        }
        return;
    }
    let argv: Vec<_> = parts.concat();
    // SAFETY: live context; format "v" takes a (RedisModuleString **, size_t) pair over live
    // strings of this command, as above.
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.get_raw(),
            command.as_ptr(),
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len(),
        );
    }
}
