//! `CF.ADD key item`, `CF.ADDNX key item`, `CF.INSERT key [CAPACITY c] [NOCREATE] ITEMS item …`
//! and `CF.INSERTNX` (same options); replication as for the Bloom commands
//! (`docs/commands.md` ("Replication and AOF")), with the cuckoo forms below.
//!
//! As RedisBloom: a missing key is created with the `cf` defaults (`config::cf_defaults`,
//! CAPACITY replacing the initial size); CF.INSERT's options are told apart by their first
//! letter (`c` CAPACITY, `n` NOCREATE, `i` ITEMS, anything else `Unknown argument received`);
//! a filter that already has `max_expansions` sub-filters refuses the whole command
//! (`Maximum expansions reached`, checked once, so one command may grow it further). A full
//! filter answers `Filter is full` to CF.ADD / CF.ADDNX and `-1` per item to the INSERTs (RESP3
//! `#f` for CF.INSERT; CF.INSERTNX answers integers in both protocols); a growth the memory
//! budget or the allocator refuses answers `ERR Insufficient memory` / `-1`.
//!
//! Replication: a filter created here is replicated first as an explicit `CF.RESERVE` (its
//! parameters came from this server's configs); then the command as sent when no item was
//! refused, or `CF.INSERT[NX] key ITEMS <the items not refused>` when some were (a replica
//! must not add what the primary refused for lack of memory); nothing when nothing was stored.
//! From the primary or the AOF, max expansions and the memory budget do not apply.

use super::common::LOOKUPS_IN_FLIGHT;
use super::common::{
    self, create, prefetch, replicate_reserve, texts, worth_prefetching, Fail, Params,
};
use crate::bloom::cuckoo::{Cuckoo, Insert, Lookup as Item};
use crate::module::args::{parse_i64, Arg, ArgBytes};
use crate::module::config::{self, CfDefaults};
use crate::module::cuckoo::cuckoo_type::lookup_mut;
use crate::module::data_type::Lookup;
use crate::module::memory::{abort_diverging, budget_for};
use crate::module::notify::notify;
use crate::module::replicate::replicate_strings;
use crate::module::reply::{send_array_header, send_bool, Reply, WRONGTYPE};
use crate::module::server;
use crate::module::stats;
use redis_module::{raw, Context, RedisString};
use std::ffi::CStr;

/// How the command was called.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Options {
    /// ADDNX / INSERTNX: store only items not (seemingly) present.
    nx: bool,
    /// INSERT / INSERTNX: an array reply, one element per item.
    multi: bool,
    /// False with NOCREATE: a missing key is `ERR not found`.
    create: bool,
    /// The capacity of a filter created here (`CAPACITY`, else the configured initial size);
    /// `None` with the configured one.
    capacity: Option<i64>,
}

/// CF.ADD: stores one copy of the item; 1 (RESP3 `#t`). Errors: `Filter is full`,
/// `Maximum expansions reached`, `ERR Insufficient memory`, WRONGTYPE, creation errors.
pub fn cf_add(ctx: &Context, args: &[Arg]) -> Reply {
    add_one(ctx, args, false)
}

/// CF.ADDNX: as CF.ADD, but 0 (RESP3 `#f`) without storing when the item may be there.
pub fn cf_addnx(ctx: &Context, args: &[Arg]) -> Reply {
    add_one(ctx, args, true)
}

fn add_one(ctx: &Context, args: &[Arg], nx: bool) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let o = Options {
        nx,
        multi: false,
        create: true,
        capacity: None,
    };
    add(ctx, args, &args[2..], &o, &config::cf_defaults())
}

/// CF.INSERT: stores each item; an array of 1 per item stored, -1 per item refused (RESP3
/// `#t` / `#f`).
pub fn cf_insert(ctx: &Context, args: &[Arg]) -> Reply {
    insert(ctx, args, false)
}

/// CF.INSERTNX: as CF.INSERT but items that may be present answer 0 and are not stored;
/// integers in RESP3 too.
pub fn cf_insertnx(ctx: &Context, args: &[Arg]) -> Reply {
    insert(ctx, args, true)
}

fn insert(ctx: &Context, args: &[Arg], nx: bool) -> Reply {
    if args.len() < 4 {
        return Reply::WrongArity;
    }
    let redis8 = server::is_redis8();
    let d = config::cf_defaults();
    let (o, first) = match parse_insert(&args[2..], redis8, || common::internal(ctx), &d, nx) {
        Ok(r) => r,
        Err(f) => return f.reply(ctx),
    };
    add(ctx, args, &args[2 + first..], &o, &d)
}

/// Parses CF.INSERT's arguments after the key: returns the options and the index of the first
/// item. `internal` (asked only when a CAPACITY needs checking): from the primary or the AOF,
/// where the capacity is not checked against this server's bucket size or RedisBloom 8's cap.
fn parse_insert<A: ArgBytes>(
    args: &[A],
    redis8: bool,
    internal: impl Fn() -> bool,
    d: &CfDefaults,
    nx: bool,
) -> Result<(Options, usize), Fail> {
    let mut o = Options {
        nx,
        multi: true,
        create: true,
        capacity: None,
    };
    let mut i = 0;
    let first = loop {
        let Some(tok) = args.get(i).map(ArgBytes::bytes) else {
            return Err(Fail::Arity);
        };
        match tok.first().map(u8::to_ascii_lowercase) {
            Some(b'c') => {
                let v = args.get(i + 1).ok_or(Fail::Arity)?;
                let c = parse_i64(v.bytes()).ok_or(Fail::Text("Bad capacity"))?;
                let too_small = c < 2 * i64::from(d.bucket_size);
                let too_big = redis8 && c > common::REDIS8_MAX_CAPACITY;
                if (too_small || too_big) && !internal() {
                    return Err(Fail::Text(texts(redis8).insert_capacity));
                }
                o.capacity = Some(c);
                i += 2;
            }
            Some(b'i') => break i + 1,
            Some(b'n') => {
                o.create = false;
                i += 1;
            }
            _ => return Err(Fail::Text("Unknown argument received")),
        }
    };
    if first >= args.len() {
        return Err(Fail::Arity);
    }
    Ok((o, first))
}

/// The add path of all four commands: `items` are the items to store.
fn add(ctx: &Context, args: &[Arg], items: &[Arg], o: &Options, d: &CfDefaults) -> Reply {
    let key_name = &args[1];
    let key = ctx.open_key_writable(&key_name.string());
    let mut created = None;
    let cf = match lookup_mut(&key) {
        Lookup::Found(cf) => cf,
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing if !o.create => return Reply::Error("ERR not found"),
        Lookup::Missing => {
            let capacity = o
                .capacity
                .unwrap_or(d.initial_size.min(i64::MAX as u64) as i64);
            let p = Params {
                capacity: u64::try_from(capacity).unwrap_or(0),
                bucket_size: d.bucket_size,
                max_iterations: d.max_iterations,
                expansion: d.expansion,
            };
            if let Err(e) = create(ctx, &key, key_name, command_name(o), &p) {
                return e;
            }
            created = Some(p);
            match lookup_mut(&key) {
                Lookup::Found(cf) => cf,
                _ => return Reply::Error("ERR Could not create filter"),
            }
        }
    };
    if let Some(p) = &created {
        replicate_reserve(ctx, key_name, p.capacity.to_string().as_bytes(), p);
        notify(ctx, c"cf.reserve", key_name);
    }
    if cf.filters.len() as u64 >= d.max_expansions && !common::internal(ctx) {
        return Reply::Error("Maximum expansions reached");
    }
    let before = stats::CuckooFootprint::of(cf);
    let mut grower = Grower::default();
    if !o.multi {
        let r = grower.insert(ctx, cf, &Item::of(items[0].as_slice()), o.nx, key_name, o);
        stats::cuckoo_changed(before, cf);
        return match r {
            Insert::Inserted => {
                ctx.replicate_verbatim();
                notify(ctx, c"cf.add", key_name);
                Reply::Bool(true)
            }
            Insert::Exists => Reply::Bool(false),
            Insert::Full => Reply::Error("Filter is full"),
            Insert::CannotGrow => Reply::Error("ERR Insufficient memory"),
        };
    }
    send_array_header(ctx, items.len());
    // RESP3 changes only CF.INSERT's refusals (`#f` for -1): read once, when needed.
    let mut resp3 = None;
    let mut stored = 0usize;
    // The items to replicate once one was refused: those before it and every later one not
    // refused (None while nothing was refused, the command is then replicated as sent).
    let mut kept: Option<Vec<*mut raw::RedisModuleString>> = None;
    // On a big filter each item is hashed and its buckets prefetched LOOKUPS_IN_FLIGHT items
    // before it is inserted (a ring of prepared lookups), so that the cache misses of that
    // many items overlap; on a small one (in cache) item by item.
    let prefetching = worth_prefetching(cf);
    let mut ring = [Item::from_hash(0); LOOKUPS_IN_FLIGHT];
    if prefetching {
        for (l, item) in ring.iter_mut().zip(items) {
            *l = Item::of(item.as_slice());
            prefetch(cf, l, !o.nx);
        }
    }
    for (n, item) in items.iter().enumerate() {
        let l = &if prefetching {
            let slot = &mut ring[n % LOOKUPS_IN_FLIGHT];
            let l = *slot;
            if let Some(ahead) = items.get(n + LOOKUPS_IN_FLIGHT) {
                *slot = Item::of(ahead.as_slice());
                prefetch(cf, slot, !o.nx);
            }
            l
        } else {
            Item::of(item.as_slice())
        };
        let r = grower.insert(ctx, cf, l, o.nx, key_name, o);
        match r {
            Insert::Inserted | Insert::Exists => {
                let inserted = r == Insert::Inserted;
                stored += usize::from(inserted);
                if o.nx {
                    send_int(ctx, i64::from(inserted));
                } else {
                    send_bool(ctx, true);
                }
                if let Some(k) = kept.as_mut() {
                    k.push(item.inner);
                }
            }
            Insert::Full | Insert::CannotGrow => {
                let r3 = *resp3.get_or_insert_with(|| common::is_resp3(ctx));
                if r3 && !o.nx {
                    send_bool(ctx, false);
                } else {
                    send_int(ctx, -1);
                }
                if kept.is_none() {
                    kept = Some(items[..n].iter().map(|a| a.inner).collect());
                }
            }
        }
    }
    stats::cuckoo_changed(before, cf);
    if stored > 0 {
        match kept {
            None => ctx.replicate_verbatim(),
            Some(k) => replicate_kept(ctx, key_name, o.nx, &k),
        }
        notify(ctx, c"cf.add", key_name);
    }
    Reply::Sent
}

/// The command's name, for the log line of a replicated creation that could not be applied.
fn command_name(o: &Options) -> &'static str {
    match (o.multi, o.nx) {
        (false, false) => "CF.ADD",
        (false, true) => "CF.ADDNX",
        (true, false) => "CF.INSERT",
        (true, true) => "CF.INSERTNX",
    }
}

/// Replicates `CF.INSERT[NX] key ITEMS <items>` (the client's strings, shared).
fn replicate_kept(ctx: &Context, key: &Arg, nx: bool, items: &[*mut raw::RedisModuleString]) {
    let command: &CStr = if nx { c"CF.INSERTNX" } else { c"CF.INSERT" };
    let word = RedisString::create_from_slice(std::ptr::null_mut(), b"ITEMS");
    // Redis takes its own reference to each string it keeps; `word` is freed when it drops.
    replicate_strings(ctx, command, &[&[key.inner, word.inner], items]);
}

/// Writes an integer element.
fn send_int(ctx: &Context, v: i64) {
    // SAFETY: live context of the running command.
    unsafe {
        raw::RedisModule_ReplyWithLongLong.unwrap()(ctx.get_raw(), v);
    }
}

/// Inserts with the memory budget asked for only when a growth needs it: each item is first
/// tried with no room for growth (nothing changes when that is refused: the core undoes its
/// evictions), and only an item that needs a new sub-filter reads the budget
/// (`memory::budget_for`) and tries again. A refused growth is remembered for the rest of the
/// command (until the filter changes shape), so its later items do not read it again.
#[derive(Default)]
struct Grower {
    /// Sub-filter count at which the budget refused a growth.
    refused_at: Option<usize>,
}

impl Grower {
    fn insert(
        &mut self,
        ctx: &Context,
        cf: &mut Cuckoo,
        item: &Item,
        nx: bool,
        key_name: &Arg,
        o: &Options,
    ) -> Insert {
        let r = cf.insert_lookup(item, nx, 0);
        if r != Insert::CannotGrow {
            return r;
        }
        let Some(needed) = cf.next_sub_filter_bytes() else {
            // A growth past the limits (56-bit bucket count, 65 535 sub-filters).
            return r;
        };
        if self.refused_at == Some(cf.filters.len()) {
            return r;
        }
        let budget = budget_for(ctx, cf.table_bytes(), needed);
        let r = cf.insert_lookup(item, nx, budget);
        if r == Insert::CannotGrow {
            // A write that must apply got no budget limit: the allocation itself failed.
            abort_diverging(ctx, command_name(o), key_name.as_slice(), needed);
            self.refused_at = Some(cf.filters.len());
        }
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> CfDefaults {
        CfDefaults::REDISBLOOM
    }

    fn p(line: &str, redis8: bool) -> Result<(Options, usize), Fail> {
        let parts: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse_insert(&parts, redis8, || false, &defaults(), false)
    }

    #[test]
    fn insert_options_by_first_letter() {
        let (o, first) = p("CAP 100 NOPE I a b", false).unwrap();
        assert_eq!((o.capacity, o.create, first), (Some(100), false, 4));
        let (o, first) = p("Cxyz 5 CAPACITY 200 items a", false).unwrap();
        assert_eq!((o.capacity, first), (Some(200), 5));
        let (_, first) = p("ITEMS a ITEMS b", false).unwrap();
        assert_eq!(first, 1);
        for (line, redis8, want) in [
            ("ITEMS", false, Fail::Arity),
            ("CAPACITY", false, Fail::Arity),
            ("CAPACITY 100", false, Fail::Arity),
            ("NOCREATE", false, Fail::Arity),
            (
                "FOO ITEMS a",
                false,
                Fail::Text("Unknown argument received"),
            ),
            (" ITEMS a", false, Fail::Text("Unknown argument received")),
            ("CAPACITY abc ITEMS a", false, Fail::Text("Bad capacity")),
            (
                "CAPACITY 3 ITEMS a",
                false,
                Fail::Text(common::TEXTS_2_8.insert_capacity),
            ),
            (
                "CAPACITY -1 ITEMS a",
                false,
                Fail::Text(common::TEXTS_2_8.insert_capacity),
            ),
            (
                "CAPACITY 1073741825 ITEMS a",
                true,
                Fail::Text(common::TEXTS_8.insert_capacity),
            ),
        ] {
            assert_eq!(p(line, redis8).unwrap_err(), want, "{line}");
        }
        assert!(p("CAPACITY 1073741825 ITEMS a", false).is_ok());
        assert!(p("CAPACITY 4 ITEMS a", true).is_ok());
        // From the primary or the AOF the capacity is not checked against local limits.
        let parts: Vec<&[u8]> = "CAPACITY 3 ITEMS a".split(' ').map(str::as_bytes).collect();
        assert!(parse_insert(&parts, true, || true, &defaults(), true).is_ok());
    }
}
