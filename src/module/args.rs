//! Argument parsing with Redis' own number rules (`docs/commands.md` ("Common rules")): strict
//! decimal integers (no `+`, no leading zeros, no spaces, must fit in i64) and `strtod`-style
//! doubles over the whole argument (`inf`, hex floats, `.5`, `1e-3` accepted; `nan`, trailing
//! characters, leading spaces and out-of-range values such as `1e999` rejected).

/// Parses a strict Redis integer (string2ll rules). Returns None when it is not one.
pub fn parse_i64(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    match digits {
        [] => return None,
        [b'0'] => return (!neg).then_some(0),
        [b'0', ..] => return None,
        _ => {}
    }
    let mut v: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        let d = i64::from(c - b'0');
        v = v.checked_mul(10)?;
        v = if neg {
            v.checked_sub(d)?
        } else {
            v.checked_add(d)?
        };
    }
    Some(v)
}

/// Parses a double as Redis' `getDoubleFromObject` does (whole argument through strtod).
/// Returns None when it is not one.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    let text = std::str::from_utf8(s).ok()?;
    let first = *s.first()?;
    if first.is_ascii_whitespace() {
        return None;
    }
    let unsigned = text.trim_start_matches(['+', '-']);
    if text.len() - unsigned.len() > 1 {
        return None;
    }
    let lower = unsigned.to_ascii_lowercase();
    let value = if let Some(hex) = lower.strip_prefix("0x") {
        parse_hex_float(hex)?
    } else {
        let v: f64 = unsigned.parse().ok()?;
        // Rust's parser accepts "nan" and "infinity" like strtod; out-of-range input gives
        // ±inf or 0 where strtod reports ERANGE, which Redis rejects.
        let literal_inf = lower == "inf" || lower == "infinity";
        if v.is_infinite() && !literal_inf {
            return None;
        }
        if v == 0.0
            && lower
                .bytes()
                .take_while(|c| *c != b'e')
                .any(|c| (b'1'..=b'9').contains(&c))
        {
            return None;
        }
        v
    };
    if value.is_nan() {
        return None;
    }
    Some(if first == b'-' { -value } else { value })
}

/// Parses the part of a C hex float after `0x`: hex digits, an optional `.` fraction and an
/// optional binary exponent `p[+-]d+`.
fn parse_hex_float(s: &str) -> Option<f64> {
    let (mantissa, exponent) = match s.split_once('p') {
        Some((m, e)) => (m, parse_i64(e.trim_start_matches('+').as_bytes())?),
        None => (s, 0),
    };
    let (int_part, frac_part) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if int_part.is_empty() && frac_part.is_empty() {
        return None;
    }
    let mut v = 0f64;
    for c in int_part.chars() {
        v = v * 16.0 + f64::from(c.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for c in frac_part.chars() {
        v += f64::from(c.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    let exponent = i32::try_from(exponent.clamp(-4000, 4000)).ok()?;
    let v = v * 2f64.powi(exponent);
    (v.is_finite() && !(v == 0.0 && int_part.chars().chain(frac_part.chars()).any(|c| c != '0')))
        .then_some(v)
}

/// Case-insensitive whole-word comparison of an argument with a keyword.
pub fn is_keyword(arg: &[u8], keyword: &str) -> bool {
    arg.eq_ignore_ascii_case(keyword.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers() {
        for (s, v) in [
            ("0", Some(0)),
            ("100", Some(100)),
            ("-5", Some(-5)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
        ] {
            assert_eq!(parse_i64(s.as_bytes()), v, "{s}");
        }
        for s in [
            "",
            "-",
            "0100",
            "1e3",
            "+100",
            "1.5",
            "9223372036854775808",
            " 1",
            "1 ",
            "-0",
        ] {
            assert_eq!(parse_i64(s.as_bytes()), None, "{s}");
        }
    }

    #[test]
    fn doubles() {
        for (s, v) in [
            ("0.01", 0.01),
            (".5", 0.5),
            ("1e-3", 0.001),
            ("+0.25", 0.25),
            ("-2", -2.0),
            ("inf", f64::INFINITY),
            ("0x1p-7", 0.0078125),
            ("0X1.8P1", 3.0),
            ("1e-310", 1e-310),
        ] {
            assert_eq!(parse_f64(s.as_bytes()), Some(v), "{s}");
        }
        for s in [
            "", "nan", "abc", " 1", "1 ", "1e999", "1e-400", "0.01x", "--1", "0x",
        ] {
            assert_eq!(parse_f64(s.as_bytes()), None, "{s}");
        }
    }
}
