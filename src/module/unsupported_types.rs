//! Placeholders for the data types of RedisBloom's other families, which redis-bf does not
//! implement: Count-Min sketch (`CMSk-TYPE`, `CMS.*`), Top-K (`TopK-TYPE`, `TOPK.*`) and
//! T-Digest (`TDIS-TYPE`, `TDIGEST.*`), the type names RedisBloom registers (encoding
//! version 0).
//!
//! Without them, a server switched from RedisBloom to redis-bf with such a key in its RDB
//! stops with Redis' own `no matching module type` error, which does not say what to do. With
//! them, loading such a value (an RDB at start-up, a full sync from a RedisBloom primary,
//! `RESTORE`, `DEBUG RELOAD`) first logs one warning line from the module naming the key, its
//! family and the way out, then fails as before: `rdb_load` never accepts the value, so the
//! server still refuses the RDB (and `RESTORE` answers its `Bad data format` error). Nothing is
//! ever dropped silently, and no key of these types can exist on a redis-bf server, so the
//! other callbacks are never called.
//!
//! They cannot conflict with RedisBloom: RedisBloom registers the module name `bf` and the type
//! `MBbloom--` too, so the two modules are never loaded in one server.

use redis_module::native_types::RedisType;
use redis_module::raw;
use std::ffi::{c_void, CString};
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The script that lists the keys of these types on a running server (`docs/migrating.md`).
pub const CHECK_SCRIPT: &str = "scripts/switch-check.sh";

/// One of RedisBloom's families redis-bf does not implement.
struct Family {
    /// RedisBloom's 9-character type name.
    type_name: &'static str,
    /// What the values are, as the docs name them.
    what: &'static str,
    /// Its commands' prefix.
    commands: &'static str,
}

impl Family {
    /// RedisBloom's family of type `type_name`, whose values the docs call `what`, with the
    /// commands `commands`.
    const fn new(type_name: &'static str, what: &'static str, commands: &'static str) -> Self {
        Family {
            type_name,
            what,
            commands,
        }
    }
}

const CMS: Family = Family::new("CMSk-TYPE", "Count-Min sketch", "CMS.*");
const TOPK: Family = Family::new("TopK-TYPE", "Top-K", "TOPK.*");
const TDIGEST: Family = Family::new("TDIS-TYPE", "T-Digest", "TDIGEST.*");

/// The method table of a placeholder: `rdb_load` refuses every value after logging; the rest
/// never runs (no value of the type is ever created), so it is a no-op.
macro_rules! placeholder_methods {
    ($load:ident) => {
        raw::RedisModuleTypeMethods {
            version: raw::REDISMODULE_TYPE_METHOD_VERSION as u64,
            rdb_load: Some($load),
            rdb_save: Some(never_save),
            aof_rewrite: None,
            mem_usage: None,
            digest: None,
            free: Some(never_free),
            aux_load: None,
            aux_save: None,
            aux_save_triggers: 0,
            free_effort: None,
            unlink: None,
            copy: None,
            defrag: None,
            mem_usage2: None,
            free_effort2: None,
            unlink2: None,
            copy2: None,
            aux_save2: None,
        }
    };
}

/// `CMSk-TYPE`: RedisBloom's Count-Min sketch, refused with a log line.
pub static CMS_PLACEHOLDER: RedisType =
    RedisType::new(CMS.type_name, 0, placeholder_methods!(load_cms));
/// `TopK-TYPE`: RedisBloom's Top-K, refused with a log line.
pub static TOPK_PLACEHOLDER: RedisType =
    RedisType::new(TOPK.type_name, 0, placeholder_methods!(load_topk));
/// `TDIS-TYPE`: RedisBloom's T-Digest, refused with a log line.
pub static TDIGEST_PLACEHOLDER: RedisType =
    RedisType::new(TDIGEST.type_name, 0, placeholder_methods!(load_tdigest));

unsafe extern "C" fn load_cms(io: *mut raw::RedisModuleIO, _encver: c_int) -> *mut c_void {
    refuse(io, &CMS)
}

unsafe extern "C" fn load_topk(io: *mut raw::RedisModuleIO, _encver: c_int) -> *mut c_void {
    refuse(io, &TOPK)
}

unsafe extern "C" fn load_tdigest(io: *mut raw::RedisModuleIO, _encver: c_int) -> *mut c_void {
    refuse(io, &TDIGEST)
}

unsafe extern "C" fn never_save(_io: *mut raw::RedisModuleIO, _value: *mut c_void) {}

unsafe extern "C" fn never_free(_value: *mut c_void) {}

/// Logs [`refusal`] for the key being loaded through `io` and returns NULL, so Redis refuses the
/// value.
fn refuse(io: *mut raw::RedisModuleIO, family: &Family) -> *mut c_void {
    let _ = catch_unwind(AssertUnwindSafe(|| {
        let line = refusal(key_name(io).as_deref(), family);
        // SAFETY: the API pointer is set once by RedisModule_Init, before any callback runs.
        let log = unsafe { raw::RedisModule_LogIOError };
        // Interior NULs cannot occur: the key name is escaped.
        if let (Some(log), Ok(line)) = (log, CString::new(line)) {
            // SAFETY: `io` is the live IO context Redis passed to rdb_load; the format and its
            // one argument are NUL-terminated strings alive for the call.
            unsafe { log(io, c"warning".as_ptr(), c"%s".as_ptr(), line.as_ptr()) };
        }
    }));
    std::ptr::null_mut()
}

/// The name of the key being loaded, when the server says it (`RedisModule_GetKeyNameFromIO`,
/// Redis 6.0+; it may have none, e.g. outside a keyspace load).
fn key_name(io: *mut raw::RedisModuleIO) -> Option<Vec<u8>> {
    // SAFETY: the API pointers are set once by RedisModule_Init, before any callback runs;
    // `io` is the live IO context of this rdb_load; the returned string (owned by Redis,
    // possibly NULL) and its bytes stay valid during the call, and are copied here.
    unsafe {
        let get = raw::RedisModule_GetKeyNameFromIO?;
        let ptr = raw::RedisModule_StringPtrLen?;
        let name = get(io);
        if name.is_null() {
            return None;
        }
        let mut len = 0usize;
        let bytes = ptr(name, &mut len);
        if bytes.is_null() {
            return None;
        }
        Some(std::slice::from_raw_parts(bytes.cast::<u8>(), len).to_vec())
    }
}

/// The longest part of a key name the log line quotes (bytes of the name).
const NAME_SHOWN: usize = 200;

/// The log line for a refused value of `family` at `key` (none: the server did not say).
fn refusal(key: Option<&[u8]>, family: &Family) -> String {
    let key = match key {
        Some(k) => format!("key {}", quote(k)),
        None => "a key".to_string(),
    };
    format!(
        "redis-bf cannot load {key}: it holds a {what} (type {ty}, RedisBloom's {cmds} commands), \
         and redis-bf implements only RedisBloom's Bloom (BF.*) and cuckoo (CF.*) filters. \
         Keep RedisBloom on this server, or remove its Count-Min sketch, Top-K and T-Digest keys \
         before switching ({CHECK_SCRIPT} lists them). The value is refused, not dropped.",
        what = family.what,
        ty = family.type_name,
        cmds = family.commands,
    )
}

/// `name` in double quotes, printable ASCII as it is and other bytes as `\xHH` (`"` and `\`
/// escaped), cut to [`NAME_SHOWN`] bytes with the full length said.
fn quote(name: &[u8]) -> String {
    let mut out = String::from("\"");
    for &b in name.iter().take(NAME_SHOWN) {
        match b {
            b'"' | b'\\' => {
                out.push('\\');
                out.push(b as char);
            }
            0x20..=0x7e => out.push(b as char),
            _ => out.push_str(&format!("\\x{b:02x}")),
        }
    }
    out.push('"');
    if name.len() > NAME_SHOWN {
        out.push_str(&format!(" (first {NAME_SHOWN} of {} bytes)", name.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusal_names_the_key_family_and_way_out() {
        let cases: [(&Family, Option<&[u8]>, &str, &str); 4] = [
            (
                &CMS,
                Some(b"c1"),
                "key \"c1\"",
                "Count-Min sketch (type CMSk-TYPE, RedisBloom's CMS.*",
            ),
            (
                &TOPK,
                Some(b"a\"b\\\n\xff"),
                "key \"a\\\"b\\\\\\x0a\\xff\"",
                "Top-K (type TopK-TYPE, RedisBloom's TOPK.*",
            ),
            (
                &TDIGEST,
                None,
                "cannot load a key:",
                "T-Digest (type TDIS-TYPE, RedisBloom's TDIGEST.*",
            ),
            (
                &CMS,
                Some(&[b'k'; 300]),
                "(first 200 of 300 bytes)",
                "Count-Min sketch",
            ),
        ];
        for (family, key, names, what) in cases {
            let line = refusal(key, family);
            assert!(line.contains(names), "{line}");
            assert!(line.contains(what), "{line}");
            assert!(line.contains("Keep RedisBloom on this server"), "{line}");
            assert!(line.contains(CHECK_SCRIPT), "{line}");
            assert!(!line.contains('\n'), "{line}");
        }
    }
}
