//! `RF.EXISTS key item` and `RF.MEXISTS key item [item …]`: 1/0 per item (RESP3: booleans);
//! a missing key or a key of another type answers 0 for every item. A staging key answers
//! from its staged set (exactly), a built one from its filter. A key still being loaded by
//! `RF.LOADCHUNK` answers an error (`ERR RF.EXISTS: this Ribbon filter is being loaded by
//! RF.LOADCHUNK; it answers once its last chunk has arrived`) rather than a false "no".

use crate::bloom::ribbon::item_hash;
use crate::module::args::Arg;
use crate::module::membership;
use crate::module::reply::{send_bool, Reply};
use crate::module::ribbon::ribbon_type::lookup;
use redis_module::key::RedisKey;
use redis_module::Context;

const EXISTS_LOADING: &str = "ERR RF.EXISTS: this Ribbon filter is being loaded by RF.LOADCHUNK; it answers once its last chunk has arrived";
const MEXISTS_LOADING: &str = "ERR RF.MEXISTS: this Ribbon filter is being loaded by RF.LOADCHUNK; it answers once its last chunk has arrived";

/// What a key still being loaded by `RF.LOADCHUNK` answers instead of a false "no".
fn refusal(key: &RedisKey, error: &'static str) -> Option<Reply> {
    lookup(key)
        .found()
        .is_some_and(|v| v.is_loading())
        .then_some(Reply::Error(error))
}

/// RF.EXISTS.
pub fn rf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::exists_or_refuse(ctx, args, |key, item| match lookup(key).found() {
        Some(v) if v.is_loading() => Err(Reply::Error(EXISTS_LOADING)),
        Some(v) => Ok(v.contains_hash(item_hash(item.as_slice()))),
        None => Ok(false),
    })
}

/// RF.MEXISTS: one answer per item, as an array (streamed).
pub fn rf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::mexists_or_refuse(
        ctx,
        args,
        |key| refusal(key, MEXISTS_LOADING),
        |key, items| match lookup(key).found() {
            None => false,
            Some(v) => {
                v.contains_many(items.iter().map(Arg::as_slice), |b| send_bool(ctx, b));
                true
            }
        },
    )
}
