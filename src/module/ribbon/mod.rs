//! Static Ribbon filters (`RF.*`, data type `bf-ribbon`): items are staged, then built once
//! into a read-only filter (`redis_bf_core::ribbon`).

pub mod commands;
pub mod ribbon_type;
