//! Which server the module runs in, read once at load.
//!
//! Replies and configs follow the RedisBloom that users of each server line run there
//! (`docs/redis8-valkey.md`): RedisBloom 2.8 on Redis 7.x and on Valkey, RedisBloom 8 on
//! Redis 8 and later. Valkey reports its own version number through the module API
//! (`RedisModule_GetServerVersion` answers 9.1.2 on Valkey 9.1.2) and `redis_version:7.2.4` in
//! `INFO`, so it is told apart by the `server_name:valkey` field of `INFO server`, which Redis
//! does not have.

use redis_module::Context;
use std::sync::atomic::{AtomicU8, Ordering};

/// The server line the module was loaded into.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ServerLine {
    /// Redis 7.x (or older): RedisBloom 2.8's replies.
    Redis7,
    /// Redis 8.0 or later: RedisBloom 8's replies and config names.
    Redis8,
    /// Valkey (any version): RedisBloom 2.8's replies, Valkey's own module features.
    Valkey,
}

static LINE: AtomicU8 = AtomicU8::new(0);

/// The server line, as [`detect`] found it at load (Redis 7 before that, e.g. in unit tests).
pub fn line() -> ServerLine {
    match LINE.load(Ordering::Relaxed) {
        1 => ServerLine::Redis8,
        2 => ServerLine::Valkey,
        _ => ServerLine::Redis7,
    }
}

/// True on Redis 8 and later, where RedisBloom 8 is the reference.
pub fn is_redis8() -> bool {
    line() == ServerLine::Redis8
}

/// The line for a server that names itself `server_name` (None on Redis) at version
/// `major` (of `redis_version` / the module API).
pub fn classify(server_name: Option<&str>, major: i32) -> ServerLine {
    match server_name {
        Some(name) if name.eq_ignore_ascii_case("valkey") => ServerLine::Valkey,
        _ if major >= 8 => ServerLine::Redis8,
        _ => ServerLine::Redis7,
    }
}

/// Reads the server line during `OnLoad` and remembers it for [`line()`].
pub fn detect(ctx: &Context) -> ServerLine {
    let info = ctx.server_info("server");
    let name = info.field("server_name").map(|s| s.to_string());
    let major = ctx.get_redis_version().map(|v| v.major).unwrap_or(7);
    let line = classify(name.as_deref(), major);
    LINE.store(
        match line {
            ServerLine::Redis7 => 0,
            ServerLine::Redis8 => 1,
            ServerLine::Valkey => 2,
        },
        Ordering::Relaxed,
    );
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_by_name_and_version() {
        for (name, major, want) in [
            (None, 7, ServerLine::Redis7),
            (None, 6, ServerLine::Redis7),
            (None, 8, ServerLine::Redis8),
            (None, 9, ServerLine::Redis8),
            (Some("valkey"), 9, ServerLine::Valkey),
            (Some("valkey"), 8, ServerLine::Valkey),
            (Some("redis"), 8, ServerLine::Redis8),
        ] {
            assert_eq!(classify(name, major), want, "{name:?} {major}");
        }
    }
}
