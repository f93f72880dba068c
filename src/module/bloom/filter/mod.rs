//! The filter kinds behind the BF.* commands, and the one lookup that finds a key's kind.
//!
//! A command parses its arguments once, opens its key once ([`open`] / [`open_mut`]: missing,
//! a [`Filter`] / [`FilterMut`] of some kind, or another type), asks the kind what it needs
//! (create, add, check, BF.INFO fields, card, BF.DEBUG lines, SCANDUMP chunks, LOADCHUNK),
//! then replies, replicates ([`shared::Replication`], returned by the kind) and notifies once.
//! The kinds are [`plain`] (`MBbloom--`, a [`Chain`]) and [`window`] (`bf-window`, a
//! [`Window`]); every method here is an exhaustive `match`, so a new kind or a new method does
//! not compile until every kind implements it.

pub mod plain;
pub mod shared;
pub mod window;

use crate::bloom::dump::{self, ChunkError};
use crate::bloom::window as windows;
use crate::bloom::window::Window;
use crate::bloom::Chain;
use crate::module::args::Arg;
use crate::module::bloom::bloom_type::{self, lookup, lookup_mut};
use crate::module::bloom::window_type;
use crate::module::data_type::Lookup;
use crate::module::reply::{Reply, NOT_FOUND, WRONGTYPE};
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::Context;
use shared::{Added, Creation, InfoField};

/// The filter of a key opened read-only.
pub enum Filter<'a> {
    /// A plain scalable filter.
    Plain(&'a Chain),
    /// A window filter.
    Window(&'a Window),
}

/// The filter of a key opened for writing.
pub enum FilterMut<'a> {
    /// A plain scalable filter.
    Plain(&'a mut Chain),
    /// A window filter.
    Window(&'a mut Window),
}

/// The filter of a key opened read-only: one type check for a plain filter, a second only
/// when the key holds another type.
pub fn open(key: &RedisKey) -> Lookup<Filter<'_>> {
    either(
        lookup(key),
        || window_type::get(key),
        Filter::Plain,
        Filter::Window,
    )
}

/// A plain lookup's answer, or, for another type, the window lookup's (`WrongType` when the
/// key holds no window filter either), as one kind of the two.
fn either<P, W, F>(
    plain: Lookup<P>,
    window: impl FnOnce() -> Option<W>,
    as_plain: impl FnOnce(P) -> F,
    as_window: impl FnOnce(W) -> F,
) -> Lookup<F> {
    match plain {
        Lookup::Found(c) => Lookup::Found(as_plain(c)),
        Lookup::Missing => Lookup::Missing,
        Lookup::WrongType => window().map_or(Lookup::WrongType, |w| Lookup::Found(as_window(w))),
    }
}

/// The filter of a key opened read-only that must exist.
///
/// Errors: `ERR not found` for a missing key, WRONGTYPE for another type.
pub fn existing(key: &RedisKey) -> Result<Filter<'_>, Reply> {
    match open(key) {
        Lookup::Found(f) => Ok(f),
        Lookup::Missing => Err(Reply::Error(NOT_FOUND)),
        Lookup::WrongType => Err(Reply::Error(WRONGTYPE)),
    }
}

/// The common start of the commands that read an existing filter: opens the key `name`
/// read-only and answers `f(filter)`, or [`existing`]'s error.
pub fn with_existing(ctx: &Context, name: &Arg, f: impl FnOnce(Filter<'_>) -> Reply) -> Reply {
    let key = ctx.open_key(&name.string());
    match existing(&key) {
        Ok(filter) => f(filter),
        Err(e) => e,
    }
}

/// The filter of a key opened for writing, as [`open`]. The borrow must not outlive `key`.
pub fn open_mut(key: &RedisKeyWritable) -> Lookup<FilterMut<'_>> {
    let window = || window_type::get_mut(key);
    either(lookup_mut(key), window, FilterMut::Plain, FilterMut::Window)
}

/// BF.LOADCHUNK's header (iterator 1) on a missing key: the filter it describes (a window
/// header makes a window filter), stored in `key`. Errors: `ERR received bad data` for a
/// malformed header and for one too big for memory alike (not created).
pub fn create_from_header(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    data: &[u8],
) -> Result<(), Reply> {
    const REFUSED: &str = "ERR received bad data";
    if windows::is_window_header(data) {
        window_type::store(key, window::from_header(ctx, key_name, data)?, REFUSED)
    } else {
        bloom_type::store_new(key, plain::from_header(ctx, key_name, data)?, REFUSED)
    }
}

impl Filter<'_> {
    /// True if `item` may be in the filter (BF.EXISTS).
    pub fn contains(&self, ctx: &Context, item: &Arg) -> bool {
        match self {
            Filter::Plain(c) => c.contains(item.as_slice()),
            Filter::Window(w) => {
                let mut present = false;
                window::contains_each(ctx, w, std::slice::from_ref(item), |p| present = p);
                present
            }
        }
    }

    /// `answer(present)` for each of `items`, in order (BF.MEXISTS).
    pub fn contains_each(&self, ctx: &Context, items: &[Arg], mut answer: impl FnMut(bool)) {
        match self {
            // Each item is hashed when its lookup starts (see Chain::contains_each).
            Filter::Plain(c) => c.contains_each(
                items.len(),
                |i| c.hash(items[i].as_slice()),
                |_, present| answer(present),
            ),
            Filter::Window(w) => window::contains_each(ctx, w, items, answer),
        }
    }

    /// A BF.INFO field; `None` when this kind has no such field.
    pub fn info(&self, ctx: &Context, field: InfoField) -> Option<Reply> {
        match self {
            Filter::Plain(c) => plain::info(c, field),
            Filter::Window(w) => window::info(ctx, w, field),
        }
    }

    /// BF.CARD: the items the filter counts now.
    pub fn card(&self, ctx: &Context) -> u64 {
        match self {
            Filter::Plain(c) => c.size,
            Filter::Window(w) => window::card(ctx, w),
        }
    }

    /// The BF.DEBUG lines (`docs/commands.md` ("BF.DEBUG")).
    pub fn debug_lines(&self, ctx: &Context) -> Vec<String> {
        match self {
            Filter::Plain(c) => plain::debug_lines(c),
            Filter::Window(w) => window::debug_lines(ctx, w),
        }
    }

    /// The SCANDUMP header (iterator 0).
    pub fn scandump_header(&self) -> Vec<u8> {
        match self {
            Filter::Plain(c) => dump::encode_header(c),
            Filter::Window(w) => windows::encode_header(w),
        }
    }

    /// The SCANDUMP chunk at `iter` ≥ 1 and the next iterator (0: done). Errors: a window
    /// whose walk a write made inconsistent (`ChunkError::Changed`; chunks are addressed by
    /// generation, so a shifted chunk is never answered).
    pub fn scandump_chunk(&self, iter: i64) -> Result<(i64, &[u8]), ChunkError> {
        match self {
            Filter::Plain(c) => Ok(dump::chunk_at(c, iter)),
            Filter::Window(w) => windows::scan_chunk(w, iter),
        }
    }
}

impl FilterMut<'_> {
    /// BF.ADD of one item (`items` holds exactly it) to this existing filter: what to reply
    /// (one boolean or error), replicate and notify. A plain filter's path allocates nothing.
    pub fn add_one<'a>(&mut self, ctx: &Context, key_name: &'a Arg, items: &'a [Arg]) -> Added<'a> {
        match self {
            FilterMut::Plain(c) => plain::add_one(ctx, c, key_name, &items[0]),
            FilterMut::Window(w) => {
                let mut added = window::add(ctx, w, key_name, items, None, None, "BF.ADD");
                if let Reply::Array(v) = &mut added.reply {
                    added.reply = v.pop().unwrap_or(Reply::Bool(false));
                }
                added
            }
        }
    }

    /// BF.MADD / BF.INSERT (`command`, for the log) of `items`: what to reply, replicate and
    /// notify. `creation` holds the command's options (a replicated window write's explicit
    /// `GENERATION` among them); `created` says this command just created the filter from
    /// them, so that its replication creates it too.
    pub fn add_items<'a>(
        &mut self,
        ctx: &Context,
        key_name: &'a Arg,
        items: &'a [Arg],
        creation: &Creation,
        created: bool,
        command: &str,
    ) -> Added<'a> {
        let created = created.then_some(creation);
        match self {
            FilterMut::Plain(c) => plain::add_items(ctx, c, key_name, items, created, command),
            FilterMut::Window(w) => window::add(
                ctx,
                w,
                key_name,
                items,
                creation.generation,
                created,
                command,
            ),
        }
    }

    /// BF.LOADCHUNK on an existing filter: writes `data` at the position `iter` names.
    pub fn load_chunk(&mut self, iter: i64, data: &[u8]) -> Result<(), ChunkError> {
        match self {
            FilterMut::Plain(c) => dump::apply_chunk(c, iter, data),
            FilterMut::Window(w) => windows::apply_chunk(w, iter, data),
        }
    }
}
