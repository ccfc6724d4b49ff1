//! What the status-manager plugin's imports reach, as plain Rust behind traits: the API
//! server ([`ApiServer`], with the in-memory store [`MemoryApiServer`] that replay, tests
//! and the embedded API server use), the node's [`PodManager`], [`DeletionSafety`], the
//! [`Clock`] and the [`SyncQueue`], and the host's own view of the node's pods
//! ([`HostView`]) that the plugin's reach guard consults.
//!
//! Nothing here knows wasmtime or the plugin's bindings: the runtime's import impls are
//! thin adapters over these types, so the same backends serve the sandboxed plugin, the
//! native one, replay and the embedded API server.

mod api_server;
mod clock;
pub mod compact_pod;
mod deletion_safety;
pub mod handed_claims;
pub mod host_view;
pub mod patience;
pub mod pod_identity;
mod pod_manager;
mod reach_guard;
pub mod rng;
pub mod status_claims;
mod sync_queue;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use api_server::{
    ApiError, ApiServer, DeleteOptions, FaultyApiServer, InjectedFaults, MemoryApiServer, PodEvent, PodListener,
    Result, StatusPatch, StatusUpdate, StoredStatus,
};
pub use clock::{Clock, SystemClock, Timestamp, VirtualClock};
pub use compact_pod::{CompactPod, CompactPodError, PodField};
pub use deletion_safety::{ContainersStopped, DeletionSafety, FixedDeletionSafety};
pub use host_view::{AcceptedRecord, HostView, NodeReport, PreparedStatus};
pub use pod_identity::{full_name, is_mirror_pod, is_static_pod};
pub use pod_manager::PodManager;
pub use reach_guard::{GuardedApiServer, Refusals};
pub use sync_queue::{BYTES_PER_REQUEST, DEFAULT_CAPACITY, SyncQueue, SyncRequest, Wait};
