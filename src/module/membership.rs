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
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    Reply::Bool(check(&key, &args[2]))
}

/// `<FAMILY>.MEXISTS key item [item …]`: one answer per item, as an array (streamed).
/// `answer(key, items)` sends one boolean per item and returns true, or returns false having
/// sent nothing when the key holds no filter of the family (every answer is then 0).
pub fn mexists(
    ctx: &Context,
    args: &[Arg],
    answer: impl FnOnce(&RedisKey, &[Arg]) -> bool,
) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let items = &args[2..];
    send_array_header(ctx, items.len());
    if !answer(&key, items) {
        items.iter().for_each(|_| send_bool(ctx, false));
    }
    Reply::Sent
}
