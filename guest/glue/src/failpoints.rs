//! Faults on demand, compiled in only with the `failpoints` feature (the host's
//! recovery tests build that variant; the plugin users run has none of this).
//!
//! The plugin has no input but its imports, so the trigger rides on the clock: while
//! the host's clock reads `NANOS_BASE + id` nanoseconds past a second, the failpoint
//! `id` traps. Contract 0.1.0's entry points trap before the operation does anything;
//! `WRITE` and `PUSH` trap in the middle of one, just before the first status write or
//! queue push. Contract 0.2.0's trap entering `start-sync` and `resume-sync`.

/// Nanoseconds past the second that mark failpoint 0.
pub const NANOS_BASE: u32 = 999_000_000;

/// Entering `get-pod-status`.
pub const GET_POD_STATUS: u32 = 1;
/// Entering `set-pod-status`.
pub const SET_POD_STATUS: u32 = 2;
/// Entering `set-container-readiness`.
pub const SET_CONTAINER_READINESS: u32 = 3;
/// Entering `terminate-pod`.
pub const TERMINATE_POD: u32 = 4;
/// Entering `remove-orphaned-statuses`.
pub const REMOVE_ORPHANED_STATUSES: u32 = 5;
/// Entering `sync-pod`.
pub const SYNC_POD: u32 = 6;
/// Entering `sync-batch`.
pub const SYNC_BATCH: u32 = 7;
/// Entering `save-state-changes`.
pub const SAVE_STATE_CHANGES: u32 = 8;
/// Contract 0.2.0: entering `start-sync`.
pub const START_SYNC: u32 = 9;
/// Contract 0.2.0: entering `resume-sync`, with the answer to a sync's call in hand.
pub const RESUME_SYNC: u32 = 10;
/// In a sync (contract 0.1.0), just before the status write.
pub const WRITE: u32 = 20;
/// In an update, after the status is cached and just before its request is queued.
pub const PUSH: u32 = 21;

/// Traps when failpoint `id` is armed: the host's clock reads `nanoseconds`.
pub fn hit(id: u32, nanoseconds: u32) {
    if nanoseconds == NANOS_BASE + id {
        panic!("failpoint {id} hit");
    }
}
