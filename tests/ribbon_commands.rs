//! The RF.* commands (static Ribbon filters, type `bf-ribbon`) against a live server: every
//! command's replies and errors (arity, missing keys, WRONGTYPE both ways with Bloom, cuckoo
//! and string keys, bad error rates, the read-only built key), RF.INFO in RESP2 and RESP3,
//! COMMAND INFO / DOCS / GETKEYS and the ACL category `ribbon`, keyspace events, the `INFO bf`
//! ribbon counters, SCANDUMP / LOADCHUNK copies, and accuracy: a built filter is byte for byte
//! the core's build of the same set (`redis_bf::bloom::ribbon::build`), has no false negative,
//! and its measured false-positive rate is within a binomial tail bound of ε.

mod common;

use common::{
    cmd, config_set, info_num, loadchunk_walk, raw_command, rf_core, rf_core_walk, rf_scandump,
    split_args, Server, Steps,
};
use redis::{Connection, Value};
use std::time::Duration;

/// The error a write to a built key answers (`RF.ADD` or `RF.MADD`).
fn read_only(command: &str) -> String {
    format!(
        "ERR {command}: this Ribbon filter is built and read-only; stage the new list under \
         another key, RF.BUILD it, then RENAME it over this one"
    )
}

const BAD_RATE: &str = "ERR bad error rate";
const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The nine RF commands, lower case, with whether each writes.
const COMMANDS: [(&str, bool); 9] = [
    ("rf.add", true),
    ("rf.madd", true),
    ("rf.build", true),
    ("rf.exists", false),
    ("rf.mexists", false),
    ("rf.card", false),
    ("rf.info", false),
    ("rf.scandump", false),
    ("rf.loadchunk", true),
];

fn arity(command: &str) -> String {
    format!("(error) ERR wrong number of arguments for '{command}' command")
}

/// Sends a command line, ignoring the reply.
fn run(con: &mut Connection, line: &str) -> redis::RedisResult<Value> {
    let args = split_args(line);
    let mut c = redis::cmd(std::str::from_utf8(&args[0]).unwrap());
    for a in &args[1..] {
        c.arg(&a[..]);
    }
    c.query(con)
}

/// One numeric field of RF.INFO (RESP2: an array of one, as BF.INFO answers).
fn info_u64(con: &mut Connection, key: &str, field: &str) -> u64 {
    let v: Vec<u64> = cmd("RF.INFO").arg(key).arg(field).query(con).unwrap();
    v[0]
}

/// `n` items `prefix:i`.
fn items(prefix: &str, n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| format!("{prefix}:{i}").into_bytes())
        .collect()
}

/// Stages `items` under `key` with RF.MADD in batches of 1000; every reply must be 1.
fn stage(con: &mut Connection, key: &str, items: &[Vec<u8>]) {
    for batch in items.chunks(1000) {
        let got: Vec<i64> = cmd("RF.MADD").arg(key).arg(batch).query(con).unwrap();
        assert_eq!(got, vec![1; batch.len()], "RF.MADD {key}");
    }
}

#[test]
fn arity_missing_keys_and_wrong_types() {
    let s = Server::start();
    let mut t = Steps::new(&s);
    // Arity: Redis' own error, for every command, too few and too many.
    for (line, command) in [
        ("RF.ADD", "rf.add"),
        ("RF.ADD k", "rf.add"),
        ("RF.ADD k a b", "rf.add"),
        ("RF.MADD", "rf.madd"),
        ("RF.MADD k", "rf.madd"),
        ("RF.BUILD", "rf.build"),
        ("RF.EXISTS", "rf.exists"),
        ("RF.EXISTS k", "rf.exists"),
        ("RF.EXISTS k a b", "rf.exists"),
        ("RF.MEXISTS", "rf.mexists"),
        ("RF.MEXISTS k", "rf.mexists"),
        ("RF.CARD", "rf.card"),
        ("RF.CARD k x", "rf.card"),
        ("RF.INFO", "rf.info"),
        ("RF.INFO k ITEMS SIZE", "rf.info"),
        ("RF.SCANDUMP", "rf.scandump"),
        ("RF.SCANDUMP k", "rf.scandump"),
        ("RF.SCANDUMP k 0 1", "rf.scandump"),
        ("RF.LOADCHUNK", "rf.loadchunk"),
        ("RF.LOADCHUNK k 1", "rf.loadchunk"),
        ("RF.LOADCHUNK k 1 x y", "rf.loadchunk"),
    ] {
        t.eq(line, &arity(command));
    }
    // Missing keys: reads answer as BF.* does, RF.INFO and RF.BUILD without ITEMS refuse.
    t.steps(
        r#"
        RF.EXISTS k a -> 0
        RF.MEXISTS k a b -> [0,0]
        RF.CARD k -> 0
        RF.INFO k -> (error) ERR not found
        RF.INFO k STATE -> (error) ERR not found
        RF.BUILD k -> (error) ERR not found
        RF.BUILD k ERROR 0.01 -> (error) ERR not found
        EXISTS k -> 0
        "#,
    );
    // Wrong types, both ways: RF.* on a string, a Bloom and a cuckoo filter, and BF.*, CF.*
    // and GET on a Ribbon key (staging, then built).
    t.steps(
        r#"
        SET str v -> OK
        BF.ADD bf a -> 1
        CF.ADD cf a -> 1
        RF.ADD rs a -> 1
        RF.BUILD rb ITEMS a b -> OK
        "#,
    );
    // (keys, command lines with `{}` for the key, the reply of each).
    let other = ["str", "bf", "cf"];
    let ribbon = ["rs", "rb"];
    let wrongtype = format!("(error) {WRONGTYPE}");
    for (keys, lines, want) in [
        (
            &other[..],
            &[
                "RF.ADD {} a",
                "RF.MADD {} a b",
                "RF.BUILD {}",
                "RF.BUILD {} ITEMS a",
                "RF.CARD {}",
                "RF.INFO {}",
                "RF.INFO {} STATE",
                "RF.SCANDUMP {} 0",
            ][..],
            wrongtype.as_str(),
        ),
        // Membership reads answer 0 on another type, as BF.EXISTS and CF.EXISTS do.
        (&other, &["RF.EXISTS {} a"], "0"),
        (&other, &["RF.MEXISTS {} a b"], "[0,0]"),
        (&ribbon[..], &["BF.EXISTS {} a", "CF.EXISTS {} a"], "0"),
        (
            &ribbon[..],
            &[
                "BF.ADD {} a",
                "BF.INFO {}",
                "CF.ADD {} a",
                "CF.INFO {}",
                "GET {}",
            ],
            &wrongtype,
        ),
        (&ribbon[..], &["TYPE {}"], "bf-ribbon"),
    ] {
        for key in keys {
            for line in lines {
                t.eq(line.replace("{}", key).as_str(), want);
            }
        }
    }
    // Nothing changed by the refusals.
    t.steps(
        r#"
        GET str -> "v"
        BF.CARD bf -> 1
        CF.EXISTS cf a -> 1
        RF.CARD rs -> 1
        RF.INFO rs STATE -> [staging]
        RF.CARD rb -> 2
        RF.INFO rb STATE -> [built]
        "#,
    );
}

#[test]
fn staging_build_and_read_only_replies() {
    let s = Server::start();
    let mut t = Steps::new(&s);
    t.steps(
        r#"
        RF.ADD k a -> 1
        RF.ADD k a -> 0
        RF.MADD k a b c b -> [0,1,1,0]
        RF.ADD k "" -> 1
        RF.ADD k "\x00\xff" -> 1
        RF.EXISTS k a -> 1
        RF.EXISTS k "" -> 1
        RF.EXISTS k "\x00\xff" -> 1
        RF.EXISTS k z -> 0
        RF.MEXISTS k a z c "\x00\xff" -> [1,0,1,1]
        RF.CARD k -> 5
        RF.INFO k STATE -> [staging]
        RF.INFO k state -> [staging]
        RF.INFO k ITEMS -> [5]
        RF.INFO k ERROR -> [nil]
        RF.INFO k BITSPERITEM -> [nil]
        RF.SCANDUMP k 0 -> (error) ERR RF.SCANDUMP: the filter is not built
        RF.SCANDUMP k 1 -> (error) ERR RF.SCANDUMP: the filter is not built
        "#,
    );
    // Bad error rates: refused before anything is built or staged.
    for rate in [
        "0", "1", "-0.1", "1.5", "abc", "nan", "inf", "1e-12", "\"\"",
    ] {
        t.err(format!("RF.BUILD k ERROR {rate}").as_str(), BAD_RATE);
        t.err(
            format!("RF.BUILD n ERROR {rate} ITEMS a").as_str(),
            BAD_RATE,
        );
    }
    t.steps(
        r#"
        EXISTS n -> 0
        RF.INFO k STATE -> [staging]
        RF.CARD k -> 5
        RF.BUILD k -> OK
        RF.INFO k STATE -> [built]
        RF.INFO k ITEMS -> [5]
        RF.INFO k ERROR -> ["0.01"]
        RF.CARD k -> 5
        RF.EXISTS k a -> 1
        RF.EXISTS k "" -> 1
        RF.MEXISTS k a b c "" "\x00\xff" -> [1,1,1,1,1]
        RF.BUILD k -> (error) ERR RF.BUILD: this Ribbon filter is built already
        RF.BUILD k ERROR 0.5 -> (error) ERR RF.BUILD: this Ribbon filter is built already
        RF.BUILD k ITEMS z -> (error) ERR RF.BUILD: this Ribbon filter is built already
        RF.EXISTS k z -> 0
        RF.CARD k -> 5
        "#,
    );
    t.err("RF.ADD k z", &read_only("RF.ADD"));
    t.err("RF.ADD k a", &read_only("RF.ADD"));
    t.err("RF.MADD k z y", &read_only("RF.MADD"));
    t.steps(
        r#"
        RF.CARD k -> 5
        RF.BUILD one ITEMS x -> OK
        RF.CARD one -> 1
        RF.BUILD two ERROR 0.001 ITEMS x y y -> OK
        RF.CARD two -> 2
        RF.INFO two ERROR -> ["0.001"]
        RF.MEXISTS two x y -> [1,1]
        RF.MADD three p q -> [1,1]
        RF.BUILD three ITEMS q r -> OK
        RF.CARD three -> 3
        RF.MEXISTS three p q r -> [1,1,1]
        RF.BUILD four error 0.25 items a -> OK
        RF.INFO four ERROR -> ["0.25"]
        "#,
    );
    // The default error rate is the config bf.error-rate.
    let mut con = s.conn();
    config_set(&mut con, "bf.error-rate", "0.125");
    t.steps(
        r#"
        RF.BUILD five ITEMS a -> OK
        RF.INFO five ERROR -> ["0.125"]
        "#,
    );
}

/// The full RF.INFO of a key as RESP bytes: RESP2 a flat array of (simple string, value)
/// pairs, RESP3 a map; `rate` and `bits` nil on a staging key.
fn info_wire(
    resp3: bool,
    state: &str,
    items: u64,
    size: u64,
    rate: Option<&str>,
    bits: Option<&str>,
) -> String {
    let nil = if resp3 { "_\r\n" } else { "$-1\r\n" };
    let double = |d: Option<&str>| match d {
        None => nil.to_string(),
        Some(d) if resp3 => format!(",{d}\r\n"),
        Some(d) => format!("${}\r\n{d}\r\n", d.len()),
    };
    let fields = [
        ("State", format!("+{state}\r\n")),
        ("Number of items inserted", format!(":{items}\r\n")),
        ("Error rate", double(rate)),
        ("Size", format!(":{size}\r\n")),
        ("Bits per item", double(bits)),
    ];
    let mut out = if resp3 {
        "%5\r\n".to_string()
    } else {
        "*10\r\n".to_string()
    };
    for (name, value) in fields {
        out.push_str(&format!("+{name}\r\n{value}"));
    }
    out
}

/// A double as the server writes it (the shortest form that reads back, as Redis 7.2+ and
/// Valkey do; Redis 7.0 writes `%.17g`): parsed by the caller instead when it is not exact.
fn reply_f64(v: &[u8]) -> f64 {
    let text = String::from_utf8_lossy(v);
    let body = text.trim_end_matches("\r\n");
    let digits = body.rsplit("\r\n").next().unwrap();
    digits.trim_start_matches(',').parse().unwrap()
}

#[test]
fn info_in_resp2_and_resp3() {
    let s = Server::start();
    let mut con = s.conn();
    let _: Vec<i64> = cmd("RF.MADD k a b c").query(&mut con).unwrap();
    let staging_size: u64 = info_u64(&mut con, "k", "SIZE");
    let usage: u64 = cmd("MEMORY USAGE k").query(&mut con).unwrap();
    // Size is the value's bytes, MEMORY USAGE adds the key's: 3 hashes at least.
    assert!(
        staging_size >= 24 && staging_size < usage,
        "{staging_size} {usage}"
    );
    for resp3 in [false, true] {
        let q = |args: &[&str]| {
            let a: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            String::from_utf8(raw_command(s.port, resp3, &a)).unwrap()
        };
        assert_eq!(
            q(&["RF.INFO", "k"]),
            info_wire(resp3, "staging", 3, staging_size, None, None),
            "resp3 {resp3}"
        );
        let one = |name: &str, value: &str| {
            if resp3 {
                format!("%1\r\n+{name}\r\n{value}")
            } else {
                format!("*1\r\n{value}")
            }
        };
        let nil = if resp3 { "_\r\n" } else { "$-1\r\n" };
        for (field, name, value) in [
            ("STATE", "State", "+staging\r\n".to_string()),
            ("ITEMS", "Number of items inserted", ":3\r\n".to_string()),
            ("ERROR", "Error rate", nil.to_string()),
            ("SIZE", "Size", format!(":{staging_size}\r\n")),
            ("BITSPERITEM", "Bits per item", nil.to_string()),
        ] {
            assert_eq!(
                q(&["RF.INFO", "k", field]),
                one(name, &value),
                "{field} resp3 {resp3}"
            );
        }
        assert_eq!(
            q(&["RF.INFO", "k", "FOO"]),
            "-Invalid information value\r\n"
        );
        // Membership replies: integers in RESP2, booleans in RESP3 (as BF.EXISTS).
        let (t, f) = if resp3 {
            ("#t\r\n", "#f\r\n")
        } else {
            (":1\r\n", ":0\r\n")
        };
        assert_eq!(q(&["RF.EXISTS", "k", "a"]), t);
        assert_eq!(q(&["RF.EXISTS", "k", "z"]), f);
        // Add replies too (as BF.ADD / BF.MADD): a new item true, a staged one false.
        let new_key = format!("add-{resp3}");
        assert_eq!(q(&["RF.ADD", &new_key, "a"]), t);
        assert_eq!(q(&["RF.ADD", &new_key, "a"]), f);
        assert_eq!(q(&["RF.MADD", &new_key, "a", "b"]), format!("*2\r\n{f}{t}"));
        assert_eq!(q(&["RF.EXISTS", "nokey", "z"]), f);
        assert_eq!(q(&["RF.MEXISTS", "k", "a", "z"]), format!("*2\r\n{t}{f}"));
        assert_eq!(q(&["RF.CARD", "k"]), ":3\r\n");
    }
    let _: () = cmd("RF.BUILD k ERROR 0.001").query(&mut con).unwrap();
    let size: u64 = info_u64(&mut con, "k", "SIZE");
    let ribbon = rf_core(&[b"a".to_vec(), b"b".to_vec(), b"c".to_vec()], 0.001);
    let body = redis_bf::bloom::ribbon::dump::body_bytes(&ribbon);
    assert!(size >= body, "Size {size} < body {body}");
    assert!(size < cmd("MEMORY USAGE k").query::<u64>(&mut con).unwrap());
    for resp3 in [false, true] {
        let q = |args: &[&str]| {
            raw_command(
                s.port,
                resp3,
                &args.iter().map(|a| a.as_bytes()).collect::<Vec<_>>(),
            )
        };
        let bits_reply = q(&["RF.INFO", "k", "BITSPERITEM"]);
        let bits = reply_f64(&bits_reply);
        assert!(
            (bits - size as f64 * 8.0 / 3.0).abs() < 1e-9 * bits,
            "{bits} vs Size {size}"
        );
        let bits_text = String::from_utf8_lossy(&bits_reply)
            .trim_end_matches("\r\n")
            .rsplit("\r\n")
            .next()
            .unwrap()
            .trim_start_matches(',')
            .to_string();
        let full = String::from_utf8(q(&["RF.INFO", "k"])).unwrap();
        assert_eq!(
            full,
            info_wire(resp3, "built", 3, size, Some("0.001"), Some(&bits_text)),
            "resp3 {resp3}"
        );
    }
}

/// RF.BUILD of a staged set gives exactly the core's filter of that set: every SCANDUMP reply
/// (header and body chunks), then `[0, ""]`; RF.LOADCHUNK of that walk into another key gives
/// an equal filter (same walk, same DEBUG DIGEST-VALUE); a key being loaded never answers a
/// false "no"; the order items were staged in does not matter.
#[test]
fn built_filter_is_the_cores_and_copies_through_loadchunk() {
    let s = Server::start();
    let mut con = s.conn();
    let set = items("member", 5000);
    // Keys whose half-loaded copy answered a false "no" (checked last, so the rest runs).
    let mut half_loaded_no = Vec::new();
    for (key, rate, order) in [("p", 0.01, false), ("q", 0.0001, true), ("r", 0.3, false)] {
        let mut staged = set.clone();
        if order {
            staged.reverse();
        }
        stage(&mut con, key, &staged);
        let _: () = cmd("RF.BUILD")
            .arg(key)
            .arg("ERROR")
            .arg(rate)
            .query(&mut con)
            .unwrap();
        let want = rf_core_walk(&rf_core(&set, rate));
        let walk = rf_scandump(&mut con, key.as_bytes());
        assert_eq!(walk.len(), want.len(), "{key}: pieces");
        assert!(
            walk == want,
            "{key}: the walk differs from the core's build"
        );
        let last = want.last().unwrap().0;
        let end: (i64, Vec<u8>) = cmd("RF.SCANDUMP")
            .arg(key)
            .arg(last)
            .query(&mut con)
            .unwrap();
        assert_eq!(end, (0, Vec::new()), "{key}: the end of the walk");
        // A copy through RF.LOADCHUNK: no false "no" while loading, equal once complete.
        let copy = format!("{key}:copy");
        let (header, body) = walk.split_first().unwrap();
        loadchunk_walk(
            &mut con,
            "RF.LOADCHUNK",
            copy.as_bytes(),
            std::slice::from_ref(header),
        );
        let probe = run(&mut con, &format!("RF.EXISTS {copy} member:0"));
        if matches!(probe, Ok(Value::Int(0))) {
            half_loaded_no.push(key);
        }
        for command in ["RF.EXISTS", "RF.MEXISTS"] {
            assert_eq!(
                common::reply_text(&run(&mut con, &format!("{command} {copy} member:0"))),
                format!(
                    "(error) ERR {command}: this Ribbon filter is being loaded by RF.LOADCHUNK; \
                     it answers once its last chunk has arrived"
                ),
                "{copy}: {command} while loading"
            );
        }
        loadchunk_walk(&mut con, "RF.LOADCHUNK", copy.as_bytes(), body);
        assert!(rf_scandump(&mut con, copy.as_bytes()) == want, "{copy}");
        assert_eq!(
            common::digest_value(&mut con, copy.as_bytes()),
            common::digest_value(&mut con, key.as_bytes())
        );
        let card: u64 = cmd("RF.CARD").arg(&copy).query(&mut con).unwrap();
        assert_eq!(card, 5000);
        let info: Vec<String> = cmd("RF.INFO")
            .arg(&copy)
            .arg("STATE")
            .query(&mut con)
            .unwrap();
        assert_eq!(info, ["built"]);
        // A loaded key is as read-only as a built one.
        let e = run(&mut con, &format!("RF.ADD {copy} x")).unwrap_err();
        assert_eq!(
            common::reply_text(&Err(e)),
            format!("(error) {}", read_only("RF.ADD"))
        );
    }
    // An existing key refuses a header; a later chunk without a header refuses.
    let (_, header) = rf_scandump(&mut con, b"p").remove(0);
    for key in ["p", "staged"] {
        let _: i64 = cmd("RF.ADD staged x").query(&mut con).unwrap_or(0);
        let r = cmd("RF.LOADCHUNK")
            .arg(key)
            .arg(1)
            .arg(&header)
            .query::<Value>(&mut con);
        assert!(r.is_err(), "{key}: {r:?}");
    }
    let r = cmd("RF.LOADCHUNK nokey 2")
        .arg(&b"12345678"[..])
        .query::<Value>(&mut con);
    assert!(r.is_err(), "{r:?}");
    assert_eq!(cmd("EXISTS nokey").query::<i64>(&mut con).unwrap(), 0);
    assert_eq!(cmd("RF.CARD staged").query::<i64>(&mut con).unwrap(), 1);
    assert!(
        half_loaded_no.is_empty(),
        "half-loaded copies of {half_loaded_no:?} answered RF.EXISTS of a member with 0"
    );
}

/// How many of `items` RF.MEXISTS answers 1 for (in batches of 1000).
fn answered_yes(con: &mut Connection, key: &str, items: &[Vec<u8>]) -> u64 {
    let mut yes = 0;
    for batch in items.chunks(1000) {
        let got: Vec<i64> = cmd("RF.MEXISTS").arg(key).arg(batch).query(con).unwrap();
        yes += got.iter().filter(|&&g| g == 1).count() as u64;
    }
    yes
}

/// No false negative and a false-positive rate within a binomial tail bound, measured on
/// built filters of 20 000 items with 200 000 probes never staged, at ε = 1 % and 0.1 %.
///
/// The bound: a filter whose true rate is at most ε gives, over N independent probes, a count
/// above Nε + 6·√(Nε(1−ε)) with probability below 1e-8 (Chernoff/Bernstein tail), so a
/// correct filter fails it once in 10^8 sets. The items, the probes and the build (seed 0)
/// are fixed, so this very run is deterministic: it cannot flake; the count is also checked
/// to be exactly the core's (the server's filter is the core's filter).
#[test]
fn no_false_negatives_and_false_positives_within_the_bound() {
    let s = Server::start();
    let mut con = s.conn();
    let set = items("acc", 20_000);
    let probes = items("never", 200_000);
    for (key, rate) in [("a1", 0.01), ("a01", 0.001)] {
        let mut built_with_items = cmd("RF.BUILD");
        built_with_items
            .arg(key)
            .arg("ERROR")
            .arg(rate)
            .arg("ITEMS")
            .arg(&set[..10_000]);
        stage(&mut con, key, &set[10_000..]);
        let _: () = built_with_items.query(&mut con).unwrap();
        let negatives = set.len() as u64 - answered_yes(&mut con, key, &set);
        assert_eq!(negatives, 0, "{key}: false negatives");
        let fp = answered_yes(&mut con, key, &probes);
        let core = rf_core(&set, rate);
        let core_fp = probes.iter().filter(|p| core.contains(p)).count() as u64;
        let n = probes.len() as f64;
        let bound = n * rate + 6.0 * (n * rate * (1.0 - rate)).sqrt();
        println!(
            "{key}: ε {rate}: {fp} false positives of {n} probes (rate {:.6}, bound {bound:.0})",
            fp as f64 / n
        );
        assert_eq!(fp, core_fp, "{key}: the server's filter is the core's");
        assert!(
            (fp as f64) <= bound,
            "{key}: {fp} false positives > {bound}"
        );
        assert!(
            fp > 0,
            "{key}: no false positive at all: the probes are not probing"
        );
    }
}

/// Keyspace events (class `d`): `rf.add` when an add staged something, `rf.build` when a
/// build was installed, `rf.loadchunk` per accepted RF.LOADCHUNK; nothing for reads,
/// refusals and adds that staged nothing.
#[test]
fn keyspace_events() {
    let s = Server::start();
    let mut c = s.conn();
    let _: () = cmd("RF.BUILD src ITEMS a b c").query(&mut c).unwrap();
    let walk = rf_scandump(&mut c, b"src");
    assert_eq!(walk.len(), 2, "a header and one chunk");
    config_set(&mut c, "notify-keyspace-events", "Edg");
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyevent@*__:*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut events = |commands: &str| -> String {
        for line in commands.split("; ").filter(|l| !l.is_empty()) {
            let _ = run(&mut c, line);
        }
        if commands == "LOADCHUNK" {
            loadchunk_walk(&mut c, "RF.LOADCHUNK", b"copy", &walk);
        }
        let _: () = cmd("SET sentinel 1").query(&mut c).unwrap();
        let _: i64 = cmd("DEL sentinel").query(&mut c).unwrap();
        let mut got = Vec::new();
        loop {
            let m = ps.get_message().expect("notification");
            let event = m.get_channel_name().rsplit(':').next().unwrap().to_string();
            let key: String = m.get_payload().unwrap();
            if key == "sentinel" {
                return got.join(", ");
            }
            got.push(format!("{event} {key}"));
        }
    };
    let mut fails = Vec::new();
    for (commands, want) in [
        ("RF.ADD a x", "rf.add a"),
        ("RF.ADD a x; RF.MADD a x x", ""),
        ("RF.MADD a x y z", "rf.add a"),
        ("RF.EXISTS a x; RF.MEXISTS a x q; RF.CARD a; RF.INFO a", ""),
        ("RF.BUILD a", "rf.build a"),
        (
            "RF.ADD a q; RF.MADD a q; RF.BUILD a; RF.BUILD a ITEMS q",
            "",
        ),
        ("RF.BUILD b ITEMS p q", "rf.add b, rf.build b"),
        ("RF.BUILD nokey; RF.BUILD c ERROR 2 ITEMS p", ""),
        ("RF.SCANDUMP a 0; RF.LOADCHUNK nokey 2 xxxxxxxx", ""),
        ("LOADCHUNK", "rf.loadchunk copy, rf.loadchunk copy"),
    ] {
        let got = events(commands);
        if got != want {
            fails.push(format!("{commands}: got {got:?}, want {want:?}"));
        }
    }
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// `INFO bf`: `bf_rf_filters` counts Ribbon keys (staging and built), `bf_rf_items` their
/// items, `bf_rf_bytes` their bytes, `bf_rf_builds_running` the builds in flight (0 at rest);
/// all back to 0 when the keys go.
#[test]
fn info_bf_counters() {
    let s = Server::start();
    let mut con = s.conn();
    let counters = |con: &mut Connection| {
        ["filters", "items", "bytes", "builds_running"]
            .map(|f| info_num(con, "bf", &format!("bf_rf_{f}")))
    };
    assert_eq!(counters(&mut con), [0, 0, 0, 0]);
    stage(&mut con, "s", &items("c", 3000));
    let [filters, n, staging_bytes, running] = counters(&mut con);
    assert_eq!((filters, n, running), (1, 3000, 0));
    assert!(staging_bytes >= 3000 * 8, "{staging_bytes}");
    let _: () = cmd("RF.BUILD b ITEMS x y").query(&mut con).unwrap();
    let [filters, n, bytes, running] = counters(&mut con);
    assert_eq!((filters, n, running), (2, 3002, 0));
    let size_b: u64 = info_u64(&mut con, "b", "SIZE");
    let size_s: u64 = info_u64(&mut con, "s", "SIZE");
    assert!(
        bytes > staging_bytes && bytes <= size_b + size_s,
        "{bytes} {size_b} {size_s}"
    );
    let _: () = cmd("RF.BUILD s").query(&mut con).unwrap();
    let [filters, n, built_bytes, running] = counters(&mut con);
    assert_eq!((filters, n, running), (2, 3002, 0));
    // The built filter takes less than its staged hashes (about 7 bits an item at 1 %).
    assert!(built_bytes < bytes, "{built_bytes} !< {bytes}");
    let _: i64 = cmd("DEL s").query(&mut con).unwrap();
    assert_eq!(counters(&mut con)[..2], [1, 2]);
    // FLUSHALL may free on the lazyfree thread (Valkey's default): wait for the counters.
    let _: () = cmd("FLUSHALL").query(&mut con).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while counters(&mut con) != [0, 0, 0, 0] {
        assert!(
            std::time::Instant::now() < deadline,
            "{:?}",
            counters(&mut con)
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// COMMAND INFO of each RF command: first key, last key, step (1, 1, 1), `write` or
/// `readonly`, the ACL category `@ribbon`, a key spec at index 1; COMMAND DOCS has a summary
/// and the arguments; COMMAND GETKEYS names the key; `ACL CAT ribbon` lists exactly them.
#[test]
fn command_metadata_and_acl_category() {
    let s = Server::start();
    let mut con = s.conn();
    // Module ACL categories exist on Redis 7.4+ and Valkey (not 7.0, where `ACL CAT bloom`
    // fails too); `ACL CAT` lists module commands on Redis 8+ and Valkey only.
    let category = cmd("ACL CAT ribbon").query::<Vec<String>>(&mut con);
    let has_categories = cmd("ACL CAT bloom").query::<Vec<String>>(&mut con).is_ok();
    assert_eq!(category.is_ok(), has_categories, "{category:?}");
    if let Ok(mut cat) = category.clone() {
        cat.sort();
        let mut want: Vec<String> = COMMANDS.iter().map(|(c, _)| c.to_string()).collect();
        want.sort();
        assert!(cat.is_empty() || cat == want, "ACL CAT ribbon: {cat:?}");
        // The category grants and denies exactly the RF commands.
        let _: () = cmd("ACL SETUSER u on >p ~* +@all -@ribbon")
            .query(&mut con)
            .unwrap();
        let mut u = s.conn();
        let _: () = cmd("AUTH u p").query(&mut u).unwrap();
        let denied = run(&mut u, "RF.ADD k a").unwrap_err();
        assert_eq!(denied.code(), Some("NOPERM"), "{denied}");
        assert_eq!(run(&mut u, "BF.ADD b a").unwrap(), Value::Int(1));
        assert_eq!(run(&mut con, "EXISTS k").unwrap(), Value::Int(0));
    }
    for (name, writes) in COMMANDS {
        let info: Vec<Value> = cmd("COMMAND INFO").arg(name).query(&mut con).unwrap();
        let Some(Value::Array(entry)) = info.first() else {
            panic!("{name}: {info:?}")
        };
        let text = common::value_text(&Value::Array(entry.clone()), false);
        assert_eq!(
            &entry[3..6],
            &[Value::Int(1), Value::Int(1), Value::Int(1)],
            "{name}"
        );
        assert!(
            text.contains(if writes { "write" } else { "readonly" }),
            "{name}: {text}"
        );
        assert_eq!(text.contains("@ribbon"), has_categories, "{name}: {text}");
        assert!(
            text.contains("begin_search") && text.contains("index"),
            "{name}: {text}"
        );
        let docs: Value = cmd("COMMAND DOCS").arg(name).query(&mut con).unwrap();
        let docs = common::value_text(&docs, false);
        assert!(
            docs.contains("summary") && docs.contains("arguments"),
            "{name}: {docs}"
        );
        let call = match name {
            "rf.add" | "rf.exists" => vec![name, "{k}1", "item"],
            "rf.madd" | "rf.mexists" => vec![name, "{k}1", "a", "b"],
            "rf.build" => vec![name, "{k}1", "ERROR", "0.01", "ITEMS", "a"],
            "rf.card" | "rf.info" => vec![name, "{k}1"],
            "rf.scandump" => vec![name, "{k}1", "0"],
            _ => vec![name, "{k}1", "1", "data"],
        };
        let keys: Vec<String> = cmd("COMMAND GETKEYS").arg(&call).query(&mut con).unwrap();
        assert_eq!(keys, vec!["{k}1".to_string()], "{name}");
    }
}

/// The number after `word` in `e`, or 0 when `word` is not followed by one.
fn number_after_or_zero(e: &str, word: &str) -> u64 {
    e.find(word)
        .and_then(|i| {
            e[i + word.len()..]
                .split(|c: char| !c.is_ascii_digit())
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or(0)
}

/// Staging and a build's working memory count against `bf.max-filter-bytes`: a refused
/// RF.MADD stages nothing (and creates no key), a refused RF.BUILD leaves the key staging
/// with the same digest; each error names the bytes needed and the bytes left.
#[test]
fn memory_limits_refuse_staging_and_builds_before_they_start() {
    let (set, more) = (items("mem", 10_000), items("more", 30_000));
    let s = Server::start();
    let mut con = s.conn();
    stage(&mut con, "k", &set);
    let digest = common::digest_value(&mut con, b"k");
    config_set(&mut con, "bf.max-filter-bytes", "200000");
    let e = run(&mut con, "RF.BUILD k").unwrap_err();
    let text = common::reply_text(&Err(e));
    let prefix = "(error) ERR RF.BUILD of 10000 items needs ";
    assert!(text.starts_with(prefix), "{text}");
    assert!(
        text.contains(
            " bytes of working memory; the memory limits (maxmemory, bf.max-filter-bytes) leave "
        ),
        "{text}"
    );
    let needed = number_after_or_zero(&text, "needs ");
    let left = number_after_or_zero(&text, "leave ");
    // Hashes (8 bytes an item) and the band (20 bytes a slot, 1.025 slots an item) at least.
    assert!(needed >= 10_000 * 28 && left < needed, "{text}");
    assert_eq!(common::digest_value(&mut con, b"k"), digest);
    assert_eq!(info_u64(&mut con, "k", "ITEMS"), 10_000);
    // Staging past the limit: nothing staged, no key created.
    for key in ["k", "fresh"] {
        let e = cmd("RF.MADD")
            .arg(key)
            .arg(&more)
            .query::<Value>(&mut con)
            .unwrap_err();
        let text = common::reply_text(&Err(e));
        assert!(
            text.starts_with("(error) ERR staging 30000 items needs up to "),
            "{text}"
        );
        let needed = number_after_or_zero(&text, "needs up to ");
        let left = number_after_or_zero(&text, "leave ");
        assert!(needed >= 30_000 * 8 && left < needed, "{text}");
    }
    assert_eq!(common::digest_value(&mut con, b"k"), digest);
    assert_eq!(cmd("EXISTS fresh").query::<i64>(&mut con).unwrap(), 0);
    // Within the limit again, the build runs and is the core's.
    config_set(&mut con, "bf.max-filter-bytes", "0");
    let _: () = cmd("RF.BUILD k").query(&mut con).unwrap();
    assert!(rf_scandump(&mut con, b"k") == rf_core_walk(&rf_core(&set, 0.01)));
}
