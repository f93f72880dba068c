//! `RF.INFO key [STATE|ITEMS|ERROR|SIZE|BITSPERITEM]` and `RF.CARD key`.
//!
//! RF.INFO answers as BF.INFO: name/value pairs (RESP3: a map) `State` (`staging`, `built`,
//! or `loading` for a copy still arriving by RF.LOADCHUNK), `Number of items inserted`,
//! `Error rate` (built: the rate asked; otherwise nil), `Size` (bytes, as `MEMORY USAGE`
//! counts the value), `Bits per item` (built: Size × 8 / items as a double; otherwise nil);
//! with a field, that value alone (RESP2: an array of one; RESP3: a map of one). Errors:
//! `ERR not found`, WRONGTYPE, `Invalid information value`.

use crate::module::args::{is_keyword, Arg};
use crate::module::data_type::{FilterValue, Lookup};
use crate::module::reply::{Reply, NOT_FOUND, WRONGTYPE};
use crate::module::ribbon::ribbon_type::{lookup, RibbonValue, State};
use redis_module::{Context, ContextFlags};

/// The fields: argument, reply name.
const FIELDS: [(&str, &str); 5] = [
    ("STATE", "State"),
    ("ITEMS", "Number of items inserted"),
    ("ERROR", "Error rate"),
    ("SIZE", "Size"),
    ("BITSPERITEM", "Bits per item"),
];

/// The value of field `index` of [`FIELDS`].
fn field(v: &RibbonValue, index: usize) -> Reply {
    let built = match &v.state {
        State::Built(r) => Some(r),
        _ => None,
    };
    let size = v.mem_usage();
    match index {
        0 => Reply::Simple(match v.state {
            State::Staging(_) => "staging",
            State::Built(_) => "built",
            State::Loading(_) => "loading",
        }),
        1 => Reply::Int(v.items().min(i64::MAX as u64) as i64),
        2 => built.map_or(Reply::Null, |r| Reply::Double(r.error_rate())),
        3 => Reply::Int(size.min(i64::MAX as u64) as i64),
        _ => built.map_or(Reply::Null, |r| {
            Reply::Double(size as f64 * 8.0 / r.items().max(1) as f64)
        }),
    }
}

/// RF.INFO.
pub fn rf_info(ctx: &Context, args: &[Arg]) -> Reply {
    if !(2..=3).contains(&args.len()) {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    let v = match lookup(&key) {
        Lookup::Found(v) => v,
        Lookup::Missing => return Reply::Error(NOT_FOUND),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
    };
    let Some(wanted) = args.get(2) else {
        return Reply::Map(
            (0..FIELDS.len())
                .map(|i| (FIELDS[i].1, field(v, i)))
                .collect(),
        );
    };
    let Some(i) = FIELDS
        .iter()
        .position(|(token, _)| is_keyword(wanted.as_slice(), token))
    else {
        return Reply::Error("Invalid information value");
    };
    if ctx.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        Reply::Map(vec![(FIELDS[i].1, field(v, i))])
    } else {
        Reply::Array(vec![field(v, i)])
    }
}

/// RF.CARD: the items staged or built from; 0 for a missing key. WRONGTYPE for another type.
pub fn rf_card(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    match lookup(&key) {
        Lookup::Found(v) => Reply::Int(v.items().min(i64::MAX as u64) as i64),
        Lookup::Missing => Reply::Int(0),
        Lookup::WrongType => Reply::Error(WRONGTYPE),
    }
}
