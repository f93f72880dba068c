//! redis-bf: a Redis module providing RedisBloom-compatible `BF.*` scalable Bloom filters.
//!
//! [`bloom`] is the pure core (usable as a library, e.g. to answer membership locally from a
//! SCANDUMP); the `module` part is the thin Redis layer.

pub mod bloom;
pub mod module;
