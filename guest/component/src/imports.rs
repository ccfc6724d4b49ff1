//! `podstatus_logic::Imports` on the component's WIT imports.

use podstatus_logic::{ApiError, DeleteOptions, Imports, Level, StatusUpdate, SyncRequest, Timestamp, UidTranslations};

use crate::kubelet::status::api_server;

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

#[path = "../../glue/world_imports.rs"]
mod world;
pub use world::log;

impl Imports for WitImports {
    fn get_pod(&mut self, namespace: &str, name: &str) -> Result<String, ApiError> {
        api_server::get_pod(namespace, name).map_err(crate::api_error)
    }

    fn update_pod_status(&mut self, update: StatusUpdate) -> Result<String, ApiError> {
        crate::failpoint!(WRITE);
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

    world::forward_world_imports!(before_push: {
        crate::failpoint!(PUSH);
    });
}
