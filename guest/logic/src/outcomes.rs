//! What the status manager's operations return (the WIT `manager` interface's results).

/// What `get_pod_status` returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CachedStatus {
    pub version: u64,
    /// The normalised status as JSON.
    pub status: String,
}

/// What an update did (the WIT `update-outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    Queued,
    QueueFull,
    Unchanged,
    PodNotFound,
    NotCached,
    UnknownContainer,
}

/// What handling one sync request did (the WIT `sync-outcome`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOutcome {
    UpToDate,
    PodNotFound,
    GetFailed,
    Recreated,
    WriteFailed,
    Written,
    Deleted,
    DeleteFailed,
}

/// What one batch sync did (the WIT `batch-report`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchReport {
    pub synced: u32,
    pub reconciled: u32,
    pub failed: u32,
}
