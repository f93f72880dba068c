//! BF.SCANDUMP key iter and BF.LOADCHUNK key iter data (`docs/format.md` ("SCANDUMP")).

use crate::bloom::dump::{apply_chunk, chunk_at, decode_header, encode_header, ChunkError};
use crate::module::args::parse_i64;
use crate::module::bloom_type::{existing, lookup_mut, store_new, Lookup};
use crate::module::memory::new_array_budget;
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use redis_module::{Context, NotifyEvent, RedisString};

/// BF.SCANDUMP: `[next_iter, data]`: iterator 0 gives `[1, header]`, then chunks of at most
/// 16 MiB that never cross a layer, then `[0, ""]`. The key is checked before the iterator.
pub fn bf_scandump(ctx: &Context, args: &[RedisString]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1]);
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
/// WRONGTYPE, `ERR received bad data`, `ERR invalid offset - no link found`,
/// `ERR invalid chunk - Too big for current filter`.
pub fn bf_loadchunk(ctx: &Context, args: &[RedisString]) -> Reply {
    if args.len() != 4 {
        return Reply::WrongArity;
    }
    let Some(iter) = parse_i64(args[2].as_slice()) else {
        return Reply::Error("ERR Second argument must be numeric");
    };
    let data = args[3].as_slice();
    let key = ctx.open_key_writable(&args[1]);
    match lookup_mut(&key) {
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing if iter != 1 => return Reply::Error(NOT_FOUND),
        Lookup::Missing => {
            let chain = match decode_header(data, new_array_budget(ctx, 0)) {
                Ok(c) => c,
                Err(e) => return chunk_error(e),
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
    ctx.notify_keyspace_event(NotifyEvent::MODULE, "bf.loadchunk", &args[1]);
    Reply::Simple("OK")
}

fn chunk_error(e: ChunkError) -> Reply {
    Reply::Error(match e {
        ChunkError::BadData => "ERR received bad data",
        ChunkError::NoLink => "ERR invalid offset - no link found",
        ChunkError::TooBig => "ERR invalid chunk - Too big for current filter",
    })
}
