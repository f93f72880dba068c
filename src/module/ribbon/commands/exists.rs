//! `RF.EXISTS key item` and `RF.MEXISTS key item [item …]`: 1/0 per item (RESP3: booleans);
//! a missing key, a key of another type or a key still loading answers 0 for every item. A
//! staging key answers from its staged set (exactly), a built one from its filter.

use crate::bloom::ribbon::item_hash;
use crate::module::args::Arg;
use crate::module::membership;
use crate::module::reply::{send_bool, Reply};
use crate::module::ribbon::ribbon_type::lookup;
use redis_module::Context;

/// RF.EXISTS.
pub fn rf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::exists(ctx, args, |key, item| {
        lookup(key)
            .found()
            .is_some_and(|v| v.contains_hash(item_hash(item.as_slice())))
    })
}

/// RF.MEXISTS: one answer per item, as an array (streamed).
pub fn rf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::mexists(ctx, args, |key, items| match lookup(key).found() {
        None => false,
        Some(v) => {
            for item in items {
                send_bool(ctx, v.contains_hash(item_hash(item.as_slice())));
            }
            true
        }
    })
}
