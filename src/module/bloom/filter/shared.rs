//! What the two filter kinds and the commands share: the parameters of a filter to create
//! ([`Creation`]), the BF.INFO fields ([`InfoField`]), what a write must replicate
//! ([`Replication`], sent once by the command with [`replicate`]) and the reply of a refused
//! SCANDUMP chunk ([`chunk_error`]).

use crate::bloom::dump::ChunkError;
use crate::module::args::Arg;
use crate::module::config;
use crate::module::replicate::from_primary_or_aof;
use crate::module::replicate::replicate_strings;
use crate::module::reply::Reply;
use redis_module::{raw, Context, RedisString};
use std::borrow::Cow;

/// The parameters of a filter to create (BF.RESERVE's, or an implicit creation's by BF.ADD,
/// BF.MADD and BF.INSERT), for either kind: `window_ms` 0 is a plain filter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Creation {
    /// Items the first layer (a window filter: each generation) holds.
    pub capacity: u64,
    /// The error rate, in (0, 1).
    pub error: f64,
    /// The growth factor of a scaling filter (stored for non-scaling ones too).
    pub expansion: u32,
    /// A non-scaling filter refuses items once full.
    pub nonscaling: bool,
    /// False with BF.INSERT's NOCREATE: a missing key is `ERR not found`.
    pub allowed: bool,
    /// A window filter's window length in milliseconds; 0 for a plain filter.
    pub window_ms: u64,
    /// The explicit `GENERATION` of a replicated or loaded window write.
    pub generation: Option<u64>,
}

impl Creation {
    /// The implicit creation's defaults for a command running in `ctx`: [`Creation::defaults`],
    /// except that a command from the primary or an AOF never takes `bf-expansion-factor 0`
    /// (non-scaling) from this server's config: it gets the default growth (2) and scales.
    /// What a primary replicates always names its filter's growth; an AOF written by another
    /// module (or under another config) may not, and a filter that stops growing on replay
    /// would refuse the adds that follow it, which the original accepted.
    pub fn defaults_in(ctx: &Context) -> Creation {
        let mut c = Creation::defaults();
        if c.nonscaling && from_primary_or_aof(ctx) {
            c.nonscaling = false;
            c.expansion = crate::bloom::chain::DEFAULT_EXPANSION;
        }
        c
    }

    /// The implicit creation's defaults (the `bf.*` configs): a plain filter.
    pub fn defaults() -> Creation {
        let expansion = config::expansion();
        if crate::module::server::is_redis8() {
            // RedisBloom 8: the configured factor is stored as is, 0 (non-scaling) included.
            return Creation {
                capacity: config::initial_size(),
                error: config::error_rate(),
                expansion: config::expansion_factor(),
                nonscaling: expansion.is_none(),
                allowed: true,
                window_ms: 0,
                generation: None,
            };
        }
        Creation {
            capacity: config::initial_size(),
            error: config::error_rate(),
            // A non-scaling filter still stores the default expansion (RedisBloom does).
            expansion: expansion.unwrap_or(crate::bloom::chain::DEFAULT_EXPANSION),
            nonscaling: expansion.is_none(),
            allowed: true,
            window_ms: 0,
            generation: None,
        }
    }

    /// True when the command named a window option (WINDOW, or GENERATION from the primary):
    /// it then applies only to a window filter.
    pub fn names_window(&self) -> bool {
        self.window_ms != 0 || self.generation.is_some()
    }
}

/// A BF.INFO field. Each kind answers every field (`filter::Filter::info`), so a new field
/// is a compile error until both do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum InfoField {
    /// `Capacity`: items the filter holds before it grows (a window: per window).
    Capacity,
    /// `Size`: memory in bytes.
    Size,
    /// `Number of filters`: layers.
    Filters,
    /// `Number of items inserted`.
    Items,
    /// `Expansion rate` (nil when non-scaling).
    Expansion,
    /// `Window`: a window filter's length in milliseconds (asked for alone only).
    Window,
}

/// What a write sends to replicas and the AOF, decided by the filter kind and sent by the
/// command, once ([`replicate`]).
pub enum Replication<'a> {
    /// Nothing changed.
    Nothing,
    /// The command as the client sent it (Redis then copies no argument list).
    Verbatim,
    /// `BF.MADD key item…` of the items that changed the filter (the client's strings).
    Added(Vec<*mut raw::RedisModuleString>),
    /// An implicit plain creation as an explicit
    /// `BF.INSERT key CAPACITY c ERROR e EXPANSION x [NONSCALING] ITEMS …`.
    PlainInsert(Creation, Cow<'a, [*mut raw::RedisModuleString]>),
    /// A command rewritten by the kind (a window write carrying its `GENERATION`).
    Rewritten(&'static str, Vec<Cow<'a, [u8]>>),
}

/// Sends `r` for the write to `key` (`docs/commands.md` ("Replication and AOF")).
pub fn replicate(ctx: &Context, key: &Arg, r: Replication) {
    match r {
        Replication::Nothing => {}
        Replication::Verbatim => {
            ctx.replicate_verbatim();
        }
        Replication::Added(items) => replicate_strings(ctx, c"BF.MADD", &[&[key.inner], &items]),
        Replication::PlainInsert(c, items) => replicate_as_insert(ctx, key, &c, &items),
        Replication::Rewritten(command, argv) => {
            let argv: Vec<&[u8]> = argv.iter().map(|a| a.as_ref()).collect();
            ctx.replicate(command, argv.as_slice());
        }
    }
}

/// The reply for a refused SCANDUMP header or chunk (both kinds). A header too big for memory
/// answers as a malformed one (`ERR received bad data`), as RedisBloom does on every server
/// line; only a replicated or loaded one is told apart (it aborts, see `abort_diverging`).
pub fn chunk_error(e: ChunkError) -> Reply {
    Reply::Error(match e {
        ChunkError::BadData | ChunkError::OutOfMemory => "ERR received bad data",
        ChunkError::NoLink => "ERR invalid offset - no link found",
        ChunkError::TooBig => "ERR invalid chunk - Too big for current filter",
        ChunkError::Changed => crate::bloom::dump::CHANGED_MESSAGE,
    })
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

/// What an add did: the reply (already sent when [`Reply::Sent`]), what to replicate, and
/// whether any item changed the filter (the `bf.add` event).
pub struct Added<'a> {
    /// The command's reply.
    pub reply: Reply,
    /// What replicas and the AOF get.
    pub replication: Replication<'a>,
    /// True when an item changed the filter.
    pub changed: bool,
}
