//! What the engine keeps of a pod's status: each cached version, what was last written,
//! and the snapshots the host's queue refers to.

use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;

/// A cached status with the per-pod version that keeps stale statuses from reaching
/// the API server, and the pod's name for writing it there.
#[derive(Clone, Debug, PartialEq)]
pub struct VersionedStatus {
    pub status: PodStatus,
    pub version: u64,
    pub pod_name: String,
    pub pod_namespace: String,
    /// Upstream's `podIsFinished` (since 1.27): the status came from TerminatePod, or
    /// followed one. Logic v1 never reads or sets it; it keeps it on each new version of
    /// the pod's status, so a newer logic version that handed over its state finds it
    /// again.
    pub pod_is_finished: bool,
}

/// What a logic version that patches without reading first (v3) last wrote for a pod:
/// the API server's status of `uid` as its answer to the write of `version`. Kept in the
/// state document (an optional field of the status entry) and carried untouched by the
/// versions that do not use it; it is a valid base for the next patch only while the
/// version recorded as written for `uid` is still `version` (see
/// [`crate::Engine::written_base`]), so a write by another version, a forgotten written
/// version (a reconciliation) or another object under the same name makes it void.
#[derive(Clone, Debug, PartialEq)]
pub struct LastWritten {
    /// The object written: the pod's UID, a static pod's mirror pod's.
    pub uid: String,
    /// The status version written.
    pub version: u64,
    /// The API server's status after the write.
    pub status: PodStatus,
    /// The pod's `resourceVersion` after the write, when the version records it (v4):
    /// a pod manager copy with a newer one shows a write that came after this one.
    pub resource_version: Option<String>,
}

/// A status snapshot waiting in the host's queue.
#[derive(Clone, Debug, PartialEq)]
pub struct PendingSync {
    pub pod_uid: String,
    pub status: Arc<VersionedStatus>,
}

#[cfg(test)]
impl VersionedStatus {
    /// `status` at `version` for the pod `ns/p`, in an allocation of its own: what the
    /// tests of the caches keyed by a status's allocation hold them against.
    pub(crate) fn for_tests(status: PodStatus, version: u64) -> Arc<Self> {
        Arc::new(VersionedStatus {
            status,
            version,
            pod_name: "p".into(),
            pod_namespace: "ns".into(),
            pod_is_finished: false,
        })
    }
}
