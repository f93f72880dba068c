//! The cuckoo family (`CF.*`): the data type `MBbloomCF` ([`cuckoo_type`]) and the command
//! handlers ([`commands`]). The filter itself is `redis_bf_core::cuckoo`.

pub mod commands;
pub mod cuckoo_type;
