//! One pod's sync and the periodic batch sync, as one skeleton for every logic version
//! (upstream has one `syncPod` and one `syncBatch`).
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
//! drive the same task, making each call at once ([`SyncPolicy::call`]), so both see
//! the same imports and calls in the same order.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;

use crate::error::{InvalidPod, Result};
use crate::imports::{ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level};
use crate::jobs::{BatchPlan, BatchSlice, SyncOrigin, SyncTarget};
use crate::manager::{BatchReport, Manager, SyncOutcome, VersionedStatus};
use crate::normalize::normalize_status;
use crate::pod::PodView;

/// A pod as the API server (or the pod manager) returned it: parsed, and its JSON for
/// the imports that take a pod.
pub struct ApiPod {
    /// Boxed: a sync keeps the pod while its call is out, and passes it along in small
    /// enums.
    pub view: Box<PodView>,
    pub json: String,
}

impl ApiPod {
    /// Parses `json`, a pod that must have a UID; `what` names it in the error.
    pub fn parse(json: String, what: impl FnOnce() -> String) -> Result<ApiPod> {
        let view = PodView::parse_with_uid(&json).invalid_pod(what)?;
        Ok(ApiPod { view: Box::new(view), json })
    }
}

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
/// [`SyncPolicy::call`].
pub trait SyncPolicy<I: Imports> {
    /// Whether a sync first checks that the status still needs writing under the pod's
    /// own UID (the 2017 `syncPod` did; in 1.27 its callers decide).
    const CHECKS_NEEDS_UPDATE: bool;

    /// Plans writing `status`, the cached status of `uid`, without reading the pod
    /// first, when the version can; None reads first. The default reads first, always.
    fn plan_unread(
        &self,
        _manager: &mut Manager<I>,
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
        _manager: &mut Manager<I>,
        _uid: &str,
        _over: ApiPod,
        _status: &VersionedStatus,
        _reply: std::result::Result<String, ApiError>,
    ) -> Result<UnreadWrite> {
        Ok(UnreadWrite::ReadFirst)
    }

    /// Plans writing `status` over `pod`, the API server's pod as just read.
    fn plan_write(&self, manager: &mut Manager<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan>;

    /// Finishes the write [`SyncPolicy::plan_write`] sent over `over`, with the API
    /// server's `reply`.
    fn finish_write(
        &self,
        manager: &mut Manager<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write>;

    /// `canBeDeleted`: whether `pod` (the API server's after a write, or the pod
    /// manager's) may be deleted now that `status` is the cached status.
    fn can_be_deleted(&self, manager: &mut Manager<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool>;

    /// Whether the API server's status (normalised) holds the cached one, so the batch
    /// has no drift to repair.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool;

    /// Makes `call` at once through the imports, for the blocking entry points. The
    /// default makes v1's calls ([`Manager::call_api`]); a version that patches makes
    /// its patches itself.
    fn call(&self, manager: &mut Manager<I>, call: ApiCall) -> ApiReply {
        manager.call_api(call)
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
    Delete { pod: Box<PodView> },
}

/// Where a sync goes after a step: it waits for a call, or it is over.
pub(crate) enum Flow {
    /// Make `call` and resume the sync at `Stage` with its answer.
    Wait(Stage, ApiCall),
    /// The sync is over.
    Done(SyncOutcome),
}

impl<I: Imports> Manager<I> {
    /// Makes `call` at once through v1's imports (which have no patch: a patch fails
    /// as a refused call would).
    pub fn call_api(&mut self, call: ApiCall) -> ApiReply {
        match call {
            ApiCall::GetPod { namespace, name } => ApiReply::Pod(self.imports.get_pod(&namespace, &name)),
            ApiCall::UpdatePodStatus(update) => ApiReply::Pod(self.imports.update_pod_status(update)),
            ApiCall::PatchPodStatus(_) => {
                ApiReply::Pod(Err(ApiError::Other("these imports cannot patch a pod's status".into())))
            }
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
    fn deleted(&mut self, uid: &str, pod: &PodView, reply: std::result::Result<(), ApiError>) -> SyncOutcome {
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

    /// `syncBatch(true)`, decided, for the slice `slice` of the cached statuses (see
    /// [`BatchSlice`]): the first slice forgets the written versions of pods that are
    /// gone; every slice forgets the written versions of those whose API server status
    /// drifted, and plans a sync, in UID order, of every cached status it decides that
    /// is unwritten, whose pod can be deleted, or whose API server status has drifted
    /// from it. Slices asked for back to back decide exactly what one whole batch does.
    pub fn plan_sync_batch_with<P: SyncPolicy<I>>(&mut self, policy: &P, slice: &BatchSlice) -> BatchPlan {
        let translations = self.imports.get_uid_translations();
        let pod_to_mirror: BTreeMap<String, String> = translations.pod_to_mirror.into_iter().collect();
        if slice.after.is_none() {
            let mirrors: BTreeSet<String> = translations.mirror_to_pod.into_iter().map(|(mirror, _)| mirror).collect();
            let gone: Vec<String> = self
                .api_versions
                .keys()
                .filter(|uid| !self.statuses.contains_key(*uid) && !mirrors.contains(*uid))
                .cloned()
                .collect();
            for uid in &gone {
                self.drop_api_version(uid);
            }
        }

        let after = match &slice.after {
            Some(uid) => Bound::Excluded(uid.as_str()),
            None => Bound::Unbounded,
        };
        let mut decided = self.statuses.range::<str, _>((after, Bound::Unbounded));
        let cached: Vec<(String, Arc<VersionedStatus>)> = decided
            .by_ref()
            .take(slice.max_pods.max(1))
            .map(|(uid, status)| (uid.clone(), Arc::clone(status)))
            .collect();
        let next = match decided.next() {
            Some(_) => cached.last().map(|(uid, _)| uid.clone()),
            None => None,
        };

        let mut report = BatchReport::default();
        let mut updates = Vec::new();
        for (uid, status) in cached {
            let Some(status_uid) = self.status_uid(&uid, &pod_to_mirror) else {
                continue;
            };
            let decision = self
                .needs_update(policy, &status_uid, &status)
                .and_then(|update| Ok((update, !update && self.needs_reconcile(policy, &uid, &status.status)?)));
            match decision {
                Ok((true, _)) => updates.push((uid, status)),
                Ok((false, true)) => {
                    // Forget the written version to force the write; the sync records it
                    // again once the write succeeds.
                    self.drop_api_version(&status_uid);
                    report.reconciled += 1;
                    updates.push((uid, status));
                }
                Ok((false, false)) => {}
                Err(e) => {
                    report.failed += 1;
                    self.log(Level::Error, || format!("batch sync skips pod {uid}: {e}"));
                }
            }
        }

        let mut syncs = Vec::with_capacity(updates.len());
        for (uid, status) in updates {
            report.synced += 1;
            syncs.push(self.plan_sync(&uid, SyncOrigin::Batch, SyncTarget::Snapshot(status)));
        }
        BatchPlan { report, syncs, next }
    }

    /// `syncBatch(true)`, run to its end: [`Manager::plan_sync_batch_with`], then each
    /// planned sync with its calls made at once; one that fails (logged) counts as
    /// failed.
    pub fn sync_batch_with<P: SyncPolicy<I>>(&mut self, policy: &P) -> BatchReport {
        let BatchPlan { mut report, syncs, .. } = self.plan_sync_batch_with(policy, &BatchSlice::WHOLE);
        for sync in syncs {
            if self.run_sync_with(policy, sync.id).is_err() {
                report.failed += 1;
            }
        }
        report
    }

    /// Static pod UID to mirror pod UID ("" when it has none yet).
    pub fn pod_to_mirror(&mut self) -> BTreeMap<String, String> {
        self.imports.get_uid_translations().pod_to_mirror.into_iter().collect()
    }

    /// The UID the API server knows `uid`'s status under (a static pod's mirror pod's),
    /// or None for a static pod without mirror pod, which cannot be written yet.
    pub fn status_uid(&mut self, uid: &str, pod_to_mirror: &BTreeMap<String, String>) -> Option<String> {
        match pod_to_mirror.get(uid) {
            Some(mirror) if mirror.is_empty() => {
                self.log(Level::Debug, || format!("static pod {uid} has no mirror pod yet; skipping"));
                None
            }
            Some(mirror) => Some(mirror.clone()),
            None => Some(uid.to_string()),
        }
    }

    /// `needsUpdate`: `status` is unwritten for `uid` (a mirror pod's UID for a static
    /// pod), or the pod can be deleted.
    fn needs_update<P: SyncPolicy<I>>(&mut self, policy: &P, uid: &str, status: &VersionedStatus) -> Result<bool> {
        if !self.is_written(uid, status.version) {
            return Ok(true);
        }
        // Mirror pods are not found by UID, so a static pod's sync never deletes.
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let pod = ApiPod::parse(pod_json, || format!("pod manager's pod {uid}"))?;
        policy.can_be_deleted(self, &pod, status)
    }

    /// `needsReconcile`: the API server's status of `uid` (as the pod manager has it)
    /// differs from the cache: the kubelet is the source of truth, so drift is written
    /// over.
    fn needs_reconcile<P: SyncPolicy<I>>(&mut self, policy: &P, uid: &str, status: &PodStatus) -> Result<bool> {
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        let mut pod = PodView::parse_with_uid(&pod_json).invalid_pod(|| format!("pod manager's pod {uid}"))?;
        // Only a static pod's mirror pod carries its status in the API server.
        if pod.is_static() {
            let Some(mirror_json) = self.imports.get_mirror_pod_by_pod(&pod_json) else {
                return Ok(false);
            };
            pod = PodView::parse_with_uid(&mirror_json).invalid_pod(|| format!("mirror pod of {uid}"))?;
        }
        let mut api_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
        normalize_status(&pod.spec, &mut api_status);
        if policy.status_equal(&api_status, status) {
            return Ok(false);
        }
        self.log(Level::Info, || {
            format!("pod status of {} is inconsistent with the cached status; reconciling", pod.full_name())
        });
        Ok(true)
    }
}

/// The sync's read: the GET of the pod `status` was cached for.
fn read(status: &VersionedStatus) -> Flow {
    let call = ApiCall::GetPod { namespace: status.pod_namespace.clone(), name: status.pod_name.clone() };
    Flow::Wait(Stage::Get, call)
}
