//! Model test of the cuckoo filter: random sequences of CF.ADD / CF.ADDNX / CF.DEL (of items
//! added and of items never added) / CF.COMPACT / a SCANDUMP walk reloaded by LOADCHUNK / an
//! RDB round trip, on small filters (bucket sizes 1, 2, 4; max iterations 1–30; expansion 0,
//! 1, 2, 4), against a multiset of the items added and not deleted.
//!
//! The claims, after every step:
//! - `items` = insertions − successful deletions; with no "false deletion" so far (below),
//!   that is the model's size.
//! - No false negative and `CF.COUNT(x) ≥` the model's multiplicity of x, for every item x
//!   whose fingerprint no false deletion has touched.
//! - A SCANDUMP walk reloaded into the filter its header describes, and an RDB save/load,
//!   give an equal filter; a refused insertion (`Full`, `CannotGrow`) and an `ADDNX` answered
//!   `Exists` change nothing.
//!
//! A false deletion is `CF.DEL` of an item the model does not hold (never added, or all its
//! copies already deleted) that answers 1: it cleared a slot holding the same fingerprint in
//! one of its buckets, which may have been another item's copy. RedisBloom documents this as
//! the price of deleting what was not added (another item may then be reported absent). Such a
//! deletion can only clear a slot holding its own fingerprint, so only items with that
//! fingerprint can lose a copy: those are excluded from the two item claims from then on (and
//! a CF.DEL of one of them may answer 0). Every other item keeps both claims.

use proptest::prelude::*;
use proptest::test_runner::{Config, TestCaseError};
use redis_bf_core::cuckoo::dump::{self, HeaderLimits, Scan};
use redis_bf_core::cuckoo::{rdb, Cuckoo, Insert, Lookup};
use redis_bf_core::rdb::Values;
use std::collections::{BTreeMap, BTreeSet};

#[derive(Debug, Clone)]
enum Op {
    Add(u8),
    AddNx(u8),
    /// Deletes the model's n-th distinct item (mod its size); nothing when it is empty.
    DelAdded(u16),
    /// Deletes an item never added (its own namespace).
    DelNever(u8),
    Compact(bool),
    WalkReload,
    RdbRoundTrip,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..48).prop_map(Op::Add),
        2 => (0u8..48).prop_map(Op::AddNx),
        3 => any::<u16>().prop_map(Op::DelAdded),
        2 => (0u8..64).prop_map(Op::DelNever),
        1 => any::<bool>().prop_map(Op::Compact),
        1 => Just(Op::WalkReload),
        1 => Just(Op::RdbRoundTrip),
    ]
}

fn item(i: u8) -> Vec<u8> {
    format!("item:{i}").into_bytes()
}

fn never(i: u8) -> Vec<u8> {
    format!("never-added:{i}").into_bytes()
}

/// Budget of a sub-filter growth (so `CannotGrow` happens too).
const GROWTH_BUDGET: u64 = 2048;

fn walk_reload(cf: &Cuckoo) -> Option<Cuckoo> {
    let Scan::Header(h) = dump::scan(cf, 0) else {
        assert_eq!(cf.items, 0);
        return None;
    };
    let limits = HeaderLimits {
        max_expansion: 32768,
    };
    let mut copy = dump::decode_header(&dump::parse_header(&h)?, limits, u64::MAX)?;
    let mut pos = 1;
    while let Scan::Chunk(next, data) = dump::scan(cf, pos) {
        dump::apply_chunk(&mut copy, next, data).ok()?;
        pos = next;
    }
    Some(copy)
}

struct Model {
    held: BTreeMap<Vec<u8>, u64>,
    /// Fingerprints a false deletion cleared.
    tainted: BTreeSet<u8>,
    false_deletions: u64,
    expected_items: u64,
}

impl Model {
    fn size(&self) -> u64 {
        self.held.values().sum()
    }
    fn untainted(&self, x: &[u8]) -> bool {
        !self.tainted.contains(&Lookup::of(x).fp)
    }
}

fn run(
    bs: u16,
    capacity: u64,
    max_iterations: u16,
    expansion: u16,
    ops: &[Op],
) -> Result<(), TestCaseError> {
    let mut cf = Cuckoo::new(capacity, bs, max_iterations, expansion, u64::MAX).unwrap();
    let mut m = Model {
        held: BTreeMap::new(),
        tainted: BTreeSet::new(),
        false_deletions: 0,
        expected_items: 0,
    };
    for (step, op) in ops.iter().enumerate() {
        match op {
            Op::Add(i) | Op::AddNx(i) => {
                let x = item(*i);
                let unique = matches!(op, Op::AddNx(_));
                let present = cf.contains(&x);
                let before = cf.clone();
                match cf.insert(&x, unique, GROWTH_BUDGET) {
                    Insert::Inserted => {
                        prop_assert!(!(unique && present));
                        *m.held.entry(x).or_default() += 1;
                        m.expected_items += 1;
                    }
                    Insert::Exists => {
                        prop_assert!(unique && present);
                        prop_assert_eq!(&cf, &before);
                    }
                    r @ (Insert::Full | Insert::CannotGrow) => {
                        prop_assert_eq!(r == Insert::Full, expansion == 0);
                        prop_assert_eq!(&cf, &before, "a refused insertion changed the filter");
                    }
                }
            }
            Op::DelAdded(n) => {
                if m.held.is_empty() {
                    continue;
                }
                let x = m
                    .held
                    .keys()
                    .nth(usize::from(*n) % m.held.len())
                    .unwrap()
                    .clone();
                let (found, freed) = cf.delete(&x);
                prop_assert!(
                    found || !m.untainted(&x),
                    "step {step}: CF.DEL missed an added item"
                );
                prop_assert!(freed.iter().all(|f| f.is_empty()));
                if found {
                    m.expected_items -= 1;
                }
                let c = m.held.get_mut(&x).unwrap();
                *c -= 1;
                if *c == 0 {
                    m.held.remove(&x);
                }
            }
            Op::DelNever(i) => {
                let x = never(*i);
                let (found, freed) = cf.delete(&x);
                prop_assert!(freed.iter().all(|f| f.is_empty()));
                if found {
                    m.expected_items -= 1;
                    m.false_deletions += 1;
                    m.tainted.insert(Lookup::of(&x).fp);
                }
            }
            Op::Compact(keep_going) => {
                let n = cf.filters.len();
                let freed = cf.compact(*keep_going);
                prop_assert_eq!(cf.filters.len() + freed.len(), n);
                prop_assert!(freed.iter().all(|f| f.is_empty()));
                prop_assert_eq!(cf.deletes, 0);
            }
            Op::WalkReload => {
                if let Some(copy) = walk_reload(&cf) {
                    prop_assert_eq!(&copy, &cf, "SCANDUMP → LOADCHUNK");
                } else {
                    prop_assert_eq!(cf.items, 0);
                }
            }
            Op::RdbRoundTrip => {
                let mut v = Values::default();
                rdb::save(&cf, &mut v);
                let back = rdb::load(&mut v, rdb::ENCODING_VERSION).unwrap();
                prop_assert_eq!(&back, &cf, "RDB round trip");
                cf = back;
            }
        }
        prop_assert_eq!(cf.items, m.expected_items, "step {}: items counter", step);
        if m.false_deletions == 0 {
            prop_assert_eq!(cf.items, m.size(), "step {}: items = model size", step);
        }
        for (x, &k) in &m.held {
            if m.untainted(x) {
                prop_assert!(
                    cf.contains(x),
                    "step {}: false negative for {:?} after {:?}",
                    step,
                    x,
                    op
                );
                prop_assert!(
                    cf.count(x) >= k,
                    "step {}: count {} < {} for {:?}",
                    step,
                    cf.count(x),
                    k,
                    x
                );
            }
        }
    }
    Ok(())
}

fn params() -> impl Strategy<Value = (u16, u64, u16, u16)> {
    (
        prop::sample::select(vec![1u16, 2, 4]),
        0u64..56,
        1u16..=30,
        prop::sample::select(vec![0u16, 1, 2, 4]),
    )
        .prop_map(|(bs, extra, mi, ex)| (bs, 2 * u64::from(bs) + extra, mi, ex))
}

proptest! {
    #![proptest_config(Config { cases: 512, ..Config::default() })]

    #[test]
    fn cuckoo_matches_its_multiset_model(
        (bs, capacity, mi, ex) in params(),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        run(bs, capacity, mi, ex, &ops)?;
    }
}

/// The consequence the model allows, shown happening: deleting a never-added item whose
/// fingerprint and buckets match an added one's removes that item's only copy.
#[test]
fn a_false_deletion_can_remove_another_items_copy() {
    let mut cf = Cuckoo::new(2, 1, 20, 0, u64::MAX).unwrap();
    // One bucket of one slot... two buckets of one: find two items sharing fingerprint and
    // bucket pair, add one, delete the other.
    let target = Lookup::of(b"victim");
    let twin = (0u32..)
        .map(|i| format!("twin:{i}").into_bytes())
        .find(|t| {
            let l = Lookup::of(t);
            l.fp == target.fp && (l.h1 & 1) == (target.h1 & 1)
        })
        .unwrap();
    assert_eq!(cf.insert(b"victim", false, u64::MAX), Insert::Inserted);
    assert!(
        cf.delete(&twin).0,
        "the twin's delete finds the victim's fingerprint"
    );
    assert!(
        !cf.contains(b"victim"),
        "the victim is gone: a false negative"
    );
    assert_eq!(cf.items, 0);
}
