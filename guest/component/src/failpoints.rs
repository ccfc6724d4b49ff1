//! Faults on demand, compiled in only with the `failpoints` feature (the host's
//! recovery tests build that variant; the plugin users run has none of this).
//!
//! The plugin has no input but its imports, so the trigger rides on the clock: while
//! the host's clock reads `NANOS_BASE + id` nanoseconds past a second, the failpoint
//! `id` traps. Entry points trap before the operation does anything; `WRITE` and
//! `PUSH` trap in the middle of one, just before the first status write or queue push.

use crate::kubelet::status::clock;

/// Nanoseconds past the second that mark failpoint 0.
pub const NANOS_BASE: u32 = 999_000_000;

/// Failpoint IDs.
pub const GET_POD_STATUS: u32 = 1;
pub const SET_POD_STATUS: u32 = 2;
pub const SET_CONTAINER_READINESS: u32 = 3;
pub const TERMINATE_POD: u32 = 4;
pub const REMOVE_ORPHANED_STATUSES: u32 = 5;
pub const SYNC_POD: u32 = 6;
pub const SYNC_BATCH: u32 = 7;
pub const SAVE_STATE_CHANGES: u32 = 8;
/// Contract 0.2.0 (`guest/plugin` shares this module): entering `start-sync`.
#[allow(dead_code)]
pub const START_SYNC: u32 = 9;
/// Contract 0.2.0: entering `resume-sync`, with the answer to a sync's call in hand.
#[allow(dead_code)]
pub const RESUME_SYNC: u32 = 10;
/// In a sync (either path), just before the status write.
pub const WRITE: u32 = 20;
/// In an update, after the status is cached and just before its request is queued.
pub const PUSH: u32 = 21;

/// Traps when failpoint `id` is armed.
pub fn hit(id: u32) {
    if clock::now().nanoseconds == NANOS_BASE + id {
        panic!("failpoint {id} hit");
    }
}
