//! Answer membership questions locally: download a filter once with `BF.SCANDUMP`, rebuild it
//! with the pure core crate `redis_bf_core` (`dump::{decode_header, apply_chunk}`; no Redis
//! dependency, one `[dependencies]` line, see core/README.md), and ask
//! `Chain::contains` instead of the server, e.g. in a batch job or an edge service that must not
//! make a round trip per item.
//!
//! The example builds a 3-layer filter on the server (capacity 10,000, 50,000 items), downloads
//! it, then checks 100,000 probes (half members, half not) both locally and with `BF.MEXISTS`.
//! The two answers must be identical for every probe; the process exits non-zero otherwise.
//!
//! ```sh
//! cargo run --release --example local_check      # REDIS_URL=redis://host:port/ to override
//! ```

mod common;

use common::connect;
use std::error::Error;
use std::time::Instant;

use redis_bf_core::dump::{apply_chunk, decode_header};
use redis_bf_core::Chain;

const KEY: &str = "local:check";
const ITEMS: usize = 50_000;
const PROBES: usize = 100_000;

/// Downloads `key` with a full SCANDUMP walk and rebuilds it locally.
/// Returns the chain, the number of chunks (header included) and the bytes transferred.
fn download(
    con: &mut redis::Connection,
    key: &str,
) -> Result<(Chain, usize, usize), Box<dyn Error>> {
    let (mut iter, header): (i64, Vec<u8>) =
        redis::cmd("BF.SCANDUMP").arg(key).arg(0).query(con)?;
    if iter == 0 {
        return Err("empty dump".into());
    }
    let mut chain = decode_header(&header, u64::MAX).map_err(|e| format!("bad header: {e:?}"))?;
    let (mut chunks, mut bytes) = (1, header.len());
    loop {
        let (next, data): (i64, Vec<u8>) =
            redis::cmd("BF.SCANDUMP").arg(key).arg(iter).query(con)?;
        if next == 0 {
            break;
        }
        apply_chunk(&mut chain, next, &data).map_err(|e| format!("bad chunk at {next}: {e:?}"))?;
        chunks += 1;
        bytes += data.len();
        iter = next;
    }
    Ok((chain, chunks, bytes))
}

fn main() -> Result<(), Box<dyn Error>> {
    let mut con = connect()?;

    // A filter on the server, grown to three layers (10,000 + 20,000 + 40,000).
    redis::cmd("DEL").arg(KEY).exec(&mut con)?;
    redis::cmd("BF.RESERVE")
        .arg(KEY)
        .arg(0.01)
        .arg(10_000)
        .exec(&mut con)?;
    let members: Vec<String> = (0..ITEMS).map(|i| format!("member:{i}")).collect();
    for batch in members.chunks(1_000) {
        redis::cmd("BF.MADD").arg(KEY).arg(batch).exec(&mut con)?;
    }

    let t = Instant::now();
    let (chain, chunks, bytes) = download(&mut con, KEY)?;
    let download_ms = t.elapsed().as_secs_f64() * 1000.0;
    let card: u64 = redis::cmd("BF.CARD").arg(KEY).query(&mut con)?;
    println!(
        "downloaded '{KEY}' with BF.SCANDUMP: {chunks} chunks, {bytes} bytes, {download_ms:.1} ms; \
         {} layers, {} items (BF.CARD {card})",
        chain.layers.len(),
        chain.size
    );

    // Probes: every other one a member.
    let probes: Vec<String> = (0..PROBES)
        .map(|i| {
            if i % 2 == 0 {
                format!("member:{}", (i / 2) % ITEMS)
            } else {
                format!("stranger:{i}")
            }
        })
        .collect();

    let t = Instant::now();
    let local: Vec<bool> = probes
        .iter()
        .map(|p| chain.contains(p.as_bytes()))
        .collect();
    let local_ms = t.elapsed().as_secs_f64() * 1000.0;

    let t = Instant::now();
    let mut remote: Vec<bool> = Vec::with_capacity(PROBES);
    for batch in probes.chunks(1_000) {
        let r: Vec<bool> = redis::cmd("BF.MEXISTS")
            .arg(KEY)
            .arg(batch)
            .query(&mut con)?;
        remote.extend(r);
    }
    let remote_ms = t.elapsed().as_secs_f64() * 1000.0;

    let mismatches = local.iter().zip(&remote).filter(|(a, b)| a != b).count();
    let members_found = local.iter().step_by(2).filter(|x| **x).count();
    let strangers_positive = local.iter().skip(1).step_by(2).filter(|x| **x).count();
    println!(
        "{PROBES} probes: local Chain::contains {local_ms:.1} ms, BF.MEXISTS (batches of 1000) {remote_ms:.1} ms"
    );
    println!(
        "  members reported present: {members_found} of {} (local)",
        PROBES / 2
    );
    println!(
        "  non-members reported present (false positives): {strangers_positive} of {} = {:.3}% (requested 1%)",
        PROBES / 2,
        100.0 * strangers_positive as f64 / (PROBES / 2) as f64
    );
    println!("  local vs server mismatches: {mismatches}");
    if mismatches > 0 || members_found != PROBES / 2 {
        eprintln!("local answers differ from the server's");
        std::process::exit(1);
    }
    println!("local answers are identical to BF.MEXISTS");
    Ok(())
}
