//! BF.* command handlers, one file per command family:
//! `reserve` (BF.RESERVE), `add` (BF.ADD, BF.MADD, BF.INSERT), `exists` (BF.EXISTS,
//! BF.MEXISTS), `info` (BF.INFO, BF.CARD, BF.DEBUG), `dump` (BF.SCANDUMP, BF.LOADCHUNK).
//! Handlers only parse, call the core and build a [`Reply`].

pub mod add;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;

use crate::bloom::layer::LayerError;
use crate::module::reply::Reply;

/// The reply for a filter that could not be created.
pub(crate) fn create_error(e: LayerError) -> Reply {
    Reply::Error(match e {
        LayerError::OutOfMemory => "ERR Insufficient memory to create filter",
        LayerError::Invalid => "ERR could not create filter",
    })
}
