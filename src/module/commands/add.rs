//! `BF.ADD key item`, `BF.MADD key item [item …]` and
//! `BF.INSERT key [CAPACITY c] [ERROR e] [EXPANSION x] [NOCREATE] [NONSCALING] ITEMS item …`
//! (`docs/commands.md` ("BF.ADD", "BF.INSERT"); `docs/commands.md` ("Replication and AOF") for replication, `docs/commands.md` ("Argument handling") for keyword matching).

use super::{create_filter, new_filter, notify};
use crate::bloom::chain::BATCH_ITEMS;
use crate::bloom::{AddError, AddOutcome};
use crate::module::args::Arg;
use crate::module::args::{is_keyword, parse_f64, parse_i64};
use crate::module::bloom_type::{lookup_mut, store_new, Lookup};
use crate::module::config;
use crate::module::memory::{abort_diverging, budget_for};
use crate::module::reply::{send, Reply, NOT_FOUND, WRONGTYPE};
use crate::module::stats::{self, Footprint};
use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context, RedisString};
use std::ffi::CStr;
use std::os::raw::c_long;

/// How a missing key is created.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Creation {
    capacity: u64,
    error: f64,
    expansion: u32,
    nonscaling: bool,
    allowed: bool,
}

impl Creation {
    /// `create_filter`'s parameters: (capacity, error, expansion, nonscaling).
    fn params(&self) -> (u64, f64, u32, bool) {
        (self.capacity, self.error, self.expansion, self.nonscaling)
    }

    fn defaults() -> Creation {
        let expansion = config::expansion();
        Creation {
            capacity: config::initial_size(),
            error: config::error_rate(),
            // A non-scaling filter still stores the default expansion (RedisBloom does).
            expansion: expansion.unwrap_or(crate::bloom::chain::DEFAULT_EXPANSION),
            nonscaling: expansion.is_none(),
            allowed: true,
        }
    }
}

/// Reply shape: BF.ADD answers one value, BF.MADD / BF.INSERT an array.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    Single,
    Array,
}

/// BF.ADD: adds one item, creating a default filter when the key is missing.
/// Replies 1 if the item was new, 0 if it may have been added before (RESP3: booleans).
///
/// The single-item path: the key is opened once, and no batch machinery runs. On an existing
/// filter nothing is allocated (the item is hashed and added in place); on a missing key the
/// filter is created and its creation replicated as `BF.INSERT` (see `replicate_as_insert`).
/// Replies, replication and keyspace events are the same as the shared add loop gives for one
/// item.
pub fn bf_add(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let (key_name, item) = (&args[1], &args[2]);
    let key = ctx.open_key_writable(&key_name.string());
    let chain = match lookup_mut(&key) {
        Lookup::Found(chain) => chain,
        Lookup::Missing => return add_to_new(ctx, &key, key_name, item),
        // Not a Bloom filter: a window filter, or the wrong type (the shared loop tells).
        Lookup::WrongType => {
            let items = &args[2..];
            return add_items(
                ctx,
                &key,
                key_name,
                items,
                Creation::defaults(),
                Shape::Single,
                "BF.ADD",
            );
        }
    };
    let before = Footprint::of(chain);
    let h = chain.hash(item.as_slice());
    let r = chain.add_hashed_with(&h, |c| growth_budget(ctx, c));
    if r == Err(AddError::CannotGrow) {
        abort_if_growth_failed(ctx, chain, "BF.ADD", key_name);
    }
    stats::filter_changed(before, chain);
    match r {
        Ok(AddOutcome::Added) => {
            ctx.replicate_verbatim();
            notify(ctx, c"bf.add", key_name);
            Reply::Bool(true)
        }
        Ok(AddOutcome::Exists) => Reply::Bool(false),
        Err(e) => add_error(e),
    }
}

/// BF.ADD on a missing key: a default filter holding `item`, made and filled before it is
/// stored, replicated as `BF.INSERT` (`replicate_as_insert`).
fn add_to_new(ctx: &Context, key: &RedisKeyWritable, key_name: &Arg, item: &Arg) -> Reply {
    let creation = Creation::defaults();
    let mut chain = match new_filter(ctx, key_name.as_slice(), "BF.ADD", creation.params()) {
        Ok(chain) => chain,
        Err(e) => return e,
    };
    // A new filter's first layer has room for at least one item, so this adds it.
    let h = chain.hash(item.as_slice());
    let r = chain.add_hashed(&h, 0);
    if let Err(e) = store_new(key, chain, "ERR could not create filter") {
        return e;
    }
    replicate_as_insert(ctx, key_name, &creation, &[item.inner]);
    notify(ctx, c"bf.reserve", key_name);
    match r {
        Ok(AddOutcome::Added) => {
            notify(ctx, c"bf.add", key_name);
            Reply::Bool(true)
        }
        Ok(AddOutcome::Exists) => Reply::Bool(false),
        Err(e) => add_error(e),
    }
}

/// A growth refused while no budget applied (a replicated or loaded write) is an allocation
/// failure unless the chain cannot grow at all (counter at its maximum, or a next layer that
/// sizes to nothing): abort rather than diverge (see [`abort_diverging`]). Returns for any
/// other write.
fn abort_if_growth_failed(ctx: &Context, chain: &crate::bloom::Chain, command: &str, key: &Arg) {
    if chain.size < u64::MAX {
        if let Ok(p) = chain.next_layer_params() {
            abort_diverging(ctx, command, key.as_slice(), p.bytes);
        }
    }
}

/// The error reply of a refused add.
fn add_error(e: AddError) -> Reply {
    match e {
        AddError::Full => Reply::Error("ERR non scaling filter is full"),
        AddError::CannotGrow => Reply::Error("ERR problem inserting into filter"),
    }
}

/// BF.MADD: adds items; array reply, stopping after a `non scaling filter is full` error.
pub fn bf_madd(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    let key = ctx.open_key_writable(&args[1].string());
    add_items(
        ctx,
        &key,
        &args[1],
        &args[2..],
        Creation::defaults(),
        Shape::Array,
        "BF.MADD",
    )
}

/// An argument as bytes: BF.INSERT's options are parsed in place, without a vector of all
/// arguments (a batch of a million items would need 16 MB for it).
trait ArgBytes {
    fn bytes(&self) -> &[u8];
}

impl ArgBytes for crate::module::args::Arg {
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

impl ArgBytes for &[u8] {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Parses BF.INSERT's options (everything between the key and the first ITEMS, keywords
/// matched as whole words in any order and case). Returns the creation parameters and the
/// index (into `args`, which excludes the command name and key) of the first item.
fn parse_insert<A: ArgBytes>(args: &[A]) -> Result<(Creation, usize), Reply> {
    let mut c = Creation::defaults();
    let mut i = 0;
    let mut expansion: i64 = i64::from(c.expansion);
    let mut capacity: i64 = c.capacity as i64;
    loop {
        let Some(tok) = args.get(i).map(ArgBytes::bytes) else {
            return Err(Reply::WrongArity);
        };
        let value = args.get(i + 1).map(ArgBytes::bytes);
        if is_keyword(tok, "ITEMS") {
            i += 1;
            break;
        } else if is_keyword(tok, "CAPACITY") {
            let v = value.ok_or(Reply::WrongArity)?;
            capacity = parse_i64(v).ok_or(Reply::Error("Bad capacity"))?;
            i += 2;
        } else if is_keyword(tok, "ERROR") {
            let v = value.ok_or(Reply::WrongArity)?;
            c.error = parse_f64(v).ok_or(Reply::Error("Bad error rate"))?;
            i += 2;
        } else if is_keyword(tok, "EXPANSION") {
            let v = value.ok_or(Reply::WrongArity)?;
            expansion = parse_i64(v).ok_or(Reply::Error("Bad expansion"))?;
            i += 2;
        } else if is_keyword(tok, "NOCREATE") {
            c.allowed = false;
            i += 1;
        } else if is_keyword(tok, "NONSCALING") {
            c.nonscaling = true;
            i += 1;
        } else {
            return Err(Reply::Error("Unknown argument received"));
        }
    }
    if i >= args.len() {
        return Err(Reply::WrongArity);
    }
    if !(c.error > 0.0 && c.error < 1.0) || capacity < 1 || expansion < 1 {
        return Err(Reply::Error("Bad argument received"));
    }
    c.capacity = capacity as u64;
    c.expansion = u32::try_from(expansion).map_err(|_| Reply::Error("Bad argument received"))?;
    Ok((c, i))
}

/// BF.INSERT: adds items, creating the filter with the given parameters when missing
/// (unless NOCREATE: `ERR not found`). Array reply as BF.MADD.
pub fn bf_insert(ctx: &Context, args: &[Arg]) -> Reply {
    if let Some(r) = crate::module::window_type::insert(ctx, args) {
        return r;
    }
    if args.len() < 4 {
        return Reply::WrongArity;
    }
    match parse_insert(&args[2..]) {
        Ok((creation, first)) => add_items(
            ctx,
            &ctx.open_key_writable(&args[1].string()),
            &args[1],
            &args[2 + first..],
            creation,
            Shape::Array,
            "BF.INSERT",
        ),
        Err(e) => e,
    }
}

/// One bit per item of a batch: which items were added.
struct ItemSet(Vec<u64>);

impl ItemSet {
    fn new(n: usize) -> ItemSet {
        ItemSet(vec![0; n.div_ceil(64)])
    }
    fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }
    fn contains(&self, i: usize) -> bool {
        self.0[i / 64] & (1 << (i % 64)) != 0
    }
}

/// The bytes a new layer of `chain` may take: the next layer's size is known, so the memory
/// numbers are read only for a large layer (see `memory::budget_for`).
fn growth_budget(ctx: &Context, chain: &crate::bloom::Chain) -> u64 {
    let needed = chain.next_layer_params().map_or(0, |p| p.bytes);
    budget_for(ctx, chain.bit_array_bytes(), needed)
}

/// The add loop shared by BF.MADD and BF.INSERT, and BF.ADD on a key that holds no Bloom
/// filter (`command` names it for the log), on `key`, opened for writing. Array replies are
/// streamed item by item, so a batch of a million items holds no reply values, and items are
/// hashed [`BATCH_ITEMS`] at a time.
fn add_items(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    items: &[Arg],
    creation: Creation,
    shape: Shape,
    command: &str,
) -> Reply {
    let created = match lookup_mut(key) {
        Lookup::WrongType => {
            let single = shape == Shape::Single;
            return crate::module::window_type::add_existing(
                ctx, key, key_name, items, single, command,
            )
            .unwrap_or(Reply::Error(WRONGTYPE));
        }
        Lookup::Found(_) => false,
        Lookup::Missing => {
            if !creation.allowed {
                return Reply::Error(NOT_FOUND);
            }
            if let Err(e) = create_filter(ctx, key, key_name.as_slice(), command, creation.params())
            {
                return e;
            }
            true
        }
    };
    let Lookup::Found(chain) = lookup_mut(key) else {
        return Reply::Error(WRONGTYPE);
    };
    let before = Footprint::of(chain);
    let stream = shape == Shape::Array;
    if stream {
        // SAFETY: live context of the running command; the length is set below, after exactly
        // `sent` elements.
        unsafe {
            raw::RedisModule_ReplyWithArray.unwrap()(
                ctx.get_raw(),
                raw::REDISMODULE_POSTPONED_LEN as c_long,
            );
        }
    }
    let mut added = ItemSet::new(items.len());
    let mut added_count = 0usize;
    // Whether an item was refused (full filter, refused growth). After a refused growth every
    // later new item would need the same growth: it is refused at once (a budget of 0)
    // instead of reading the memory numbers again for each item.
    let refused = std::cell::Cell::new(false);
    let mut sent = 0usize;
    let mut single = Reply::Bool(false);
    let mut hashes = Vec::with_capacity(items.len().min(BATCH_ITEMS));
    for (b, batch) in items.chunks(BATCH_ITEMS).enumerate() {
        hashes.clear();
        hashes.extend(batch.iter().map(|i| chain.hash(i.as_slice())));
        let (mut full, mut cannot_grow) = (false, false);
        chain.add_many(
            &hashes,
            |c| {
                if refused.get() {
                    0
                } else {
                    growth_budget(ctx, c)
                }
            },
            |i, r| {
                let reply = match r {
                    Ok(AddOutcome::Added) => {
                        added.insert(b * BATCH_ITEMS + i);
                        added_count += 1;
                        Reply::Bool(true)
                    }
                    Ok(AddOutcome::Exists) => Reply::Bool(false),
                    Err(AddError::Full) => {
                        full = true;
                        refused.set(true);
                        Reply::Error("ERR non scaling filter is full")
                    }
                    Err(AddError::CannotGrow) => {
                        cannot_grow = true;
                        refused.set(true);
                        Reply::Error("ERR problem inserting into filter")
                    }
                };
                if stream {
                    send(ctx, &reply);
                    sent += 1;
                } else {
                    single = reply;
                }
            },
        );
        if cannot_grow {
            abort_if_growth_failed(ctx, chain, command, key_name);
        }
        if full {
            break;
        }
    }
    if stream {
        // SAFETY: closes the postponed array opened above with the number of elements sent.
        unsafe { raw::RedisModule_ReplySetArrayLength.unwrap()(ctx.get_raw(), sent as c_long) };
    }
    stats::filter_changed(before, chain);
    // What replicas and the AOF get (`docs/commands.md` ("Replication and AOF")): items
    // refused here (a full filter, a growth over a memory limit) must not be added by a
    // replica or a replay that is not limited, so when any was refused only the added items
    // are replicated; otherwise the command as sent, since items already present change
    // nothing on a replica in the same state (the same items in the same order give the same
    // bits), and Redis then copies no argument list. The rewritten command shares the
    // client's argument strings (no copy of the items).
    let added_items = || {
        items
            .iter()
            .enumerate()
            .filter(|(i, _)| added.contains(*i))
            .map(|(_, s)| s.inner)
    };
    if created {
        // A new filter always takes its first item; the fallback only keeps the command valid.
        let replicated: Vec<_> = if added_count == 0 {
            items.iter().map(|s| s.inner).collect()
        } else {
            added_items().collect()
        };
        replicate_as_insert(ctx, key_name, &creation, &replicated);
        notify(ctx, c"bf.reserve", key_name);
    } else if added_count > 0 && !refused.get() {
        ctx.replicate_verbatim();
    } else if added_count > 0 {
        let argv: Vec<_> = std::iter::once(key_name.inner)
            .chain(added_items())
            .collect();
        replicate_strings(ctx, c"BF.MADD", &[&argv]);
    }
    if added_count > 0 {
        notify(ctx, c"bf.add", key_name);
    }
    match shape {
        Shape::Single => single,
        Shape::Array => Reply::Sent,
    }
}

/// Replicates `command` followed by the strings of `parts`, in order, sharing them (Redis
/// takes a reference to each, copying none).
fn replicate_strings(ctx: &Context, command: &CStr, parts: &[&[*mut raw::RedisModuleString]]) {
    // Up to 16 strings go as that many `s` specifiers, assembled on the stack: Redis then
    // sizes its argument vector exactly, where the `v` specifier makes it grow the vector (a
    // reallocation per command).
    const FORMAT: &[u8; 17] = b"ssssssssssssssss\0";
    let len: usize = parts.iter().map(|p| p.len()).sum();
    if len <= 16 {
        let format = &FORMAT[16 - len..];
        let mut a = [std::ptr::null_mut(); 16];
        for (slot, s) in a.iter_mut().zip(parts.iter().flat_map(|p| p.iter())) {
            *slot = *s;
        }
        // SAFETY: live context; `format` is NUL-terminated and has exactly `len` `s`
        // specifiers, each matched by a live string of this command (its arguments, or
        // strings that outlive the call); Redis increments their reference counts. The
        // remaining (null) arguments are never read: C ignores variadic arguments beyond the
        // ones the format consumes.
        unsafe {
            raw::RedisModule_Replicate.unwrap()(
                ctx.get_raw(),
                command.as_ptr(),
                format.as_ptr().cast(),
                a[0],
                a[1],
                a[2],
                a[3],
                a[4],
                a[5],
                a[6],
                a[7],
                a[8],
                a[9],
                a[10],
                a[11],
                a[12],
                a[13],
                a[14],
                a[15],
            );
        }
        return;
    }
    let argv: Vec<_> = parts.concat();
    // SAFETY: live context; format "v" takes a (RedisModuleString **, size_t) pair over live
    // strings of this command, as above.
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.get_raw(),
            command.as_ptr(),
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len(),
        );
    }
}

/// Replicates an implicit creation as an explicit
/// `BF.INSERT key CAPACITY c ERROR e EXPANSION x [NONSCALING] ITEMS …`
/// (`docs/commands.md` ("Replication and AOF")), so replicas and AOF replays do not depend on
/// their own defaults. `items` are the client's argument strings, shared rather than copied;
/// the keywords and the option values are strings kept from one creation to the next
/// ([`InsertWords`]), so a creation with the same parameters as the one before (the per-user
/// filters of one application) builds no string at all.
fn replicate_as_insert(
    ctx: &Context,
    key: &Arg,
    c: &Creation,
    items: &[*mut raw::RedisModuleString],
) {
    INSERT_WORDS.with(|words| {
        let mut words = words.borrow_mut();
        let w = words.get_or_insert_with(InsertWords::new);
        let values = w.values_for(c);
        // NONSCALING is left out of a scaling filter's command. The expansion is stored even
        // for non-scaling filters (it is in the header and RDB value), so it is always spelled
        // out; BF.INSERT accepts it together with NONSCALING.
        let mut head = [std::ptr::null_mut(); 9];
        let mut n = 0;
        for s in [
            key.inner,
            w.capacity.inner,
            values[0],
            w.error.inner,
            values[1],
            w.expansion.inner,
            values[2],
        ]
        .into_iter()
        .chain(c.nonscaling.then_some(w.nonscaling.inner))
        .chain([w.items.inner])
        {
            head[n] = s;
            n += 1;
        }
        replicate_strings(ctx, c"BF.INSERT", &[&head[..n], items]);
    });
}

/// The strings of [`replicate_as_insert`]'s command that do not come from the client: the
/// keywords, made once, and the values of the last parameters replicated, remade only when a
/// creation with other parameters comes. They are not tied to a command's context (created
/// with a NULL context): Redis takes its own reference to each string it keeps for
/// replication, so they stay valid here for as long as this thread runs commands.
struct InsertWords {
    capacity: RedisString,
    error: RedisString,
    expansion: RedisString,
    nonscaling: RedisString,
    items: RedisString,
    /// (capacity, error bits, expansion) and their texts: integers in decimal, the error rate
    /// as the shortest text that parses back to the same f64 (Rust's `{}`).
    values: Option<((u64, u64, u32), [RedisString; 3])>,
}

thread_local! {
    static INSERT_WORDS: std::cell::RefCell<Option<InsertWords>> = const { std::cell::RefCell::new(None) };
}

impl InsertWords {
    fn new() -> InsertWords {
        let word = |s: &str| RedisString::create_from_slice(std::ptr::null_mut(), s.as_bytes());
        InsertWords {
            capacity: word("CAPACITY"),
            error: word("ERROR"),
            expansion: word("EXPANSION"),
            nonscaling: word("NONSCALING"),
            items: word("ITEMS"),
            values: None,
        }
    }

    /// The texts of `c`'s capacity, error rate and expansion.
    fn values_for(&mut self, c: &Creation) -> [*mut raw::RedisModuleString; 3] {
        let id = (c.capacity, c.error.to_bits(), c.expansion);
        if let Some((kept, texts)) = &self.values {
            if *kept == id {
                return [texts[0].inner, texts[1].inner, texts[2].inner];
            }
        }
        let text = |s: String| RedisString::create_from_slice(std::ptr::null_mut(), s.as_bytes());
        let texts = [
            text(c.capacity.min(i64::MAX as u64).to_string()),
            text(format!("{}", c.error)),
            text(c.expansion.to_string()),
        ];
        let inner = [texts[0].inner, texts[1].inner, texts[2].inner];
        // The strings replaced here are freed; Redis holds its own reference to any it kept.
        self.values = Some((id, texts));
        inner
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<(Creation, usize), Reply> {
        let parts: Vec<&[u8]> = s.split(' ').map(str::as_bytes).collect();
        parse_insert(&parts)
    }

    #[test]
    fn insert_options() {
        let (c, first) = p("error 0.001 CAPACITY 1000 expansion 4 NONSCALING items a b").unwrap();
        assert_eq!(
            (c.capacity, c.error, c.expansion, c.nonscaling, first),
            (1000, 0.001, 4, true, 8)
        );
        let (c, first) = p("ITEMS NOCREATE ITEMS").unwrap();
        assert!(c.allowed);
        assert_eq!(first, 1);
        assert!(!p("NOCREATE ITEMS a").unwrap().0.allowed);
        assert_eq!(p("ITEMS").unwrap_err(), Reply::WrongArity);
        assert_eq!(p("CAPACITY 10").unwrap_err(), Reply::WrongArity);
        assert_eq!(p("CAPACITY").unwrap_err(), Reply::WrongArity);
        assert_eq!(
            p("CAPACITY x ITEMS a").unwrap_err(),
            Reply::Error("Bad capacity")
        );
        assert_eq!(
            p("ERROR x ITEMS a").unwrap_err(),
            Reply::Error("Bad error rate")
        );
        assert_eq!(
            p("EXPANSION x ITEMS a").unwrap_err(),
            Reply::Error("Bad expansion")
        );
        assert_eq!(
            p("e 3 ITEMS a").unwrap_err(),
            Reply::Error("Unknown argument received")
        );
        assert_eq!(
            p("ERROR 1 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
        assert_eq!(
            p("CAPACITY 0 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
        assert_eq!(
            p("EXPANSION 0 ITEMS a").unwrap_err(),
            Reply::Error("Bad argument received")
        );
    }
}
