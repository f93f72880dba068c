//! Filters that forget: the `bf-window` data type (a [`Window`] per key) and the window paths
//! of the BF.* commands, which the command handlers call first.
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
//! (for testing servers whose clocks disagree; unset in production), frozen inside a script or
//! a transaction.

use crate::bloom::dump::ChunkError;
use crate::bloom::rdb::DecodeError;
use crate::bloom::window::{self, Window, WindowAdd};
use crate::bloom::AddError;
use crate::module::args::Arg;
use crate::module::args::{is_keyword, parse_f64, parse_i64};
use crate::module::bloom_type::{IoReader, IoWriter};
use crate::module::commands::info::debug_lines;
use crate::module::config;
use crate::module::memory::{abort_diverging, new_array_budget};
use crate::module::reply::{send, send_array_header, send_bulk, Reply, NOT_FOUND, WRONGTYPE};
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::{raw, Context, ContextFlags};
use std::ffi::c_void;
use std::os::raw::{c_char, c_int};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// The window filter type. Its own 9-character name and RDB layout: a server or module that
/// only knows `MBbloom--` refuses it instead of misreading it.
pub static WINDOW_TYPE: RedisType = RedisType::new(
    "bf-window",
    window::ENCODING_VERSION,
    raw::RedisModuleTypeMethods {
        version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
        rdb_load: Some(rdb_load),
        rdb_save: Some(rdb_save),
        aof_rewrite: Some(aof_rewrite),
        mem_usage: Some(mem_usage),
        digest: Some(digest),
        free: Some(free),
        aux_load: None,
        aux_save: None,
        aux_save_triggers: 0,
        free_effort: Some(free_effort),
        unlink: None,
        copy: Some(copy),
        defrag: None,
        mem_usage2: None,
        free_effort2: None,
        unlink2: None,
        copy2: None,
        aux_save2: None,
    },
);

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

/// The time frozen for the script or transaction that runs now: taken by the first window
/// command of a script or `EXEC` and forgotten when the event loop moves on (a script or a
/// transaction runs whole inside one event-loop iteration). 0: none taken.
static FROZEN_MS: AtomicU64 = AtomicU64::new(0);

/// The time window filters read: milliseconds since the Unix epoch (the system clock) plus
/// `REDIS_BF_CLOCK_OFFSET_MS`, frozen inside a Lua script, a function or `MULTI`/`EXEC`, as
/// Redis freezes its own clock there for key expiry (so `BF.ADD w x` then `BF.EXISTS w x` in
/// one script answers 1 however long the script runs). The module freezes it itself
/// (`FROZEN_MS`, reset by [`register_clock`]'s event-loop hook): the server's cached time
/// (`RedisModule_CachedMicroseconds`, Redis ≥ 7.2) moves inside a long script on Redis 7.4.
pub fn now_ms(ctx: &Context) -> u64 {
    now_with(ctx.get_flags())
}

/// [`now_ms`] for a command whose context flags are `flags` (read once by the caller).
fn now_with(flags: ContextFlags) -> u64 {
    let base = if flags.intersects(ContextFlags::LUA | ContextFlags::MULTI) {
        match FROZEN_MS.load(Ordering::Relaxed) {
            0 => {
                let now = system_ms();
                FROZEN_MS.store(now, Ordering::Relaxed);
                now
            }
            frozen => frozen,
        }
    } else {
        system_ms()
    };
    base.saturating_add_signed(clock_offset_ms())
}

/// Subscribes to the event loop's events, to forget the frozen script time ([`now_ms`])
/// between iterations. Called once by the module's `init`. Errors: the server refused the
/// subscription (the frozen time would then never move again, so the module must not load).
pub fn register_clock(ctx: &Context) -> Result<(), &'static str> {
    // SAFETY: reading an API pointer set once by RedisModule_Init.
    let subscribe = unsafe { raw::RedisModule_SubscribeToServerEvent }.ok_or("no server events")?;
    let event = raw::RedisModuleEvent {
        id: raw::REDISMODULE_EVENT_EVENTLOOP,
        dataver: 1,
    };
    // SAFETY: the load context is live during OnLoad; the callback is a plain function that
    // only stores an atomic.
    let status = unsafe { subscribe(ctx.get_raw(), event, Some(forget_frozen_time)) };
    if status == raw::REDISMODULE_OK as c_int {
        Ok(())
    } else {
        Err("the server refused the event-loop subscription")
    }
}

/// The event-loop hook of [`register_clock`].
unsafe extern "C" fn forget_frozen_time(
    _ctx: *mut raw::RedisModuleCtx,
    _event: raw::RedisModuleEvent,
    _subevent: u64,
    _data: *mut c_void,
) {
    FROZEN_MS.store(0, Ordering::Relaxed);
}

/// The generation a read asks the filter at: on a primary, the later of the filter's own and
/// the clock's ([`now_ms`]), so items that aged out while no write came are forgotten at once;
/// on a replica, the filter's own generation, the one its primary's writes carried. A replica
/// therefore forgets an item when its primary's next write moves the filter past it, never
/// earlier than its primary, whatever the replica's clock says (a clock ahead of the
/// primary's would otherwise make it answer false negatives).
fn read_generation(ctx: &Context, w: &Window) -> u64 {
    let flags = ctx.get_flags();
    if flags.contains(ContextFlags::SLAVE) {
        w.generation
    } else {
        w.generation_at(now_with(flags))
    }
}

/// True for a command replicated from the primary or replayed from the AOF: it must not read
/// the clock, and may carry `GENERATION`.
fn internal(ctx: &Context) -> bool {
    ctx.get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// The window of a key opened read-only, if it holds one.
pub fn get(key: &RedisKey) -> Option<&Window> {
    key.get_value::<Window>(&WINDOW_TYPE).ok().flatten()
}

/// The window of a key opened for writing, if it holds one.
pub(crate) fn get_mut(key: &RedisKeyWritable) -> Option<&mut Window> {
    key.get_value::<Window>(&WINDOW_TYPE).ok().flatten()
}

/// What a window adds to the `INFO bf` counters: (layers, items, bytes) of every kept
/// generation (items as stored, not only those live now).
fn footprint(w: &Window) -> (i64, i64, i64) {
    let items = w
        .gens
        .iter()
        .map(|(_, c)| c.size)
        .fold(0u64, u64::saturating_add);
    (
        w.layer_count() as i64,
        items.min(i64::MAX as u64) as i64,
        w.bit_array_bytes().min(i64::MAX as u64) as i64,
    )
}

/// Counts a window filter in `INFO bf` (`sign` 1: created or loaded, −1: freed).
fn count(w: &Window, sign: i64) {
    let (l, i, b) = footprint(w);
    stats::add_raw(sign, sign * l, sign * i, sign * b);
}

/// Stores a window in an empty key and counts it in `INFO bf`.
fn store(key: &RedisKeyWritable, w: Window, failure: &'static str) -> Result<(), Reply> {
    count(&w, 1);
    key.set_value(&WINDOW_TYPE, w)
        .map_err(|_| Reply::Error(failure))
}

/// Parses a window length: a strict integer ≥ 1.
fn parse_window(v: &[u8]) -> Option<u64> {
    parse_i64(v).filter(|v| *v >= 1).map(|v| v as u64)
}

/// Parses a generation number: a strict integer ≥ 0.
fn parse_generation(v: &[u8]) -> Option<u64> {
    parse_i64(v).filter(|v| *v >= 0).map(|v| v as u64)
}

/// Parameters of a window filter to create.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Params {
    window_ms: u64,
    capacity: u64,
    error: f64,
    expansion: u32,
    nonscaling: bool,
}

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
fn create(ctx: &Context, key: &RedisKeyWritable, p: &Params, generation: u64) -> Result<(), Reply> {
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

// ---------------------------------------------------------------------------------------------
// BF.RESERVE key error_rate capacity WINDOW ms [EXPANSION e | NONSCALING]

/// The window path of BF.RESERVE: `Some(reply)` when the options after the capacity name
/// `WINDOW`, else `None` (a plain filter). Errors as BF.RESERVE's, plus `ERR no window`,
/// `ERR bad window` (not an integer ≥ 1).
pub fn reserve(ctx: &Context, args: &[Arg]) -> Option<Reply> {
    if args.len() < 5 || !args[4..].iter().any(|a| is_keyword(a.as_slice(), "WINDOW")) {
        return None;
    }
    let raw: Vec<&[u8]> = args[2..].iter().map(|a| a.as_slice()).collect();
    let (p, explicit) = match parse_reserve(&raw, internal(ctx)) {
        Ok(v) => v,
        Err(e) => return Some(e),
    };
    let key = ctx.open_key_writable(&args[1].string());
    if get_mut(&key).is_some()
        || matches!(
            crate::module::bloom_type::lookup_mut(&key),
            crate::module::bloom_type::Lookup::Found(_)
        )
    {
        return Some(Reply::Error("ERR item exists"));
    }
    if !key.is_empty() {
        return Some(Reply::Error(WRONGTYPE));
    }
    let generation = explicit.unwrap_or_else(|| window::generation_at(now_ms(ctx), p.window_ms));
    if let Err(e) = create(ctx, &key, &p, generation) {
        return Some(e);
    }
    let error = format!("{}", p.error);
    let capacity = p.capacity.to_string();
    let ms = p.window_ms.to_string();
    let expansion = p.expansion.to_string();
    let g = generation.to_string();
    let mut argv: Vec<&[u8]> = vec![
        args[1].as_slice(),
        error.as_bytes(),
        capacity.as_bytes(),
        b"WINDOW",
        ms.as_bytes(),
    ];
    if p.nonscaling {
        argv.push(b"NONSCALING");
    } else {
        argv.extend([&b"EXPANSION"[..], expansion.as_bytes()]);
    }
    argv.extend([&b"GENERATION"[..], g.as_bytes()]);
    ctx.replicate("BF.RESERVE", argv.as_slice());
    crate::module::commands::notify(ctx, c"bf.reserve", &args[1]);
    Some(Reply::Ok)
}

/// Parses `error capacity option…` of a window BF.RESERVE, in BF.RESERVE's order and texts.
fn parse_reserve(args: &[&[u8]], internal: bool) -> Result<(Params, Option<u64>), Reply> {
    let error = parse_f64(args[0]).ok_or(Reply::Error("ERR bad error rate"))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(Reply::Error("ERR (0 < error rate range < 1) "));
    }
    let capacity = parse_i64(args[1]).ok_or(Reply::Error("ERR bad capacity"))?;
    if capacity <= 0 {
        return Err(Reply::Error("ERR (capacity should be larger than 0)"));
    }
    let mut p = Params {
        window_ms: 0,
        capacity: capacity as u64,
        error,
        expansion: crate::bloom::chain::DEFAULT_EXPANSION,
        nonscaling: false,
    };
    let mut expansion = None;
    let mut generation = None;
    let mut seen = [false; 4];
    let mut i = 2;
    while i < args.len() {
        let tok = args[i];
        let value = args.get(i + 1).copied();
        let option = ["NONSCALING", "WINDOW", "EXPANSION", "GENERATION"]
            .iter()
            .position(|k| is_keyword(tok, k));
        if let Some(o) = option {
            if std::mem::replace(&mut seen[o], true) {
                // As a plain BF.RESERVE, where a repeated option makes the command too long.
                return Err(Reply::WrongArity);
            }
        }
        if is_keyword(tok, "NONSCALING") {
            p.nonscaling = true;
            i += 1;
            continue;
        }
        if is_keyword(tok, "WINDOW") {
            let v = value.ok_or(Reply::Error("ERR no window"))?;
            p.window_ms = parse_window(v).ok_or(Reply::Error("ERR bad window"))?;
        } else if is_keyword(tok, "EXPANSION") {
            let v = value.ok_or(Reply::Error("ERR no expansion"))?;
            let e = parse_i64(v).ok_or(Reply::Error("ERR bad expansion"))?;
            if e < 1 {
                return Err(Reply::Error(
                    "ERR expansion should be greater or equal to 1",
                ));
            }
            expansion = Some(u32::try_from(e).map_err(|_| Reply::Error("ERR bad expansion"))?);
        } else if internal && is_keyword(tok, "GENERATION") {
            let v = value.ok_or(Reply::Error("ERR unknown argument"))?;
            generation = Some(parse_generation(v).ok_or(Reply::Error("ERR unknown argument"))?);
        } else {
            return Err(Reply::Error("ERR unknown argument"));
        }
        i += 2;
    }
    if let Some(e) = expansion {
        if p.nonscaling {
            return Err(Reply::Error("Nonscaling filters cannot expand"));
        }
        p.expansion = e;
    }
    if p.window_ms == 0 {
        return Err(Reply::Error("ERR no window"));
    }
    Ok((p, generation))
}

// ---------------------------------------------------------------------------------------------
// BF.ADD / BF.MADD / BF.INSERT

/// Options of a window BF.INSERT.
#[derive(Debug, Clone, Copy, PartialEq)]
struct InsertArgs {
    params: Params,
    nocreate: bool,
    generation: Option<u64>,
}

/// True when BF.INSERT's options (before ITEMS) name WINDOW or GENERATION, so the window path
/// must parse them.
fn insert_mentions_window(args: &[&[u8]]) -> bool {
    let mut i = 0;
    while let Some(tok) = args.get(i) {
        if is_keyword(tok, "ITEMS") {
            return false;
        }
        if is_keyword(tok, "WINDOW") || is_keyword(tok, "GENERATION") {
            return true;
        }
        let takes_value = ["CAPACITY", "ERROR", "EXPANSION"]
            .iter()
            .any(|k| is_keyword(tok, k));
        i += if takes_value { 2 } else { 1 };
    }
    false
}

/// Parses a window BF.INSERT's options with BF.INSERT's texts, plus `Bad window`. Returns the
/// options and the index of the first item. Items may be missing only with GENERATION (a
/// replicated advance).
fn parse_insert(args: &[&[u8]], internal: bool) -> Result<(InsertArgs, usize), Reply> {
    let expansion_default = config::expansion();
    let mut a = InsertArgs {
        params: Params {
            window_ms: 0,
            capacity: config::initial_size(),
            error: config::error_rate(),
            expansion: expansion_default.unwrap_or(crate::bloom::chain::DEFAULT_EXPANSION),
            nonscaling: expansion_default.is_none(),
        },
        nocreate: false,
        generation: None,
    };
    let mut capacity = a.params.capacity as i64;
    let mut expansion = i64::from(a.params.expansion);
    let mut i = 0;
    loop {
        let Some(tok) = args.get(i) else {
            return Err(Reply::WrongArity);
        };
        let value = args.get(i + 1);
        if is_keyword(tok, "ITEMS") {
            i += 1;
            break;
        } else if is_keyword(tok, "CAPACITY") {
            capacity =
                parse_i64(value.ok_or(Reply::WrongArity)?).ok_or(Reply::Error("Bad capacity"))?;
            i += 2;
        } else if is_keyword(tok, "ERROR") {
            a.params.error =
                parse_f64(value.ok_or(Reply::WrongArity)?).ok_or(Reply::Error("Bad error rate"))?;
            i += 2;
        } else if is_keyword(tok, "EXPANSION") {
            expansion =
                parse_i64(value.ok_or(Reply::WrongArity)?).ok_or(Reply::Error("Bad expansion"))?;
            i += 2;
        } else if is_keyword(tok, "WINDOW") {
            if a.params.window_ms != 0 {
                // Repeated: as BF.RESERVE, where a repeated option makes the command too long.
                return Err(Reply::WrongArity);
            }
            a.params.window_ms =
                parse_window(value.ok_or(Reply::WrongArity)?).ok_or(Reply::Error("Bad window"))?;
            i += 2;
        } else if internal && is_keyword(tok, "GENERATION") {
            if a.generation.is_some() {
                return Err(Reply::WrongArity);
            }
            a.generation = Some(
                parse_generation(value.ok_or(Reply::WrongArity)?)
                    .ok_or(Reply::Error("Unknown argument received"))?,
            );
            i += 2;
        } else if is_keyword(tok, "NOCREATE") {
            a.nocreate = true;
            i += 1;
        } else if is_keyword(tok, "NONSCALING") {
            a.params.nonscaling = true;
            i += 1;
        } else {
            return Err(Reply::Error("Unknown argument received"));
        }
    }
    if i >= args.len() && a.generation.is_none() {
        return Err(Reply::WrongArity);
    }
    let p = &mut a.params;
    if !(p.error > 0.0 && p.error < 1.0) || capacity < 1 || expansion < 1 {
        return Err(Reply::Error("Bad argument received"));
    }
    p.capacity = capacity as u64;
    p.expansion = u32::try_from(expansion).map_err(|_| Reply::Error("Bad argument received"))?;
    Ok((a, i))
}

/// The window path of BF.INSERT: `Some(reply)` when its options name WINDOW (or, from the
/// primary, GENERATION); `None` otherwise (BF.INSERT on an existing window key without them
/// reaches [`add_existing`] through the plain path).
pub fn insert(ctx: &Context, args: &[Arg]) -> Option<Reply> {
    let raw: Vec<&[u8]> = args.get(2..)?.iter().map(|a| a.as_slice()).collect();
    if !insert_mentions_window(&raw) {
        return None;
    }
    let (a, first) = match parse_insert(&raw, internal(ctx)) {
        Ok(v) => v,
        Err(e) => return Some(e),
    };
    let key = ctx.open_key_writable(&args[1].string());
    let items = &args[2 + first..];
    if get_mut(&key).is_none() {
        if !key.is_empty() {
            return Some(Reply::Error(WRONGTYPE));
        }
        if a.nocreate {
            return Some(Reply::Error(NOT_FOUND));
        }
        if a.params.window_ms == 0 {
            // GENERATION without WINDOW names an existing window filter.
            return Some(Reply::Error(NOT_FOUND));
        }
        let generation = a
            .generation
            .unwrap_or_else(|| window::generation_at(now_ms(ctx), a.params.window_ms));
        if let Err(e) = create(ctx, &key, &a.params, generation) {
            return Some(e);
        }
        crate::module::commands::notify(ctx, c"bf.reserve", &args[1]);
        return Some(add(
            ctx,
            &key,
            &args[1],
            items,
            a.generation,
            Some(&a.params),
            "BF.INSERT",
        ));
    }
    Some(add(
        ctx,
        &key,
        &args[1],
        items,
        a.generation,
        None,
        "BF.INSERT",
    ))
}

/// The window path of BF.ADD / BF.MADD / BF.INSERT on an existing key (the plain path found
/// another type there): `Some(reply)` when the key holds a window filter. `single`: BF.ADD's
/// one-value reply.
pub fn add_existing(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    items: &[Arg],
    single: bool,
    command: &str,
) -> Option<Reply> {
    get_mut(key)?;
    let r = add(ctx, key, key_name, items, None, None, command);
    Some(if single {
        match r {
            Reply::Array(mut v) => v.pop().unwrap_or(Reply::Bool(false)),
            other => other,
        }
    } else {
        r
    })
}

/// Adds `items` to the window in `key` (which holds one), replies with one answer per item
/// (stopping after `non scaling filter is full`), and replicates the rewritten command
/// (see the module documentation). `created`: the filter was just created with these
/// parameters, so the replicated command creates it too. A replicated or loaded add
/// (`command` names it for the log) that cannot allocate the array its primary allocated
/// aborts the server rather than diverge (see [`abort_diverging`]).
fn add(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    items: &[Arg],
    explicit: Option<u64>,
    created: Option<&Params>,
    command: &str,
) -> Reply {
    let Some(w) = get_mut(key) else {
        return Reply::Error(WRONGTYPE);
    };
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
    let mut changed: Vec<&[u8]> = Vec::new();
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
    if advanced || !changed.is_empty() || created.is_some() {
        replicate_insert(ctx, key_name, created, generation, &changed);
    }
    if !changed.is_empty() {
        crate::module::commands::notify(ctx, c"bf.add", key_name);
    }
    Reply::Array(replies)
}

/// Frees generations that aged out (or all of a deleted window filter's) as a deleted filter's
/// are freed, within one budget for all of them (`alloc::free_bit_array`: big arrays' pages go
/// to the module's background thread), so the main thread spends a bounded time whatever
/// their shape.
fn free_elsewhere(dropped: Vec<(u64, crate::bloom::Chain)>) {
    let mut budget = crate::module::alloc::FreeBudget::new();
    for (_, chain) in dropped {
        crate::module::bloom_type::free_arrays(chain, &mut budget);
    }
}

/// Replicates `BF.INSERT key (NOCREATE | creation options) GENERATION g ITEMS items…`.
fn replicate_insert(
    ctx: &Context,
    key: &Arg,
    created: Option<&Params>,
    generation: u64,
    items: &[&[u8]],
) {
    let g = generation.to_string();
    let (capacity, error, expansion, ms) = match created {
        Some(p) => (
            p.capacity.to_string(),
            format!("{}", p.error),
            p.expansion.to_string(),
            p.window_ms.to_string(),
        ),
        None => Default::default(),
    };
    let mut argv: Vec<&[u8]> = vec![key.as_slice()];
    match created {
        Some(p) => {
            argv.extend([
                &b"CAPACITY"[..],
                capacity.as_bytes(),
                b"ERROR",
                error.as_bytes(),
                b"EXPANSION",
                expansion.as_bytes(),
            ]);
            if p.nonscaling {
                argv.push(b"NONSCALING");
            }
            argv.extend([&b"WINDOW"[..], ms.as_bytes()]);
        }
        None => argv.push(b"NOCREATE"),
    }
    argv.extend([&b"GENERATION"[..], g.as_bytes(), b"ITEMS"]);
    argv.extend_from_slice(items);
    ctx.replicate("BF.INSERT", argv.as_slice());
}

// ---------------------------------------------------------------------------------------------
// Reads

/// The window path of BF.EXISTS (`single`) and BF.MEXISTS: `Some(reply)` when the key holds a
/// window filter. Answers for the generations live now (see the module documentation).
pub fn exists(ctx: &Context, key: &RedisKey, items: &[Arg], single: bool) -> Option<Reply> {
    let w = get(key)?;
    let g = read_generation(ctx, w);
    let mut answers = items
        .iter()
        .map(|i| Reply::Bool(w.contains_at(&Window::hash(i.as_slice()), g)));
    Some(if single {
        answers.next().unwrap_or(Reply::Bool(false))
    } else {
        Reply::Array(answers.collect())
    })
}

/// The window path of BF.INFO: `Some(reply)` when the key holds a window filter. The five
/// fields keep their names and order: Capacity = distinct items per window, Size = memory in
/// bytes, Number of filters = layers of all kept generations, Number of items inserted =
/// items of the generations live now, Expansion rate (nil when non-scaling). `WINDOW` asks
/// for the window length in milliseconds.
pub fn info(ctx: &Context, key: &RedisKey, args: &[Arg]) -> Option<Reply> {
    let w = get(key)?;
    let n = |v: u64| Reply::Int(v.min(i64::MAX as u64) as i64);
    let all = [
        ("CAPACITY", "Capacity", n(w.capacity)),
        ("SIZE", "Size", n(w.mem_usage())),
        ("FILTERS", "Number of filters", n(w.layer_count())),
        (
            "ITEMS",
            "Number of items inserted",
            n(w.items_at(read_generation(ctx, w))),
        ),
        (
            "EXPANSION",
            "Expansion rate",
            if w.nonscaling {
                Reply::Null
            } else {
                n(u64::from(w.expansion))
            },
        ),
        ("WINDOW", "Window", n(w.window_ms)),
    ];
    let Some(wanted) = args.get(2) else {
        return Some(Reply::Map(
            all.into_iter().take(5).map(|(_, k, v)| (k, v)).collect(),
        ));
    };
    let Some((_, name, value)) = all
        .into_iter()
        .find(|(token, _, _)| is_keyword(wanted.as_slice(), token))
    else {
        return Some(Reply::Error("Invalid information value"));
    };
    Some(if ctx.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        Reply::Map(vec![(name, value)])
    } else {
        Reply::Array(vec![value])
    })
}

/// The window path of BF.CARD: items of the generations live now.
pub fn card(ctx: &Context, key: &RedisKey) -> Option<Reply> {
    let w = get(key)?;
    Some(Reply::Int(
        w.items_at(read_generation(ctx, w)).min(i64::MAX as u64) as i64,
    ))
}

/// The window path of BF.DEBUG: `size:<items live now>`, `window:<ms> generation:<g>`, then
/// each kept generation's layers as plain BF.DEBUG lines prefixed with `generation:<n> `.
pub fn debug(ctx: &Context, key: &RedisKey) -> Option<Reply> {
    let w = get(key)?;
    let mut lines = vec![
        format!("size:{}", w.items_at(read_generation(ctx, w))),
        format!("window:{} generation:{}", w.window_ms, w.generation),
    ];
    for (n, c) in &w.gens {
        lines.extend(
            debug_lines(c)
                .into_iter()
                .skip(1)
                .map(|l| format!("generation:{n} {l}")),
        );
    }
    Some(Reply::Array(
        lines
            .into_iter()
            .map(|l| Reply::Bulk(l.into_bytes()))
            .collect(),
    ))
}

// ---------------------------------------------------------------------------------------------
// SCANDUMP / LOADCHUNK

/// The window path of BF.SCANDUMP: `Some` (after replying) when the key holds a window filter.
/// Iterator 0 gives the window header, then the chunks of `window::scan_chunk` (addressed by
/// generation; `ERR window filter changed during SCANDUMP, …` when a write made the walk
/// inconsistent).
pub fn scandump(ctx: &Context, key: &RedisKey, iter_arg: &Arg) -> Option<Reply> {
    let w = get(key)?;
    let Some(iter) = parse_i64(iter_arg.as_slice()) else {
        return Some(Reply::Error("Second argument must be numeric"));
    };
    if iter == 0 {
        send_array_header(ctx, 2);
        send(ctx, &Reply::Int(1));
        send_bulk(ctx, &window::encode_header(w));
        return Some(Reply::Sent);
    }
    // Chunks are addressed by generation: a walk that a write has made inconsistent answers
    // an error (start again from 0), never a shifted chunk.
    match window::scan_chunk(w, iter) {
        Ok((next, data)) => {
            send_array_header(ctx, 2);
            send(ctx, &Reply::Int(next));
            send_bulk(ctx, data);
            Some(Reply::Sent)
        }
        Err(e) => Some(crate::module::commands::dump::chunk_error(e)),
    }
}

/// The window path of BF.LOADCHUNK: `Some(reply)` when the key holds a window filter (a chunk)
/// or is empty and iterator 1 brings a window header. Replicated verbatim.
pub fn loadchunk(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    iter: i64,
    data: &[u8],
) -> Option<Reply> {
    let r = if let Some(w) = get_mut(key) {
        window::apply_chunk(w, iter, data).map_err(crate::module::commands::dump::chunk_error)
    } else if key.is_empty() && iter == 1 && window::is_window_header(data) {
        if !internal(ctx) && !plausible_generation(ctx, data) {
            return Some(crate::module::commands::dump::chunk_error(
                ChunkError::BadData,
            ));
        }
        match window::decode_header(data, new_array_budget(ctx, 0)) {
            Ok(w) => store(key, w, "ERR received bad data"),
            Err(e) => {
                if e == ChunkError::OutOfMemory {
                    abort_diverging(ctx, "BF.LOADCHUNK", key_name.as_slice(), 0);
                }
                Err(crate::module::commands::dump::chunk_error(e))
            }
        }
    } else {
        return None;
    };
    Some(match r {
        Ok(()) => {
            ctx.replicate_verbatim();
            crate::module::commands::notify(ctx, c"bf.loadchunk", key_name);
            Reply::Ok
        }
        Err(e) => e,
    })
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

// ---------------------------------------------------------------------------------------------
// Type callbacks (none may unwind into Redis)

unsafe extern "C" fn rdb_load(rdb: *mut raw::RedisModuleIO, encver: c_int) -> *mut c_void {
    let loaded = catch_unwind(AssertUnwindSafe(|| {
        window::load(&mut IoReader(rdb), encver)
    }));
    match loaded {
        Ok(Ok(w)) => {
            count(&w, 1);
            Box::into_raw(Box::new(w)).cast()
        }
        Ok(Err(DecodeError)) | Err(_) => {
            crate::module::bloom_type::abort_if_load_must_apply(rdb, "bf-window");
            std::ptr::null_mut()
        }
    }
}

unsafe extern "C" fn rdb_save(rdb: *mut raw::RedisModuleIO, value: *mut c_void) {
    // SAFETY: Redis passes a value this module created (a boxed Window), alive for the call.
    let w = unsafe { &*value.cast::<Window>() };
    let _ = catch_unwind(AssertUnwindSafe(|| window::save(w, &mut IoWriter(rdb))));
}

unsafe extern "C" fn aof_rewrite(
    aof: *mut raw::RedisModuleIO,
    key: *mut raw::RedisModuleString,
    value: *mut c_void,
) {
    // SAFETY: as in rdb_save.
    let w = unsafe { &*value.cast::<Window>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        crate::module::bloom_type::emit_scandump_walk(aof, key, &window::encode_header(w), |i| {
            window::chunk_at(w, i)
        })
    }));
}

unsafe extern "C" fn mem_usage(value: *const c_void) -> usize {
    // SAFETY: as in rdb_save.
    let w = unsafe { &*value.cast::<Window>() };
    w.mem_usage() as usize
}

unsafe extern "C" fn free(value: *mut c_void) {
    if !value.is_null() {
        // SAFETY: the value was created with Box::into_raw(Box<Window>) by this module and
        // Redis frees it exactly once.
        let w = unsafe { Box::from_raw(value.cast::<Window>()) };
        count(&w, -1);
        let _ = catch_unwind(AssertUnwindSafe(|| free_elsewhere(w.gens)));
    }
}

/// Work to free a window filter in Redis' units: as for a plain filter
/// (`bloom_type::free_effort_of`), summed over its generations, capped at Redis' lazyfree
/// threshold, so Redis frees it synchronously (bounded, see `free_elsewhere`).
unsafe extern "C" fn free_effort(_key: *mut raw::RedisModuleString, value: *const c_void) -> usize {
    use crate::module::bloom_type::{free_effort_of, LAZYFREE_THRESHOLD};
    // SAFETY: as in rdb_save.
    let w = unsafe { &*value.cast::<Window>() };
    let effort = w.gens.iter().map(|(_, c)| free_effort_of(c)).sum::<usize>();
    effort.clamp(1, LAZYFREE_THRESHOLD)
}

unsafe extern "C" fn copy(
    _from: *mut raw::RedisModuleString,
    _to: *mut raw::RedisModuleString,
    value: *const c_void,
) -> *mut c_void {
    // SAFETY: as in rdb_save.
    let w = unsafe { &*value.cast::<Window>() };
    let cloned = catch_unwind(AssertUnwindSafe(|| try_clone(w)));
    match cloned {
        Ok(Some(c)) => {
            count(&c, 1);
            Box::into_raw(Box::new(c)).cast()
        }
        // Null makes a client's COPY fail with an error instead of aborting on allocation
        // failure; a replica's or a replay's aborts rather than diverge.
        _ => {
            crate::module::memory::abort_copy_if_must_apply("bf-window");
            std::ptr::null_mut()
        }
    }
}

/// A deep copy whose bit arrays are allocated fallibly.
fn try_clone(w: &Window) -> Option<Window> {
    let mut gens = Vec::new();
    gens.try_reserve_exact(w.gens.len()).ok()?;
    for (n, c) in &w.gens {
        gens.push((*n, crate::module::bloom_type::try_clone(c)?));
    }
    Some(Window {
        window_ms: w.window_ms,
        capacity: w.capacity,
        error: w.error,
        expansion: w.expansion,
        nonscaling: w.nonscaling,
        generation: w.generation,
        gens,
        offset_chunks: w.offset_chunks,
    })
}

unsafe extern "C" fn digest(md: *mut raw::RedisModuleDigest, value: *mut c_void) {
    // SAFETY: as in rdb_save.
    let w = unsafe { &*value.cast::<Window>() };
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let add = |b: &[u8]| {
            // SAFETY: `md` is the live digest of this callback; `b` outlives the call.
            unsafe {
                raw::RedisModule_DigestAddStringBuffer.unwrap()(
                    md,
                    b.as_ptr().cast::<c_char>(),
                    b.len(),
                )
            }
        };
        add(&window::encode_header(w));
        for l in w.layers() {
            add(&l.data);
        }
        // SAFETY: as above.
        unsafe { raw::RedisModule_DigestEndSequence.unwrap()(md) };
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&[u8]> {
        s.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn reserve_options() {
        let (p, g) = parse_reserve(&split("0.01 100 WINDOW 5000 EXPANSION 4"), false).unwrap();
        assert_eq!(
            (p.window_ms, p.capacity, p.expansion, p.nonscaling, g),
            (5000, 100, 4, false, None)
        );
        let (p, _) = parse_reserve(&split("0.01 100 nonscaling window 1"), false).unwrap();
        assert!(p.nonscaling);
        assert_eq!(
            parse_reserve(&split("0.01 100 WINDOW 0"), false).unwrap_err(),
            Reply::Error("ERR bad window")
        );
        assert_eq!(
            parse_reserve(&split("0.01 100 WINDOW"), false).unwrap_err(),
            Reply::Error("ERR no window")
        );
        assert_eq!(
            parse_reserve(&split("0.01 100 WINDOW 10 NONSCALING EXPANSION 2"), false).unwrap_err(),
            Reply::Error("Nonscaling filters cannot expand")
        );
        assert_eq!(
            parse_reserve(&split("0.01 100 WINDOW 10 GENERATION 5"), false).unwrap_err(),
            Reply::Error("ERR unknown argument")
        );
        let (_, g) = parse_reserve(&split("0.01 100 WINDOW 10 GENERATION 5"), true).unwrap();
        assert_eq!(g, Some(5));
        for repeated in [
            "0.01 100 WINDOW 10 WINDOW 20",
            "0.01 100 WINDOW 10 EXPANSION 2 EXPANSION 3",
            "0.01 100 NONSCALING WINDOW 10 nonscaling",
        ] {
            assert_eq!(
                parse_reserve(&split(repeated), false).unwrap_err(),
                Reply::WrongArity,
                "{repeated}"
            );
        }
    }

    #[test]
    fn insert_options() {
        assert!(insert_mentions_window(&split(
            "CAPACITY 10 WINDOW 5 ITEMS a"
        )));
        assert!(!insert_mentions_window(&split("CAPACITY WINDOW ITEMS a")));
        assert!(!insert_mentions_window(&split("ITEMS WINDOW")));
        let (a, first) = parse_insert(&split("WINDOW 1000 ERROR 0.001 ITEMS a b"), false).unwrap();
        assert_eq!(
            (a.params.window_ms, a.params.error, first),
            (1000, 0.001, 5)
        );
        assert_eq!(
            parse_insert(&split("WINDOW 1000 ITEMS"), false).unwrap_err(),
            Reply::WrongArity
        );
        assert_eq!(
            parse_insert(&split("WINDOW x ITEMS a"), false).unwrap_err(),
            Reply::Error("Bad window")
        );
        assert_eq!(
            parse_insert(&split("NOCREATE GENERATION 3 ITEMS"), false).unwrap_err(),
            Reply::Error("Unknown argument received")
        );
        let (a, first) = parse_insert(&split("NOCREATE GENERATION 3 ITEMS"), true).unwrap();
        assert_eq!((a.generation, a.nocreate, first), (Some(3), true, 4));
        for repeated in [
            "WINDOW 1000 WINDOW 5 ITEMS a",
            "WINDOW 1000 CAPACITY 5 window 1000 ITEMS a",
            "NOCREATE GENERATION 3 GENERATION 4 ITEMS a",
        ] {
            assert_eq!(
                parse_insert(&split(repeated), true).unwrap_err(),
                Reply::WrongArity,
                "{repeated}"
            );
        }
    }
}
