//! The skeletons of the membership reads every family has (`BF.EXISTS` / `BF.MEXISTS`,
//! `CF.EXISTS` / `CF.MEXISTS`): the arity check, the key opened once, and for the batch form the
//! array header and the all-zero answer of a missing key or a key of another type (RedisBloom
//! answers 0 there, without an error). The family supplies the lookup and the check.

use crate::module::args::Arg;
use crate::module::reply::{send_array_header, send_bool, Reply};
use redis_module::key::RedisKey;
use redis_module::Context;

/// `<FAMILY>.EXISTS key item`: `check(key, item)` answers (RESP3: a boolean).
pub fn exists(ctx: &Context, args: &[Arg], check: impl FnOnce(&RedisKey, &Arg) -> bool) -> Reply {
    exists_or_refuse(ctx, args, |key, item| Ok(check(key, item)))
}

/// [`exists`] for a family whose key may refuse to answer (a Ribbon filter still being loaded
/// by `RF.LOADCHUNK`): `check` answers, or gives the error reply.
#[inline]
pub fn exists_or_refuse(
    ctx: &Context,
    args: &[Arg],
    check: impl FnOnce(&RedisKey, &Arg) -> Result<bool, Reply>,
) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    check(&key, &args[2]).map_or_else(|e| e, Reply::Bool)
}

/// `<FAMILY>.MEXISTS key item [item …]`: one answer per item, as an array (streamed).
/// `answer(key, items)` sends one boolean per item and returns true, or returns false having
/// sent nothing when the key holds no filter of the family (every answer is then 0).
pub fn mexists(
    ctx: &Context,
    args: &[Arg],
    answer: impl FnOnce(&RedisKey, &[Arg]) -> bool,
) -> Reply {
    mexists_or_refuse(ctx, args, |_| None, answer)
}

/// [`mexists`] for a family whose key may refuse to answer: `refuse(key)` gives the error
/// reply sent instead of the array (nothing else is sent), or `None` to answer.
#[inline]
pub fn mexists_or_refuse(
    ctx: &Context,
    args: &[Arg],
    refuse: impl FnOnce(&RedisKey) -> Option<Reply>,
    answer: impl FnOnce(&RedisKey, &[Arg]) -> bool,
) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    if let Some(error) = refuse(&key) {
        return error;
    }
    let items = &args[2..];
    send_array_header(ctx, items.len());
    if !answer(&key, items) {
        items.iter().for_each(|_| send_bool(ctx, false));
    }
    Reply::Sent
}
