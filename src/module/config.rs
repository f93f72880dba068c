//! Module configs (`docs/commands.md` ("Additions")), readable and settable at runtime with
//! `CONFIG GET/SET bf.<name>` (Redis ≥ 7.0), and also accepted as `loadmodule` arguments
//! together with RedisBloom's legacy `INITIAL_SIZE` / `ERROR_RATE` (`docs/commands.md` ("Configs")):
//!
//! | config | default | range | meaning |
//! |---|---|---|---|
//! | `bf.error-rate` | 0.01 | (0, 1) | error rate of filters created implicitly |
//! | `bf.initial-size` | 100 | ≥ 1 | capacity of filters created implicitly |
//! | `bf.expansion-factor` | 2 | 0 … 2^32−1 | expansion of implicitly created filters; 0 = non-scaling |
//! | `bf.max-filter-bytes` | 0 | ≥ 0 | largest total bit-array size of one filter, in bytes; 0 = no limit |
//!
//! Implicitly created filters use the values in force when they are created.

use super::args::{parse_f64, parse_i64};
use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{RedisError, RedisString};
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// Default capacity of implicitly created filters.
pub const DEFAULT_INITIAL_SIZE: i64 = 100;
/// Default error rate of implicitly created filters.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;
/// Default expansion of implicitly created filters.
pub const DEFAULT_EXPANSION_FACTOR: i64 = 2;

/// `bf.initial-size`.
pub static INITIAL_SIZE: AtomicI64 = AtomicI64::new(DEFAULT_INITIAL_SIZE);
/// `bf.expansion-factor`.
pub static EXPANSION_FACTOR: AtomicI64 = AtomicI64::new(DEFAULT_EXPANSION_FACTOR);
/// `bf.max-filter-bytes`.
pub static MAX_FILTER_BYTES: AtomicI64 = AtomicI64::new(0);
/// `bf.error-rate`, a double kept as its bit pattern (the crate has no double configs; Redis
/// sees a string config validated here).
pub static ERROR_RATE: ErrorRate = ErrorRate(AtomicU64::new(0x3f847ae147ae147b));

/// The `bf.error-rate` config: a double in (0, 1).
pub struct ErrorRate(AtomicU64);

impl ErrorRate {
    /// The current value.
    pub fn get(&self) -> f64 {
        f64::from_bits(self.0.load(Ordering::Relaxed))
    }

    /// Validates and stores `text`. Errors: the message for CONFIG SET / the load log.
    pub fn set_from(&self, text: &[u8]) -> Result<(), String> {
        let v = parse_f64(text).ok_or("error rate must be a number")?;
        if !(v > 0.0 && v < 1.0) {
            return Err("error rate must be in the range (0, 1)".into());
        }
        self.0.store(v.to_bits(), Ordering::Relaxed);
        Ok(())
    }
}

impl ConfigurationValue<RedisString> for ErrorRate {
    fn get(&self, _ctx: &ConfigurationContext) -> RedisString {
        RedisString::create(None, format!("{}", ErrorRate::get(self)).as_str())
    }
    fn set(&self, _ctx: &ConfigurationContext, val: RedisString) -> Result<(), RedisError> {
        self.set_from(val.as_slice()).map_err(RedisError::String)
    }
}

/// Capacity for implicitly created filters.
pub fn initial_size() -> u64 {
    INITIAL_SIZE.load(Ordering::Relaxed).max(1) as u64
}

/// Error rate for implicitly created filters.
pub fn error_rate() -> f64 {
    ERROR_RATE.get()
}

/// Expansion for implicitly created filters; `None` means non-scaling.
pub fn expansion() -> Option<u32> {
    match EXPANSION_FACTOR.load(Ordering::Relaxed) {
        0 => None,
        v => Some(u32::try_from(v).unwrap_or(u32::MAX)),
    }
}

/// Largest total bit-array size of one filter in bytes (`u64::MAX` when unlimited).
pub fn max_filter_bytes() -> u64 {
    match MAX_FILTER_BYTES.load(Ordering::Relaxed) {
        v if v <= 0 => u64::MAX,
        v => v as u64,
    }
}

fn parse_int(name: &str, value: &[u8], min: i64, max: i64) -> Result<i64, String> {
    let v = parse_i64(value).ok_or_else(|| format!("Invalid argument for '{name}'"))?;
    if v < min || v > max {
        return Err(format!("'{name}' must be in the range [{min}, {max}]"));
    }
    Ok(v)
}

/// Applies `loadmodule` arguments: `NAME VALUE` pairs, names case-insensitive: `bf.error-rate`
/// or `error-rate` or `ERROR_RATE`, `bf.initial-size` / `initial-size` / `INITIAL_SIZE`,
/// `bf.expansion-factor` / `expansion-factor`, `bf.max-filter-bytes` / `max-filter-bytes`.
///
/// Errors: the message to log when an argument is unknown, unpaired or out of range (the
/// module then refuses to load).
pub fn apply_load_args(args: &[&[u8]]) -> Result<(), String> {
    // A single empty argument counts as none (as RedisBloom).
    let args: Vec<&[u8]> = args.iter().copied().filter(|a| !a.is_empty()).collect();
    if args.len() % 2 != 0 {
        return Err("Invalid number of arguments passed".into());
    }
    for pair in args.chunks(2) {
        let name = String::from_utf8_lossy(pair[0]).to_ascii_lowercase();
        let name = name.strip_prefix("bf.").unwrap_or(&name).replace('_', "-");
        let value = pair[1];
        match name.as_str() {
            "initial-size" => {
                let v = parse_int("initial-size", value, 1, i64::MAX)?;
                INITIAL_SIZE.store(v, Ordering::Relaxed);
            }
            "error-rate" => ERROR_RATE
                .set_from(value)
                .map_err(|e| format!("'error-rate': {e}"))?,
            "expansion-factor" => {
                let v = parse_int("expansion-factor", value, 0, i64::from(u32::MAX))?;
                EXPANSION_FACTOR.store(v, Ordering::Relaxed);
            }
            "max-filter-bytes" => {
                let v = parse_int("max-filter-bytes", value, 0, i64::MAX)?;
                MAX_FILTER_BYTES.store(v, Ordering::Relaxed);
            }
            _ => {
                return Err(format!(
                    "Unrecognized option '{}'",
                    String::from_utf8_lossy(pair[0])
                ))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_rate_validation() {
        let e = ErrorRate(AtomicU64::new(0.01f64.to_bits()));
        assert_eq!(e.get(), 0.01);
        assert!(e.set_from(b"0").is_err());
        assert!(e.set_from(b"1").is_err());
        assert!(e.set_from(b"abc").is_err());
        assert_eq!(e.get(), 0.01);
        e.set_from(b"0.25").unwrap();
        assert_eq!(e.get(), 0.25);
    }

    #[test]
    fn load_args_validation() {
        assert!(apply_load_args(&[b"INITIAL_SIZE"]).is_err());
        assert!(apply_load_args(&[b"INITIAL_SIZE", b"0"]).is_err());
        assert!(apply_load_args(&[b"ERROR_RATE", b"1"]).is_err());
        assert!(apply_load_args(&[b"bogus", b"1"]).is_err());
        assert!(apply_load_args(&[b"bf.expansion-factor", b"-1"]).is_err());
        assert!(apply_load_args(&[b""]).is_ok());
    }
}
