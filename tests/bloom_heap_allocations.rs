//! Single-item commands pay nothing for the batch machinery: `BF.ADD` and `BF.EXISTS` on an
//! existing plain filter make no heap allocation at all in the module, counted by the
//! module's allocator (`INFO bf` `bf_heap_allocations`, which the INFO callback itself does
//! not move). Batch commands and creations do allocate, which shows the counter counts.

mod common;

use common::{info_num, Server};

fn allocations(con: &mut redis::Connection) -> u64 {
    info_num(con, "bf", "bf_heap_allocations")
}

/// Runs `commands` (one pipeline) and returns how many allocations the module made meanwhile.
fn allocations_during(con: &mut redis::Connection, commands: &[Vec<String>]) -> u64 {
    let before = allocations(con);
    let mut p = redis::pipe();
    for c in commands {
        p.cmd(&c[0]).arg(&c[1..]).ignore();
    }
    if !commands.is_empty() {
        let () = p.query(con).expect("pipeline");
    }
    allocations(con) - before
}

fn line(s: &str) -> Vec<String> {
    s.split(' ').map(String::from).collect()
}

#[test]
fn single_item_commands_allocate_nothing() {
    let server = Server::start();
    let mut con = server.conn();
    // A 10M-capacity filter (12 MiB, one layer) and a small one that grows to three layers.
    let () = common::cmd("BF.RESERVE big 0.01 10000000")
        .query(&mut con)
        .unwrap();
    let () = common::cmd("BF.RESERVE small 0.01 100")
        .query(&mut con)
        .unwrap();
    let _: Vec<i64> = redis::cmd("BF.MADD")
        .arg("small")
        .arg((0..400).map(|i| format!("s{i}")).collect::<Vec<_>>())
        .query(&mut con)
        .unwrap();
    let layers: i64 = common::cmd("BF.INFO small FILTERS")
        .query::<Vec<i64>>(&mut con)
        .unwrap()[0];
    assert_eq!(layers, 3);
    assert_eq!(allocations_during(&mut con, &[]), 0, "INFO alone");

    let mut single = Vec::new();
    for key in ["big", "small"] {
        for i in 0..1000 {
            single.push(line(&format!("BF.ADD {key} item{i}"))); // new (small: fits, no growth)
            single.push(line(&format!("BF.ADD {key} item{i}"))); // present
            single.push(line(&format!("BF.EXISTS {key} item{i}")));
            single.push(line(&format!("BF.EXISTS {key} never{i}")));
        }
    }
    single.push(line("BF.EXISTS missing x"));
    // The small filter may grow a fourth layer under these adds: that one is allowed.
    let before_layers = layers;
    let n = allocations_during(&mut con, &single);
    let grown: i64 = common::cmd("BF.INFO small FILTERS")
        .query::<Vec<i64>>(&mut con)
        .unwrap()[0]
        - before_layers;
    assert!(
        n <= grown as u64 * 2,
        "BF.ADD / BF.EXISTS made {n} allocations ({grown} layer(s) grown)"
    );
    // Without growth: exactly none.
    let mut again = Vec::new();
    for key in ["big", "small"] {
        for i in 0..1000 {
            again.push(line(&format!("BF.ADD {key} item{i}")));
            again.push(line(&format!("BF.EXISTS {key} item{i}")));
            again.push(line(&format!("BF.EXISTS {key} other{i}")));
        }
    }
    assert_eq!(
        allocations_during(&mut con, &again),
        0,
        "BF.ADD / BF.EXISTS"
    );
    for i in 0..200 {
        again.push(line(&format!("BF.ADD big more{i}")));
    }
    assert_eq!(
        allocations_during(&mut con, &again),
        0,
        "BF.ADD of new items"
    );

    // The counter counts: a batch allocates its argument vector, a creation its filter.
    assert!(allocations_during(&mut con, &[line("BF.MADD big a b c")]) >= 1);
    assert!(allocations_during(&mut con, &[line("BF.MEXISTS big a b c")]) >= 1);
    assert!(allocations_during(&mut con, &[line("BF.ADD newkey x")]) >= 2);
}
