//! `CF.EXISTS key item`, `CF.MEXISTS key item [item …]` and `CF.COUNT key item`.
//! As RedisBloom, a missing key **and a key of another type** answer 0 for every item,
//! without an error. EXISTS / MEXISTS answer booleans in RESP3, COUNT integers.

use crate::bloom::cuckoo::{batch, Cuckoo};
use crate::module::args::Arg;
use crate::module::cuckoo::cuckoo_type::lookup;
use crate::module::membership;
use crate::module::reply::{send_bool, Reply};
use redis_module::key::RedisKey;
use redis_module::Context;

/// The key's filter, or none (missing or another type: every answer is 0).
fn filter_of(key: &RedisKey) -> Option<&Cuckoo> {
    lookup(key).found()
}

/// CF.EXISTS: 1 if the item may be in the filter, 0 if it certainly is not (RESP3: booleans).
pub fn cf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::exists(ctx, args, |key, item| {
        filter_of(key).is_some_and(|cf| cf.contains(item.as_slice()))
    })
}

/// CF.MEXISTS: one answer per item, as an array (streamed, nothing allocated per item).
pub fn cf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    membership::mexists(ctx, args, |key, items| match filter_of(key) {
        None => false,
        // Hashed a part at a time, then answered with the buckets of the items ahead prefetched
        // in every big sub-filter, so that their cache misses overlap (`cuckoo::batch`).
        Some(cf) => {
            batch::contains_each(
                cf,
                items.len(),
                |i| items[i].as_slice(),
                |_, present| send_bool(ctx, present),
            );
            true
        }
    })
}

/// CF.COUNT: how many slots hold the item's fingerprint in its buckets (an upper bound of the
/// copies added and not deleted); an integer in both protocols.
pub fn cf_count(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let n = filter_of(&key).map_or(0, |cf| cf.count(args[2].as_slice()));
    Reply::Int(i64::try_from(n).unwrap_or(i64::MAX))
}
