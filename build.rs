//! Links the module (the cdylib only) with `-Wl,--wrap=Export_RedisModule_Init`, so that the
//! load goes through `src/module/load_guard.rs`, which logs plainly when another module
//! (RedisBloom on Redis 8) already owns the name `bf`. GNU ld and lld on Linux; elsewhere the
//! module loads the same, with Redis' generic message on a name clash.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-link-arg-cdylib=-Wl,--wrap=Export_RedisModule_Init");
    }
}
