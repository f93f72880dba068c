//! Ribbon filters (`RF.*`, type `bf-ribbon`) on a real server, end to end: staging, the build
//! off the main thread (and inline inside MULTI), reads on both states, `RF.INFO`, the
//! `RF.SCANDUMP` walk compared with the core's own build of the same set, a SCANDUMP →
//! LOADCHUNK copy, `DEBUG RELOAD` keeping the bytes of both states, and a replica ending
//! byte-identical (`DEBUG DIGEST-VALUE`) after a build, on every server line (the build's
//! result replicates from a blocked client's reply callback, which each line handles its own
//! way). The full suites are `ribbon_commands.rs` and `ribbon_persistence.rs`.

mod common;

use common::{attach_replica, cmd, Server, Steps};
use redis::Connection;
use redis_bf::bloom::ribbon::{build, dump, item_hash};
use std::time::{Duration, Instant};

type Bytes = Vec<u8>;

fn items(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}")).collect()
}

/// Stages `items` with RF.MADD in batches of 1000.
fn stage(con: &mut Connection, key: &str, items: &[String]) {
    for batch in items.chunks(1000) {
        let _: Vec<i64> = cmd("RF.MADD").arg(key).arg(batch).query(con).unwrap();
    }
}

/// The RF.SCANDUMP walk: the header, then every `(next, chunk)`.
fn walk(con: &mut Connection, key: &str) -> (Bytes, Vec<(u64, Bytes)>) {
    let (one, header): (u64, Bytes) = cmd("RF.SCANDUMP").arg(key).arg(0).query(con).unwrap();
    assert_eq!(one, 1, "{key}");
    let mut chunks = Vec::new();
    let mut at = 1u64;
    loop {
        let (next, data): (u64, Bytes) = cmd("RF.SCANDUMP").arg(key).arg(at).query(con).unwrap();
        if next == 0 {
            assert!(data.is_empty(), "{key}: the end carries no bytes");
            return (header, chunks);
        }
        chunks.push((next, data));
        at = next;
    }
}

fn digest(con: &mut Connection, key: &str) -> String {
    cmd("DEBUG DIGEST-VALUE")
        .arg(key)
        .query::<Vec<String>>(con)
        .unwrap()[0]
        .clone()
}

/// Every item answers 1 through RF.MEXISTS.
fn all_found(con: &mut Connection, key: &str, items: &[String]) -> bool {
    items.chunks(1000).all(|batch| {
        let got: Vec<i64> = cmd("RF.MEXISTS").arg(key).arg(batch).query(con).unwrap();
        got.iter().all(|&g| g == 1)
    })
}

#[test]
fn stage_build_read_copy_and_reload() {
    let s = Server::start();
    let mut con = s.conn();
    let mut t = Steps::new(&s);
    t.steps(
        r#"
        RF.ADD rf a                 -> 1
        RF.ADD rf a                 -> 0
        RF.MADD rf b a c            -> [1,0,1]
        RF.CARD rf                  -> 3
        RF.CARD none                -> 0
        RF.EXISTS rf b              -> 1
        RF.EXISTS rf zz             -> 0
        RF.EXISTS none a            -> 0
        RF.MEXISTS rf a zz c        -> [1,0,1]
        RF.INFO rf STATE            -> [staging]
        RF.INFO rf ERROR            -> [nil]
        RF.INFO rf BITSPERITEM      -> [nil]
        RF.INFO rf nosuch           -> (error) Invalid information value
        RF.INFO none                -> (error) ERR not found
        SET str x                   -> OK
        RF.ADD str a                -> (error) WRONGTYPE Operation against a key holding the wrong kind of value
        RF.BUILD str                -> (error) WRONGTYPE Operation against a key holding the wrong kind of value
        RF.ADD rf                   -> (error) ERR wrong number of arguments for 'rf.add' command
        RF.BUILD none               -> (error) ERR not found
        RF.BUILD rf ERROR 0         -> (error) ERR bad error rate
        RF.BUILD rf ERROR 1         -> (error) ERR bad error rate
        RF.BUILD rf ERROR x         -> (error) ERR bad error rate
        RF.BUILD rf SIDEWAYS        -> (error) ERR syntax error
        RF.SCANDUMP rf 0            -> (error) ERR RF.SCANDUMP: the filter is not built
        RF.BUILD rf ERROR 0.001     -> OK
        RF.INFO rf STATE            -> [built]
        RF.INFO rf ERROR            -> ["0.001"]
        RF.CARD rf                  -> 3
        RF.MEXISTS rf a b c         -> [1,1,1]
        RF.ADD rf d                 -> (error) ERR RF.ADD: this Ribbon filter is built and read-only; stage the new list under another key, RF.BUILD it, then RENAME it over this one
        RF.MADD rf d                -> (error) ERR RF.MADD: this Ribbon filter is built and read-only; stage the new list under another key, RF.BUILD it, then RENAME it over this one
        RF.BUILD rf                 -> (error) ERR RF.BUILD: this Ribbon filter is built already
        RF.BUILD once ITEMS x y x   -> OK
        RF.CARD once                -> 2
        RF.MEXISTS once x y         -> [1,1]
        RF.BUILD empty ITEMS        -> (error) ERR wrong number of arguments for 'rf.build' command
        "#,
    );
    drop(t);

    // A set big enough for several reply chunks of its own, built off the main thread at the
    // config's 1 %: the server's bytes are the core's build of the same hashes.
    let set = items("item:", 60_000);
    stage(&mut con, "big", &set);
    let () = cmd("RF.BUILD big").query(&mut con).unwrap();
    assert!(
        all_found(&mut con, "big", &set),
        "no false negative after the build"
    );
    let core = build(set.iter().map(|i| item_hash(i.as_bytes())).collect(), 0.01).unwrap();
    let (header, chunks) = walk(&mut con, "big");
    assert_eq!(header, dump::encode_header(&core));
    let mut at = 1;
    for (next, data) in &chunks {
        assert_eq!(Some((*next, data.clone())), dump::chunk_at(&core, at));
        at = *next;
    }
    assert_eq!(dump::chunk_at(&core, at), None, "the walk covered the body");
    let info: Vec<redis::Value> = cmd("RF.INFO big").query(&mut con).unwrap();
    let size: i64 = cmd("MEMORY USAGE big").query(&mut con).unwrap();
    assert_eq!(info.len(), 10, "five fields");
    // Size is the value's bytes; MEMORY USAGE adds the key's few dozen.
    let value_size: i64 = redis::from_redis_value(info[7].clone()).unwrap();
    assert!(
        (1..=64).contains(&(size - value_size)),
        "{size} vs {value_size}"
    );
    let bits: f64 = redis::from_redis_value(info[9].clone()).unwrap();
    assert!(
        (bits - value_size as f64 * 8.0 / 60_000.0).abs() < 1e-9,
        "{bits}"
    );
    assert!(bits < 7.2, "1 % costs about 7 bits per item, got {bits}");

    // SCANDUMP → LOADCHUNK: the copy answers only once complete, then as the source.
    let () = cmd("RF.LOADCHUNK copy 1")
        .arg(&header)
        .query(&mut con)
        .unwrap();
    let probe: i64 = cmd("RF.EXISTS copy item:1").query(&mut con).unwrap();
    assert_eq!(probe, 0, "a half copy answers nothing");
    let refused = cmd("RF.LOADCHUNK copy 5 abc").query::<redis::Value>(&mut con);
    assert_eq!(
        common::reply_text(&refused),
        "(error) ERR received bad data"
    );
    for (next, data) in &chunks {
        let () = cmd("RF.LOADCHUNK copy")
            .arg(next)
            .arg(data)
            .query(&mut con)
            .unwrap();
    }
    assert_eq!(digest(&mut con, "copy"), digest(&mut con, "big"));
    assert!(all_found(&mut con, "copy", &set));

    // DEBUG RELOAD keeps both states' bytes (and the staging one's answers).
    stage(&mut con, "staged", &items("s", 2_500));
    let before: Vec<String> = ["big", "staged", "rf"]
        .iter()
        .map(|k| digest(&mut con, k))
        .collect();
    assert_ne!(before[0], before[1]);
    let () = cmd("DEBUG RELOAD").query(&mut con).unwrap();
    let after: Vec<String> = ["big", "staged", "rf"]
        .iter()
        .map(|k| digest(&mut con, k))
        .collect();
    assert_eq!(before, after);
    assert_eq!(walk(&mut con, "big"), (header, chunks));
    assert!(all_found(&mut con, "staged", &items("s", 2_500)));
    let state: Vec<String> = cmd("RF.INFO staged STATE").query(&mut con).unwrap();
    assert_eq!(state, ["staging"]);
}

#[test]
fn inline_inside_multi_and_the_same_set_in_any_order_is_the_same_value() {
    let s = Server::start();
    let mut con = s.conn();
    let set = items("m", 3_000);
    stage(&mut con, "fwd", &set);
    let mut rev = set.clone();
    rev.reverse();
    stage(&mut con, "rev", &rev);
    // Staging values of the same set digest alike, whatever the order it arrived in.
    assert_eq!(digest(&mut con, "fwd"), digest(&mut con, "rev"));
    let replies: Vec<String> = redis::pipe()
        .atomic()
        .cmd("RF.BUILD")
        .arg("fwd")
        .cmd("RF.INFO")
        .arg("fwd")
        .arg("STATE")
        .query::<Vec<redis::Value>>(&mut con)
        .unwrap()
        .into_iter()
        .map(|v| format!("{v:?}"))
        .collect();
    assert_eq!(replies.len(), 2);
    assert!(
        replies[1].contains("built"),
        "built inside the transaction: {replies:?}"
    );
    let () = cmd("RF.BUILD rev").query(&mut con).unwrap();
    assert_eq!(digest(&mut con, "fwd"), digest(&mut con, "rev"));
    // INFO bf counts both keys and no running build.
    let info: String = cmd("INFO bf").query(&mut con).unwrap();
    for want in [
        "bf_rf_filters:2",
        "bf_rf_items:6000",
        "bf_rf_builds_running:0",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
}

/// A build on the primary ends byte-identical on its replica, on every server line.
#[test]
fn a_replica_ends_with_the_primarys_bytes() {
    for (name, bin) in common::servers() {
        let primary = Server::start_on(&bin, &[], &[]);
        let replica = Server::start_on(&bin, &[], &[]);
        attach_replica(&replica, &primary);
        let mut p = primary.conn();
        let mut r = replica.conn();
        let set = items("r", 20_000);
        stage(&mut p, "k", &set);
        let () = cmd("RF.BUILD k ERROR 0.005").query(&mut p).unwrap();
        let () = cmd("RF.BUILD one ITEMS a b c").query(&mut p).unwrap();
        let want: Vec<String> = ["k", "one"].iter().map(|k| digest(&mut p, k)).collect();
        // Poll until the replica has applied the stream (or the deadline passed).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut got = Vec::new();
        while got != want && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
            got = ["k", "one"].iter().map(|k| digest(&mut r, k)).collect();
        }
        assert_eq!(got, want, "{name}: the replica's digests");
        let state: Vec<String> = cmd("RF.INFO k STATE").query(&mut r).unwrap();
        assert_eq!(state, ["built"], "{name}");
    }
}
