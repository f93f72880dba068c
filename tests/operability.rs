//! Operability (DECISIONS.md D3–D5) against `REDIS_SERVER` (default `redis-server`): module
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

scenarios!(
    config_get_set,
    config_load_args,
    config_bad_load_args,
    config_max_filter_bytes,
    notifications,
    copy_and_digest,
    info_section,
    command_metadata,
    acl,
    generic_key_commands,
    replication,
);
