//! CF command handlers: cf_scandump, cf_loadchunk (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.scandump` (upper case): not implemented yet.
pub fn cf_scandump(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.loadchunk` (upper case): not implemented yet.
pub fn cf_loadchunk(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
