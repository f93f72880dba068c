//! The Bloom family (`BF.*`): the two data types (`MBbloom--` in [`bloom_type`], `bf-window` in
//! [`window_type`]), the filter kinds behind the commands ([`filter`]) and the command handlers
//! ([`commands`]). The filters themselves are `redis_bf_core::bloom`.

pub mod bloom_type;
pub mod commands;
pub mod filter;
pub mod window_type;
