//! The only place that generates bindings for the WIT contract.
//!
//! The host implements the newest contract, `kubelet:status@0.1.1`: its imports serve
//! every plugin (a 0.1.0 plugin's imports are a compatible subset, which wasmtime's
//! linker matches by semver), and its types are the host's vocabulary. Plugins written
//! against 0.1.0 export the older `manager` interface, so its exports get bindings too
//! ([`v0_1_0`]), converted to the host's types at the call.
//!
//! Every import may trap (`trappable`): the host traps when the plugin breaches a limit
//! or hands it something no correct plugin would, and answers expected failures with
//! the WIT error types instead.

wasmtime::component::bindgen!({
    world: "status-manager",
    path: "../wit/status@0.1.1",
    imports: { default: trappable },
    additional_derives: [PartialEq, Eq],
});

pub use exports::kubelet::status::manager::{BatchReport, CachedStatus, ManagerError, SyncOutcome, UpdateOutcome};
pub use kubelet::status::types::{SyncRequest, Timestamp};

/// The newest WIT package this host implements.
pub const WIT_PACKAGE: &str = "kubelet:status@0.1.1";

/// The WIT packages this host can run plugins of.
pub const SUPPORTED_PACKAGES: [&str; 2] = ["kubelet:status@0.1.0", "kubelet:status@0.1.1"];

/// The exports of plugins written against `kubelet:status@0.1.0` (logic v1).
pub mod v0_1_0 {
    wasmtime::component::bindgen!({
        world: "status-manager",
        path: "../wit/status@0.1.0",
        additional_derives: [PartialEq, Eq],
    });

    pub use exports::kubelet::status::manager;
}

/// Converts an enum of the 0.1.0 bindings into the same enum of the host's.
macro_rules! convert_enum {
    ($from:ty => $to:ident { $($case:ident),* $(,)? }) => {
        impl From<$from> for $to {
            fn from(value: $from) -> Self {
                match value { $(<$from>::$case => $to::$case),* }
            }
        }
    };
}

convert_enum!(v0_1_0::manager::UpdateOutcome => UpdateOutcome {
    Queued, QueueFull, Unchanged, PodNotFound, NotCached, UnknownContainer,
});
convert_enum!(v0_1_0::manager::SyncOutcome => SyncOutcome {
    UpToDate, PodNotFound, GetFailed, Recreated, WriteFailed, Written, Deleted, DeleteFailed,
});

impl From<v0_1_0::manager::ManagerError> for ManagerError {
    fn from(value: v0_1_0::manager::ManagerError) -> Self {
        use v0_1_0::manager::ManagerError as Old;
        match value {
            Old::InvalidPod(m) => ManagerError::InvalidPod(m),
            Old::InvalidStatus(m) => ManagerError::InvalidStatus(m),
            Old::UnknownRequest(id) => ManagerError::UnknownRequest(id),
            Old::InvalidState(m) => ManagerError::InvalidState(m),
        }
    }
}

impl From<v0_1_0::manager::BatchReport> for BatchReport {
    fn from(r: v0_1_0::manager::BatchReport) -> Self {
        BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed }
    }
}

impl From<v0_1_0::manager::CachedStatus> for CachedStatus {
    fn from(c: v0_1_0::manager::CachedStatus) -> Self {
        CachedStatus { version: c.version, status: c.status }
    }
}

impl From<&SyncRequest> for v0_1_0::kubelet::status::types::SyncRequest {
    fn from(r: &SyncRequest) -> Self {
        v0_1_0::kubelet::status::types::SyncRequest { id: r.id, pod_uid: r.pod_uid.clone(), version: r.version }
    }
}
