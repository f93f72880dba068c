//! CF command handlers: cf_add, cf_addnx, cf_insert, cf_insertnx (not implemented yet).

use crate::module::args::Arg;
use crate::module::reply::Reply;
use redis_module::Context;

/// `CF.add` (upper case): not implemented yet.
pub fn cf_add(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.addnx` (upper case): not implemented yet.
pub fn cf_addnx(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.insert` (upper case): not implemented yet.
pub fn cf_insert(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}

/// `CF.insertnx` (upper case): not implemented yet.
pub fn cf_insertnx(_ctx: &Context, _args: &[Arg]) -> Reply {
    Reply::Error("ERR not implemented yet")
}
