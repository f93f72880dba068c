//! Atomic slot migration: the module options each server line needs, and why both filter
//! types move safely.
//!
//! Both Valkey (9.0 and later, `CLUSTER MIGRATESLOTS`) and Redis (8.4 and later,
//! `CLUSTER MIGRATION IMPORT`) can move whole slot ranges between primaries without the
//! key-by-key `MIGRATE` of classic resharding. Each side of such a migration works like a
//! replication link restricted to the slots that move: the source sends a snapshot of the
//! slots' keys, then streams the writes it receives for them until the target takes
//! ownership, while clients keep reading and writing on the source.
//!
//! **Valkey.** A server refuses `CLUSTER MIGRATESLOTS` (`ERR The module bf does not support
//! atomic slot migrations…`) unless every loaded module has set
//! `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (bit 5) with `SetModuleOptions`
//! (`moduleVerifyAllAllowAtomicSlotMigrationOrReply` in `module.c`). The bit declares that
//! the module copes with keys that exist on a node before it owns their slot. On the source,
//! a forked child writes the snapshot in AOF form (`childSnapshotForSyncSlot` in
//! `cluster_migrateslots.c`, through `rewriteSlotToAppendOnlyFileRio`), so a module value
//! travels as whatever its `aof_rewrite` callback emits: for both our types, the SCANDUMP walk
//! as `BF.LOADCHUNK` commands, header first. The target runs them, and the writes streamed
//! after them, on its import client, which the module API reports as replicated
//! (`REDISMODULE_CTX_FLAGS_REPLICATED`, `isReplicatedClient` in `VM_GetContextFlags`). Until
//! the migration ends the imported keys live in slots marked as importing
//! (`kvstoreSetIsImporting`): the node does not serve those slots to clients, leaves the keys
//! out of `DBSIZE`, `SCAN` and `RANDOMKEY`, and a cancelled or failed import
//! (`CLUSTER CANCELSLOTMIGRATIONS`, a lost link, the target's replica promoted by a failover)
//! deletes them again (`delKeysNotOwnedByMyself` → `delKeysInSlot`, lazily, which our
//! `free_effort` turns into a bounded free at once). The source deletes the moved keys once it
//! learns it no longer owns their slots (`clusterUpdateSlotsConfigWith` in `cluster_legacy.c`,
//! its "dirty slots").
//!
//! **Redis.** There is no opt-in: Redis 8.6 has no module option for slot migration (its
//! `REDISMODULE_OPTIONS_*` end at bit 3), and `CLUSTER MIGRATION IMPORT` runs whatever modules
//! are loaded. The snapshot sends every module value as `RESTORE key ttl payload ABSTTL`
//! (`slotSnapshotSaveKeyValuePair` in `cluster_asm.c`), so a filter travels as its RDB value
//! (`rdb_save` on the source, `rdb_load` with `HANDLE_IO_ERRORS` on the target). The import
//! client carries `CLIENT_MASTER` (`cluster_asm.c`), so the module sees the snapshot and the
//! streamed writes as replicated, as on Valkey. The target does not serve the slots until the
//! hand-over; a cancelled or failed import (`CLUSTER MIGRATION CANCEL`, a lost link, or the
//! target's replica starting a manual failover, which cancels the target's tasks in
//! `clusterProcessPacket` on `MFSTART`) is trimmed from the target (`asmTrimJobSchedule`, or
//! `asmFinalizeMasterTask` on a promoted replica that was following it). After the hand-over
//! the source trims the slots: in the background (`asmTriggerBackgroundTrim`: the slots'
//! dictionaries go to a BIO thread, which calls our `free` there) unless a module subscribed to
//! `REDISMODULE_NOTIFY_KEY_TRIMMED`, in which case it deletes key by key on the main thread
//! (`asmActiveTrimDeleteKey`) and lookups skip keys awaiting their trim unless opened with
//! `REDISMODULE_OPEN_KEY_ACCESS_TRIMMED` (`REDISMODULE_CTX_FLAGS_TRIM_IN_PROGRESS` says a trim
//! runs). The module keeps no per-key state outside the values, so it needs neither the
//! notification nor the events (`REDISMODULE_EVENT_CLUSTER_SLOT_MIGRATION*`), and the faster
//! background trim stays available.
//!
//! **Why our types are safe on both.**
//! - The module holds no index of keys, no timers per key and no cached pointers to values:
//!   every command opens its key through the server, so a key the server hides (importing, or
//!   awaiting its trim) is simply not found, and one it deletes is freed through the type's
//!   `free` like any other deletion.
//! - Freeing is safe off the main thread: `free` only touches atomic counters
//!   (`counter::SplitCounter`) and hands big arrays to the module's freeing thread
//!   (`alloc::free_bit_array`), as for `FLUSHALL ASYNC`.
//! - Window filters never read the clock for a replicated write: the snapshot carries each
//!   filter's generation (its SCANDUMP header or RDB value), the streamed writes are the
//!   source's `GENERATION` rewrites, and the import client is replicated, so `GENERATION` is
//!   accepted from it. The target therefore ends byte-identical to the source whatever its
//!   clock says; once it owns the slots, its own clock takes over, as after a failover.
//! - `BF.LOADCHUNK` and `RESTORE` build a filter completely before it becomes visible; a
//!   cancelled import deletes whatever part arrived, and the source, which kept serving the
//!   slots, still holds every filter whole.

use crate::module::server::ServerLine;
use redis_module::{raw, Context};
use std::os::raw::c_int;

/// `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (`valkeymodule.h`): on Valkey, the
/// module handles keys loaded into slots it does not own yet.
pub const VALKEY_HANDLE_ATOMIC_SLOT_MIGRATION: c_int = 1 << 5;

/// `REDISMODULE_OPTIONS_HANDLE_IO_ERRORS`: short reads in RDB / RESTORE payloads become
/// errors instead of aborting the server (every line).
const HANDLE_IO_ERRORS: c_int = raw::REDISMODULE_OPTIONS_HANDLE_IO_ERRORS as c_int;

/// The module options for `line`: I/O errors handled everywhere, plus Valkey's atomic slot
/// migration bit on Valkey only (on Redis that bit has no meaning, or another in the future).
pub fn module_options(line: ServerLine) -> c_int {
    match line {
        ServerLine::Valkey => HANDLE_IO_ERRORS | VALKEY_HANDLE_ATOMIC_SLOT_MIGRATION,
        ServerLine::Redis7 | ServerLine::Redis8 => HANDLE_IO_ERRORS,
    }
}

/// Sets [`module_options`] for `line` during `OnLoad` (`SetModuleOptions` replaces the whole
/// set, so this is the one call that sets them).
pub fn set_module_options(ctx: &Context, line: ServerLine) {
    // SAFETY: the API table was filled in before OnLoad runs and is only read here, on the
    // main thread; SetModuleOptions, called from OnLoad with the module's own context, only
    // stores the integer in the module's record.
    unsafe {
        if let Some(set) = raw::RedisModule_SetModuleOptions {
            set(ctx.get_raw(), module_options(line));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_gets_its_own_bits() {
        for (line, want) in [
            (ServerLine::Redis7, 1),
            (ServerLine::Redis8, 1),
            (ServerLine::Valkey, 1 | 32),
        ] {
            assert_eq!(module_options(line), want, "{line:?}");
        }
    }
}
