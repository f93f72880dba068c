//! CF.* command handlers (cuckoo filters, data type `MBbloomCF`), one file per family:
//! `reserve` (CF.RESERVE), `add` (CF.ADD, CF.ADDNX, CF.INSERT, CF.INSERTNX), `exists`
//! (CF.EXISTS, CF.MEXISTS, CF.COUNT), `del` (CF.DEL, CF.COMPACT), `info` (CF.INFO, CF.DEBUG),
//! `dump` (CF.SCANDUMP, CF.LOADCHUNK). The filter itself is `redis_bf_core::cuckoo`; the
//! data type and its callbacks are `crate::module::cuckoo::cuckoo_type`.

pub mod add;
pub mod common;
pub mod del;
pub mod dump;
pub mod exists;
pub mod info;
pub mod reserve;
