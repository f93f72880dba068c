//! BF.SCANDUMP key iter and BF.LOADCHUNK key iter data (`docs/format.md` ("SCANDUMP")).

use crate::bloom::dump::{apply_chunk, chunk_at, decode_header, encode_header, ChunkError};
use crate::module::args::parse_i64;
use crate::module::args::Arg;
use crate::module::bloom_type::{existing, lookup_mut, store_new, Lookup};
use crate::module::memory::{abort_diverging, with_budget};
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use redis_module::Context;

/// BF.SCANDUMP: `[next_iter, data]`: iterator 0 gives `[1, header]`, then chunks of at most
/// 16 MiB that never cross a layer, then `[0, ""]`. The key is checked before the iterator.
pub fn bf_scandump(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    if let Some(r) = crate::module::window_type::scandump(ctx, &key, &args[2]) {
        return r;
    }
    let chain = match existing(&key) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let Some(iter) = parse_i64(args[2].as_slice()) else {
        return Reply::Error("Second argument must be numeric");
    };
    send_array_header(ctx, 2);
    if iter == 0 {
        send(ctx, &Reply::Int(1));
        send_bulk(ctx, &encode_header(chain));
    } else {
        let (next, data) = chunk_at(chain, iter);
        send(ctx, &Reply::Int(next));
        send_bulk(ctx, data);
    }
    Reply::Sent
}

/// BF.LOADCHUNK: with iterator 1 on a missing key, creates the filter from a header; on an
/// existing filter, writes a chunk at the position its iterator names. Replies `+OK`;
/// replicated verbatim. Errors: `ERR Second argument must be numeric`, `ERR not found`,
/// WRONGTYPE, `ERR received bad data`, `ERR Insufficient memory to create filter` (a valid
/// header over the memory budget), `ERR invalid offset - no link found`,
/// `ERR invalid chunk - Too big for current filter`. A replicated or loaded header that cannot
/// be allocated aborts the server (see `memory::abort_diverging`).
pub fn bf_loadchunk(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 4 {
        return Reply::WrongArity;
    }
    let Some(iter) = parse_i64(args[2].as_slice()) else {
        return Reply::Error("ERR Second argument must be numeric");
    };
    let data = args[3].as_slice();
    let key = ctx.open_key_writable(&args[1].string());
    if let Some(r) = crate::module::window_type::loadchunk(ctx, &key, &args[1], iter, data) {
        return r;
    }
    match lookup_mut(&key) {
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing if iter != 1 => return Reply::Error(NOT_FOUND),
        Lookup::Missing => {
            let decoded = with_budget(
                ctx,
                0,
                |e| *e == ChunkError::OutOfMemory,
                |budget| decode_header(data, budget),
            );
            let chain = match decoded {
                Ok(c) => c,
                Err(e) => {
                    if e == ChunkError::OutOfMemory {
                        abort_diverging(
                            ctx,
                            "BF.LOADCHUNK",
                            args[1].as_slice(),
                            header_bytes(data),
                        );
                    }
                    return chunk_error(e);
                }
            };
            if let Err(e) = store_new(&key, chain, "ERR received bad data") {
                return e;
            }
        }
        Lookup::Found(chain) => {
            if let Err(e) = apply_chunk(chain, iter, data) {
                return chunk_error(e);
            }
        }
    }
    ctx.replicate_verbatim();
    super::notify(ctx, c"bf.loadchunk", &args[1]);
    Reply::Ok
}

/// The reply for a refused SCANDUMP header or chunk (also used by window filters).
pub(crate) fn chunk_error(e: ChunkError) -> Reply {
    Reply::Error(match e {
        ChunkError::BadData => "ERR received bad data",
        ChunkError::NoLink => "ERR invalid offset - no link found",
        ChunkError::TooBig => "ERR invalid chunk - Too big for current filter",
        ChunkError::OutOfMemory => "ERR Insufficient memory to create filter",
        ChunkError::Changed => crate::bloom::dump::CHANGED_MESSAGE,
    })
}

/// Σ of the layer byte counts a valid header announces (for the log only).
fn header_bytes(header: &[u8]) -> u64 {
    use crate::bloom::dump::{HEADER_FIXED_BYTES, HEADER_LAYER_BYTES};
    header
        .get(HEADER_FIXED_BYTES..)
        .unwrap_or_default()
        .chunks_exact(HEADER_LAYER_BYTES)
        .filter_map(|l| l.get(..8)?.try_into().ok().map(u64::from_le_bytes))
        .fold(0u64, u64::saturating_add)
}
