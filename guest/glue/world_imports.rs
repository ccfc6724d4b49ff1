//! The logic's imports that every contract's glue forwards alike: pod manager, deletion
//! safety's `pod-resources-are-reclaimed`, clock, logging and sync queue. Their WIT
//! imports keep their names from 0.1.0 to 0.2.0 (only the package version differs), so
//! each glue crate includes this file (`#[path]`) as a child of its `imports` module,
//! whose own `use`s supply the logic's types, and expands
//! [`forward_world_imports`] in its `Imports` impl. What differs per contract (the API
//! server, v2's imports) stays in each crate.

use super::Level;
use crate::kubelet::status::logging;

/// Logs through the host, for the glue's own messages.
pub fn log(level: Level, message: &str) {
    logging::log(wit_level(level), message);
}

/// The logic's level as the WIT `logging.level`.
pub fn wit_level(level: Level) -> logging::Level {
    match level {
        Level::Error => logging::Level::Error,
        Level::Warn => logging::Level::Warn,
        Level::Info => logging::Level::Info,
        Level::Debug => logging::Level::Debug,
        Level::Trace => logging::Level::Trace,
    }
}

/// The `Imports` methods that forward to the world's WIT imports, for the impl block
/// it is expanded in (`UidTranslations`, `Timestamp`, `Level` and `SyncRequest` are the
/// calling module's, and the module this file is included as is `world`). A glue with
/// faults on demand passes what runs before a push (`before_push: { ... }`).
macro_rules! forward_world_imports {
    () => {
        world::forward_world_imports!(before_push: {});
    };
    (before_push: $before_push:block) => {
        fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
            crate::kubelet::status::pod_manager::get_pod_by_uid(uid)
        }

        fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
            crate::kubelet::status::pod_manager::get_mirror_pod_by_pod(pod_json)
        }

        fn translate_pod_uid(&mut self, uid: &str) -> String {
            crate::kubelet::status::pod_manager::translate_pod_uid(uid)
        }

        fn get_uid_translations(&mut self) -> UidTranslations {
            let t = crate::kubelet::status::pod_manager::get_uid_translations();
            UidTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod }
        }

        fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
            crate::kubelet::status::deletion_safety::pod_resources_are_reclaimed(pod_json, status_json)
        }

        fn now(&mut self) -> Timestamp {
            let crate::kubelet::status::types::Timestamp { seconds, nanoseconds } =
                crate::kubelet::status::clock::now();
            Timestamp { seconds, nanoseconds }
        }

        fn log(&mut self, level: Level, message: &str) {
            world::log(level, message);
        }

        fn log_enabled(&mut self, level: Level) -> bool {
            crate::kubelet::status::logging::enabled(world::wit_level(level))
        }

        fn push_sync_request(&mut self, request: SyncRequest) -> bool {
            $before_push
            let request = crate::kubelet::status::types::SyncRequest {
                id: request.id,
                pod_uid: request.pod_uid,
                version: request.version,
            };
            crate::kubelet::status::sync_queue::push(&request)
        }
    };
}
pub(crate) use forward_world_imports;
