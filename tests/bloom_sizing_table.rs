//! The sizing tables of `docs/sizing.md` are `examples/sizing.rs`' output, and that program's
//! layer plan is what the core really builds.

#[path = "../examples/sizing.rs"]
mod sizing;

use redis_bf::bloom::Chain;

const BEGIN: &str = "<!-- sizing tables: output of `cargo run --release --example sizing` -->\n";
const END: &str = "<!-- end of sizing tables -->";

#[test]
fn sizing_guide_tables_are_the_programs_output() {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sizing.md")).unwrap();
    let start = guide
        .find(BEGIN)
        .expect("docs/sizing.md: sizing block start")
        + BEGIN.len();
    let end = start
        + guide[start..]
            .find(END)
            .expect("docs/sizing.md: sizing block end");
    let want = sizing::report();
    assert!(
        guide[start..end] == want,
        "docs/sizing.md's tables differ from `cargo run --release --example sizing`; paste:\n{want}"
    );
}

#[test]
fn the_plan_is_what_the_core_builds() {
    for expansion in [Some(1u32), Some(2), Some(4), None] {
        let (capacity, error) = (1000u64, 0.01);
        let mut chain = match expansion {
            Some(g) => Chain::new(capacity, error, g, false, u64::MAX).unwrap(),
            None => Chain::new(capacity, error, 2, true, u64::MAX).unwrap(),
        };
        let fill = if expansion.is_some() {
            10 * capacity
        } else {
            capacity
        };
        for i in 0..fill {
            let _ = chain.add(format!("item:{i}").as_bytes(), u64::MAX);
        }
        let plan = sizing::layers(capacity, error, expansion, chain.capacity());
        let built: Vec<_> = chain.layers.iter().map(|l| l.params()).collect();
        assert_eq!(plan, built, "expansion {expansion:?}");
        assert_eq!(sizing::info_size(&plan), chain.mem_usage());
        assert!(chain.layers.len() >= if expansion == Some(1) { 10 } else { 1 });
    }
}
