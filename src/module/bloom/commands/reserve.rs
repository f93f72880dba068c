//! `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]` and, for a window filter,
//! `BF.RESERVE key error_rate capacity WINDOW ms [EXPANSION n | NONSCALING]`
//! (`docs/commands.md` ("BF.RESERVE"); `docs/commands.md` ("Argument handling"): options are looked for only after the
//! capacity, unknown trailing arguments and expansions ≥ 2^32 are errors).

use super::notify;
use crate::module::args::{is_keyword, parse_f64, parse_i64, Arg, ArgBytes};
use crate::module::bloom::filter::shared::{replicate, Creation, Replication};
use crate::module::bloom::filter::{open_mut, plain, window, FilterMut};
use crate::module::data_type::Lookup;
use crate::module::reply::{Reply, WRONGTYPE};
use crate::module::{config, server};
use redis_module::Context;
use std::borrow::Cow;

/// The texts of BF.RESERVE's refusals, per server line (RedisBloom 2.8's on Redis 7 and
/// Valkey, RedisBloom 8's on Redis 8).
struct Texts {
    error_range: &'static str,
    capacity_range: &'static str,
    expansion_range: &'static str,
}

const TEXTS_2_8: Texts = Texts {
    error_range: "ERR (0 < error rate range < 1) ",
    capacity_range: "ERR (capacity should be larger than 0)",
    expansion_range: "ERR expansion should be greater or equal to 1",
};

const TEXTS_8: Texts = Texts {
    error_range: "ERR error rate must be in the range (0.000000, 1.000000)",
    capacity_range: "ERR capacity must be in the range [1, 1073741824]",
    expansion_range: "ERR expansion must be in the range [0, 32768]",
};

fn texts(redis8: bool) -> &'static Texts {
    if redis8 {
        &TEXTS_8
    } else {
        &TEXTS_2_8
    }
}

/// Parses everything after the key, in RedisBloom's evaluation order: the error rate and the
/// capacity, then the options (a window filter's when they name WINDOW; `internal`: the
/// command comes from the primary or the AOF and may carry `GENERATION`). `redis8`: the
/// server line's rules (RedisBloom 8's: EXPANSION 0 is non-scaling, an error rate above
/// 0.25 is stored as 0.25, the expansion defaults to `bf-expansion-factor`).
fn parse<A: ArgBytes>(
    args: &[A],
    redis8: bool,
    internal: impl Fn() -> bool,
) -> Result<Creation, Reply> {
    let t = texts(redis8);
    let mut error = parse_f64(args[0].bytes()).ok_or(Reply::Error("ERR bad error rate"))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(Reply::Error(t.error_range));
    }
    if redis8 {
        error = error.min(config::REDIS8_ERROR_RATE_CAP);
    }
    let capacity = parse_i64(args[1].bytes()).ok_or(Reply::Error("ERR bad capacity"))?;
    if capacity <= 0 {
        return Err(Reply::Error(t.capacity_range));
    }
    let mut c = Creation {
        capacity: capacity as u64,
        error,
        expansion: crate::bloom::chain::DEFAULT_EXPANSION,
        nonscaling: false,
        allowed: true,
        window_ms: 0,
        generation: None,
    };
    let options = &args[2..];
    if names_window(options) {
        window_options(options, redis8, internal(), &mut c)?;
    } else {
        if redis8 {
            // RedisBloom 8: without options the configured factor applies, 0 = non-scaling;
            // but not 0 from the primary or an AOF (see `Creation::defaults_in`).
            let factor = config::expansion_factor();
            if factor != 0 || !internal() {
                c.expansion = factor;
                c.nonscaling = factor == 0;
            }
        }
        plain_options(options, redis8, internal, &mut c)?;
    }
    Ok(c)
}

/// True when the options name WINDOW (a window filter).
fn names_window<A: ArgBytes>(options: &[A]) -> bool {
    options.iter().any(|a| is_keyword(a.bytes(), "WINDOW"))
}

/// True when the options give EXPANSION (the filter then does not depend on the config).
fn names_expansion<A: ArgBytes>(options: &[A]) -> bool {
    options.iter().any(|a| is_keyword(a.bytes(), "EXPANSION"))
}

/// An expansion: an integer in [1, 2^32), or 0 when `zero` (non-scaling).
fn parse_expansion(value: &[u8], redis8: bool, zero: bool) -> Result<u32, Reply> {
    let v = parse_i64(value).ok_or(Reply::Error("ERR bad expansion"))?;
    if v < 0 || (v == 0 && !zero) {
        return Err(Reply::Error(texts(redis8).expansion_range));
    }
    u32::try_from(v).map_err(|_| {
        Reply::Error(if redis8 {
            TEXTS_8.expansion_range
        } else {
            "ERR bad expansion"
        })
    })
}

/// A plain filter's `[EXPANSION n] [NONSCALING]`, looked for anywhere after the capacity.
/// EXPANSION 0 is a non-scaling filter with growth 0 on Redis 8, and from the primary or the
/// AOF on every line (a Redis 8 filter replayed elsewhere); from them, NONSCALING with another
/// EXPANSION keeps that growth (the rewrite of a Redis 8 BF.RESERVE that used the config).
fn plain_options<A: ArgBytes>(
    options: &[A],
    redis8: bool,
    internal: impl Fn() -> bool,
    c: &mut Creation,
) -> Result<(), Reply> {
    c.nonscaling |= options.iter().any(|a| is_keyword(a.bytes(), "NONSCALING"));
    let expansion_at = options
        .iter()
        .position(|a| is_keyword(a.bytes(), "EXPANSION"));
    if let Some(p) = expansion_at {
        let value = options.get(p + 1).ok_or(Reply::Error("ERR no expansion"))?;
        if redis8 {
            // RedisBloom 8 reads the value before it looks at NONSCALING.
            parse_i64(value.bytes()).ok_or(Reply::Error("ERR bad expansion"))?;
        }
        let zero = parse_i64(value.bytes()) == Some(0) && (redis8 || internal());
        if zero {
            c.nonscaling = true;
        } else if c.nonscaling && !internal() {
            return Err(Reply::Error("Nonscaling filters cannot expand"));
        }
        c.expansion = parse_expansion(value.bytes(), redis8, zero)?;
    }
    let unknown = options.iter().enumerate().any(|(i, a)| {
        !is_keyword(a.bytes(), "NONSCALING")
            && Some(i) != expansion_at
            && Some(i) != expansion_at.map(|p| p + 1)
    });
    if unknown {
        return Err(Reply::Error("ERR unknown argument"));
    }
    Ok(())
}

/// A window filter's `WINDOW ms [EXPANSION n | NONSCALING] [GENERATION g]` (GENERATION only
/// when `internal`), in any order, each at most once. Errors as BF.RESERVE's, plus
/// `ERR no window`, `ERR bad window` (not an integer ≥ 1).
fn window_options<A: ArgBytes>(
    options: &[A],
    redis8: bool,
    internal: bool,
    c: &mut Creation,
) -> Result<(), Reply> {
    let mut expansion = None;
    let mut seen = [false; 4];
    let mut i = 0;
    while i < options.len() {
        let tok = options[i].bytes();
        let value = options.get(i + 1).map(ArgBytes::bytes);
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
            c.nonscaling = true;
            i += 1;
            continue;
        }
        if is_keyword(tok, "WINDOW") {
            let v = value.ok_or(Reply::Error("ERR no window"))?;
            c.window_ms = window::parse_window(v).ok_or(Reply::Error("ERR bad window"))?;
        } else if is_keyword(tok, "EXPANSION") {
            let v = value.ok_or(Reply::Error("ERR no expansion"))?;
            // Redis 8: EXPANSION 0 is NONSCALING (generations keep the default growth).
            expansion = Some(parse_expansion(v, redis8, redis8)?);
        } else if internal && is_keyword(tok, "GENERATION") {
            let v = value.ok_or(Reply::Error("ERR unknown argument"))?;
            c.generation =
                Some(window::parse_generation(v).ok_or(Reply::Error("ERR unknown argument"))?);
        } else {
            return Err(Reply::Error("ERR unknown argument"));
        }
        i += 2;
    }
    match expansion {
        Some(0) => c.nonscaling = true,
        Some(_) if c.nonscaling => {
            return Err(Reply::Error("Nonscaling filters cannot expand"));
        }
        Some(e) => c.expansion = e,
        None => {}
    }
    if c.window_ms == 0 {
        return Err(Reply::Error("ERR no window"));
    }
    Ok(())
}

/// BF.RESERVE: creates an empty filter. Replies `+OK`. A plain filter's is replicated
/// verbatim, a window filter's with the generation it was created at
/// (`filter::window::reserve`).
pub fn bf_reserve(ctx: &Context, args: &[Arg]) -> Reply {
    // A window BF.RESERVE may be longer (WINDOW and, from the primary, GENERATION).
    let windowed = args.len() >= 5 && names_window(&args[4..]);
    if !windowed && !(4..=7).contains(&args.len()) {
        return Reply::WrongArity;
    }
    let redis8 = server::is_redis8();
    let c = match parse(&args[2..], redis8, || window::internal(ctx)) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let key = ctx.open_key_writable(&args[1].string());
    match open_mut(&key) {
        // A window filter is a filter too: RESERVE over either kind says so.
        Lookup::Found(_) => return Reply::Error("ERR item exists"),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing => {}
    }
    let created = if c.window_ms != 0 {
        window::reserve(ctx, &key, &args[1], &c)
    } else {
        plain::create(ctx, &key, args[1].as_slice(), "BF.RESERVE", &c).map(|()| {
            if !redis8 || names_expansion(&args[4..]) {
                Replication::Verbatim
            } else if c.nonscaling && c.expansion != 0 {
                as_header(args, &key)
            } else {
                with_expansion(args, &c)
            }
        })
    };
    match created {
        Ok(r) => {
            replicate(ctx, &args[1], r);
            notify(ctx, c"bf.reserve", &args[1]);
            Reply::Ok
        }
        Err(e) => e,
    }
}

/// A Redis 8 BF.RESERVE without EXPANSION took its growth from `bf-expansion-factor`: it is
/// replicated with that growth spelled out (`EXPANSION g`), so that a replica or an AOF
/// replay builds the same filter whatever its own config. (A NONSCALING one goes as its
/// header instead: [`as_header`].)
fn with_expansion<'a>(args: &'a [Arg], c: &Creation) -> Replication<'a> {
    let argv: Vec<Cow<'a, [u8]>> = vec![
        Cow::Borrowed(args[1].as_slice()),
        Cow::Borrowed(args[2].as_slice()),
        Cow::Borrowed(args[3].as_slice()),
        Cow::Borrowed(b"EXPANSION"),
        Cow::Owned(c.expansion.to_string().into_bytes()),
    ];
    Replication::Rewritten("BF.RESERVE", argv)
}

/// A Redis 8 `BF.RESERVE … NONSCALING` keeps the configured `bf-expansion-factor` g ≥ 1 in its
/// header's growth field, a filter no BF.RESERVE can spell out: RedisBloom 8 refuses
/// `NONSCALING` with `EXPANSION g` ("Nonscaling filters cannot expand"). It is replicated as
/// the new, empty filter's SCANDUMP header (`BF.LOADCHUNK key 1 <header>`), which both
/// modules load into the same bits whatever their config, so an AOF written here also
/// replays under RedisBloom 8.
fn as_header<'a>(args: &'a [Arg], key: &redis_module::key::RedisKeyWritable) -> Replication<'a> {
    let header = match open_mut(key) {
        Lookup::Found(FilterMut::Plain(chain)) => crate::bloom::dump::encode_header(chain),
        // Just created above as a plain filter: always found.
        _ => return Replication::Verbatim,
    };
    Replication::Rewritten(
        "BF.LOADCHUNK",
        vec![
            Cow::Borrowed(args[1].as_slice()),
            Cow::Borrowed(b"1"),
            Cow::Owned(header),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<Creation, Reply> {
        parse_reserve(&split(s), false)
    }

    fn split(s: &str) -> Vec<&[u8]> {
        s.split(' ').map(str::as_bytes).collect()
    }

    /// The options and the explicit generation, as the tests read them.
    fn parse_reserve(args: &[&[u8]], internal: bool) -> Result<Creation, Reply> {
        parse(args, false, || internal)
    }

    #[test]
    fn reserve_options() {
        let c = parse_reserve(&split("0.01 100 WINDOW 5000 EXPANSION 4"), false).unwrap();
        assert_eq!(
            (
                c.window_ms,
                c.capacity,
                c.expansion,
                c.nonscaling,
                c.generation
            ),
            (5000, 100, 4, false, None)
        );
        let c = parse_reserve(&split("0.01 100 nonscaling window 1"), false).unwrap();
        assert!(c.nonscaling);
        for (args, error) in [
            ("0.01 100 WINDOW 0", Reply::Error("ERR bad window")),
            ("0.01 100 WINDOW", Reply::Error("ERR no window")),
            (
                "0.01 100 WINDOW 10 NONSCALING EXPANSION 2",
                Reply::Error("Nonscaling filters cannot expand"),
            ),
            // GENERATION only from the primary or the AOF.
            (
                "0.01 100 WINDOW 10 GENERATION 5",
                Reply::Error("ERR unknown argument"),
            ),
            // A repeated option, as a plain BF.RESERVE too long.
            ("0.01 100 WINDOW 10 WINDOW 20", Reply::WrongArity),
            (
                "0.01 100 WINDOW 10 EXPANSION 2 EXPANSION 3",
                Reply::WrongArity,
            ),
            (
                "0.01 100 NONSCALING WINDOW 10 nonscaling",
                Reply::WrongArity,
            ),
        ] {
            assert_eq!(p(args).unwrap_err(), error, "{args}");
        }
        let c = parse_reserve(&split("0.01 100 WINDOW 10 GENERATION 5"), true).unwrap();
        assert_eq!(c.generation, Some(5));
    }

    #[test]
    fn redis8_rules() {
        let p8 = |s: &str, internal: bool| parse(&split(s), true, || internal);
        for (args, error) in [
            ("0 x", TEXTS_8.error_range),
            ("abc 0", "ERR bad error rate"),
            ("0.1 0 EXPANSION x", TEXTS_8.capacity_range),
            ("0.1 1.5", "ERR bad capacity"),
            ("0.1 10 EXPANSION", "ERR no expansion"),
            ("0.1 10 EXPANSION -1", TEXTS_8.expansion_range),
            ("0.1 10 EXPANSION 4294967296", TEXTS_8.expansion_range),
            // The value is read before NONSCALING is looked at.
            ("0.1 10 EXPANSION abc NONSCALING", "ERR bad expansion"),
            (
                "0.1 10 NONSCALING EXPANSION -1",
                "Nonscaling filters cannot expand",
            ),
            (
                "0.1 10 NONSCALING EXPANSION 2",
                "Nonscaling filters cannot expand",
            ),
        ] {
            assert_eq!(p8(args, false).unwrap_err(), Reply::Error(error), "{args}");
        }
        for args in ["0.1 10 EXPANSION 0", "0.1 10 NONSCALING EXPANSION 0"] {
            let c = p8(args, false).unwrap();
            assert_eq!((c.expansion, c.nonscaling), (0, true), "{args}");
        }
        // Rates above 0.25 are stored as 0.25; the default expansion is the config's (2).
        let c = p8("0.9 10", false).unwrap();
        assert_eq!((c.error, c.expansion, c.nonscaling), (0.25, 2, false));
        // From the primary or the AOF: NONSCALING keeps another growth.
        let c = p8("0.1 10 NONSCALING EXPANSION 4", true).unwrap();
        assert_eq!((c.expansion, c.nonscaling), (4, true));
        // On the 2.8 line EXPANSION 0 is refused, unless it comes from the primary or the AOF.
        assert_eq!(
            parse_reserve(&split("0.1 10 EXPANSION 0"), false).unwrap_err(),
            Reply::Error(TEXTS_2_8.expansion_range)
        );
        let c = parse_reserve(&split("0.1 10 EXPANSION 0"), true).unwrap();
        assert_eq!((c.expansion, c.nonscaling, c.error), (0, true, 0.1));
        // A window filter's EXPANSION 0 on Redis 8 is NONSCALING (its generations keep 2).
        let c = p8("0.1 10 WINDOW 100 EXPANSION 0", false).unwrap();
        assert_eq!((c.expansion, c.nonscaling), (2, true));
    }

    #[test]
    fn evaluation_order() {
        assert_eq!(p("abc x").unwrap_err(), Reply::Error("ERR bad error rate"));
        assert_eq!(
            p("1 x").unwrap_err(),
            Reply::Error("ERR (0 < error rate range < 1) ")
        );
        assert_eq!(p("0.1 1.5").unwrap_err(), Reply::Error("ERR bad capacity"));
        assert_eq!(
            p("0.1 0").unwrap_err(),
            Reply::Error("ERR (capacity should be larger than 0)")
        );
        assert_eq!(
            p("0.1 10 EXPANSION").unwrap_err(),
            Reply::Error("ERR no expansion")
        );
        assert_eq!(
            p("0.1 10 NONSCALING EXPANSION 2").unwrap_err(),
            Reply::Error("Nonscaling filters cannot expand")
        );
        assert_eq!(
            p("0.1 10 EXPANSION x").unwrap_err(),
            Reply::Error("ERR bad expansion")
        );
        assert_eq!(
            p("0.1 10 EXPANSION 0").unwrap_err(),
            Reply::Error("ERR expansion should be greater or equal to 1")
        );
        assert_eq!(
            p("0.1 10 EXPANSION 4294967296").unwrap_err(),
            Reply::Error("ERR bad expansion")
        );
        assert_eq!(
            p("0.1 10 foo").unwrap_err(),
            Reply::Error("ERR unknown argument")
        );
        assert_eq!(
            p("0.1 10 expansion 4 nonscaling").unwrap_err(),
            Reply::Error("Nonscaling filters cannot expand")
        );
        let c = p("0.1 10 expansion 4").unwrap();
        assert_eq!(
            (c.error, c.capacity, c.expansion, c.nonscaling, c.window_ms),
            (0.1, 10, 4, false, 0)
        );
        assert!(p("0.1 10 NonScaling").unwrap().nonscaling);
    }
}
