//! Contract `kubelet:status@0.1.0`: the 2017 surface, whose syncs call the API server
//! themselves (`api-server` import) and block until done.

use podstatus_logic::{ApiError, Imports, Policy, StatusPatch};

use crate::shared;

shared::contract!(
    world: "package podstatus:glue; world contract-0-1-0 { include kubelet:status/status-manager@0.1.0; }",
    path: "../../wit/status@0.1.0",
    module: "podstatus_glue::contract_0_1_0",
    api_error: api_server::ApiError,
);

use exports::kubelet::status::manager as wit;
use kubelet::status::api_server;

use shared::failpoint;

shared::manager_error_without_syncs!();

impl<P: Policy<WitImports> + Default + 'static> wit::Guest for Plugin<P> {
    shared::common_exports!(failpoint);

    fn sync_pod(request: wit::SyncRequest) -> Result<wit::SyncOutcome, wit::ManagerError> {
        failpoint!(SYNC_POD);
        let request =
            podstatus_logic::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        Self::with(|m| m.sync_pod(&request)).map(sync_outcome).map_err(manager_error)
    }

    fn sync_batch() -> wit::BatchReport {
        failpoint!(SYNC_BATCH);
        batch_report(Self::with(|m| m.sync_batch()))
    }
}

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

impl Imports for WitImports {
    shared::api_server_imports!(before_write: {
        failpoint!(WRITE);
    });

    shared::forward_world_imports!(before_push: {
        failpoint!(PUSH);
    });

    /// Contract 0.1.0 has no patch: the 2017 manager (logic v1, the only one on this
    /// contract) writes with `update-pod-status` and never calls this.
    fn patch_pod_status(&mut self, _: StatusPatch) -> Result<String, ApiError> {
        Err(ApiError::Other("contract 0.1.0 cannot patch a pod's status".into()))
    }

    /// Contract 0.1.0 cannot ask: logic v1 never does. Were it asked, a container may
    /// still run, the answer that only ever delays a terminal phase.
    fn pod_could_have_running_containers(&mut self, _: &str) -> bool {
        true
    }
}
