//! `RF.ADD key item` → 1 (newly staged) / 0 (already staged); `RF.MADD key item [item …]` →
//! an array of those. Both create a staging key; replicated verbatim (every node stages the
//! same hashes) and notified as `rf.add`.
//!
//! Errors: WRONGTYPE; on a built key `ERR RF.ADD: this Ribbon filter is built and read-only;
//! stage the new list under another key, RF.BUILD it, then RENAME it over this one` (the same
//! with RF.MADD); while a build runs from the key `ERR RF.BUILD is running on this key`; on a
//! key still loading by RF.LOADCHUNK `ERR RF.ADD: this Ribbon filter is being loaded by
//! RF.LOADCHUNK`; over the memory limits (`maxmemory`, `bf.max-filter-bytes`) an error naming
//! the bytes the new items need.

use super::{error_owned, BUILD_RUNNING};
use crate::bloom::ribbon::item_hash;
use crate::module::args::Arg;
use crate::module::data_type::{FilterValue, Lookup};
use crate::module::memory;
use crate::module::reply::{send_array_header, send_bool, Reply, WRONGTYPE};
use crate::module::ribbon::ribbon_type::{
    lookup_mut, store_new, tracked, RibbonValue, Staged, State, STAGED_BYTES_PER_ITEM,
};
use redis_module::key::RedisKeyWritable;
use redis_module::Context;
use std::sync::Arc;

/// Which command stages, for its error texts.
#[derive(Clone, Copy)]
pub enum Stager {
    /// RF.ADD.
    Add,
    /// RF.MADD.
    Madd,
    /// RF.BUILD … ITEMS.
    Build,
    /// RF.LOADCHUNK key 0 (staged hashes, as an AOF rewrite writes a staging key): a key
    /// that is not staging refuses them as bad data.
    Loadchunk,
}

impl Stager {
    fn built_error(self) -> &'static str {
        match self {
            Stager::Add => "ERR RF.ADD: this Ribbon filter is built and read-only; stage the new list under another key, RF.BUILD it, then RENAME it over this one",
            Stager::Madd => "ERR RF.MADD: this Ribbon filter is built and read-only; stage the new list under another key, RF.BUILD it, then RENAME it over this one",
            Stager::Build => "ERR RF.BUILD: this Ribbon filter is built already",
            Stager::Loadchunk => "ERR received bad data",
        }
    }
    fn loading_error(self) -> &'static str {
        match self {
            Stager::Add => "ERR RF.ADD: this Ribbon filter is being loaded by RF.LOADCHUNK",
            Stager::Madd => "ERR RF.MADD: this Ribbon filter is being loaded by RF.LOADCHUNK",
            Stager::Build => "ERR RF.BUILD: this Ribbon filter is being loaded by RF.LOADCHUNK",
            Stager::Loadchunk => "ERR received bad data",
        }
    }
}

/// The staging value of `key` to add to (created when the key is missing and `create`),
/// after the checks every staging write makes: type, state, running build, and the memory
/// the `adding` new items may need. `Ok(None)`: the key is missing and `create` is false.
pub fn staging_value<'k>(
    ctx: &Context,
    key: &'k RedisKeyWritable,
    who: Stager,
    adding: u64,
    create: bool,
) -> Result<Option<&'k mut RibbonValue>, Reply> {
    let existing = match lookup_mut(key) {
        Lookup::WrongType => return Err(Reply::Error(WRONGTYPE)),
        Lookup::Found(v) => {
            match v.state {
                State::Built(_) => return Err(Reply::Error(who.built_error())),
                State::Loading(_) => return Err(Reply::Error(who.loading_error())),
                State::Staging(_) if v.building() => return Err(Reply::Error(BUILD_RUNNING)),
                State::Staging(_) => {}
            }
            v.mem_usage()
        }
        Lookup::Missing if !create => return Ok(None),
        Lookup::Missing => 0,
    };
    let needed = adding.saturating_mul(STAGED_BYTES_PER_ITEM);
    let budget = memory::budget_for(ctx, existing, needed);
    if needed > budget {
        return Err(error_owned(
            ctx,
            &format!(
                "ERR staging {adding} items needs up to {needed} bytes; the memory limits \
                 (maxmemory, bf.max-filter-bytes) leave {budget}"
            ),
        ));
    }
    if matches!(lookup_mut(key), Lookup::Missing) {
        store_new(
            key,
            RibbonValue::staging(Staged::new()),
            "ERR could not create the key",
        )?;
    }
    match lookup_mut(key) {
        Lookup::Found(v) => Ok(Some(v)),
        _ => Err(Reply::Error("ERR could not create the key")),
    }
}

/// Stages `items` into a staging value (checked by [`staging_value`]); `each` gets whether
/// each was new.
pub fn stage(v: &mut RibbonValue, items: &[Arg], mut each: impl FnMut(bool)) {
    tracked(v, |v| {
        if let State::Staging(s) = &mut v.state {
            let s = Arc::make_mut(s);
            for item in items {
                each(s.insert(item_hash(item.as_slice())));
            }
        }
    })
}

fn add_items(ctx: &Context, args: &[Arg], who: Stager) -> Reply {
    let key = ctx.open_key_writable(&args[1].string());
    let items = &args[2..];
    let v = match staging_value(ctx, &key, who, items.len() as u64, true) {
        Ok(Some(v)) => v,
        Ok(None) => return Reply::Error("ERR could not create the key"),
        Err(e) => return e,
    };
    // Replicated and notified only when an item was new, as BF.ADD and CF.ADDNX: a command
    // that staged nothing changed nothing.
    let mut changed = false;
    let reply = match who {
        Stager::Add => {
            stage(v, items, |n| changed = n);
            Reply::Bool(changed)
        }
        _ => {
            send_array_header(ctx, items.len());
            stage(v, items, |n| {
                changed |= n;
                send_bool(ctx, n)
            });
            Reply::Sent
        }
    };
    if changed {
        ctx.replicate_verbatim();
        crate::module::notify::notify(ctx, c"rf.add", &args[1]);
    }
    reply
}

/// RF.ADD.
pub fn rf_add(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    add_items(ctx, args, Stager::Add)
}

/// RF.MADD.
pub fn rf_madd(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() < 3 {
        return Reply::WrongArity;
    }
    add_items(ctx, args, Stager::Madd)
}
