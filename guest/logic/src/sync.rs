//! One pod's sync and the periodic batch sync, as one skeleton for every logic version
//! (upstream has one `syncPod` and one `syncBatch`).
//!
//! The skeleton reads the pod from the API server, drops the status of a pod that was
//! deleted and recreated, has the status written, records the written version and
//! deletes the pod once it may be; a version may write without reading first
//! ([`SyncPolicy::write_unread`]) and fall back to reading when that does not hold. The batch forgets the written versions of pods that
//! are gone and picks the pods to sync. What a logic version decides itself (how the
//! status is written, when a pod may be deleted, what counts as drift) is its
//! [`SyncPolicy`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::PodStatus;

use crate::error::{InvalidPod, Result};
use crate::imports::{ApiError, DeleteOptions, Imports, Level};
use crate::manager::{BatchReport, Manager, SyncOutcome, VersionedStatus};
use crate::normalize::normalize_status;
use crate::pod::PodView;

/// A pod as the API server (or the pod manager) returned it: parsed, and its JSON for
/// the imports that take a pod.
pub struct ApiPod {
    pub view: PodView,
    pub json: String,
}

impl ApiPod {
    /// Parses `json`, a pod that must have a UID; `what` names it in the error.
    pub fn parse(json: String, what: impl FnOnce() -> String) -> Result<ApiPod> {
        let view = PodView::parse_with_uid(&json).invalid_pod(what)?;
        Ok(ApiPod { view, json })
    }
}

/// What writing a status did.
pub enum Write {
    /// The status was written; the pod as stored after the write.
    Written(ApiPod),
    /// The API server had it already: nothing was sent. The pod as read.
    Unchanged(ApiPod),
    /// The write failed (logged): the pod waits for a later sync.
    Failed,
}

/// What writing a status without reading the pod first did (a logic version that
/// can, see [`SyncPolicy::write_unread`]).
pub enum UnreadWrite {
    /// The status was written; the pod as stored after the write.
    Written(ApiPod),
    /// There was nothing to send; the pod as the pod manager has it (deletion is
    /// decided from it).
    Unchanged(ApiPod),
    /// The pod does not exist on the server.
    NotFound,
    /// The write failed (logged): the pod waits for a later sync.
    Failed,
    /// The shortcut does not hold (the precondition failed: the pod was recreated, or
    /// what the write was computed against was stale), or cannot be taken: read the
    /// pod first, as the other versions do.
    ReadFirst,
}

/// What a logic version decides in a sync; everything else is the skeleton's.
pub trait SyncPolicy<I: Imports> {
    /// Whether a sync first checks that the status still needs writing under the pod's
    /// own UID (the 2017 `syncPod` did; in 1.27 its callers decide).
    const CHECKS_NEEDS_UPDATE: bool;

    /// Writes `status`, the cached status of `uid`, without reading the pod first, when
    /// the version can. The default reads first, always.
    fn write_unread(&self, _manager: &mut Manager<I>, _uid: &str, _status: &VersionedStatus) -> Result<UnreadWrite> {
        Ok(UnreadWrite::ReadFirst)
    }

    /// Writes `status` over `pod`, the API server's pod as just read.
    fn write(&self, manager: &mut Manager<I>, pod: ApiPod, status: &VersionedStatus) -> Result<Write>;

    /// `canBeDeleted`: whether `pod` (the API server's after a write, or the pod
    /// manager's) may be deleted now that `status` is the cached status.
    fn can_be_deleted(&self, manager: &mut Manager<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool>;

    /// Whether the API server's status (normalised) holds the cached one, so the batch
    /// has no drift to repair.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool;
}

impl<I: Imports> Manager<I> {
    /// `syncPod`: writes `status`, the cached status of `uid`, to the API server and
    /// deletes the pod if `policy` says it may be.
    pub fn sync_status<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
    ) -> Result<SyncOutcome> {
        if P::CHECKS_NEEDS_UPDATE && !self.needs_update(policy, uid, status)? {
            self.log(Level::Debug, || format!("status for pod {uid} is up-to-date; skipping"));
            return Ok(SyncOutcome::UpToDate);
        }

        let (pod, outcome) = match policy.write_unread(self, uid, status)? {
            UnreadWrite::Written(pod) => (pod, SyncOutcome::Written),
            UnreadWrite::Unchanged(pod) => (pod, SyncOutcome::UpToDate),
            UnreadWrite::NotFound => return Ok(SyncOutcome::PodNotFound),
            UnreadWrite::Failed => return Ok(SyncOutcome::WriteFailed),
            UnreadWrite::ReadFirst => match self.read_and_write(policy, uid, status)? {
                Ok(written) => written,
                Err(outcome) => return Ok(outcome),
            },
        };
        self.set_api_version(&pod.view.metadata.uid, status.version);
        self.delete_if_may(policy, uid, pod, status, outcome)
    }

    /// The sync's read and write: GETs the pod, drops the status of a pod that was
    /// deleted and recreated, and has `policy` write over the pod as read. The pod after
    /// the write and what the write did, or the outcome that ends the sync.
    fn read_and_write<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
    ) -> Result<std::result::Result<(ApiPod, SyncOutcome), SyncOutcome>> {
        let (namespace, name) = (&status.pod_namespace, &status.pod_name);
        let pod_json = match self.imports.get_pod(namespace, name) {
            Ok(json) => json,
            Err(ApiError::NotFound(_)) => {
                // A deleted pod's status is cleared by remove-orphaned-statuses.
                self.log(Level::Debug, || format!("pod {namespace}/{name} ({uid}) does not exist on the server"));
                return Ok(Err(SyncOutcome::PodNotFound));
            }
            Err(e) => {
                self.log(Level::Warn, || format!("failed to get pod {namespace}/{name} ({uid}): {}", e.message()));
                return Ok(Err(SyncOutcome::GetFailed));
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
            return Ok(Err(SyncOutcome::Recreated));
        }

        Ok(match policy.write(self, pod, status)? {
            Write::Written(pod) => Ok((pod, SyncOutcome::Written)),
            Write::Unchanged(pod) => Ok((pod, SyncOutcome::UpToDate)),
            Write::Failed => Err(SyncOutcome::WriteFailed),
        })
    }

    /// Deletes `pod` (the API server's after the write, or the pod manager's when
    /// nothing was sent) if `policy` says it may be; else the sync ends with `outcome`.
    fn delete_if_may<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        pod: ApiPod,
        status: &VersionedStatus,
        outcome: SyncOutcome,
    ) -> Result<SyncOutcome> {
        if !policy.can_be_deleted(self, &pod, status)? {
            return Ok(outcome);
        }
        let pod = pod.view;
        let options = DeleteOptions {
            // A newly created pod of the same name must never be deleted.
            uid_precondition: Some(pod.metadata.uid.clone()),
            grace_period_seconds: Some(0),
        };
        match self.imports.delete_pod(&pod.metadata.namespace, &pod.metadata.name, options) {
            Ok(()) => {
                self.log(Level::Info, || {
                    format!("pod {} fully terminated and removed from the API server", pod.full_name())
                });
                self.drop_status(uid);
                Ok(SyncOutcome::Deleted)
            }
            Err(e) => {
                self.log(Level::Warn, || format!("failed to delete pod {}: {}", pod.full_name(), e.message()));
                Ok(SyncOutcome::DeleteFailed)
            }
        }
    }

    /// `syncBatch(true)`: forgets the written versions of pods that are gone, then
    /// syncs, in UID order, every cached status that is unwritten, whose pod can be
    /// deleted, or whose API server status has drifted from it.
    pub fn sync_batch_with<P: SyncPolicy<I>>(&mut self, policy: &P) -> BatchReport {
        let translations = self.imports.get_uid_translations();
        let pod_to_mirror: BTreeMap<String, String> = translations.pod_to_mirror.into_iter().collect();
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

        let mut report = BatchReport::default();
        let mut updates = Vec::new();
        let cached: Vec<(String, Arc<VersionedStatus>)> =
            self.statuses.iter().map(|(uid, status)| (uid.clone(), Arc::clone(status))).collect();
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

        for (uid, status) in updates {
            report.synced += 1;
            if let Err(e) = self.sync_status(policy, &uid, &status) {
                report.failed += 1;
                self.log(Level::Error, || format!("batch sync of pod {uid} failed: {e}"));
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
