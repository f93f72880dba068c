//! BF.EXISTS key item and BF.MEXISTS key item [item …] (`docs/commands.md` ("BF.EXISTS")).
//! A missing key, or a key of another type (a RedisBloom quirk kept on purpose), answers 0.

use crate::bloom::Chain;
use crate::module::args::Arg;
use crate::module::bloom_type::{lookup, Lookup};
use crate::module::reply::{send_array_header, send_bool, Reply};
use redis_module::Context;

fn contains(chain: Option<&Chain>, item: &Arg) -> bool {
    chain.is_some_and(|c| c.contains(item.as_slice()))
}

fn open(key: &redis_module::key::RedisKey) -> Option<&Chain> {
    match lookup(key) {
        Lookup::Found(c) => Some(c),
        Lookup::Missing | Lookup::WrongType => None,
    }
}

/// BF.EXISTS: 1 if the item may be in the filter, 0 if it certainly is not (RESP3: booleans).
pub fn bf_exists(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let chain = open(&key);
    if chain.is_none() {
        if let Some(r) = crate::module::window_type::exists(ctx, &key, &args[2..], true) {
            return r;
        }
    }
    Reply::Bool(contains(chain, &args[2]))
}

/// BF.MEXISTS: one answer per item, as an array.
pub fn bf_mexists(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let chain = open(&key);
    let items = &args[2..];
    if chain.is_none() {
        if let Some(r) = crate::module::window_type::exists(ctx, &key, items, false) {
            return r;
        }
    }
    send_array_header(ctx, items.len());
    match chain {
        None => items.iter().for_each(|_| send_bool(ctx, false)),
        // Each item is hashed when its lookup starts (see Chain::contains_each).
        Some(c) => c.contains_each(
            items.len(),
            |i| c.hash(items[i].as_slice()),
            |_, present| send_bool(ctx, present),
        ),
    }
    Reply::Sent
}
