//! The write mode of upstream's `syncPod` (every release since 1.27): GET the pod, merge
//! the cached status over the status read (`mergePodStatus`), PATCH the difference
//! under the pod's UID (`PatchPodStatus`), and delete the pod once `canBeDeleted`.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::SpecView;

use super::patching::{Carries, can_be_deleted, finish_write, plan_write_over_read};
use crate::api_pod::ApiPod;
use crate::engine::Engine;
use crate::engine::sync_policy::{SyncPolicy, Write, WritePlan};
use crate::error::Result;
use crate::imports::{ApiError, Imports};
use crate::release::{Logic, Release};
use crate::status::VersionedStatus;

/// Upstream's write: a GET before every PATCH, the patch computed from the status read.
#[derive(Clone, Copy, Debug, Default)]
pub struct ReadThenPatch;

impl<I: Imports, R: Release> SyncPolicy<I> for Logic<R, ReadThenPatch> {
    const CHECKS_NEEDS_UPDATE: bool = false;

    /// `mergePodStatus` and `PatchPodStatus`: a strategic merge patch from the API
    /// server's status to `status` merged into it, sent only when it changes something.
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        plan_write_over_read(&self.release, manager, pod, status, Carries::Diff)
    }

    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        _status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        finish_write(manager, &over, reply)
    }

    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        can_be_deleted(manager, pod, status)
    }

    /// `isPodStatusByKubeletEqual`: conditions others own are not drift.
    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        self.release.is_pod_status_by_kubelet_equal(api, cached)
    }

    fn normalize_status(&self, spec: &SpecView, status: &mut PodStatus) {
        self.release.normalize_status(spec, status);
    }
}
