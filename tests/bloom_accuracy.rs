//! Accuracy with a real server: no false negatives ever, and the false-positive rate measured
//! on 100 000 distinct non-members stays within the requested error rate — for a scaling filter
//! grown a hundredfold past its initial capacity and for a NONSCALING filter filled exactly to
//! its capacity. The server's answers must also be exactly what the pure core computes from the
//! bits the server dumps. Run with `--nocapture` to see the measured rates.

mod common;

use common::{scandump, Server};
use redis::{ConnectionLike, Value};
use redis_bf::bloom::chain::Chain;
use redis_bf::bloom::dump::{apply_chunk, decode_header};

type Bytes = Vec<u8>;

const BATCH: usize = 1000;
const NON_MEMBERS: usize = 100_000;

fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<Bytes> {
    range.map(|i| format!("{prefix}{i}").into_bytes()).collect()
}

/// BF.MADD in batches of 1000, 20 batches per pipeline; returns (new, already present).
fn madd_all(con: &mut redis::Connection, key: &str, items: &[Bytes]) -> (usize, usize) {
    let replies = batched(con, "BF.MADD", key, items);
    let added = replies.iter().filter(|r| **r == 1).count();
    assert!(
        replies.iter().all(|r| *r == 0 || *r == 1),
        "BF.MADD answered something else than 0/1"
    );
    (added, replies.len() - added)
}

/// `command key item…` (BF.MADD or BF.MEXISTS) in batches of 1000, 20 batches per pipeline;
/// one reply per item.
fn batched(con: &mut redis::Connection, command: &str, key: &str, items: &[Bytes]) -> Vec<i64> {
    let out = common::batched(con, command, key, items, BATCH);
    assert_eq!(out.len(), items.len());
    out
}

/// `command key item` (BF.ADD or BF.EXISTS) once per item, 20 000 commands per pipeline.
fn one_by_one(con: &mut redis::Connection, command: &str, key: &str, items: &[Bytes]) -> Vec<i64> {
    let mut out = Vec::with_capacity(items.len());
    for group in items.chunks(BATCH * 20) {
        let mut p = redis::pipe();
        for i in group {
            p.cmd(command).arg(key).arg(i.as_slice());
        }
        let replies: Vec<i64> = p
            .query(con)
            .unwrap_or_else(|e| panic!("{command} {key}: {e}"));
        out.extend(replies);
    }
    out
}

/// BF.MEXISTS in batches of 1000, 20 batches per pipeline.
fn mexists_all(con: &mut redis::Connection, key: &str, items: &[Bytes]) -> Vec<i64> {
    batched(con, "BF.MEXISTS", key, items)
}

fn card(con: &mut redis::Connection, key: &str) -> u64 {
    common::cmd("BF.CARD").arg(key).query(con).unwrap()
}

/// BF.INFO as (capacity, number of filters, items).
fn info(con: &mut redis::Connection, key: &str) -> (u64, u64, u64) {
    let field = |con: &mut redis::Connection, f: &str| -> u64 {
        let v: Vec<u64> = common::cmd("BF.INFO").arg(key).arg(f).query(con).unwrap();
        v[0]
    };
    (
        field(con, "CAPACITY"),
        field(con, "FILTERS"),
        field(con, "ITEMS"),
    )
}

/// The filter as the server dumps it, rebuilt with the core.
fn dumped_chain(con: &mut redis::Connection, key: &str) -> Chain {
    let walk = scandump(con, key.as_bytes());
    let (first, header) = &walk[0];
    assert_eq!(*first, 1);
    let mut chain = decode_header(header, u64::MAX).expect("the server's header decodes");
    for (next, data) in &walk[1..] {
        apply_chunk(&mut chain, *next, data).expect("the server's chunk applies");
    }
    chain
}

/// Expected false-positive rate of `chain` from the fill of each layer: 1 − Π (1 − ρᵢ^kᵢ).
fn fill_estimate(chain: &Chain) -> f64 {
    let miss: f64 = chain
        .layers
        .iter()
        .map(|l| {
            let ones: u32 = l.data.iter().map(|b| b.count_ones()).sum();
            let rho = f64::from(ones) / l.params().modulus() as f64;
            1.0 - rho.powi(l.params().hashes as i32)
        })
        .product();
    1.0 - miss
}

struct Measured {
    /// Server's false-positive rate on the given non-members.
    rate: f64,
    /// Rate predicted from the fill of the layers.
    estimate: f64,
    /// The core's rate on the dumped bits over [`LOCAL_NON_MEMBERS`] other non-members.
    local_rate: f64,
}

/// Non-members the core checks locally against the dumped bits, for a precise rate.
const LOCAL_NON_MEMBERS: usize = 2_000_000;

/// Largest measured rate compatible with a true rate of `error`: `error` plus three standard
/// deviations of a binomial proportion over `n` samples. A filter at its design load has a
/// true rate close to `error` (a NONSCALING filter filled to capacity: ≈ 0.000998 for 0.001),
/// so a finite sample lands on either side of it; only a rate significantly above the
/// requested one (a one-sided test at ≈ 0.13 %) fails.
fn allowed_rate(error: f64, n: usize) -> f64 {
    error + 3.0 * (error * (1.0 - error) / n as f64).sqrt()
}

/// Checks zero false negatives, that the server agrees with the core on every answer, and
/// measures the false-positive rate on `non_members`.
/// Both measured false-positive rates (server on the non-members, core on the dumped bits)
/// are within what the requested `error` allows for their sample sizes.
fn assert_rates_within(m: &Measured, error: f64) {
    let allowed = allowed_rate(error, NON_MEMBERS);
    assert!(
        m.rate <= allowed,
        "false-positive rate {} above the requested {error} (allowed up to {allowed:.5})",
        m.rate
    );
    assert!(
        m.local_rate <= allowed_rate(error, LOCAL_NON_MEMBERS),
        "precise false-positive rate {} above the requested {error}",
        m.local_rate
    );
}

fn measure(
    con: &mut redis::Connection,
    key: &str,
    members: &[Bytes],
    non_members: &[Bytes],
) -> Measured {
    let got = mexists_all(con, key, members);
    let missing = got.iter().filter(|x| **x != 1).count();
    assert_eq!(
        missing,
        0,
        "{key}: {missing} false negatives (first: {:?})",
        got.iter()
            .position(|x| *x != 1)
            .map(|i| String::from_utf8_lossy(&members[i]).to_string())
    );

    let answers = mexists_all(con, key, non_members);
    let fp = answers.iter().filter(|x| **x == 1).count();
    assert!(
        answers.iter().all(|x| *x == 0 || *x == 1),
        "{key}: BF.MEXISTS answered something else than 0/1"
    );

    // The server's answers are exactly the core's on the bits the server dumps.
    let chain = dumped_chain(con, key);
    assert!(
        members.iter().all(|m| chain.contains(m)),
        "{key}: dump lacks a member"
    );
    let local: Vec<i64> = non_members
        .iter()
        .map(|n| i64::from(chain.contains(n)))
        .collect();
    let disagree = local.iter().zip(&answers).filter(|(a, b)| a != b).count();
    assert_eq!(
        disagree, 0,
        "{key}: the server and the core disagree on {disagree} non-members"
    );
    let local_fp = (0..LOCAL_NON_MEMBERS)
        .filter(|i| chain.contains(format!("{key}:local-non-member:{i}").as_bytes()))
        .count();
    Measured {
        rate: fp as f64 / non_members.len() as f64,
        estimate: fill_estimate(&chain),
        local_rate: local_fp as f64 / LOCAL_NON_MEMBERS as f64,
    }
}

/// A fresh server with the filter of `BF.RESERVE args`, and a connection to it.
fn reserved(args: &str) -> (Server, redis::Connection) {
    let server = Server::start();
    let mut con = server.conn();
    let _: () = common::cmd(format!("BF.RESERVE {args}"))
        .query(&mut con)
        .unwrap();
    (server, con)
}

#[test]
fn scaling_filter_grown_to_100k_items() {
    let key = "acc-scaling";
    let error = 0.01;
    let (_server, mut con) = reserved(&format!("{key} {error} 1000 EXPANSION 2"));
    let members = items("member:", 0..100_000);
    let (added, present) = madd_all(&mut con, key, &members);
    assert_eq!(added + present, members.len());
    assert_eq!(
        card(&mut con, key),
        added as u64,
        "BF.CARD = items answered 1"
    );
    // Layers of 1000, 2000, …, 64 000: seven are needed for 100 000 items.
    let (capacity, filters, items_in) = info(&mut con, key);
    assert_eq!(filters, 7, "number of layers");
    assert_eq!(capacity, 127_000, "total capacity");
    assert_eq!(items_in, added as u64);

    let non_members = items("non-member:", 0..NON_MEMBERS);
    let m = measure(&mut con, key, &members, &non_members);
    let insert_rate = present as f64 / members.len() as f64;
    println!(
        "scaling (error {error}, capacity 1000, expansion 2, 100 000 items, {filters} layers): \
         false-positive rate {:.5} on {NON_MEMBERS} non-members (core on the dumped bits, \
         {LOCAL_NON_MEMBERS} others: {:.5}; fill estimate {:.5}); {present} adds answered 0 \
         ({insert_rate:.5})",
        m.rate, m.local_rate, m.estimate
    );
    assert_rates_within(&m, error);
    assert!(
        insert_rate <= allowed_rate(error, members.len()),
        "{present} of {} new items were reported as present",
        members.len()
    );
}

#[test]
fn nonscaling_filter_filled_to_capacity() {
    let key = "acc-nonscaling";
    let error = 0.001;
    let capacity = 10_000u64;
    let (_server, mut con) = reserved(&format!("{key} {error} {capacity} NONSCALING"));
    let mut members = items("ns-member:", 0..capacity as usize);
    let (added, present) = madd_all(&mut con, key, &members);
    assert_eq!(added + present, members.len());
    // Items that were false positives on insertion did not count: top up with new items until
    // the filter holds exactly its capacity.
    let mut next = capacity as usize;
    while card(&mut con, key) < capacity {
        assert!(next < 2 * capacity as usize, "cannot fill the filter");
        let item = format!("ns-member:{next}").into_bytes();
        let _: i64 = common::cmd("BF.ADD")
            .arg(key)
            .arg(item.as_slice())
            .query(&mut con)
            .unwrap();
        members.push(item);
        next += 1;
    }
    assert_eq!(card(&mut con, key), capacity);
    assert_eq!(info(&mut con, key), (capacity, 1, capacity));

    // Full: new items are refused (those that look present answer 0), MADD stops at the error.
    let mut cmd = common::cmd("BF.MADD");
    cmd.arg(key);
    for i in 0..50 {
        cmd.arg(format!("beyond:{i}"));
    }
    let reply = con.req_command(&cmd).unwrap();
    let Value::Array(elements) = reply else {
        panic!("BF.MADD on a full filter: {reply:?}")
    };
    let (last, zeros) = elements.split_last().expect("non-empty reply");
    assert!(zeros.iter().all(|z| *z == Value::Int(0)), "{elements:?}");
    match last {
        Value::ServerError(e) => assert_eq!(
            (e.code(), e.details()),
            ("ERR", Some("non scaling filter is full")),
            "full error"
        ),
        other => panic!("BF.MADD past capacity ended with {other:?}, want the full error"),
    }
    assert_eq!(card(&mut con, key), capacity, "nothing added past capacity");

    let non_members = items("ns-non-member:", 0..NON_MEMBERS);
    let m = measure(&mut con, key, &members, &non_members);
    println!(
        "nonscaling (error {error}, capacity {capacity}, filled to {capacity}): false-positive \
         rate {:.5} on {NON_MEMBERS} non-members (core on the dumped bits, {LOCAL_NON_MEMBERS} \
         others: {:.5}; fill estimate {:.5}); {present} adds answered 0",
        m.rate, m.local_rate, m.estimate
    );
    assert_rates_within(&m, error);
}

/// The batch commands (whose core paths prefetch bit positions of items ahead, on layers of
/// 1 MiB and more) give exactly the single-item commands' answers and bits, across a layer
/// growth in the middle of a batch; and no member is ever reported absent.
#[test]
fn batch_commands_on_large_layers_match_single_item_commands() {
    let server = Server::start();
    let mut con = server.conn();
    // 300 000 items at 1e-6: a first layer of 1 132 420 bytes (k = 21), so both layers are
    // above the prefetching threshold.
    for key in ["by-batch", "by-item"] {
        let _: () = common::cmd("BF.RESERVE")
            .arg(key)
            .arg(0.000001)
            .arg(300_000)
            .query(&mut con)
            .unwrap();
    }
    let first_layer: Vec<u64> = common::cmd("BF.INFO by-batch SIZE")
        .query(&mut con)
        .unwrap();
    assert!(
        first_layer[0] > redis_bf::bloom::chain::PREFETCH_MIN_BYTES + 96,
        "{first_layer:?}"
    );
    // 320 000 distinct items, then 20 000 repeats: the first layer fills up inside a batch.
    let members: Vec<Bytes> = (0..320_000usize)
        .map(|i| format!("m:{i}").into_bytes())
        .chain((0..20_000usize).map(|i| format!("m:{}", i * 7).into_bytes()))
        .collect();
    let batch_replies = batched(&mut con, "BF.MADD", "by-batch", &members);
    let item_replies = one_by_one(&mut con, "BF.ADD", "by-item", &members);
    assert_eq!(batch_replies.len(), members.len());
    let first_diff = batch_replies
        .iter()
        .zip(&item_replies)
        .position(|(a, b)| a != b);
    assert_eq!(first_diff, None, "BF.MADD and BF.ADD answered differently");
    let added = batch_replies.iter().filter(|r| **r == 1).count();
    assert!(
        (319_990..=320_000).contains(&added),
        "{added} of 320 000 distinct items added"
    );
    assert_eq!(info(&mut con, "by-batch").1, 2, "the filter grew a layer");
    let batch_chain = dumped_chain(&mut con, "by-batch");
    assert_eq!(
        batch_chain,
        dumped_chain(&mut con, "by-item"),
        "the two filters' bits differ"
    );

    // BF.MEXISTS against BF.EXISTS on members and non-members, and against the core.
    let mut probes = members[..320_000].to_vec();
    probes.extend(items("absent:", 0..50_000));
    let answers = mexists_all(&mut con, "by-batch", &probes);
    let single = one_by_one(&mut con, "BF.EXISTS", "by-batch", &probes);
    assert_eq!(
        answers.iter().zip(&single).position(|(a, b)| a != b),
        None,
        "BF.MEXISTS and BF.EXISTS answered differently"
    );
    assert!(
        answers[..320_000].iter().all(|x| *x == 1),
        "a false negative"
    );
    let local: Vec<i64> = probes
        .iter()
        .map(|p| i64::from(batch_chain.contains(p)))
        .collect();
    assert_eq!(answers, local, "the server and the core disagree");
    let fp = answers[320_000..].iter().filter(|x| **x == 1).count();
    assert!(fp <= 2, "{fp} false positives of 50 000 at 1e-6");
}
