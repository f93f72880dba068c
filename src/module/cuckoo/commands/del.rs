//! `CF.DEL key item` and `CF.COMPACT key`.
//!
//! CF.DEL removes one copy of the item's fingerprint (newest sub-filter first) and may compact
//! (see `redis_bf_core::cuckoo`); CF.COMPACT compacts every sub-filter it can. Sub-filters left
//! empty are freed as big bit arrays are (`common::free_sub_filters`). Both replicate as sent
//! (deletion and compaction are deterministic, so replicas end byte-identical); a CF.DEL that
//! found nothing changes nothing and is not replicated.
//!
//! CF.COMPACT is registered `readonly`, as in RedisBloom (so scripts and `readonly` ACL rules
//! treat it as RedisBloom's), yet it changes the filter: on a read-only replica a client's
//! CF.COMPACT is refused with Redis' own `READONLY` error, so the replica does not diverge from
//! its primary (RedisBloom compacts the replica's copy).

use super::common::free_sub_filters;
use crate::module::args::Arg;
use crate::module::cuckoo::cuckoo_type::{lookup_mut, tracked};
use crate::module::data_type::Lookup;
use crate::module::notify::notify;
use crate::module::replicate::from_primary_or_aof;
use crate::module::reply::Reply;
use redis_module::{Context, ContextFlags};

/// Redis' reply to a write on a read-only replica.
pub const READONLY: &str = "READONLY You can't write against a read only replica.";

/// CF.DEL: 1 when a copy was removed, 0 when none was found (RESP3: booleans). A missing key
/// or another type: `Not found`. Keyspace event `cf.del` when a copy was removed.
pub fn cf_del(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 3 {
        return Reply::WrongArity;
    }
    let key_name = &args[1];
    let key = ctx.open_key_writable(&key_name.string());
    let Lookup::Found(cf) = lookup_mut(&key) else {
        return Reply::Error("Not found");
    };
    let (deleted, freed) = tracked(cf, |cf| cf.delete(args[2].as_slice()));
    free_sub_filters(freed);
    if deleted {
        ctx.replicate_verbatim();
        notify(ctx, c"cf.del", key_name);
    }
    Reply::Bool(deleted)
}

/// CF.COMPACT: `OK`. A missing key or another type: `Cuckoo filter was not found`; a client's
/// CF.COMPACT on a read-only replica: `READONLY …`. Keyspace event `cf.compact`.
pub fn cf_compact(ctx: &Context, args: &[Arg]) -> Reply {
    if args.len() != 2 {
        return Reply::WrongArity;
    }
    let flags = ctx.get_flags();
    if flags.contains(ContextFlags::SLAVE | ContextFlags::READONLY) && !from_primary_or_aof(ctx) {
        return Reply::Error(READONLY);
    }
    let key_name = &args[1];
    let key = ctx.open_key_writable(&key_name.string());
    let Lookup::Found(cf) = lookup_mut(&key) else {
        return Reply::Error("Cuckoo filter was not found");
    };
    free_sub_filters(tracked(cf, |cf| cf.compact(true)));
    ctx.replicate_verbatim();
    notify(ctx, c"cf.compact", key_name);
    Reply::Ok
}
