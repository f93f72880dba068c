//! redis-bf: a Redis module providing RedisBloom-compatible `BF.*` scalable Bloom filters.
//!
//! [`bloom`] is the pure core, the `redis-bf-core` crate of this workspace (usable alone, e.g.
//! to answer membership locally from a SCANDUMP); the `module` part is the thin Redis layer.

pub use redis_bf_core as bloom;
pub mod module;
