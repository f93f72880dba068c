//! `RF.SCANDUMP key iter` and `RF.LOADCHUNK key iter data`: copying a built filter chunk by
//! chunk (`docs/format.md` "Ribbon filters", the copy form), as BF.SCANDUMP / BF.LOADCHUNK.
//!
//! RF.SCANDUMP: iter 0 → `[1, header]`; iter `p` ≥ 1 → `[next, body bytes from p]` (at most
//! 16 MiB); past the end → `[0, ""]`. Errors: `Second argument must be numeric` (not an
//! integer ≥ 0), `ERR not found`, WRONGTYPE, `ERR RF.SCANDUMP: the filter is not built`.
//!
//! RF.LOADCHUNK: iter 1 with the 49-byte header creates the key, still loading (it answers
//! nothing, as a missing key, until complete); then each `[next, data]` of the walk in order.
//! The last chunk makes the key a built filter. Iter 0 stages the little-endian u64 hashes of
//! `data` into a staging key (creating it): the form an AOF rewrite gives a staging key.
//! Replies `OK`; replicated verbatim; notified as `rf.loadchunk`. Errors (nothing changed):
//! `ERR Second argument must be numeric`, WRONGTYPE, `ERR not found` (a chunk for a missing
//! key), `ERR received bad data` (a header on an existing key, a header refused by
//! validation or over the memory limits, a chunk out of order or for a key not loading, hashes
//! not a multiple of 8 bytes); a last chunk whose bumped hashes are not a list deletes the
//! key it was completing and answers `ERR received bad data`.

use super::add::{staging_value, Stager};
use crate::bloom::ribbon::dump::{self, ChunkError, HeaderError, Loader};
use crate::module::args::{parse_i64, Arg};
use crate::module::data_type::Lookup;
use crate::module::memory;
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use crate::module::ribbon::ribbon_type::{
    lookup, lookup_mut, stage_bytes, store_new, tracked, RibbonValue, State,
};
use redis_module::Context;
use std::sync::Arc;

/// The refusal of any bad header, chunk or hash list.
const BAD_DATA: &str = "ERR received bad data";

/// The iterator argument of a command of `arity` arguments: an integer ≥ 0, else `bad`.
fn iter_arg(args: &[Arg], arity: usize, bad: &'static str) -> Result<u64, Reply> {
    if args.len() != arity {
        return Err(Reply::WrongArity);
    }
    match parse_i64(args[2].as_slice()) {
        Some(i) if i >= 0 => Ok(i as u64),
        _ => Err(Reply::Error(bad)),
    }
}

/// RF.SCANDUMP.
pub fn rf_scandump(ctx: &Context, args: &[Arg]) -> Reply {
    let iter = match iter_arg(args, 3, "Second argument must be numeric") {
        Ok(i) => i,
        Err(e) => return e,
    };
    let key = ctx.open_key(&args[1].string());
    let ribbon = match lookup(&key) {
        Lookup::Found(RibbonValue {
            state: State::Built(r),
            ..
        }) => r,
        Lookup::Found(_) => return Reply::Error("ERR RF.SCANDUMP: the filter is not built"),
        Lookup::Missing => return Reply::Error(NOT_FOUND),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
    };
    send_array_header(ctx, 2);
    if iter == 0 {
        send(ctx, &Reply::Int(1));
        send_bulk(ctx, &dump::encode_header(ribbon));
    } else {
        match dump::chunk_at(ribbon, iter) {
            Some((next, data)) => {
                send(ctx, &Reply::Int(next as i64));
                send_bulk(ctx, &data);
            }
            None => {
                send(ctx, &Reply::Int(0));
                send_bulk(ctx, b"");
            }
        }
    }
    Reply::Sent
}

/// RF.LOADCHUNK.
pub fn rf_loadchunk(ctx: &Context, args: &[Arg]) -> Reply {
    let iter = match iter_arg(args, 4, "ERR Second argument must be numeric") {
        Ok(i) => i,
        Err(e) => return e,
    };
    let data = args[3].as_slice();
    let key = ctx.open_key_writable(&args[1].string());
    let done = match iter {
        0 => stage_hashes(ctx, &key, data),
        1 => match lookup_mut(&key) {
            Lookup::WrongType => Err(Reply::Error(WRONGTYPE)),
            Lookup::Found(_) => Err(Reply::Error(BAD_DATA)),
            Lookup::Missing => create(ctx, &key, &args[1], data),
        },
        next => match lookup_mut(&key) {
            Lookup::WrongType => Err(Reply::Error(WRONGTYPE)),
            Lookup::Missing => Err(Reply::Error(NOT_FOUND)),
            // A refused chunk changes nothing (the loader rolls back), so the key stays
            // as it was on the primary and on every replica (refusals are not replicated).
            Lookup::Found(v) => apply(v, next, data).map_err(|e| {
                if e == ChunkError::TooLarge {
                    // A replicated or replayed chunk that memory cannot hold: abort rather
                    // than diverge from the primary (returns for a client's command).
                    memory::abort_diverging(ctx, "RF.LOADCHUNK", args[1].as_slice(), 0);
                }
                Reply::Error(BAD_DATA)
            }),
        },
    };
    if let Err(e) = done {
        return e;
    }
    ctx.replicate_verbatim();
    crate::module::notify::notify(ctx, c"rf.loadchunk", &args[1]);
    Reply::Ok
}

/// Iter 0: stages the hashes of `data`.
fn stage_hashes(
    ctx: &Context,
    key: &redis_module::key::RedisKeyWritable,
    data: &[u8],
) -> Result<(), Reply> {
    if data.len() % 8 != 0 {
        return Err(Reply::Error(BAD_DATA));
    }
    let v = staging_value(ctx, key, Stager::Loadchunk, data.len() as u64 / 8, true)?
        .ok_or(Reply::Error(BAD_DATA))?;
    tracked(v, |v| {
        if let State::Staging(s) = &mut v.state {
            let _ = stage_bytes(Arc::make_mut(s), data, &mut None, false);
        }
    });
    Ok(())
}

/// Iter 1 on a missing key: a loading value of the header (a filter with an empty body is
/// built at once).
fn create(
    ctx: &Context,
    key: &redis_module::key::RedisKeyWritable,
    name: &Arg,
    header: &[u8],
) -> Result<(), Reply> {
    let loader = memory::with_budget(
        ctx,
        0,
        |e| *e == HeaderError::TooLarge,
        |budget| Loader::new(header, budget),
    );
    let Ok(loader) = loader else {
        memory::abort_diverging(ctx, "RF.LOADCHUNK", name.as_slice(), 0);
        return Err(Reply::Error(BAD_DATA));
    };
    let state = if loader.is_complete() {
        State::Built(loader.finish().map_err(|_| Reply::Error(BAD_DATA))?)
    } else {
        State::Loading(Box::new(loader))
    };
    store_new(
        key,
        RibbonValue {
            state,
            ticket: None,
        },
        BAD_DATA,
    )
}

/// A chunk ending before body position `next`, for a loading value; the last one makes it
/// built.
fn apply(v: &mut RibbonValue, next: u64, data: &[u8]) -> Result<(), ChunkError> {
    let position = next
        .checked_sub(data.len() as u64)
        .ok_or(ChunkError::Position)?;
    // The loader's memory grows with what it receives, and the last chunk makes it built:
    // INFO bf follows both.
    tracked(v, |v| {
        let State::Loading(loader) = &mut v.state else {
            return Err(ChunkError::Position);
        };
        loader.apply(position, data)?;
        if loader.is_complete() {
            if let State::Loading(l) =
                std::mem::replace(&mut v.state, State::Staging(Arc::default()))
            {
                v.state = State::Built(l.finish()?);
            }
        }
        Ok(())
    })
}
