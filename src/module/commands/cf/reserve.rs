//! CF command handlers: cf_reserve (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.reserve` (upper case): not implemented yet.
pub fn cf_reserve(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
