//! CF.INFO key and CF.DEBUG key, with RedisBloom's fields, order and texts.

use crate::bloom::cuckoo::Cuckoo;
use crate::module::args::Arg;
use crate::module::cuckoo::cuckoo_type;
use crate::module::data_type::Lookup;
use crate::module::reply::{Reply, NOT_FOUND, WRONGTYPE};
use redis_module::Context;

/// Runs `f` on the existing cuckoo filter of `key` (RedisBloom's statusStrerror: a missing key
/// is `ERR not found`, another type WRONGTYPE).
fn with_filter(ctx: &Context, key: &Arg, f: impl FnOnce(&Cuckoo) -> Reply) -> Reply {
    let key = ctx.open_key(&key.string());
    match cuckoo_type::lookup(&key) {
        Lookup::Found(cf) => f(cf),
        Lookup::Missing => Reply::Error(NOT_FOUND),
        Lookup::WrongType => Reply::Error(WRONGTYPE),
    }
}

/// The CF.INFO fields of `cf`, in RedisBloom's order.
pub fn info_fields(cf: &Cuckoo) -> Vec<(&'static str, Reply)> {
    let int = |v: u64| Reply::Int(v.min(i64::MAX as u64) as i64);
    // The counters are answered as RedisBloom answers them, reinterpreted as signed: a
    // CF.LOADCHUNK header may set them to anything, and 2^64 − 1 answers -1.
    let counter = |v: u64| Reply::Int(v as i64);
    vec![
        ("Size", int(cf.mem_usage())),
        ("Number of buckets", int(cf.buckets())),
        ("Number of filters", int(cf.filters.len() as u64)),
        ("Number of items inserted", counter(cf.items)),
        ("Number of items deleted", counter(cf.deletes)),
        ("Bucket size", int(u64::from(cf.bucket_size))),
        ("Expansion rate", int(u64::from(cf.expansion))),
        ("Max iterations", int(u64::from(cf.max_iterations))),
    ]
}

/// CF.INFO: a map (RESP2: a flat array) of `Size` (RedisBloom's memory figure: 40 + 16 per
/// sub-filter + the tables), `Number of buckets` (of the first sub-filter), `Number of
/// filters`, `Number of items inserted`, `Number of items deleted`, `Bucket size`,
/// `Expansion rate`, `Max iterations`.
pub fn cf_info(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    with_filter(ctx, &args[1], |cf| Reply::Map(info_fields(cf)))
}

/// The CF.DEBUG text of `cf`.
pub fn debug_text(cf: &Cuckoo) -> String {
    format!(
        "bktsize:{} buckets:{} items:{} deletes:{} filters:{} max_iterations:{} expansion:{}",
        cf.bucket_size,
        cf.buckets(),
        cf.items,
        cf.deletes,
        cf.filters.len(),
        cf.max_iterations,
        cf.expansion
    )
}

/// CF.DEBUG: one bulk string, `bktsize:B buckets:N items:I deletes:D filters:F
/// max_iterations:M expansion:E`.
pub fn cf_debug(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    with_filter(ctx, &args[1], |cf| Reply::Bulk(debug_text(cf).into_bytes()))
}
