//! [`WorldImports`]: `podstatus_logic::Imports` over the host's own imports
//! ([`HostImports`]), for the logic linked natively.

use podstatus_logic as logic;
use podstatus_runtime::HostImports;
use podstatus_runtime::bindings::kubelet::status::logging::Level;
use podstatus_runtime::bindings::{ApiError, DeleteOptions, StatusPatch, StatusUpdate, SyncRequest};

/// `podstatus_logic::Imports` on a world: each import converted to the host's types
/// and made by [`HostImports`], as the component's imports make it. A host error that
/// would trap a component (a host bug) panics there: natively there is no sandbox to
/// stop in.
pub(crate) struct WorldImports {
    pub(crate) host: HostImports,
}

fn logic_api_error(e: ApiError) -> logic::ApiError {
    match e {
        ApiError::NotFound(m) => logic::ApiError::NotFound(m),
        ApiError::Conflict(m) => logic::ApiError::Conflict(m),
        ApiError::Forbidden(m) => logic::ApiError::Forbidden(m),
        ApiError::Other(m) => logic::ApiError::Other(m),
    }
}

fn wit_level(level: logic::Level) -> Level {
    match level {
        logic::Level::Error => Level::Error,
        logic::Level::Warn => Level::Warn,
        logic::Level::Info => Level::Info,
        logic::Level::Debug => Level::Debug,
        logic::Level::Trace => Level::Trace,
    }
}

impl logic::Imports for WorldImports {
    fn get_pod(&mut self, namespace: &str, name: &str) -> std::result::Result<String, logic::ApiError> {
        self.host.get_pod(namespace, name).map_err(logic_api_error)
    }

    fn update_pod_status(&mut self, update: logic::StatusUpdate) -> std::result::Result<String, logic::ApiError> {
        let update = StatusUpdate {
            namespace: update.namespace,
            name: update.name,
            uid_precondition: update.uid_precondition,
            resource_version_precondition: update.resource_version_precondition,
            status: update.status,
        };
        self.host.update_pod_status(update).map_err(logic_api_error)
    }

    fn delete_pod(
        &mut self,
        namespace: &str,
        name: &str,
        options: logic::DeleteOptions,
    ) -> std::result::Result<(), logic::ApiError> {
        let options = DeleteOptions {
            uid_precondition: options.uid_precondition,
            grace_period_seconds: options.grace_period_seconds,
        };
        self.host.delete_pod(namespace, name, options).map_err(logic_api_error)
    }

    fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
        self.host.get_pod_by_uid(uid)
    }

    /// Asked by a probe result that changes nothing: the pod manager's answer without
    /// serialising the pod.
    fn has_pod(&mut self, uid: &str) -> bool {
        self.host.has_pod(uid)
    }

    fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
        self.host.get_mirror_pod_by_pod(pod_json)
    }

    fn translate_pod_uid(&mut self, uid: &str) -> String {
        self.host.translate_pod_uid(uid)
    }

    fn get_uid_translations(&mut self) -> logic::UidTranslations {
        let t = self.host.get_uid_translations();
        logic::UidTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod }
    }

    fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
        self.host.pod_resources_are_reclaimed(pod_json, status_json)
    }

    fn now(&mut self) -> logic::Timestamp {
        let now = self.host.now();
        logic::Timestamp { seconds: now.seconds, nanoseconds: now.nanoseconds }
    }

    fn log(&mut self, level: logic::Level, message: &str) {
        self.host.log(wit_level(level), message);
    }

    fn log_enabled(&mut self, level: logic::Level) -> bool {
        self.host.log_enabled(wit_level(level))
    }

    fn push_sync_request(&mut self, request: logic::SyncRequest) -> bool {
        self.host.push_sync_request(SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version })
    }

    fn patch_pod_status(&mut self, patch: logic::StatusPatch) -> std::result::Result<String, logic::ApiError> {
        let patch = StatusPatch {
            namespace: patch.namespace,
            name: patch.name,
            uid_precondition: patch.uid_precondition,
            patch: patch.patch,
        };
        self.host.patch_pod_status(patch).map_err(logic_api_error)
    }

    fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
        self.host.pod_could_have_running_containers(pod_json)
    }
}
