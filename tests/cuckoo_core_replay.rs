//! The cuckoo core alone (no server) against RedisBloom's own recordings: every key of the
//! cuckoo reference set is rebuilt by replaying its creation commands on `redis_bf::bloom::cuckoo`,
//! and must end with RedisBloom's exact SCANDUMP bytes and header, and its add/delete
//! commands must have answered as RedisBloom's did.
//!
//! Needs the reference recordings (`common::shared_dir`; absent: a SKIP line, a failure with
//! `BF_REQUIRE_SHARED`).

mod common;

use redis_bf::bloom::cuckoo::{self, dump, Cuckoo, Insert};
use serde_json::Value;
use sha2::{Digest, Sha256};

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A RESP2 integer reply.
fn int(n: i64) -> String {
    format!(":{n}\r\n")
}

fn eq_word(a: &[u8], w: &str) -> bool {
    a.eq_ignore_ascii_case(w.as_bytes())
}

/// Replays one creation command on `cf`, returning its RESP2 reply when it is one this test
/// models (adds, deletes, counts, creation), None for the others.
fn replay(cf: &mut Option<Cuckoo>, args: &[Vec<u8>]) -> Option<String> {
    let cmd = String::from_utf8_lossy(&args[0]).to_ascii_uppercase();
    let num = |b: &[u8]| std::str::from_utf8(b).unwrap().parse::<u64>().unwrap();
    let create = |cap: u64| Cuckoo::new(cap, 2, 20, 1, u64::MAX).unwrap();
    match cmd.as_str() {
        "CF.RESERVE" => {
            let (mut bs, mut mi, mut ex) = (2u16, 20u16, 1u16);
            for pair in args[3..].chunks(2) {
                let v = num(&pair[1]) as u16;
                if eq_word(&pair[0], "BUCKETSIZE") {
                    bs = v
                } else if eq_word(&pair[0], "MAXITERATIONS") {
                    mi = v
                } else if eq_word(&pair[0], "EXPANSION") {
                    ex = v
                }
            }
            *cf = Some(Cuckoo::new(num(&args[2]), bs, mi, ex, u64::MAX).unwrap());
            Some("+OK\r\n".into())
        }
        "CF.ADD" | "CF.ADDNX" => {
            let f = cf.get_or_insert_with(|| create(1024));
            if f.filters.len() >= 32 {
                return Some("-Maximum expansions reached\r\n".into());
            }
            Some(match f.insert(&args[2], cmd == "CF.ADDNX", u64::MAX) {
                Insert::Inserted => int(1),
                Insert::Exists => int(0),
                Insert::Full => "-Filter is full\r\n".into(),
                Insert::CannotGrow => panic!("cannot grow"),
            })
        }
        "CF.INSERT" | "CF.INSERTNX" => {
            let mut i = 2;
            let mut cap = 1024;
            let mut nocreate = false;
            while !eq_word(&args[i], "ITEMS") {
                if eq_word(&args[i], "CAPACITY") {
                    cap = num(&args[i + 1]);
                    i += 2;
                } else {
                    nocreate = true;
                    i += 1;
                }
            }
            if cf.is_none() {
                assert!(!nocreate);
                *cf = Some(create(cap));
            }
            let f = cf.as_mut().unwrap();
            if f.filters.len() >= 32 {
                return Some("-Maximum expansions reached\r\n".into());
            }
            let items = &args[i + 1..];
            let mut out = format!("*{}\r\n", items.len());
            for it in items {
                out += &int(match f.insert(it, cmd == "CF.INSERTNX", u64::MAX) {
                    Insert::Inserted => 1,
                    Insert::Exists => 0,
                    Insert::Full => -1,
                    Insert::CannotGrow => panic!("cannot grow"),
                });
            }
            Some(out)
        }
        "CF.DEL" => Some(int(cf.as_mut().unwrap().delete(&args[2]).0 as i64)),
        "CF.COUNT" => Some(int(cf.as_ref().unwrap().count(&args[2]) as i64)),
        "CF.EXISTS" => Some(int(cf.as_ref().unwrap().contains(&args[2]) as i64)),
        "CF.COMPACT" => {
            cf.as_mut().unwrap().compact(true);
            Some("+OK\r\n".into())
        }
        _ => None,
    }
}

#[test]
fn replayed_keys_end_with_redisbloom_bytes() {
    let Some(shared) = common::shared_or_skip("replayed_keys_end_with_redisbloom_bytes") else {
        return;
    };
    let dir = shared.join("fixtures/redisbloom-cf/keys");
    let mut checked = 0;
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    for path in names {
        let d: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        if d["type"] != "MBbloomCF" || d.get("commands").is_none() {
            continue;
        }
        let name = d["key_display"].as_str().unwrap().to_string();
        let mut cf = None;
        for (n, c) in d["commands"].as_array().unwrap().iter().enumerate() {
            let args = common::json_hex_list(&c["args_hex"]);
            if let Some(reply) = replay(&mut cf, &args) {
                assert_eq!(
                    hex(reply.as_bytes()),
                    c["reply_hex"].as_str().unwrap(),
                    "{name}: command {n} {}",
                    c["display"]
                );
            }
        }
        let cf = cf.unwrap();
        let h = &d["header"];
        if !h.is_null() {
            assert_eq!(
                hex(&dump::encode_header(&cf)),
                d["header_hex"].as_str().unwrap(),
                "{name}: header"
            );
        }
        for step in d["scandump"].as_array().unwrap() {
            let iter = step["iter"].as_i64().unwrap();
            match dump::scan(&cf, iter) {
                dump::Scan::Header(_) => assert_eq!(iter, 0),
                dump::Scan::Chunk(next, data) => {
                    assert_eq!(next, step["next_iter"].as_i64().unwrap(), "{name} @{iter}");
                    assert_eq!(
                        hex(&Sha256::digest(data)),
                        step["sha256"].as_str().unwrap(),
                        "{name}: chunk at {iter}"
                    );
                }
                dump::Scan::End => assert!(step.get("nil").is_some(), "{name} @{iter}"),
            }
        }
        assert_eq!(
            cf.mem_usage(),
            d["info"]["Size"].as_u64().unwrap(),
            "{name}: CF.INFO Size"
        );
        checked += 1;
    }
    assert_eq!(checked, 26, "keys checked");
    let _ = cuckoo::DEFAULT_CAPACITY;
}
