// Generated bindings: wasmtime's helpers (instantiation, accessors) carry no docs; the
// contract's own items carry the WIT documentation.
#![allow(missing_docs)]

//! The only place that generates bindings for the WIT contract.
//!
//! The host's vocabulary is the newest contract, `kubelet:status@0.2.0`: its imports
//! (pod manager, deletion safety, clock, logging, sync queue) are the host's, and its
//! types are the host's types. Contract 0.1.1 imports one more interface, `api-server`
//! (its plugins call the API server themselves), and names the same imports under its
//! own version: [`v0_1_1`] generates them, and the host serves them by forwarding to
//! the newest ones. Plugins written against 0.1.0 import a compatible subset of 0.1.1's
//! imports (wasmtime's linker matches them by semver); their older `manager` export
//! gets bindings too ([`v0_1_0`]). Every older export is converted to the host's types
//! at the call.
//!
//! Contract 0.2.1 only adds three `manager` functions (in-place resize) to 0.2.0, and
//! the host keeps 0.2.0 as its vocabulary rather than moving to 0.2.1. wasmtime 48
//! looks names up by semver in both directions (`NameMap::get` in wasmtime-environ: an
//! exact name first, else the newest name of the same `major.minor` track for 0.x), for
//! a linker's definitions as for a component's exports. So a 0.2.1 plugin's imports
//! (`kubelet:status/pod-manager@0.2.1`, ...) are served by the 0.2.0 definitions the
//! linker already has, and 0.2.0's bindings find and type-check every 0.2.0 function in
//! its `manager@0.2.1` export (the types match structurally). Only the three new
//! functions come from a 0.2.1 `bindgen!` ([`v0_2_1`]), loaded beside 0.2.0's from the
//! same instance. Moving the vocabulary to 0.2.1 instead would not let the host load a
//! 0.2.0 plugin with 0.2.1's bindings (they require the new functions), so it would
//! need 0.2.0's bindings and a conversion of every one of its exports anyway: the
//! larger change, for no new capability.
//!
//! Every import may trap (`trappable`): the host traps when the plugin breaches a limit
//! or hands it something no correct plugin would, and answers expected failures with
//! the WIT error types instead.

wasmtime::component::bindgen!({
    world: "status-manager",
    path: "../../wit/status@0.2.0",
    imports: { default: trappable },
    additional_derives: [PartialEq, Eq],
});

pub use exports::kubelet::status::manager::{
    BatchPlan, BatchReport, BatchSlice, CachedStatus, ManagerError, PodSync, SyncOrigin, SyncOutcome, SyncStep,
    UpdateOutcome,
};
pub use kubelet::status::api::{
    ApiCall, ApiError, ApiReply, DeleteOptions, PodDeletion, PodName, StatusPatch, StatusUpdate,
};
/// The host's vocabulary for what crosses the boundary as plain records: the backends'
/// own types, converted to and from the generated ones at the boundary.
pub use podstatus_backends::{SyncRequest, Timestamp};
/// Which in-place resize condition a `set-`/`clear-pod-resize-condition` call names:
/// the one type the host takes from 0.2.1's bindings (0.2.0 has none).
pub use v0_2_1::exports::kubelet::status::manager::ResizeCondition;

/// A version of the `kubelet:status` contract that this host runs plugins of.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Contract {
    /// `kubelet:status@0.1.0`: the seed's operations (logic v1).
    V0_1_0,
    /// `kubelet:status@0.1.1`: adds `set-container-startup` (logic v2).
    V0_1_1,
    /// `kubelet:status@0.2.0`: the plugin no longer calls the API server; syncs are
    /// state machines the host drives, so syncs of different pods overlap.
    V0_2_0,
    /// `kubelet:status@0.2.1`: adds the in-place resize calls (logic v4).
    V0_2_1,
}

impl Contract {
    /// Every version this host runs, oldest first.
    pub const ALL: [Contract; 4] = [Contract::V0_1_0, Contract::V0_1_1, Contract::V0_2_0, Contract::V0_2_1];
    /// The newest version this host serves (its imports are 0.2.0's, which 0.2.1's
    /// match by semver; see the module's docs).
    pub const NEWEST: Contract = Contract::V0_2_1;

    /// The WIT package, e.g. `kubelet:status@0.1.1`.
    pub fn package(self) -> &'static str {
        match self {
            Contract::V0_1_0 => "kubelet:status@0.1.0",
            Contract::V0_1_1 => "kubelet:status@0.1.1",
            Contract::V0_2_0 => "kubelet:status@0.2.0",
            Contract::V0_2_1 => "kubelet:status@0.2.1",
        }
    }

    /// Whether plugins of this version export `set-container-startup` (a 0.2.0
    /// plugin whose logic has no startup probes answers it `unsupported`).
    pub fn has_container_startup(self) -> bool {
        self >= Contract::V0_1_1
    }

    /// Whether syncs are host-driven state machines (`start-sync`, `resume-sync`), so
    /// that the plugin is never entered while an API call is out and syncs overlap.
    /// Older plugins call the API server inside `sync-pod`, serially.
    pub fn has_split_syncs(self) -> bool {
        self >= Contract::V0_2_0
    }

    /// Whether plugins of this version export the in-place resize calls
    /// (`set-pod-resize-condition`, `clear-pod-resize-condition`,
    /// `get-pod-resize-conditions`); a 0.2.1 plugin whose logic has no in-place resize
    /// answers them `unsupported`.
    pub fn has_resize(self) -> bool {
        self >= Contract::V0_2_1
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
pub(crate) enum PerContract<V020, V011, V010> {
    /// `kubelet:status@0.2.0`.
    V0_2_0(V020),
    /// `kubelet:status@0.1.1`.
    V0_1_1(V011),
    /// `kubelet:status@0.1.0`.
    V0_1_0(V010),
}

impl<V020, V011, V010> PerContract<V020, V011, V010> {
    /// The version this is for.
    pub(crate) fn contract(&self) -> Contract {
        match self {
            PerContract::V0_2_0(_) => Contract::V0_2_0,
            PerContract::V0_1_1(_) => Contract::V0_1_1,
            PerContract::V0_1_0(_) => Contract::V0_1_0,
        }
    }
}

/// Plugins written against `kubelet:status@0.1.1` (logic v2 and v3 before 0.2.0): their
/// imports, which the host serves by forwarding to the newest ones (and `api-server`,
/// which only they import), and their exports.
pub mod v0_1_1 {
    wasmtime::component::bindgen!({
        world: "status-manager",
        path: "../../wit/status@0.1.1",
        imports: { default: trappable },
        additional_derives: [PartialEq, Eq],
    });

    pub use exports::kubelet::status::manager;
}

/// The resize functions of plugins written against `kubelet:status@0.2.1` (logic v4):
/// the host calls every other export of such a plugin through 0.2.0's bindings (see the
/// module's docs), and serves its imports with 0.2.0's.
pub mod v0_2_1 {
    wasmtime::component::bindgen!({
        world: "status-manager",
        path: "../../wit/status@0.2.1",
        additional_derives: [PartialEq, Eq],
    });

    pub use exports::kubelet::status::manager;
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

/// Converts what an older contract's `manager` export returns (`$old` is its generated
/// module) into the host's types: the same shapes, minus what 0.2.0 added.
macro_rules! convert_manager_types {
    ($old:path) => {
        const _: () = {
            use $old as old;

            impl From<old::UpdateOutcome> for UpdateOutcome {
                fn from(value: old::UpdateOutcome) -> Self {
                    match value {
                        old::UpdateOutcome::Queued => UpdateOutcome::Queued,
                        old::UpdateOutcome::QueueFull => UpdateOutcome::QueueFull,
                        old::UpdateOutcome::Unchanged => UpdateOutcome::Unchanged,
                        old::UpdateOutcome::PodNotFound => UpdateOutcome::PodNotFound,
                        old::UpdateOutcome::NotCached => UpdateOutcome::NotCached,
                        old::UpdateOutcome::UnknownContainer => UpdateOutcome::UnknownContainer,
                    }
                }
            }

            impl From<old::SyncOutcome> for SyncOutcome {
                fn from(value: old::SyncOutcome) -> Self {
                    match value {
                        old::SyncOutcome::UpToDate => SyncOutcome::UpToDate,
                        old::SyncOutcome::PodNotFound => SyncOutcome::PodNotFound,
                        old::SyncOutcome::GetFailed => SyncOutcome::GetFailed,
                        old::SyncOutcome::Recreated => SyncOutcome::Recreated,
                        old::SyncOutcome::WriteFailed => SyncOutcome::WriteFailed,
                        old::SyncOutcome::Written => SyncOutcome::Written,
                        old::SyncOutcome::Deleted => SyncOutcome::Deleted,
                        old::SyncOutcome::DeleteFailed => SyncOutcome::DeleteFailed,
                    }
                }
            }

            impl From<old::ManagerError> for ManagerError {
                fn from(value: old::ManagerError) -> Self {
                    match value {
                        old::ManagerError::InvalidPod(m) => ManagerError::InvalidPod(m),
                        old::ManagerError::InvalidStatus(m) => ManagerError::InvalidStatus(m),
                        old::ManagerError::UnknownRequest(id) => ManagerError::UnknownRequest(id),
                        old::ManagerError::InvalidState(m) => ManagerError::InvalidState(m),
                    }
                }
            }

            impl From<old::BatchReport> for BatchReport {
                fn from(r: old::BatchReport) -> Self {
                    BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed }
                }
            }

            impl From<old::CachedStatus> for CachedStatus {
                fn from(c: old::CachedStatus) -> Self {
                    CachedStatus { version: c.version, status: c.status }
                }
            }
        };
    };
}

convert_manager_types!(v0_1_0::manager);

impl From<v0_2_1::manager::ManagerError> for ManagerError {
    fn from(value: v0_2_1::manager::ManagerError) -> Self {
        use v0_2_1::manager::ManagerError as E;
        match value {
            E::InvalidPod(m) => ManagerError::InvalidPod(m),
            E::InvalidStatus(m) => ManagerError::InvalidStatus(m),
            E::UnknownRequest(id) => ManagerError::UnknownRequest(id),
            E::UnknownSync(id) => ManagerError::UnknownSync(id),
            E::Unsupported(m) => ManagerError::Unsupported(m),
            E::InvalidState(m) => ManagerError::InvalidState(m),
        }
    }
}
convert_manager_types!(v0_1_1::manager);

impl From<&SyncRequest> for v0_1_0::kubelet::status::types::SyncRequest {
    fn from(r: &SyncRequest) -> Self {
        v0_1_0::kubelet::status::types::SyncRequest { id: r.id, pod_uid: r.pod_uid.clone(), version: r.version }
    }
}

impl From<&SyncRequest> for v0_1_1::kubelet::status::types::SyncRequest {
    fn from(r: &SyncRequest) -> Self {
        v0_1_1::kubelet::status::types::SyncRequest { id: r.id, pod_uid: r.pod_uid.clone(), version: r.version }
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
