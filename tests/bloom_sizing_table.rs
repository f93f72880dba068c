//! The sizing tables of `docs/sizing.md` are `examples/sizing.rs`' output, and that program's
//! layer plan is what the core really builds; so is its Bloom / cuckoo / Ribbon table, whose
//! Ribbon filters the core builds here (up to 1e7 items).

#[path = "../examples/sizing.rs"]
mod sizing;

use redis_bf::bloom::Chain;

const BEGIN: &str = "<!-- sizing tables: output of `cargo run --release --example sizing` -->\n";
const END: &str = "<!-- end of sizing tables -->";
const FAMILY_BEGIN: &str =
    "<!-- family table: output of `cargo run --release --example sizing -- families` -->\n";
const FAMILY_END: &str = "<!-- end of family table -->";

/// The text of `docs/sizing.md` between `begin` and `end`.
fn block(begin: &str, end: &str) -> String {
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/sizing.md")).unwrap();
    let start = guide.find(begin).expect("docs/sizing.md: block start") + begin.len();
    let stop = start + guide[start..].find(end).expect("docs/sizing.md: block end");
    guide[start..stop].to_string()
}

/// The bumped count the family table gives for `n` items at `error` (the Ribbon cell reads
/// `bytes (human; bumped), bits`).
fn bumped_in_table(table: &str, n: u64, error: f64) -> u64 {
    let n = sizing::thousands(n);
    let row = table
        .lines()
        .find(|l| l.starts_with(&format!("| {n} | {error} |")))
        .unwrap_or_else(|| panic!("docs/sizing.md: no family row for {n} items at {error}"));
    let cell = row.split('|').nth(6).expect("a Ribbon cell");
    let count = &cell[cell.find(';').expect("'; bumped'") + 1..cell.find(')').expect("')'")];
    count
        .trim()
        .replace(',', "")
        .parse()
        .expect("a bumped count")
}

/// Sets up to this size are built here; a 1e8-item build (about 15 s and 3.4 GiB) is left to
/// the program, and its bumped count is only checked against the rate every build shows.
const BUILT_HERE: u64 = 10_000_000;

#[test]
fn family_table_is_the_programs_output_and_the_cores_builds() {
    let doc = block(FAMILY_BEGIN, FAMILY_END);
    let mut built = 0;
    let mut bumped = |n: u64, error: f64| {
        if n <= BUILT_HERE {
            let (count, bytes) = sizing::ribbon_of_items(n, error);
            let shape = redis_bf::bloom::ribbon::Shape::for_items(n, error).unwrap();
            assert_eq!(
                shape.bytes() + sizing::ribbon_bumped_bytes(count),
                bytes,
                "the table's Ribbon bytes are the core's, n {n} error {error}"
            );
            built += 1;
            count
        } else {
            let count = bumped_in_table(&doc, n, error);
            // About 55 per million items (core/src/ribbon/shape.rs, OVERHEAD); 1e7 builds: 50.
            assert!(
                (40 * (n / 1_000_000)..=80 * (n / 1_000_000)).contains(&count),
                "{count} bumped of {n} items at {error}: not what a build gives"
            );
            count
        }
    };
    let want = sizing::families(&mut bumped);
    assert_eq!(built, 6, "the 1e5 and 1e7 rows are built");
    assert!(
        doc == want,
        "docs/sizing.md's family table differs from `cargo run --release --example sizing -- families`; paste:\n{want}"
    );
}

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
