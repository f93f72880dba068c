//! The pure Bloom-filter core: hashing, one layer, the scalable chain, and the two
//! persisted encodings (SCANDUMP dump and RDB value). Nothing here depends on Redis.
//!
//! It is also a small library for answering membership locally from a filter downloaded with
//! `BF.SCANDUMP` (the "ask the server only on maybe" pattern): feed the header (the data of
//! iterator 0) to [`dump::decode_header`], then each chunk with the iterator SCANDUMP returned
//! with it to [`dump::apply_chunk`], and ask [`Chain::contains`]. The answers are exactly the
//! server's `BF.MEXISTS` answers.
//!
//! ```
//! use redis_bf_core::{dump, Chain};
//!
//! // What a server holds: BF.RESERVE k 0.01 100, then BF.MADD k apple pear.
//! let mut server_side = Chain::new(100, 0.01, 2, false, u64::MAX).unwrap();
//! server_side.add(b"apple", u64::MAX).unwrap();
//! server_side.add(b"pear", u64::MAX).unwrap();
//!
//! // What BF.SCANDUMP returns: [1, header] for iterator 0, then [next, chunk] until [0, ""].
//! let header = dump::encode_header(&server_side);
//! let mut chunks = Vec::new();
//! let mut iter = 1;
//! loop {
//!     let (next, data) = dump::chunk_at(&server_side, iter);
//!     if next == 0 {
//!         break;
//!     }
//!     chunks.push((next, data.to_vec()));
//!     iter = next;
//! }
//!
//! // The client side: rebuild from the header and chunks (u64::MAX: no size limit).
//! let mut local = dump::decode_header(&header, u64::MAX).unwrap();
//! for (next, data) in &chunks {
//!     dump::apply_chunk(&mut local, *next, data).unwrap();
//! }
//! assert!(local.contains(b"apple"));
//! assert!(local.contains(b"pear"));
//! assert!(!local.contains(b"plum")); // certainly never added
//! assert_eq!(local, server_side);
//! ```

#![forbid(unsafe_code)]

pub mod bloom;
pub mod cuckoo;
pub mod hash;
pub mod ribbon;
pub mod sparse;

// The Bloom family's modules, also at the crate root where users have always found them.
pub use bloom::{chain, dump, layer, rdb, window};

pub use chain::{AddError, AddOutcome, Chain};
pub use cuckoo::Cuckoo;
pub use hash::HashPair;
pub use window::{Window, WindowAdd};

/// The README's examples, compiled and run as doc-tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
