//! The logic's imports on the component's WIT imports. Contract 0.2.0 has no
//! api-server import: the API-server methods fail with a clear message (the logic never
//! calls them in this build; the host makes a sync's calls).

use podstatus_logic::{ApiError, DeleteOptions, Level, StatusUpdate, SyncRequest, Timestamp, UidTranslations};

#[cfg(not(feature = "logic-v1"))]
use crate::kubelet::status::deletion_safety;
use crate::no_api_server;

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

#[path = "../../glue/world_imports.rs"]
mod world;
pub use world::log;

#[cfg(not(feature = "logic-v1"))]
impl crate::logic::Imports for WitImports {
    fn patch_pod_status(&mut self, _: podstatus_logic::StatusPatch) -> Result<String, ApiError> {
        Err(no_api_server("patch-pod-status"))
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        deletion_safety::pod_could_have_running_containers(pod_json)
    }
}

impl podstatus_logic::Imports for WitImports {
    fn get_pod(&mut self, _: &str, _: &str) -> Result<String, ApiError> {
        Err(no_api_server("get-pod"))
    }

    fn update_pod_status(&mut self, _: StatusUpdate) -> Result<String, ApiError> {
        Err(no_api_server("update-pod-status"))
    }

    fn delete_pod(&mut self, _: &str, _: &str, _: DeleteOptions) -> Result<(), ApiError> {
        Err(no_api_server("delete-pod"))
    }

    world::forward_world_imports!();
}
