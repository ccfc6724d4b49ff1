//! Planned and suspended syncs: the manager's side of contract 0.2.0, where the host
//! drives each pod's sync one API call at a time.
//!
//! `sync-pod` and `sync-batch` only plan: each returns the pods' syncs ([`PodSync`]),
//! which the manager keeps by ID until the host starts them. A started sync runs the
//! one skeleton ([`crate::sync`]) up to its next API call and is suspended there, owning
//! what it needs to go on, until the host hands back the answer. The blocking entry
//! points of contract 0.1.x are drivers over the same jobs ([`Manager::run_sync_with`]),
//! so there is one code path. Jobs are not part of the state document: a host hands
//! the state over only when none is in flight.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{ManagerError, Result};
use crate::imports::{ApiCall, ApiReply, Imports, Level};
use crate::manager::{BatchReport, Manager, SyncOutcome, VersionedStatus};
use crate::sync::{Flow, Stage, SyncPolicy};

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
    pod_uid: String,
    origin: SyncOrigin,
    state: JobState,
}

enum JobState {
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
struct Held {
    pod_uid: String,
    origin: SyncOrigin,
    status: Arc<VersionedStatus>,
    status_dropped: bool,
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

impl<I: Imports> Manager<I> {
    /// Plans a sync of `pod_uid` writing `target`; it waits for `start_sync`.
    pub fn plan_sync(&mut self, pod_uid: &str, origin: SyncOrigin, target: SyncTarget) -> PodSync {
        let id = self.next_sync_id;
        self.next_sync_id += 1;
        let job = Job { pod_uid: pod_uid.to_string(), origin, state: JobState::Planned(target) };
        self.syncs.insert(id, job);
        PodSync { id, pod_uid: pod_uid.to_string(), origin }
    }

    /// Starts the planned sync `id` with `policy`'s decisions: it checks what it must
    /// and either ends or asks for its first call. An error ends it (logged by origin).
    pub fn start_sync_with<P: SyncPolicy<I>>(&mut self, policy: &P, id: u64) -> Result<SyncStep> {
        let Job { pod_uid, origin, state } = self.take_job(id, |state| matches!(state, JobState::Planned(_)))?;
        let JobState::Planned(target) = state else {
            return Err(ManagerError::UnknownSync(id));
        };
        let status = match self.resolve(&pod_uid, target) {
            Ok(status) => status,
            Err(outcome) => return Ok(SyncStep::Done(outcome)),
        };
        let flow = self.sync_begin(policy, &pod_uid, &status);
        self.settle(id, Held { pod_uid, origin, status, status_dropped: false }, flow)
    }

    /// Hands the suspended sync `id` the answer to its call and runs it on to its next
    /// call or its end, with `policy`'s decisions. A reply of the wrong shape is a
    /// failed call. An error ends the sync (logged by origin).
    pub fn resume_sync_with<P: SyncPolicy<I>>(&mut self, policy: &P, id: u64, reply: ApiReply) -> Result<SyncStep> {
        let Job { pod_uid, origin, state } = self.take_job(id, |state| matches!(state, JobState::Waiting { .. }))?;
        let JobState::Waiting { status, stage, status_dropped } = state else {
            return Err(ManagerError::UnknownSync(id));
        };
        let flow = self.sync_resume(policy, &pod_uid, &status, stage, reply, !status_dropped);
        self.settle(id, Held { pod_uid, origin, status, status_dropped }, flow)
    }

    /// Forgets the sync `id`, planned or suspended; nothing is written for it. False
    /// when it was not known.
    pub fn drop_sync(&mut self, id: u64) -> bool {
        self.syncs.remove(&id).is_some()
    }

    /// How many planned or suspended syncs the manager holds.
    pub fn syncs_in_flight(&self) -> usize {
        self.syncs.len()
    }

    /// Runs the planned sync `id` to its end, making each call at once through
    /// [`SyncPolicy::call`]: the blocking entry points' driver.
    pub fn run_sync_with<P: SyncPolicy<I>>(&mut self, policy: &P, id: u64) -> Result<SyncOutcome> {
        let mut step = self.start_sync_with(policy, id)?;
        loop {
            match step {
                SyncStep::Done(outcome) => return Ok(outcome),
                SyncStep::Call(call) => {
                    let reply = policy.call(self, call);
                    step = self.resume_sync_with(policy, id, reply)?;
                }
            }
        }
    }

    /// Runs `syncs`, planned for one request, to their end in order: the outcome of the
    /// request's own sync (up to date when there is none: its status is gone). The
    /// others' failures are logged and do not stop the rest.
    pub fn run_syncs_with<P: SyncPolicy<I>>(&mut self, policy: &P, syncs: Vec<PodSync>) -> Result<SyncOutcome> {
        let mut outcome = Ok(SyncOutcome::UpToDate);
        for sync in syncs {
            let result = self.run_sync_with(policy, sync.id);
            if sync.origin == SyncOrigin::Request {
                outcome = result;
            }
        }
        outcome
    }

    /// Takes job `id` out of the map while it runs (so no borrow of it spans the run),
    /// if it is in a state `fits`; else it stays and the ID counts as unknown.
    fn take_job(&mut self, id: u64, fits: impl FnOnce(&JobState) -> bool) -> Result<Job> {
        match self.syncs.get(&id) {
            Some(job) if fits(&job.state) => self.syncs.remove(&id).ok_or(ManagerError::UnknownSync(id)),
            _ => Err(ManagerError::UnknownSync(id)),
        }
    }

    /// The status a planned sync of `uid` writes, or the outcome that ends it before
    /// it starts: a pass's sync checks, as the blocking pass did, that the status is
    /// still cached, that a static pod has a mirror pod, and that the version is
    /// unwritten.
    fn resolve(&mut self, uid: &str, target: SyncTarget) -> std::result::Result<Arc<VersionedStatus>, SyncOutcome> {
        match target {
            SyncTarget::Snapshot(status) => Ok(status),
            SyncTarget::LatestIfUnwritten(pod_to_mirror) => {
                // Dropped since: nothing is left to write.
                let status = self.cached(uid).ok_or(SyncOutcome::UpToDate)?;
                let status_uid = self.status_uid(uid, &pod_to_mirror).ok_or(SyncOutcome::PodNotFound)?;
                if self.is_written(&status_uid, status.version) {
                    return Err(SyncOutcome::UpToDate);
                }
                Ok(status)
            }
        }
    }

    /// After a step of the started sync `id`: keeps it suspended for its call, or lets
    /// it go, logging an error as the blocking loops logged a pod's failed sync (a
    /// request's is its caller's to report).
    fn settle(&mut self, id: u64, held: Held, flow: Result<Flow>) -> Result<SyncStep> {
        let Held { pod_uid, origin, status, status_dropped } = held;
        match flow {
            Ok(Flow::Done(outcome)) => Ok(SyncStep::Done(outcome)),
            Ok(Flow::Wait(stage, call)) => {
                let state = JobState::Waiting { status, stage, status_dropped };
                self.syncs.insert(id, Job { pod_uid, origin, state });
                Ok(SyncStep::Call(call))
            }
            Err(e) => {
                match origin {
                    SyncOrigin::Request => {}
                    SyncOrigin::Pass => self.log(Level::Error, || format!("sync of pod {pod_uid} failed: {e}")),
                    SyncOrigin::Batch => self.log(Level::Error, || format!("batch sync of pod {pod_uid} failed: {e}")),
                }
                Err(e)
            }
        }
    }
}
