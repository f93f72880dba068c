//! BF.* command handlers, one file per command family:
//! `reserve` (BF.RESERVE), `add` (BF.ADD, BF.MADD, BF.INSERT), `exists` (BF.EXISTS,
//! BF.MEXISTS), `info` (BF.INFO, BF.CARD, BF.DEBUG), `dump` (BF.SCANDUMP, BF.LOADCHUNK).
//! Each handler parses its arguments once, opens its key once (`filter::open` /
//! `filter::open_mut`, or `filter::with_existing` for a read of a filter that must exist), asks the filter kind (`filter::plain`, `filter::window`) what it
//! needs, then replies, replicates and notifies once.

pub mod add;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;

pub(crate) use crate::module::notify::notify;
