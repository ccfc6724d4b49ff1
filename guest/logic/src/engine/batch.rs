//! The periodic batch sync (`syncBatch(true)`): forgetting the written versions of pods
//! that are gone, repairing drift, and planning the syncs of what is unwritten, in UID
//! order and in slices.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::sync::Arc;

use podstatus_core::PodView;

use super::Engine;
use super::batch_reads::{Agreement, digest};
use crate::api_pod::ApiPod;
use crate::engine::sync_policy::SyncPolicy;
use crate::error::{InvalidPod, Result};
use crate::imports::{Imports, Level};
use crate::jobs::{BatchPlan, BatchSlice, SyncOrigin, SyncTarget};
use crate::outcomes::BatchReport;
use crate::status::VersionedStatus;

impl<I: Imports> Engine<I> {
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
            // What the batch learnt of pods no longer cached goes with them.
            let (statuses, api_versions) = (&self.statuses, &self.api_versions);
            self.batch_reads.retain(|uid| statuses.contains_key(uid) || api_versions.contains_key(uid));
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
                .and_then(|update| Ok((update, !update && self.needs_reconcile(policy, &uid, &status)?)));
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

    /// `syncBatch(true)`, run to its end: [`Engine::plan_sync_batch_with`], then each
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
    pub(super) fn needs_update<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        status: &VersionedStatus,
    ) -> Result<bool> {
        if !self.is_written(uid, status.version) {
            return Ok(true);
        }
        // Mirror pods are not found by UID, so a static pod's sync never deletes.
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        // A pod the API server is not deleting (or a mirror pod) cannot be deleted, by
        // every version's rule: the same bytes again need no second look.
        let read = digest(&pod_json);
        if self.batch_reads.undeletable(uid, read) {
            return Ok(false);
        }
        let pod = ApiPod::parse(pod_json, || format!("pod manager's pod {uid}"))?;
        if !pod.view.is_being_deleted() || pod.view.is_mirror() {
            self.batch_reads.note_undeletable(uid, read);
            return Ok(false);
        }
        policy.can_be_deleted(self, &pod, status)
    }

    /// `needsReconcile`: the API server's status of `uid` (as the pod manager has it)
    /// differs from the cache: the kubelet is the source of truth, so drift is written
    /// over.
    fn needs_reconcile<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        cached: &Arc<VersionedStatus>,
    ) -> Result<bool> {
        let Some(pod_json) = self.imports.get_pod_by_uid(uid) else {
            return Ok(false);
        };
        // The same bytes that agreed with this very cached status before agree again
        // (`batch_reads`); the imports are made as on the full way.
        let pod_read = digest(&pod_json);
        let mirror_json = match self.batch_reads.agreement(uid, pod_read, cached) {
            Some(Agreement::Plain) => return Ok(false),
            Some(Agreement::Static { mirror }) => {
                let Some(mirror_json) = self.imports.get_mirror_pod_by_pod(&pod_json) else {
                    return Ok(false);
                };
                if digest(&mirror_json) == mirror {
                    return Ok(false);
                }
                Some(mirror_json)
            }
            None => None,
        };
        let drifted = self.reconcile_read(policy, uid, cached, &pod_json, pod_read, mirror_json);
        if !matches!(drifted, Ok(false)) {
            self.batch_reads.forget_agreement(uid);
        }
        drifted
    }

    /// [`Engine::needs_reconcile`]'s full way: `pod_json` (read as `pod_read`) and, for
    /// a static pod, its mirror pod (`mirror_json` when read already) parsed, the API
    /// status normalised and compared with `cached`; an agreement is remembered.
    fn reconcile_read<P: SyncPolicy<I>>(
        &mut self,
        policy: &P,
        uid: &str,
        cached: &Arc<VersionedStatus>,
        pod_json: &str,
        pod_read: u128,
        mirror_json: Option<String>,
    ) -> Result<bool> {
        let mut pod = PodView::parse_with_uid(pod_json).invalid_pod(|| format!("pod manager's pod {uid}"))?;
        // Only a static pod's mirror pod carries its status in the API server.
        let mut mirror_read = None;
        if pod.is_static() {
            let mirror_json = match mirror_json {
                Some(json) => json,
                None => match self.imports.get_mirror_pod_by_pod(pod_json) {
                    Some(json) => json,
                    None => return Ok(false),
                },
            };
            mirror_read = Some(digest(&mirror_json));
            pod = PodView::parse_with_uid(&mirror_json).invalid_pod(|| format!("mirror pod of {uid}"))?;
        }
        let mut api_status = pod.parse_status().invalid_pod(|| format!("status of {}", pod.full_name()))?;
        policy.normalize_status(&pod.spec, &mut api_status);
        if policy.status_equal(&api_status, &cached.status) {
            self.batch_reads.note_agreed(uid, pod_read, mirror_read, cached);
            return Ok(false);
        }
        self.log(Level::Info, || {
            format!("pod status of {} is inconsistent with the cached status; reconciling", pod.full_name())
        });
        Ok(true)
    }
}
