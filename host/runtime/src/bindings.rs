// Generated bindings: wasmtime's helpers (instantiation, accessors) carry no docs; the
// contract's own items carry the WIT documentation.
#![allow(missing_docs)]

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
    path: "../../wit/status@0.1.1",
    imports: { default: trappable },
    additional_derives: [PartialEq, Eq],
});

pub use exports::kubelet::status::manager::{BatchReport, CachedStatus, ManagerError, SyncOutcome, UpdateOutcome};
/// The host's vocabulary for what crosses the boundary as plain records: the backends'
/// own types, converted to and from the generated ones at the boundary.
pub use podstatus_backends::{SyncRequest, Timestamp};

/// A version of the `kubelet:status` contract that this host runs plugins of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contract {
    /// `kubelet:status@0.1.0`: the seed's operations (logic v1).
    V0_1_0,
    /// `kubelet:status@0.1.1`: adds `set-container-startup` (logic v2).
    V0_1_1,
}

impl Contract {
    /// Every version this host runs, oldest first.
    pub const ALL: [Contract; 2] = [Contract::V0_1_0, Contract::V0_1_1];
    /// The version whose imports and types the host implements (older plugins import
    /// a compatible subset, which wasmtime's linker matches by semver).
    pub const NEWEST: Contract = Contract::V0_1_1;

    /// The WIT package, e.g. `kubelet:status@0.1.1`.
    pub fn package(self) -> &'static str {
        match self {
            Contract::V0_1_0 => "kubelet:status@0.1.0",
            Contract::V0_1_1 => "kubelet:status@0.1.1",
        }
    }

    /// Whether plugins of this version export `set-container-startup`.
    pub fn has_container_startup(self) -> bool {
        self >= Contract::V0_1_1
    }
}

impl std::fmt::Display for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.package())
    }
}

/// One thing per contract version (a pre-instantiated component, an instance's
/// exports), so that the version is said once, by the variant.
#[derive(Clone)]
pub(crate) enum PerContract<Newest, V010> {
    /// `kubelet:status@0.1.1`.
    V0_1_1(Newest),
    /// `kubelet:status@0.1.0`.
    V0_1_0(V010),
}

impl<Newest, V010> PerContract<Newest, V010> {
    /// The version this is for.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            PerContract::V0_1_1(_) => Contract::V0_1_1,
            PerContract::V0_1_0(_) => Contract::V0_1_0,
        }
    }
}

/// The exports of plugins written against `kubelet:status@0.1.0` (logic v1).
pub mod v0_1_0 {
    wasmtime::component::bindgen!({
        world: "status-manager",
        path: "../../wit/status@0.1.0",
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

impl From<&SyncRequest> for kubelet::status::types::SyncRequest {
    fn from(r: &SyncRequest) -> Self {
        kubelet::status::types::SyncRequest { id: r.id, pod_uid: r.pod_uid.clone(), version: r.version }
    }
}

impl From<kubelet::status::types::SyncRequest> for SyncRequest {
    fn from(r: kubelet::status::types::SyncRequest) -> Self {
        SyncRequest { id: r.id, pod_uid: r.pod_uid, version: r.version }
    }
}

impl From<Timestamp> for kubelet::status::types::Timestamp {
    fn from(t: Timestamp) -> Self {
        kubelet::status::types::Timestamp { seconds: t.seconds, nanoseconds: t.nanoseconds }
    }
}
