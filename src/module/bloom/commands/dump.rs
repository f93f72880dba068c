//! BF.SCANDUMP key iter and BF.LOADCHUNK key iter data (`docs/format.md` ("SCANDUMP")).

use crate::module::args::{parse_i64, Arg};
use crate::module::bloom::filter::shared::chunk_error;
use crate::module::bloom::filter::{create_from_header, open_mut, with_existing};
use crate::module::data_type::Lookup;
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use redis_module::Context;

/// BF.SCANDUMP: `[next_iter, data]`: iterator 0 gives `[1, header]`, then chunks of at most
/// 16 MiB that never cross a layer (a window filter's are addressed by generation: `ERR window
/// filter changed during SCANDUMP, …` when a write made the walk inconsistent), then `[0, ""]`.
/// The key is checked before the iterator.
pub fn bf_scandump(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    with_existing(ctx, &args[1], |filter| {
        let Some(iter) = parse_i64(args[2].as_slice()) else {
            return Reply::Error("Second argument must be numeric");
        };
        if iter == 0 {
            send_array_header(ctx, 2);
            send(ctx, &Reply::Int(1));
            send_bulk(ctx, &filter.scandump_header());
            return Reply::Sent;
        }
        match filter.scandump_chunk(iter) {
            Ok((next, data)) => {
                send_array_header(ctx, 2);
                send(ctx, &Reply::Int(next));
                send_bulk(ctx, data);
                Reply::Sent
            }
            Err(e) => chunk_error(e),
        }
    })
}

/// BF.LOADCHUNK: with iterator 1 on a missing key, creates the filter from a header (a window
/// header makes a window filter); on an existing filter, writes a chunk at the position its
/// iterator names. Replies `+OK`; replicated verbatim. Errors: `ERR Second argument must be
/// numeric`, `ERR not found`, WRONGTYPE, `ERR received bad data` (also for a valid header
/// over the memory budget, as RedisBloom answers), `ERR invalid offset - no link found`,
/// `ERR invalid chunk - Too big for current filter`. A replicated or loaded header that
/// cannot be allocated aborts the server (see `memory::abort_diverging`).
pub fn bf_loadchunk(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 4 {
        return Reply::WrongArity;
    }
    let Some(iter) = parse_i64(args[2].as_slice()) else {
        return Reply::Error("ERR Second argument must be numeric");
    };
    let data = args[3].as_slice();
    let key = ctx.open_key_writable(&args[1].string());
    let loaded = match open_mut(&key) {
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing if iter != 1 => return Reply::Error(NOT_FOUND),
        Lookup::Missing => create_from_header(ctx, &key, &args[1], data),
        Lookup::Found(mut f) => f.load_chunk(iter, data).map_err(chunk_error),
    };
    if let Err(e) = loaded {
        return e;
    }
    ctx.replicate_verbatim();
    super::notify(ctx, c"bf.loadchunk", &args[1]);
    Reply::Ok
}
