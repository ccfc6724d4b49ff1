//! `podstatus_logic_v3::Imports` (and v1's, which it extends) on the component's WIT
//! imports.

use podstatus_logic_v3::{
    ApiError, DeleteOptions, Imports, Level, StatusPatch, StatusUpdate, SyncRequest, Timestamp, UidTranslations,
    V1Imports,
};

use crate::kubelet::status::{api_server, clock, deletion_safety, logging, pod_manager, sync_queue, types};

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

pub fn log(level: Level, message: &str) {
    logging::log(wit_level(level), message);
}

fn wit_level(level: Level) -> logging::Level {
    match level {
        Level::Error => logging::Level::Error,
        Level::Warn => logging::Level::Warn,
        Level::Info => logging::Level::Info,
        Level::Debug => logging::Level::Debug,
        Level::Trace => logging::Level::Trace,
    }
}

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

    fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
        pod_manager::get_pod_by_uid(uid)
    }

    fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
        pod_manager::get_mirror_pod_by_pod(pod_json)
    }

    fn translate_pod_uid(&mut self, uid: &str) -> String {
        pod_manager::translate_pod_uid(uid)
    }

    fn get_uid_translations(&mut self) -> UidTranslations {
        let t = pod_manager::get_uid_translations();
        UidTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod }
    }

    fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
        deletion_safety::pod_resources_are_reclaimed(pod_json, status_json)
    }

    fn now(&mut self) -> Timestamp {
        let types::Timestamp { seconds, nanoseconds } = clock::now();
        Timestamp { seconds, nanoseconds }
    }

    fn log(&mut self, level: Level, message: &str) {
        log(level, message);
    }

    fn log_enabled(&mut self, level: Level) -> bool {
        logging::enabled(wit_level(level))
    }

    fn push_sync_request(&mut self, request: SyncRequest) -> bool {
        sync_queue::push(&types::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version })
    }
}
