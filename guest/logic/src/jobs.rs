//! Planned and suspended syncs: the manager's side of contract 0.2.0, where the host
//! drives each pod's sync one API call at a time.
//!
//! `sync-pod` and `sync-batch` only plan: each returns the pods' syncs ([`PodSync`]),
//! which the manager keeps by ID until the host starts them. A started sync runs the
//! one skeleton (the engine's `syncs`) up to its next API call and is suspended there, owning
//! what it needs to go on, until the host hands back the answer. The blocking entry
//! points of contract 0.1.x are drivers over the same jobs ([`crate::Engine::run_sync_with`]),
//! so there is one code path. Jobs are not part of the state document: a host hands
//! the state over only when none is in flight.

use std::collections::BTreeMap;
use std::sync::Arc;

use podstatus_core::PodMeta;

use crate::api_pod::ApiPod;
use crate::imports::ApiCall;
use crate::outcomes::{BatchReport, SyncOutcome};
use crate::status::VersionedStatus;

/// One pod's sync, planned and waiting to be started (the WIT `pod-sync`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSync {
    /// Names the sync in `start_sync`, `resume_sync` and `drop_sync`; unique for the
    /// manager's lifetime.
    pub id: u64,
    /// The pod whose status it writes (a static pod's own UID).
    pub pod_uid: String,
    /// Why it was planned.
    pub origin: SyncOrigin,
}

/// Why a pod's sync was planned (the WIT `sync-origin`); it also says how a failure of
/// the sync is logged, as the blocking loops logged it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncOrigin {
    /// For the pod of a request handed to `sync_pod`: its outcome is the request's, and
    /// its failure the caller's to report.
    Request,
    /// For another pod, tried by the same request's pass (logic v2 and v3).
    Pass,
    /// Chosen by the batch sync.
    Batch,
}

/// Where a sync stands after a step (the WIT `sync-step`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyncStep {
    /// The sync is suspended until this call's answer is handed to `resume_sync`.
    Call(ApiCall),
    /// The sync is over; its ID is now unknown.
    Done(SyncOutcome),
}

/// Which part of a batch sync one planning call decides (the WIT `batch-slice`): a host
/// that must keep serving calls asks for a batch in slices, so that deciding over
/// thousands of pods never holds the manager for long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchSlice {
    /// Decide the cached statuses after this pod UID (bytewise); None begins a batch.
    pub after: Option<String>,
    /// Decide at most this many (0 counts as 1).
    pub max_pods: usize,
}

impl BatchSlice {
    /// The whole batch in one slice (the blocking entry points' batch).
    pub const WHOLE: BatchSlice = BatchSlice { after: None, max_pods: usize::MAX };

    /// The first slice of a batch, deciding at most `max_pods`.
    pub fn first(max_pods: usize) -> BatchSlice {
        BatchSlice { after: None, max_pods }
    }
}

/// What one batch sync, or one slice of it, decided (the WIT `batch-plan`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchPlan {
    /// What the batch found; `failed` counts only the pods skipped while deciding.
    pub report: BatchReport,
    /// The syncs to run, in the order the blocking batch runs them (UID order).
    pub syncs: Vec<PodSync>,
    /// The last pod UID this slice decided, when cached statuses come after it: the
    /// next slice's `after`. None once the batch is over.
    pub next: Option<String>,
}

/// What a planned sync will write.
#[derive(Clone, Debug)]
pub enum SyncTarget {
    /// This status snapshot (logic v1's request, every version's batch).
    Snapshot(Arc<VersionedStatus>),
    /// The pod's latest status when the sync starts, unless that version is written
    /// already (logic v2's pass). The pass's static-to-mirror pod UIDs, read once for
    /// the whole pass.
    LatestIfUnwritten(Arc<BTreeMap<String, String>>),
}

/// A sync the manager holds: planned, or suspended in a call.
pub(crate) struct Job {
    pub(crate) pod_uid: String,
    pub(crate) origin: SyncOrigin,
    pub(crate) state: JobState,
}

/// Where a held sync stands.
pub(crate) enum JobState {
    /// Not started yet.
    Planned(SyncTarget),
    /// Suspended until the answer to its call comes.
    Waiting {
        /// The status it writes, fixed when it started.
        status: Arc<VersionedStatus>,
        stage: Stage,
        /// The pod's status was dropped while the call was out: its versions start
        /// again, so this sync's version must not be recorded as written.
        status_dropped: bool,
    },
}

/// A started sync while it runs, out of the map.
pub(crate) struct Held {
    pub(crate) pod_uid: String,
    pub(crate) origin: SyncOrigin,
    pub(crate) status: Arc<VersionedStatus>,
    pub(crate) status_dropped: bool,
}

impl Job {
    /// Notes that `uid`'s cached status was dropped, if this job waits for a call of
    /// that pod (a planned job has fixed nothing yet; the running one is not held).
    pub(crate) fn note_status_dropped(&mut self, uid: &str) {
        if let JobState::Waiting { status_dropped, .. } = &mut self.state
            && self.pod_uid == uid
        {
            *status_dropped = true;
        }
    }
}

/// Where a started sync waits while its call is out: what it needs to go on, owned, so
/// that nothing of the manager stays borrowed while the host makes the call.
pub(crate) enum Stage {
    /// The write sent without reading (v3's) is out; `over` is what it was computed
    /// from.
    Unread { over: ApiPod },
    /// The GET of the pod is out.
    Get,
    /// The write over the pod as read is out; `over` is that pod.
    Write { over: ApiPod },
    /// The DELETE of `pod` is out.
    Delete { pod: Box<PodMeta> },
}

/// Where a sync goes after a step: it waits for a call, or it is over.
pub(crate) enum Flow {
    /// Make `call` and resume the sync at `Stage` with its answer.
    Wait(Stage, ApiCall),
    /// The sync is over.
    Done(SyncOutcome),
}
