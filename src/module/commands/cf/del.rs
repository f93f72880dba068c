//! CF command handlers: cf_del, cf_compact (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.del` (upper case): not implemented yet.
pub fn cf_del(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.compact` (upper case): not implemented yet.
pub fn cf_compact(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
