//! The pure Bloom-filter core: hashing, one layer, the scalable chain, and the two
//! persisted encodings (SCANDUMP dump and RDB value). Nothing here depends on Redis.

pub mod chain;
pub mod dump;
pub mod hash;
pub mod layer;
pub mod rdb;

pub use chain::{AddError, AddOutcome, Chain};
pub use hash::HashPair;
