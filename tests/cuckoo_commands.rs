//! The CF.* write and read commands against a live server: CF.RESERVE, CF.ADD, CF.ADDNX,
//! CF.INSERT, CF.INSERTNX, CF.EXISTS, CF.MEXISTS, CF.COUNT, CF.DEL, CF.COMPACT. Replies (RESP2
//! and RESP3) and error texts per server line (RedisBloom 2.8's on Redis 7.x and Valkey, 8's
//! on Redis 8: run with `REDIS_SERVER=<redis 8 binary>` for the other line), replication and
//! AOF replay ending byte-identical, the memory budget, full and maximally expanded filters,
//! and no false negatives after deletions.
//!
//! Filters are inspected through `DUMP` (the RDB value: sub-filters, buckets, items, deletes,
//! bucket size, max iterations, expansion), which needs nothing but the data type.

mod common;

use common::errors_by_line::{self as by_line, redis8};
use common::{attach_replica, cmd, Server, Steps};
use std::time::{Duration, Instant};

/// The fixed part of a cuckoo filter's RDB value, read from a `DUMP` payload.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shape {
    filters: u64,
    buckets: u64,
    items: u64,
    deletes: u64,
    bucket_size: u64,
    max_iterations: u64,
    expansion: u64,
}

/// Reads an RDB length at `*at`.
fn rdb_len(p: &[u8], at: &mut usize) -> u64 {
    let b = p[*at];
    *at += 1;
    match b >> 6 {
        0 => u64::from(b & 0x3f),
        1 => {
            let v = (u64::from(b & 0x3f) << 8) | u64::from(p[*at]);
            *at += 1;
            v
        }
        _ if b == 0x80 => {
            let v = u32::from_be_bytes(p[*at..*at + 4].try_into().unwrap());
            *at += 4;
            u64::from(v)
        }
        _ if b == 0x81 => {
            let v = u64::from_be_bytes(p[*at..*at + 8].try_into().unwrap());
            *at += 8;
            v
        }
        _ => panic!("unexpected RDB length byte {b:#x}"),
    }
}

/// The shape of the filter at `key`, from its DUMP payload (RDB_TYPE_MODULE_2, module id,
/// then opcode-tagged unsigned values).
fn shape(con: &mut redis::Connection, key: &str) -> Shape {
    let p: Vec<u8> = cmd("DUMP").arg(key).query(con).unwrap();
    assert_eq!(p[0], 7, "not a module value: {key}");
    let mut at = 1;
    rdb_len(&p, &mut at); // module id
    let mut u = [0u64; 7];
    for v in &mut u {
        assert_eq!(rdb_len(&p, &mut at), 2, "expected an unsigned value");
        *v = rdb_len(&p, &mut at);
    }
    Shape {
        filters: u[0],
        buckets: u[1],
        items: u[2],
        deletes: u[3],
        bucket_size: u[4],
        max_iterations: u[5],
        expansion: u[6],
    }
}

/// A reply as steps write it (`1`, `(error) <text>`).
fn text(r: &redis::RedisResult<redis::Value>) -> String {
    common::reply_text(r)
}

fn dump(con: &mut redis::Connection, key: &str) -> Vec<u8> {
    cmd("DUMP").arg(key).query(con).unwrap()
}

#[test]
fn reserve_replies_and_errors() {
    let (_s, mut t, mut con) = Steps::start();
    let bs = by_line::CF_BUCKETSIZE_RANGE.text();
    let mi = by_line::CF_MAXITERATIONS_RANGE.text();
    let ex = by_line::CF_EXPANSION_RANGE.text();
    let cap = by_line::CF_RESERVE_CAPACITY_RANGE.text();
    let arity = "ERR wrong number of arguments for 'cf.reserve' command";
    for (line, want) in [
        ("CF.RESERVE", format!("(error) {arity}")),
        ("CF.RESERVE k", format!("(error) {arity}")),
        ("CF.RESERVE k 100 BUCKETSIZE", format!("(error) {arity}")),
        (
            "CF.RESERVE k 100 BUCKETSIZE 2 EXPANSION",
            format!("(error) {arity}"),
        ),
        ("CF.RESERVE k abc", "(error) Bad capacity".into()),
        ("CF.RESERVE k 1.5", "(error) Bad capacity".into()),
        ("CF.RESERVE k \"\"", "(error) Bad capacity".into()),
        ("CF.RESERVE k 0", format!("(error) {cap}")),
        ("CF.RESERVE k 3", format!("(error) {cap}")),
        ("CF.RESERVE k -1", format!("(error) {cap}")),
        ("CF.RESERVE k 7 BUCKETSIZE 4", format!("(error) {cap}")),
        ("CF.RESERVE k 509 BUCKETSIZE 255", format!("(error) {cap}")),
        ("CF.RESERVE k 1000 BUCKETSIZE 0", format!("(error) {bs}")),
        ("CF.RESERVE k 1000 BUCKETSIZE 256", format!("(error) {bs}")),
        ("CF.RESERVE k 1000 BUCKETSIZE -1", format!("(error) {bs}")),
        ("CF.RESERVE k 0 BUCKETSIZE 0", format!("(error) {bs}")),
        (
            "CF.RESERVE k 1000 BUCKETSIZE abc",
            "(error) Couldn't parse BUCKETSIZE".into(),
        ),
        (
            "CF.RESERVE k 1000 BUCKETSIZE 1.5",
            "(error) Couldn't parse BUCKETSIZE".into(),
        ),
        // A keyword without a value (RedisBloom read past the arguments).
        (
            "CF.RESERVE k 1000 FOO BUCKETSIZE",
            "(error) Couldn't parse BUCKETSIZE".into(),
        ),
        ("CF.RESERVE k 1000 MAXITERATIONS 0", format!("(error) {mi}")),
        (
            "CF.RESERVE k 1000 MAXITERATIONS 65536",
            format!("(error) {mi}"),
        ),
        (
            "CF.RESERVE k 100 EXPANSION 2 MAXITERATIONS 0",
            format!("(error) {mi}"),
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS 0 BUCKETSIZE 0",
            format!("(error) {mi}"),
        ),
        (
            "CF.RESERVE k 100 MAXITERATIONS MAXITERATIONS",
            "(error) Couldn't parse MAXITERATIONS".into(),
        ),
        ("CF.RESERVE k 1000 EXPANSION 32769", format!("(error) {ex}")),
        ("CF.RESERVE k 1000 EXPANSION -1", format!("(error) {ex}")),
        (
            "CF.RESERVE k 1000 EXPANSION abc",
            "(error) Couldn't parse EXPANSION".into(),
        ),
        ("EXISTS k", "0".into()),
    ] {
        t.eq(line, &want);
    }
    // Accepted: options in any case, unknown pairs ignored, the first of a repeated one used.
    for (key, line, want) in [
        ("a", "1000 BUCKETSIZE 1", (1, 1024, 1, 20, 1)),
        ("b", "1000 BUCKETSIZE 255", (1, 4, 255, 20, 1)),
        ("c", "510 BUCKETSIZE 255", (1, 2, 255, 20, 1)),
        ("d", "4", (1, 2, 2, 20, 1)),
        ("e", "5", (1, 2, 2, 20, 1)),
        (
            "f",
            "100 bucketsize 4 maxiterations 5 expansion 2",
            (1, 32, 4, 5, 2),
        ),
        ("g", "100 FOO 1", (1, 64, 2, 20, 1)),
        ("h", "100 BUCKETSIZE 4 BUCKETSIZE 1", (1, 32, 4, 20, 1)),
        ("i", "100 ITEMS x", (1, 64, 2, 20, 1)),
        ("j", "1000 EXPANSION 0", (1, 512, 2, 20, 0)),
        ("k3", "1000 EXPANSION 3", (1, 512, 2, 20, 4)),
        ("k5", "1000 EXPANSION 5", (1, 512, 2, 20, 8)),
        ("l", "1000 EXPANSION 32768", (1, 512, 2, 20, 32768)),
        ("m", "1000 MAXITERATIONS 65535", (1, 512, 2, 65535, 1)),
    ] {
        t.ok(format!("CF.RESERVE {key} {line}").as_str());
        let got = shape(&mut con, key);
        assert_eq!(
            (
                got.filters,
                got.buckets,
                got.bucket_size,
                got.max_iterations,
                got.expansion
            ),
            want,
            "CF.RESERVE {key} {line}"
        );
        assert_eq!((got.items, got.deletes), (0, 0));
    }
    t.steps(
        "
        CF.RESERVE a 100 -> (error) ERR item exists
        SET str v -> OK
        CF.RESERVE str 100 -> (error) WRONGTYPE Operation against a key holding the wrong kind of value
        ",
    );
    // Redis 8's capacity cap; on Redis 7 / Valkey 2^63-1 is too big for memory.
    if redis8() {
        t.err("CF.RESERVE big 1073741825", cap);
        t.err("CF.RESERVE big 9223372036854775807", cap);
    } else {
        t.err(
            "CF.RESERVE big 9223372036854775807",
            "ERR Insufficient memory to create filter",
        );
        t.err(
            "CF.RESERVE big 1099511627776",
            "ERR Insufficient memory to create filter",
        );
    }
    t.eq("EXISTS big", "0");
    t.eq("PING", "PONG");
}

#[test]
fn add_insert_replies() {
    let (_s, mut t, mut con) = Steps::start();
    let cap = by_line::CF_INSERT_CAPACITY_RANGE.text();
    for (line, want) in [
        (
            "CF.ADD",
            "(error) ERR wrong number of arguments for 'cf.add' command",
        ),
        (
            "CF.ADD k a b",
            "(error) ERR wrong number of arguments for 'cf.add' command",
        ),
        (
            "CF.ADDNX k",
            "(error) ERR wrong number of arguments for 'cf.addnx' command",
        ),
        (
            "CF.INSERT k ITEMS",
            "(error) ERR wrong number of arguments for 'cf.insert' command",
        ),
        (
            "CF.INSERT k CAPACITY 100",
            "(error) ERR wrong number of arguments for 'cf.insert' command",
        ),
        (
            "CF.INSERT k NOCREATE",
            "(error) ERR wrong number of arguments for 'cf.insert' command",
        ),
        (
            "CF.INSERT k x CAPACITY",
            "(error) Unknown argument received",
        ),
        (
            "CF.INSERTNX k ITEMS",
            "(error) ERR wrong number of arguments for 'cf.insertnx' command",
        ),
        (
            "CF.INSERT k FOO ITEMS a",
            "(error) Unknown argument received",
        ),
        (
            "CF.INSERT k \"\" ITEMS a",
            "(error) Unknown argument received",
        ),
        ("CF.INSERT k CAPACITY abc ITEMS a", "(error) Bad capacity"),
        ("CF.INSERT k NOCREATE ITEMS a", "(error) ERR not found"),
        ("CF.INSERT k NOPE ITEMS a", "(error) ERR not found"),
        (
            "CF.INSERTNX k CAPACITY 100 NOCREATE ITEMS a",
            "(error) ERR not found",
        ),
        ("EXISTS k", "0"),
        // Options by first letter; the last CAPACITY wins; ITEMS starts the items.
        ("CF.INSERT i1 CAP 100 ITEMS a", "[1]"),
        ("CF.INSERT i2 Cxyz 100 CAPACITY 200 ITEMS a", "[1]"),
        ("CF.INSERT i3 I a b", "[1,1]"),
        ("CF.INSERT i4 items a ITEMS b", "[1,1,1]"),
        ("CF.INSERT i5 ITEMS a a", "[1,1]"),
        ("CF.INSERTNX i6 ITEMS a a", "[1,0]"),
        ("CF.INSERT i7 CAPACITY 4 ITEMS a", "[1]"),
        ("CF.ADD a x", "1"),
        ("CF.ADD a x", "1"),
        ("CF.ADDNX a x", "0"),
        ("CF.ADDNX a y", "1"),
        ("CF.COUNT a x", "2"),
        ("CF.EXISTS a y", "1"),
        ("CF.EXISTS a z", "0"),
        ("CF.MEXISTS a x y z", "[1,1,0]"),
        ("CF.EXISTS nokey a", "0"),
        ("CF.MEXISTS nokey a b", "[0,0]"),
        ("CF.COUNT nokey a", "0"),
        (
            "CF.EXISTS a",
            "(error) ERR wrong number of arguments for 'cf.exists' command",
        ),
        (
            "CF.MEXISTS a",
            "(error) ERR wrong number of arguments for 'cf.mexists' command",
        ),
        (
            "CF.COUNT a x y",
            "(error) ERR wrong number of arguments for 'cf.count' command",
        ),
    ] {
        t.eq(line, want);
    }
    for line in [
        "CF.INSERT c0 CAPACITY 0 ITEMS a",
        "CF.INSERT c3 CAPACITY 3 ITEMS a",
        "CF.INSERTNX c4 CAPACITY -1 ITEMS a",
    ] {
        t.err(line, cap);
    }
    if redis8() {
        t.err("CF.INSERT c5 CAPACITY 1073741825 ITEMS a", cap);
    } else {
        t.eq("CF.INSERT c5 CAPACITY 1073741825 ITEMS a", "[1]");
    }
    t.eq("EXISTS c0 c3 c4", "0");
    // Auto-created filters: the configured defaults, CAPACITY replacing the initial size.
    assert_eq!(
        shape(&mut con, "a"),
        Shape {
            filters: 1,
            buckets: 512,
            items: 3,
            deletes: 0,
            bucket_size: 2,
            max_iterations: 20,
            expansion: 1
        }
    );
    assert_eq!(shape(&mut con, "i1").buckets, 64);
    assert_eq!(shape(&mut con, "i2").buckets, 128);
    assert_eq!(shape(&mut con, "i7").buckets, 2);
    // Wrong types: writes WRONGTYPE, reads 0, CF.DEL / CF.COMPACT their own texts.
    let wrongtype = "(error) WRONGTYPE Operation against a key holding the wrong kind of value";
    t.steps("SET str v -> OK\nLPUSH list v -> 1\nBF.ADD bloom a -> 1");
    for key in ["str", "list", "bloom"] {
        for (line, want) in [
            ("CF.ADD {} a", wrongtype),
            ("CF.ADDNX {} a", wrongtype),
            ("CF.INSERT {} ITEMS a", wrongtype),
            ("CF.INSERTNX {} ITEMS a", wrongtype),
            ("CF.RESERVE {} 100", wrongtype),
            ("CF.EXISTS {} a", "0"),
            ("CF.MEXISTS {} a", "[0]"),
            ("CF.COUNT {} a", "0"),
            ("CF.DEL {} a", "(error) Not found"),
            ("CF.COMPACT {} ", "(error) Cuckoo filter was not found"),
        ] {
            t.eq(line.replace("{}", key).trim(), want);
        }
    }
    t.steps(
        "
        BF.ADD a x -> (error) WRONGTYPE Operation against a key holding the wrong kind of value
        BF.EXISTS a x -> 0
        TYPE a -> MBbloomCF
        ",
    );
}

#[test]
fn resp3_replies() {
    let s = Server::start();
    let mut t = Steps::resp3(&s);
    t.steps(
        "
        CF.RESERVE r3 100 -> OK
        CF.ADD r3 a -> true
        CF.ADD r3 a -> true
        CF.ADDNX r3 a -> false
        CF.ADDNX r3 b -> true
        CF.INSERT r3 ITEMS a c -> [true,true]
        CF.INSERTNX r3 ITEMS a d -> [0,1]
        CF.EXISTS r3 a -> true
        CF.EXISTS r3 zz -> false
        CF.MEXISTS r3 a zz -> [true,false]
        CF.COUNT r3 a -> 3
        CF.DEL r3 a -> true
        CF.DEL r3 never -> false
        CF.COMPACT r3 -> OK
        CF.EXISTS nokey a -> false
        CF.MEXISTS nokey a b -> [false,false]
        CF.COUNT nokey a -> 0
        CF.DEL nokey a -> (error) Not found
        CF.ADD r3auto a -> true
        CF.INSERT r3ins ITEMS a -> [true]
        CF.INSERTNX r3insnx ITEMS a -> [1]
        CF.ADDNX r3addnx a -> true
        ",
    );
}

#[test]
fn full_filter() {
    let s = Server::start();
    for resp3 in [false, true] {
        let mut t = if resp3 {
            Steps::resp3(&s)
        } else {
            Steps::new(&s)
        };
        let (one, refused) = if resp3 {
            ("true", "false")
        } else {
            ("1", "-1")
        };
        t.ok("CF.RESERVE full 4 BUCKETSIZE 2 MAXITERATIONS 1 EXPANSION 0");
        for i in 0..4 {
            t.eq(format!("CF.ADD full x:{i}").as_str(), one);
        }
        for i in 4..8 {
            t.err(format!("CF.ADD full x:{i}").as_str(), "Filter is full");
        }
        t.eq(
            "CF.INSERT full ITEMS y:0 y:1 x:0",
            &format!("[{refused},{refused},{refused}]"),
        );
        // CF.INSERTNX answers integers in RESP3 too, -1 included.
        t.eq("CF.INSERTNX full ITEMS x:0 y:2", "[0,-1]");
        t.eq("CF.ADDNX full x:0", if resp3 { "false" } else { "0" });
        t.err("CF.ADDNX full y:3", "Filter is full");
        t.eq(
            "CF.MEXISTS full x:0 x:1 x:2 x:3 x:4 y:0",
            &if resp3 {
                "[true,true,true,true,false,false]".to_string()
            } else {
                "[1,1,1,1,0,0]".to_string()
            },
        );
        let mut con = s.conn();
        let sh = shape(&mut con, "full");
        assert_eq!((sh.filters, sh.items), (1, 4));
        t.eq("DEL full", "1");
    }
}

#[test]
fn maximum_expansions() {
    let (_s, mut t, mut con) = Steps::start();
    t.ok("CF.RESERVE maxed 2 BUCKETSIZE 1 EXPANSION 1");
    // One command may grow past 32 sub-filters: the limit is checked once per command.
    let items: Vec<String> = (0..100).map(|i| format!("m:{i}")).collect();
    let line = format!("CF.INSERT maxed ITEMS {}", items.join(" "));
    let r = t.run(line.as_str()).unwrap();
    let redis::Value::Array(a) = r else {
        panic!("{r:?}")
    };
    assert_eq!(a.len(), 100);
    assert!(a.iter().all(|v| *v == redis::Value::Int(1)));
    let sh = shape(&mut con, "maxed");
    assert!(sh.filters > 32, "{sh:?}");
    assert_eq!(sh.items, 100);
    for line in [
        "CF.INSERT maxed ITEMS late",
        "CF.ADD maxed late",
        "CF.ADDNX maxed m:0",
        "CF.INSERTNX maxed ITEMS m:0",
    ] {
        t.err(line, "Maximum expansions reached");
    }
    // Deletions and compaction still work; the limit stays as long as the count does.
    t.eq("CF.DEL maxed m:0", "1");
    t.ok("CF.COMPACT maxed");
    assert_eq!(shape(&mut con, "maxed").items, 99);
    t.err("CF.ADD maxed late", "Maximum expansions reached");
    for i in 1..100 {
        t.eq(format!("CF.EXISTS maxed m:{i}").as_str(), "1");
    }
    // cf:maxexp of the reference set: one CF.ADD at a time stops at 32 sub-filters.
    t.ok("CF.RESERVE one 2 BUCKETSIZE 1 EXPANSION 1");
    let mut refused = 0;
    for i in 0..100 {
        match text(&t.run(format!("CF.ADD one mx:{i}").as_str())).as_str() {
            "1" => {}
            "(error) Maximum expansions reached" => refused += 1,
            other => panic!("{other}"),
        }
    }
    let sh = shape(&mut con, "one");
    assert_eq!((sh.filters, sh.items, refused), (32, 62, 38));
}

#[test]
fn delete_count_and_compact() {
    let (_s, mut t, mut con) = Steps::start();
    t.steps(
        "
        CF.DEL x -> (error) ERR wrong number of arguments for 'cf.del' command
        CF.COMPACT -> (error) ERR wrong number of arguments for 'cf.compact' command
        CF.COMPACT a b -> (error) ERR wrong number of arguments for 'cf.compact' command
        CF.COMPACT nokey -> (error) Cuckoo filter was not found
        CF.RESERVE dl 100 -> OK
        CF.DEL dl a -> 0
        CF.ADD dl a -> 1
        CF.ADD dl a -> 1
        CF.COUNT dl a -> 2
        CF.DEL dl a -> 1
        CF.COUNT dl a -> 1
        CF.DEL dl a -> 1
        CF.DEL dl a -> 0
        CF.EXISTS dl a -> 0
        CF.COMPACT dl -> OK
        CF.DEL dl \"\" -> 0
        CF.ADD dl \"\" -> 1
        CF.COUNT dl \"\" -> 1
        CF.DEL dl \"\" -> 1
        ",
    );
    // cf:compact2 of the reference set: CF.COMPACT frees an emptied newest sub-filter.
    t.ok("CF.RESERVE c2 64");
    let items: Vec<String> = (0..120).map(|i| format!("c:{i}")).collect();
    t.run(format!("CF.INSERT c2 ITEMS {}", items.join(" ")).as_str())
        .unwrap();
    assert_eq!(shape(&mut con, "c2").filters, 3);
    for i in 110..120 {
        t.eq(format!("CF.DEL c2 c:{i}").as_str(), "1");
    }
    let sh = shape(&mut con, "c2");
    assert_eq!((sh.filters, sh.items, sh.deletes), (3, 110, 10));
    t.ok("CF.COMPACT c2");
    let sh = shape(&mut con, "c2");
    assert_eq!((sh.filters, sh.items, sh.deletes), (2, 110, 0));
    for i in 0..110 {
        t.eq(format!("CF.EXISTS c2 c:{i}").as_str(), "1");
    }
}

/// 10 000 items stay present while 10 000 others are added and deleted among them (with
/// growth and the automatic compactions deletions trigger).
#[test]
fn no_false_negatives_after_deletes() {
    let (_s, mut t, mut con) = Steps::start();
    t.ok("CF.RESERVE nf 2048 EXPANSION 2");
    let keep: Vec<String> = (0..10_000).map(|i| format!("keep:{i}")).collect();
    let gone: Vec<String> = (0..10_000).map(|i| format!("gone:{i}")).collect();
    for (k, g) in keep.chunks(500).zip(gone.chunks(500)) {
        let mut c = cmd("CF.INSERT");
        c.arg("nf").arg("ITEMS");
        for (a, b) in k.iter().zip(g) {
            c.arg(a).arg(b);
        }
        let r: Vec<i64> = c.query(&mut con).unwrap();
        assert!(r.iter().all(|&v| v == 1), "refused items: {r:?}");
    }
    let grown = shape(&mut con, "nf").filters;
    assert!(grown > 1, "the filter should have grown");
    let mut pipe = redis::pipe();
    for g in &gone {
        pipe.cmd("CF.DEL").arg("nf").arg(g);
    }
    let deleted: Vec<i64> = pipe.query(&mut con).unwrap();
    assert!(deleted.iter().all(|&v| v == 1));
    let sh = shape(&mut con, "nf");
    assert_eq!(sh.items, 10_000);
    // Compactions ran on the way (each resets the deletion counter).
    assert!(
        sh.deletes < 10_000,
        "deletions should have compacted: {sh:?}"
    );
    for k in keep.chunks(1000) {
        let r: Vec<i64> = cmd("CF.MEXISTS").arg("nf").arg(k).query(&mut con).unwrap();
        let missing: Vec<_> = k.iter().zip(&r).filter(|(_, &v)| v != 1).collect();
        assert!(missing.is_empty(), "false negatives: {missing:?}");
    }
    let _: () = cmd("CF.COMPACT").arg("nf").query(&mut con).unwrap();
    for k in keep.chunks(1000) {
        let r: Vec<i64> = cmd("CF.MEXISTS").arg("nf").arg(k).query(&mut con).unwrap();
        assert!(
            r.iter().all(|&v| v == 1),
            "false negatives after CF.COMPACT"
        );
    }
}

/// Waits until `replica` has applied everything `primary` sent so far.
fn sync(primary: &mut redis::Connection) {
    let n: i64 = cmd("WAIT").arg(1).arg(10_000).query(primary).unwrap();
    assert_eq!(n, 1, "the replica did not acknowledge");
}

/// Sets a `cf` config on a server under whichever name it has (`cf-*` on Redis 8, `cf.*`);
/// false when neither exists (the configs are not there).
fn try_cf_config(con: &mut redis::Connection, name: &str, value: &str) -> bool {
    [format!("cf-{name}"), format!("cf.{name}")]
        .iter()
        .any(|n| {
            cmd("CONFIG")
                .arg("SET")
                .arg(n)
                .arg(value)
                .query::<()>(con)
                .is_ok()
        })
}

/// Every kind of write on the primary; the replica's filters must be byte-identical, also when
/// the replica's `cf` defaults differ (auto-created filters are replicated as an explicit
/// CF.RESERVE) and when the primary refused items for lack of memory (not replicated).
#[test]
fn replica_ends_byte_identical() {
    let primary = Server::start();
    let replica = Server::start();
    attach_replica(&replica, &primary);
    let mut r = replica.conn();
    let mut p = primary.conn();
    // Other defaults on the replica, where the configs exist.
    let differs = try_cf_config(&mut r, "bucket-size", "4")
        & try_cf_config(&mut r, "initial-size", "64")
        & try_cf_config(&mut r, "max-iterations", "7")
        & try_cf_config(&mut r, "expansion-factor", "4");
    eprintln!("replica with other cf defaults: {differs}");
    let mut t = Steps::new(&primary);
    t.steps(
        "
        CF.ADD auto a -> 1
        CF.ADDNX autonx a -> 1
        CF.INSERT ins CAPACITY 100 ITEMS a b c -> [1,1,1]
        CF.INSERTNX insnx ITEMS a a b -> [1,0,1]
        CF.RESERVE res 1000 -> OK
        CF.RESERVE resx 1000 BUCKETSIZE 4 MAXITERATIONS 5 EXPANSION 2 -> OK
        CF.RESERVE full 4 BUCKETSIZE 2 MAXITERATIONS 1 EXPANSION 0 -> OK
        CF.INSERT full ITEMS f:0 f:1 f:2 f:3 f:4 f:5 f:6 -> [1,1,1,1,-1,-1,-1]
        ",
    );
    // Growth, deletions (with automatic compaction) and CF.COMPACT.
    t.ok("CF.RESERVE grow 64");
    let items: Vec<String> = (0..400).map(|i| format!("g:{i}")).collect();
    t.run(format!("CF.INSERT grow ITEMS {}", items.join(" ")).as_str())
        .unwrap();
    for i in (0..400).step_by(3) {
        t.eq(format!("CF.DEL grow g:{i}").as_str(), "1");
    }
    t.ok("CF.COMPACT grow");
    for i in 0..50 {
        t.eq(format!("CF.ADD res r:{i}").as_str(), "1");
        t.run(format!("CF.ADD auto a:{i}").as_str()).unwrap();
    }
    // A growth the primary's memory budget refuses: the replica (without that limit) must not
    // add the refused items either.
    t.ok("CF.RESERVE tight 64 BUCKETSIZE 2");
    t.ok("CONFIG SET bf.max-filter-bytes 64");
    let items: Vec<String> = (0..200).map(|i| format!("t:{i}")).collect();
    let r1 = t
        .run(format!("CF.INSERT tight ITEMS {}", items.join(" ")).as_str())
        .unwrap();
    let redis::Value::Array(r1) = r1 else {
        panic!("{r1:?}")
    };
    let refused = r1.iter().filter(|v| **v == redis::Value::Int(-1)).count();
    assert!(refused > 0, "the budget should refuse a growth");
    let mut refused_one = false;
    for i in 200..260 {
        match text(&t.run(format!("CF.ADD tight t:{i}").as_str())).as_str() {
            "1" => {}
            "(error) ERR Insufficient memory" => refused_one = true,
            other => panic!("{other}"),
        }
    }
    assert!(refused_one);
    t.ok("CONFIG SET bf.max-filter-bytes 0");
    drop(t);
    sync(&mut p);
    let keys = [
        "auto", "autonx", "ins", "insnx", "res", "resx", "full", "grow", "tight",
    ];
    for key in keys {
        assert_eq!(dump(&mut p, key), dump(&mut r, key), "{key} differs");
    }
    // The auto-created filters have the primary's defaults, whatever the replica's are.
    let sh = shape(&mut r, "auto");
    assert_eq!(
        (sh.buckets, sh.bucket_size, sh.max_iterations),
        (512, 2, 20)
    );
    let sh = shape(&mut r, "res");
    assert_eq!(
        (sh.buckets, sh.bucket_size, sh.max_iterations),
        (512, 2, 20)
    );
    // CF.COMPACT is registered readonly (as in RedisBloom) but refuses on a read-only replica.
    let e = cmd("CF.COMPACT")
        .arg("grow")
        .query::<()>(&mut r)
        .unwrap_err();
    assert_eq!(e.code(), Some("READONLY"), "{e}");
    assert!(
        e.to_string()
            .contains("You can't write against a read only replica."),
        "{e}"
    );
    assert_eq!(dump(&mut p, "grow"), dump(&mut r, "grow"));
}

/// An AOF replay rebuilds the same filters, the auto-created ones from the explicit
/// CF.RESERVE written before their first command.
#[test]
fn aof_replay_byte_identical() {
    let s = Server::start_with(&[], &[("appendonly", "yes"), ("appendfsync", "always")]);
    let mut con = s.conn();
    let mut t = Steps::new(&s);
    t.steps(
        "
        CF.ADD auto a -> 1
        CF.INSERT ins CAPACITY 200 ITEMS a b -> [1,1]
        CF.RESERVE res 100 -> OK
        CF.ADD res x -> 1
        CF.DEL res x -> 1
        CF.DEL res never -> 0
        ",
    );
    t.ok("CF.RESERVE grow 64");
    let items: Vec<String> = (0..300).map(|i| format!("c:{i}")).collect();
    t.run(format!("CF.INSERT grow ITEMS {}", items.join(" ")).as_str())
        .unwrap();
    for i in 0..200 {
        t.eq(format!("CF.DEL grow c:{i}").as_str(), "1");
    }
    t.ok("CF.COMPACT grow");
    drop(t);
    let keys = ["auto", "ins", "res", "grow"];
    let before: Vec<Vec<u8>> = keys.iter().map(|k| dump(&mut con, k)).collect();
    // The AOF holds the creations spelled out.
    let dir: String = {
        let v: Vec<String> = cmd("CONFIG").arg("GET").arg("dir").query(&mut con).unwrap();
        v[1].clone()
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let aof = loop {
        let mut text = Vec::new();
        for e in std::fs::read_dir(format!("{dir}/appendonlydir"))
            .unwrap()
            .flatten()
        {
            if e.file_name().to_string_lossy().contains(".incr.") {
                text.extend(std::fs::read(e.path()).unwrap());
            }
        }
        if !text.is_empty() || Instant::now() > deadline {
            break String::from_utf8_lossy(&text).into_owned();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    for want in [
        "CF.RESERVE\r\n$4\r\nauto\r\n$4\r\n1024\r\n$10\r\nBUCKETSIZE\r\n$1\r\n2\r\n$13\r\nMAXITERATIONS\r\n$2\r\n20\r\n$9\r\nEXPANSION\r\n$1\r\n1\r\n",
        "CF.RESERVE\r\n$3\r\nins\r\n$3\r\n200\r\n$10\r\nBUCKETSIZE\r\n",
        "CF.RESERVE\r\n$3\r\nres\r\n$3\r\n100\r\n$10\r\nBUCKETSIZE\r\n",
    ] {
        assert!(aof.contains(want), "the AOF lacks {want:?}:\n{aof}");
    }
    assert_eq!(
        aof.matches("never").count(),
        0,
        "a CF.DEL that found nothing was written"
    );
    let _: () = cmd("DEBUG").arg("LOADAOF").query(&mut con).unwrap();
    for (k, b) in keys.iter().zip(&before) {
        assert_eq!(&dump(&mut con, k), b, "{k} differs after the AOF replay");
    }
}

/// The memory budget (`bf.max-filter-bytes` here) refuses a creation and a growth with
/// RedisBloom's texts, changing nothing.
#[test]
fn memory_budget_refusals() {
    let (_s, mut t, mut con) = Steps::start();
    t.ok("CONFIG SET bf.max-filter-bytes 1024");
    t.steps(
        "
        CF.RESERVE big 4096 -> (error) ERR Insufficient memory to create filter
        CF.INSERT big2 CAPACITY 4096 ITEMS a -> (error) ERR Insufficient memory to create filter
        EXISTS big big2 -> 0
        CF.RESERVE small 1024 -> OK
        ",
    );
    let mut outcomes = (0, 0);
    for i in 0..2000 {
        match text(&t.run(format!("CF.ADD small s:{i}").as_str())).as_str() {
            "1" => outcomes.0 += 1,
            "(error) ERR Insufficient memory" => outcomes.1 += 1,
            other => panic!("{other}"),
        }
    }
    let sh = shape(&mut con, "small");
    assert_eq!((sh.filters, sh.items), (1, outcomes.0));
    assert!(outcomes.1 > 0);
    let r = t
        .run("CF.INSERT small ITEMS n:0 n:1 n:2 n:3 n:4 n:5 n:6 n:7")
        .unwrap();
    let redis::Value::Array(r) = r else {
        panic!("{r:?}")
    };
    assert!(r.contains(&redis::Value::Int(-1)), "{r:?}");
    t.ok("CONFIG SET bf.max-filter-bytes 0");
    t.eq("CF.ADD small s:late", "1");
}

/// CF.MEXISTS on a filter big enough for its prefetching batches answers as CF.EXISTS does,
/// item by item, for batches of every length around the batch size.
#[test]
fn mexists_on_a_big_filter_matches_exists() {
    let (_s, mut t, mut con) = Steps::start();
    t.ok("CF.RESERVE bigm 2097152"); // 2^21
    let items: Vec<String> = (0..3000).map(|i| format!("b:{i}")).collect();
    let r: Vec<i64> = cmd("CF.INSERT")
        .arg("bigm")
        .arg("ITEMS")
        .arg(&items)
        .query(&mut con)
        .unwrap();
    assert!(r.iter().all(|&v| v == 1));
    let probes: Vec<String> = (0..1500)
        .map(|i| {
            if i % 2 == 0 {
                format!("b:{i}")
            } else {
                format!("absent:{i}")
            }
        })
        .collect();
    let mut pipe = redis::pipe();
    for p in &probes {
        pipe.cmd("CF.EXISTS").arg("bigm").arg(p);
    }
    let one_by_one: Vec<i64> = pipe.query(&mut con).unwrap();
    assert!(one_by_one.iter().step_by(2).all(|&v| v == 1));
    for len in [1, 15, 16, 17, 33, 1500] {
        for chunk in probes.chunks(len).zip(one_by_one.chunks(len)).take(4) {
            let got: Vec<i64> = cmd("CF.MEXISTS")
                .arg("bigm")
                .arg(chunk.0)
                .query(&mut con)
                .unwrap();
            assert_eq!(&got[..], chunk.1, "batch of {len}");
        }
    }
}

/// CF.INSERT and CF.INSERTNX on filters big enough for their prefetching ring (tables of at
/// least 1 MiB) store exactly what CF.ADD / CF.ADDNX store item by item: every reply and every
/// byte (CF.SCANDUMP) the same, for batches of every length around the ring's size, with
/// duplicates, and with the filter growing new sub-filters inside a batch (bucket size 1 and
/// one eviction make insertions fail early).
#[test]
fn insert_on_a_big_filter_matches_add_item_by_item() {
    let s = Server::start();
    let mut con = s.conn();
    let items: Vec<String> = (0..700_000).map(|i| format!("g:{}", i % 650_000)).collect();
    for (nx, batch, add) in [
        (false, "CF.INSERT", "CF.ADD"),
        (true, "CF.INSERTNX", "CF.ADDNX"),
    ] {
        for key in ["batched", "single"] {
            let _: () = cmd("CF.RESERVE")
                .arg(key)
                .arg(1 << 20)
                .arg("BUCKETSIZE")
                .arg(1)
                .arg("MAXITERATIONS")
                .arg(1)
                .query(&mut con)
                .unwrap();
        }
        let mut batched = Vec::new();
        let mut at = 0;
        for len in [1, 15, 16, 17, 33, 1000, 65_536].iter().cycle() {
            if at == items.len() {
                break;
            }
            let end = (at + len).min(items.len());
            let r: Vec<i64> = cmd(batch)
                .arg("batched")
                .arg("ITEMS")
                .arg(&items[at..end])
                .query(&mut con)
                .unwrap();
            batched.extend(r);
            at = end;
        }
        let mut single = Vec::new();
        for part in items.chunks(10_000) {
            let mut pipe = redis::pipe();
            for it in part {
                pipe.cmd(add).arg("single").arg(it);
            }
            let r: Vec<i64> = pipe.query(&mut con).unwrap();
            single.extend(r);
        }
        assert_eq!(batched, single, "{batch}: replies");
        let dump = common::cf_scandump(&mut con, b"batched");
        assert!(
            dump.len() > 2,
            "{batch}: the filter grew ({} chunks)",
            dump.len()
        );
        assert_eq!(
            dump,
            common::cf_scandump(&mut con, b"single"),
            "{batch}: bytes"
        );
        if nx {
            assert!(batched.contains(&0), "{batch}: duplicates answered 0");
        }
        let _: () = cmd("DEL")
            .arg("batched")
            .arg("single")
            .query(&mut con)
            .unwrap();
    }
}

/// Keyspace notifications (class `d`): `cf.reserve` on creation (before the add's event),
/// `cf.add` when an add stored an item, `cf.del` when CF.DEL removed a copy, `cf.compact`;
/// nothing for reads, refusals and writes that changed nothing.
#[test]
fn keyspace_events() {
    let s = Server::start();
    let mut c = s.conn();
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyevent@*__:*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let _: () = cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("Edg")
        .query(&mut c)
        .unwrap();
    for (commands, want) in [
        ("CF.RESERVE r 100", "cf.reserve r"),
        (
            "CF.RESERVE r 100; CF.RESERVE r2 1; CF.RESERVE s 100 FOO",
            "",
        ),
        ("CF.ADD a x", "cf.reserve a, cf.add a"),
        ("CF.ADDNX a x; CF.INSERTNX a ITEMS x x", ""),
        ("CF.ADD a x", "cf.add a"),
        (
            "CF.INSERT i CAPACITY 50 ITEMS p q",
            "cf.reserve i, cf.add i",
        ),
        ("CF.INSERTNX i NOCREATE ITEMS p z", "cf.add i"),
        (
            "CF.INSERT nope NOCREATE ITEMS p; CF.INSERT nope CAPACITY 1 ITEMS p",
            "",
        ),
        ("CF.EXISTS a x; CF.MEXISTS a x y; CF.COUNT a x", ""),
        ("CF.DEL a never; CF.DEL nokey x", ""),
        ("CF.DEL a x", "cf.del a"),
        ("CF.COMPACT a", "cf.compact a"),
        ("CF.COMPACT nokey", ""),
        (
            "CF.RESERVE full 4 MAXITERATIONS 1 EXPANSION 0; CF.INSERT full ITEMS 0 1 2 3",
            "cf.reserve full, cf.add full",
        ),
    ] {
        for line in commands.split("; ") {
            let args = common::split_args(line);
            let mut command = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
            for a in &args[1..] {
                command.arg(&a[..]);
            }
            let _ = command.query::<redis::Value>(&mut c);
        }
        // A sentinel: an event of a generic command marks the end of these commands' events.
        let _: () = cmd("SET").arg("sentinel").arg(1).query(&mut c).unwrap();
        let _: () = cmd("DEL").arg("sentinel").query(&mut c).unwrap();
        let mut got = Vec::new();
        loop {
            let m = ps.get_message().expect("notification");
            let channel = m.get_channel_name().to_string();
            let key: String = m.get_payload().unwrap();
            let event = channel.rsplit(':').next().unwrap().to_string();
            if key == "sentinel" {
                break;
            }
            got.push(format!("{event} {key}"));
        }
        assert_eq!(got.join(", "), want, "{commands}");
    }
}

/// Single-item commands on an existing filter, and CF.MEXISTS / CF.INSERT without refusals,
/// make no heap allocation in the module (`INFO bf` `bf_heap_allocations`).
#[test]
fn single_item_and_batch_commands_allocate_nothing() {
    let s = Server::start();
    let mut con = s.conn();
    let allocations =
        |con: &mut redis::Connection| common::info_num(con, "bf", "bf_heap_allocations");
    let _: () = cmd("CF.RESERVE")
        .arg("al")
        .arg(100_000)
        .query(&mut con)
        .unwrap();
    let _: () = cmd("CF.RESERVE")
        .arg("big")
        .arg(1 << 21)
        .query(&mut con)
        .unwrap();
    let mut p = redis::pipe();
    for key in ["al", "big"] {
        for i in 0..500 {
            p.cmd("CF.ADD").arg(key).arg(format!("x{i}")).ignore();
            p.cmd("CF.ADDNX").arg(key).arg(format!("x{i}")).ignore();
            p.cmd("CF.EXISTS").arg(key).arg(format!("x{i}")).ignore();
            p.cmd("CF.COUNT").arg(key).arg(format!("y{i}")).ignore();
            p.cmd("CF.DEL").arg(key).arg(format!("x{i}")).ignore();
        }
        let items: Vec<String> = (0..100).map(|i| format!("z{i}")).collect();
        p.cmd("CF.INSERT")
            .arg(key)
            .arg("ITEMS")
            .arg(&items)
            .ignore();
        p.cmd("CF.INSERTNX")
            .arg(key)
            .arg("ITEMS")
            .arg(&items)
            .ignore();
        p.cmd("CF.MEXISTS").arg(key).arg(&items).ignore();
    }
    let before = allocations(&mut con);
    let () = p.query(&mut con).unwrap();
    assert_eq!(allocations(&mut con) - before, 0);
    // A creation allocates (the counter counts).
    let _: () = cmd("CF.ADD").arg("new").arg("a").query(&mut con).unwrap();
    assert!(allocations(&mut con) > before);
}

/// Filters whose later sub-filters are not a power of two in size (a `CF.LOADCHUNK` header
/// with expansion 3: 4, 12 and 36 buckets, as RedisBloom makes them) survive DUMP / RESTORE,
/// COPY and DEBUG RELOAD, and still take items. Their RDB value used to be refused, which
/// aborted the server on DEBUG RELOAD (and on a restart or a full sync).
#[test]
fn odd_expansion_filters_reload() {
    let s = Server::start();
    let mut con = s.conn();
    // items 20, buckets 4, deletes 0, sub-filters 3, bucket size 2, max iterations 20, expansion 3
    let mut header = Vec::new();
    for v in [20u64, 4, 0, 3] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    for v in [2u16, 20, 3] {
        header.extend_from_slice(&v.to_le_bytes());
    }
    let _: () = cmd("CF.LOADCHUNK")
        .arg("odd")
        .arg(1)
        .arg(&header)
        .query(&mut con)
        .unwrap();
    let add: i64 = cmd("CF.ADD").arg("odd").arg("x").query(&mut con).unwrap();
    assert_eq!(add, 1);
    let want = shape(&mut con, "odd");
    assert_eq!((want.filters, want.expansion, want.items), (3, 3, 21));
    let payload = dump(&mut con, "odd");
    let r: String = cmd("RESTORE")
        .arg("odd:r")
        .arg(0)
        .arg(&payload)
        .query(&mut con)
        .unwrap();
    assert_eq!(r, "OK");
    let copied: i64 = cmd("COPY").arg("odd").arg("odd:c").query(&mut con).unwrap();
    assert_eq!(copied, 1);
    let r: String = cmd("DEBUG").arg("RELOAD").query(&mut con).unwrap();
    assert_eq!(r, "OK");
    for key in ["odd", "odd:r", "odd:c"] {
        assert_eq!(dump(&mut con, key), payload, "{key}");
        let n: i64 = cmd("CF.COUNT").arg(key).arg("x").query(&mut con).unwrap();
        assert_eq!(n, 1, "{key}");
    }
}

/// CF.INFO answers the item and delete counters of a CF.LOADCHUNK header as RedisBloom does
/// (as signed 64-bit integers: 2^64 − 1 is -1, 2^63 is its negative); CF.DEBUG prints them
/// unsigned.
#[test]
fn info_counters_from_a_header_are_signed() {
    let s = Server::start();
    let mut con = s.conn();
    for (items, deletes, want_items, want_deletes) in [
        (u64::MAX, 1u64 << 63, -1i64, i64::MIN),
        (20, u64::MAX - 1, 20, -2),
        (i64::MAX as u64, 0, i64::MAX, 0),
    ] {
        let mut header = Vec::new();
        for v in [items, 4, deletes, 1] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        for v in [2u16, 20, 1] {
            header.extend_from_slice(&v.to_le_bytes());
        }
        let key = format!("counters:{items}:{deletes}");
        let _: () = cmd("CF.LOADCHUNK")
            .arg(&key)
            .arg(1)
            .arg(&header)
            .query(&mut con)
            .unwrap();
        let info: Vec<redis::Value> = cmd("CF.INFO").arg(&key).query(&mut con).unwrap();
        assert_eq!(info[7], redis::Value::Int(want_items), "{key}");
        assert_eq!(info[9], redis::Value::Int(want_deletes), "{key}");
        let debug: String = cmd("CF.DEBUG").arg(&key).query(&mut con).unwrap();
        assert!(
            debug.contains(&format!(" items:{items} deletes:{deletes} ")),
            "{debug}"
        );
    }
}
