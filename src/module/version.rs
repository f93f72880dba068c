//! The module's version number, as Redis shows it.

/// The crate version (`Cargo.toml`) in RedisBloom's encoding, major·10000 + minor·100 + patch
/// (0.1.0 → 100): what `MODULE LIST` shows as `ver` and `INFO bf` as `bf_version`.
pub const MODULE_VERSION: i32 = encode_version(
    env!("CARGO_PKG_VERSION_MAJOR"),
    env!("CARGO_PKG_VERSION_MINOR"),
    env!("CARGO_PKG_VERSION_PATCH"),
);

/// `major·10000 + minor·100 + patch` from the three decimal strings Cargo provides.
const fn encode_version(major: &str, minor: &str, patch: &str) -> i32 {
    const fn num(s: &str) -> i32 {
        let b = s.as_bytes();
        let mut v = 0;
        let mut i = 0;
        while i < b.len() {
            assert!(b[i].is_ascii_digit(), "version parts are decimal numbers");
            v = v * 10 + (b[i] - b'0') as i32;
            i += 1;
        }
        v
    }
    let (minor, patch) = (num(minor), num(patch));
    assert!(
        minor < 100 && patch < 100,
        "minor and patch must stay below 100"
    );
    num(major) * 10000 + minor * 100 + patch
}
