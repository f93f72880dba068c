//! The Bloom family: one layer, the scalable chain, the window filter (a filter that forgets),
//! and the two persisted encodings (SCANDUMP dump and RDB value). The crate root re-exports
//! each module (`redis_bf_core::chain` is `redis_bf_core::bloom::chain`).

pub mod chain;
pub mod dump;
pub mod layer;
pub mod rdb;
pub mod window;
