//! Replies, built as a value and written with the module API. Unlike the crate's
//! `RedisValue`, this keeps map order (BF.INFO), writes error texts verbatim (RedisBloom's
//! texts without `ERR` stay without it) and uses RESP3 booleans that Redis turns into
//! integers for RESP2 clients.

use redis_module::{raw, Context};
use std::ffi::CString;
use std::os::raw::{c_char, c_long};

/// One reply value.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// Integer (`:n`).
    Int(i64),
    /// RESP3 boolean (`#t`/`#f`); `:1`/`:0` for RESP2 clients.
    Bool(bool),
    /// `+OK`, written without building a C string.
    Ok,
    /// Simple string (`+text`).
    Simple(&'static str),
    /// Bulk string.
    Bulk(Vec<u8>),
    /// Null (`$-1` in RESP2, `_` in RESP3).
    Null,
    /// Double (RESP3 `,`; a bulk string of its text for RESP2 clients).
    Double(f64),
    /// Error; the text goes on the wire verbatim after `-` (include `ERR ` where wanted).
    Error(&'static str),
    /// `ERR wrong number of arguments for '<command>' command`.
    WrongArity,
    /// Array.
    Array(Vec<Reply>),
    /// Map with keys in the given order (a flat array of pairs for RESP2 clients).
    Map(Vec<(&'static str, Reply)>),
    /// Nothing more to send: the handler already replied.
    Sent,
}

/// `WRONGTYPE Operation against a key holding the wrong kind of value`.
pub const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
/// `ERR not found`.
pub const NOT_FOUND: &str = "ERR not found";

/// Writes `reply` to the client of `ctx`.
pub fn send(ctx: &Context, reply: &Reply) {
    let c = ctx.get_raw();
    // SAFETY: `c` is the live context of the running command; every API function used here
    // exists since Redis 7.0 (the minimum this module supports), and every pointer passed
    // points into a buffer that outlives the call.
    unsafe {
        match reply {
            Reply::Int(v) => {
                raw::RedisModule_ReplyWithLongLong.unwrap()(c, *v);
            }
            Reply::Bool(b) => {
                raw::RedisModule_ReplyWithBool.unwrap()(c, i32::from(*b));
            }
            Reply::Ok => {
                raw::RedisModule_ReplyWithSimpleString.unwrap()(c, c"OK".as_ptr());
            }
            Reply::Simple(s) => {
                let s = CString::new(*s).unwrap_or_default();
                raw::RedisModule_ReplyWithSimpleString.unwrap()(c, s.as_ptr());
            }
            Reply::Bulk(b) => send_bulk(ctx, b),
            Reply::Null => {
                raw::RedisModule_ReplyWithNull.unwrap()(c);
            }
            Reply::Double(d) => {
                raw::RedisModule_ReplyWithDouble.unwrap()(c, *d);
            }
            Reply::Error(s) => {
                let s = CString::new(*s).unwrap_or_default();
                raw::RedisModule_ReplyWithError.unwrap()(c, s.as_ptr());
            }
            Reply::WrongArity => {
                raw::RedisModule_WrongArity.unwrap()(c);
            }
            Reply::Array(items) => {
                raw::RedisModule_ReplyWithArray.unwrap()(c, items.len() as c_long);
                for i in items {
                    send(ctx, i);
                }
            }
            Reply::Map(pairs) => {
                raw::RedisModule_ReplyWithMap.unwrap()(c, pairs.len() as c_long);
                for (k, v) in pairs {
                    send(ctx, &Reply::Simple(k));
                    send(ctx, v);
                }
            }
            Reply::Sent => {}
        }
    }
}

/// Writes a boolean (`Reply::Bool`) without building a reply value: the per-item call of
/// the batch commands.
#[inline]
pub fn send_bool(ctx: &Context, b: bool) {
    // SAFETY: live context of the running command.
    unsafe {
        raw::RedisModule_ReplyWithBool.unwrap()(ctx.get_raw(), i32::from(b));
    }
}

/// Writes a bulk string straight from a borrowed buffer (no copy).
pub fn send_bulk(ctx: &Context, data: &[u8]) {
    // SAFETY: `data` outlives the call; Redis copies it into the reply buffer.
    unsafe {
        raw::RedisModule_ReplyWithStringBuffer.unwrap()(
            ctx.get_raw(),
            data.as_ptr().cast::<c_char>(),
            data.len(),
        );
    }
}

/// Starts an array reply of `len` elements, to be followed by that many `send` calls.
pub fn send_array_header(ctx: &Context, len: usize) {
    // SAFETY: live context; the caller sends exactly `len` elements next.
    unsafe {
        raw::RedisModule_ReplyWithArray.unwrap()(ctx.get_raw(), len as c_long);
    }
}
