//! CF command handlers: cf_exists, cf_mexists, cf_count (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.exists` (upper case): not implemented yet.
pub fn cf_exists(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.mexists` (upper case): not implemented yet.
pub fn cf_mexists(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.count` (upper case): not implemented yet.
pub fn cf_count(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
