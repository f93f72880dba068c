//! Module configs (`docs/commands.md` ("Configs")), readable and settable at runtime with `CONFIG GET/SET bf.<name>` (Redis ≥ 7.0),
//! settable in the server's config file (`bf.<name> value`) or with
//! `MODULE LOADEX path CONFIG bf.<name> value`, and also accepted as `loadmodule` arguments
//! together with RedisBloom's `INITIAL_SIZE` / `ERROR_RATE` / `CF_MAX_EXPANSIONS`:
//!
//! | config | default | range | meaning |
//! |---|---|---|---|
//! | `bf.error-rate` | 0.01 | (0, 1) | error rate of filters created implicitly |
//! | `bf.initial-size` | 100 | ≥ 1 | capacity of filters created implicitly |
//! | `bf.expansion-factor` | 2 | 0 … 2^32−1 | expansion of implicitly created filters; 0 = non-scaling |
//! | `bf.max-filter-bytes` | 0 | ≥ 0 | largest total bit-array size of one filter, in bytes; 0 = no limit |
//! | `bf.cf-bucket-size` | 2 | 1 … min(255, initial size / 2) | bucket size of cuckoo filters made without one |
//! | `bf.cf-initial-size` | 1024 | 2 × bucket size … 2^30 | capacity of auto-created cuckoo filters |
//! | `bf.cf-max-iterations` | 20 | 1 … 65535 | max iterations of cuckoo filters made without one |
//! | `bf.cf-expansion-factor` | 1 | 0 … 32768 | expansion of cuckoo filters made without one; 0 = non-scaling |
//! | `bf.cf-max-expansions` | 32 | ≥ 1 (Redis 8: … 65536) | sub-filters from which cuckoo adds answer `Maximum expansions reached` |
//!
//! The cuckoo configs are RedisBloom 8's five `cf-*` configs: on Redis 8 registered under
//! those names (unprefixed, RedisBloom 8's ranges and messages) with the `bf.cf-*` names as
//! aliases; on Redis 7 and Valkey as `bf.cf-*` only (`CF_CONFIGS`). A bucket-size and an
//! initial-size limit each other as in RedisBloom 8 (each is checked against the other's
//! current value). `CF_MAX_EXPANSIONS` (RedisBloom's load argument) sets `cf-max-expansions`.
//!
//! On Redis 8 the first three are registered as RedisBloom 8's `bf-error-rate`,
//! `bf-initial-size` and `bf-expansion-factor` (unprefixed), each with its `bf.*` name as an
//! alias of the same config, with RedisBloom 8's ranges and messages (error rates above 0.25
//! stored as 0.25, sizes 1 … 2^30, factors 0 … 32768) and the value shown as it was set
//! (`register_redis8`).
//!
//! Implicitly created filters use the values in force when they are created.
//!
//! An invalid value never takes effect: `CONFIG SET` answers an error; in the config file or
//! `MODULE LOADEX … CONFIG` the module refuses to load (see [`register`]), so the server exits at
//! start-up with the reason in its log, or `MODULE LOADEX` answers an error and the server runs on.

use super::args::{parse_f64, parse_i64};
use redis_bf_core::cuckoo::MAX_BUCKET_SIZE;
use redis_module::configuration::{
    register_i64_configuration, register_string_configuration, ConfigurationContext,
    ConfigurationFlags, ConfigurationValue,
};
use redis_module::{raw, Context, RedisError, RedisString};
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU64, Ordering};

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

    /// The current value as `CONFIG GET` prints it: the shortest decimal text that reads back to
    /// the same double (`0.01`, `1e-300`).
    pub fn text(&self) -> String {
        format!("{:?}", self.get())
    }

    /// Validates and stores `text` (read as C's strtod reads it, see [`parse_f64`]). Errors: the message for CONFIG SET / the load log.
    pub fn set_from(&self, text: &[u8]) -> Result<(), String> {
        let v = parse_f64(text).ok_or("error rate must be a number")?;
        if !(v > 0.0 && v < 1.0) {
            return Err("error rate must be in the range (0, 1)".into());
        }
        if !can_size_layers(v) {
            return Err("error rate too small: no filter layer can be sized for it".into());
        }
        self.0.store(v.to_bits(), Ordering::Relaxed);
        Ok(())
    }
}

/// Growth layers an implicitly created filter must be able to add at the configured error rate
/// (each halves the rate): [`can_size_layers`].
const MIN_GROWTH_LAYERS: i32 = 64;

/// True when both kinds of implicitly created filter can size their layers at error rate `v`:
/// a scaling filter's first layer (at `v` × the tightening ratio) and a window filter's
/// generation (at `v` / [`ERROR_DIVISOR`](crate::bloom::window::ERROR_DIVISOR)), and either
/// one's [`MIN_GROWTH_LAYERS`]th growth layer (the rate halved that many times more). A rate
/// so small that these round to 0 (e.g. 5e-324, or 1e-322 after a few layers) would make
/// implicit creations fail, or filters refuse items after a handful of layers. The smallest
/// rate accepted is about 1e-304.
fn can_size_layers(v: f64) -> bool {
    use crate::bloom::chain::TIGHTENING_RATIO;
    use crate::bloom::layer::{LayerParams, OPT_FORCE64, OPT_NOROUND};
    use crate::bloom::window::ERROR_DIVISOR;
    let deepest = TIGHTENING_RATIO.powi(MIN_GROWTH_LAYERS + 1) / ERROR_DIVISOR;
    [v, v * TIGHTENING_RATIO, v / ERROR_DIVISOR, v * deepest]
        .iter()
        .all(|&e| LayerParams::for_capacity(1, e, OPT_NOROUND | OPT_FORCE64).is_ok())
}

impl ConfigurationValue<RedisString> for ErrorRate {
    fn get(&self, _ctx: &ConfigurationContext) -> RedisString {
        RedisString::create(None, ErrorRate::text(self).as_str())
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

/// The `bf.expansion-factor` value itself (0 = non-scaling).
pub fn expansion_factor() -> u32 {
    u32::try_from(EXPANSION_FACTOR.load(Ordering::Relaxed).max(0)).unwrap_or(u32::MAX)
}

/// Expansion for implicitly created filters; `None` means non-scaling.
pub fn expansion() -> Option<u32> {
    match EXPANSION_FACTOR.load(Ordering::Relaxed) {
        0 => None,
        v => Some(u32::try_from(v).unwrap_or(u32::MAX)),
    }
}

/// The parameters of cuckoo filters made without explicit ones (`CF.ADD`, `CF.INSERT`
/// auto-creation, `CF.RESERVE` options left out) and the growth limit of all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CfDefaults {
    /// Capacity of auto-created filters (RedisBloom: 1024).
    pub initial_size: u64,
    /// Bucket size (2).
    pub bucket_size: u16,
    /// Max iterations (20).
    pub max_iterations: u16,
    /// Expansion (1).
    pub expansion: u16,
    /// Sub-filters from which adds answer `Maximum expansions reached` (32).
    pub max_expansions: u64,
}

impl CfDefaults {
    /// RedisBloom's defaults (every config at its default).
    pub const REDISBLOOM: CfDefaults = CfDefaults {
        initial_size: redis_bf_core::cuckoo::DEFAULT_CAPACITY,
        bucket_size: redis_bf_core::cuckoo::DEFAULT_BUCKET_SIZE,
        max_iterations: redis_bf_core::cuckoo::DEFAULT_MAX_ITERATIONS,
        expansion: redis_bf_core::cuckoo::DEFAULT_EXPANSION,
        max_expansions: 32,
    };
}

/// The cuckoo defaults in force: the `cf-*` / `bf.cf-*` configs (see `CF_CONFIGS`), which
/// the `CF_MAX_EXPANSIONS` load argument (and the other cuckoo load arguments) also set.
pub fn cf_defaults() -> CfDefaults {
    let v = |c: CfConfig| CF_VALUES[c as usize].load(Ordering::Relaxed);
    CfDefaults {
        initial_size: v(CfConfig::InitialSize) as u64,
        bucket_size: v(CfConfig::BucketSize) as u16,
        max_iterations: v(CfConfig::MaxIterations) as u16,
        expansion: v(CfConfig::Expansion) as u16,
        max_expansions: v(CfConfig::MaxExpansions) as u64,
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

/// Registers the configs (four Bloom configs, five cuckoo configs) with the server, then has it apply the values given for them in
/// the config file or in `MODULE LOADEX … CONFIG` (`RedisModule_LoadConfigs`); must run during
/// `OnLoad`. A server without module configs (before Redis 7.0) gets none, and load arguments
/// still work.
///
/// Errors: a value was refused (the server has logged which and why); the module must then
/// fail to load. This is checked here because servers differ when a module ignores it:
/// Redis 7.0 refuses to start, Redis 7.4 and Valkey unload the module and crash.
pub fn register(ctx: &Context) -> Result<(), String> {
    // SAFETY: reading function pointers the server filled in during RedisModule_Init.
    let (numeric, string, load) = unsafe {
        (
            raw::RedisModule_RegisterNumericConfig,
            raw::RedisModule_RegisterStringConfig,
            raw::RedisModule_LoadConfigs,
        )
    };
    let (Some(load), Some(_), Some(string)) = (load, numeric, string) else {
        ctx.log_warning("redis-bf: this server has no module configs; bf.* configs unavailable");
        return Ok(());
    };
    if super::server::is_redis8() {
        return register_redis8(ctx, load, string);
    }
    let int_configs: [(&str, &'static AtomicI64, i64, i64, i64); 3] = [
        (
            "initial-size",
            &INITIAL_SIZE,
            DEFAULT_INITIAL_SIZE,
            1,
            i64::MAX,
        ),
        (
            "expansion-factor",
            &EXPANSION_FACTOR,
            DEFAULT_EXPANSION_FACTOR,
            0,
            i64::from(u32::MAX),
        ),
        ("max-filter-bytes", &MAX_FILTER_BYTES, 0, 0, i64::MAX),
    ];
    for (name, var, default, min, max) in int_configs {
        let flags = ConfigurationFlags::DEFAULT;
        register_i64_configuration(ctx, name, var, default, min, max, flags, None);
    }
    let flags = ConfigurationFlags::DEFAULT;
    register_string_configuration(ctx, "error-rate", &ERROR_RATE, "0.01", flags, None);
    register_cf(ctx, string, false)?;
    // SAFETY: called during OnLoad with the module's context, after every config is registered.
    if unsafe { load(ctx.get_raw()) } == raw::REDISMODULE_OK as i32 {
        Ok(())
    } else {
        Err("invalid bf.* config value (see the line above); module not loaded".into())
    }
}

/// The largest `bf-initial-size` on Redis 8 (RedisBloom 8's range).
pub const REDIS8_MAX_INITIAL_SIZE: i64 = 1 << 30;
/// The largest `bf-expansion-factor` on Redis 8 (RedisBloom 8's range).
pub const REDIS8_MAX_EXPANSION: i64 = 32768;
/// On Redis 8 an error rate above this is stored as this (as RedisBloom 8 does).
pub const REDIS8_ERROR_RATE_CAP: f64 = 0.25;

/// The three configs RedisBloom 8 has, as registered on Redis 8: its name (unprefixed) with
/// ours as the alias, so `CONFIG GET bf-*` answers as RedisBloom 8 and `bf.*` keeps working;
/// both names are one config and show one value.
const REDIS8_CONFIGS: [(&CStr, &str, &CStr); 3] = [
    (c"bf-error-rate|bf.error-rate", "bf-error-rate", c"0.01"),
    (
        c"bf-initial-size|bf.initial-size",
        "bf-initial-size",
        c"100",
    ),
    (
        c"bf-expansion-factor|bf.expansion-factor",
        "bf-expansion-factor",
        c"2",
    ),
];

/// The text `CONFIG GET` answers for each of [`REDIS8_CONFIGS`]: the value as it was set (as
/// RedisBloom 8 keeps it), a string owned here (created without a context), replaced by each
/// set. Configs are read and set on the main thread only; the atomics only make the statics
/// shareable.
static REDIS8_HELD: [AtomicPtr<raw::RedisModuleString>; 3] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];

/// Validates `text` for Redis 8 config `index` of [`REDIS8_CONFIGS`] (RedisBloom 8's ranges
/// and messages) and stores it. Returns the text to show from now on.
fn set_redis8(index: usize, text: &[u8]) -> Result<Vec<u8>, String> {
    let name = REDIS8_CONFIGS[index].1;
    let invalid = || format!("Invalid value for `{name}`");
    if index == 0 {
        let v = parse_f64(text).ok_or_else(invalid)?;
        if !(v > 0.0 && v < 1.0) {
            return Err(format!(
                "Value for `{name}` must be in the range (0.000000, 1.000000)"
            ));
        }
        if !can_size_layers(v) {
            return Err("error rate too small: no filter layer can be sized for it".into());
        }
        if v > REDIS8_ERROR_RATE_CAP {
            ERROR_RATE
                .0
                .store(REDIS8_ERROR_RATE_CAP.to_bits(), Ordering::Relaxed);
            return Ok(b"0.25".to_vec());
        }
        ERROR_RATE.0.store(v.to_bits(), Ordering::Relaxed);
        return Ok(text.to_vec());
    }
    let (var, max) = if index == 1 {
        (&INITIAL_SIZE, REDIS8_MAX_INITIAL_SIZE)
    } else {
        (&EXPANSION_FACTOR, REDIS8_MAX_EXPANSION)
    };
    let min = if index == 1 { 1 } else { 0 };
    let v = parse_i64(text).ok_or_else(invalid)?;
    if v < min || v > max {
        return Err(format!(
            "Value for `{name}` must be in the range [{min}, {max}]"
        ));
    }
    var.store(v, Ordering::Relaxed);
    Ok(text.to_vec())
}

/// Replaces the text a config shows with `text` (its slot in [`REDIS8_HELD`] or [`CF_HELD`]).
fn hold(slot: &AtomicPtr<raw::RedisModuleString>, text: &[u8]) {
    // SAFETY: creating a string without a context (the module owns it) from a live buffer.
    let s = unsafe {
        raw::RedisModule_CreateString.unwrap()(
            std::ptr::null_mut(),
            text.as_ptr().cast(),
            text.len(),
        )
    };
    let old = slot.swap(s, Ordering::Relaxed);
    if !old.is_null() {
        // SAFETY: `old` was created here without a context and is no longer handed out; Redis
        // copies the text a get returns before the next set can run.
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), old) };
    }
}

/// What a config get returns: the text held in `slot`, made by `text` when there is none.
fn held_text(
    slot: &AtomicPtr<raw::RedisModuleString>,
    text: impl FnOnce() -> String,
) -> *mut raw::RedisModuleString {
    if slot.load(Ordering::Relaxed).is_null() {
        hold(slot, text().as_bytes());
    }
    slot.load(Ordering::Relaxed)
}

/// A config set's status for Redis; a refusal's message is handed to it in `err`.
fn set_status(r: Result<(), String>, err: *mut *mut raw::RedisModuleString) -> c_int {
    match r {
        Ok(()) => raw::REDISMODULE_OK as c_int,
        Err(msg) => {
            set_error(err, &msg);
            raw::REDISMODULE_ERR as c_int
        }
    }
}

/// Hands a config set's error message to Redis.
fn set_error(err: *mut *mut raw::RedisModuleString, msg: &str) {
    // SAFETY: Redis passes a valid out-pointer and takes ownership of the error string it is
    // given (and frees it).
    unsafe {
        *err = raw::RedisModule_CreateString.unwrap()(
            std::ptr::null_mut(),
            msg.as_ptr().cast(),
            msg.len(),
        );
    }
}

/// The server's `RedisModule_RegisterStringConfig`.
type RegisterString = unsafe extern "C" fn(
    *mut raw::RedisModuleCtx,
    *const c_char,
    *const c_char,
    std::os::raw::c_uint,
    raw::RedisModuleConfigGetStringFunc,
    raw::RedisModuleConfigSetStringFunc,
    raw::RedisModuleConfigApplyFunc,
    *mut c_void,
) -> c_int;

/// The current text of Redis 8 config `index` for a value set another way (a load argument).
fn current_text(index: usize) -> String {
    match index {
        0 => ERROR_RATE.text(),
        1 => INITIAL_SIZE.load(Ordering::Relaxed).to_string(),
        _ => EXPANSION_FACTOR.load(Ordering::Relaxed).to_string(),
    }
}

/// Shows the values the load arguments set (called after [`apply_load_args`] on Redis 8).
pub fn refresh_redis8_texts() {
    if super::server::is_redis8() {
        for (i, slot) in REDIS8_HELD.iter().enumerate() {
            hold(slot, current_text(i).as_bytes());
        }
    }
}

/// A table of string configs served by one pair of callbacks ([`table_get`], [`table_set`]):
/// each config's privdata is its index in the table. Two tables: Redis 8's Bloom configs
/// ([`Redis8Table`]) and the cuckoo configs ([`CfTable`]).
trait StringTable {
    /// The slot holding the text config `index` shows.
    fn held(index: usize) -> &'static AtomicPtr<raw::RedisModuleString>;
    /// The text of config `index`'s current value, for a get when the slot holds none.
    fn current(index: usize) -> String;
    /// Checks and stores `text` as config `index`'s value; the refusal's message.
    fn set(index: usize, text: &[u8]) -> Result<(), String>;
}

/// The get callback of every config of table `T`.
extern "C" fn table_get<T: StringTable>(
    _name: *const c_char,
    privdata: *mut c_void,
) -> *mut raw::RedisModuleString {
    let index = privdata as usize;
    held_text(T::held(index), || T::current(index))
}

/// The set callback of every config of table `T`.
extern "C" fn table_set<T: StringTable>(
    _name: *const c_char,
    val: *mut raw::RedisModuleString,
    privdata: *mut c_void,
    err: *mut *mut raw::RedisModuleString,
) -> c_int {
    let r = T::set(privdata as usize, RedisString::string_as_slice(val));
    set_status(r, err)
}

/// Registers config `index` of table `T` as `name` (default `default`, `flags`): Err names the
/// config (`shown`) when the server refuses it.
fn register_in_table<T: StringTable>(
    ctx: &Context,
    register: RegisterString,
    index: usize,
    (name, default, flags): (&'static CStr, &'static CStr, u32),
    shown: &str,
) -> Result<(), String> {
    // SAFETY: called during OnLoad with the module's context; the name and default are
    // static C strings; privdata is the config's index, never dereferenced.
    let status = unsafe {
        register(
            ctx.get_raw(),
            name.as_ptr(),
            default.as_ptr(),
            flags,
            Some(table_get::<T>),
            Some(table_set::<T>),
            None,
            index as *mut c_void,
        )
    };
    if status != raw::REDISMODULE_OK as c_int {
        return Err(format!("could not register the config {shown}"));
    }
    Ok(())
}

/// Redis 8's Bloom configs ([`REDIS8_CONFIGS`]).
struct Redis8Table;

impl StringTable for Redis8Table {
    fn held(index: usize) -> &'static AtomicPtr<raw::RedisModuleString> {
        &REDIS8_HELD[index]
    }
    fn current(index: usize) -> String {
        current_text(index)
    }
    fn set(index: usize, text: &[u8]) -> Result<(), String> {
        set_redis8(index, text).map(|shown| hold(&REDIS8_HELD[index], &shown))
    }
}

/// Redis 8's registration: RedisBloom 8's three Bloom configs (see [`REDIS8_CONFIGS`]) and five
/// cuckoo configs ([`CF_CONFIGS`]), then `bf.max-filter-bytes`, then the values of the config
/// file or `MODULE LOADEX`.
fn register_redis8(
    ctx: &Context,
    load: unsafe extern "C" fn(*mut raw::RedisModuleCtx) -> c_int,
    register: RegisterString,
) -> Result<(), String> {
    for (index, (name, shown, default)) in REDIS8_CONFIGS.iter().enumerate() {
        let flags = raw::REDISMODULE_CONFIG_UNPREFIXED;
        register_in_table::<Redis8Table>(ctx, register, index, (name, default, flags), shown)?;
    }
    register_cf(ctx, register, true)?;
    register_i64_configuration(
        ctx,
        "max-filter-bytes",
        &MAX_FILTER_BYTES,
        0,
        0,
        i64::MAX,
        ConfigurationFlags::DEFAULT,
        None,
    );
    // SAFETY: called during OnLoad with the module's context, after every config is registered.
    if unsafe { load(ctx.get_raw()) } == raw::REDISMODULE_OK as i32 {
        Ok(())
    } else {
        Err("invalid bf.* config value (see the line above); module not loaded".into())
    }
}

/// The cuckoo configs, in [`CF_CONFIGS`] order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CfConfig {
    BucketSize,
    InitialSize,
    MaxIterations,
    Expansion,
    MaxExpansions,
}

/// One cuckoo config: RedisBloom 8's name, both registration names, the default.
struct CfSpec {
    config: CfConfig,
    /// RedisBloom 8's name (`cf-bucket-size`); ours is `bf.` followed by it.
    name: &'static str,
    /// Redis 8 (unprefixed): RedisBloom 8's name with ours as its alias.
    redis8: &'static CStr,
    /// Redis 7 and Valkey: the name the server prefixes with `bf.`.
    prefixed: &'static CStr,
    default: &'static CStr,
}

/// RedisBloom 8's five cuckoo configs. On Redis 8 each is registered under RedisBloom 8's name
/// (`cf-bucket-size`) with ours, `bf.cf-bucket-size`, as an alias of the same config (one
/// value); on Redis 7 and Valkey only as `bf.cf-bucket-size`: their module configs are always
/// named `<module>.<name>` (letters, digits, `-`, `_`), so no `cf.*` or `cf-*` name can exist
/// there (RedisBloom 2.8 has none either: `CONFIG GET cf-*` is empty). `bf.cf-*` is the one
/// spelling that works on every server.
const CF_CONFIGS: [CfSpec; 5] = [
    CfSpec {
        config: CfConfig::BucketSize,
        name: "cf-bucket-size",
        redis8: c"cf-bucket-size|bf.cf-bucket-size",
        prefixed: c"cf-bucket-size",
        default: c"2",
    },
    CfSpec {
        config: CfConfig::InitialSize,
        name: "cf-initial-size",
        redis8: c"cf-initial-size|bf.cf-initial-size",
        prefixed: c"cf-initial-size",
        default: c"1024",
    },
    CfSpec {
        config: CfConfig::MaxIterations,
        name: "cf-max-iterations",
        redis8: c"cf-max-iterations|bf.cf-max-iterations",
        prefixed: c"cf-max-iterations",
        default: c"20",
    },
    CfSpec {
        config: CfConfig::Expansion,
        name: "cf-expansion-factor",
        redis8: c"cf-expansion-factor|bf.cf-expansion-factor",
        prefixed: c"cf-expansion-factor",
        default: c"1",
    },
    CfSpec {
        config: CfConfig::MaxExpansions,
        name: "cf-max-expansions",
        redis8: c"cf-max-expansions|bf.cf-max-expansions",
        prefixed: c"cf-max-expansions",
        default: c"32",
    },
];

/// The values of [`CF_CONFIGS`], read by [`cf_defaults`]. Set on the main thread only.
static CF_VALUES: [AtomicI64; 5] = [
    AtomicI64::new(redis_bf_core::cuckoo::DEFAULT_BUCKET_SIZE as i64),
    AtomicI64::new(redis_bf_core::cuckoo::DEFAULT_CAPACITY as i64),
    AtomicI64::new(redis_bf_core::cuckoo::DEFAULT_MAX_ITERATIONS as i64),
    AtomicI64::new(redis_bf_core::cuckoo::DEFAULT_EXPANSION as i64),
    AtomicI64::new(DEFAULT_CF_MAX_EXPANSIONS),
];

/// The text `CONFIG GET` answers for each of [`CF_CONFIGS`] (as [`REDIS8_HELD`]).
static CF_HELD: [AtomicPtr<raw::RedisModuleString>; 5] = [
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
    AtomicPtr::new(std::ptr::null_mut()),
];

/// Default `cf-max-expansions`: adds answer `Maximum expansions reached` once a filter has
/// this many sub-filters.
pub const DEFAULT_CF_MAX_EXPANSIONS: i64 = 32;
/// The largest `cf-initial-size` (RedisBloom 8's).
pub const CF_MAX_INITIAL_SIZE: i64 = 1 << 30;

/// The current values of [`CF_CONFIGS`].
fn cf_values() -> [i64; 5] {
    std::array::from_fn(|i| CF_VALUES[i].load(Ordering::Relaxed))
}

/// The range config `c` accepts while the others have the values `v`: RedisBloom 8's, where a
/// bucket size is at most half the initial size (and 255) and an initial size at least twice
/// the bucket size. `cf-max-expansions` is at most 65536 on Redis 8 (RedisBloom 8) and
/// unbounded elsewhere (RedisBloom 2.8's `CF_MAX_EXPANSIONS`).
fn cf_range(c: CfConfig, v: &[i64; 5]) -> (i64, i64) {
    match c {
        CfConfig::BucketSize => (
            1,
            (v[CfConfig::InitialSize as usize] / 2).min(i64::from(MAX_BUCKET_SIZE)),
        ),
        CfConfig::InitialSize => (2 * v[CfConfig::BucketSize as usize], CF_MAX_INITIAL_SIZE),
        CfConfig::MaxIterations => (1, i64::from(u16::MAX)),
        CfConfig::Expansion => (0, i64::from(redis_bf_core::cuckoo::MAX_EXPANSION)),
        CfConfig::MaxExpansions if super::server::is_redis8() => (1, 65536),
        CfConfig::MaxExpansions => (1, i64::MAX),
    }
}

/// Why a cuckoo config value was refused.
#[derive(Debug, PartialEq, Eq)]
enum CfRefusal {
    /// Not an integer.
    Invalid,
    /// Outside the range, which is given.
    Range(i64, i64),
}

/// Checks `text` for config `c` while the others have the values `v`; the value.
fn cf_check(c: CfConfig, text: &[u8], v: &[i64; 5]) -> Result<i64, CfRefusal> {
    let x = parse_i64(text).ok_or(CfRefusal::Invalid)?;
    let (min, max) = cf_range(c, v);
    if x < min || x > max {
        return Err(CfRefusal::Range(min, max));
    }
    Ok(x)
}

/// Stores a checked value of config `index`; its text is made again by the next get.
fn cf_store(index: usize, v: i64) {
    CF_VALUES[index].store(v, Ordering::Relaxed);
    let old = CF_HELD[index].swap(std::ptr::null_mut(), Ordering::Relaxed);
    if !old.is_null() {
        // SAFETY: `old` was created by `hold` without a context and is no longer handed out;
        // Redis copies the text a get returns before the next set can run.
        unsafe { raw::RedisModule_FreeString.unwrap()(std::ptr::null_mut(), old) };
    }
}

/// The cuckoo configs ([`CF_CONFIGS`]).
struct CfTable;

impl StringTable for CfTable {
    fn held(index: usize) -> &'static AtomicPtr<raw::RedisModuleString> {
        &CF_HELD[index]
    }
    fn current(index: usize) -> String {
        CF_VALUES[index].load(Ordering::Relaxed).to_string()
    }
    fn set(index: usize, text: &[u8]) -> Result<(), String> {
        let spec = &CF_CONFIGS[index];
        // The name in messages: RedisBloom 8's on Redis 8 (as it words them), else the only one.
        let name = if super::server::is_redis8() {
            spec.name.to_string()
        } else {
            format!("bf.{}", spec.name)
        };
        cf_check(spec.config, text, &cf_values())
            .map(|v| cf_store(index, v))
            .map_err(|refusal| match refusal {
                CfRefusal::Invalid => format!("Invalid value for `{name}`"),
                CfRefusal::Range(min, i64::MAX) => {
                    format!("Value for `{name}` must be at least {min}")
                }
                CfRefusal::Range(min, max) => {
                    format!("Value for `{name}` must be in the range [{min}, {max}]")
                }
            })
    }
}

/// Registers [`CF_CONFIGS`] (see there for the names on each server line).
fn register_cf(ctx: &Context, register: RegisterString, redis8: bool) -> Result<(), String> {
    for (index, spec) in CF_CONFIGS.iter().enumerate() {
        let (name, flags) = if redis8 {
            (spec.redis8, raw::REDISMODULE_CONFIG_UNPREFIXED)
        } else {
            (spec.prefixed, raw::REDISMODULE_CONFIG_DEFAULT)
        };
        register_in_table::<CfTable>(ctx, register, index, (name, spec.default, flags), spec.name)?;
    }
    Ok(())
}

/// What a `loadmodule` argument name means here.
enum LoadArg {
    /// An integer config: its variable and range.
    Int(&'static AtomicI64, i64, i64),
    /// `error-rate`.
    ErrorRate,
    /// A cuckoo config (its range depends on the others: [`cf_range`]).
    Cuckoo(CfConfig),
}

/// Classifies an argument name: case-insensitive, `_` and `-` alike, an optional `bf.` / `bf-`
/// prefix: RedisBloom's `INITIAL_SIZE`, `ERROR_RATE` and `CF_MAX_EXPANSIONS`, our Bloom configs
/// and the five cuckoo configs (`cf-bucket-size` …). RedisBloom has no count-min or top-k load
/// arguments.
fn classify(name: &[u8]) -> Option<(LoadArg, String)> {
    let name = String::from_utf8_lossy(name)
        .to_ascii_lowercase()
        .replace('_', "-");
    let short = name
        .strip_prefix("bf.")
        .or_else(|| name.strip_prefix("bf-"))
        .unwrap_or(&name);
    let arg = match short {
        "initial-size" => LoadArg::Int(&INITIAL_SIZE, 1, i64::MAX),
        "expansion-factor" => LoadArg::Int(&EXPANSION_FACTOR, 0, i64::from(u32::MAX)),
        "max-filter-bytes" => LoadArg::Int(&MAX_FILTER_BYTES, 0, i64::MAX),
        "error-rate" => LoadArg::ErrorRate,
        cf => LoadArg::Cuckoo(CF_CONFIGS.iter().find(|c| c.name == cf)?.config),
    };
    Some((arg, short.to_string()))
}

/// Applies `loadmodule` arguments: `NAME VALUE` pairs, names case-insensitive with `_` and `-`
/// alike:
/// `ERROR_RATE` / `error-rate` / `bf.error-rate` / `bf-error-rate`, the same forms of
/// `initial-size`, `expansion-factor` and `max-filter-bytes`, and of the cuckoo configs
/// (`CF_MAX_EXPANSIONS` / `cf-max-expansions` / `bf.cf-max-expansions`, `cf-bucket-size`, …; in
/// order, each checked against the values before it, as `CONFIG SET` checks them). They are
/// applied after the config file's values, so they win.
///
/// Returns the lines to log (none today). Errors: the message to log when an argument is
/// unknown, unpaired or has a malformed or out-of-range value (the module then refuses to
/// load); nothing is applied then.
pub fn apply_load_args(args: &[&[u8]]) -> Result<Vec<String>, String> {
    // A single empty argument counts as none (as RedisBloom).
    let args: Vec<&[u8]> = args.iter().copied().filter(|a| !a.is_empty()).collect();
    if args.len() % 2 != 0 {
        return Err("Invalid number of arguments passed".into());
    }
    // Check everything first so that a refused line changes nothing.
    let mut ints: Vec<(&'static AtomicI64, i64)> = Vec::new();
    let mut rate = None::<f64>;
    let mut cf = cf_values();
    let mut cf_given = [false; 5];
    for pair in args.chunks(2) {
        let shown = String::from_utf8_lossy(pair[0]);
        let value = pair[1];
        match classify(pair[0]) {
            Some((LoadArg::ErrorRate, name)) => {
                let probe = ErrorRate(AtomicU64::new(0));
                probe
                    .set_from(value)
                    .map_err(|e| format!("'{name}': {e}"))?;
                rate = Some(probe.get());
            }
            Some((LoadArg::Int(var, min, max), name)) => {
                ints.push((var, parse_int(&name, value, min, max)?))
            }
            Some((LoadArg::Cuckoo(c), name)) => {
                cf[c as usize] = cf_check(c, value, &cf).map_err(|r| match r {
                    CfRefusal::Invalid => format!("Invalid argument for '{name}'"),
                    CfRefusal::Range(min, i64::MAX) => format!("'{name}' must be at least {min}"),
                    CfRefusal::Range(min, max) => {
                        format!("'{name}' must be in the range [{min}, {max}]")
                    }
                })?;
                cf_given[c as usize] = true;
            }
            None => return Err(format!("Unrecognized option '{shown}'")),
        }
    }
    let given = !ints.is_empty() || rate.is_some();
    for (var, v) in ints {
        var.store(v, Ordering::Relaxed);
    }
    if let Some(v) = rate {
        // Redis 8: above RedisBloom 8's cap the rate is stored as the cap.
        let v = if super::server::is_redis8() {
            v.min(REDIS8_ERROR_RATE_CAP)
        } else {
            v
        };
        ERROR_RATE.0.store(v.to_bits(), Ordering::Relaxed);
    }
    if given {
        refresh_redis8_texts();
    }
    for (index, v) in cf.iter().enumerate() {
        if cf_given[index] {
            cf_store(index, *v);
        }
    }
    Ok(Vec::new())
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
        // Rates whose layers cannot be sized are refused and change nothing; the smallest
        // ones that can are kept.
        for tiny in [&b"5e-324"[..], b"1e-323", b"2e-323", b"1e-322", b"1e-305"] {
            assert_eq!(
                e.set_from(tiny).unwrap_err(),
                "error rate too small: no filter layer can be sized for it",
                "{}",
                String::from_utf8_lossy(tiny)
            );
            assert_eq!(e.get(), 0.25);
        }
        e.set_from(b"1e-300").unwrap();
        assert_eq!(e.get(), 1e-300);
    }

    #[test]
    fn load_args_validation() {
        assert!(apply_load_args(&[b"INITIAL_SIZE"]).is_err());
        assert!(apply_load_args(&[b"INITIAL_SIZE", b"0"]).is_err());
        assert!(apply_load_args(&[b"ERROR_RATE", b"1"]).is_err());
        assert!(apply_load_args(&[b"bogus", b"1"]).is_err());
        assert!(apply_load_args(&[b"bf.expansion-factor", b"-1"]).is_err());
        assert!(apply_load_args(&[b"CF_MAX_EXPANSIONS", b"0"]).is_err());
        assert!(apply_load_args(&[b"CF_MAX_EXPANSIONS", b"x"]).is_err());
        assert!(apply_load_args(&[b"cms-width", b"10"]).is_err());
        assert_eq!(apply_load_args(&[b""]), Ok(vec![]));
    }

    #[test]
    fn cuckoo_ranges_follow_each_other() {
        let d = [2, 1024, 20, 1, 32];
        let check = |c, text: &str, v: &[i64; 5]| cf_check(c, text.as_bytes(), v);
        use CfConfig::*;
        for (c, text, want) in [
            (BucketSize, "0", Err(CfRefusal::Range(1, 255))),
            (BucketSize, "255", Ok(255)),
            (BucketSize, "256", Err(CfRefusal::Range(1, 255))),
            (BucketSize, "abc", Err(CfRefusal::Invalid)),
            (BucketSize, "", Err(CfRefusal::Invalid)),
            (InitialSize, "3", Err(CfRefusal::Range(4, 1 << 30))),
            (InitialSize, "4", Ok(4)),
            (InitialSize, "1073741825", Err(CfRefusal::Range(4, 1 << 30))),
            (MaxIterations, "0", Err(CfRefusal::Range(1, 65535))),
            (MaxIterations, "65535", Ok(65535)),
            (Expansion, "0", Ok(0)),
            (Expansion, "32769", Err(CfRefusal::Range(0, 32768))),
            (MaxExpansions, "0", Err(CfRefusal::Range(1, i64::MAX))),
            (MaxExpansions, "1000000", Ok(1_000_000)),
        ] {
            assert_eq!(check(c, text, &d), want, "{c:?} {text}");
        }
        // With cf-initial-size 8 the bucket size is at most 4; with bucket size 3 the initial
        // size is at least 6 (RedisBloom 8's CONFIG SET cf-bucket-size 3 cf-initial-size 0).
        let small = [2, 8, 20, 1, 32];
        assert_eq!(check(BucketSize, "5", &small), Err(CfRefusal::Range(1, 4)));
        assert_eq!(check(BucketSize, "4", &small), Ok(4));
        let bs3 = [3, 1024, 20, 1, 32];
        assert_eq!(
            check(InitialSize, "0", &bs3),
            Err(CfRefusal::Range(6, 1 << 30))
        );
        assert_eq!(check(BucketSize, "255", &[2, 600, 20, 1, 32]), Ok(255));
    }

    #[test]
    fn cuckoo_load_args() {
        // Refused lines change nothing.
        for (args, msg) in [
            (
                &[&b"CF_MAX_EXPANSIONS"[..], b"0"][..],
                "'cf-max-expansions' must be at least 1",
            ),
            (
                &[b"cf_max_expansions", b"x"],
                "Invalid argument for 'cf-max-expansions'",
            ),
            (
                &[b"cf-bucket-size", b"256"],
                "'cf-bucket-size' must be in the range [1, 255]",
            ),
            // In order: the bucket size first, then an initial size too small for it.
            (
                &[b"cf-bucket-size", b"100", b"bf.cf-initial-size", b"100"],
                "'cf-initial-size' must be in the range [200, 1073741824]",
            ),
            (
                &[b"cf-max-expansions", b"2", b"bogus", b"1"],
                "Unrecognized option 'bogus'",
            ),
        ] {
            assert_eq!(apply_load_args(args), Err(msg.to_string()));
            assert_eq!(cf_defaults().max_expansions, 32);
            assert_eq!(cf_defaults().bucket_size, 2);
        }
        apply_load_args(&[
            b"CF_MAX_EXPANSIONS",
            b"100",
            b"BF.CF-EXPANSION-FACTOR",
            b"0",
        ])
        .unwrap();
        let d = cf_defaults();
        assert_eq!(
            (d.max_expansions, d.expansion, d.initial_size),
            (100, 0, 1024)
        );
        apply_load_args(&[b"cf-max-expansions", b"32", b"cf-expansion-factor", b"1"]).unwrap();
        assert_eq!(cf_defaults().max_expansions, 32);
    }

    #[test]
    fn error_rate_text_is_shortest() {
        let e = ErrorRate(AtomicU64::new(0.01f64.to_bits()));
        for (input, shown) in [
            ("0.01", "0.01"),
            ("1e-300", "1e-300"),
            ("0x1p-03", "0.125"),
            ("1e-303", "1e-303"),
            ("0.1000000000000000055511151231257827", "0.1"),
        ] {
            e.set_from(input.as_bytes()).unwrap();
            assert_eq!(e.text(), shown, "{input}");
            assert_eq!(parse_f64(shown.as_bytes()), Some(e.get()));
        }
    }
}
