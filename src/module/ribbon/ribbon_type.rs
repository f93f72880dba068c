//! The Ribbon filter data type `bf-ribbon` (encoding version 1) and its callbacks (through
//! `FilterValue`): RDB save/load, AOF rewrite, memory usage, copy, digest, free (big values
//! on a background thread), active defrag of the record. `docs/format.md` ("Ribbon RDB value").
//!
//! A key holds a [`RibbonValue`]: **staging** (the set of staged items' 64-bit hashes,
//! [`item_hash`](crate::bloom::ribbon::item_hash), which is what the built filter is made
//! of), **built** (a read-only [`Ribbon`]) or **loading** (a copy arriving by
//! `RF.LOADCHUNK`, which answers nothing until complete). While an `RF.BUILD` runs from a
//! staging value, the value carries the build's [`Ticket`]; the build installs its result
//! only into the very value holding that ticket (`ribbon::commands::build`).
//!
//! The staged set is a `BTreeSet<u64>`: sorted, so saving, rewriting, digesting and building
//! walk it in order without a second copy (the same set gives the same bytes on every node,
//! whatever order its items arrived in); about [`STAGED_BYTES_PER_ITEM`] (16) bytes per item,
//! against 10 to 21 for a `HashSet<u64>` (whose walk is unordered: saving sorted would copy it).

use crate::bloom::rdb::DecodeError;
use crate::bloom::ribbon::dump::{self, Loader, HEADER_BYTES};
use crate::bloom::ribbon::rdb::{self, Stored};
use crate::bloom::ribbon::Ribbon;
use crate::module::alloc;
use crate::module::data_type::{
    self, defrag_move, digest_filter, emit_loadchunk, type_methods, FilterValue, IoReader,
    IoWriter, Lookup,
};
use crate::module::reply::Reply;
use crate::module::stats;
use redis_module::key::{RedisKey, RedisKeyWritable};
use redis_module::native_types::RedisType;
use redis_module::raw;
use std::os::raw::{c_int, c_void};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The type's RDB encoding version.
pub use crate::bloom::ribbon::rdb::ENCODING_VERSION;
pub use crate::bloom::ribbon::rdb::{
    body_chunks, stage_bytes, staged_batches, Staged, STAGED_BATCH,
};

/// Bytes a staged item takes in its `BTreeSet<u64>`, as `MEMORY USAGE` counts it: 8 for the
/// hash in nodes of 11 keys (104-byte leaves, 200-byte inner nodes, in 112- and 224-byte
/// allocator classes) about two thirds full after random inserts; measured: `used_memory` grew
/// by 16 bytes per item staging 3 × 1e5 items by RF.MADD batches of 1000.
pub const STAGED_BYTES_PER_ITEM: u64 = 16;

/// A build's ticket: shared by the staging value it started from and the build, which clears
/// it when it ends (installed or not), so that the value — wherever it is then — is plain
/// staging again.
#[derive(Debug)]
pub struct Ticket {
    running: AtomicBool,
}

impl Ticket {
    /// A ticket of a build about to start.
    pub fn new() -> Arc<Ticket> {
        Arc::new(Ticket {
            running: AtomicBool::new(true),
        })
    }

    /// Marks the build ended.
    pub fn end(&self) {
        self.running.store(false, Ordering::Release);
    }
}

/// What a key holds.
#[derive(Debug)]
pub enum State {
    /// Staged hashes (shared with a running build, which reads them on its thread).
    Staging(Arc<Staged>),
    /// A built, read-only filter.
    Built(Ribbon),
    /// A copy arriving by `RF.LOADCHUNK`.
    Loading(Box<Loader>),
}

/// The value of a `bf-ribbon` key.
#[derive(Debug)]
pub struct RibbonValue {
    /// What it holds.
    pub state: State,
    /// The ticket of the build started from this value, if any (see [`RibbonValue::building`]).
    pub ticket: Option<Arc<Ticket>>,
}

impl RibbonValue {
    /// A staging value holding `staged`.
    pub fn staging(staged: Staged) -> RibbonValue {
        RibbonValue {
            state: State::Staging(Arc::new(staged)),
            ticket: None,
        }
    }

    /// Is a build started from this value still running?
    pub fn building(&self) -> bool {
        self.ticket
            .as_ref()
            .is_some_and(|t| t.running.load(Ordering::Acquire))
    }

    /// Is this a copy still being loaded by `RF.LOADCHUNK` (it answers no membership yet)?
    pub fn is_loading(&self) -> bool {
        matches!(self.state, State::Loading(_))
    }

    /// Items: staged, built from, or (loading) none yet.
    pub fn items(&self) -> u64 {
        match &self.state {
            State::Staging(s) => s.len() as u64,
            State::Built(r) => r.items(),
            State::Loading(_) => 0,
        }
    }

    /// May the item whose hash is `hash` be in the set? A staging value answers exactly; a
    /// loading one answers no here, and the commands refuse to ask it ([`Self::is_loading`]).
    pub fn contains_hash(&self, hash: u64) -> bool {
        match &self.state {
            State::Staging(s) => s.contains(&hash),
            State::Built(r) => r.contains_hash(hash),
            State::Loading(_) => false,
        }
    }

    /// [`RibbonValue::contains_hash`] of each of `items` in order, given to `answer`; a built
    /// filter answers the batch with its lines prefetched ([`Ribbon::contains_many`]).
    pub fn contains_many<'a>(
        &self,
        items: impl IntoIterator<Item = &'a [u8]>,
        mut answer: impl FnMut(bool),
    ) {
        match &self.state {
            State::Built(r) => r.contains_many(items, answer),
            _ => items
                .into_iter()
                .for_each(|i| answer(self.contains_hash(crate::bloom::ribbon::item_hash(i)))),
        }
    }

    /// `[filters, items, bytes]` this value adds to the `INFO bf` Ribbon counters.
    pub fn footprint(&self) -> [i64; 3] {
        [
            1,
            self.items().min(i64::MAX as u64) as i64,
            self.mem_usage().min(i64::MAX as u64) as i64,
        ]
    }
}

/// The type, registered as `bf-ribbon`.
pub static RIBBON_TYPE: RedisType = RedisType::new(
    "bf-ribbon",
    ENCODING_VERSION,
    type_methods!(RibbonValue, defrag),
);

/// Reads the Ribbon value of a key opened read-only.
pub fn lookup(key: &RedisKey) -> Lookup<&RibbonValue> {
    data_type::lookup(key, &RIBBON_TYPE)
}

/// Borrows the Ribbon value of a key opened for writing (changes go through [`tracked`]).
pub fn lookup_mut(key: &RedisKeyWritable) -> Lookup<&mut RibbonValue> {
    data_type::lookup_mut(key, &RIBBON_TYPE)
}

/// Stores a new value in an empty key and counts it. Errors: `failure` when the key refused
/// it.
pub fn store_new(
    key: &RedisKeyWritable,
    v: RibbonValue,
    failure: &'static str,
) -> Result<(), Reply> {
    v.count_created();
    key.set_value(&RIBBON_TYPE, v)
        .map_err(|_| Reply::Error(failure))
}

/// Runs a change of a value and reports it to `INFO bf`.
pub fn tracked<R>(v: &mut RibbonValue, change: impl FnOnce(&mut RibbonValue) -> R) -> R {
    let before = v.footprint();
    let r = change(v);
    let after = v.footprint();
    stats::ribbon_add([0, after[1] - before[1], after[2] - before[2]]);
    r
}

/// Values at least this big are dropped on the module's dropping thread (freeing a few
/// hundred MiB of B-tree nodes takes the calling thread tens of milliseconds).
const DROP_ELSEWHERE_BYTES: u64 = 1 << 20;

/// Drops `thing` (of about `bytes`) off the calling thread when it is big: on a thread of the
/// module that only drops what it is sent, so that the main thread spends a bounded time.
/// Until it is dropped, `bytes` count in `INFO bf`'s `bf_free_pending_bytes`
/// ([`alloc::FREE_PENDING_BYTES`]), so a reader can wait for `used_memory` to have dropped.
pub fn drop_elsewhere<T: Send + 'static>(thing: T, bytes: u64) {
    use std::sync::{Condvar, Mutex, OnceLock};
    /// A value to drop and the bytes it counts as pending.
    type Job = (Box<dyn Send>, u64);
    /// What waits to be dropped, and whether the dropping thread runs. (A mutex and a
    /// condition variable: std's channels need 128-byte alignment, which Redis' allocator does
    /// not give.)
    struct Dropper {
        jobs: Mutex<(Vec<Job>, bool)>,
        ready: Condvar,
    }
    static DROPPER: OnceLock<&'static Dropper> = OnceLock::new();
    if bytes < DROP_ELSEWHERE_BYTES {
        return drop(thing);
    }
    let d = *DROPPER.get_or_init(|| {
        let d: &'static Dropper = Box::leak(Box::new(Dropper {
            jobs: Mutex::new((Vec::new(), false)),
            ready: Condvar::new(),
        }));
        let started = std::thread::Builder::new()
            .name("bf-rf-drop".into())
            .spawn(move || loop {
                let mut jobs = d.jobs.lock().unwrap_or_else(|e| e.into_inner());
                while jobs.0.is_empty() {
                    jobs = d.ready.wait(jobs).unwrap_or_else(|e| e.into_inner());
                }
                let batch = std::mem::take(&mut jobs.0);
                drop(jobs);
                for (job, bytes) in batch {
                    drop(job);
                    alloc::FREE_PENDING_BYTES.fetch_sub(bytes, Ordering::Relaxed);
                }
            })
            .is_ok();
        d.jobs.lock().unwrap_or_else(|e| e.into_inner()).1 = started;
        d
    });
    let mut jobs = d.jobs.lock().unwrap_or_else(|e| e.into_inner());
    if !jobs.1 || jobs.0.try_reserve(1).is_err() {
        drop(jobs);
        return drop(thing);
    }
    alloc::FREE_PENDING_BYTES.fetch_add(bytes, Ordering::Relaxed);
    jobs.0.push((Box::new(thing), bytes));
    d.ready.notify_one();
}

/// A deep copy of a filter, its words allocated fallibly.
fn try_clone_ribbon(r: &Ribbon) -> Option<Ribbon> {
    let mut words = Vec::new();
    words.try_reserve_exact(r.words().len()).ok()?;
    words.extend_from_slice(r.words());
    Ribbon::from_parts(
        r.error_rate(),
        *r.shape(),
        r.seed(),
        r.items(),
        words,
        r.bumped().to_vec(),
    )
    .ok()
}

impl FilterValue for RibbonValue {
    const TYPE_NAME: &'static str = "bf-ribbon";
    /// Staging: [`STAGED_BYTES_PER_ITEM`] per item; built: the solution and bumped hashes
    /// ([`Ribbon::bytes`]) and the header; loading: the body being filled; plus the record.
    fn mem_usage(&self) -> u64 {
        let own = std::mem::size_of::<RibbonValue>() as u64;
        own + match &self.state {
            State::Staging(s) => s.len() as u64 * STAGED_BYTES_PER_ITEM,
            State::Built(r) => r.bytes() + HEADER_BYTES as u64,
            State::Loading(l) => l.allocated_bytes() + HEADER_BYTES as u64,
        }
    }
    /// A copy is never building: a staging value copies its set, a loading one its bytes so
    /// far, a built one its filter.
    fn try_copy(&self) -> Option<RibbonValue> {
        let state = match &self.state {
            State::Staging(s) => State::Staging(Arc::new(Staged::clone(s))),
            State::Built(r) => State::Built(try_clone_ribbon(r)?),
            State::Loading(l) => {
                let mut copy = Loader::new(&l.header(), u64::MAX).ok()?;
                let body = l.received_body();
                if !body.is_empty() {
                    copy.apply(1, &body).ok()?;
                }
                State::Loading(Box::new(copy))
            }
        };
        Some(RibbonValue {
            state,
            ticket: None,
        })
    }
    fn count_created(&self) {
        stats::ribbon_add(self.footprint())
    }
    fn load(io: &mut IoReader, encver: c_int) -> Result<RibbonValue, DecodeError> {
        let max = crate::module::config::max_filter_bytes();
        let state = match rdb::load(io, encver, max)? {
            Stored::Staging(s) => State::Staging(Arc::new(s)),
            Stored::Built(r) => State::Built(r),
            Stored::Loading(l) => State::Loading(Box::new(l)),
        };
        Ok(RibbonValue {
            state,
            ticket: None,
        })
    }
    /// `docs/format.md` "Ribbon RDB value": a state tag, then the sorted staged hashes, the
    /// copy form, or a half copy.
    fn save(&self, io: &mut IoWriter) {
        match &self.state {
            State::Staging(s) => rdb::save_staging(s, io),
            State::Built(r) => rdb::save_built(r, io),
            State::Loading(l) => rdb::save_loading(l, io),
        }
    }
    /// Staging: `RF.LOADCHUNK key 0 <hashes>` per [`STAGED_BATCH`] hashes (one with no bytes
    /// for an empty set); built: `RF.LOADCHUNK key 1 <header>` then the SCANDUMP walk; loading:
    /// the header and the bytes received so far.
    fn rewrite(&self, aof: *mut raw::RedisModuleIO, key: *mut raw::RedisModuleString) {
        let emit =
            |iter: u64, data: &[u8]| emit_loadchunk(aof, c"RF.LOADCHUNK", key, iter as i64, data);
        match &self.state {
            State::Staging(s) => {
                if s.is_empty() {
                    emit(0, &[]);
                }
                staged_batches(s).for_each(|b| emit(0, &b));
            }
            State::Built(r) => {
                emit(1, &dump::encode_header(r));
                body_chunks(r).for_each(|(next, data)| emit(next, &data));
            }
            State::Loading(l) => {
                emit(1, &l.header());
                let body = l.received_body();
                if !body.is_empty() {
                    emit(body.len() as u64 + 1, &body);
                }
            }
        }
    }
    /// A state tag and count (staging) or the header, then the hashes or the body, as one
    /// sequence.
    fn digest(&self, md: *mut raw::RedisModuleDigest) {
        match &self.state {
            State::Staging(s) => {
                let mut head = b"staging".to_vec();
                head.extend_from_slice(&(s.len() as u64).to_le_bytes());
                digest_filter(md, &head, staged_batches(s))
            }
            State::Built(r) => digest_filter(
                md,
                &dump::encode_header(r),
                body_chunks(r).map(|(_, data)| data),
            ),
            State::Loading(l) => digest_filter(md, &l.header(), std::iter::once(l.received_body())),
        }
    }
    fn free(self) {
        let [f, i, b] = self.footprint();
        stats::ribbon_add([-f, -i, -b]);
        drop_elsewhere(self, b as u64);
    }
    /// Always 1: a big value is handed to the dropping thread ([`drop_elsewhere`]), so freeing
    /// takes the calling thread a bounded time.
    fn free_effort(&self) -> usize {
        1
    }
    /// Active defrag: offers the value's record (the boxed `RibbonValue`) to
    /// `RedisModule_DefragAlloc`, counting the hit or miss in `INFO bf`. The staged set's nodes
    /// and a built filter's solution stay where they are: `BTreeSet` and the core's `Ribbon`
    /// own those blocks and offer no way to hand them over. Always done in one call (returns
    /// 0).
    unsafe fn defrag(ctx: *mut raw::RedisModuleDefragCtx, value: *mut *mut c_void) -> c_int {
        // SAFETY: reading an API pointer set once by RedisModule_Init.
        let Some(defrag_alloc) = (unsafe { raw::RedisModule_DefragAlloc }) else {
            return 0;
        };
        // SAFETY: `ctx` is the live defrag context and `*value` the boxed RibbonValue this
        // module created from Redis' allocator, handed to no one else during the call (a
        // running build shares only the staged set behind its `Arc`, not the record). A moved
        // record is a bitwise copy, so the new address simply replaces the old one.
        unsafe {
            if let Some(new) = defrag_move(defrag_alloc, ctx, *value) {
                *value = new;
            }
        }
        0
    }
}

/// Checks of the pure helpers.
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn staged_bytes_round_trip_in_batches_and_refuse_disorder() {
        let staged: Staged = (0..150_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .collect();
        let batches: Vec<Vec<u8>> = staged_batches(&staged).collect();
        assert_eq!(batches.len(), 3);
        assert_eq!(batches[0].len(), STAGED_BATCH * 8);
        assert_eq!(batches[2].len(), (150_000 - 2 * STAGED_BATCH) * 8);
        let mut back = Staged::new();
        let mut last = None;
        for b in &batches {
            stage_bytes(&mut back, b, &mut last, true).unwrap();
        }
        assert_eq!(back, staged);
        // Out of order, repeated, or a cut hash: refused.
        let cases: [(&[u8], Option<u64>); 3] = [
            (&batches[0][..16], Some(u64::MAX)),
            (&[1, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0], None),
            (&batches[0][..12], None),
        ];
        for (bytes, mut last) in cases {
            let mut s = Staged::new();
            assert_eq!(
                stage_bytes(&mut s, bytes, &mut last, true),
                None,
                "{bytes:?}"
            );
        }
        // Unordered staging (RF.LOADCHUNK key 0) counts what was new.
        let mut s = Staged::new();
        let mut last = None;
        let twice = [5u64, 3, 5]
            .iter()
            .flat_map(|h| h.to_le_bytes())
            .collect::<Vec<_>>();
        assert_eq!(stage_bytes(&mut s, &twice, &mut last, false), Some(2));
    }

    #[test]
    fn a_build_ticket_ends_for_every_value_holding_it() {
        let mut v = RibbonValue::staging(Staged::from([1, 2]));
        assert!(!v.building());
        let t = Ticket::new();
        v.ticket = Some(t.clone());
        assert!(v.building());
        t.end();
        assert!(!v.building());
        assert_eq!(v.items(), 2);
        assert!(v.contains_hash(2) && !v.contains_hash(3));
    }
}
