//! `BF.RESERVE key error_rate capacity [EXPANSION n] [NONSCALING]`
//! (`docs/commands.md` ("BF.RESERVE"); `docs/commands.md` ("Argument handling"): options are looked for only after the
//! capacity, unknown trailing arguments and expansions ≥ 2^32 are errors).

use super::create_filter;
use crate::module::args::Arg;
use crate::module::args::{is_keyword, parse_f64, parse_i64};
use crate::module::bloom_type::{lookup_mut, Lookup};
use crate::module::reply::{Reply, WRONGTYPE};
use redis_module::Context;

/// Validated BF.RESERVE arguments.
#[derive(Debug, PartialEq)]
struct ReserveArgs {
    error: f64,
    capacity: u64,
    expansion: u32,
    nonscaling: bool,
}

/// Parses everything after the key, in RedisBloom's evaluation order.
fn parse(args: &[&[u8]]) -> Result<ReserveArgs, Reply> {
    let error = parse_f64(args[0]).ok_or(Reply::Error("ERR bad error rate"))?;
    if !(error > 0.0 && error < 1.0) {
        return Err(Reply::Error("ERR (0 < error rate range < 1) "));
    }
    let capacity = parse_i64(args[1]).ok_or(Reply::Error("ERR bad capacity"))?;
    if capacity <= 0 {
        return Err(Reply::Error("ERR (capacity should be larger than 0)"));
    }
    let options = &args[2..];
    let nonscaling = options.iter().any(|a| is_keyword(a, "NONSCALING"));
    let expansion_at = options.iter().position(|a| is_keyword(a, "EXPANSION"));
    let mut expansion = crate::bloom::chain::DEFAULT_EXPANSION;
    if let Some(p) = expansion_at {
        let value = options.get(p + 1).ok_or(Reply::Error("ERR no expansion"))?;
        if nonscaling {
            return Err(Reply::Error("Nonscaling filters cannot expand"));
        }
        let v = parse_i64(value).ok_or(Reply::Error("ERR bad expansion"))?;
        if v < 1 {
            return Err(Reply::Error(
                "ERR expansion should be greater or equal to 1",
            ));
        }
        expansion = u32::try_from(v).map_err(|_| Reply::Error("ERR bad expansion"))?;
    }
    let unknown = options.iter().enumerate().any(|(i, a)| {
        !is_keyword(a, "NONSCALING")
            && Some(i) != expansion_at
            && Some(i) != expansion_at.map(|p| p + 1)
    });
    if unknown {
        return Err(Reply::Error("ERR unknown argument"));
    }
    Ok(ReserveArgs {
        error,
        capacity: capacity as u64,
        expansion,
        nonscaling,
    })
}

/// BF.RESERVE: creates an empty filter. Replies `+OK`; replicated verbatim.
pub fn bf_reserve(ctx: &Context, args: &[Arg]) -> Reply {
    if let Some(r) = crate::module::window_type::reserve(ctx, args) {
        return r;
    }
    if !(4..=7).contains(&args.len()) {
        return Reply::WrongArity;
    }
    // At most 5 arguments after the key (checked above): no vector for them.
    let mut raw: [&[u8]; 5] = [&[]; 5];
    for (r, a) in raw.iter_mut().zip(&args[2..]) {
        *r = a.as_slice();
    }
    let r = match parse(&raw[..args.len() - 2]) {
        Ok(r) => r,
        Err(e) => return e,
    };
    let key = ctx.open_key_writable(&args[1].string());
    match lookup_mut(&key) {
        Lookup::Found(_) => return Reply::Error("ERR item exists"),
        // A window filter is a filter too: RESERVE over it says so, as over a plain one.
        Lookup::WrongType if crate::module::window_type::get_mut(&key).is_some() => {
            return Reply::Error("ERR item exists")
        }
        Lookup::WrongType => return Reply::Error(WRONGTYPE),
        Lookup::Missing => {}
    }
    if let Err(e) = create_filter(
        ctx,
        &key,
        args[1].as_slice(),
        "BF.RESERVE",
        (r.capacity, r.error, r.expansion, r.nonscaling),
    ) {
        return e;
    }
    ctx.replicate_verbatim();
    super::notify(ctx, c"bf.reserve", &args[1]);
    Reply::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<ReserveArgs, Reply> {
        let parts: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
        parse(&parts)
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
        assert_eq!(
            p("0.1 10 expansion 4").unwrap(),
            ReserveArgs {
                error: 0.1,
                capacity: 10,
                expansion: 4,
                nonscaling: false
            }
        );
        assert!(p("0.1 10 NonScaling").unwrap().nonscaling);
    }
}
