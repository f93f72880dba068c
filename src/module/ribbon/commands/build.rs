//! `RF.BUILD key [ERROR rate] [ITEMS item [item …]]` → `OK`: builds the key's staged set into
//! a read-only Ribbon filter at `rate` (default: the `bf.error-rate` config). With `ITEMS`
//! the items are staged first (creating the key; replicated as `RF.MADD` and notified as
//! `rf.add`).
//!
//! **Off the main thread**: the client is blocked (`RedisModule_BlockClient`), the staged set
//! (shared, read-only while the build runs) goes to a worker thread that copies its hashes and
//! builds, and the result is installed on the main thread in the blocked client's reply
//! callback, which answers `OK`. Where a client cannot be blocked (MULTI, Lua / functions,
//! AOF loading, a primary's stream) the build runs inline if the set has at most
//! [`RF_INLINE_LIMIT`] items, else `ERR RF.BUILD of more than 1000000 items cannot run inside
//! MULTI or a script`.
//!
//! While the build runs the key stays staging (reads answer from the staged set; RF.ADD,
//! RF.MADD and RF.BUILD answer `ERR RF.BUILD is running on this key`). The result is installed
//! only if the key, under the same name and db, still holds the value that started the build
//! (the value carries the build's [`Ticket`]); otherwise nothing is installed, that value
//! (wherever it is) is plain staging again, and the client gets `ERR the key changed while
//! RF.BUILD ran; nothing was built`. If the client disconnects before the build ends, nothing
//! is installed either (the key stays staging).
//!
//! A finished build replicates as its bytes — `DEL key`, `RF.LOADCHUNK key 1 <header>`,
//! `RF.LOADCHUNK key <next> <chunk>` … — which Redis wraps in one MULTI/EXEC, so replicas and
//! AOF replays never build; it is notified as `rf.build`.
//!
//! Errors: arity; `ERR syntax error`; `ERR bad error rate` (not a number in (0, 1), or below
//! what the core can shape); `ERR not found` (missing key without ITEMS); WRONGTYPE;
//! `ERR RF.BUILD: this Ribbon filter is built already`; `ERR RF.BUILD is running on this
//! key`; an error naming the bytes the build needs when the memory limits (`maxmemory`,
//! `bf.max-filter-bytes`) cannot hold its working memory (checked before it starts).

use super::add::{stage, staging_value, Stager};
use super::error_owned;
use crate::bloom::ribbon::{build, dump, Ribbon, Shape};
use crate::module::args::{is_keyword, parse_f64, Arg};
use crate::module::data_type::{FilterValue, Lookup};
use crate::module::memory;
use crate::module::replicate::replicate_strings;
use crate::module::reply::{self, Reply, NOT_FOUND};
use crate::module::ribbon::ribbon_type::{
    body_chunks, drop_elsewhere, lookup_mut, tracked, RibbonValue, Staged, State, Ticket,
};
use crate::module::{config, notify, stats};
use redis_module::{raw, Context, ContextFlags};
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The most items a build runs inline (on the main thread) where the client cannot be blocked.
pub const RF_INLINE_LIMIT: u64 = 1_000_000;

/// `ERR the key changed while RF.BUILD ran; nothing was built`.
pub const CHANGED: &str = "ERR the key changed while RF.BUILD ran; nothing was built";

const BAD_RATE: &str = "ERR bad error rate";

/// Bytes a build of `items` items into `shape` needs while it runs: the hashes copied out of
/// the set (8 per item), the band (20 per slot: a 128-bit row and a 32-bit result) and the
/// result (the solution and about 55 bumped hashes per million items).
pub fn working_bytes(items: u64, shape: &Shape) -> u64 {
    items
        .saturating_mul(8)
        .saturating_add(shape.slots().saturating_mul(20))
        .saturating_add(shape.bytes())
        .saturating_add(items / 1000 * 8)
}

/// Parses `[ERROR rate] [ITEMS item …]`: the rate and the items.
fn parse(args: &[Arg]) -> Result<(f64, &[Arg]), Reply> {
    let mut rate = None;
    let mut i = 2;
    while i < args.len() {
        let a = args[i].as_slice();
        if is_keyword(a, "ERROR") && i + 1 < args.len() {
            rate = Some(parse_f64(args[i + 1].as_slice()).ok_or(Reply::Error(BAD_RATE))?);
            i += 2;
        } else if is_keyword(a, "ITEMS") {
            if i + 1 == args.len() {
                return Err(Reply::WrongArity);
            }
            return Ok((rate.unwrap_or_else(config::error_rate), &args[i + 1..]));
        } else {
            return Err(Reply::Error("ERR syntax error"));
        }
    }
    Ok((rate.unwrap_or_else(config::error_rate), &[]))
}

/// RF.BUILD.
pub fn rf_build(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 2 {
        return Reply::WrongArity;
    }
    let (rate, items) = match parse(args) {
        Ok(p) => p,
        Err(e) => return e,
    };
    if Shape::for_items(0, rate).is_err() {
        return Reply::Error(BAD_RATE);
    }
    let key = ctx.open_key_writable(&args[1].string());
    let v = match staging_value(
        ctx,
        &key,
        Stager::Build,
        items.len() as u64,
        !items.is_empty(),
    ) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Error(NOT_FOUND),
        Err(e) => return e,
    };
    if !items.is_empty() {
        stage(v, items, |_| {});
        let strings: Vec<_> = items.iter().map(|a| a.inner).collect();
        replicate_strings(ctx, c"RF.MADD", &[&[args[1].inner], &strings]);
        notify::notify(ctx, c"rf.add", &args[1]);
    }
    let n = v.items();
    let Ok(shape) = Shape::for_items(n, rate) else {
        return Reply::Error(BAD_RATE);
    };
    let needed = working_bytes(n, &shape);
    let budget = memory::budget_for(ctx, v.mem_usage(), needed);
    if needed > budget {
        return error_owned(
            ctx,
            &format!(
                "ERR RF.BUILD of {n} items needs {needed} bytes of working memory; the memory \
                 limits (maxmemory, bf.max-filter-bytes) leave {budget}"
            ),
        );
    }
    let State::Staging(staged) = &v.state else {
        return Reply::Error(BAD_RATE);
    };
    let staged = Arc::clone(staged);
    let flags = ctx.get_flags();
    let cannot_block = ContextFlags::MULTI
        | ContextFlags::LUA
        | ContextFlags::LOADING
        | ContextFlags::REPLICATED
        | ContextFlags::DENY_BLOCKING;
    if flags.intersects(cannot_block) {
        if n > RF_INLINE_LIMIT {
            return Reply::Error(
                "ERR RF.BUILD of more than 1000000 items cannot run inside MULTI or a script",
            );
        }
        return match run_and_cut(&staged, rate) {
            Ok(built) => {
                install(ctx, v, built, args[1].inner);
                notify::notify(ctx, c"rf.build", &args[1]);
                Reply::Ok
            }
            Err(e) => e,
        };
    }
    start(ctx, v, staged, rate, args[1].as_slice())
}

/// Copies the hashes out of `staged` and builds (on whatever thread calls it).
fn run(staged: &Staged, rate: f64) -> Result<Ribbon, Reply> {
    let mut hashes = Vec::new();
    hashes
        .try_reserve_exact(staged.len())
        .map_err(|_| Reply::Error("ERR RF.BUILD: out of memory"))?;
    hashes.extend(staged.iter().copied());
    build(hashes, rate).map_err(|_| Reply::Error(BAD_RATE))
}

/// A finished build: the filter and its `RF.SCANDUMP` body chunks `(next, bytes)`, made on the
/// worker so that the main thread only hands them to replication.
type Built = (Ribbon, Vec<Chunk>);

/// One body chunk of a finished build, copied into a Redis string on the thread that built it
/// (a 1e8-item body is 87 MiB: copying it into fresh pages on the main thread, as the `b`
/// format of `RM_Replicate` does, held the main thread about 100 ms), with the iterator that
/// follows it. The main thread hands the string to `RM_Replicate` by reference (`s`).
struct Chunk {
    next: u64,
    data: *mut raw::RedisModuleString,
}

impl Chunk {
    fn new(next: u64, bytes: &[u8]) -> Chunk {
        // SAFETY: RM_CreateString with a NULL context only allocates and copies `bytes` (valid
        // for the call) into a new string object, which any thread may do; it is freed by Drop.
        let data = unsafe {
            raw::RedisModule_CreateString.unwrap()(
                std::ptr::null_mut(),
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            )
        };
        Chunk { next, data }
    }
}

// SAFETY: a Chunk owns its string alone until `install` replicates it on the main thread, and
// is dropped there right after; only a Chunk never replicated is dropped on another thread.
unsafe impl Send for Chunk {}

impl Drop for Chunk {
    fn drop(&mut self) {
        // SAFETY: the string was created by RM_CreateString and this is its owner's only
        // release; with a NULL context it is a plain reference count decrement.
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), self.data) };
    }
}

/// Copies the hashes out of `staged`, builds, and cuts the body into chunks (on whatever
/// thread calls it).
fn run_and_cut(staged: &Staged, rate: f64) -> Result<Built, Reply> {
    let ribbon = run(staged, rate)?;
    let chunks = body_chunks(&ribbon)
        .map(|(next, data)| Chunk::new(next, &data))
        .collect();
    Ok((ribbon, chunks))
}

/// Makes `v` the built filter (its staged set dropped off the main thread), and replicates it
/// as `DEL key` then its RF.LOADCHUNK walk.
fn install(ctx: &Context, v: &mut RibbonValue, built: Built, key: *mut raw::RedisModuleString) {
    let (ribbon, chunks) = built;
    let staged_bytes = v.mem_usage();
    tracked(v, |v| {
        let old = std::mem::replace(&mut v.state, State::Built(ribbon));
        v.ticket = None;
        drop_elsewhere(old, staged_bytes);
    });
    let State::Built(r) = &v.state else { return };
    replicate_strings(ctx, c"DEL", &[&[key]]);
    replicate_chunk(ctx, key, &Chunk::new(1, &dump::encode_header(r)));
    for c in &chunks {
        replicate_chunk(ctx, key, c);
    }
    // Released here, on the main thread: Redis still holds each string until it has
    // propagated it, so only the reference count drops (no copy and no free of the bytes).
    drop(chunks);
}

/// Replicates `RF.LOADCHUNK key iter data`.
fn replicate_chunk(ctx: &Context, key: *mut raw::RedisModuleString, c: &Chunk) {
    // SAFETY: live context of a command or blocked-client reply callback; format "sls" takes
    // the key and the chunk's string (both live RedisModuleStrings; Redis takes a reference to
    // the chunk's for its pending propagation, no copy) and a long long.
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.get_raw(),
            c"RF.LOADCHUNK".as_ptr(),
            c"sls".as_ptr(),
            key,
            c.next as std::os::raw::c_longlong,
            c.data,
        );
    }
}

/// A running build, handed from the worker to the main thread.
struct Done {
    ticket: Arc<Ticket>,
    db: c_int,
    key: Vec<u8>,
    result: Result<Built, Reply>,
    /// The reply callback ran (installed or refused); otherwise the client left first.
    finished: bool,
}

/// The blocked client, sent to the worker (Redis allows `UnblockClient` from any thread).
struct Blocked(*mut raw::RedisModuleBlockedClient);
// SAFETY: a blocked-client handle is meant to be passed to another thread, which calls
// RedisModule_UnblockClient on it exactly once.
unsafe impl Send for Blocked {}

/// Blocks the client and starts the worker.
fn start(ctx: &Context, v: &mut RibbonValue, staged: Arc<Staged>, rate: f64, key: &[u8]) -> Reply {
    let ticket = Ticket::new();
    v.ticket = Some(Arc::clone(&ticket));
    // SAFETY: live command context; both functions exist since Redis 6; the callbacks are
    // this file's, which catch panics.
    let (db, bc) = unsafe {
        (
            raw::RedisModule_GetSelectedDb.unwrap()(ctx.get_raw()),
            raw::RedisModule_BlockClient.unwrap()(
                ctx.get_raw(),
                Some(reply_callback),
                None,
                Some(free_privdata),
                0,
            ),
        )
    };
    stats::ribbon_builds(1);
    let done = Box::new(Done {
        ticket,
        db,
        key: key.to_vec(),
        result: Err(Reply::Error(
            "ERR RF.BUILD: the build thread could not start",
        )),
        finished: false,
    });
    // Handed over through a mutex (std's channels need 128-byte alignment, which Redis'
    // allocator does not give): taken by the worker, or back here if it cannot start.
    let job = Arc::new(std::sync::Mutex::new(Some((done, Blocked(bc)))));
    let take = |job: &std::sync::Mutex<Option<(Box<Done>, Blocked)>>| {
        job.lock().unwrap_or_else(|e| e.into_inner()).take()
    };
    let for_worker = Arc::clone(&job);
    let spawned = std::thread::Builder::new()
        .name("bf-rf-build".into())
        .spawn(move || {
            let Some((mut done, blocked)) = take(&for_worker) else {
                return;
            };
            done.result = catch_unwind(AssertUnwindSafe(|| run_and_cut(&staged, rate)))
                .unwrap_or(Err(Reply::Error("ERR internal error in redis-bf")));
            drop(staged);
            unblock(blocked, done);
        });
    if spawned.is_err() {
        if let Some((done, blocked)) = take(&job) {
            unblock(blocked, done);
        }
    }
    Reply::Sent
}

/// Hands the finished build to the main thread.
fn unblock(blocked: Blocked, done: Box<Done>) {
    // SAFETY: `blocked.0` is the handle BlockClient returned, unblocked exactly once here;
    // the private data is a boxed Done, taken back by `free_privdata`.
    unsafe {
        raw::RedisModule_UnblockClient.unwrap()(blocked.0, Box::into_raw(done).cast());
    }
}

/// The blocked client's reply, on the main thread: installs the build if the key still holds
/// the value that started it.
unsafe extern "C" fn reply_callback(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    // SAFETY: in a blocked client's reply callback the private data is the boxed Done given to
    // UnblockClient, which Redis frees (free_privdata) only after this callback.
    let done =
        unsafe { &mut *raw::RedisModule_GetBlockedClientPrivateData.unwrap()(ctx).cast::<Done>() };
    let reply = catch_unwind(AssertUnwindSafe(|| finish(&context, done)))
        .unwrap_or(Reply::Error("ERR internal error in redis-bf"));
    reply::send(&context, &reply);
    raw::Status::Ok as c_int
}

/// Ends the build: the ticket, the counter, and the installation when the key still holds the
/// value that started it.
fn finish(ctx: &Context, done: &mut Done) -> Reply {
    done.finished = true;
    done.ticket.end();
    stats::ribbon_builds(-1);
    // SAFETY: live reply-callback context; the db is the blocked client's, which could not
    // change while it was blocked.
    unsafe { raw::RedisModule_SelectDb.unwrap()(ctx.get_raw(), done.db) };
    let name = ctx.create_string(done.key.as_slice());
    let key = ctx.open_key_writable(&name);
    let v = match lookup_mut(&key) {
        Lookup::Found(v)
            if v.ticket
                .as_ref()
                .is_some_and(|t| Arc::ptr_eq(t, &done.ticket))
                && matches!(v.state, State::Staging(_)) =>
        {
            v
        }
        _ => return Reply::Error(CHANGED),
    };
    v.ticket = None;
    let result = std::mem::replace(&mut done.result, Err(Reply::Error(CHANGED)));
    match result {
        Ok(built) => {
            install(ctx, v, built, name.inner);
            notify::notify(ctx, c"rf.build", &Arg { inner: name.inner });
            Reply::Ok
        }
        Err(e) => e,
    }
}

/// Frees the build's private data; a build whose client left before it ended installs
/// nothing (its ticket ends, so the value is plain staging again).
unsafe extern "C" fn free_privdata(_ctx: *mut raw::RedisModuleCtx, data: *mut std::ffi::c_void) {
    if data.is_null() {
        return;
    }
    // SAFETY: `data` is the boxed Done given to UnblockClient; Redis frees it once, here.
    let done = unsafe { Box::from_raw(data.cast::<Done>()) };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        if !done.finished {
            done.ticket.end();
            stats::ribbon_builds(-1);
        }
        if let Ok(built) = done.result {
            let bytes = built.0.bytes();
            drop_elsewhere(built, bytes * 2);
        }
    }));
}
