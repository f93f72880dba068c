//! BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION|WINDOW], BF.CARD key and BF.DEBUG key
//! (`docs/commands.md` ("BF.INFO", "BF.CARD", "BF.DEBUG")).

use crate::module::args::{is_keyword, Arg};
use crate::module::bloom::filter::shared::InfoField;
use crate::module::bloom::filter::{open, with_existing, Filter};
use crate::module::data_type::Lookup;
use crate::module::reply::{Reply, WRONGTYPE};
use redis_module::{Context, ContextFlags};

/// A plain filter's BF.DEBUG lines and their `%g` error rates, named here too: BF.DEBUG's
/// output as the tests check it.
pub use crate::module::bloom::filter::plain::{debug_lines, format_g};

/// The BF.INFO fields: (argument, reply key, field, listed by a BF.INFO without argument), in
/// the order of the full reply. A new field is a line here and an [`InfoField`] variant, which
/// every filter kind must then answer (`Filter::info`).
const FIELDS: [(&str, &str, InfoField, bool); 6] = [
    ("CAPACITY", "Capacity", InfoField::Capacity, true),
    ("SIZE", "Size", InfoField::Size, true),
    ("FILTERS", "Number of filters", InfoField::Filters, true),
    ("ITEMS", "Number of items inserted", InfoField::Items, true),
    ("EXPANSION", "Expansion rate", InfoField::Expansion, true),
    // A window filter's length in milliseconds: asked for alone, so the full reply keeps
    // RedisBloom's five fields.
    ("WINDOW", "Window", InfoField::Window, false),
];

/// BF.INFO: all five fields (RESP2 flat array of pairs in a fixed order, RESP3 map), or one
/// field (RESP2 one-element array, RESP3 one-entry map). Errors: `ERR not found`, WRONGTYPE,
/// `Invalid information value` (also a field the key's kind does not have).
pub fn bf_info(ctx: &Context, args: &[Arg]) -> Reply {
    if !(2..=3).contains(&args.len()) {
        return Reply::WrongArity;
    }
    with_existing(ctx, &args[1], |filter| info_reply(ctx, filter, args.get(2)))
}

/// BF.INFO's reply for `filter`: every listed field, or the one `wanted` names.
fn info_reply(ctx: &Context, filter: Filter<'_>, wanted: Option<&Arg>) -> Reply {
    let Some(wanted) = wanted else {
        return Reply::Map(
            FIELDS
                .iter()
                .filter(|(_, _, _, listed)| *listed)
                .filter_map(|&(_, name, field, _)| Some((name, filter.info(ctx, field)?)))
                .collect(),
        );
    };
    let Some((name, value)) = FIELDS
        .iter()
        .find(|(token, _, _, _)| is_keyword(wanted.as_slice(), token))
        .and_then(|&(_, name, field, _)| Some((name, filter.info(ctx, field)?)))
    else {
        return Reply::Error("Invalid information value");
    };
    if ctx.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        Reply::Map(vec![(name, value)])
    } else {
        Reply::Array(vec![value])
    }
}

/// BF.CARD: items added (a window filter: items of the generations live now; 0 for a missing
/// key; WRONGTYPE for another type).
pub fn bf_card(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    match open(&key) {
        Lookup::Found(f) => Reply::Int(f.card(ctx).min(i64::MAX as u64) as i64),
        Lookup::Missing => Reply::Int(0),
        Lookup::WrongType => Reply::Error(WRONGTYPE),
    }
}

/// BF.DEBUG: `size:<items>` then one line per layer, oldest first:
/// `bytes:… bits:… hashes:… hashwidth:64|32 capacity:… size:… ratio:<error as %g>` (a window
/// filter: see `filter::window::debug_lines`).
pub fn bf_debug(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    with_existing(ctx, &args[1], |filter| {
        let lines = filter.debug_lines(ctx).into_iter();
        Reply::Array(lines.map(|l| Reply::Bulk(l.into_bytes())).collect())
    })
}
