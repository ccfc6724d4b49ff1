//! The logic's outcomes as the contract's `manager` types: the same cases in every
//! contract version, so each glue crate includes this file (`#[path]`) as a child of
//! its crate root, whose `wit` (the generated `manager` module) and logic types it uses.

use super::{SyncOutcome, UpdateOutcome, wit};

/// An update's outcome.
pub fn update_outcome(o: UpdateOutcome) -> wit::UpdateOutcome {
    match o {
        UpdateOutcome::Queued => wit::UpdateOutcome::Queued,
        UpdateOutcome::QueueFull => wit::UpdateOutcome::QueueFull,
        UpdateOutcome::Unchanged => wit::UpdateOutcome::Unchanged,
        UpdateOutcome::PodNotFound => wit::UpdateOutcome::PodNotFound,
        UpdateOutcome::NotCached => wit::UpdateOutcome::NotCached,
        UpdateOutcome::UnknownContainer => wit::UpdateOutcome::UnknownContainer,
    }
}

/// A sync's outcome.
pub fn sync_outcome(o: SyncOutcome) -> wit::SyncOutcome {
    match o {
        SyncOutcome::UpToDate => wit::SyncOutcome::UpToDate,
        SyncOutcome::PodNotFound => wit::SyncOutcome::PodNotFound,
        SyncOutcome::GetFailed => wit::SyncOutcome::GetFailed,
        SyncOutcome::Recreated => wit::SyncOutcome::Recreated,
        SyncOutcome::WriteFailed => wit::SyncOutcome::WriteFailed,
        SyncOutcome::Written => wit::SyncOutcome::Written,
        SyncOutcome::Deleted => wit::SyncOutcome::Deleted,
        SyncOutcome::DeleteFailed => wit::SyncOutcome::DeleteFailed,
    }
}
