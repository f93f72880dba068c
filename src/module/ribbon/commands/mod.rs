//! RF.* command handlers, one file per group: `add` (RF.ADD, RF.MADD), `build` (RF.BUILD, its
//! worker thread and the installation of its result), `exists` (RF.EXISTS, RF.MEXISTS),
//! `info` (RF.INFO, RF.CARD), `dump` (RF.SCANDUMP, RF.LOADCHUNK). The filter is
//! `redis_bf_core::ribbon`; the data type `crate::module::ribbon::ribbon_type`.

pub mod add;
pub mod build;
pub mod dump;
pub mod exists;
pub mod info;

use crate::module::reply::Reply;

/// `ERR RF.BUILD is running on this key`: a write to a key whose build has not ended.
pub const BUILD_RUNNING: &str = "ERR RF.BUILD is running on this key";

/// Sends an error whose text is made at run time (`Reply::Error` takes static texts).
pub fn error_owned(ctx: &redis_module::Context, text: &str) -> Reply {
    ctx.reply_error_string(text);
    Reply::Sent
}
