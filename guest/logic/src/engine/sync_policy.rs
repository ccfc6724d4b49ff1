//! What a logic version decides in a sync ([`SyncPolicy`]); everything else is the
//! engine's skeleton (upstream has one `syncPod` and one `syncBatch`).
//!
//! The skeleton reads the pod from the API server, drops the status of a pod that was
//! deleted and recreated, has the status written, records the written version and
//! deletes the pod once it may be; a version may write without reading first
//! ([`SyncPolicy::plan_unread`]) and fall back to reading when that does not hold. The
//! batch forgets the written versions of pods that are gone and picks the pods to sync.
//! What a logic version decides itself (how the status is written, when a pod may be
//! deleted, what counts as drift) is its [`SyncPolicy`].
//!
//! A sync never calls the API server itself: it is a resumable task that stops at each
//! call (start, then the unread write, the GET, the write, the DELETE, each optional)
//! and goes on with the answer, so a host can make the call later while the manager
//! serves everything else ([`crate::jobs`] keeps the tasks). The blocking entry points
//! drive the same task, making each call at once ([`Engine::call_api`]), so both see
//! the same imports and calls in the same order.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::{SpecView, normalize_status};

use crate::api_pod::ApiPod;
use crate::engine::Engine;
use crate::error::Result;
use crate::imports::{ApiCall, ApiError, Imports};
use crate::status::VersionedStatus;

/// What a write will do, planned over a pod: nothing, or one call to the API server.
pub enum WritePlan {
    /// There is nothing to send: the pod (as read, or as the pod manager has it) has
    /// the status already. Deletion is decided from it.
    Unchanged(ApiPod),
    /// Send `call`; the reply is handed back with `over`, the pod the call was computed
    /// from (the sync keeps it while the call is out).
    Send { call: ApiCall, over: ApiPod },
}

/// What a write did, once its call was answered.
pub enum Write {
    /// The status was written; the pod as stored after the write.
    Written(ApiPod),
    /// The write failed (logged): the pod waits for a later sync.
    Failed,
}

/// What a write sent without reading the pod first did (a logic version that can, see
/// [`SyncPolicy::plan_unread`]), once its call was answered.
pub enum UnreadWrite {
    /// The status was written; the pod as stored after the write.
    Written(ApiPod),
    /// The pod does not exist on the server.
    NotFound,
    /// The write failed (logged): the pod waits for a later sync.
    Failed,
    /// The shortcut does not hold (the precondition failed: the pod was recreated, or
    /// what the write was computed against was stale): read the pod first, as the
    /// other versions do.
    ReadFirst,
}

/// What a logic version decides in a sync; everything else is the skeleton's.
///
/// A write is planned (the call to make, computed from what the sync knows) and then
/// finished with the call's answer, so that the host can make the call while the
/// manager serves other calls; a blocking caller makes it at once through
/// [`Engine::call_api`].
pub trait SyncPolicy<I: Imports> {
    /// Whether a sync first checks that the status still needs writing under the pod's
    /// own UID (the 2017 `syncPod` did; in 1.27 its callers decide).
    const CHECKS_NEEDS_UPDATE: bool;

    /// Plans writing `status`, the cached status of `uid`, without reading the pod
    /// first, when the version can; None reads first. The default reads first, always.
    fn plan_unread(
        &self,
        _manager: &mut Engine<I>,
        _uid: &str,
        _status: &VersionedStatus,
    ) -> Result<Option<WritePlan>> {
        Ok(None)
    }

    /// Finishes the write [`SyncPolicy::plan_unread`] sent over `over`, with the API
    /// server's `reply`. The default (never reached when `plan_unread` is the default's)
    /// falls back to reading first.
    fn finish_unread(
        &self,
        _manager: &mut Engine<I>,
        _uid: &str,
        _over: ApiPod,
        _status: &VersionedStatus,
        _reply: std::result::Result<String, ApiError>,
    ) -> Result<UnreadWrite> {
        Ok(UnreadWrite::ReadFirst)
    }

    /// Plans writing `status` over `pod`, the API server's pod as just read.
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan>;

    /// Finishes the write [`SyncPolicy::plan_write`] sent over `over`, with the API
    /// server's `reply`.
    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write>;

    /// `canBeDeleted`: whether `pod` (the API server's after a write, or the pod
    /// manager's) may be deleted now that `status` is the cached status.
    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool>;

    /// Whether the API server's status (normalised) holds the cached one, so the batch
    /// has no drift to repair.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool;

    /// `normalizeStatus`, as `needsReconcile` applies it to the API server's status
    /// before comparing; the default is the 2017 kubelet's (through 1.27).
    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        normalize_status(spec, status);
    }
}
