//! `BF.ADD key item`, `BF.MADD key item [item …]` and
//! `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item …`
//! (`docs/commands.md` ("BF.ADD", "BF.INSERT"); `docs/commands.md` ("Replication and AOF") for replication, `docs/commands.md` ("Argument handling") for keyword matching).

use super::create_filter;
use crate::bloom::{AddError, AddOutcome};
use crate::module::args::{is_keyword, parse_f64, parse_i64};
use crate::module::bloom_type::{lookup_mut, Lookup};
use crate::module::config;
use crate::module::memory::new_array_budget;
use crate::module::reply::{Reply, NOT_FOUND, WRONGTYPE};
use crate::module::stats::{self, Footprint};
use redis_module::{Context, NotifyEvent, RedisString};

/// How a missing key is created.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Creation {
    capacity: u64,
    error: f64,
    expansion: u32,
    nonscaling: bool,
    allowed: bool,
}

impl Creation {
    fn defaults() -> Creation {
        let expansion = config::expansion();
        Creation {
            capacity: config::initial_size(),
            error: config::error_rate(),
            // A non-scaling filter still stores the default expansion (RedisBloom does).
            expansion: expansion.unwrap_or(crate::bloom::chain::DEFAULT_EXPANSION),
            nonscaling: expansion.is_none(),
            allowed: true,
        }
    }
}

/// Reply shape: BF.ADD answers one value, BF.MADD / BF.INSERT an array.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Single,
    Array,
}

/// BF.ADD: adds one item, creating a default filter when the key is missing.
/// Replies 1 if the item was new, 0 if it may have been added before (RESP3: booleans).
pub fn bf_add(ctx: &Context, args: &[RedisString]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    add_items(
        ctx,
        &args[1],
        &args[2..],
        Creation::defaults(),
        Shape::Single,
    )
}

/// BF.MADD: adds items; array reply, stopping after a `non scaling filter is full` error.
pub fn bf_madd(ctx: &Context, args: &[RedisString]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    add_items(
        ctx,
        &args[1],
        &args[2..],
        Creation::defaults(),
        Shape::Array,
    )
}

/// Parses BF.INSERT's options (everything between the key and the first ITEMS, keywords
/// matched as whole words in any order and case). Returns the creation parameters and the
/// index (into `args`, which excludes the command name and key) of the first item.
fn parse_insert(args: &[&[u8]]) -> Result<(Creation, usize), Reply> {
    let mut c = Creation::defaults();
    let mut i = 0;
    let mut expansion: i64 = i64::from(c.expansion);
    let mut capacity: i64 = c.capacity as i64;
    loop {
        let Some(tok) = args.get(i) else {
            return Err(Reply::WrongArity);
        };
        let value = args.get(i + 1);
        if is_keyword(tok, "ITEMS") {
            i += 1;
            break;
        } else if is_keyword(tok, "CAPACITY") {
            let v = value.ok_or(Reply::WrongArity)?;
            capacity = parse_i64(v).ok_or(Reply::Error("Bad capacity"))?;
            i += 2;
        } else if is_keyword(tok, "ERROR") {
            let v = value.ok_or(Reply::WrongArity)?;
            c.error = parse_f64(v).ok_or(Reply::Error("Bad error rate"))?;
            i += 2;
        } else if is_keyword(tok, "EXPANSION") {
            let v = value.ok_or(Reply::WrongArity)?;
            expansion = parse_i64(v).ok_or(Reply::Error("Bad expansion"))?;
            i += 2;
        } else if is_keyword(tok, "NOCREATE") {
            c.allowed = false;
            i += 1;
        } else if is_keyword(tok, "NONSCALING") {
            c.nonscaling = true;
            i += 1;
        } else {
            return Err(Reply::Error("Unknown argument received"));
        }
    }
    if i >= args.len() {
        return Err(Reply::WrongArity);
    }
    if !(c.error > 0.0 && c.error < 1.0) || capacity < 1 || expansion < 1 {
        return Err(Reply::Error("Bad argument received"));
    }
    c.capacity = capacity as u64;
    c.expansion = u32::try_from(expansion).map_err(|_| Reply::Error("Bad argument received"))?;
    Ok((c, i))
}

/// BF.INSERT: adds items, creating the filter with the given parameters when missing
/// (unless NOCREATE: `ERR not found`). Array reply as BF.MADD.
pub fn bf_insert(ctx: &Context, args: &[RedisString]) -> Reply {
    if args.len() < 4 {
        return Reply::WrongArity;
    }
    let raw: Vec<&[u8]> = args[2..].iter().map(|a| a.as_slice()).collect();
    match parse_insert(&raw) {
        Ok((creation, first)) => {
            add_items(ctx, &args[1], &args[2 + first..], creation, Shape::Array)
        }
        Err(e) => e,
    }
}

/// The add loop shared by BF.ADD, BF.MADD and BF.INSERT.
fn add_items(
    ctx: &Context,
    key_name: &RedisString,
    items: &[RedisString],
    creation: Creation,
    shape: Shape,
) -> Reply {
    let key = ctx.open_key_writable(key_name);
    let created = match lookup_mut(&key) {
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Found(_) => false,
        Lookup::Missing => {
            if !creation.allowed {
                return Reply::Error(NOT_FOUND);
            }
            if let Err(e) = create_filter(
                ctx,
                &key,
                creation.capacity,
                creation.error,
                creation.expansion,
                creation.nonscaling,
            ) {
                return e;
            }
            true
        }
    };
    let Lookup::Found(chain) = lookup_mut(&key) else {
        return Reply::Error(WRONGTYPE);
    };
    let before = Footprint::of(chain);
    let hashes: Vec<_> = items.iter().map(|i| chain.hash(i.as_slice())).collect();
    let mut replies = Vec::with_capacity(items.len());
    let mut added: Vec<&RedisString> = Vec::new();
    chain.add_many(
        &hashes,
        |c| new_array_budget(ctx, c.bit_array_bytes()),
        |i, r| {
            replies.push(match r {
                Ok(AddOutcome::Added) => {
                    added.push(&items[i]);
                    Reply::Bool(true)
                }
                Ok(AddOutcome::Exists) => Reply::Bool(false),
                Err(AddError::Full) => Reply::Error("ERR non scaling filter is full"),
                Err(AddError::CannotGrow) => Reply::Error("ERR problem inserting into filter"),
            })
        },
    );
    stats::filter_changed(before, chain);
    // Replicas and the AOF get exactly the items that were added (`docs/commands.md` ("Replication and AOF")): items that
    // were already present change nothing, and items refused here (a full filter, a growth
    // over a memory limit) must not be added by a replica or a replay that is not limited.
    // Starting from the same state, the same items give the same bits.
    if created {
        // A new filter always takes its first item; the fallback only keeps the command valid.
        let all: Vec<&RedisString> = items.iter().collect();
        let replicated = if added.is_empty() { &all } else { &added };
        replicate_as_insert(ctx, key_name, &creation, replicated);
        ctx.notify_keyspace_event(NotifyEvent::MODULE, "bf.reserve", key_name);
    } else if added.len() == items.len() {
        ctx.replicate_verbatim();
    } else if !added.is_empty() {
        let mut argv: Vec<&[u8]> = vec![key_name.as_slice()];
        argv.extend(added.iter().map(|i| i.as_slice()));
        ctx.replicate("BF.MADD", argv.as_slice());
    }
    if !added.is_empty() {
        ctx.notify_keyspace_event(NotifyEvent::MODULE, "bf.add", key_name);
    }
    match shape {
        Shape::Single => replies.pop().unwrap_or(Reply::Bool(false)),
        Shape::Array => Reply::Array(replies),
    }
}

/// Replicates an implicit creation as an explicit
/// `BF.INSERT key CAPACITY c ERROR e EXPANSION x [NONSCALING] ITEMS …` (`docs/commands.md` ("Replication and AOF")), so
/// replicas and AOF replays do not depend on their own defaults.
fn replicate_as_insert(ctx: &Context, key: &RedisString, c: &Creation, items: &[&RedisString]) {
    let capacity = c.capacity.to_string();
    // `{}` prints the shortest text that parses back to the same f64.
    let error = format!("{}", c.error);
    let expansion = c.expansion.to_string();
    let mut argv: Vec<&[u8]> = vec![
        key.as_slice(),
        b"CAPACITY",
        capacity.as_bytes(),
        b"ERROR",
        error.as_bytes(),
    ];
    // The expansion is stored even for non-scaling filters (it is in the header and RDB value),
    // so it is always spelled out; BF.INSERT accepts it together with NONSCALING.
    argv.push(b"EXPANSION");
    argv.push(expansion.as_bytes());
    if c.nonscaling {
        argv.push(b"NONSCALING");
    }
    argv.push(b"ITEMS");
    argv.extend(items.iter().map(|i| i.as_slice()));
    ctx.replicate("BF.INSERT", argv.as_slice());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<(Creation, usize), Reply> {
        let parts: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
        parse_insert(&parts)
    }

    #[test]
    fn insert_options() {
        let (c, first) = p("error 0.001 CAPACITY 1000 expansion 4 NONSCALING items a b").unwrap();
        assert_eq!(
            (c.capacity, c.error, c.expansion, c.nonscaling, first),
            (1000, 0.001, 4, true, 8)
        );
        let (c, first) = p("ITEMS NOCREATE ITEMS").unwrap();
        assert!(c.allowed);
        assert_eq!(first, 1);
        assert!(!p("NOCREATE ITEMS a").unwrap().0.allowed);
        assert_eq!(p("ITEMS").unwrap_err(), Reply::WrongArity);
        assert_eq!(p("CAPACITY 10").unwrap_err(), Reply::WrongArity);
        assert_eq!(p("CAPACITY").unwrap_err(), Reply::WrongArity);
        assert_eq!(
            p("CAPACITY x ITEMS a").unwrap_err(),
            Reply::Error("Bad capacity")
        );
        assert_eq!(
            p("ERROR x ITEMS a").unwrap_err(),
            Reply::Error("Bad error rate")
        );
        assert_eq!(
            p("EXPANSION x ITEMS a").unwrap_err(),
            Reply::Error("Bad expansion")
        );
        assert_eq!(
            p("e 3 ITEMS a").unwrap_err(),
            Reply::Error("Unknown argument received")
        );
        assert_eq!(
            p("ERROR 1 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
        assert_eq!(
            p("CAPACITY 0 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
        assert_eq!(
            p("EXPANSION 0 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
    }
}
