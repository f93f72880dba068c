//! BF.EXISTS key item and BF.MEXISTS key item [item …] (`docs/commands.md` ("BF.EXISTS")).
//! A missing key, or a key of another type (a RedisBloom quirk kept on purpose), answers 0.

use crate::module::args::Arg;
use crate::module::bloom::filter::{open, Filter};
use crate::module::membership;
use crate::module::reply::{send_bool, Reply};
use redis_module::key::RedisKey;
use redis_module::Context;

/// The key's filter, or none (missing or another type: every answer is 0).
fn filter_of(key: &RedisKey) -> Option<Filter<'_>> {
    open(key).found()
}

/// BF.EXISTS: 1 if the item may be in the filter, 0 if it certainly is not (RESP3: booleans).
pub fn bf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::exists(ctx, args, |key, item| {
        filter_of(key).is_some_and(|f| f.contains(ctx, item))
    })
}

/// BF.MEXISTS: one answer per item, as an array (streamed).
pub fn bf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::mexists(ctx, args, |key, items| match filter_of(key) {
        None => false,
        Some(f) => {
            f.contains_each(ctx, items, |present| send_bool(ctx, present));
            true
        }
    })
}
