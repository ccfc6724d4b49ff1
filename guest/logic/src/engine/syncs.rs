//! One pod's sync as the engine runs it: planned, started, suspended at each API call
//! and resumed with its answer (contract 0.2.0's split syncs), or run to its end at
//! once (the blocking entry points, over the same jobs), with a [`SyncPolicy`]'s
//! decisions.

use std::sync::Arc;

use podstatus_core::PodMeta;

use super::Engine;
use crate::api_pod::ApiPod;
use crate::engine::sync_policy::{SyncPolicy, UnreadWrite, Write, WritePlan};
use crate::error::{ManagerError, Result};
use crate::imports::{ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level};
use crate::jobs::{Flow, Held, Job, JobState, PodSync, Stage, SyncOrigin, SyncStep, SyncTarget};
use crate::outcomes::SyncOutcome;
use crate::status::VersionedStatus;

impl<I: Imports> Engine<I> {
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
                    let reply = self.call_api(call);
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

impl<I: Imports> Engine<I> {
    /// Makes `call` at once through the imports (the blocking entry points' calls).
    pub fn call_api(&mut self, call: ApiCall) -> ApiReply {
        match call {
            ApiCall::GetPod { namespace, name } => ApiReply::Pod(self.imports.get_pod(&namespace, &name)),
            ApiCall::UpdatePodStatus(update) => ApiReply::Pod(self.imports.update_pod_status(update)),
            ApiCall::PatchPodStatus(patch) => ApiReply::Pod(self.imports.patch_pod_status(patch)),
            ApiCall::DeletePod { namespace, name, options } => {
                ApiReply::Deleted(self.imports.delete_pod(&namespace, &name, options))
            }
        }
    }

    /// `syncPod`, up to its first call: writing `status`, the cached status of `uid`,
    /// to the API server and deleting the pod if `policy` says it may be.
    pub(crate) fn sync_begin<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
    ) -> Result<Flow> {
        if P::CHECKS_NEEDS_UPDATE && !self.needs_update(policy, uid, status)? {
            self.log(Level::Debug, || format!("status for pod {uid} is up-to-date; skipping"));
            return Ok(Flow::Done(SyncOutcome::UpToDate));
        }
        match policy.plan_unread(self, uid, status)? {
            None => Ok(read(status)),
            Some(WritePlan::Unchanged(pod)) => self.written(policy, uid, status, pod, SyncOutcome::UpToDate, true),
            Some(WritePlan::Send { call, over }) => Ok(Flow::Wait(Stage::Unread { over }, call)),
        }
    }

    /// `syncPod`, from the answer to the call it waited for at `stage` to its next call
    /// or its end. `record`: whether the written version may be recorded (not when the
    /// pod's status was dropped while the call was out: its versions start again).
    pub(crate) fn sync_resume<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
        stage: Stage,
        reply: ApiReply,
        record: bool,
    ) -> Result<Flow> {
        match stage {
            Stage::Unread { over } => match policy.finish_unread(self, uid, over, status, reply.into_pod())? {
                UnreadWrite::Written(pod) => self.written(policy, uid, status, pod, SyncOutcome::Written, record),
                UnreadWrite::NotFound => Ok(Flow::Done(SyncOutcome::PodNotFound)),
                UnreadWrite::Failed => Ok(Flow::Done(SyncOutcome::WriteFailed)),
                UnreadWrite::ReadFirst => Ok(read(status)),
            },
            Stage::Get => self.got(policy, uid, status, reply.into_pod(), record),
            Stage::Write { over } => match policy.finish_write(self, over, status, reply.into_pod())? {
                Write::Written(pod) => self.written(policy, uid, status, pod, SyncOutcome::Written, record),
                Write::Failed => Ok(Flow::Done(SyncOutcome::WriteFailed)),
            },
            Stage::Delete { pod } => Ok(Flow::Done(self.deleted(uid, &pod, reply.into_deleted()))),
        }
    }

    /// The sync's read answered: drops the status of a pod that was deleted and
    /// recreated, else plans `policy`'s write over the pod as read.
    fn got<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
        record: bool,
    ) -> Result<Flow> {
        let (namespace, name) = (&status.pod_namespace, &status.pod_name);
        let pod_json = match reply {
            Ok(json) => json,
            Err(ApiError::NotFound(_)) => {
                // A deleted pod's status is cleared by remove-orphaned-statuses.
                self.log(Level::Debug, || format!("pod {namespace}/{name} ({uid}) does not exist on the server"));
                return Ok(Flow::Done(SyncOutcome::PodNotFound));
            }
            Err(e) => {
                self.log(Level::Warn, || format!("failed to get pod {namespace}/{name} ({uid}): {}", e.message()));
                return Ok(Flow::Done(SyncOutcome::GetFailed));
            }
        };
        let pod = ApiPod::parse(pod_json, || "API server's pod".into())?;

        let translated = self.imports.translate_pod_uid(&pod.view.metadata.uid);
        if !translated.is_empty() && translated != uid {
            self.log(Level::Info, || {
                format!(
                    "pod {} was deleted and then recreated, skipping status update; old UID {uid}, new UID {translated}",
                    pod.view.full_name()
                )
            });
            self.drop_status(uid);
            return Ok(Flow::Done(SyncOutcome::Recreated));
        }

        match policy.plan_write(self, pod, status)? {
            WritePlan::Unchanged(pod) => self.written(policy, uid, status, pod, SyncOutcome::UpToDate, record),
            WritePlan::Send { call, over } => Ok(Flow::Wait(Stage::Write { over }, call)),
        }
    }

    /// The status is in the API server (`outcome` says whether this sync wrote it):
    /// records the written version and plans deleting `pod` (the API server's after the
    /// write, or the pod manager's when nothing was sent) if `policy` says it may be.
    fn written<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
        pod: ApiPod,
        outcome: SyncOutcome,
        record: bool,
    ) -> Result<Flow> {
        if record {
            self.set_api_version(&pod.view.metadata.uid, status.version);
        } else {
            self.log(Level::Debug, || {
                format!("status of pod {uid} was dropped during its sync; version {} is not recorded", status.version)
            });
        }
        if !policy.can_be_deleted(self, &pod, status)? {
            return Ok(Flow::Done(outcome));
        }
        let pod = pod.view;
        let call = ApiCall::DeletePod {
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            options: DeleteOptions {
                // A newly created pod of the same name must never be deleted.
                uid_precondition: Some(pod.metadata.uid.clone()),
                grace_period_seconds: Some(0),
            },
        };
        Ok(Flow::Wait(Stage::Delete { pod }, call))
    }

    /// The sync's delete of `pod` answered.
    fn deleted(&mut self, uid: &str, pod: &PodMeta, reply: std::result::Result<(), ApiError>) -> SyncOutcome {
        match reply {
            Ok(()) => {
                self.log(Level::Info, || {
                    format!("pod {} fully terminated and removed from the API server", pod.full_name())
                });
                self.drop_status(uid);
                SyncOutcome::Deleted
            }
            Err(e) => {
                self.log(Level::Warn, || format!("failed to delete pod {}: {}", pod.full_name(), e.message()));
                SyncOutcome::DeleteFailed
            }
        }
    }
}

/// The sync's read: the GET of the pod `status` was cached for.
fn read(status: &VersionedStatus) -> Flow {
    let call = ApiCall::GetPod { namespace: status.pod_namespace.clone(), name: status.pod_name.clone() };
    Flow::Wait(Stage::Get, call)
}
