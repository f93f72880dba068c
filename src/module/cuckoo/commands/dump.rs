//! CF.SCANDUMP key pos and CF.LOADCHUNK key pos data (`docs/format.md` ("Cuckoo SCANDUMP")),
//! with RedisBloom's replies and errors on every server line.

use crate::bloom::cuckoo::dump::{self, HeaderLimits, Scan};
use crate::module::args::{parse_i64, Arg};
use crate::module::cuckoo::cuckoo_type;
use crate::module::data_type::Lookup;
use crate::module::memory;
use crate::module::replicate::from_primary_or_aof;
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use redis_module::Context;

/// `ERR item exists` (RedisBloom's text for a header sent to an existing filter).
const ITEM_EXISTS: &str = "ERR item exists";

/// CF.SCANDUMP: position 0 gives `[1, header]` (38 bytes), a position ≥ 1 `[next, bytes]`
/// (the whole sub-filter holding byte `pos − 1` when it is at most 16 MiB, else up to 16 MiB
/// from there), past the end `[0, nil]`; a filter with no items answers `[0, nil]` at every
/// position. The position is checked before the key: `Invalid position` (not an integer, or
/// negative), then `ERR not found` / WRONGTYPE.
pub fn cf_scandump(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let pos = match parse_i64(args[2].as_slice()) {
        Some(p) if p >= 0 => p,
        _ => return Reply::Error("Invalid position"),
    };
    let key = ctx.open_key(&args[1].string());
    let cf = match cuckoo_type::lookup(&key) {
        Lookup::Found(cf) => cf,
        Lookup::Missing => return Reply::Error(NOT_FOUND),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
    };
    send_array_header(ctx, 2);
    match dump::scan(cf, pos) {
        Scan::Header(h) => {
            send(ctx, &Reply::Int(1));
            send_bulk(ctx, &h);
        }
        Scan::Chunk(next, data) => {
            send(ctx, &Reply::Int(next));
            send_bulk(ctx, data);
        }
        Scan::End => {
            send(ctx, &Reply::Int(0));
            send(ctx, &Reply::Null);
        }
    }
    Reply::Sent
}

/// The header limits of this server line: RedisBloom 8 refuses an expansion above 32768,
/// 2.8 takes any 16-bit one. A header from the primary or the AOF is taken with the widest
/// limits (the primary accepted it).
fn header_limits(ctx: &Context) -> HeaderLimits {
    let max_expansion = if crate::module::server::is_redis8() && !from_primary_or_aof(ctx) {
        crate::bloom::cuckoo::MAX_EXPANSION
    } else {
        u16::MAX
    };
    HeaderLimits { max_expansion }
}

/// CF.LOADCHUNK: position 1 with a 38-byte header on a missing key creates the filter
/// (its tables zeroed, lazily); another position writes the chunk SCANDUMP gave with it
/// into the existing filter. Replies `+OK`; replicated verbatim (header and chunks: a replica
/// ends with the primary's bytes) and notified as `cf.loadchunk`.
///
/// Errors, in RedisBloom's order: `Invalid position` (not an integer, or 0); at position 1
/// `ERR item exists` (the key holds a cuckoo filter) or WRONGTYPE, `Invalid header` (not 38
/// bytes), `Couldn't create filter!` (refused by the header checks, or its tables over the
/// memory budget or unallocatable); at another position `ERR not found` / WRONGTYPE, then
/// `Couldn't load chunk!`. A replicated or loaded header that cannot be allocated aborts the
/// server rather than diverge (`memory::abort_diverging`).
pub fn cf_loadchunk(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 4 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key_writable(&args[1].string());
    let pos = match parse_i64(args[2].as_slice()) {
        Some(p) if p != 0 => p,
        _ => return Reply::Error("Invalid position"),
    };
    let data = args[3].as_slice();
    if pos == 1 {
        match cuckoo_type::lookup_mut(&key) {
            Lookup::Missing => {}
            Lookup::Found(_) => return Reply::Error(ITEM_EXISTS),
            Lookup::WrongType => return Reply::Error(WRONGTYPE),
        }
        let Some(h) = dump::parse_header(data) else {
            return Reply::Error("Invalid header");
        };
        let limits = header_limits(ctx);
        let decoded = memory::with_budget(
            ctx,
            0,
            |_: &()| true,
            |budget| dump::decode_header(&h, limits, budget).ok_or(()),
        );
        let Ok(cf) = decoded else {
            // From the primary or the AOF the budget is unlimited and the limits the widest:
            // the primary accepted this header, so only the allocation can have failed.
            memory::abort_diverging(ctx, "CF.LOADCHUNK", args[1].as_slice(), 0);
            return Reply::Error("Couldn't create filter!");
        };
        if let Err(e) = cuckoo_type::store_new(&key, cf, "Couldn't create filter!") {
            return e;
        }
    } else {
        let cf = match cuckoo_type::lookup_mut(&key) {
            Lookup::Found(cf) => cf,
            Lookup::Missing => return Reply::Error(NOT_FOUND),
            Lookup::WrongType => return Reply::Error(WRONGTYPE),
        };
        // A chunk writes table bytes only: no `INFO bf` counter moves (and none is computed,
        // which would cost a pass over every sub-filter for each of a walk's chunks).
        if dump::apply_chunk(cf, pos, data).is_err() {
            return Reply::Error("Couldn't load chunk!");
        }
    }
    ctx.replicate_verbatim();
    crate::module::notify::notify(ctx, c"cf.loadchunk", &args[1]);
    Reply::Ok
}
