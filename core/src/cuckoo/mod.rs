//! Cuckoo filters (`CF.*`, data type `MBbloomCF`): a chain of sub-filters of buckets of
//! one-byte fingerprints, which — unlike a Bloom filter — can delete an item
//! (`docs/format.md` ("Cuckoo filters")).
//!
//! Everything here reproduces RedisBloom's cuckoo filter decision for decision, so that the
//! same commands leave the same bytes (and a replica or an AOF replay ends byte-identical
//! without rewriting commands):
//!
//! - **Hashing**: one 64-bit MurmurHash64A of the item with seed 0 ([`hash`]). The fingerprint
//!   is `hash % 255 + 1` (1–255; 0 marks an empty slot), the first bucket index `h1 = hash`,
//!   the alternate `h2 = h1 ^ (fp × 0x5bd1e995)` ([`alt_index`]). In a sub-filter of `n`
//!   buckets (a power of two) the buckets are `h1 % n` and `h2 % n`, so the alternate of the
//!   alternate is the first again, in every sub-filter.
//! - **Insertion** ([`Cuckoo::insert`]): the first empty slot of bucket `h1`, then of `h2`, in
//!   the newest sub-filter first, then older ones; failing that, evictions in the newest
//!   sub-filter ([`MAX_ITERATIONS` at most]: the victim is slot 0 of bucket `h1`, then the
//!   slot after the previous victim's, in each bucket visited); if none finds room they are
//!   undone in reverse and, unless the filter is non-scaling (expansion 0), a new sub-filter
//!   of `buckets × expansion^i` buckets is added and the insertion starts over.
//! - **Deletion** ([`Cuckoo::delete`]): one copy of the fingerprint, newest sub-filter first,
//!   bucket `h1` before `h2`, first matching slot; after it, when there are several
//!   sub-filters and deletions exceed 10 % of the items, a compaction that stops at the
//!   first sub-filter it cannot empty.
//! - **Compaction** ([`Cuckoo::compact`]): from the newest sub-filter down to the second,
//!   each fingerprint is moved to the first free slot its buckets have in an older
//!   sub-filter (oldest first); a newest sub-filter left empty is freed. What it reads follows
//!   the slots that hold fingerprints, not the tables' size: a table of
//!   [`OCCUPANCY_MIN_BYTES`] or more keeps an occupancy map (in memory only) of the 4 KiB
//!   blocks a fingerprint was written into, and a compaction reads only those.
//!
//! Sizes: a filter made for capacity `c` with bucket size `b` has `next_pow2(c / b)` buckets
//! in its first sub-filter (at least 1); each sub-filter is `buckets × b` bytes.

pub mod batch;
pub mod dump;
pub mod rdb;

use crate::hash::murmur64a;
use crate::layer::try_zeroed;

/// Default bucket size (fingerprints per bucket) of `CF.RESERVE` and auto-created filters.
pub const DEFAULT_BUCKET_SIZE: u16 = 2;
/// Default number of evictions an insertion tries before the filter grows.
pub const DEFAULT_MAX_ITERATIONS: u16 = 20;
/// Default expansion: each new sub-filter has as many buckets as the first.
pub const DEFAULT_EXPANSION: u16 = 1;
/// Default capacity of an auto-created filter (`CF.ADD`, `CF.INSERT` without `CAPACITY`).
pub const DEFAULT_CAPACITY: u64 = 1024;
/// Largest bucket size (a sub-filter's bucket size is one byte).
pub const MAX_BUCKET_SIZE: u16 = 255;
/// Largest expansion `CF.RESERVE` accepts.
pub const MAX_EXPANSION: u16 = 32768;
/// Largest bucket count of one sub-filter (56 bits, RedisBloom's limit).
pub const MAX_BUCKETS: u64 = (1 << 56) - 1;
/// The multiplier of the alternate-bucket formula.
pub const ALT_MULTIPLIER: u64 = 0x5bd1e995;
/// Bytes of the filter's own record in the memory figure (RedisBloom's struct).
pub const FILTER_RECORD_BYTES: u64 = 40;
/// Bytes per sub-filter record in the memory figure (RedisBloom's struct).
pub const SUB_FILTER_RECORD_BYTES: u64 = 16;
/// A filter never has more sub-filters than this (its count is 16 bits wide in RedisBloom).
pub const MAX_SUB_FILTERS: usize = u16::MAX as usize;

/// The 64-bit hash of an item: MurmurHash64A with seed 0.
pub fn hash(item: &[u8]) -> u64 {
    murmur64a(item, 0)
}

/// The alternate bucket index of a fingerprint in bucket `index` (before reduction modulo
/// the sub-filter's bucket count).
#[inline]
pub fn alt_index(fp: u8, index: u64) -> u64 {
    index ^ (u64::from(fp).wrapping_mul(ALT_MULTIPLIER))
}

/// What one item looks up: its fingerprint and both bucket indexes (not yet reduced).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lookup {
    /// Fingerprint, 1–255.
    pub fp: u8,
    /// First bucket index.
    pub h1: u64,
    /// Alternate bucket index.
    pub h2: u64,
}

impl Lookup {
    /// The lookup of an item.
    pub fn of(item: &[u8]) -> Lookup {
        Lookup::from_hash(hash(item))
    }

    /// The lookup of a 64-bit [`hash`].
    pub fn from_hash(hash: u64) -> Lookup {
        let fp = (hash % 255 + 1) as u8;
        Lookup {
            fp,
            h1: hash,
            h2: alt_index(fp, hash),
        }
    }
}

/// One sub-filter: a table of buckets of the filter's bucket size, one byte per slot, and for a
/// big table its occupancy map ([`OCCUPANCY_MIN_BYTES`]).
///
/// The table's bytes are RedisBloom's (`data`); the map is the module's own, kept in memory
/// only (never in RDB or SCANDUMP), so that a compaction reads the blocks that may hold
/// fingerprints rather than the whole table. The bucket count is the table's length over the
/// filter's bucket size ([`SubFilter::buckets`]), which the filter knows without a division
/// for its first sub-filter ([`Cuckoo::shape_of`]).
#[derive(Debug, Clone)]
pub struct SubFilter {
    /// The slots, bucket after bucket: `buckets × bucket_size` bytes, 0 = empty. Written only
    /// through methods that keep the occupancy map true ([`SubFilter::data_mut`] for any
    /// other write).
    data: Box<[u8]>,
    /// Which blocks may hold a fingerprint (None: a small table, or the map could not be
    /// allocated; compaction then reads the whole table).
    occupancy: Option<Box<Occupancy>>,
}

/// Sub-filters compare by their tables only (two equal tables may have maps that differ in
/// blocks emptied since they were last compacted).
impl PartialEq for SubFilter {
    fn eq(&self, other: &SubFilter) -> bool {
        self.data == other.data
    }
}

impl Eq for SubFilter {}

/// Bytes of a table per bit of an occupancy map.
pub const OCCUPANCY_BLOCK_BYTES: usize = 4096;

/// Tables of at least this many bytes have an occupancy map (smaller ones are read whole by a
/// compaction: at most 64 KiB).
pub const OCCUPANCY_MIN_BYTES: usize = 64 << 10;

/// The occupancy map of a big table, in two levels: a bit per 4 KiB block of the table, set
/// whenever a fingerprint is written into the block (cleared only by a compaction that found
/// the block empty, so a clear bit means an empty block), and a bit per 64-bit word of those,
/// set when the word is not zero. 1/32 768 of the table plus 1/64 of that, so a compaction of
/// a sparse 4 GiB table reads 2 KiB of map and the blocks marked.
#[derive(Debug, Clone)]
struct Occupancy {
    /// A bit per block (bit `b % 64` of word `b / 64`).
    blocks: Box<[u64]>,
    /// A bit per word of `blocks` that is not zero.
    words: Box<[u64]>,
}

impl Occupancy {
    /// A map of a table of `len` bytes, every block marked (`all`) or none; None when it is
    /// small ([`OCCUPANCY_MIN_BYTES`]) or the map cannot be allocated.
    fn new(len: usize, all: bool) -> Option<Box<Occupancy>> {
        if len < OCCUPANCY_MIN_BYTES {
            return None;
        }
        let blocks = len.div_ceil(OCCUPANCY_BLOCK_BYTES);
        let zeroed = |n: usize| bytemuck::allocation::try_zeroed_slice_box::<u64>(n).ok();
        let mut map = Occupancy {
            blocks: zeroed(blocks.div_ceil(64))?,
            words: zeroed(blocks.div_ceil(64 * 64))?,
        };
        if all {
            map.mark_range(0, len);
        }
        Some(Box::new(map))
    }

    /// Bytes it takes.
    fn bytes(&self) -> u64 {
        8 * (self.blocks.len() + self.words.len()) as u64
    }

    /// Marks the block of table byte `at`.
    #[inline(always)]
    fn mark(&mut self, at: usize) {
        let b = at / OCCUPANCY_BLOCK_BYTES;
        self.blocks[b / 64] |= 1 << (b % 64);
        self.words[b / 4096] |= 1 << ((b / 64) % 64);
    }

    /// Marks every block of table bytes `start .. start + len` (`len` ≥ 1).
    fn mark_range(&mut self, start: usize, len: usize) {
        let last = start + len - 1;
        let mut at = start - start % OCCUPANCY_BLOCK_BYTES;
        while at <= last {
            self.mark(at);
            at += OCCUPANCY_BLOCK_BYTES;
        }
    }
}

/// Bucket `index` (unreduced) reduced to a sub-filter of `buckets` buckets: `index % buckets`
/// (a mask for the power of two every filter made by a command has; a header loaded by
/// `CF.LOADCHUNK` may give other counts, which RedisBloom reduces by division, and so do we).
#[inline]
pub fn reduce(index: u64, buckets: u64) -> u64 {
    if buckets.is_power_of_two() {
        index & (buckets - 1)
    } else {
        index % buckets
    }
}

impl SubFilter {
    /// A zeroed sub-filter of `buckets` buckets (allocated lazily zeroed: no time spent
    /// writing it).
    ///
    /// Errors: [`CuckooError::OutOfMemory`] when the table does not fit in memory.
    pub fn new(buckets: u64, bucket_size: u16) -> Result<SubFilter, CuckooError> {
        let bytes = buckets
            .checked_mul(u64::from(bucket_size))
            .ok_or(CuckooError::OutOfMemory)?;
        let data = try_zeroed(bytes).map_err(|_| CuckooError::OutOfMemory)?;
        let occupancy = Occupancy::new(data.len(), false);
        Ok(SubFilter { data, occupancy })
    }

    /// A sub-filter of a table read from elsewhere (an RDB value): every block is taken as
    /// occupied until a compaction reads it.
    pub fn from_data(data: Box<[u8]>) -> SubFilter {
        let occupancy = Occupancy::new(data.len(), true);
        SubFilter { data, occupancy }
    }

    /// Its table (RedisBloom's bytes).
    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    /// Its table, to write any bytes into: every block is taken as occupied until a compaction
    /// reads it (costs 1/32 768 of the table; [`Cuckoo::insert`] and `CF.LOADCHUNK`'s
    /// [`dump::apply_chunk`] mark only what they write).
    pub fn data_mut(&mut self) -> &mut [u8] {
        if let Some(map) = self.occupancy.as_mut() {
            if !self.data.is_empty() {
                map.mark_range(0, self.data.len());
            }
        }
        &mut self.data
    }

    /// Writes `bytes` at table offset `start` (which the caller has checked to fit), marking
    /// only the blocks written.
    pub fn write(&mut self, start: usize, bytes: &[u8]) {
        // Only the pages that change are written: a chunk copied into a fresh zeroed table
        // leaves its all-zero pages unresident ([`crate::sparse::write_sparse`]).
        crate::sparse::write_sparse(&mut self.data[start..start + bytes.len()], bytes);
        if let (Some(map), false) = (self.occupancy.as_mut(), bytes.is_empty()) {
            map.mark_range(start, bytes.len());
        }
    }

    /// Its table, taken out (to free it).
    pub fn into_data(self) -> Box<[u8]> {
        self.data
    }

    /// Its table itself, for moving it elsewhere unchanged (active defrag moves the block and
    /// puts a box of the same length and bytes in its place); the occupancy map stays as it is,
    /// so nothing may be written through it, nor its length changed.
    pub fn table_to_move(&mut self) -> &mut Box<[u8]> {
        &mut self.data
    }

    /// A copy of this sub-filter whose table is `data`, a copy of its table made by the caller
    /// (`COPY` copies only the written pages): the occupancy map is copied, or None when it
    /// cannot be allocated.
    pub fn copy_onto(&self, data: Box<[u8]>) -> Option<SubFilter> {
        debug_assert_eq!(data.len(), self.data.len());
        let occupancy = match &self.occupancy {
            None => None,
            Some(map) => {
                let copy = |w: &[u64]| {
                    let mut b = bytemuck::allocation::try_zeroed_slice_box::<u64>(w.len()).ok()?;
                    b.copy_from_slice(w);
                    Some(b)
                };
                Some(Box::new(Occupancy {
                    blocks: copy(&map.blocks)?,
                    words: copy(&map.words)?,
                }))
            }
        };
        Some(SubFilter { data, occupancy })
    }

    /// Bytes of its occupancy map (0 when it has none): memory the module takes beyond
    /// RedisBloom's figure.
    pub fn occupancy_bytes(&self) -> u64 {
        self.occupancy.as_ref().map_or(0, |m| m.bytes())
    }

    /// Stores `fp` in slot `at` (an empty one), marking its block.
    #[inline(always)]
    fn put(&mut self, at: usize, fp: u8) {
        self.data[at] = fp;
        if let Some(map) = self.occupancy.as_mut() {
            map.mark(at);
        }
    }

    /// Bytes of its table.
    pub fn bytes(&self) -> u64 {
        self.data.len() as u64
    }

    /// Its bucket count, for the filter's `bucket_size` (1 or more).
    pub fn buckets(&self, bucket_size: u16) -> u64 {
        self.bytes() / u64::from(bucket_size.max(1))
    }

    /// Whether every slot is empty.
    pub fn is_empty(&self) -> bool {
        self.data.iter().all(|&b| b == 0)
    }

    #[inline]
    fn bucket_start(index: u64, b: Shape) -> usize {
        (reduce(index, b.buckets) as usize) * b.size
    }

    #[inline]
    fn bucket(&self, index: u64, b: Shape) -> &[u8] {
        let s = Self::bucket_start(index, b);
        &self.data[s..s + b.size]
    }

    /// Index in `data` of the first empty slot of bucket `h1`, else of `h2`.
    #[inline(always)]
    fn free_slot(&self, l: &Lookup, b: Shape) -> Option<usize> {
        for h in [l.h1, l.h2] {
            let s = Self::bucket_start(h, b);
            if let Some(i) = empty_slot(&self.data[s..s + b.size]) {
                return Some(s + i);
            }
        }
        None
    }

    fn has(&self, l: &Lookup, b: Shape) -> bool {
        self.bucket(l.h1, b).contains(&l.fp) || self.bucket(l.h2, b).contains(&l.fp)
    }

    fn count(&self, l: &Lookup, b: Shape) -> u64 {
        let c = |h| self.bucket(h, b).iter().filter(|&&x| x == l.fp).count() as u64;
        c(l.h1) + c(l.h2)
    }

    /// Clears the first slot holding the fingerprint, bucket `h1` before `h2`.
    fn remove(&mut self, l: &Lookup, b: Shape) -> bool {
        for h in [l.h1, l.h2] {
            let s = Self::bucket_start(h, b);
            if let Some(i) = self.data[s..s + b.size].iter().position(|&x| x == l.fp) {
                self.data[s + i] = 0;
                return true;
            }
        }
        false
    }
}

/// A sub-filter's shape: its bucket count and the filter's bucket size.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Buckets of the sub-filter (at least 1).
    pub buckets: u64,
    /// Bytes (slots) per bucket.
    pub size: usize,
}

/// What an insertion did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Insert {
    /// Stored (reply 1).
    Inserted,
    /// `ADDNX` / `INSERTNX` only: the item may already be there; nothing changed (reply 0).
    Exists,
    /// No room and the filter cannot grow (non-scaling): `Filter is full` / element `-1`.
    /// Nothing changed (the evictions tried were undone).
    Full,
    /// A new sub-filter was needed but is over the memory budget, cannot be allocated, or
    /// would exceed the limits (56-bit bucket count, 65 535 sub-filters)
    /// (`Memory allocation failure`). Nothing changed.
    CannotGrow,
}

/// Why a filter could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CuckooError {
    /// Its table is over the memory budget or cannot be allocated.
    OutOfMemory,
}

/// A cuckoo filter: its parameters, counters and sub-filters (oldest first).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cuckoo {
    /// Log2 of the buckets of the first sub-filter (a power of two, at most 2^56:
    /// [`Cuckoo::buckets`]). A byte rather than the count, so that the record is 40 bytes.
    pub buckets_log2: u8,
    /// Items stored (insertions minus deletions).
    pub items: u64,
    /// Deletions since the last compaction.
    pub deletes: u64,
    /// Fingerprints per bucket, 1–255.
    pub bucket_size: u16,
    /// Evictions an insertion tries in the newest sub-filter before it grows.
    pub max_iterations: u16,
    /// Growth factor of the bucket count per sub-filter (a power of two, or 0: non-scaling).
    pub expansion: u16,
    /// The sub-filters, oldest first; never empty. A boxed slice (16 bytes, no spare
    /// capacity): with it the filter is 40 bytes, as RedisBloom's record, so that both take
    /// the same allocation on every allocator (40 bytes where the size classes have 8-byte
    /// steps, as Redis 8's jemalloc; 48 with 16-byte steps, as Debian's Redis 7.0).
    pub filters: Box<[SubFilter]>,
}

/// The smallest power of two ≥ `n`, with RedisBloom's edge cases: 0 for 0 and for values
/// above 2^63.
pub fn next_pow2(n: u64) -> u64 {
    let mut v = n.wrapping_sub(1);
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    v |= v >> 32;
    v.wrapping_add(1)
}

/// Buckets of the first sub-filter of a filter made for `capacity` with `bucket_size`:
/// `next_pow2(capacity / bucket_size)`, at least 1.
pub fn buckets_for(capacity: u64, bucket_size: u16) -> u64 {
    next_pow2(capacity / u64::from(bucket_size.max(1))).max(1)
}

/// [`Cuckoo::buckets_log2`] of a first bucket count, which every caller has checked to be a
/// power of two (creation, RDB load, `CF.LOADCHUNK` header).
pub(crate) fn log2_of_buckets(buckets: u64) -> u8 {
    debug_assert!(buckets.is_power_of_two(), "{buckets}");
    buckets.trailing_zeros() as u8
}

impl Cuckoo {
    /// A new filter (`CF.RESERVE`, auto-creation): one empty sub-filter of
    /// [`buckets_for`]`(capacity, bucket_size)` buckets; `expansion` is rounded up to a
    /// power of two (0 stays 0). The caller validates the arguments (bucket size 1–255,
    /// `capacity ≥ 2 × bucket size`, max iterations ≥ 1).
    ///
    /// Errors: [`CuckooError::OutOfMemory`] when the table (bytes) exceeds `max_bytes` or
    /// cannot be allocated.
    pub fn new(
        capacity: u64,
        bucket_size: u16,
        max_iterations: u16,
        expansion: u16,
        max_bytes: u64,
    ) -> Result<Cuckoo, CuckooError> {
        let buckets = buckets_for(capacity, bucket_size);
        if buckets > MAX_BUCKETS {
            return Err(CuckooError::OutOfMemory);
        }
        let bytes = buckets
            .checked_mul(u64::from(bucket_size))
            .ok_or(CuckooError::OutOfMemory)?;
        if bytes > max_bytes {
            return Err(CuckooError::OutOfMemory);
        }
        let expansion = next_pow2(u64::from(expansion)) as u16;
        Ok(Cuckoo {
            buckets_log2: log2_of_buckets(buckets),
            items: 0,
            deletes: 0,
            bucket_size,
            max_iterations,
            expansion,
            filters: Box::new([SubFilter::new(buckets, bucket_size)?]),
        })
    }

    /// Buckets of the first sub-filter: `2^buckets_log2` (the header's bucket count).
    #[inline]
    pub fn buckets(&self) -> u64 {
        1 << self.buckets_log2
    }

    /// Buckets sub-filter `i` has: `buckets × expansion^i` (None past 56 bits, or for `i ≥ 1`
    /// with expansion 0).
    pub fn buckets_of(&self, i: usize) -> Option<u64> {
        let growth = u64::from(self.expansion).checked_pow(u32::try_from(i).ok()?)?;
        let n = self.buckets().checked_mul(growth)?;
        (n > 0 && n <= MAX_BUCKETS).then_some(n)
    }

    /// The shape of sub-filter `i` (`f` = `filters[i]`): its bucket count, read from the
    /// header for the first (no division) and from the table's length for the others.
    #[inline]
    pub fn shape_of(&self, i: usize, f: &SubFilter) -> Shape {
        let buckets = if i == 0 {
            self.buckets()
        } else {
            f.buckets(self.bucket_size)
        };
        Shape {
            buckets: buckets.max(1),
            size: usize::from(self.bucket_size),
        }
    }

    /// Each sub-filter with its shape, oldest first.
    #[inline]
    fn shaped(&self) -> impl Iterator<Item = (&SubFilter, Shape)> + '_ {
        self.filters
            .iter()
            .enumerate()
            .map(|(i, f)| (f, self.shape_of(i, f)))
    }

    /// Bucket counts of the sub-filters, oldest first.
    pub fn bucket_counts(&self) -> impl Iterator<Item = u64> + '_ {
        self.shaped().map(|(_, shape)| shape.buckets)
    }

    /// Bytes of the next sub-filter growth would add (None when it cannot be added).
    pub fn next_sub_filter_bytes(&self) -> Option<u64> {
        if self.filters.len() >= MAX_SUB_FILTERS || self.expansion == 0 {
            return None;
        }
        self.buckets_of(self.filters.len())?
            .checked_mul(u64::from(self.bucket_size))
    }

    /// Bytes of all the tables.
    pub fn table_bytes(&self) -> u64 {
        self.filters.iter().map(SubFilter::bytes).sum()
    }

    /// The memory figure RedisBloom reports (`CF.INFO` Size, `MEMORY USAGE`): the tables
    /// plus 40 bytes for the filter and 16 per sub-filter.
    pub fn mem_usage(&self) -> u64 {
        FILTER_RECORD_BYTES
            + SUB_FILTER_RECORD_BYTES * self.filters.len() as u64
            + self.table_bytes()
    }

    /// The total bucket count over all sub-filters.
    pub fn total_buckets(&self) -> u64 {
        self.bucket_counts().sum()
    }

    /// Whether the item may be in the filter (`CF.EXISTS`).
    pub fn contains(&self, item: &[u8]) -> bool {
        self.contains_lookup(&Lookup::of(item))
    }

    /// [`Cuckoo::contains`] of a prepared lookup.
    pub fn contains_lookup(&self, l: &Lookup) -> bool {
        self.shaped().any(|(f, shape)| f.has(l, shape))
    }

    /// How many slots hold the item's fingerprint in its two buckets of every sub-filter
    /// (`CF.COUNT`: an upper bound of the copies added and not deleted).
    pub fn count(&self, item: &[u8]) -> u64 {
        self.count_lookup(&Lookup::of(item))
    }

    /// [`Cuckoo::count`] of a prepared lookup.
    pub fn count_lookup(&self, l: &Lookup) -> u64 {
        self.shaped().map(|(f, shape)| f.count(l, shape)).sum()
    }

    /// Adds one copy of the item (`CF.ADD`; `unique`: `CF.ADDNX`, which adds nothing when
    /// the item may already be there). `max_new_bytes` bounds a sub-filter growth would add.
    pub fn insert(&mut self, item: &[u8], unique: bool, max_new_bytes: u64) -> Insert {
        self.insert_lookup(&Lookup::of(item), unique, max_new_bytes)
    }

    /// [`Cuckoo::insert`] of a prepared lookup.
    pub fn insert_lookup(&mut self, l: &Lookup, unique: bool, max_new_bytes: u64) -> Insert {
        if unique && self.contains_lookup(l) {
            return Insert::Exists;
        }
        loop {
            for i in (0..self.filters.len()).rev() {
                let b = self.shape_of(i, &self.filters[i]);
                let f = &mut self.filters[i];
                if let Some(at) = f.free_slot(l, b) {
                    f.put(at, l.fp);
                    self.items += 1;
                    return Insert::Inserted;
                }
            }
            if self.evict_into_newest(l) {
                self.items += 1;
                return Insert::Inserted;
            }
            if self.expansion == 0 {
                return Insert::Full;
            }
            match self.next_sub_filter_bytes() {
                Some(b) if b <= max_new_bytes => {}
                _ => return Insert::CannotGrow,
            }
            let buckets = self.buckets_of(self.filters.len()).unwrap_or(0);
            let mut filters = std::mem::take(&mut self.filters).into_vec();
            let grown = filters.try_reserve_exact(1).is_ok()
                && match SubFilter::new(buckets, self.bucket_size) {
                    Ok(f) => {
                        filters.push(f);
                        true
                    }
                    Err(_) => false,
                };
            // With the exact reservation the vector has no spare capacity: no copy here.
            self.filters = filters.into_boxed_slice();
            if !grown {
                return Insert::CannotGrow;
            }
        }
    }

    /// The eviction walk in the newest sub-filter; on failure every swap is undone, so the
    /// sub-filter is as before.
    fn evict_into_newest(&mut self, l: &Lookup) -> bool {
        let bs = u64::from(self.bucket_size);
        let iterations = self.max_iterations;
        let Some(top) = self.filters.len().checked_sub(1) else {
            return false;
        };
        let n = self.shape_of(top, &self.filters[top]).buckets;
        let f = &mut self.filters[top];
        // Only a crafted header or value (an expansion that is not a power of two) gives a
        // sub-filter whose bucket count is not one; there a fingerprint's alternate bucket
        // cannot be computed from the bucket it sits in, so an eviction could move it where
        // lookups never look. No evictions there: the insertion grows or finds the filter full
        // instead (RedisBloom evicts and may lose items).
        if !n.is_power_of_two() {
            return false;
        }
        let mut fp = l.fp;
        let mut victim: u64 = 0;
        let mut index = reduce(l.h1, n);
        for _ in 0..iterations {
            let at = (index * bs + victim) as usize;
            std::mem::swap(&mut f.data[at], &mut fp);
            index = reduce(alt_index(fp, index), n);
            let s = (index * bs) as usize;
            if let Some(i) = empty_slot(&f.data[s..s + bs as usize]) {
                // The swaps above wrote only into occupied slots, whose blocks are marked.
                f.put(s + i, fp);
                return true;
            }
            victim += 1;
            if victim == bs {
                victim = 0;
            }
        }
        for _ in 0..iterations {
            victim = if victim == 0 { bs - 1 } else { victim - 1 };
            index = reduce(alt_index(fp, index), n);
            let at = (index * bs + victim) as usize;
            std::mem::swap(&mut f.data[at], &mut fp);
        }
        false
    }

    /// Deletes one copy of the item (`CF.DEL`): true when a matching fingerprint was found
    /// and cleared. May compact (see the module doc); the sub-filters compaction freed are
    /// returned (for the caller to free off the main thread when big).
    pub fn delete(&mut self, item: &[u8]) -> (bool, Vec<SubFilter>) {
        self.delete_lookup(&Lookup::of(item))
    }

    /// [`Cuckoo::delete`] of a prepared lookup.
    pub fn delete_lookup(&mut self, l: &Lookup) -> (bool, Vec<SubFilter>) {
        for i in (0..self.filters.len()).rev() {
            let b = self.shape_of(i, &self.filters[i]);
            if self.filters[i].remove(l, b) {
                self.items = self.items.wrapping_sub(1);
                self.deletes = self.deletes.wrapping_add(1);
                let freed =
                    if self.filters.len() > 1 && self.deletes as f64 > self.items as f64 * 0.10 {
                        self.compact(false)
                    } else {
                        Vec::new()
                    };
                return (true, freed);
            }
        }
        (false, Vec::new())
    }

    /// Compacts (`CF.COMPACT` with `keep_going`, the automatic one after deletions without):
    /// moves fingerprints from newer sub-filters into older ones and frees a newest
    /// sub-filter left empty; without `keep_going` it stops at the first sub-filter it
    /// cannot empty. Resets the deletion counter. Returns the freed sub-filters.
    pub fn compact(&mut self, keep_going: bool) -> Vec<SubFilter> {
        let mut freed = Vec::new();
        let mut filters = std::mem::take(&mut self.filters).into_vec();
        let shapes: Vec<Shape> = filters
            .iter()
            .enumerate()
            .map(|(i, f)| self.shape_of(i, f))
            .collect();
        let mut skip = SkipFull::new(&filters);
        let bs = usize::from(self.bucket_size);
        let mut i = filters.len();
        while i > 1 {
            let ok = compact_one(&mut filters, &shapes, i - 1, bs, &mut skip);
            if ok && i == filters.len() {
                if let Some(f) = filters.pop() {
                    freed.push(f);
                }
            }
            if !ok && !keep_going {
                break;
            }
            i -= 1;
        }
        // Shrinks the allocation to the sub-filters left, as RedisBloom's realloc (once, not
        // once per freed sub-filter).
        self.filters = filters.into_boxed_slice();
        self.deletes = 0;
        freed
    }
}

thread_local! {
    static COMPACTION_BYTES_READ: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Bytes of tables (and of their occupancy maps) compactions on this thread have read so far,
/// cumulative: a deterministic measure of a compaction's work, for tests and benchmarks (the
/// difference across a call is what that call read).
pub fn compaction_bytes_read() -> u64 {
    COMPACTION_BYTES_READ.with(|c| c.get())
}

fn count_read(bytes: u64) {
    COMPACTION_BYTES_READ.with(|c| c.set(c.get().wrapping_add(bytes)));
}

/// Sub-filter counts above which compaction may keep track of the older sub-filters that still
/// have a free slot ([`OpenSubFilters`]), so that a fingerprint skips the full ones: a filter
/// of thousands of small sub-filters (possible through a `CF.LOADCHUNK` header) would
/// otherwise try every older one for every fingerprint. Below it, trying each is cheaper than
/// counting their free slots first.
const SKIP_FULL_FROM: usize = 32;

/// Tries of older sub-filters a compaction makes, per 64 bytes of their tables, before it
/// counts their free slots ([`SkipFull`]).
const PROBES_PER_64_BYTES_BEFORE_COUNTING: u64 = 1;

/// Whether and when a compaction skips full older sub-filters: with more than
/// [`SKIP_FULL_FROM`] sub-filters it starts tracking them ([`OpenSubFilters`], which reads
/// every older table to count its free slots) only once it has tried older sub-filters as
/// many times as their tables have 64-byte blocks, so that the count costs no more than the
/// tries it saves, and a compaction that moves a handful of fingerprints reads no more than
/// those fingerprints' buckets. Which sub-filter a fingerprint moves into is the same either
/// way (a full one has no free slot to offer).
struct SkipFull {
    /// The tracking, once started.
    open: Option<OpenSubFilters>,
    /// Tries so far.
    probes: u64,
    /// Tries after which the tracking starts (None: never).
    due: Option<u64>,
}

impl SkipFull {
    /// For a compaction of `filters` (all of the filter's sub-filters).
    fn new(filters: &[SubFilter]) -> SkipFull {
        // The newest sub-filter is never a target: its free slots are not counted.
        let targets = &filters[..filters.len().saturating_sub(1)];
        let due = (filters.len() > SKIP_FULL_FROM).then(|| {
            let bytes: u64 = targets.iter().map(SubFilter::bytes).sum();
            bytes / 64 * PROBES_PER_64_BYTES_BEFORE_COUNTING
        });
        SkipFull {
            open: None,
            probes: 0,
            due,
        }
    }

    /// Starts tracking `targets` (the sub-filters older than the one being compacted) when it
    /// is due.
    #[inline]
    fn build_when_due(&mut self, targets: &[SubFilter]) {
        if self.due.is_some_and(|d| self.probes >= d) {
            self.due = None;
            self.open = Some(OpenSubFilters::new(targets));
        }
    }

    /// The first older sub-filter to try.
    #[inline]
    fn first(&mut self) -> usize {
        self.next(0)
    }

    /// The next older sub-filter to try at or after `i`.
    #[inline]
    fn next(&mut self, i: usize) -> usize {
        match self.open.as_mut() {
            Some(o) => o.find(i),
            None => i,
        }
    }

    /// A slot of sub-filter `i` was filled.
    #[inline]
    fn took(&mut self, i: usize) {
        if let Some(o) = self.open.as_mut() {
            o.took(i);
        }
    }
}

/// The sub-filters with a free slot, in order, for a compaction: free slot counts, and for
/// each sub-filter the next one at or after it that is not full (a skip list with path
/// compression: during a compaction sub-filters only fill up, apart from the one being
/// emptied, which is never a target again). It covers the sub-filters older than the one being
/// compacted when it was made, which are all a later step of the compaction can target.
struct OpenSubFilters {
    free: Vec<u64>,
    next: Vec<usize>,
}

impl OpenSubFilters {
    /// Tracks `targets`, the sub-filters fingerprints may move into.
    fn new(targets: &[SubFilter]) -> OpenSubFilters {
        count_read(targets.iter().map(SubFilter::bytes).sum());
        let free: Vec<u64> = targets
            .iter()
            .map(|f| f.data.iter().filter(|&&b| b == 0).count() as u64)
            .collect();
        let next = (0..targets.len()).collect();
        let mut open = OpenSubFilters { free, next };
        for i in 0..targets.len() {
            if open.free[i] == 0 {
                open.next[i] = i + 1;
            }
        }
        open
    }

    /// The first sub-filter at or after `i` with a free slot (`len` when none).
    fn find(&mut self, mut i: usize) -> usize {
        let mut root = i;
        while root < self.next.len() && self.next[root] != root {
            root = self.next[root];
        }
        while i < self.next.len() && self.next[i] != i {
            let up = self.next[i];
            self.next[i] = root;
            i = up;
        }
        root
    }

    /// A slot of sub-filter `i` was filled.
    fn took(&mut self, i: usize) {
        self.free[i] -= 1;
        if self.free[i] == 0 {
            self.next[i] = i + 1;
        }
    }
}

/// Moves every fingerprint of sub-filter `at` it can into older ones, trying them oldest
/// first (only those with a free slot once `skip` tracks them); true when all moved.
///
/// The fingerprints are visited slot by slot in order, as a plain walk would; a table with an
/// occupancy map is read only in its marked blocks (and the blocks found empty, or emptied,
/// are unmarked), a table without one whole, skipping empty runs 64 bytes at a time.
fn compact_one(
    filters: &mut [SubFilter],
    shapes: &[Shape],
    at: usize,
    bs: usize,
    skip: &mut SkipFull,
) -> bool {
    let cur_shape = shapes[at];
    // A fingerprint can only move to a sub-filter whose buckets it can find from the bucket
    // it is in: both counts powers of two, the older one not larger (always so but for
    // crafted headers or values, see `evict_into_newest`).
    let movable = |b: &Shape| {
        cur_shape.buckets.is_power_of_two()
            && b.buckets.is_power_of_two()
            && b.buckets <= cur_shape.buckets
    };
    let (older, rest) = filters.split_at_mut(at);
    let SubFilter { data, occupancy } = &mut rest[0];
    // A fingerprint's bucket is its slot over the bucket size: a prepared divisor, since a
    // hardware division would take half the time of a dense compaction.
    let per_bucket = strength_reduce::StrengthReducedUsize::new(bs);
    // Moves what it can of table bytes `start .. end`; true when nothing is left there.
    let mut move_from = |data: &mut [u8], start: usize, end: usize| -> bool {
        count_read((end - start) as u64);
        let mut left = false;
        let mut from = start;
        while let Some(at_slot) = next_occupied(&data[..end], from) {
            from = at_slot + 1;
            skip.build_when_due(older);
            let fp = data[at_slot];
            let bucket = (at_slot / per_bucket) as u64;
            let l = Lookup {
                fp,
                h1: bucket,
                h2: alt_index(fp, bucket),
            };
            let mut moved = false;
            let mut j = skip.first();
            while j < at {
                if movable(&shapes[j]) {
                    skip.probes += 1;
                    if let Some(i) = older[j].free_slot(&l, shapes[j]) {
                        older[j].put(i, fp);
                        data[at_slot] = 0;
                        skip.took(j);
                        moved = true;
                        break;
                    }
                }
                j = skip.next(j + 1);
            }
            left |= !moved;
        }
        !left
    };
    let Some(map) = occupancy.as_mut() else {
        let len = data.len();
        return move_from(data, 0, len);
    };
    let mut all = true;
    count_read(8 * map.words.len() as u64);
    for wi in 0..map.words.len() {
        let mut top = map.words[wi];
        while top != 0 {
            let w = wi * 64 + top.trailing_zeros() as usize;
            top &= top - 1;
            count_read(8);
            let mut bits = map.blocks[w];
            while bits != 0 {
                let k = bits.trailing_zeros() as usize;
                bits &= bits - 1;
                let start = (w * 64 + k) * OCCUPANCY_BLOCK_BYTES;
                let end = (start + OCCUPANCY_BLOCK_BYTES).min(data.len());
                if move_from(data, start, end) {
                    map.blocks[w] &= !(1 << k);
                } else {
                    all = false;
                }
            }
            if map.blocks[w] == 0 {
                map.words[wi] &= !(1 << (w % 64));
            }
        }
    }
    all
}

/// The first empty slot (0) of a bucket: a plain loop for the usual few slots, `memchr` for
/// big buckets (up to 255 slots, where an eviction walk of 65 535 steps scans one each step).
#[inline]
fn empty_slot(bucket: &[u8]) -> Option<usize> {
    if bucket.len() <= 16 {
        bucket.iter().position(|&b| b == 0)
    } else {
        memchr::memchr(0, bucket)
    }
}

/// The first non-zero byte of `data` at or after `from`. Whole 64-byte blocks are tested at
/// once (an OR of their bytes, which the compiler vectorizes), so an empty table is read at
/// memory speed rather than a byte at a time.
fn next_occupied(data: &[u8], from: usize) -> Option<usize> {
    const BLOCK: usize = 64;
    let head_end = from.next_multiple_of(BLOCK).min(data.len());
    let head = data.get(from..head_end)?;
    if let Some(k) = head.iter().position(|&b| b != 0) {
        return Some(from + k);
    }
    for (n, block) in data[head_end..].chunks(BLOCK).enumerate() {
        if block.iter().fold(0u8, |a, &b| a | b) != 0 {
            if let Some(k) = block.iter().position(|&b| b != 0) {
                return Some(head_end + n * BLOCK + k);
            }
        }
    }
    None
}

/// Test help: inserts `{prefix}0` .. `{prefix}{n-1}` into `cf`, asserting each is new.
#[cfg(test)]
pub(crate) fn insert_new(cf: &mut Cuckoo, prefix: &str, n: u32) {
    for i in 0..n {
        assert_eq!(
            cf.insert(format!("{prefix}{i}").as_bytes(), false, u64::MAX),
            Insert::Inserted
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A filter made by a `CF.LOADCHUNK` header (empty tables, max iterations 20, no
    /// deletions).
    fn crafted(items: u64, buckets: u64, filters: u64, bucket_size: u16, expansion: u16) -> Cuckoo {
        decoded(&dump::Header {
            items,
            buckets,
            deletes: 0,
            filters,
            bucket_size,
            max_iterations: 20,
            expansion,
        })
    }

    /// A xorshift64 generator from `seed` (not 0).
    fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
        move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        }
    }

    /// The filter a `CF.LOADCHUNK` header makes (any expansion up to 32768, no memory limit).
    fn decoded(h: &dump::Header) -> Cuckoo {
        let limits = dump::HeaderLimits {
            max_expansion: 32768,
        };
        dump::decode_header(h, limits, u64::MAX).unwrap()
    }

    /// Per-filter memory: the filter is 40 bytes, as RedisBloom's filter record, so the
    /// allocator rounds both alike; a sub-filter is 24, RedisBloom's 16 and the pointer to its
    /// occupancy map.
    #[test]
    fn struct_sizes() {
        assert_eq!(std::mem::size_of::<Cuckoo>(), 40);
        assert_eq!(std::mem::size_of::<SubFilter>(), 24);
    }

    #[test]
    fn next_pow2_edges() {
        for (n, want) in [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 4),
            (500, 512),
            (1 << 40, 1 << 40),
            (u64::MAX, 0),
        ] {
            assert_eq!(next_pow2(n), want, "{n}");
        }
        assert_eq!(buckets_for(1024, 2), 512);
        assert_eq!(buckets_for(1000, 255), 4);
        assert_eq!(buckets_for(4, 2), 2);
        assert_eq!(buckets_for(1, 2), 1);
    }

    #[test]
    fn add_check_delete_count() {
        let mut cf = Cuckoo::new(1000, 2, 20, 1, u64::MAX).unwrap();
        assert_eq!(cf.buckets(), 512);
        insert_new(&mut cf, "i", 300);
        for i in 0..300u32 {
            assert!(cf.contains(format!("i{i}").as_bytes()));
        }
        assert_eq!(cf.items, 300);
        assert_eq!(cf.insert(b"i0", true, u64::MAX), Insert::Exists);
        cf.insert(b"dup", false, u64::MAX);
        cf.insert(b"dup", false, u64::MAX);
        assert!(cf.count(b"dup") >= 2);
        assert!(cf.delete(b"dup").0);
        assert!(cf.delete(b"dup").0);
        assert_eq!(cf.items, 300);
        assert_eq!(cf.deletes, 2);
    }

    #[test]
    fn failed_evictions_leave_the_table_unchanged() {
        // 2 buckets of 2: four items fill it; a fifth fails and must change nothing.
        let mut cf = Cuckoo::new(4, 2, 1, 0, u64::MAX).unwrap();
        let mut stored = 0;
        for i in 0..20u32 {
            let before = cf.clone();
            match cf.insert(format!("f{i}").as_bytes(), false, u64::MAX) {
                Insert::Inserted => stored += 1,
                Insert::Full => assert_eq!(cf, before),
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(stored, 4);
        assert_eq!(cf.items, 4);
    }

    #[test]
    fn growth_and_compaction() {
        let mut cf = Cuckoo::new(64, 2, 20, 1, u64::MAX).unwrap();
        insert_new(&mut cf, "c", 300);
        let grown = cf.filters.len();
        assert!(grown > 4, "{grown}");
        for i in 0..200u32 {
            assert!(cf.delete(format!("c{i}").as_bytes()).0);
        }
        assert!(cf.filters.len() < grown);
        for i in 200..300u32 {
            assert!(cf.contains(format!("c{i}").as_bytes()), "c{i} lost");
        }
        assert_eq!(cf.items, 100);
    }

    /// Why a filter with an expansion that is not a power of two (only a crafted
    /// `CF.LOADCHUNK` header makes one) can lose an item on deletion, as in RedisBloom: in a
    /// sub-filter of 12 buckets two items with one fingerprint can share one bucket and not
    /// the other, so `CF.DEL` of one may clear the other's copy; with a power of two the bucket
    /// pairs of one fingerprint are equal or disjoint, and a deletion clears a copy the deleted
    /// item could own in every sub-filter.
    #[test]
    fn bucket_pairs_overlap_partly_only_without_a_power_of_two() {
        let lookups: Vec<Lookup> = (0..20_000u32)
            .map(|i| Lookup::of(&i.to_le_bytes()))
            .collect();
        let partly = |n: u64| {
            let pair = |l: &Lookup| {
                let (a, b) = (l.h1 % n, l.h2 % n);
                (a.min(b), a.max(b))
            };
            let mut found = 0;
            for (i, x) in lookups.iter().enumerate() {
                for y in lookups[i + 1..].iter().filter(|y| y.fp == x.fp) {
                    let (p, q) = (pair(x), pair(y));
                    let shared = [p.0, p.1].iter().any(|b| *b == q.0 || *b == q.1);
                    found += usize::from(p != q && shared);
                }
            }
            found
        };
        assert!(partly(12) > 100, "{}", partly(12));
        assert_eq!((partly(8), partly(16), partly(1024)), (0, 0, 0));
    }

    #[test]
    fn an_expansion_that_is_not_a_power_of_two_grows_without_evictions_and_reloads() {
        // Only a crafted header gives one: 2 buckets of 1, expansion 3 -> sub-filters of 2,
        // 6, 18 ... buckets, where evictions are not tried (see evict_into_newest).
        let mut cf = crafted(0, 2, 1, 1, 3);
        let items: Vec<String> = (0..60).map(|i| format!("x{i}")).collect();
        for it in &items {
            assert_eq!(cf.insert(it.as_bytes(), false, u64::MAX), Insert::Inserted);
        }
        assert!(cf.filters.len() > 2);
        for it in &items {
            assert!(cf.contains(it.as_bytes()), "{it} lost");
        }
        for it in &items[..30] {
            assert!(cf.delete(it.as_bytes()).0);
        }
        cf.compact(true);
        for it in &items[30..] {
            assert!(cf.contains(it.as_bytes()), "{it} lost after compaction");
        }
        let mut w = crate::rdb::Values::saved(|v| rdb::save(&cf, v));
        assert_eq!(rdb::load(&mut w, rdb::ENCODING_VERSION).unwrap(), cf);
    }

    /// Compaction (which skips empty runs a block at a time, and full sub-filters when there
    /// are many) leaves exactly what a plain walk leaves — every slot of each sub-filter in
    /// order, every older sub-filter tried oldest first — and frees the same sub-filters, on
    /// sparse, dense and crafted tables of 2 to 80 sub-filters.
    /// One step of [`plain_compact`]: sub-filter `at`, every slot in order, every older
    /// sub-filter tried oldest first.
    fn walk_every_slot(cf: &mut Cuckoo, at: usize) -> bool {
        let bs = usize::from(cf.bucket_size);
        let shapes: Vec<Shape> = (0..=at).map(|i| cf.shape_of(i, &cf.filters[i])).collect();
        let (older, rest) = cf.filters.split_at_mut(at);
        let mut all = true;
        for at_slot in 0..rest[0].data.len() {
            let fp = rest[0].data[at_slot];
            if fp == 0 {
                continue;
            }
            let bucket = (at_slot / bs) as u64;
            let l = Lookup {
                fp,
                h1: bucket,
                h2: alt_index(fp, bucket),
            };
            let spot = older
                .iter()
                .zip(&shapes)
                .enumerate()
                .find_map(|(i, (f, b))| f.free_slot(&l, *b).map(|s| (i, s)));
            match spot {
                Some((i, s)) => {
                    older[i].data[s] = fp;
                    rest[0].data[at_slot] = 0;
                }
                None => all = false,
            }
        }
        all
    }
    /// Compaction as a plain slot-by-slot walk (no occupancy maps, no skipping): the reference.
    fn plain_compact(cf: &mut Cuckoo, keep_going: bool) -> usize {
        let mut freed = 0;
        let mut i = cf.filters.len();
        while i > 1 {
            let ok = walk_every_slot(cf, i - 1);
            if ok && i == cf.filters.len() {
                let mut v = std::mem::take(&mut cf.filters).into_vec();
                v.pop();
                cf.filters = v.into_boxed_slice();
                freed += 1;
            }
            if !ok && !keep_going {
                break;
            }
            i -= 1;
        }
        cf.deletes = 0;
        freed
    }
    /// Compacts `cf` and checks that it freed and left what [`plain_compact`] does.
    fn compact_as_the_walk(cf: &mut Cuckoo, keep_going: bool, case: &str) {
        let mut reference = cf.clone();
        let freed = cf.compact(keep_going);
        assert_eq!(
            freed.len(),
            plain_compact(&mut reference, keep_going),
            "{case}"
        );
        assert!(*cf == reference, "{case}: the tables differ");
    }

    /// A filter rebuilt from its SCANDUMP walk by `CF.LOADCHUNK`: the header, then each chunk.
    fn through_loadchunk(cf: &Cuckoo) -> Cuckoo {
        let mut copy = decoded(&dump::Header {
            items: cf.items,
            buckets: cf.buckets(),
            deletes: cf.deletes,
            filters: cf.filters.len() as u64,
            bucket_size: cf.bucket_size,
            max_iterations: cf.max_iterations,
            expansion: cf.expansion,
        });
        let mut pos = 1;
        while let dump::Scan::Chunk(next, bytes) = dump::scan(cf, pos) {
            assert!(dump::apply_chunk(&mut copy, next, bytes).is_ok());
            pos = next;
        }
        assert_eq!(&copy, cf);
        copy
    }

    /// Compaction through occupancy maps (tables of 64 KiB and more) leaves exactly what the
    /// plain walk leaves, and frees the same sub-filters, on filters written every way a table
    /// is written — insertions with growth, `CF.LOADCHUNK` chunks at random places, a raw
    /// write ([`SubFilter::data_mut`]), an RDB load, a SCANDUMP → LOADCHUNK copy, a copy as
    /// `COPY` makes ([`SubFilter::copy_onto`]) — then
    /// compacted again and again with insertions, deletions (which may compact by themselves)
    /// and chunks in between, so that maps left by one compaction serve the next.
    #[test]
    fn compaction_through_occupancy_maps_moves_what_a_slot_by_slot_walk_moves() {
        let mut next = xorshift(0x2545_f491_4f6c_dd1du64);
        let mut mapped = 0;
        for round in 0..40 {
            let bs = [1u16, 2, 4, 3][round % 4];
            let expansion = [1u16, 2][round % 2];
            // The first sub-filter 16–128 KiB (with a map from 64 KiB on).
            let buckets = (1u64 << (14 + round % 4)) / u64::from(bs).next_power_of_two();
            let filters = 2 + (round / 4) % 3;
            let mut cf = crafted(0, buckets, filters as u64, bs, expansion);
            let chunk = |cf: &mut Cuckoo, next: &mut dyn FnMut() -> u64| {
                let total = cf.table_bytes();
                let len = 1 + next() % 40;
                let at = next() % (total - len);
                let bytes: Vec<u8> = (0..len)
                    .map(|_| {
                        if next() % 3 == 0 {
                            0
                        } else {
                            (next() % 255 + 1) as u8
                        }
                    })
                    .collect();
                // A chunk that would straddle two sub-filters is refused, as in RedisBloom.
                let _ = dump::apply_chunk(cf, (at + len + 1) as i64, &bytes);
            };
            // Fill: a few clustered or spread fingerprints, else a dense part.
            for _ in 0..[30, 300, 3000][round % 3] {
                chunk(&mut cf, &mut next);
            }
            if round % 5 == 1 {
                let f = cf.filters.len() - 1;
                let data = cf.filters[f].data_mut();
                let n = data.len();
                for _ in 0..100 {
                    data[next() as usize % n] = (next() % 255 + 1) as u8;
                }
            }
            cf.items = 1 << 40; // so deletions do not compact every time
            cf = match round % 4 {
                0 => {
                    let mut w = crate::rdb::Values::saved(|v| rdb::save(&cf, v));
                    rdb::load(&mut w, rdb::ENCODING_VERSION).unwrap()
                }
                1 => through_loadchunk(&cf),
                _ => cf,
            };
            let mut added: Vec<u64> = Vec::new();
            for step in 0..4 {
                if round % 4 == 2 {
                    // A copy as COPY makes, of maps the last compaction left.
                    let filters: Vec<SubFilter> = cf
                        .filters
                        .iter()
                        .map(|f| f.copy_onto(f.data().into()).unwrap())
                        .collect();
                    cf.filters = filters.into_boxed_slice();
                }
                for _ in 0..next() % 200 {
                    let item = next();
                    if cf.insert(&item.to_le_bytes(), false, 64 << 20) == Insert::Inserted {
                        added.push(item);
                    }
                }
                for _ in 0..next() % 20 {
                    chunk(&mut cf, &mut next);
                }
                if step == 2 {
                    // Deletions that compact by themselves, against the walk too.
                    cf.items = added.len() as u64;
                    while let Some(item) = added.pop().filter(|_| next() % 4 != 0) {
                        let mut reference = cf.clone();
                        let (found, freed) = cf.delete(&item.to_le_bytes());
                        let l = Lookup::of(&item.to_le_bytes());
                        let mut plain_freed = 0;
                        for i in (0..reference.filters.len()).rev() {
                            let b = reference.shape_of(i, &reference.filters[i]);
                            if reference.filters[i].remove(&l, b) {
                                reference.items -= 1;
                                reference.deletes += 1;
                                if reference.filters.len() > 1
                                    && reference.deletes as f64 > reference.items as f64 * 0.10
                                {
                                    plain_freed = plain_compact(&mut reference, false);
                                }
                                break;
                            }
                        }
                        assert!(found, "round {round}");
                        assert_eq!(freed.len(), plain_freed, "round {round}");
                        assert!(cf == reference, "round {round}: the tables differ");
                    }
                    cf.items = 1 << 40;
                }
                mapped += cf.filters.iter().filter(|f| f.occupancy.is_some()).count();
                compact_as_the_walk(
                    &mut cf,
                    next() % 2 == 0,
                    &format!("round {round} step {step}"),
                );
            }
        }
        assert!(mapped > 100, "{mapped} sub-filters with a map");
    }

    #[test]
    fn compaction_moves_what_a_slot_by_slot_walk_moves() {
        let mut next = xorshift(0x9e37_79b9_7f4a_7c15u64);
        for round in 0..400 {
            let bs = [1u16, 2, 3, 4, 7][round % 5];
            let many = round % 2 == 1;
            let (filters, expansion, buckets) = if many {
                (33 + round % 48, 1, 1u64 << (round % 3))
            } else {
                (2 + round % 3, [1u16, 2, 4][round % 3], 1 << (round % 7))
            };
            let mut cf = crafted(1, buckets, filters as u64, bs, expansion);
            // Occupancy from 1 slot in 300 to nearly full; with many sub-filters, most of them
            // full (as after a few deletions), some empty.
            let per_mille = [3u64, 50, 400, 900, 1000][round % 5];
            for f in cf.filters.iter_mut() {
                let p = if many && next() % 4 == 0 {
                    next() % 1000
                } else {
                    per_mille
                };
                for b in f.data_mut().iter_mut() {
                    if next() % 1000 < p {
                        *b = (next() % 255 + 1) as u8;
                    }
                }
            }
            compact_as_the_walk(&mut cf, round % 3 != 0, &format!("round {round}"));
        }
    }

    /// The most any of `pairs` `CF.ADD k x` + `CF.DEL k x` pairs read in its compaction; each
    /// deletion must compact (and fail to empty the newest sub-filter).
    fn most_read_by_add_del_pairs(cf: &mut Cuckoo, pairs: usize) -> u64 {
        let mut most = 0;
        for pair in 0..pairs {
            assert_eq!(cf.insert(b"x", false, u64::MAX), Insert::Inserted);
            let before = compaction_bytes_read();
            assert_eq!(cf.delete(b"x"), (true, Vec::new()), "pair {pair}");
            assert_eq!(cf.deletes, 0, "pair {pair}: the deletion compacted");
            most = most.max(compaction_bytes_read() - before);
        }
        most
    }

    /// The hostile shapes of CF.DEL, where each deletion compacts and cannot empty a big newest
    /// sub-filter: what a compaction reads must follow the slots that hold fingerprints (a few
    /// 4 KiB blocks), not the tables' size.
    ///
    /// - `CF.RESERVE k 16384 BUCKETSIZE 1 EXPANSION 32768`, three `CF.ADD k x` (the third
    ///   grows a 512 MiB newest sub-filter), then `CF.ADD k x` + `CF.DEL k x` pairs;
    /// - a `CF.LOADCHUNK` header of 40 sub-filters of 1 MiB (more than `SKIP_FULL_FROM`), all
    ///   but the newest full, the newest holding one fingerprint: the same pairs.
    #[test]
    fn a_failed_compaction_of_a_big_sparse_sub_filter_reads_only_its_occupied_blocks() {
        let mut cf = Cuckoo::new(16384, 1, 20, 32768, u64::MAX).unwrap();
        for _ in 0..3 {
            assert_eq!(cf.insert(b"x", false, u64::MAX), Insert::Inserted);
        }
        assert_eq!(cf.filters.len(), 2);
        assert_eq!(cf.filters[1].bytes(), 512 << 20);
        let read = most_read_by_add_del_pairs(&mut cf, 8);
        assert!(read <= 16 << 10, "a CF.DEL read {read} bytes");
        assert_eq!((cf.items, cf.filters.len(), cf.count(b"x")), (3, 2, 3));

        let mut cf = crafted(1, 1 << 20, 40, 1, 1);
        for f in cf.filters[..39].iter_mut() {
            f.data_mut().fill(7);
        }
        let (fp, at) = (9u8, 777_777usize);
        assert!(dump::apply_chunk(&mut cf, 1 + (39 << 20) + at as i64 + 1, &[fp]).is_ok());
        let read = most_read_by_add_del_pairs(&mut cf, 8);
        assert!(read <= 16 << 10, "a CF.DEL read {read} bytes");
        assert_eq!(cf.filters[39].data()[at], fp);
    }

    #[test]
    fn growth_respects_the_budget() {
        let mut cf = Cuckoo::new(4, 2, 1, 1, u64::MAX).unwrap();
        let mut outcomes = Vec::new();
        for i in 0..40u32 {
            outcomes.push(cf.insert(format!("b{i}").as_bytes(), false, 0));
        }
        assert!(outcomes.contains(&Insert::CannotGrow));
        assert_eq!(cf.filters.len(), 1);
        assert_eq!(
            outcomes.iter().filter(|o| **o == Insert::Inserted).count() as u64,
            cf.items
        );
    }
}
