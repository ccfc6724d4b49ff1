//! Contract `kubelet:status@0.1.1`: 0.1.0 with the imports and export that Kubernetes
//! 1.27's status manager needs (a strategic merge patch of the status, whether a pod's
//! containers may still run, startup probes). Logic v2 and later run on it.

use podstatus_logic::{ApiError, Imports, Policy, StatusPatch};

use crate::shared;

shared::contract!(
    world: "package podstatus:glue; world contract-0-1-1 { include kubelet:status/status-manager@0.1.1; }",
    path: "../../wit/status@0.1.1",
    module: "podstatus_glue::contract_0_1_1",
    api_error: api_server::ApiError,
);

use exports::kubelet::status::manager as wit;
use kubelet::status::{api_server, deletion_safety};

use shared::no_failpoint;

shared::manager_error_without_syncs!();

impl<P: Policy<WitImports> + Default + 'static> wit::Guest for Plugin<P> {
    shared::common_exports!(no_failpoint);

    shared::startup_export!();

    fn sync_pod(request: wit::SyncRequest) -> Result<wit::SyncOutcome, wit::ManagerError> {
        let request =
            podstatus_logic::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        Self::with(|m| m.sync_pod(&request)).map(sync_outcome).map_err(manager_error)
    }

    fn sync_batch() -> wit::BatchReport {
        batch_report(Self::with(|m| m.sync_batch()))
    }
}

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

impl Imports for WitImports {
    shared::api_server_imports!();
    shared::forward_world_imports!();

    fn patch_pod_status(&mut self, patch: StatusPatch) -> Result<String, ApiError> {
        let patch = api_server::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        api_server::patch_pod_status(&patch).map_err(api_error)
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        deletion_safety::pod_could_have_running_containers(pod_json)
    }
}
