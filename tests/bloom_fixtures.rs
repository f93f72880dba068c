//! RedisBloom v2.8.20 data fixtures (`tests/fixtures/redisbloom/`; see its
//! README): the module must load RedisBloom's RDB and
//! AOF and reproduce every recorded reply byte for byte, and the same commands replayed on a
//! fresh server must build byte-identical filters (DUMP, SCANDUMP) and an AOF rewrite made of
//! exactly the recorded SCANDUMP walks.
//!
//! RedisBloom 8.8.0's data set (made on Redis 8.0.6: RDB version 12, EXPANSION 0 filters, an
//! AOF whose incr file replays `EXPANSION 0`) is checked the same way on a Redis 8.0 server
//! when the reference recordings and the server are here (`redisbloom8_*` tests).
//!
//! The fixture folder is read-only for the tests: every server runs on a temporary copy.

mod common;
mod fxutil;

use fxutil::{
    args, copy_tree, encode_command, hex, parse_aof, rewrite_aof, sha256_hex, show, unhex, Conn,
    DirServer, Resp,
};
use serde_json::Value as Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn fx_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/redisbloom")
}

/// One per-key JSON of a fixture set.
struct Fx {
    j: Json,
    key: Vec<u8>,
    name: String,
    /// The set's folder (for payloads kept in their own file).
    dir: PathBuf,
}

impl Fx {
    fn s(&self, field: &str) -> &str {
        self.j[field]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no string field {field}", self.name))
    }
    fn i(&self, field: &str) -> i64 {
        self.j[field]
            .as_i64()
            .unwrap_or_else(|| panic!("{}: no integer field {field}", self.name))
    }
    fn is_bloom(&self) -> bool {
        self.s("type") == "MBbloom--"
    }
    fn scandump(&self) -> &Vec<Json> {
        self.j["scandump"].as_array().unwrap()
    }
    /// The recorded DUMP payload: inline, or (a large one) in the file the JSON names.
    fn dump_payload(&self) -> Vec<u8> {
        match self.j.get("dump_payload_file").and_then(Json::as_str) {
            Some(file) => std::fs::read(self.dir.join("keys").join(file))
                .unwrap_or_else(|e| panic!("{}: {file}: {e}", self.name)),
            None => unhex(self.s("dump_payload_hex")),
        }
    }
}

/// The 2.8 set's keys of sub-folder `sub` (`keys`, `aof-keys`).
fn load_set(sub: &str) -> Vec<Fx> {
    load_set_in(&fx_dir(), sub)
}

/// The keys of sub-folder `sub` of the fixture set in `dir` (either RedisBloom's set).
fn load_set_in(dir: &Path, sub: &str) -> Vec<Fx> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(sub))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no JSON in {sub}");
    files
        .iter()
        .map(|p| {
            let j: Json = serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap();
            let key = unhex(j["key_hex"].as_str().unwrap());
            let name = j["key_display"].as_str().unwrap().to_string();
            Fx {
                j,
                key,
                name,
                dir: dir.to_path_buf(),
            }
        })
        .collect()
}

fn usize_list(v: &Json) -> Vec<usize> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap() as usize)
        .collect()
}

/// The items of a key, in the order they were sent (`items_hex`, or fx:big's generator).
fn items_of(fx: &Fx) -> Vec<Vec<u8>> {
    if let Some(h) = fx.j.get("items_hex") {
        return common::json_hex_list(h);
    }
    let g = &fx.j["items_generator"];
    let prefix = unhex(g["prefix_hex"].as_str().unwrap());
    let (start, stop) = (g["start"].as_u64().unwrap(), g["stop"].as_u64().unwrap());
    (start..stop)
        .map(|n| [prefix.as_slice(), n.to_string().as_bytes()].concat())
        .collect()
}

fn items_digest(items: &[Vec<u8>]) -> String {
    let mut all = Vec::new();
    for it in items {
        all.extend_from_slice(&(it.len() as u32).to_le_bytes());
        all.extend_from_slice(it);
    }
    sha256_hex(&all)
}

fn probe_items(key: &[u8], n: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| [b"probe:", key, b":", i.to_string().as_bytes()].concat())
        .collect()
}

/// Collected differences: every check runs, then the test fails listing all of them.
#[derive(Default)]
struct Diffs(Vec<String>);

impl Diffs {
    fn eq<T: PartialEq + std::fmt::Debug>(&mut self, what: String, want: T, got: T) {
        if want != got {
            let w = format!("{want:?}");
            let g = format!("{got:?}");
            self.0.push(format!(
                "{what}: expected {}, got {}",
                &w[..w.len().min(400)],
                &g[..g.len().min(400)]
            ));
        }
    }
    fn raw(&mut self, what: String, want_hex: &str, got: &[u8]) {
        if hex(got) != want_hex {
            self.0.push(format!(
                "{what}: expected {:?}, got {:?}",
                show(&unhex(want_hex)),
                show(got)
            ));
        }
    }
    fn assert_none(&self, context: &str) {
        assert!(
            self.0.is_empty(),
            "{context}: {} difference(s):\n{}",
            self.0.len(),
            self.0.join("\n")
        );
    }
}

/// The RESP3 key text of each single BF.INFO field (`docs/commands.md` ("BF.INFO")).
const INFO_FIELDS: [(&str, &str); 5] = [
    ("CAPACITY", "Capacity"),
    ("SIZE", "Size"),
    ("FILTERS", "Number of filters"),
    ("ITEMS", "Number of items inserted"),
    ("EXPANSION", "Expansion rate"),
];

/// DUMP must equal the recorded payload: exactly when the server writes the recorded RDB
/// version (Redis 7.0), else everything but the version + CRC64 footer.
fn compare_dump(d: &mut Diffs, what: String, want: &[u8], got: &[u8]) {
    let n = want.len();
    if got.len() == n && got[n - 10..n - 8] == want[n - 10..n - 8] {
        if got != want {
            d.0.push(format!(
                "{what}: DUMP differs (same RDB version): expected sha256 {}, got {} (len {} vs {})",
                sha256_hex(want),
                sha256_hex(got),
                n,
                got.len()
            ));
        }
    } else if got.len() < 10 || got[..got.len() - 10] != want[..n - 10] {
        d.0.push(format!(
            "{what}: DUMP body differs: expected {}…, got {}…",
            hex(&want[..n.min(60)]),
            hex(&got[..got.len().min(60)])
        ));
    }
}

/// Checks the recorded SCANDUMP walk step by step with the recorded iterators.
fn check_walk(c: &mut Conn, d: &mut Diffs, fx: &Fx, key: &[u8], label: &str) {
    let steps = fx.scandump();
    let cmds: Vec<Vec<Vec<u8>>> = steps
        .iter()
        .map(|st| {
            let it = st["iter"].as_i64().unwrap().to_string();
            args([b"BF.SCANDUMP", key, it.as_bytes()])
        })
        .collect();
    let replies = c.pipe(&cmds);
    for (st, r) in steps.iter().zip(replies) {
        let it = st["iter"].as_i64().unwrap();
        let what = format!("{} {label}SCANDUMP {it}", fx.name);
        let Resp::Array(a) = &r.val else {
            d.0.push(format!("{what}: not an array: {}", show(&r.raw)));
            return;
        };
        let (next, data) = (a[0].int(), a[1].bulk());
        // Exact wire shape: [int, bulk].
        let mut wire = format!("*2\r\n:{next}\r\n${}\r\n", data.len()).into_bytes();
        wire.extend_from_slice(data);
        wire.extend_from_slice(b"\r\n");
        d.eq(format!("{what} wire"), hex(&wire), hex(&r.raw));
        d.eq(
            format!("{what} next_iter"),
            st["next_iter"].as_i64().unwrap(),
            next,
        );
        d.eq(
            format!("{what} len"),
            st["len"].as_u64().unwrap() as usize,
            data.len(),
        );
        d.eq(
            format!("{what} sha256"),
            st["sha256"].as_str().unwrap().to_string(),
            sha256_hex(data),
        );
        if let Some(h) = st.get("data_hex") {
            d.eq(
                format!("{what} data"),
                h.as_str().unwrap().to_string(),
                hex(data),
            );
        }
    }
}

/// Every recorded per-key value (README "How to use").
fn check_key(c: &mut Conn, c3: &mut Conn, fx: &Fx, d: &mut Diffs) {
    let key = fx.key.as_slice();
    let n = &fx.name;
    let r = c.cmd(&[&b"TYPE"[..], key]);
    d.eq(
        format!("{n} TYPE"),
        format!("+{}\r\n", fx.s("type")),
        String::from_utf8_lossy(&r.raw).into_owned(),
    );
    let r = c.cmd(&[&b"PEXPIRETIME"[..], key]);
    d.eq(
        format!("{n} PEXPIRETIME"),
        format!(":{}\r\n", fx.i("pexpiretime")),
        String::from_utf8_lossy(&r.raw).into_owned(),
    );
    let dump = c.cmd(&[&b"DUMP"[..], key]);
    let want_dump = fx.dump_payload();
    d.eq(
        format!("{n} recorded DUMP length/sha"),
        (
            fx.i("dump_payload_len") as usize,
            fx.s("dump_payload_sha256").to_string(),
        ),
        (want_dump.len(), sha256_hex(&want_dump)),
    );
    match &dump.val {
        Resp::Bulk(b) => compare_dump(d, format!("{n} DUMP"), &want_dump, b),
        _ => d.0.push(format!("{n} DUMP: {}", show(&dump.raw))),
    }
    if !fx.is_bloom() {
        let r = c.cmd(&[&b"GET"[..], key]);
        d.eq(
            format!("{n} GET"),
            fx.s("get_hex").to_string(),
            hex(r.val.bulk()),
        );
        return;
    }
    // BF.INFO: RESP2 and RESP3, full and single fields.
    let r = c.cmd(&[&b"BF.INFO"[..], key]);
    d.raw(
        format!("{n} BF.INFO (RESP2)"),
        fx.s("info_reply_hex"),
        &r.raw,
    );
    let r = c3.cmd(&[&b"BF.INFO"[..], key]);
    let resp3_full = fx.s("info_resp3_reply_hex");
    d.raw(format!("{n} BF.INFO (RESP3)"), resp3_full, &r.raw);
    for (field, label) in INFO_FIELDS {
        let want2 = fx.j["info_single_field_replies_hex"][field]
            .as_str()
            .unwrap();
        let r = c.cmd(&[&b"BF.INFO"[..], key, field.as_bytes()]);
        d.raw(format!("{n} BF.INFO {field} (RESP2)"), want2, &r.raw);
        // RESP3: a one-pair map whose pair is the one of the full RESP3 reply (`docs/commands.md` ("BF.INFO")).
        let value2 = unhex(want2);
        let value = value2
            .strip_prefix(b"*1\r\n")
            .expect("RESP2 single field is *1");
        let value3: &[u8] = if value == b"$-1\r\n" { b"_\r\n" } else { value };
        let pair = [format!("+{label}\r\n").as_bytes(), value3].concat();
        assert!(
            resp3_full.contains(&hex(&pair)),
            "{n}: recorded RESP3 BF.INFO has no pair {}",
            show(&pair)
        );
        let want3 = [b"%1\r\n".as_slice(), &pair].concat();
        let r = c3.cmd(&[&b"BF.INFO"[..], key, field.as_bytes()]);
        d.raw(format!("{n} BF.INFO {field} (RESP3)"), &hex(&want3), &r.raw);
    }
    let r = c.cmd(&[&b"BF.DEBUG"[..], key]);
    d.raw(format!("{n} BF.DEBUG"), fx.s("debug_reply_hex"), &r.raw);
    let r = c.cmd(&[&b"BF.CARD"[..], key]);
    d.eq(
        format!("{n} BF.CARD"),
        format!(":{}\r\n", fx.i("card")),
        String::from_utf8_lossy(&r.raw).into_owned(),
    );
    check_walk(c, d, fx, key, "");
    // Every item is present except the recorded zero positions.
    let items = items_of(fx);
    d.eq(
        format!("{n} items count/digest"),
        (
            fx.i("items_count") as usize,
            fx.s("items_sha256_u32le_len_prefixed").to_string(),
        ),
        (items.len(), items_digest(&items)),
    );
    let cmds = mexists_batches(key, &items, 10000);
    let mut zero = Vec::new();
    let mut idx = 0;
    for r in c.pipe(&cmds) {
        for v in r.val.array() {
            if *v != Resp::Int(1) {
                zero.push(idx);
            }
            idx += 1;
        }
    }
    d.eq(
        format!("{n} BF.MEXISTS(items) positions not 1"),
        usize_list(&fx.j["items_mexists_zero_n"]),
        zero,
    );
    // The 5000 probes: exactly the recorded false positives answer 1.
    let pr = &fx.j["probes"];
    let probes = probe_items(key, pr["count"].as_u64().unwrap() as usize);
    let cmds = mexists_batches(key, &probes, 1000);
    let answers: Vec<i64> = c
        .pipe(&cmds)
        .iter()
        .flat_map(|r| r.val.array().iter().map(Resp::int).collect::<Vec<_>>())
        .collect();
    let fps: Vec<usize> = (0..answers.len()).filter(|&i| answers[i] == 1).collect();
    let want_fps = usize_list(&pr["false_positive_n"]);
    d.eq(
        format!("{n} probe false positives"),
        want_fps.clone(),
        fps.clone(),
    );
    d.eq(
        format!("{n} false_positive_count"),
        pr["false_positive_count"].as_u64().unwrap() as usize,
        fps.len(),
    );
    let want_fp_items = common::json_hex_list(&pr["false_positive_items_hex"]);
    let got_fp_items: Vec<Vec<u8>> = want_fps.iter().map(|&i| probes[i].clone()).collect();
    d.eq(
        format!("{n} false_positive_items_hex"),
        want_fp_items,
        got_fp_items,
    );
    // BF.EXISTS agrees with BF.MEXISTS (RESP2 ints).
    let sample: Vec<usize> = want_fps.iter().take(3).copied().chain([0, 1]).collect();
    for i in sample {
        let r = c.cmd(&[&b"BF.EXISTS"[..], key, &probes[i]]);
        d.eq(
            format!("{n} BF.EXISTS probe {i}"),
            format!(":{}\r\n", answers[i]),
            String::from_utf8_lossy(&r.raw).into_owned(),
        );
    }
}

/// RESTORE of the recorded DUMP payload under a new name reads back identically.
fn restore_check(c: &mut Conn, fx: &Fx, d: &mut Diffs) {
    let n = &fx.name;
    let tmp = [fx.key.as_slice(), b"{restored}"].concat();
    let payload = fx.dump_payload();
    let r = c.cmd(&[&b"RESTORE"[..], &tmp, b"0", &payload, b"REPLACE"]);
    if r.raw != b"+OK\r\n" {
        d.0.push(format!("{n} RESTORE recorded payload: {}", show(&r.raw)));
        return;
    }
    if fx.is_bloom() {
        let r = c.cmd(&[&b"BF.DEBUG"[..], &tmp]);
        d.raw(
            format!("{n} BF.DEBUG after RESTORE"),
            fx.s("debug_reply_hex"),
            &r.raw,
        );
        let r = c.cmd(&[&b"BF.INFO"[..], &tmp]);
        d.raw(
            format!("{n} BF.INFO after RESTORE"),
            fx.s("info_reply_hex"),
            &r.raw,
        );
        check_walk(c, d, fx, &tmp, "after RESTORE ");
    } else {
        let r = c.cmd(&[&b"GET"[..], &tmp]);
        d.eq(
            format!("{n} GET after RESTORE"),
            fx.s("get_hex").to_string(),
            hex(r.val.bulk()),
        );
    }
    let again = c.cmd(&[&b"DUMP"[..], &tmp]);
    compare_dump(
        d,
        format!("{n} DUMP after RESTORE"),
        &payload,
        again.val.bulk(),
    );
    assert_eq!(c.cmd(&[&b"DEL"[..], &tmp]).raw, b":1\r\n");
}

/// KEYS equals the recorded key set, then every key and its RESTORE round trip.
fn check_dataset(server: &DirServer, set: &[Fx], context: &str) {
    check_dataset_with(server, set, context, true);
}

/// [`check_dataset`]; without `restore`, no RESTORE of the recorded payloads (a server older
/// than the one that recorded them refuses their RDB version).
fn check_dataset_with(server: &DirServer, set: &[Fx], context: &str, restore: bool) {
    let mut c = server.conn();
    let mut c3 = server.conn3();
    let mut d = Diffs::default();
    let want: BTreeSet<Vec<u8>> = set.iter().map(|f| f.key.clone()).collect();
    let got: BTreeSet<Vec<u8>> = c
        .cmd(&[&b"KEYS"[..], b"*"])
        .val
        .array()
        .iter()
        .map(|k| k.bulk().to_vec())
        .collect();
    d.eq(format!("{context}: KEYS *"), want, got);
    for fx in set {
        check_key(&mut c, &mut c3, fx, &mut d);
        if restore {
            restore_check(&mut c, fx, &mut d);
        }
    }
    c.assert_ping();
    d.assert_none(context);
}

/// The rewritten (plain) AOF holds, per Bloom key, `BF.LOADCHUNK key 1 <header>` then one
/// LOADCHUNK per SCANDUMP chunk exactly as recorded; strings and TTLs as plain commands.
fn check_rewrite(base: &[u8], set: &[Fx], context: &str) {
    assert!(
        !base.starts_with(b"REDIS"),
        "{context}: rewritten base AOF has an RDB preamble"
    );
    let mut d = Diffs::default();
    let mut chunks: BTreeMap<Vec<u8>, Vec<(i64, Vec<u8>)>> = BTreeMap::new();
    let mut others: Vec<Vec<Vec<u8>>> = Vec::new();
    for cmd in parse_aof(base) {
        if cmd[0].eq_ignore_ascii_case(b"BF.LOADCHUNK") {
            assert_eq!(cmd.len(), 4, "{context}: LOADCHUNK arity");
            let it: i64 = std::str::from_utf8(&cmd[2]).unwrap().parse().unwrap();
            chunks
                .entry(cmd[1].clone())
                .or_default()
                .push((it, cmd[3].clone()));
        } else {
            others.push(cmd);
        }
    }
    let bloom_keys: BTreeSet<Vec<u8>> = set
        .iter()
        .filter(|f| f.is_bloom())
        .map(|f| f.key.clone())
        .collect();
    d.eq(
        format!("{context}: keys with LOADCHUNK"),
        bloom_keys,
        chunks.keys().cloned().collect(),
    );
    for fx in set.iter().filter(|f| f.is_bloom()) {
        let got = chunks.get(&fx.key).cloned().unwrap_or_default();
        let mut want: Vec<(i64, String)> = vec![(1, fx.s("header_hex").to_string())];
        for st in &fx.scandump()[1..] {
            if st["len"].as_u64().unwrap() > 0 {
                want.push((
                    st["next_iter"].as_i64().unwrap(),
                    st["sha256"].as_str().unwrap().to_string(),
                ));
            }
        }
        let got_cmp: Vec<(i64, String)> = got
            .iter()
            .enumerate()
            .map(|(i, (it, data))| (*it, if i == 0 { hex(data) } else { sha256_hex(data) }))
            .collect();
        d.eq(
            format!(
                "{context}: {} LOADCHUNK sequence (iter, header / chunk sha256)",
                fx.name
            ),
            want,
            got_cmp,
        );
        for (st, (_, data)) in fx.scandump()[1..].iter().zip(got.iter().skip(1)) {
            if let Some(h) = st.get("data_hex") {
                d.eq(
                    format!("{context}: {} LOADCHUNK chunk data", fx.name),
                    h.as_str().unwrap().to_string(),
                    hex(data),
                );
            }
        }
    }
    // Everything else: SELECT, the plain keys, and TTLs.
    let mut want_others: Vec<Vec<Vec<u8>>> = vec![args([b"SELECT", b"0"])];
    for fx in set {
        if !fx.is_bloom() {
            want_others.push(args([b"SET", &fx.key, &unhex(fx.s("get_hex"))]));
        }
        if fx.i("pexpiretime") >= 0 {
            let at = fx.i("pexpiretime").to_string();
            want_others.push(args([b"PEXPIREAT", &fx.key, at.as_bytes()]));
        }
    }
    let norm = |v: &[Vec<Vec<u8>>]| -> BTreeSet<Vec<Vec<u8>>> {
        v.iter()
            .map(|c| {
                let mut c = c.clone();
                c[0].make_ascii_uppercase();
                c
            })
            .collect()
    };
    d.eq(
        format!("{context}: non-LOADCHUNK commands of the rewrite"),
        norm(&want_others),
        norm(&others),
    );
    d.eq(
        format!("{context}: number of non-LOADCHUNK commands"),
        want_others.len(),
        others.len(),
    );
    d.assert_none(context);
}

const AOF_ARGS: [&str; 8] = [
    "--appendonly",
    "yes",
    "--appenddirname",
    "appendonlydir",
    "--aof-use-rdb-preamble",
    "no",
    "--appendfsync",
    "no",
];

/// Loads the server's rewritten AOF directory on a new server and checks the dataset again.
fn reload_rewritten(server: &DirServer, set: &[Fx], context: &str) {
    reload_rewritten_on(&common::server_binary(), server, set, context);
}

/// [`reload_rewritten`] on the server binary `bin`.
fn reload_rewritten_on(bin: &str, server: &DirServer, set: &[Fx], context: &str) {
    let dir = DirServer::tempdir();
    copy_tree(
        &server.path("appendonlydir"),
        &dir.path().join("appendonlydir"),
    );
    let again = DirServer::start_on(bin, dir, &AOF_ARGS);
    check_dataset(&again, set, context);
}

/// Recreates fx:big from its generator and checks every request and reply digest.
fn replay_big(c: &mut Conn, fx: &Fx, d: &mut Diffs) {
    let key = fx.key.as_slice();
    let mut cmds = vec![args([b"BF.RESERVE", key, b"0.001", b"200000"])];
    for b in 0..15u32 {
        let mut v = args([b"BF.MADD", key]);
        v.extend((b * 10000..(b + 1) * 10000).map(|n| format!("big:{n}").into_bytes()));
        cmds.push(v);
    }
    let summary = fx.j["commands_summary"].as_array().unwrap();
    assert_eq!(summary.len(), cmds.len(), "fx:big commands_summary");
    let replies = c.pipe(&cmds);
    for (i, ((cmd, r), s)) in cmds.iter().zip(&replies).zip(summary).enumerate() {
        let what = format!("fx:big command {i}");
        // The regenerated request is the recorded one.
        d.eq(
            format!("{what} request"),
            (
                s["argc"].as_u64().unwrap() as usize,
                common::json_hex_list(&s["first_args_hex"]),
                s["last_arg_hex"].as_str().unwrap().to_string(),
                s["request_resp_sha256"].as_str().unwrap().to_string(),
            ),
            (
                cmd.len(),
                cmd[..3].to_vec(),
                hex(cmd.last().unwrap()),
                sha256_hex(&encode_command(cmd)),
            ),
        );
        if let Some(h) = s.get("reply_hex") {
            d.raw(format!("{what} reply"), h.as_str().unwrap(), &r.raw);
        }
        d.eq(
            format!("{what} reply sha256"),
            s["reply_sha256"].as_str().unwrap().to_string(),
            sha256_hex(&r.raw),
        );
        if let Some(zero) = s.get("reply_zero_positions") {
            let a = r.val.array();
            d.eq(
                format!("{what} reply length"),
                s["reply_len"].as_u64().unwrap() as usize,
                a.len(),
            );
            let got: Vec<usize> = (0..a.len()).filter(|&k| a[k] == Resp::Int(0)).collect();
            d.eq(format!("{what} :0 positions"), usize_list(zero), got);
        }
    }
}

/// Replays every key's recorded commands on `c`; each reply must equal the recorded one.
fn replay(c: &mut Conn, set: &[Fx], context: &str) {
    let mut d = Diffs::default();
    for fx in set {
        if fx.j.get("commands_elided").and_then(Json::as_bool) == Some(true) {
            replay_big(c, fx, &mut d);
            continue;
        }
        let cmds: Vec<Vec<Vec<u8>>> = fx.j["commands"]
            .as_array()
            .unwrap()
            .iter()
            .map(|cmd| common::json_hex_list(&cmd["args_hex"]))
            .collect();
        let replies = c.pipe(&cmds);
        for (i, (cmd, r)) in fx.j["commands"]
            .as_array()
            .unwrap()
            .iter()
            .zip(replies)
            .enumerate()
        {
            d.raw(
                format!("{context}: {} command {i}", fx.name),
                cmd["reply_hex"].as_str().unwrap(),
                &r.raw,
            );
        }
    }
    d.assert_none(context);
}

#[test]
fn fixture_files_match_sha256sums() {
    let dir = fx_dir();
    let sums = std::fs::read_to_string(dir.join("SHA256SUMS")).unwrap();
    let mut checked = 0;
    for line in sums.lines() {
        let (sum, path) = line.split_once("  ").unwrap();
        let path = path.trim_start_matches("./");
        if path == "check_fixtures.py" {
            continue; // the Python checker is not copied into the repository
        }
        let data = std::fs::read(dir.join(path)).unwrap_or_else(|e| panic!("{path}: {e}"));
        assert_eq!(sha256_hex(&data), sum, "{path}");
        checked += 1;
    }
    assert_eq!(checked, 24);
    // appendonlydir.json describes the AOF files exactly.
    let j: Json =
        serde_json::from_slice(&std::fs::read(dir.join("appendonlydir.json")).unwrap()).unwrap();
    let manifest =
        std::fs::read_to_string(dir.join("appendonlydir/appendonly.aof.manifest")).unwrap();
    assert_eq!(manifest, j["manifest"].as_str().unwrap());
    for (name, f) in j["files"].as_object().unwrap() {
        let data = std::fs::read(dir.join("appendonlydir").join(name)).unwrap();
        assert_eq!(data.len() as u64, f["len"].as_u64().unwrap(), "{name}");
        assert_eq!(sha256_hex(&data), f["sha256"].as_str().unwrap(), "{name}");
        if let Some(cmds) = f.get("commands") {
            let want: Vec<Vec<Vec<u8>>> = cmds
                .as_array()
                .unwrap()
                .iter()
                .map(common::json_hex_list)
                .collect();
            assert_eq!(parse_aof(&data), want, "{name} commands");
        }
    }
}

/// RedisBloom 8's recorded data set on the Redis 8.0 server it was recorded on: the keys listed
/// in the recordings' folder `keys`, asserted to be `count`, a server started with `args` in a
/// temp dir holding the recordings' `file` (a file or a folder, copied whole), and that
/// server's binary. None after the SKIP line of `common::expect_redisbloom8`.
fn expect_redisbloom8_recording(
    test: &str,
    keys: &str,
    count: usize,
    file: &str,
    args: &[&str],
) -> Option<(DirServer, Vec<Fx>, String)> {
    let (fx8, bin) = common::expect_redisbloom8(test, "")?;
    let set = load_set_in(&fx8, keys);
    assert_eq!(set.len(), count, "{test}: keys in {keys}");
    let dir = DirServer::tempdir();
    let (from, to) = (fx8.join(file), dir.path().join(file));
    if from.is_dir() {
        copy_tree(&from, &to);
    } else {
        std::fs::copy(&from, &to).unwrap();
    }
    Some((DirServer::start_on(&bin, dir, args), set, bin))
}

#[test]
fn redisbloom8_rdb_fixture_loads_identically() {
    let test = "redisbloom8_rdb_fixture_loads_identically";
    let args = ["--dbfilename", "dump.rdb", "--appendonly", "no"];
    let Some((server, set, _)) = expect_redisbloom8_recording(test, "keys", 22, "dump.rdb", &args)
    else {
        return;
    };
    check_dataset(&server, &set, "redisbloom8 dump.rdb");
}

#[test]
fn redisbloom8_aof_fixture_loads_identically_and_rewrites_as_scandump_walks() {
    let test = "redisbloom8_aof_fixture_loads_identically_and_rewrites_as_scandump_walks";
    // The incr file replays BF.RESERVE / BF.INSERT … EXPANSION 0 (non-scaling, growth 0).
    let Some((server, set, bin)) =
        expect_redisbloom8_recording(test, "aof-keys", 11, "appendonlydir", &AOF_ARGS)
    else {
        return;
    };
    check_dataset(&server, &set, "redisbloom8 appendonlydir");
    let mut c = server.conn();
    let base = rewrite_aof(&server, &mut c);
    check_rewrite(&base, &set, "redisbloom8 appendonlydir rewrite");
    reload_rewritten_on(
        &bin,
        &server,
        &set,
        "redisbloom8 appendonlydir rewritten and reloaded",
    );
}

/// The AOF written on Redis 8 (its incr file has `BF.RESERVE` / `BF.INSERT … EXPANSION 0`)
/// replays on the server under test, whatever its line: EXPANSION 0 from the AOF is accepted
/// on Redis 7 and Valkey too, and builds the same filters.
#[test]
fn redisbloom8_aof_replays_on_the_server_under_test() {
    let Some(shared) = common::shared_or_skip("redisbloom8_aof_replays_on_the_server_under_test")
    else {
        return;
    };
    let fx8 = shared.join("fixtures/redisbloom8");
    let set = load_set_in(&fx8, "aof-keys");
    let dir = DirServer::tempdir();
    copy_tree(
        &fx8.join("appendonlydir"),
        &dir.path().join("appendonlydir"),
    );
    let server = DirServer::start(dir, &AOF_ARGS);
    check_dataset_with(&server, &set, "redisbloom8 appendonlydir", false);
}

#[test]
fn rdb_fixture_loads_identically() {
    let set = load_set("keys");
    assert_eq!(set.len(), 12);
    let dir = DirServer::tempdir();
    std::fs::copy(fx_dir().join("dump.rdb"), dir.path().join("dump.rdb")).unwrap();
    let server = DirServer::start(dir, &["--dbfilename", "dump.rdb", "--appendonly", "no"]);
    check_dataset(&server, &set, "dump.rdb");
}

#[test]
fn aof_fixture_loads_identically_and_rewrites_as_scandump_walks() {
    let set = load_set("aof-keys");
    assert_eq!(set.len(), 6);
    let dir = DirServer::tempdir();
    copy_tree(
        &fx_dir().join("appendonlydir"),
        &dir.path().join("appendonlydir"),
    );
    let server = DirServer::start(dir, &AOF_ARGS);
    check_dataset(&server, &set, "appendonlydir");
    let mut c = server.conn();
    let base = rewrite_aof(&server, &mut c);
    check_rewrite(&base, &set, "appendonlydir rewrite");
    reload_rewritten(&server, &set, "appendonlydir rewritten and reloaded");
}

/// Replays the commands of the fixture set `name` into a fresh AOF server, checks the dataset,
/// rewrites the AOF and checks the rewrite; with `reload`, also reloads the rewritten AOF.
fn check_replayed(name: &str, reload: bool) {
    let set = load_set(name);
    let server = DirServer::start(DirServer::tempdir(), &AOF_ARGS);
    let mut c = server.conn();
    replay(&mut c, &set, &format!("replay {name}/"));
    check_dataset(&server, &set, &format!("replayed {name}/"));
    let base = rewrite_aof(&server, &mut c);
    check_rewrite(&base, &set, &format!("replayed {name}/ rewrite"));
    if reload {
        reload_rewritten(
            &server,
            &set,
            &format!("replayed {name}/ rewritten and reloaded"),
        );
    }
}

#[test]
fn replayed_rdb_commands_rebuild_identical_filters() {
    check_replayed("keys", true);
}

#[test]
fn replayed_aof_commands_rebuild_identical_filters() {
    check_replayed("aof-keys", false);
}

#[test]
fn rewrite_of_a_layer_over_16_mib_matches_its_scandump_walk() {
    // `docs/format.md` ("SCANDUMP", "AOF rewrite"): chunks are at most 16 MiB and never cross a layer; the AOF rewrite emits
    // exactly the SCANDUMP walk. 15e6 items at 0.005 → 20 677 040 bytes in one layer.
    let server = DirServer::start(DirServer::tempdir(), &AOF_ARGS);
    let mut c = server.conn();
    let key = b"big:16mib";
    let r = c.cmd(&[&b"BF.RESERVE"[..], key, b"0.01", b"15000000"]);
    assert_eq!(r.raw, b"+OK\r\n");
    let mut madd = args([b"BF.MADD", key]);
    madd.extend((0..1000).map(|i| format!("i{i}").into_bytes()));
    c.cmd(&madd);
    let mut walk: Vec<(i64, Vec<u8>)> = Vec::new();
    let mut it = 0i64;
    loop {
        let r = c.cmd(&[&b"BF.SCANDUMP"[..], key, it.to_string().as_bytes()]);
        let a = r.val.array();
        let (next, data) = (a[0].int(), a[1].bulk().to_vec());
        if next == 0 {
            assert!(data.is_empty());
            break;
        }
        walk.push((next, data));
        it = next;
    }
    let lens: Vec<usize> = walk.iter().map(|(_, d)| d.len()).collect();
    assert_eq!(
        lens,
        vec![73, 16 * 1024 * 1024, 20_677_040 - 16 * 1024 * 1024]
    );
    let iters: Vec<i64> = walk.iter().map(|(n, _)| *n).collect();
    assert_eq!(iters, vec![1, 16 * 1024 * 1024 + 1, 20_677_040 + 1]);
    let base = rewrite_aof(&server, &mut c);
    let got: Vec<(i64, Vec<u8>)> = parse_aof(&base)
        .into_iter()
        .filter(|cmd| cmd[0].eq_ignore_ascii_case(b"BF.LOADCHUNK") && cmd[1] == key)
        .map(|cmd| {
            let it: i64 = std::str::from_utf8(&cmd[2]).unwrap().parse().unwrap();
            (it, cmd[3].clone())
        })
        .collect();
    // The header is sent with iterator 1, each chunk with the iterator SCANDUMP returned.
    assert_eq!(got.len(), walk.len());
    assert_eq!(got[0], (1, walk[0].1.clone()));
    for (g, w) in got[1..].iter().zip(&walk[1..]) {
        assert_eq!(g.0, w.0);
        assert!(g.1 == w.1, "chunk at {} differs", g.0);
    }
    // And it loads back to the same filter.
    let dir = DirServer::tempdir();
    copy_tree(
        &server.path("appendonlydir"),
        &dir.path().join("appendonlydir"),
    );
    let again = DirServer::start(dir, &AOF_ARGS);
    let mut c2 = again.conn();
    let mut it = 0i64;
    for (next, data) in &walk {
        let r = c2.cmd(&[&b"BF.SCANDUMP"[..], key, it.to_string().as_bytes()]);
        let a = r.val.array();
        assert_eq!(a[0].int(), *next);
        assert!(a[1].bulk() == data.as_slice(), "reloaded chunk at {it}");
        it = *next;
    }
}

/// `BF.MEXISTS key …` commands asking for `items` in batches of `batch`.
fn mexists_batches(key: &[u8], items: &[Vec<u8>], batch: usize) -> Vec<Vec<Vec<u8>>> {
    items
        .chunks(batch)
        .map(|batch| {
            let mut v = args([b"BF.MEXISTS", key]);
            v.extend(batch.iter().cloned());
            v
        })
        .collect()
}
