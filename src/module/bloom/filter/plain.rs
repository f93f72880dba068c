//! The plain filter kind (type `MBbloom--`, a [`Chain`]): what the commands ask of it —
//! create, add, check, BF.INFO fields, card, BF.DEBUG lines, SCANDUMP chunks, LOADCHUNK.

use super::shared::{chunk_error, Added, Creation, InfoField, Replication};
use crate::bloom::chain::BATCH_ITEMS;
use crate::bloom::dump::{decode_header, ChunkError};
use crate::bloom::layer::{LayerError, OPT_FORCE64};
use crate::bloom::{AddError, AddOutcome, Chain};
use crate::module::args::Arg;
use crate::module::bloom::bloom_type::store_new;
use crate::module::memory::{abort_diverging, budget_for, with_budget};
use crate::module::reply::{send, Reply};
use crate::module::stats::{self, Footprint};
use redis_module::key::RedisKeyWritable;
use redis_module::{raw, Context};
use std::borrow::Cow;
use std::os::raw::c_long;

/// Creates an empty filter in `key` (opened for writing, known to be empty): a first layer of
/// `capacity` items at `error` (see [`Chain::new`]), limited by the memory budget. Shared by
/// BF.RESERVE and the implicit creation of BF.MADD / BF.INSERT (`command` names the caller for
/// the log). A replicated or loaded creation that cannot be allocated aborts the server (see
/// [`abort_diverging`]).
///
/// Errors: `ERR Insufficient memory to create filter` (allocation or budget),
/// `ERR could not create filter` (parameters that size no layer, or a key that refuses it).
pub fn create(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &[u8],
    command: &str,
    c: &Creation,
) -> Result<(), Reply> {
    let chain = new_filter(ctx, key_name, command, c)?;
    store_new(key, chain, "ERR could not create filter")
}

/// The filter [`create`] stores, not stored yet (BF.ADD adds its item first), with the
/// same budget, abort and errors.
fn new_filter(ctx: &Context, key_name: &[u8], command: &str, c: &Creation) -> Result<Chain, Reply> {
    with_budget(
        ctx,
        0,
        |e| *e == LayerError::OutOfMemory,
        |budget| Chain::new(c.capacity, c.error, c.expansion, c.nonscaling, budget),
    )
    .map_err(|e| {
        Reply::Error(match e {
            LayerError::OutOfMemory => {
                abort_diverging(ctx, command, key_name, first_layer_bytes(c));
                "ERR Insufficient memory to create filter"
            }
            LayerError::Invalid => "ERR could not create filter",
        })
    })
}

/// Bytes of the first layer `create` would allocate (for the log only; 0 if unknown).
fn first_layer_bytes(c: &Creation) -> u64 {
    use crate::bloom::layer::{LayerParams, OPT_NOROUND};
    let error = if c.nonscaling {
        c.error
    } else {
        c.error * crate::bloom::chain::TIGHTENING_RATIO
    };
    LayerParams::for_capacity(c.capacity, error, OPT_NOROUND | OPT_FORCE64).map_or(0, |p| p.bytes)
}

/// BF.ADD of one item to an existing filter: hashed and added in place, nothing allocated.
pub fn add_one<'a>(ctx: &Context, chain: &mut Chain, key_name: &Arg, item: &Arg) -> Added<'a> {
    let before = Footprint::of(chain);
    let h = chain.hash(item.as_slice());
    let r = chain.add_hashed_with(&h, |c| growth_budget(ctx, c));
    if r == Err(AddError::CannotGrow) {
        abort_if_growth_failed(ctx, chain, "BF.ADD", key_name);
    }
    stats::filter_changed(before, chain);
    match r {
        Ok(AddOutcome::Added) => Added {
            reply: Reply::Bool(true),
            replication: Replication::Verbatim,
            changed: true,
        },
        Ok(AddOutcome::Exists) => Added {
            reply: Reply::Bool(false),
            replication: Replication::Nothing,
            changed: false,
        },
        Err(e) => Added {
            reply: add_error(e),
            replication: Replication::Nothing,
            changed: false,
        },
    }
}

/// BF.ADD on a missing key: a default filter holding `item`, made and filled before it is
/// stored, replicated as `BF.INSERT` ([`Replication::PlainInsert`]). Errors: as [`create`].
pub fn add_to_new<'a>(
    ctx: &Context,
    key: &RedisKeyWritable,
    key_name: &Arg,
    item: &'a Arg,
) -> Result<Added<'a>, Reply> {
    let creation = Creation::defaults_in(ctx);
    let mut chain = new_filter(ctx, key_name.as_slice(), "BF.ADD", &creation)?;
    // A new filter's first layer has room for at least one item, so this adds it.
    let h = chain.hash(item.as_slice());
    let r = chain.add_hashed(&h, 0);
    store_new(key, chain, "ERR could not create filter")?;
    let replication =
        Replication::PlainInsert(creation, Cow::Borrowed(std::slice::from_ref(&item.inner)));
    Ok(match r {
        Ok(AddOutcome::Added) => Added {
            reply: Reply::Bool(true),
            replication,
            changed: true,
        },
        Ok(AddOutcome::Exists) => Added {
            reply: Reply::Bool(false),
            replication,
            changed: false,
        },
        Err(e) => Added {
            reply: add_error(e),
            replication,
            changed: false,
        },
    })
}

/// A growth refused while no budget applied (a replicated or loaded write) is an allocation
/// failure unless the chain cannot grow at all (counter at its maximum, or a next layer that
/// sizes to nothing): abort rather than diverge (see [`abort_diverging`]). Returns for any
/// other write.
fn abort_if_growth_failed(ctx: &Context, chain: &Chain, command: &str, key: &Arg) {
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
fn growth_budget(ctx: &Context, chain: &Chain) -> u64 {
    let needed = chain.next_layer_params().map_or(0, |p| p.bytes);
    budget_for(ctx, chain.bit_array_bytes(), needed)
}

/// The add loop of BF.MADD and BF.INSERT (`command` names it for the log) on `chain`;
/// `created`: the filter was just created with these parameters, so the replicated command
/// creates it too. The array reply is streamed item by item, so a batch of a million items
/// holds no reply values, and items are hashed [`BATCH_ITEMS`] at a time.
pub fn add_items<'a>(
    ctx: &Context,
    chain: &mut Chain,
    key_name: &Arg,
    items: &'a [Arg],
    created: Option<&Creation>,
    command: &str,
) -> Added<'a> {
    let before = Footprint::of(chain);
    // SAFETY: live context of the running command; the length is set below, after exactly
    // `sent` elements.
    unsafe {
        raw::RedisModule_ReplyWithArray.unwrap()(
            ctx.get_raw(),
            raw::REDISMODULE_POSTPONED_LEN as c_long,
        );
    }
    let mut added = ItemSet::new(items.len());
    let mut added_count = 0usize;
    // Whether an item was refused (full filter, refused growth). After a refused growth every
    // later new item would need the same growth: it is refused at once (a budget of 0)
    // instead of reading the memory numbers again for each item.
    let refused = std::cell::Cell::new(false);
    let mut sent = 0usize;
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
                send(ctx, &reply);
                sent += 1;
            },
        );
        if cannot_grow {
            abort_if_growth_failed(ctx, chain, command, key_name);
        }
        if full {
            break;
        }
    }
    // SAFETY: closes the postponed array opened above with the number of elements sent.
    unsafe { raw::RedisModule_ReplySetArrayLength.unwrap()(ctx.get_raw(), sent as c_long) };
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
    let replication = if let Some(creation) = created {
        // A new filter always takes its first item; the fallback only keeps the command valid.
        let replicated: Vec<_> = if added_count == 0 {
            items.iter().map(|s| s.inner).collect()
        } else {
            added_items().collect()
        };
        Replication::PlainInsert(*creation, Cow::Owned(replicated))
    } else if added_count > 0 && !refused.get() {
        Replication::Verbatim
    } else if added_count > 0 {
        Replication::Added(added_items().collect())
    } else {
        Replication::Nothing
    };
    Added {
        reply: Reply::Sent,
        replication,
        changed: added_count > 0,
    }
}

/// A BF.INFO field of a plain filter; `None`: a field plain filters do not have
/// (`Invalid information value`).
pub fn info(chain: &Chain, field: InfoField) -> Option<Reply> {
    let n = |v: u64| Reply::Int(v.min(i64::MAX as u64) as i64);
    Some(match field {
        InfoField::Capacity => n(chain.capacity()),
        InfoField::Size => n(chain.mem_usage()),
        InfoField::Filters => n(chain.layers.len() as u64),
        InfoField::Items => n(chain.size),
        InfoField::Expansion => {
            if chain.is_nonscaling() {
                Reply::Null
            } else {
                n(u64::from(chain.growth))
            }
        }
        InfoField::Window => return None,
    })
}

/// BF.LOADCHUNK's header: the filter it describes, within the memory budget (a replicated or
/// loaded header that cannot be allocated aborts the server, see [`abort_diverging`]).
/// Errors: the header's [`ChunkError`] as a reply (`ERR received bad data`, for one too big
/// for memory too).
pub fn from_header(ctx: &Context, key_name: &Arg, data: &[u8]) -> Result<Chain, Reply> {
    let decoded = with_budget(
        ctx,
        0,
        |e| *e == ChunkError::OutOfMemory,
        |budget| decode_header(data, budget),
    );
    let chain = match decoded {
        Ok(c) => c,
        Err(e) => {
            if e == ChunkError::OutOfMemory {
                abort_diverging(ctx, "BF.LOADCHUNK", key_name.as_slice(), header_bytes(data));
            }
            return Err(chunk_error(e));
        }
    };
    Ok(chain)
}

/// The BF.DEBUG lines of a chain (`docs/commands.md` ("BF.DEBUG")): `size:N`, then one line per layer, oldest first.
/// Every layer has `bits` ≠ 0 (sizing and `LayerParams::is_consistent` guarantee it).
pub fn debug_lines(chain: &Chain) -> Vec<String> {
    let width = if chain.options & OPT_FORCE64 != 0 {
        64
    } else {
        32
    };
    let mut lines = vec![format!("size:{}", chain.size)];
    for l in &chain.layers {
        let p = &l.params();
        lines.push(format!(
            "bytes:{} bits:{} hashes:{} hashwidth:{} capacity:{} size:{} ratio:{}",
            l.data.len(),
            p.bits,
            p.hashes,
            width,
            p.entries,
            l.size,
            format_g(p.error)
        ));
    }
    lines
}

/// Formats like C's `printf("%g")`: 6 significant digits, scientific notation (at least two
/// exponent digits) when the exponent is < −4 or ≥ 6, trailing zeros removed.
pub fn format_g(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return if v.is_nan() {
            "nan".into()
        } else if v.is_infinite() {
            if v > 0.0 {
                "inf".into()
            } else {
                "-inf".into()
            }
        } else {
            "0".into()
        };
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |s: &str| -> String {
        if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s.to_string()
        }
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{}{:02}", strip(mantissa), sign, exp.abs())
    } else {
        let decimals = (5 - exp).max(0) as usize;
        strip(&format!("{v:.decimals$}"))
    }
}

/// Σ of the layer byte counts a valid header announces (for the log only).
fn header_bytes(header: &[u8]) -> u64 {
    use crate::bloom::dump::{HEADER_FIXED_BYTES, HEADER_LAYER_BYTES};
    header
        .get(HEADER_FIXED_BYTES..)
        .unwrap_or_default()
        .chunks_exact(HEADER_LAYER_BYTES)
        .filter_map(|l| l.get(..8)?.try_into().ok().map(u64::from_le_bytes))
        .fold(0u64, u64::saturating_add)
}

#[cfg(test)]
mod tests {
    use super::format_g;

    #[test]
    fn percent_g() {
        for (v, s) in [
            (0.005, "0.005"),
            (6.25e-05, "6.25e-05"),
            (0.0005, "0.0005"),
            (0.01, "0.01"),
            (0.1, "0.1"),
            (0.00125, "0.00125"),
            (0.000625, "0.000625"),
            (1.1920928955078125e-07, "1.19209e-07"),
            (0.5, "0.5"),
            (123456.0, "123456"),
            (1234567.0, "1.23457e+06"),
            (4.9e-324, "4.94066e-324"),
        ] {
            assert_eq!(format_g(v), s);
        }
    }
}
