//! CF command handlers: cf_info, cf_debug (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.info` (upper case): not implemented yet.
pub fn cf_info(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.debug` (upper case): not implemented yet.
pub fn cf_debug(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
