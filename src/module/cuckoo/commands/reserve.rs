//! `CF.RESERVE key capacity [BUCKETSIZE b] [MAXITERATIONS m] [EXPANSION e]`
//!
//! As RedisBloom: the arguments after the key come in pairs (an even count is an arity
//! error); each option is the first argument equal to its keyword (any case) and takes the
//! argument after it, so a repeated option uses its first value and a pair with another
//! keyword (`FOO 1`, `ITEMS x`) is ignored. Checks in RedisBloom's order: capacity an integer
//! (`Bad capacity`), MAXITERATIONS, BUCKETSIZE, EXPANSION (`Couldn't parse X`, then the
//! range), the capacity against twice the bucket size (and 2^30 on Redis 8), then the key
//! (`ERR item exists`, WRONGTYPE). Options are looked for after the capacity only (RedisBloom
//! also matched the key and the capacity themselves), and an option keyword in the last
//! place, without a value, is `Couldn't parse X` (RedisBloom read past the arguments).

use super::common::{self, bucket_size_text, create, replicate_reserve, texts, Fail, Params};
use crate::module::args::{is_keyword, parse_i64, Arg, ArgBytes};
use crate::module::config::{self, CfDefaults};
use crate::module::cuckoo::cuckoo_type::lookup_mut;
use crate::module::data_type::Lookup;
use crate::module::notify::notify;
use crate::module::reply::{Reply, WRONGTYPE};
use crate::module::server;
use redis_module::Context;

/// What CF.RESERVE makes: the parameters, and whether the command named all three options
/// (then it is replicated as sent; otherwise with the defaults it took spelled out).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve {
    /// The filter's parameters.
    pub params: Params,
    /// True when BUCKETSIZE, MAXITERATIONS and EXPANSION were all given.
    pub explicit: bool,
}

/// The value of option `name`: None when absent, `Some(None)` when its keyword is last.
fn option<'a, A: ArgBytes>(options: &'a [A], name: &str) -> Option<Option<&'a [u8]>> {
    let at = options.iter().position(|a| is_keyword(a.bytes(), name))?;
    Some(options.get(at + 1).map(ArgBytes::bytes))
}

/// Reads option `name` as an integer in `[min, max]` (`default` when absent). Errors:
/// `Couldn't parse <name>`, `range`.
fn int_option<A: ArgBytes>(
    options: &[A],
    name: &'static str,
    parse_error: &'static str,
    default: i64,
    (min, max): (i64, i64),
    range: impl FnOnce() -> Fail,
) -> Result<(i64, bool), Fail> {
    let Some(value) = option(options, name) else {
        return Ok((default, false));
    };
    let v = value.and_then(parse_i64).ok_or(Fail::Text(parse_error))?;
    if v < min || v > max {
        return Err(range());
    }
    Ok((v, true))
}

/// Parses CF.RESERVE's arguments after the key (`args[0]` the capacity, then the options) with
/// the defaults `d`; `redis8`: RedisBloom 8's texts and limits; `internal`: from the primary or
/// the AOF, where RedisBloom 8's configured limits (the 2^30 capacity cap, a bucket size above
/// `cf-initial-size / 2`) do not apply.
pub fn parse<A: ArgBytes>(
    args: &[A],
    redis8: bool,
    internal: bool,
    d: &CfDefaults,
) -> Result<Reserve, Fail> {
    let t = texts(redis8);
    let capacity = args
        .first()
        .and_then(|a| parse_i64(a.bytes()))
        .ok_or(Fail::Text("Bad capacity"))?;
    let options = args.get(1..).unwrap_or_default();
    let (max_iterations, mi) = int_option(
        options,
        "MAXITERATIONS",
        "Couldn't parse MAXITERATIONS",
        i64::from(d.max_iterations),
        (1, 65535),
        || Fail::Text(t.max_iterations),
    )?;
    let bucket_max = if redis8 && !internal {
        // RedisBloom 8 lowers the largest bucket size with `cf-initial-size`.
        (d.initial_size / 2).min(255) as i64
    } else {
        255
    };
    let (bucket_size, bs) = int_option(
        options,
        "BUCKETSIZE",
        "Couldn't parse BUCKETSIZE",
        i64::from(d.bucket_size),
        (1, bucket_max),
        || {
            if redis8 {
                bucket_size_text(bucket_max)
            } else {
                Fail::Text(t.bucket_size)
            }
        },
    )?;
    let (expansion, ex) = int_option(
        options,
        "EXPANSION",
        "Couldn't parse EXPANSION",
        i64::from(d.expansion),
        (0, i64::from(crate::bloom::cuckoo::MAX_EXPANSION)),
        || Fail::Text(t.expansion),
    )?;
    let over_cap = redis8 && !internal && capacity > common::REDIS8_MAX_CAPACITY;
    if bucket_size * 2 > capacity || over_cap {
        return Err(Fail::Text(t.reserve_capacity));
    }
    Ok(Reserve {
        params: Params {
            capacity: capacity as u64,
            bucket_size: bucket_size as u16,
            max_iterations: max_iterations as u16,
            expansion: expansion as u16,
        },
        explicit: mi && bs && ex,
    })
}

/// CF.RESERVE: creates an empty filter; `OK`. Replicated as sent when it named every option,
/// else as `CF.RESERVE key capacity BUCKETSIZE b MAXITERATIONS m EXPANSION e` (the defaults
/// came from this server's configs); keyspace event `cf.reserve`.
pub fn cf_reserve(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 || args.len() % 2 == 0 {
        return Reply::WrongArity;
    }
    let d = config::cf_defaults();
    // The context flags are read only on Redis 8, where configured limits exist.
    let redis8 = server::is_redis8();
    let internal = redis8 && common::internal(ctx);
    let r = match parse(&args[2..], redis8, internal, &d) {
        Ok(r) => r,
        Err(f) => return f.reply(ctx),
    };
    let key_name = &args[1];
    let key = ctx.open_key_writable(&key_name.string());
    match lookup_mut(&key) {
        Lookup::Missing => {}
        Lookup::Found(_) => return Reply::Error("ERR item exists"),
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
    }
    if let Err(e) = create(ctx, &key, key_name, "CF.RESERVE", &r.params) {
        return e;
    }
    if r.explicit {
        ctx.replicate_verbatim();
    } else {
        replicate_reserve(ctx, key_name, args[2].as_slice(), &r.params);
    }
    notify(ctx, c"cf.reserve", key_name);
    Reply::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> CfDefaults {
        CfDefaults::REDISBLOOM
    }

    fn p(line: &str, redis8: bool) -> Result<Reserve, Fail> {
        let parts: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        parse(&parts, redis8, false, &defaults())
    }

    #[test]
    fn options_as_redisbloom() {
        let r = p("100 bucketsize 4 maxiterations 5 expansion 3", false).unwrap();
        assert_eq!(
            (r.params, r.explicit),
            (
                Params {
                    capacity: 100,
                    bucket_size: 4,
                    max_iterations: 5,
                    expansion: 3
                },
                true
            )
        );
        // Unknown pairs ignored, the first of a repeated option used.
        let r = p("100 FOO 1 BUCKETSIZE 4 BUCKETSIZE 1", false).unwrap();
        assert_eq!((r.params.bucket_size, r.explicit), (4, false));
        assert_eq!(p("100 ITEMS x", false).unwrap().params.bucket_size, 2);
        for (line, redis8, want) in [
            ("abc", false, "Bad capacity"),
            ("", false, "Bad capacity"),
            ("0 BUCKETSIZE 0", false, TEXTS_2_8_BS),
            ("100 MAXITERATIONS 0 BUCKETSIZE 0", false, TEXTS_2_8_MI),
            (
                "100 MAXITERATIONS MAXITERATIONS",
                false,
                "Couldn't parse MAXITERATIONS",
            ),
            ("100 FOO BUCKETSIZE", false, "Couldn't parse BUCKETSIZE"),
            ("100 EXPANSION 32769", false, common::TEXTS_2_8.expansion),
            ("7 BUCKETSIZE 4", false, common::TEXTS_2_8.reserve_capacity),
            ("-1", false, common::TEXTS_2_8.reserve_capacity),
            ("1073741825", true, common::TEXTS_8.reserve_capacity),
            ("100 BUCKETSIZE 256", true, common::TEXTS_8.bucket_size),
        ] {
            assert_eq!(p(line, redis8), Err(Fail::Text(want)), "{line}");
        }
        assert!(p("1073741825", false).is_ok());
        assert!(p("9223372036854775807", false).is_ok());
        // From the primary or the AOF, Redis 8's capacity cap does not apply.
        let parts: Vec<&[u8]> = vec![b"1073741825"];
        assert!(parse(&parts, true, true, &defaults()).is_ok());
        // Redis 8 lowers the largest bucket size with cf-initial-size.
        let small = CfDefaults {
            initial_size: 100,
            ..defaults()
        };
        let parts: Vec<&[u8]> = vec![b"200", b"BUCKETSIZE", b"51"];
        assert_eq!(
            parse(&parts, true, false, &small),
            Err(Fail::Owned(
                "BUCKETSIZE: value must be in the range [1, 50]".into()
            ))
        );
        assert!(parse(&parts, true, true, &small).is_ok());
        assert!(parse(&parts, false, false, &small).is_ok());
    }

    const TEXTS_2_8_BS: &str = common::TEXTS_2_8.bucket_size;
    const TEXTS_2_8_MI: &str = common::TEXTS_2_8.max_iterations;
}
