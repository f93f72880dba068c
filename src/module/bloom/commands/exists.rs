//! BF.EXISTS key item and BF.MEXISTS key item [item …] (`docs/commands.md` ("BF.EXISTS")).
//! A missing key, or a key of another type (a RedisBloom quirk kept on purpose), answers 0.

use crate::module::args::Arg;
use crate::module::bloom::filter::{open, Filter};
use crate::module::reply::{send_array_header, send_bool, Reply};
use redis_module::key::RedisKey;
use redis_module::Context;

/// The key's filter, or none (missing or another type: every answer is 0).
fn filter_of(key: &RedisKey) -> Option<Filter<'_>> {
    open(key).found()
}

/// BF.EXISTS: 1 if the item may be in the filter, 0 if it certainly is not (RESP3: booleans).
pub fn bf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    Reply::Bool(filter_of(&key).is_some_and(|f| f.contains(ctx, &args[2])))
}

/// BF.MEXISTS: one answer per item, as an array (streamed).
pub fn bf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let items = &args[2..];
    send_array_header(ctx, items.len());
    match filter_of(&key) {
        None => items.iter().for_each(|_| send_bool(ctx, false)),
        Some(f) => f.contains_each(ctx, items, |present| send_bool(ctx, present)),
    }
    Reply::Sent
}
