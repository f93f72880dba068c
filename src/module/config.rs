//! Module settings: defaults for filters that BF.ADD / BF.MADD / BF.INSERT create implicitly,
//! given as `loadmodule` arguments (`INITIAL_SIZE n`, `ERROR_RATE e`, as RedisBloom,
//! `redisbloom-compat.md` §6).

use super::args::{parse_f64, parse_i64};
use std::sync::atomic::{AtomicU64, Ordering};

/// Default capacity of implicitly created filters.
pub const DEFAULT_INITIAL_SIZE: u64 = 100;
/// Default error rate of implicitly created filters.
pub const DEFAULT_ERROR_RATE: f64 = 0.01;

static INITIAL_SIZE: AtomicU64 = AtomicU64::new(DEFAULT_INITIAL_SIZE);
static ERROR_RATE_BITS: AtomicU64 = AtomicU64::new(0x3f847ae147ae147b); // 0.01

/// Capacity for implicitly created filters.
pub fn initial_size() -> u64 {
    INITIAL_SIZE.load(Ordering::Relaxed)
}

/// Error rate for implicitly created filters.
pub fn error_rate() -> f64 {
    f64::from_bits(ERROR_RATE_BITS.load(Ordering::Relaxed))
}

/// Applies `loadmodule` arguments: `NAME VALUE` pairs, names case-insensitive.
///
/// Errors: the message to log when an argument is unknown, unpaired or out of range
/// (the module then refuses to load).
pub fn apply_load_args(args: &[&[u8]]) -> Result<(), String> {
    // A single empty argument counts as none (as RedisBloom).
    let args: Vec<&[u8]> = args.iter().copied().filter(|a| !a.is_empty()).collect();
    if args.len() % 2 != 0 {
        return Err("Invalid number of arguments passed".into());
    }
    for pair in args.chunks(2) {
        let name = String::from_utf8_lossy(pair[0]).to_ascii_uppercase();
        let value = pair[1];
        match name.as_str() {
            "INITIAL_SIZE" => {
                let v = parse_i64(value).ok_or("Invalid argument for 'INITIAL_SIZE'")?;
                if v <= 0 {
                    return Err("INITIAL_SIZE must be > 0".into());
                }
                INITIAL_SIZE.store(v as u64, Ordering::Relaxed);
            }
            "ERROR_RATE" => {
                let v = parse_f64(value).ok_or("Invalid argument for 'ERROR_RATE'")?;
                if v <= 0.0 {
                    return Err("ERROR_RATE must be > 0".into());
                }
                if v >= 1.0 {
                    return Err("ERROR_RATE must be < 1".into());
                }
                ERROR_RATE_BITS.store(v.to_bits(), Ordering::Relaxed);
            }
            _ => return Err(format!("Unrecognized option '{name}'")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[test]
    fn default_error_rate_bits() {
        assert_eq!(super::error_rate(), 0.01);
    }
}
