//! `BF.ADD key item`, `BF.MADD key item [item …]` and
//! `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] [WINDOW ms] ITEMS item …`
//! (`docs/commands.md` ("BF.ADD", "BF.INSERT"); `docs/commands.md` ("Replication and AOF") for replication, `docs/commands.md` ("Argument handling") for keyword matching).

use super::notify;
use crate::module::args::{is_keyword, parse_f64, parse_i64, Arg, ArgBytes};
use crate::module::bloom::bloom_type;
use crate::module::bloom::filter::shared::{replicate, Added, Creation};
use crate::module::bloom::filter::{open_mut, plain, window, FilterMut};
use crate::module::data_type::Lookup;
use crate::module::reply::{Reply, NOT_FOUND, WRONGTYPE};
use crate::module::{config, server};
use redis_module::key::RedisKeyWritable;
use redis_module::Context;

/// BF.ADD: adds one item, creating a default filter when the key is missing.
/// Replies 1 if the item was new, 0 if it may have been added before (RESP3: booleans).
///
/// The single-item path: the key is opened once, and no batch machinery runs. On an existing
/// plain filter nothing is allocated (the item is hashed and added in place); on a missing key
/// the filter is created and its creation replicated as `BF.INSERT`. Replies, replication and
/// keyspace events are the same as BF.MADD gives for one item.
pub fn bf_add(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let (key_name, item) = (&args[1], &args[2]);
    let key = ctx.open_key_writable(&key_name.string());
    let (added, created) = match open_mut(&key) {
        Lookup::Found(mut filter) => (filter.add_one(ctx, key_name, &args[2..]), false),
        Lookup::Missing => match plain::add_to_new(ctx, &key, key_name, item) {
            Ok(added) => (added, true),
            Err(e) => return e,
        },
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
    };
    finish(ctx, key_name, added, created)
}

/// Replicates what an add did and fires its keyspace events (`bf.reserve` for a filter it
/// created, `bf.add` when an item changed the filter), once; returns its reply.
fn finish(ctx: &Context, key_name: &Arg, added: Added, created: bool) -> Reply {
    replicate(ctx, key_name, added.replication);
    if created {
        notify(ctx, c"bf.reserve", key_name);
    }
    if added.changed {
        notify(ctx, c"bf.add", key_name);
    }
    added.reply
}

/// BF.MADD: adds items; array reply, stopping after a `non scaling filter is full` error.
pub fn bf_madd(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key_writable(&args[1].string());
    add_items(
        ctx,
        &key,
        &args[1],
        &args[2..],
        &Creation::defaults_in(ctx),
        "BF.MADD",
    )
}

/// True when BF.INSERT's options (before ITEMS) name WINDOW or GENERATION: they may then be
/// fewer than a plain BF.INSERT needs (a replicated advance carries no item).
fn insert_mentions_window<A: ArgBytes>(args: &[A]) -> bool {
    let mut i = 0;
    while let Some(tok) = args.get(i).map(ArgBytes::bytes) {
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

/// Parses BF.INSERT's options (everything between the key and the first ITEMS, keywords
/// matched as whole words in any order and case; `internal`: the command comes from the
/// primary or the AOF and may carry `GENERATION`). Returns the creation parameters and the
/// index (into `args`, which excludes the command name and key) of the first item. Items may
/// be missing only with GENERATION (a replicated advance of a window filter).
fn parse_insert<A: ArgBytes>(
    args: &[A],
    redis8: bool,
    internal: impl Fn() -> bool,
) -> Result<(Creation, usize), Reply> {
    let mut c = Creation::defaults();
    let mut i = 0;
    let mut expansion: i64 = i64::from(c.expansion);
    let (mut named_expansion, mut named_nonscaling) = (false, false);
    let mut capacity: i64 = c.capacity as i64;
    loop {
        let Some(tok) = args.get(i).map(ArgBytes::bytes) else {
            return Err(Reply::WrongArity);
        };
        let value = args.get(i + 1).map(ArgBytes::bytes);
        if is_keyword(tok, "ITEMS") {
            i += 1;
            break;
        } else if is_keyword(tok, "CAPACITY") {
            let v = value.ok_or(Reply::WrongArity)?;
            capacity = parse_i64(v)
                .filter(|v| !redis8 || *v >= 1)
                .ok_or(Reply::Error("Bad capacity"))?;
            i += 2;
        } else if is_keyword(tok, "ERROR") {
            let v = value.ok_or(Reply::WrongArity)?;
            c.error = parse_f64(v)
                .filter(|v| !redis8 || (*v > 0.0 && *v < 1.0))
                .ok_or(Reply::Error("Bad error rate"))?;
            if redis8 {
                c.error = c.error.min(config::REDIS8_ERROR_RATE_CAP);
            }
            i += 2;
        } else if is_keyword(tok, "EXPANSION") {
            let v = value.ok_or(Reply::WrongArity)?;
            expansion = parse_i64(v)
                .filter(|v| !redis8 || u32::try_from(*v).is_ok())
                .ok_or(Reply::Error("Bad expansion"))?;
            named_expansion = true;
            i += 2;
        } else if is_keyword(tok, "WINDOW") {
            if c.window_ms != 0 {
                // Repeated: as BF.RESERVE, where a repeated option makes the command too long.
                return Err(Reply::WrongArity);
            }
            let v = value.ok_or(Reply::WrongArity)?;
            c.window_ms = window::parse_window(v).ok_or(Reply::Error("Bad window"))?;
            i += 2;
        } else if is_keyword(tok, "GENERATION") && internal() {
            if c.generation.is_some() {
                return Err(Reply::WrongArity);
            }
            let v = value.ok_or(Reply::WrongArity)?;
            c.generation =
                Some(window::parse_generation(v).ok_or(Reply::Error("Unknown argument received"))?);
            i += 2;
        } else if is_keyword(tok, "NOCREATE") {
            c.allowed = false;
            i += 1;
        } else if is_keyword(tok, "NONSCALING") {
            c.nonscaling = true;
            named_nonscaling = true;
            i += 1;
        } else {
            return Err(Reply::Error("Unknown argument received"));
        }
    }
    if i >= args.len() && c.generation.is_none() {
        return Err(Reply::WrongArity);
    }
    if internal() {
        // From the primary or an AOF, `bf-expansion-factor 0` does not apply (see
        // `Creation::defaults_in`): only NONSCALING or EXPANSION 0 make the filter non-scaling.
        if !named_expansion && expansion == 0 {
            expansion = i64::from(crate::bloom::chain::DEFAULT_EXPANSION);
        }
        if expansion != 0 {
            c.nonscaling = named_nonscaling;
        }
    }
    // EXPANSION 0 is non-scaling with growth 0: RedisBloom 8's, so on Redis 8, and from the
    // primary or the AOF on every line (a filter made on Redis 8, replayed elsewhere).
    let zero = expansion == 0 && (redis8 || internal());
    if !(c.error > 0.0 && c.error < 1.0) || capacity < 1 || (expansion < 1 && !zero) {
        return Err(Reply::Error("Bad argument received"));
    }
    c.capacity = capacity as u64;
    c.expansion = u32::try_from(expansion).map_err(|_| Reply::Error("Bad argument received"))?;
    if c.expansion == 0 {
        c.nonscaling = true;
        if c.window_ms != 0 || c.generation.is_some() {
            // A window filter's generations always store a growth ≥ 1.
            c.expansion = crate::bloom::chain::DEFAULT_EXPANSION;
        }
    }
    Ok((c, i))
}

/// BF.INSERT: adds items, creating the filter with the given parameters when missing
/// (unless NOCREATE: `ERR not found`; with WINDOW, a window filter). Array reply as BF.MADD.
/// WINDOW (or, from the primary, GENERATION) on a key that holds a plain filter is WRONGTYPE.
pub fn bf_insert(ctx: &Context, args: &[Arg]) -> Reply {
    let options = args.get(2..).unwrap_or_default();
    let windowed = insert_mentions_window(options);
    if args.len() < 4 && !windowed {
        return Reply::WrongArity;
    }
    // The context flags are read only when an option needs them (GENERATION, EXPANSION 0).
    let internal = || window::internal(ctx);
    match parse_insert(options, server::is_redis8(), internal) {
        Ok((creation, first)) => add_items(
            ctx,
            &ctx.open_key_writable(&args[1].string()),
            &args[1],
            &options[first..],
            &creation,
            "BF.INSERT",
        ),
        Err(e) => e,
    }
}

/// The add path of BF.MADD and BF.INSERT (`command` names it for the log) on `key`, opened for
/// writing: a missing key is created with `creation` (a window filter when it names a
/// window), then the filter's kind adds the items.
fn add_items(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    items: &[Arg],
    creation: &Creation,
    command: &str,
) -> Reply {
    let windowed = creation.names_window();
    let (added, created) = match open_mut(key) {
        Lookup::Found(FilterMut::Plain(_)) if windowed => return Reply::Error(WRONGTYPE),
        Lookup::Found(mut filter) => (
            filter.add_items(ctx, key_name, items, creation, false, command),
            false,
        ),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        // GENERATION without WINDOW names an existing window filter.
        Lookup::Missing if !creation.allowed || (windowed && creation.window_ms == 0) => {
            return Reply::Error(NOT_FOUND)
        }
        Lookup::Missing if windowed => {
            let w = match window::create_for_insert(ctx, key, creation) {
                Ok(w) => w,
                Err(e) => return e,
            };
            let mut filter = FilterMut::Window(w);
            (
                filter.add_items(ctx, key_name, items, creation, true, command),
                true,
            )
        }
        Lookup::Missing => {
            if let Err(e) = plain::create(ctx, key, key_name.as_slice(), command, creation) {
                return e;
            }
            let Lookup::Found(chain) = bloom_type::lookup_mut(key) else {
                return Reply::Error(WRONGTYPE);
            };
            let mut filter = FilterMut::Plain(chain);
            (
                filter.add_items(ctx, key_name, items, creation, true, command),
                true,
            )
        }
    };
    finish(ctx, key_name, added, created)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<&[u8]> {
        s.split(' ').map(str::as_bytes).collect()
    }

    fn p(s: &str) -> Result<(Creation, usize), Reply> {
        let parts: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
        parse_insert(&parts, false, || false)
    }

    #[test]
    fn plain_insert_options() {
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

    #[test]
    fn redis8_insert_options() {
        let p8 = |s: &str, internal: bool| parse_insert(&split(s), true, || internal);
        for (args, error) in [
            ("CAPACITY 0 FOO ITEMS a", "Bad capacity"),
            ("ERROR 1 ITEMS a", "Bad error rate"),
            ("ERROR -0.5 ITEMS a", "Bad error rate"),
            ("EXPANSION -1 ITEMS a", "Bad expansion"),
            ("EXPANSION 4294967296 ITEMS a", "Bad expansion"),
        ] {
            assert_eq!(p8(args, false).unwrap_err(), Reply::Error(error), "{args}");
        }
        let (c, _) = p8("EXPANSION 0 ITEMS a", false).unwrap();
        assert_eq!((c.expansion, c.nonscaling), (0, true));
        let (c, _) = p8("ERROR 0.9 CAPACITY 2000000000 ITEMS a", false).unwrap();
        assert_eq!((c.error, c.capacity), (0.25, 2_000_000_000));
        // The 2.8 line refuses EXPANSION 0 unless it comes from the primary or the AOF.
        assert_eq!(
            parse_insert(&split("EXPANSION 0 ITEMS a"), false, || false).unwrap_err(),
            Reply::Error("Bad argument received")
        );
        let (c, _) =
            parse_insert(&split("EXPANSION 0 NONSCALING ITEMS a"), false, || true).unwrap();
        assert_eq!((c.expansion, c.nonscaling), (0, true));
    }

    #[test]
    fn window_insert_options() {
        assert!(insert_mentions_window(&split(
            "CAPACITY 10 WINDOW 5 ITEMS a"
        )));
        assert!(!insert_mentions_window(&split("CAPACITY WINDOW ITEMS a")));
        assert!(!insert_mentions_window(&split("ITEMS WINDOW")));
        let (a, first) =
            parse_insert(&split("WINDOW 1000 ERROR 0.001 ITEMS a b"), false, || false).unwrap();
        assert_eq!((a.window_ms, a.error, first), (1000, 0.001, 5));
        let (a, first) =
            parse_insert(&split("NOCREATE GENERATION 3 ITEMS"), false, || true).unwrap();
        assert_eq!((a.generation, a.allowed, first), (Some(3), false, 4));
        for (args, internal, error) in [
            ("WINDOW 1000 ITEMS", false, Reply::WrongArity),
            ("WINDOW x ITEMS a", false, Reply::Error("Bad window")),
            // GENERATION only from the primary or the AOF.
            (
                "NOCREATE GENERATION 3 ITEMS",
                false,
                Reply::Error("Unknown argument received"),
            ),
            // A repeated window option, as BF.RESERVE.
            ("WINDOW 1000 WINDOW 5 ITEMS a", true, Reply::WrongArity),
            (
                "WINDOW 1000 CAPACITY 5 window 1000 ITEMS a",
                true,
                Reply::WrongArity,
            ),
            (
                "NOCREATE GENERATION 3 GENERATION 4 ITEMS a",
                true,
                Reply::WrongArity,
            ),
        ] {
            assert_eq!(
                parse_insert(&split(args), false, || internal).unwrap_err(),
                error,
                "{args}"
            );
        }
    }
}
