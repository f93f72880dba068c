//! BF.INFO key [CAPACITY|SIZE|FILTERS|ITEMS|EXPANSION], BF.CARD key and BF.DEBUG key
//! (`docs/commands.md` ("BF.INFO", "BF.CARD", "BF.DEBUG")).

use crate::bloom::layer::OPT_FORCE64;
use crate::bloom::Chain;
use crate::module::args::is_keyword;
use crate::module::args::Arg;
use crate::module::bloom_type::{existing, lookup, Lookup};
use crate::module::reply::{Reply, WRONGTYPE};
use redis_module::{Context, ContextFlags};

/// The five BF.INFO fields: (token, reply key, value).
fn fields(chain: &Chain) -> [(&'static str, &'static str, Reply); 5] {
    let n = |v: u64| Reply::Int(v.min(i64::MAX as u64) as i64);
    [
        ("CAPACITY", "Capacity", n(chain.capacity())),
        ("SIZE", "Size", n(chain.mem_usage())),
        ("FILTERS", "Number of filters", n(chain.layers.len() as u64)),
        ("ITEMS", "Number of items inserted", n(chain.size)),
        (
            "EXPANSION",
            "Expansion rate",
            if chain.is_nonscaling() {
                Reply::Null
            } else {
                n(u64::from(chain.growth))
            },
        ),
    ]
}

/// BF.INFO: all five fields (RESP2 flat array of pairs in a fixed order, RESP3 map), or one
/// field (RESP2 one-element array, RESP3 one-entry map). Errors: `ERR not found`, WRONGTYPE,
/// `Invalid information value`.
pub fn bf_info(ctx: &Context, args: &[Arg]) -> Reply {
    if !(2..=3).contains(&args.len()) {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    if let Some(r) = crate::module::window_type::info(ctx, &key, args) {
        return r;
    }
    let chain = match existing(&key) {
        Ok(c) => c,
        Err(e) => return e,
    };
    let all = fields(chain);
    let Some(wanted) = args.get(2) else {
        return Reply::Map(all.into_iter().map(|(_, k, v)| (k, v)).collect());
    };
    let Some((_, name, value)) = all
        .into_iter()
        .find(|(token, _, _)| is_keyword(wanted.as_slice(), token))
    else {
        return Reply::Error("Invalid information value");
    };
    if ctx.get_flags().contains(ContextFlags::FLAGS_RESP3) {
        Reply::Map(vec![(name, value)])
    } else {
        Reply::Array(vec![value])
    }
}

/// BF.CARD: items added (0 for a missing key; WRONGTYPE for another type).
pub fn bf_card(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    match lookup(&key) {
        Lookup::Found(c) => Reply::Int(c.size.min(i64::MAX as u64) as i64),
        Lookup::Missing => Reply::Int(0),
        Lookup::WrongType => {
            crate::module::window_type::card(ctx, &key).unwrap_or(Reply::Error(WRONGTYPE))
        }
    }
}

/// BF.DEBUG: `size:<items>` then one line per layer, oldest first:
/// `bytes:… bits:… hashes:… hashwidth:64|32 capacity:… size:… ratio:<error as %g>`.
pub fn bf_debug(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key(&args[1].string());
    if let Some(r) = crate::module::window_type::debug(ctx, &key) {
        return r;
    }
    let chain = match existing(&key) {
        Ok(c) => c,
        Err(e) => return e,
    };
    Reply::Array(
        debug_lines(chain)
            .into_iter()
            .map(|l| Reply::Bulk(l.into_bytes()))
            .collect(),
    )
}

/// The BF.DEBUG lines of a chain (`docs/commands.md` ("BF.DEBUG")): `size:N`, then one line per layer, oldest first.
/// Every layer has `bits` ≠ 0 (sizing and `LayerParams::is_consistent` guarantee it).
pub fn debug_lines(chain: &Chain) -> Vec<String> {
    let width = if chain.options & OPT_FORCE64 != 0 {
        64
    } else {
        32
    };
    let mut lines = vec![format!("size:{}", chain.size)];
    for l in &chain.layers {
        let p = &l.params();
        lines.push(format!(
            "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
            l.data.len(),
            p.bits,
            p.hashes,
            width,
            p.entries,
            l.size,
            format_g(p.error)
        ));
    }
    lines
}

/// Formats like C's `printf("%g")`: 6 significant digits, scientific notation (at least two
/// exponent digits) when the exponent is < −4 or ≥ 6, trailing zeros removed.
pub fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            if v > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        } else {
            "0".into()
        };
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mantissa), sign, exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        strip(&format!("{v:.decimals$}"))
    }
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn percent_g() {
        for (v, s) in [
            (0.005, "0.005"),
            (6.25e-05, "6.25e-05"),
            (0.0005, "0.0005"),
            (0.01, "0.01"),
            (0.1, "0.1"),
            (0.00125, "0.00125"),
            (0.000625, "0.000625"),
            (1.1920928955078125e-07, "1.19209e-07"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (4.9e-324, "4.94066e-324"),
        ] {
            assert_eq!(format_g(v), s);
        }
    }
}
