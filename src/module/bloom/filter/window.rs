//! The window filter kind (filters that forget, type `bf-window`, a [`Window`] per key): what
//! the commands ask of it — create, add, check, BF.INFO fields, card, BF.DEBUG lines,
//! SCANDUMP chunks, LOADCHUNK — with everything only windows have: the clock, generation
//! numbers, the `GENERATION` rewrite of replicated writes and the read generation on
//! replicas. The data type and its callbacks are in `window_type`.
//!
//! Time and determinism: a write on the primary (BF.RESERVE … WINDOW, BF.ADD, BF.MADD,
//! BF.INSERT) reads the primary's clock once, turns it into a generation number
//! ([`Window::generation_at`]) and advances the filter to it; what it replicates (and what the
//! AOF records) is rewritten to carry that number explicitly:
//! - `BF.RESERVE key error capacity WINDOW ms EXPANSION x|NONSCALING GENERATION g`;
//! - `BF.INSERT key CAPACITY c ERROR e EXPANSION x [NONSCALING] WINDOW ms GENERATION g ITEMS …`
//!   for an implicit creation, `BF.INSERT key NOCREATE GENERATION g ITEMS …` otherwise, listing
//!   the items that changed the filter (new or refreshed; possibly none when only the
//!   generation moved).
//!
//! A replicated or AOF-loaded write never reads the clock: it uses the `GENERATION` it carries
//! (or the filter's own generation), so replicas, AOF replays and restarts reach byte-identical
//! filters whatever their clocks say. `GENERATION` is refused from ordinary clients, who could
//! otherwise move a filter into the future. RDB values and SCANDUMP headers carry the
//! generation too.
//!
//! Reads (BF.EXISTS, BF.MEXISTS, BF.CARD, BF.INFO items) never change the filter. On a primary
//! they ask the generations live at the later of the filter's generation and the local
//! clock's, so items that aged out while no write came (or while the server was down) are
//! forgotten at once, their memory freed by the next write; on a replica, those live at the
//! filter's own generation, the one its primary last wrote (`read_generation`).
//!
//! The clock ([`now_ms`]) is the system clock in milliseconds since the Unix epoch, plus the
//! signed offset in the environment variable `REDIS_BF_CLOCK_OFFSET_MS` read once at first use
//! (for testing servers whose clocks disagree; unset in production), frozen inside a script, a
//! function or a transaction and taken afresh by the next one (see [`now_ms`]).

use super::shared::{chunk_error, Added, Creation, InfoField, Replication};
use crate::bloom::dump::ChunkError;
use crate::bloom::window::{self, Window, WindowAdd};
use crate::bloom::AddError;
use crate::module::args::{parse_i64, Arg};
use crate::module::bloom::window_type::{footprint, free_elsewhere, get_mut, store};
use crate::module::memory::{abort_diverging, detached_flags, new_array_budget};
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context, ContextFlags};
use std::borrow::Cow;
use std::ffi::c_void;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The signed offset of `REDIS_BF_CLOCK_OFFSET_MS`, read once (0 when unset).
fn clock_offset_ms() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        std::env::var("REDIS_BF_CLOCK_OFFSET_MS")
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    })
}

/// Milliseconds since the Unix epoch on the system clock.
fn system_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// The time frozen for the script, function or transaction that runs now: taken by the first
/// window command inside it and forgotten when the next top-level script, function or `EXEC`
/// arrives ([`forget_at_top_level`]) and when the event loop moves on. 0: none taken.
static FROZEN_MS: AtomicU64 = AtomicU64::new(0);

/// The time window filters read: milliseconds since the Unix epoch (the system clock) plus
/// `REDIS_BF_CLOCK_OFFSET_MS`, frozen inside a Lua script, a function or `MULTI`/`EXEC`, as
/// Redis freezes its own clock there for key expiry (so `BF.ADD w x` then `BF.EXISTS w x` in
/// one script answers 1 however long the script runs), and taken afresh for the next one, even
/// in the same pipeline or event-loop iteration.
///
/// The module freezes it itself (`FROZEN_MS`): the first window *write* inside a script,
/// function or `EXEC` reads the system clock and keeps it, so an add is never recorded before
/// it was made; reads before it see the moving clock ([`read_now`]: never later than the time
/// the write then keeps, so time never goes backwards inside one), reads after it the kept
/// time. Three things forget it, so that no top-level command reuses another's time:
/// - the command filter of [`register_clock`], when a client's `EXEC`, `EVAL`, `EVALSHA`,
///   `EVAL_RO`, `EVALSHA_RO`, `FCALL` or `FCALL_RO` is about to run outside any script or
///   transaction (the only signal on Redis 7.0);
/// - a change of the server's cached command time (`command_stamp`, Redis ≥ 7.2 and Valkey),
///   which the kept time records: those servers run a command held by `CLIENT PAUSE` again
///   without calling command filters, and their cached time is fixed for one top-level command
///   (it moves inside a script only once the script runs past `busy-reply-threshold`, when
///   the time is taken afresh, forward);
/// - the event-loop hook of [`register_clock`], between iterations.
///
/// The cached time serves only to tell top-level commands apart, not as the clock: servers
/// refresh it lazily (Redis 8 between commands only once the monotonic clock moved 10 µs).
pub fn now_ms(ctx: &Context) -> u64 {
    now_with(ctx.get_flags())
}

/// The server's cached time of the top-level command that runs now
/// (`RedisModule_CachedMicroseconds`, Redis ≥ 7.2 and Valkey; 0 on Redis 7.0): the same
/// throughout one script or `EXEC` (until it runs past the busy-script threshold), and
/// another for the next top-level command once the clock moved.
fn command_stamp() -> u64 {
    // SAFETY: reading an API pointer set once by RedisModule_Init; the function only reads the
    // server's cached time.
    unsafe { raw::RedisModule_CachedMicroseconds.map_or(0, |f| f() as u64) }
}

/// The [`command_stamp`] of the command that took `FROZEN_MS`.
static FROZEN_STAMP: AtomicU64 = AtomicU64::new(0);

/// [`now_ms`] for a write whose context flags are `flags` (read once by the caller): inside a
/// script or transaction, the kept time, taken now if none is.
pub fn now_with(flags: ContextFlags) -> u64 {
    clock(flags, true)
}

/// The time a read asks at, for a command whose context flags are `flags`: inside a script or
/// transaction, the time its first write kept, else (no write yet, or outside any) the system
/// clock — without keeping it, so that a read early in a long script does not make a later add
/// count as made when the read ran.
pub fn read_now(flags: ContextFlags) -> u64 {
    clock(flags, false)
}

/// [`now_with`] (`keep`: take and keep the time if none is kept) and [`read_now`].
fn clock(flags: ContextFlags, keep: bool) -> u64 {
    let base = if flags.intersects(ContextFlags::LUA | ContextFlags::MULTI) {
        let stamp = command_stamp();
        match FROZEN_MS.load(Ordering::Relaxed) {
            frozen if frozen != 0 && stamp == FROZEN_STAMP.load(Ordering::Relaxed) => frozen,
            _ => {
                let now = system_ms();
                if keep {
                    FROZEN_MS.store(now, Ordering::Relaxed);
                    FROZEN_STAMP.store(stamp, Ordering::Relaxed);
                }
                now
            }
        }
    } else {
        system_ms()
    };
    base.saturating_add_signed(clock_offset_ms())
}

/// True for the name of a command that runs a script, a function or a transaction
/// (`EXEC`, `EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO`, `FCALL`, `FCALL_RO`), in any case: the
/// commands whose arrival starts a new frozen time. A handful of comparisons, since the
/// command filter asks it of every command.
pub fn starts_frozen_time(name: &[u8]) -> bool {
    let candidates: &[&[u8]] = match name.len() {
        4 => &[b"EXEC", b"EVAL"],
        5 => &[b"FCALL"],
        7 => &[b"EVALSHA", b"EVAL_RO"],
        8 => &[b"FCALL_RO"],
        10 => &[b"EVALSHA_RO"],
        _ => return false,
    };
    candidates.iter().any(|c| c.eq_ignore_ascii_case(name))
}

/// Subscribes to what moves the frozen script time ([`now_ms`]) on: a command filter, which
/// sees every command a client sends (and those scripts and other modules call) before it
/// runs, and the event loop's events. Called once by the module's `init`. Errors: the server
/// refused either (the frozen time could then be reused by a later script or transaction, so
/// the module must not load).
pub fn register_clock(ctx: &Context) -> Result<(), &'static str> {
    // SAFETY: reading API pointers set once by RedisModule_Init.
    let (subscribe, register_filter) = unsafe {
        (
            raw::RedisModule_SubscribeToServerEvent,
            raw::RedisModule_RegisterCommandFilter,
        )
    };
    let subscribe = subscribe.ok_or("no server events")?;
    let register_filter = register_filter.ok_or("no command filters")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_EVENTLOOP,
        dataver: 1,
    };
    // SAFETY: the load context is live during OnLoad; the callback is a plain function that
    // only stores an atomic.
    let status = unsafe { subscribe(ctx.get_raw(), event, Some(forget_frozen_time)) };
    if status != raw::REDISMODULE_OK as c_int {
        return Err("the server refused the event-loop subscription");
    }
    // SAFETY: as above; the filter only reads its command's name and stores an atomic. Flags
    // 0: it also runs for the commands this module would call (it calls none).
    let filter = unsafe { register_filter(ctx.get_raw(), Some(forget_at_top_level), 0) };
    if filter.is_null() {
        return Err("the server refused the command filter");
    }
    Ok(())
}

/// The event-loop hook of [`register_clock`]: between iterations no script or transaction
/// runs, so none can reuse the frozen time through a path the command filter does not see.
unsafe extern "C" fn forget_frozen_time(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    FROZEN_MS.store(0, Ordering::Relaxed);
}

/// The command filter of [`register_clock`]: forgets the frozen time when the command about
/// to run starts a script, a function or a transaction ([`starts_frozen_time`]) and no script
/// or transaction is running (a script's `redis.call('EVAL', …)`, refused afterwards, or a
/// module's call from inside an `EXEC` leaves it alone). Redis calls it for each command a
/// client sends (for `EXEC` right before it runs), for each `redis.call` of a script and each
/// `RedisModule_Call`.
unsafe extern "C" fn forget_at_top_level(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    // SAFETY: `fctx` is live for this call; the name string belongs to the command (borrowed,
    // not kept) and StringPtrLen only reads it.
    let name = unsafe {
        let (Some(arg), Some(ptr_len)) = (
            raw::RedisModule_CommandFilterArgGet,
            raw::RedisModule_StringPtrLen,
        ) else {
            return;
        };
        let s = arg(fctx, 0);
        if s.is_null() {
            return;
        }
        let mut len = 0usize;
        let p = ptr_len(s, &mut len);
        if p.is_null() {
            return;
        }
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    };
    if starts_frozen_time(name)
        && !detached_flags().intersects(ContextFlags::LUA | ContextFlags::MULTI)
    {
        FROZEN_MS.store(0, Ordering::Relaxed);
    }
}

/// The generation a read asks the filter at: on a primary, the later of the filter's own and
/// the clock's ([`read_now`]), so items that aged out while no write came are forgotten at once;
/// on a replica, the filter's own generation, the one its primary's writes carried. A replica
/// therefore forgets an item when its primary's next write moves the filter past it, never
/// earlier than its primary, whatever the replica's clock says (a clock ahead of the
/// primary's would otherwise make it answer false negatives).
pub fn read_generation(ctx: &Context, w: &Window) -> u64 {
    let flags = ctx.get_flags();
    if flags.contains(ContextFlags::SLAVE) {
        w.generation
    } else {
        w.generation_at(read_now(flags))
    }
}

/// True for a command replicated from the primary or replayed from the AOF: it must not read
/// the clock, and may carry `GENERATION`.
pub fn internal(ctx: &Context) -> bool {
    crate::module::replicate::from_primary_or_aof(ctx)
}

/// Parses a window length: a strict integer ≥ 1.
pub fn parse_window(v: &[u8]) -> Option<u64> {
    parse_i64(v).filter(|v| *v >= 1).map(|v| v as u64)
}

/// Parses a generation number: a strict integer ≥ 0.
pub fn parse_generation(v: &[u8]) -> Option<u64> {
    parse_i64(v).filter(|v| *v >= 0).map(|v| v as u64)
}

/// The reply of a window filter that cannot be created.
fn create_error(e: crate::bloom::layer::LayerError) -> Reply {
    Reply::Error(match e {
        crate::bloom::layer::LayerError::OutOfMemory => "ERR Insufficient memory to create filter",
        crate::bloom::layer::LayerError::Invalid => "ERR could not create filter",
    })
}

/// Stores a new window in an empty key. A generation's first array is only allocated by the
/// first add of that generation, but all [`window::LIVE`] of them must fit the memory budget
/// now ([`Window::bytes_at_capacity`]), so a filter that could never hold its capacity is
/// refused at creation instead of refusing adds once it holds a few generations.
pub fn create(
    ctx: &Context,
    key: &RedisKeyWritable,
    p: &Creation,
    generation: u64,
) -> Result<(), Reply> {
    let w = Window::new(
        p.window_ms,
        p.capacity,
        p.error,
        p.expansion,
        p.nonscaling,
        generation,
    )
    .map_err(create_error)?;
    let bytes = w.bytes_at_capacity().map_err(create_error)?;
    if bytes > new_array_budget(ctx, 0) {
        return Err(Reply::Error("ERR Insufficient memory to create filter"));
    }
    store(key, w, "ERR could not create filter")
}

/// BF.RESERVE … WINDOW on an empty key: creates the filter at the explicit generation (a
/// replicated or loaded command) or the clock's, and returns the rewritten command
/// `BF.RESERVE key error capacity WINDOW ms EXPANSION x|NONSCALING GENERATION g`.
pub fn reserve<'a>(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &'a Arg,
    p: &Creation,
) -> Result<Replication<'a>, Reply> {
    let generation = p
        .generation
        .unwrap_or_else(|| window::generation_at(now_ms(ctx), p.window_ms));
    create(ctx, key, p, generation)?;
    let text = |s: String| Cow::Owned(s.into_bytes());
    let mut argv: Vec<Cow<[u8]>> = vec![
        Cow::Borrowed(key_name.as_slice()),
        text(format!("{}", p.error)),
        text(p.capacity.to_string()),
        Cow::Borrowed(b"WINDOW"),
        text(p.window_ms.to_string()),
    ];
    if p.nonscaling {
        argv.push(Cow::Borrowed(b"NONSCALING"));
    } else {
        argv.extend([
            Cow::Borrowed(&b"EXPANSION"[..]),
            text(p.expansion.to_string()),
        ]);
    }
    argv.extend([
        Cow::Borrowed(&b"GENERATION"[..]),
        text(generation.to_string()),
    ]);
    Ok(Replication::Rewritten("BF.RESERVE", argv))
}

/// Adds `items` to the window `w` at the explicit generation (a replicated write's) or the
/// clock's, with one answer per item (stopping after `non scaling filter is full`), and returns
/// the rewritten command to replicate (see the module documentation). `created`: the filter was just created with these
/// parameters, so the replicated command creates it too. A replicated or loaded add
/// (`command` names it for the log) that cannot allocate the array its primary allocated
/// aborts the server rather than diverge (see [`abort_diverging`]).
pub fn add<'a>(
    ctx: &Context,
    w: &mut Window,
    key_name: &'a Arg,
    items: &'a [Arg],
    explicit: Option<u64>,
    created: Option<&Creation>,
    command: &str,
) -> Added<'a> {
    let g = explicit.unwrap_or_else(|| {
        if internal(ctx) {
            w.generation
        } else {
            w.generation_at(now_ms(ctx))
        }
    });
    let before = footprint(w);
    let advanced = g > w.generation;
    free_elsewhere(w.advance(g));
    let mut replies = Vec::with_capacity(items.len());
    let mut growth_refused = false;
    let mut changed: Vec<&'a [u8]> = Vec::new();
    for item in items {
        let h = Window::hash(item.as_slice());
        // After a refused array, later items needing one are refused at once (budget 0)
        // rather than reading the memory numbers again for each.
        let r = w.add_hashed(&h, g, |existing| {
            if growth_refused {
                0
            } else {
                new_array_budget(ctx, existing)
            }
        });
        if r == Err(AddError::CannotGrow) {
            // The primary added this item (it replicates only what changed its filter), so a
            // replica or a replay that cannot is about to diverge.
            abort_diverging(ctx, command, key_name.as_slice(), w.next_array_bytes());
            growth_refused = true;
        }
        replies.push(match r {
            Ok(WindowAdd::New) => {
                changed.push(item.as_slice());
                Reply::Bool(true)
            }
            Ok(WindowAdd::Refreshed) => {
                changed.push(item.as_slice());
                Reply::Bool(false)
            }
            Ok(WindowAdd::Present) => Reply::Bool(false),
            Err(AddError::Full) => Reply::Error("ERR non scaling filter is full"),
            Err(AddError::CannotGrow) => Reply::Error("ERR problem inserting into filter"),
        });
        if r == Err(AddError::Full) {
            break;
        }
    }
    let generation = w.generation;
    let after = footprint(w);
    stats::add_raw(
        0,
        after.0 - before.0,
        after.1 - before.1,
        after.2 - before.2,
    );
    let added = !changed.is_empty();
    let replication = if advanced || added || created.is_some() {
        replicate_insert(key_name, created, generation, changed)
    } else {
        Replication::Nothing
    };
    Added {
        reply: Reply::Array(replies),
        replication,
        changed: added,
    }
}

/// `BF.INSERT key (NOCREATE | creation options) GENERATION g ITEMS items…`.
fn replicate_insert<'a>(
    key: &'a Arg,
    created: Option<&Creation>,
    generation: u64,
    items: Vec<&'a [u8]>,
) -> Replication<'a> {
    let text = |s: String| Cow::Owned(s.into_bytes());
    let word = |w: &'static [u8]| Cow::Borrowed(w);
    let mut argv: Vec<Cow<[u8]>> = vec![Cow::Borrowed(key.as_slice())];
    match created {
        Some(p) => {
            argv.extend([
                word(b"CAPACITY"),
                text(p.capacity.to_string()),
                word(b"ERROR"),
                text(format!("{}", p.error)),
                word(b"EXPANSION"),
                text(p.expansion.to_string()),
            ]);
            if p.nonscaling {
                argv.push(word(b"NONSCALING"));
            }
            argv.extend([word(b"WINDOW"), text(p.window_ms.to_string())]);
        }
        None => argv.push(word(b"NOCREATE")),
    }
    argv.extend([
        word(b"GENERATION"),
        text(generation.to_string()),
        word(b"ITEMS"),
    ]);
    argv.extend(items.into_iter().map(Cow::Borrowed));
    Replication::Rewritten("BF.INSERT", argv)
}

/// BF.EXISTS / BF.MEXISTS on a window filter: `answer(i, present)` for each item, for the
/// generations live now (see the module documentation).
pub fn contains_each(ctx: &Context, w: &Window, items: &[Arg], mut answer: impl FnMut(bool)) {
    let g = read_generation(ctx, w);
    for i in items {
        answer(w.contains_at(&Window::hash(i.as_slice()), g));
    }
}

/// A BF.INFO field of a window filter. Capacity = distinct items per window, Size = memory in
/// bytes, Number of filters = layers of all kept generations, Number of items inserted =
/// items of the generations live now, Expansion rate (nil when non-scaling), Window = the
/// window length in milliseconds.
pub fn info(ctx: &Context, w: &Window, field: InfoField) -> Option<Reply> {
    let n = |v: u64| Reply::Int(v.min(i64::MAX as u64) as i64);
    Some(match field {
        InfoField::Capacity => n(w.capacity),
        InfoField::Size => n(w.mem_usage()),
        InfoField::Filters => n(w.layer_count()),
        InfoField::Items => n(w.items_at(read_generation(ctx, w))),
        InfoField::Expansion => {
            if w.nonscaling {
                Reply::Null
            } else {
                n(u64::from(w.expansion))
            }
        }
        InfoField::Window => n(w.window_ms),
    })
}

/// BF.CARD of a window filter: items of the generations live now.
pub fn card(ctx: &Context, w: &Window) -> u64 {
    w.items_at(read_generation(ctx, w))
}

/// BF.DEBUG of a window filter: `size:<items live now>`, `window:<ms> generation:<g>`, then
/// each kept generation's layers as plain BF.DEBUG lines prefixed with `generation:<n> `.
pub fn debug_lines(ctx: &Context, w: &Window) -> Vec<String> {
    let mut lines = vec![
        format!("size:{}", w.items_at(read_generation(ctx, w))),
        format!("window:{} generation:{}", w.window_ms, w.generation),
    ];
    for (n, c) in &w.gens {
        lines.extend(
            super::plain::debug_lines(c)
                .into_iter()
                .skip(1)
                .map(|l| format!("generation:{n} {l}")),
        );
    }
    lines
}

/// BF.LOADCHUNK's window header: the filter it describes, within the memory budget. A
/// client's header whose generation is implausibly far ahead of this server's clock is refused
/// (`plausible_generation`). Errors: the header's [`ChunkError`] as a reply (`ERR received bad
/// data`, for one too big for memory too; a replicated or loaded one aborts the server).
pub fn from_header(ctx: &Context, key_name: &Arg, data: &[u8]) -> Result<Window, Reply> {
    if !internal(ctx) && !plausible_generation(ctx, data) {
        return Err(chunk_error(ChunkError::BadData));
    }
    match window::decode_header(data, new_array_budget(ctx, 0)) {
        Ok(w) => Ok(w),
        Err(e) => {
            if e == ChunkError::OutOfMemory {
                abort_diverging(ctx, "BF.LOADCHUNK", key_name.as_slice(), 0);
            }
            Err(chunk_error(e))
        }
    }
}

/// A new window filter from BF.INSERT … WINDOW on an empty key, at the explicit generation
/// or the clock's. Errors: as [`create`].
pub fn create_for_insert<'k>(
    ctx: &Context,
    key: &'k RedisKeyWritable,
    c: &Creation,
) -> Result<&'k mut Window, Reply> {
    let generation = c
        .generation
        .unwrap_or_else(|| window::generation_at(now_ms(ctx), c.window_ms));
    create(ctx, key, c, generation)?;
    get_mut(key).ok_or(Reply::Error("ERR could not create filter"))
}

/// How far ahead of this server's clock a client's window header may be: clocks of the
/// servers a dump moves between may disagree by this much (1 hour).
const MAX_HEADER_LEAD_MS: u64 = 3_600_000;

/// False for a window header whose generation lies beyond this server's clock by more than
/// [`MAX_HEADER_LEAD_MS`] (and more than [`window::LIVE`] generations): loading it would let a
/// client set a generation it may not send with `GENERATION`, and a filter far in the future
/// never forgets (its reads are at the later of its generation and the clock's).
fn plausible_generation(ctx: &Context, header: &[u8]) -> bool {
    let Some((window_ms, generation)) = window::header_window_and_generation(header) else {
        return true; // Not a window header: the decoder refuses it.
    };
    let now = window::generation_at(now_ms(ctx), window_ms.max(1));
    let lead = window::generation_at(MAX_HEADER_LEAD_MS, window_ms.max(1)).max(window::LIVE);
    generation <= now.saturating_add(lead)
}
