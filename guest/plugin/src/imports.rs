//! The logic's imports on the component's WIT imports. Contract 0.2.0 has no
//! api-server import: the API-server methods fail with a clear message (the logic never
//! calls them in this build; the host makes a sync's calls).

use podstatus_logic::{ApiError, DeleteOptions, Level, StatusUpdate, SyncRequest, Timestamp, UidTranslations};

use crate::kubelet::status::{clock, deletion_safety, logging, pod_manager, sync_queue, types};
use crate::no_api_server;

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

/// Logs through the host, for the glue's own messages.
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
