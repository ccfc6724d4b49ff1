//! The one-call write mode: each status version written with one PATCH and no GET.
//!
//! Upstream GETs the pod before every status write, to learn its UID and current
//! status, then PATCHes: two calls per version, so the kubelet's client budget (QPS 50)
//! carries about 25 status changes a second. This mode sends only the PATCH, a
//! strategic merge patch of `status` carrying the pod's UID as precondition, which lets
//! the API server make both checks itself:
//!
//! - the patch is computed against what was last written for the pod (the API
//!   server's answer to that write, kept in the state document as
//!   [`crate::LastWritten`]) or, for a pod not written yet (or whose last write is void:
//!   another version wrote since, or a reconciliation forgot the written version),
//!   against the pod manager's copy; when it is empty nothing is sent;
//! - the server's merge keeps the conditions other writers own, as the GET-and-merge
//!   does;
//! - a refused precondition or a conflict means the pod was recreated or the copy was
//!   stale: then, and only then, it GETs and writes over the pod as read (the
//!   recreated-pod check, a patch recomputed from the status read); a 404 ends the sync
//!   as upstream's GET does;
//! - deletion is decided with upstream's `canBeDeleted` from the PATCH's answer (the pod
//!   as the server now has it), or from the pod manager's copy when nothing was sent;
//! - drift that other writers cause in fields the kubelet owns is repaired by the batch
//!   sync's reconciliation against the pod manager's copy (a reconciliation forgets the
//!   written version, so the repairing patch is computed from that copy).
//!
//! Logic v3 (1.27) shipped the mode first; v4 (1.35) refined it where `fuzz --logic v4`
//! found its patches ending other than computed ([`OneCallDesign`]).

use std::marker::PhantomData;

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::SpecView;

use super::patching::{Carries, can_be_deleted, finish_write, plan_patch, plan_write_over_read, send};
use crate::api_pod::ApiPod;
use crate::engine::Engine;
use crate::engine::sync_policy::{SyncPolicy, UnreadWrite, Write, WritePlan};
use crate::error::Result;
use crate::imports::{ApiError, Imports, Level};
use crate::release::{Logic, Release};
use crate::status::{LastWritten, VersionedStatus};

/// One PATCH per status version, no GET, in design `D`: [`Refined`], the mode every
/// release takes (`1.35-one-call`, `1.37-one-call`), unless named; [`FirstDesign`]
/// only for logic v3 (`1.27-one-call`), whose traces and fixtures stay as they were.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneCall<D = Refined>(PhantomData<D>);

/// Which refinements of the one-call mode a logic version takes. Each was found by
/// `fuzz --logic v4` (docs/replay-and-fuzzing.md) and came with v4; none depends on
/// what a release decides (each is about what a write without a GET can know), so they
/// are the mode's, taken by every release. Logic v3 keeps the mode as it shipped
/// ([`FirstDesign`]): its traces, fixtures and documented differences stay as they
/// were, and it is the only version that does.
pub trait OneCallDesign {
    /// Every patch carries the whole merged status (the kubelet's own conditions whole,
    /// every other field of it), so the pod ends as computed whatever another writer
    /// did since the base: a diff left another writer's value wherever the base already
    /// had the merged one. Without it a patch sent without reading carries the diff
    /// with each condition it names whole, and one after a read the plain diff.
    const WHOLE_STATUS: bool;
    /// A pod manager copy with a newer `resourceVersion` than the last write is the
    /// base instead of that write (another writer changed the pod since, and the copy
    /// shows how); so each write records the `resourceVersion` it left.
    const NEWER_COPY_IS_BASE: bool;
    /// A pod being deleted with nothing to send is read before its deletion is decided,
    /// as upstream decides it over the pod as read (the pod manager's copy may be of a
    /// pod deleted and recreated under another UID).
    const READ_BEFORE_DELETE: bool;
}

/// The one-call mode as logic v3 shipped it: none of the refinements.
#[derive(Clone, Copy, Debug, Default)]
pub struct FirstDesign;

impl OneCallDesign for FirstDesign {
    const WHOLE_STATUS: bool = false;
    const NEWER_COPY_IS_BASE: bool = false;
    const READ_BEFORE_DELETE: bool = false;
}

/// The one-call mode as logic v4 refined it: every refinement.
#[derive(Clone, Copy, Debug, Default)]
pub struct Refined;

impl OneCallDesign for Refined {
    const WHOLE_STATUS: bool = true;
    const NEWER_COPY_IS_BASE: bool = true;
    const READ_BEFORE_DELETE: bool = true;
}

/// The release's merge and equality, written without reading first
/// ([`SyncPolicy::plan_unread`]); over the pod as read only after the API server
/// refused the shortcut.
impl<I: Imports, R: Release, D: OneCallDesign> SyncPolicy<I> for Logic<R, OneCall<D>> {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// One strategic merge patch of `status` carrying the pod's UID, computed against
    /// what was last written for the pod (while still valid) or the pod manager's copy.
    fn plan_unread(&self, manager: &mut Engine<I>, uid: &str, status: &VersionedStatus) -> Result<Option<WritePlan>> {
        // The pod as the pod manager has it; a static pod's status lives on its mirror.
        let Some(pod_json) = manager.imports_mut().get_pod_by_uid(uid) else {
            return Ok(None);
        };
        let mut pod = ApiPod::parse(pod_json, || format!("pod manager's pod {uid}"))?;
        if pod.view.is_static() {
            let Some(mirror_json) = manager.imports_mut().get_mirror_pod_by_pod(&pod.json) else {
                return Ok(None);
            };
            pod = ApiPod::parse(mirror_json, || format!("mirror pod of {uid}"))?;
        }
        let view = &pod.view;
        let status_uid = view.metadata.uid.clone();
        let written = manager.written_base(uid, &status_uid).filter(|written| {
            !D::NEWER_COPY_IS_BASE
                || !is_newer(view.metadata.resource_version.as_deref(), written.resource_version.as_deref())
        });
        let (base, base_version): (PodStatus, Option<String>) = match written {
            Some(written) => (written.status.clone(), written.resource_version.clone()),
            None => (pod.parse_status()?, view.metadata.resource_version.clone()),
        };
        let carries = if D::WHOLE_STATUS { Carries::WholeStatus } else { Carries::WholeConditions };
        match plan_patch(&self.release, manager, &pod, &base, status, carries)? {
            None if D::READ_BEFORE_DELETE && view.is_being_deleted() && !view.is_mirror() => {
                manager.log(Level::Debug, || {
                    format!("pod {} is being deleted: reading it before deciding", view.full_name())
                });
                Ok(None)
            }
            None => {
                manager.log(Level::Debug, || {
                    format!("status of pod {} is up-to-date at version {}", view.full_name(), status.version)
                });
                // The version counts as written: what it was computed against stays the base.
                let resource_version = base_version.filter(|_| D::NEWER_COPY_IS_BASE);
                let record = LastWritten { uid: status_uid, version: status.version, status: base, resource_version };
                manager.set_last_written(uid, record);
                Ok(Some(WritePlan::Unchanged(pod)))
            }
            Some(patch) => {
                manager.log(Level::Debug, || {
                    format!("patching status of pod {} without reading: {patch}", view.full_name())
                });
                Ok(Some(send(pod, patch)))
            }
        }
    }

    /// The patch's answer: recorded as the base of the next patch once written; a
    /// refused precondition or a conflict falls back to reading the pod.
    fn finish_unread(
        &self,
        manager: &mut Engine<I>,
        uid: &str,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<UnreadWrite> {
        let view = &over.view;
        match reply {
            Ok(json) => {
                let written = ApiPod::parse(json, || "API server's pod after the patch".into())?;
                record::<I, D>(manager, uid, &written, status.version)?;
                Ok(UnreadWrite::Written(written))
            }
            Err(ApiError::NotFound(m)) => {
                manager.log(Level::Debug, || {
                    format!("pod {} ({uid}) does not exist on the server: {m}", view.full_name())
                });
                Ok(UnreadWrite::NotFound)
            }
            Err(ApiError::Conflict(m)) => {
                manager.log(Level::Info, || {
                    format!("patch of pod {} refused ({m}): recreated or stale; reading the pod", view.full_name())
                });
                Ok(UnreadWrite::ReadFirst)
            }
            Err(e) => {
                manager.log(Level::Warn, || {
                    format!("failed to patch status of pod {}: {}", view.full_name(), e.message())
                });
                Ok(UnreadWrite::Failed)
            }
        }
    }

    /// After a refused shortcut: the write over the pod as read, recorded as the base
    /// of the next patch when nothing is sent (what the API server has).
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let carries = if D::WHOLE_STATUS { Carries::WholeStatus } else { Carries::Diff };
        let plan = plan_write_over_read(&self.release, manager, pod, status, carries)?;
        if let WritePlan::Unchanged(pod) = &plan {
            record_translated::<I, D>(manager, pod, status.version)?;
        }
        Ok(plan)
    }

    /// The write over the pod as read finished, recorded as the base of the next patch.
    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        let outcome = finish_write(manager, &over, reply)?;
        if let Write::Written(pod) = &outcome {
            record_translated::<I, D>(manager, pod, status.version)?;
        }
        Ok(outcome)
    }

    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        can_be_deleted(manager, pod, status)
    }

    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        self.release.is_pod_status_by_kubelet_equal(api, cached)
    }

    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        self.release.normalize_status(spec, status);
    }
}

/// Records `pod`'s status (the API server's after writing `version`, or as read when
/// nothing was sent) as the base of the next patch, under the UID of the pod's cached
/// status (a mirror pod's static pod).
fn record_translated<I: Imports, D: OneCallDesign>(manager: &mut Engine<I>, pod: &ApiPod, version: u64) -> Result<()> {
    let translated = manager.imports_mut().translate_pod_uid(&pod.view.metadata.uid);
    let uid = if translated.is_empty() { pod.view.metadata.uid.clone() } else { translated };
    record::<I, D>(manager, &uid, pod, version)
}

/// Records `pod`'s status, the API server's after writing `version` of `uid`'s status
/// (with its `resourceVersion` where the design compares it).
fn record<I: Imports, D: OneCallDesign>(manager: &mut Engine<I>, uid: &str, pod: &ApiPod, version: u64) -> Result<()> {
    let view = &pod.view;
    let status = pod.parse_status()?;
    let resource_version = view.metadata.resource_version.clone().filter(|_| D::NEWER_COPY_IS_BASE);
    manager.set_last_written(uid, LastWritten { uid: view.metadata.uid.clone(), version, status, resource_version });
    Ok(())
}

/// Whether `copy` is a newer resourceVersion than `written`. Kubernetes calls them
/// opaque; etcd's (and the embedded server's) are integers that grow with every write,
/// so two integers compare, and anything else is not known to be newer (the last write
/// stays the base).
fn is_newer(copy: Option<&str>, written: Option<&str>) -> bool {
    match (copy.and_then(|c| c.parse::<u64>().ok()), written.and_then(|w| w.parse::<u64>().ok())) {
        (Some(copy), Some(written)) => copy > written,
        _ => false,
    }
}
