//! Operability (`docs/commands.md` ("Memory limits", "Additions", "Replication and AOF")) against `REDIS_SERVER` (default `redis-server`): module
//! configs, keyspace notifications, COPY and digests, `INFO bf`, command metadata and ACL,
//! generic key commands. The scenarios live in `operability_cases/` and also run on valkey
//! (`tests/valkey.rs`).

mod common;
mod operability_cases;

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                operability_cases::$name(&common::server_binary());
            }
        )*
    };
}

operability_cases::for_each_scenario!(scenarios);

/// Command metadata as RedisBloom 8 registers it, on this server (not in the shared scenario
/// list: its exceptions are written for Redis servers).
#[test]
fn command_metadata_as_redisbloom8() {
    operability_cases::command_metadata_as_redisbloom8(&common::server_binary());
}
