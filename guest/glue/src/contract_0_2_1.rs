//! Contract `kubelet:status@0.2.1`: 0.2.0 (the host runs the syncs) plus the in-place
//! resize calls (`set-pod-resize-condition`, `clear-pod-resize-condition`,
//! `get-pod-resize-conditions`). Logic v4 runs on it; any other logic answers the
//! resize calls `unsupported`.

use podstatus_logic::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, ManagerError, PodSync, Policy, StatusPatch, StatusUpdate,
    SyncOrigin, SyncStep,
};

use crate::{shared, split_shared};

shared::contract!(
    world: "package podstatus:glue; world contract-0-2-1 { include kubelet:status/status-manager@0.2.1; }",
    path: "../../wit/status@0.2.1",
    module: "podstatus_glue::contract_0_2_1",
    api_error: api::ApiError,
);

use exports::kubelet::status::manager as wit;
use kubelet::status::{api, deletion_safety};

use shared::failpoint;

use shared::no_failpoint;

impl<P: Policy<WitImports> + Default + 'static> wit::Guest for Plugin<P> {
    shared::common_exports!(no_failpoint);

    shared::startup_export!();

    split_shared::split_sync_exports!();

    fn set_pod_resize_condition(
        pod_uid: String,
        condition: wit::ResizeCondition,
        reason: String,
        message: String,
        observed_generation: i64,
    ) -> Result<(), wit::ManagerError> {
        Self::with(|m| {
            m.set_pod_resize_condition(&pod_uid, resize_condition(condition), &reason, &message, observed_generation)
        })
        .map_err(manager_error)
    }

    fn clear_pod_resize_condition(pod_uid: String, condition: wit::ResizeCondition) -> Result<bool, wit::ManagerError> {
        Self::with(|m| m.clear_pod_resize_condition(&pod_uid, resize_condition(condition))).map_err(manager_error)
    }

    fn get_pod_resize_conditions(pod_uid: String) -> Result<Vec<String>, wit::ManagerError> {
        Self::with(|m| m.get_pod_resize_conditions(&pod_uid)).map_err(manager_error)
    }
}

split_shared::split_sync_glue!("0.2.1");

/// The contract's resize condition as the logic's.
fn resize_condition(condition: wit::ResizeCondition) -> podstatus_logic::ResizeCondition {
    match condition {
        wit::ResizeCondition::Pending => podstatus_logic::ResizeCondition::Pending,
        wit::ResizeCondition::InProgress => podstatus_logic::ResizeCondition::InProgress,
    }
}
