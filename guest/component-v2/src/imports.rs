//! `podstatus_logic_v2::Imports` (and v1's, which it extends) on the component's WIT
//! imports.

use podstatus_logic_v2::{
    ApiError, DeleteOptions, Imports, Level, StatusPatch, StatusUpdate, SyncRequest, Timestamp, UidTranslations,
    V1Imports,
};

use crate::kubelet::status::{api_server, deletion_safety};

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

#[path = "../../glue/world_imports.rs"]
mod world;
pub use world::log;

impl Imports for WitImports {
    fn patch_pod_status(&mut self, patch: StatusPatch) -> Result<String, ApiError> {
        let patch = api_server::StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        api_server::patch_pod_status(&patch).map_err(crate::api_error)
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        deletion_safety::pod_could_have_running_containers(pod_json)
    }
}

impl V1Imports for WitImports {
    fn get_pod(&mut self, namespace: &str, name: &str) -> Result<String, ApiError> {
        api_server::get_pod(namespace, name).map_err(crate::api_error)
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> Result<String, ApiError> {
        let update = api_server::StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        api_server::update_pod_status(&update).map_err(crate::api_error)
    }

    fn delete_pod(&mut self, namespace: &str, name: &str, options: DeleteOptions) -> Result<(), ApiError> {
        let options = api_server::DeleteOptions {
            uid_precondition: options.uid_precondition,
            grace_period_seconds: options.grace_period_seconds,
        };
        api_server::delete_pod(namespace, name, &options).map_err(crate::api_error)
    }

    world::forward_world_imports!();
}
