//! A static list rebuilt on a schedule: a weak-password list (the entries `pw-0000000`,
//! `pw-0000001`, …) held in a Ribbon filter, rebuilt every "hour" from the changed list and
//! swapped in with `RENAME`, while reader connections keep asking it with `RF.MEXISTS`.
//!
//! Each round (an hour, compressed to [`Config::hour_ms`] milliseconds, 1000 by default) the
//! job:
//!
//! 1. `DEL passwords:next`, then stages the whole current list there with pipelined
//!    `RF.MADD passwords:next e1 … e10000`;
//! 2. `RF.BUILD passwords:next ERROR ε` (built on the server's worker thread: this client
//!    waits, the readers are served; if the key changed meanwhile, say by a second copy of
//!    the job, it answers `ERR the key changed …` and the round starts over);
//! 3. `RENAME passwords:next passwords` (atomic: a reader sees the old list or the new one).
//!
//! Round 0 builds the first list before the readers start; each later round takes
//! [`Config::churn`] entries out and puts as many new ones in (1 % of the list by default). After each swap the job waits (polling, with a
//! deadline) until every reader has been answered by a call that started after it, so every
//! list is read.
//!
//! **What the readers check.** Each entry id has the round it came in and the round it went
//! out, so list `r` is known exactly. The job publishes two numbers: `committed`, the last
//! round whose swap has returned, and `started`, the last round whose swap was sent. A reader
//! reads `committed` before its `RF.MEXISTS` call (the key then holds list `committed` or a
//! later one) and `started` after the reply (the key cannot have held a later one), so during
//! the call the key held some list `j` with `committed ≤ j ≤ started`. For each item asked:
//!
//! - in every list of that range: the answer must be 1 (a 0 is a **false negative**, counted
//!   and the program exits with 1);
//! - in none of them (or never on any list): the answer is a false positive when 1, and counts
//!   towards the measured rate;
//! - in some of them (it came in or went out during the swap): either answer is right, and the
//!   item is counted as "in flux".
//!
//! Half of each reader's probes are drawn from every id ever on a list, half from ids never on
//! one. `--in-place` rebuilds the key itself instead (`DEL passwords`, stage, build): the
//! mistake the swap avoids, which readers see as false negatives (exit code 1).
//!
//! At the end a Bloom filter of the final list at the same ε (`BF.RESERVE passwords:bloom ε N`
//! and `BF.MADD`) is made to compare `MEMORY USAGE`.
//!
//! ```sh
//! cargo run --release --example static_list                      # 1,000,000 entries, 5 rebuilds, 4 readers
//! cargo run --release --example static_list -- 100000 3 2        # ENTRIES ROUNDS READERS
//! cargo run --release --example static_list -- 100000 3 2 --in-place   # the wrong way: exit 1
//! ```
//!
//! `REDIS_URL=redis://host:port/` names another server (default `redis://127.0.0.1:6379/`).

mod common;

use std::error::Error;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// The error type of a run: any failure, sendable from a reader thread.
pub type RunError = Box<dyn Error + Send + Sync>;

/// The key readers ask.
pub const LIST: &str = "passwords";
/// The key each rebuild stages and builds before the swap.
pub const NEXT: &str = "passwords:next";
/// The Bloom filter of the final list, for the memory comparison.
pub const BLOOM: &str = "passwords:bloom";

/// An id that is never on any list is at least this.
const ABSENT_BASE: u64 = 1 << 40;
/// "Never" as a round an entry goes out.
const NEVER: u32 = u32::MAX;

/// What to run. [`Config::default`] is the documented run.
#[derive(Clone, Debug)]
pub struct Config {
    /// The server (`redis://host:port/`).
    pub url: String,
    /// Entries on the list, every round.
    pub entries: usize,
    /// Rebuilds after the first build.
    pub rounds: u32,
    /// Entries taken out, and as many new ones put in, each round.
    pub churn: usize,
    /// Reader connections, one thread each.
    pub readers: usize,
    /// Items per `RF.MEXISTS` call of a reader.
    pub probe_batch: usize,
    /// Items per `RF.MADD` call of the job.
    pub stage_batch: usize,
    /// The false-positive rate asked of `RF.BUILD` and of the Bloom filter.
    pub error: f64,
    /// One "hour": the pause between a swap and the next rebuild, in milliseconds.
    pub hour_ms: u64,
    /// Rebuild the read key itself (`DEL`, stage, build) instead of swapping a new key in.
    pub in_place: bool,
}

impl Default for Config {
    fn default() -> Config {
        Config {
            url: common::redis_url(),
            entries: 1_000_000,
            rounds: 5,
            churn: 10_000,
            readers: 4,
            probe_batch: 100,
            stage_batch: 10_000,
            error: 0.0001,
            hour_ms: 1000,
            in_place: false,
        }
    }
}

/// Every list of the run: entry id `i` is on list `r` when `added[i] <= r < removed[i]`.
struct Lists {
    added: Vec<u32>,
    removed: Vec<u32>,
}

impl Lists {
    /// Round 0 holds ids `0..entries`; round `r` takes `churn` ids of the current list out
    /// (drawn with a fixed seed) and adds the next `churn` new ids.
    fn generate(entries: usize, rounds: u32, churn: usize) -> Lists {
        let total = entries + rounds as usize * churn;
        let mut added = vec![0u32; total];
        let mut removed = vec![NEVER; total];
        let mut current: Vec<u64> = (0..entries as u64).collect();
        let mut rng = common::Rng(33);
        for r in 1..=rounds {
            for _ in 0..churn.min(current.len()) {
                let out = current.swap_remove(rng.below(current.len()));
                removed[out as usize] = r;
            }
            let first = entries + (r as usize - 1) * churn;
            added[first..first + churn].fill(r);
            current.extend(first as u64..(first + churn) as u64);
        }
        Lists { added, removed }
    }

    /// The ids on list `round`, in id order.
    fn list(&self, round: u32) -> Vec<u64> {
        (0..self.added.len())
            .filter(|&i| self.added[i] <= round && round < self.removed[i])
            .map(|i| i as u64)
            .collect()
    }

    /// How many of the lists `lo..=hi` hold `id`: all, none or some.
    fn held(&self, id: u64, lo: u32, hi: u32) -> Held {
        let Some(i) = usize::try_from(id).ok().filter(|&i| i < self.added.len()) else {
            return Held::None;
        };
        let (a, r) = (self.added[i], self.removed[i]);
        if a <= lo && hi < r {
            Held::All
        } else if hi < a || r <= lo {
            Held::None
        } else {
            Held::Some
        }
    }
}

enum Held {
    All,
    None,
    Some,
}

/// The ids on the list of round `round` of a run of `cfg` (in id order; `entry` gives their
/// text).
pub fn list_of(cfg: &Config, round: u32) -> Vec<u64> {
    Lists::generate(cfg.entries, cfg.rounds, cfg.churn).list(round)
}

/// An entry never on any list of any run: the `n`th one.
pub fn absent(n: u64) -> String {
    entry(ABSENT_BASE + n)
}

/// The entry text of id `id`.
pub fn entry(id: u64) -> String {
    format!("pw-{id:07}")
}

/// What the job and the readers share.
struct Shared {
    lists: Lists,
    /// The last round whose swap (or in-place build) has returned.
    committed: AtomicU64,
    /// The last round whose swap (or in-place rebuild) was sent.
    started: AtomicU64,
    /// What the job is doing: `changes × 4 + phase` ([`Phase`]), so a reader can tell which
    /// phases a call overlapped.
    phase: AtomicU64,
    /// Bumped by the job when it wants every reader to be answered once more.
    step: AtomicU64,
    /// Per reader: the `step` read at the start of its last answered call.
    seen: Vec<AtomicU64>,
    stop: AtomicBool,
}

/// What the job is doing, in the order it does it each round.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Phase {
    /// Waiting for the next "hour" (or for the readers).
    Idle = 0,
    /// `DEL` and `RF.MADD` of the whole list.
    Staging = 1,
    /// `RF.BUILD`.
    Building = 2,
    /// `RENAME`.
    Swapping = 3,
}

impl Phase {
    /// The job's cycle with `RENAME`, and rebuilding in place (no swap).
    const CYCLE: [Phase; 4] = [
        Phase::Staging,
        Phase::Building,
        Phase::Swapping,
        Phase::Idle,
    ];
    const IN_PLACE: [Phase; 3] = [Phase::Staging, Phase::Building, Phase::Idle];

    /// The phase a call is counted in, from the `phase` word read before and after it: the
    /// last of staging, building, swapping it overlapped (the job goes through `cycle` in
    /// order), else idle.
    fn of_call(before: u64, after: u64, cycle: &[Phase]) -> Phase {
        let steps = (after >> 2).saturating_sub(before >> 2) as usize;
        let first = cycle.iter().position(|&p| p as u64 == before & 3);
        (0..=steps.min(cycle.len()))
            .map(|k| cycle[(first.unwrap_or(0) + k) % cycle.len()])
            .max_by_key(|&p| p as u8)
            .unwrap_or(Phase::Idle)
    }
}

impl Shared {
    /// Publishes that the job now does `phase`.
    fn enter(&self, phase: Phase) {
        let changes = (self.phase.load(SeqCst) >> 2) + 1;
        self.phase.store(changes << 2 | phase as u64, SeqCst);
    }
}

/// One reader's tallies.
#[derive(Default)]
struct ReaderTally {
    calls: u64,
    failed: u64,
    first_error: Option<String>,
    member_probes: u64,
    false_negatives: u64,
    first_false_negative: Option<String>,
    absent_probes: u64,
    false_positives: u64,
    in_flux: u64,
    /// Microseconds per answered call, by [`Phase::of_call`].
    waits_us: [Vec<u32>; 4],
}

fn reader(shared: &Shared, index: usize, cfg: &Config) -> Result<ReaderTally, RunError> {
    let mut con = redis::Client::open(cfg.url.as_str())?.get_connection()?;
    let mut rng = common::Rng(1000 + index as u64);
    let total = shared.lists.added.len();
    let mut t = ReaderTally::default();
    let mut ids = Vec::with_capacity(cfg.probe_batch);
    while !shared.stop.load(SeqCst) {
        ids.clear();
        for _ in 0..cfg.probe_batch {
            let id = if rng.chance(0.5) {
                rng.below(total) as u64
            } else {
                ABSENT_BASE + rng.next() % ABSENT_BASE
            };
            ids.push(id);
        }
        let mut cmd = redis::cmd("RF.MEXISTS");
        cmd.arg(LIST);
        for &id in &ids {
            cmd.arg(entry(id));
        }
        let step = shared.step.load(SeqCst);
        let lo = shared.committed.load(SeqCst) as u32;
        let p0 = shared.phase.load(SeqCst);
        let t0 = Instant::now();
        let reply: redis::RedisResult<Vec<i64>> = cmd.query(&mut con);
        let us = t0.elapsed().as_micros().min(u32::MAX as u128) as u32;
        let p1 = shared.phase.load(SeqCst);
        let hi = shared.started.load(SeqCst) as u32;
        t.calls += 1;
        let answers = match reply {
            Ok(a) if a.len() == ids.len() => a,
            Ok(a) => {
                t.failed += 1;
                t.first_error
                    .get_or_insert(format!("{} answers to {} items", a.len(), ids.len()));
                continue;
            }
            Err(e) => {
                t.failed += 1;
                t.first_error.get_or_insert(e.to_string());
                continue;
            }
        };
        let cycle: &[Phase] = if cfg.in_place {
            &Phase::IN_PLACE
        } else {
            &Phase::CYCLE
        };
        t.waits_us[Phase::of_call(p0, p1, cycle) as usize].push(us);
        for (&id, &answer) in ids.iter().zip(&answers) {
            match shared.lists.held(id, lo, hi) {
                Held::All => {
                    t.member_probes += 1;
                    if answer != 1 {
                        t.false_negatives += 1;
                        t.first_false_negative.get_or_insert(format!(
                            "{} (on lists {lo}..={hi}) answered {answer}",
                            entry(id)
                        ));
                    }
                }
                Held::None => {
                    t.absent_probes += 1;
                    t.false_positives += u64::from(answer == 1);
                }
                Held::Some => t.in_flux += 1,
            }
        }
        shared.seen[index].fetch_max(step, SeqCst);
    }
    Ok(t)
}

/// One round's figures.
#[derive(Clone, Debug)]
pub struct Round {
    /// Entries on this round's list.
    pub entries: usize,
    /// Entries new since the round before (round 0: all of them).
    pub came_in: usize,
    /// Entries gone since the round before.
    pub went_out: usize,
    /// Staging with `RF.MADD`, seconds.
    pub stage_s: f64,
    /// `MEMORY USAGE` of the staged key before the build.
    pub staged_bytes: u64,
    /// `RF.BUILD`, seconds (as the job's client waits for it).
    pub build_s: f64,
    /// `RENAME`, milliseconds (0 in place).
    pub swap_ms: f64,
    /// `MEMORY USAGE` of the read key after the swap.
    pub built_bytes: u64,
}

/// Latency figures of the readers' answered calls, microseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waits {
    /// Answered calls counted here.
    pub calls: u64,
    /// Their median, 99th percentile and longest wait, microseconds (0 without calls).
    pub p50_us: u32,
    pub p99_us: u32,
    pub max_us: u32,
}

impl Waits {
    fn of(mut us: Vec<u32>) -> Waits {
        us.sort_unstable();
        let at = |q: f64| us.get(((us.len() as f64 - 1.0) * q) as usize).copied();
        Waits {
            calls: us.len() as u64,
            p50_us: at(0.5).unwrap_or(0),
            p99_us: at(0.99).unwrap_or(0),
            max_us: us.last().copied().unwrap_or(0),
        }
    }
}

/// Everything a run measured.
#[derive(Clone, Debug)]
pub struct Report {
    /// What was run.
    pub config: Config,
    /// Round 0 (the first build) and each rebuild.
    pub rounds: Vec<Round>,
    /// Wall time of the readers' part (from their start to the last swap's being read), seconds.
    pub read_s: f64,
    /// The readers' `RF.MEXISTS` calls, those not answered (an error or a short reply), and
    /// the first such failure.
    pub calls: u64,
    pub failed_calls: u64,
    pub first_error: Option<String>,
    /// Items asked that were on every list the key could hold, those answered 0, and the
    /// first of them.
    pub member_probes: u64,
    pub false_negatives: u64,
    pub first_false_negative: Option<String>,
    /// Items asked that were on none of those lists, and those answered 1.
    pub absent_probes: u64,
    pub false_positives: u64,
    /// Items asked that came in or went out during the call's swap (not checked).
    pub in_flux: u64,
    /// The readers' calls by the job's phase they overlapped ([`Phase`] as index).
    pub waits: [Waits; 4],
    /// `MEMORY USAGE` of a Bloom filter of the final list at the same ε.
    pub bloom_bytes: u64,
}

impl Report {
    /// The measured false-positive rate on absent entries.
    pub fn false_positive_rate(&self) -> f64 {
        self.false_positives as f64 / self.absent_probes.max(1) as f64
    }

    /// The printed report: a header line, the per-round table, the readers' and the memory
    /// lines, and the verdict (`no false negatives` or `FALSE NEGATIVES: …`).
    pub fn text(&self) -> String {
        let c = &self.config;
        let mut s = String::new();
        let how = if c.in_place {
            "rebuilt in place (DEL, RF.MADD, RF.BUILD on the read key)"
        } else {
            "staged, RF.BUILD and RENAME over the read key"
        };
        let _ = writeln!(
            s,
            "static list '{LIST}': {} entries, {} rebuilds of {} out / {} in, error {}, {how}; {} readers of RF.MEXISTS x {}",
            c.entries, c.rounds, c.churn, c.churn, c.error, c.readers, c.probe_batch
        );
        let _ = writeln!(
            s,
            "| round | entries | in | out | stage s | staged bytes | build s | swap ms | built bytes | bits/entry |"
        );
        let _ = writeln!(s, "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
        for (r, x) in self.rounds.iter().enumerate() {
            let _ = writeln!(
                s,
                "| {r} | {} | {} | {} | {:.2} | {} | {:.3} | {:.2} | {} | {:.2} |",
                x.entries,
                x.came_in,
                x.went_out,
                x.stage_s,
                x.staged_bytes,
                x.build_s,
                x.swap_ms,
                x.built_bytes,
                x.built_bytes as f64 * 8.0 / x.entries.max(1) as f64
            );
        }
        let answered = self.calls - self.failed_calls;
        let _ = writeln!(
            s,
            "readers: {answered} of {} calls answered ({:.3}%) in {:.2} s, {:.0} items/s; {} errors{}",
            self.calls,
            100.0 * answered as f64 / self.calls.max(1) as f64,
            self.read_s,
            (answered * c.probe_batch as u64) as f64 / self.read_s.max(1e-9),
            self.failed_calls,
            self.first_error
                .as_ref()
                .map(|e| format!(" (first: {e})"))
                .unwrap_or_default()
        );
        for (label, phase) in [
            ("during staging (RF.MADD)", Phase::Staging),
            ("during RF.BUILD", Phase::Building),
            ("during RENAME", Phase::Swapping),
            ("otherwise", Phase::Idle),
        ] {
            let w = self.waits[phase as usize];
            let _ = writeln!(
                s,
                "  wait per call {label}: {} calls, median {:.2} ms, p99 {:.2} ms, longest {:.2} ms",
                w.calls,
                w.p50_us as f64 / 1000.0,
                w.p99_us as f64 / 1000.0,
                w.max_us as f64 / 1000.0
            );
        }
        let _ = writeln!(
            s,
            "  entries on the list asked: {}, answered 0 (false negatives): {}",
            self.member_probes, self.false_negatives
        );
        let _ = writeln!(
            s,
            "  entries not on the list asked: {}, answered 1 (false positives): {} = {:.4}% (asked {}%)",
            self.absent_probes,
            self.false_positives,
            100.0 * self.false_positive_rate(),
            100.0 * c.error
        );
        let _ = writeln!(
            s,
            "  entries in or out during a swap (either answer right): {}",
            self.in_flux
        );
        let last = self.rounds.last().map(|r| r.built_bytes).unwrap_or(0);
        let n = self.rounds.last().map(|r| r.entries).unwrap_or(0).max(1) as f64;
        let _ = writeln!(
            s,
            "memory: Ribbon {last} bytes ({:.2} bits/entry) vs Bloom filter of the same list and error {} bytes ({:.2} bits/entry): {:.1}% less",
            last as f64 * 8.0 / n,
            self.bloom_bytes,
            self.bloom_bytes as f64 * 8.0 / n,
            100.0 * (1.0 - last as f64 / self.bloom_bytes.max(1) as f64)
        );
        match &self.first_false_negative {
            None => s.push_str("no false negatives\n"),
            Some(first) => {
                let _ = writeln!(
                    s,
                    "FALSE NEGATIVES: {} (first: {first})",
                    self.false_negatives
                );
            }
        }
        s
    }
}

/// Sends `cmd key items…` in calls of `batch` items, pipelined.
fn send_batches(
    con: &mut redis::Connection,
    cmd: &str,
    key: &str,
    ids: &[u64],
    batch: usize,
) -> Result<(), RunError> {
    let mut pipe = redis::pipe();
    for part in ids.chunks(batch.max(1)) {
        let c = pipe.cmd(cmd).arg(key);
        for &id in part {
            c.arg(entry(id));
        }
        c.ignore();
    }
    pipe.exec(con)?;
    Ok(())
}

/// The job's side of the reader handshake: bump `step`, then wait until every reader has been
/// answered by a call that started after it (or a reader has stopped).
fn wait_readers(shared: &Shared, readers: &[thread::JoinHandle<Result<ReaderTally, RunError>>]) {
    let step = shared.step.fetch_add(1, SeqCst) + 1;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !readers.is_empty()
        && Instant::now() < deadline
        && shared.seen.iter().any(|s| s.load(SeqCst) < step)
        && !readers.iter().any(|h| h.is_finished())
    {
        thread::sleep(Duration::from_millis(1));
    }
}

/// Runs the job: the first build, `rounds` rebuilds with readers throughout, the Bloom
/// comparison. Errors are the job's own (a failed command); readers' failures are counted
/// in the report.
pub fn run(cfg: &Config) -> Result<Report, RunError> {
    let mut con = redis::Client::open(cfg.url.as_str())?.get_connection()?;
    let shared = Arc::new(Shared {
        lists: Lists::generate(cfg.entries, cfg.rounds, cfg.churn),
        committed: AtomicU64::new(0),
        started: AtomicU64::new(0),
        phase: AtomicU64::new(0),
        step: AtomicU64::new(0),
        seen: (0..cfg.readers).map(|_| AtomicU64::new(0)).collect(),
        stop: AtomicBool::new(false),
    });
    redis::cmd("DEL")
        .arg(LIST)
        .arg(NEXT)
        .arg(BLOOM)
        .exec(&mut con)?;

    let mut rounds = Vec::new();
    let mut readers = Vec::new();
    let mut read_start = Instant::now();
    let mut previous: Vec<u64> = Vec::new();
    for r in 0..=cfg.rounds {
        let ids = shared.lists.list(r);
        let came_in = ids
            .iter()
            .filter(|&&i| shared.lists.added[i as usize] == r)
            .count();
        let went_out = previous.len() + came_in - ids.len();
        previous.clone_from(&ids);
        let target = if cfg.in_place && r > 0 { LIST } else { NEXT };

        shared.enter(Phase::Staging);
        if target == LIST {
            shared.started.store(u64::from(r), SeqCst);
        }
        // A build whose key changed meanwhile (deleted or renamed, say by a second copy of the
        // job) installs nothing: start the round over, a few times at most.
        let mut attempts = 0;
        let (stage_s, staged_bytes, t) = loop {
            attempts += 1;
            redis::cmd("DEL").arg(target).exec(&mut con)?;
            if target == LIST {
                // The key is gone: make sure readers ask it now, as they would at any moment.
                wait_readers(&shared, &readers);
            }
            let t = Instant::now();
            send_batches(&mut con, "RF.MADD", target, &ids, cfg.stage_batch)?;
            let stage_s = t.elapsed().as_secs_f64();
            let staged_bytes = common::memory_usage(&mut con, target)?;
            shared.enter(Phase::Building);
            let t = Instant::now();
            let built = redis::cmd("RF.BUILD")
                .arg(target)
                .arg("ERROR")
                .arg(cfg.error)
                .exec(&mut con);
            match built {
                Ok(()) => break (stage_s, staged_bytes, t),
                Err(e) if attempts < 3 && e.to_string().contains("the key changed") => {
                    eprintln!("round {r}: {e}; starting the round over");
                    shared.enter(Phase::Staging);
                }
                Err(e) => return Err(e.into()),
            }
        };
        let build_s = t.elapsed().as_secs_f64();
        let mut swap_ms = 0.0;
        if target == NEXT {
            shared.enter(Phase::Swapping);
            shared.started.store(u64::from(r), SeqCst);
            let t = Instant::now();
            redis::cmd("RENAME").arg(NEXT).arg(LIST).exec(&mut con)?;
            swap_ms = t.elapsed().as_secs_f64() * 1000.0;
        }
        shared.committed.store(u64::from(r), SeqCst);
        shared.enter(Phase::Idle);
        rounds.push(Round {
            entries: ids.len(),
            came_in: if r == 0 { ids.len() } else { came_in },
            went_out,
            stage_s,
            staged_bytes,
            build_s,
            swap_ms,
            built_bytes: common::memory_usage(&mut con, LIST)?,
        });

        if r == 0 {
            read_start = Instant::now();
            for index in 0..cfg.readers {
                let (shared, cfg) = (Arc::clone(&shared), cfg.clone());
                readers.push(thread::spawn(move || reader(&shared, index, &cfg)));
            }
        }
        wait_readers(&shared, &readers);
        if r < cfg.rounds {
            thread::sleep(Duration::from_millis(cfg.hour_ms));
        }
    }
    let read_s = read_start.elapsed().as_secs_f64();
    shared.stop.store(true, SeqCst);

    let mut report = Report {
        config: cfg.clone(),
        rounds,
        read_s,
        calls: 0,
        failed_calls: 0,
        first_error: None,
        member_probes: 0,
        false_negatives: 0,
        first_false_negative: None,
        absent_probes: 0,
        false_positives: 0,
        in_flux: 0,
        waits: [Waits::default(); 4],
        bloom_bytes: 0,
    };
    let mut waits: [Vec<u32>; 4] = Default::default();
    for handle in readers {
        let t = handle.join().map_err(|_| "a reader panicked")??;
        report.calls += t.calls;
        report.failed_calls += t.failed;
        report.first_error = report.first_error.or(t.first_error);
        report.member_probes += t.member_probes;
        report.false_negatives += t.false_negatives;
        report.first_false_negative = report.first_false_negative.or(t.first_false_negative);
        report.absent_probes += t.absent_probes;
        report.false_positives += t.false_positives;
        report.in_flux += t.in_flux;
        for (all, one) in waits.iter_mut().zip(t.waits_us) {
            all.extend(one);
        }
    }
    report.waits = waits.map(Waits::of);

    let last = shared.lists.list(cfg.rounds);
    redis::cmd("BF.RESERVE")
        .arg(BLOOM)
        .arg(cfg.error)
        .arg(last.len().max(1))
        .exec(&mut con)?;
    send_batches(&mut con, "BF.MADD", BLOOM, &last, cfg.stage_batch)?;
    report.bloom_bytes = common::memory_usage(&mut con, BLOOM)?;
    Ok(report)
}

const USAGE: &str =
    "usage: static_list [ENTRIES [ROUNDS [READERS]]] [--in-place]   (defaults 1000000 5 4)";

#[allow(dead_code)]
fn main() {
    let mut cfg = Config::default();
    let mut numbers = Vec::new();
    for arg in std::env::args().skip(1) {
        match arg.as_str() {
            "--in-place" => cfg.in_place = true,
            "-h" | "--help" => {
                println!("{USAGE}");
                return;
            }
            _ => match arg.parse::<usize>() {
                Ok(n) => numbers.push(n),
                Err(_) => {
                    eprintln!("static_list: not a number: {arg}\n{USAGE}");
                    std::process::exit(2);
                }
            },
        }
    }
    if let Some(&n) = numbers.first() {
        cfg.entries = n;
        cfg.churn = (n / 100).max(1);
    }
    if let Some(&r) = numbers.get(1) {
        cfg.rounds = r as u32;
    }
    if let Some(&k) = numbers.get(2) {
        cfg.readers = k.max(1);
    }
    match run(&cfg) {
        Ok(report) => {
            print!("{}", report.text());
            if report.false_negatives > 0 {
                std::process::exit(1);
            }
        }
        Err(e) => {
            eprintln!("static_list: {e}");
            std::process::exit(1);
        }
    }
}
