//! Argument parsing with Redis' own number rules (`docs/commands.md` ("Common rules")): strict decimal integers (no `+`, no leading
//! zeros, no spaces, must fit in i64) and doubles read by C's `strtod` over the whole argument
//! (`inf`, hex floats, `.5`, `1e-3` accepted; `nan`, trailing characters, leading spaces and
//! out-of-range values such as `1e999` rejected).

use redis_module::{raw, RedisString};
use std::mem::ManuallyDrop;

/// One argument of a command, borrowed from Redis' `argv` for the duration of the call.
/// `repr(transparent)` over the string pointer, so a `&[Arg]` is Redis' `argv` itself: no
/// copy and no allocation, however many arguments (the crate's command wrapper builds a
/// 16-byte `RedisString` per argument and retains each one). Never retained, never freed.
#[repr(transparent)]
pub struct Arg {
    /// The argument's string, owned by Redis.
    pub inner: *mut raw::RedisModuleString,
}

impl Arg {
    /// The argument's bytes.
    pub fn as_slice(&self) -> &[u8] {
        RedisString::string_as_slice(self.inner)
    }

    /// A `RedisString` view of the argument for the crate's APIs that take one (opening a key,
    /// a keyspace event). Not retained: `ManuallyDrop` keeps it from being freed.
    pub fn string(&self) -> ManuallyDrop<RedisString> {
        ManuallyDrop::new(RedisString::from_redis_module_string(
            std::ptr::null_mut(),
            self.inner,
        ))
    }

    /// The arguments Redis passes to a command handler, as a slice of [`Arg`].
    ///
    /// # Safety
    /// `argv` must point to `argc` valid string pointers that outlive `'a` (Redis guarantees
    /// this for the duration of a command call), or be null with any `argc`.
    pub unsafe fn from_argv<'a>(
        argv: *mut *mut raw::RedisModuleString,
        argc: std::os::raw::c_int,
    ) -> &'a [Arg] {
        match usize::try_from(argc) {
            // SAFETY: as the caller guarantees; `Arg` has the layout of the pointer it wraps.
            Ok(n) if !argv.is_null() => unsafe {
                std::slice::from_raw_parts(argv.cast::<Arg>(), n)
            },
            _ => &[],
        }
    }
}

/// An argument as bytes: options are parsed in place, without a vector of all arguments (a
/// BF.INSERT of a million items would need 16 MB for it); the parsers' unit tests pass
/// `&[u8]`s.
pub trait ArgBytes {
    /// The argument's bytes.
    fn bytes(&self) -> &[u8];
}

impl ArgBytes for Arg {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

impl ArgBytes for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}

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

/// Parses a double as Redis' `getDoubleFromObject` (and so RedisBloom) does: the whole argument
/// through C's `strtod`, so decimal and hex floats (`0x1p-03`, `0X1.8P1`), `inf`/`infinity`,
/// `.5` and subnormal values are read exactly as C reads them. Returns None when the argument
/// is empty, starts with white space, has anything after the number (including a NUL byte), is
/// NaN, or overflows to ±inf / underflows to zero (`ERANGE`); a subnormal result that is not
/// zero is kept, as Redis keeps it.
pub fn parse_f64(s: &[u8]) -> Option<f64> {
    // C's isspace in the "C" locale: space, \t, \n, \v, \f, \r.
    if matches!(s.first()?, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r') || s.contains(&0) {
        return None;
    }
    let (value, consumed, range_error) = strtod(s);
    let out_of_range = range_error && (value.is_infinite() || value == 0.0);
    (consumed == s.len() && !out_of_range && !value.is_nan()).then_some(value)
}

/// C's `strtod` on `s` (which must hold no NUL byte): the value, how many bytes it read, and
/// whether it set `errno` to `ERANGE`.
fn strtod(s: &[u8]) -> (f64, usize, bool) {
    let mut text = Vec::with_capacity(s.len() + 1);
    text.extend_from_slice(s);
    text.push(0);
    let start = text.as_ptr().cast::<std::os::raw::c_char>();
    let mut end: *mut std::os::raw::c_char = std::ptr::null_mut();
    errno::set_errno(errno::Errno(0));
    // SAFETY: `text` is a NUL-terminated buffer that outlives the call; strtod only reads it up
    // to the NUL and stores into `end` a pointer inside it (or `start` when nothing was read).
    let value = unsafe { libc::strtod(start, &mut end) };
    let range_error = errno::errno().0 == libc::ERANGE;
    // SAFETY: `end` points into `text` (between `start` and its NUL), per strtod's contract.
    let consumed = usize::try_from(unsafe { end.offset_from(start) }).unwrap_or(0);
    (value, consumed, range_error)
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
            ("-Infinity", f64::NEG_INFINITY),
            ("0x1p-7", 0.0078125),
            ("0X1.8P1", 3.0),
            ("1e-310", 1e-310),
        ] {
            assert_eq!(parse_f64(s.as_bytes()), Some(v), "{s}");
        }
        for s in [
            "", "nan", "abc", " 1", "1 ", "1e999", "1e-400", "0.01x", "--1", "0x", "\t1", "1\0",
        ] {
            assert_eq!(parse_f64(s.as_bytes()), None, "{s:?}");
        }
    }

    /// Cases where a hand-written reader differs from C's strtod: exponents with leading
    /// zeros, a sign after the exponent sign, rounding of long hex mantissas, subnormal hex
    /// values, a vertical tab.
    #[test]
    fn doubles_as_strtod() {
        let accepted: [(&str, f64); 8] = [
            ("0x1p-03", 0.125),
            ("0x1P+003", 8.0),
            ("1e-03", 0.001),
            ("0x1.000000000000080001p0", 1.0 + f64::EPSILON),
            ("0x2p-1075", f64::from_bits(1)),
            ("0x1.8p-1074", f64::from_bits(2)),
            ("0x100000p-1094", f64::from_bits(1)),
            ("0x1p-1074", f64::from_bits(1)),
        ];
        for (s, v) in accepted {
            assert_eq!(
                parse_f64(s.as_bytes()).map(f64::to_bits),
                Some(v.to_bits()),
                "{s}"
            );
        }
        for s in [
            "0x1p+-3",
            "0x1p-+3",
            "0x1p--3",
            "0x1p-1075",
            "0x1p1024",
            "\x0b1",
            "0x1p",
        ] {
            assert_eq!(parse_f64(s.as_bytes()), None, "{s:?}");
        }
    }
}
