//! The 2017 status manager's decisions in a sync.

use k8s_openapi::api::core::v1::PodStatus;
use podstatus_core::status_equal;
use podstatus_logic::{
    ApiCall, ApiError, ApiPod, Engine, Imports, Level, Result, StatusUpdate, SyncPolicy, VersionedStatus, Write,
    WritePlan,
};

use crate::V1;

impl<I: Imports> SyncPolicy<I> for V1 {
    const CHECKS_NEEDS_UPDATE: bool = true;

    /// A PUT of the whole status, guarded by the object as read.
    fn plan_write(&self, manager: &mut Engine<I>, pod: ApiPod, status: &VersionedStatus) -> Result<WritePlan> {
        let view = &pod.view;
        let update = StatusUpdate {
            namespace: view.metadata.namespace.clone(),
            name: view.metadata.name.clone(),
            // The PUT carries the object as read, so its UID and resourceVersion hold
            // the write to exactly that object.
            uid_precondition: Some(view.metadata.uid.clone()).filter(|u| !u.is_empty()),
            resource_version_precondition: view.metadata.resource_version.clone(),
            status: manager.status_text(status)?,
        };
        Ok(WritePlan::Send { call: ApiCall::UpdatePodStatus(update), over: pod })
    }

    fn finish_write(
        &self,
        manager: &mut Engine<I>,
        over: ApiPod,
        status: &VersionedStatus,
        reply: std::result::Result<String, ApiError>,
    ) -> Result<Write> {
        let updated_json = match reply {
            Ok(json) => json,
            Err(e) => {
                manager.log(Level::Warn, || {
                    format!("failed to update status for pod {}: {}", over.view.full_name(), e.message())
                });
                return Ok(Write::Failed);
            }
        };
        let updated = ApiPod::parse(updated_json, || "API server's pod after the write".into())?;
        manager.log(Level::Debug, || {
            format!("status for pod {} updated to version {}", updated.view.full_name(), status.version)
        });
        Ok(Write::Written(updated))
    }

    /// Being deleted, not a mirror pod (mirror pods' graceful deletion is not ours to
    /// handle), and its resources reclaimed.
    fn can_be_deleted(&self, manager: &mut Engine<I>, pod: &ApiPod, status: &VersionedStatus) -> Result<bool> {
        if !pod.view.is_being_deleted() || pod.view.is_mirror() {
            return Ok(false);
        }
        let status_json = manager.status_text(status)?;
        Ok(manager.imports_mut().pod_resources_are_reclaimed(&pod.json, &status_json))
    }

    fn status_equal(&self, api: &PodStatus, cached: &PodStatus) -> bool {
        status_equal(api, cached)
    }
}
