//! What every contract's glue does alike. The contract versions' generated types are
//! distinct (each WIT package generates its own), so the shared code is written once
//! here as macros that each contract module expands over its own bindings.

/// A contract module's bindings and the glue every contract has alike, for the module
/// it is expanded in: `generate!` of the contract's world (`$world`, included under a
/// name of its own: the generated export macros are named after the world, and the
/// three contracts' worlds share one name), the plugin type ([`plugin_type`]), the
/// outcome conversions, the API error conversion (from `$api_error`) and logging.
macro_rules! contract {
    (world: $world:literal, path: $path:literal, module: $module:literal, api_error: $api_error:path $(,)?) => {
        wit_bindgen::generate!({
            inline: $world,
            path: $path,
            generate_all,
            pub_export_macro: true,
            default_bindings_module: $module,
        });

        $crate::shared::plugin_type!();
        $crate::shared::outcome_conversions!();
        $crate::shared::api_error_conversion!($api_error);
        $crate::shared::logging!();
    };
}
pub(crate) use contract;

/// Traps where it stands when the failpoint `$id` is armed (only in the `failpoints`
/// build; see [`crate::failpoints`]), for the contract module it is used in.
macro_rules! failpoint {
    ($id:ident) => {
        #[cfg(feature = "failpoints")]
        $crate::failpoints::hit($crate::failpoints::$id, kubelet::status::clock::now().nanoseconds);
    };
}
pub(crate) use failpoint;

/// No failpoint: for the entry points of a contract that has none there.
macro_rules! no_failpoint {
    ($id:ident) => {};
}
pub(crate) use no_failpoint;

/// The thread-local manager of a plugin instance and [`Plugin`](crate::contract_0_2_0::Plugin),
/// the type a plugin program exports: expanded in a contract module, whose
/// `WitImports` the manager runs over.
macro_rules! plugin_type {
    () => {
        thread_local! {
            /// The one manager of this instance, made on the first call. The host
            /// serialises calls, so the borrow is never contended; none is held
            /// across calls.
            static MANAGER: std::cell::RefCell<Option<Box<dyn podstatus_logic::StatusManager>>> =
                const { std::cell::RefCell::new(None) };
        }

        /// The plugin of logic version `P` on this contract: what a plugin program
        /// exports.
        pub struct Plugin<P>(std::marker::PhantomData<P>);

        impl<P: podstatus_logic::Policy<WitImports> + Default + 'static> Plugin<P> {
            /// Runs `f` on the instance's manager.
            fn with<T>(f: impl FnOnce(&mut dyn podstatus_logic::StatusManager) -> T) -> T {
                MANAGER.with(|cell| {
                    let mut slot = cell.borrow_mut();
                    let manager = slot
                        .get_or_insert_with(|| Box::new(podstatus_logic::Manager::<WitImports, P>::new(WitImports)));
                    f(manager.as_mut())
                })
            }
        }
    };
}
pub(crate) use plugin_type;

/// The `Guest` methods every contract exports alike, for the `impl Guest for Plugin<P>`
/// block they are expanded in (`wit` is the contract's generated `manager` module).
/// `$fp` names a macro run with each entry point's failpoint ID first.
macro_rules! common_exports {
    ($fp:ident) => {
        fn get_pod_status(uid: String) -> Option<wit::CachedStatus> {
            $fp!(GET_POD_STATUS);
            match Self::with(|m| m.get_pod_status(&uid)) {
                Ok(found) => found.map(|c| wit::CachedStatus { version: c.version, status: c.status }),
                Err(e) => {
                    log(podstatus_logic::Level::Error, &format!("get-pod-status {uid}: {e}"));
                    None
                }
            }
        }

        fn set_pod_status(pod: String, status: String) -> Result<wit::UpdateOutcome, wit::ManagerError> {
            $fp!(SET_POD_STATUS);
            Self::with(|m| m.set_pod_status(&pod, &status)).map(update_outcome).map_err(manager_error)
        }

        fn set_container_readiness(
            pod_uid: String,
            container_id: String,
            ready: bool,
        ) -> Result<wit::UpdateOutcome, wit::ManagerError> {
            $fp!(SET_CONTAINER_READINESS);
            Self::with(|m| m.set_container_readiness(&pod_uid, &container_id, ready))
                .map(update_outcome)
                .map_err(manager_error)
        }

        fn terminate_pod(pod: String) -> Result<wit::UpdateOutcome, wit::ManagerError> {
            $fp!(TERMINATE_POD);
            Self::with(|m| m.terminate_pod(&pod)).map(update_outcome).map_err(manager_error)
        }

        fn remove_orphaned_statuses(keep: Vec<String>) -> u32 {
            $fp!(REMOVE_ORPHANED_STATUSES);
            Self::with(|m| m.remove_orphaned_statuses(&keep))
        }

        fn save_state() -> String {
            // Serialising our own types cannot fail; if it ever did, an empty document
            // would lose state silently, so trap instead: the host keeps its last copy.
            let state = Self::with(|m| m.save_state()).unwrap_or_else(|e| panic!("save-state: {e}"));
            #[cfg(feature = "lies")]
            let state = $crate::lies::state(state);
            state
        }

        fn load_state(state: String) -> Result<(), wit::ManagerError> {
            Self::with(|m| m.load_state(&state)).map_err(manager_error)
        }

        fn save_state_changes() -> String {
            $fp!(SAVE_STATE_CHANGES);
            // As for save-state: losing changes silently would be worse than trapping.
            let changes = Self::with(|m| m.save_state_changes()).unwrap_or_else(|e| panic!("save-state-changes: {e}"));
            #[cfg(feature = "lies")]
            let changes = $crate::lies::changes(changes);
            changes
        }

        fn apply_state_changes(changes: String) -> Result<(), wit::ManagerError> {
            Self::with(|m| m.apply_state_changes(&changes)).map_err(manager_error)
        }
    };
}
pub(crate) use common_exports;

/// `set-container-startup` (contract 0.1.1 and later), for the `impl Guest` block it is
/// expanded in.
macro_rules! startup_export {
    () => {
        fn set_container_startup(
            pod_uid: String,
            container_id: String,
            started: bool,
        ) -> Result<wit::UpdateOutcome, wit::ManagerError> {
            Self::with(|m| m.set_container_startup(&pod_uid, &container_id, started))
                .map(update_outcome)
                .map_err(manager_error)
        }
    };
}
pub(crate) use startup_export;

/// The logic's outcomes as the contract's `manager` types (the same cases in every
/// contract version), for the module they are expanded in.
macro_rules! outcome_conversions {
    () => {
        /// An update's outcome.
        fn update_outcome(o: podstatus_logic::UpdateOutcome) -> wit::UpdateOutcome {
            use podstatus_logic::UpdateOutcome as O;
            match o {
                O::Queued => wit::UpdateOutcome::Queued,
                O::QueueFull => wit::UpdateOutcome::QueueFull,
                O::Unchanged => wit::UpdateOutcome::Unchanged,
                O::PodNotFound => wit::UpdateOutcome::PodNotFound,
                O::NotCached => wit::UpdateOutcome::NotCached,
                O::UnknownContainer => wit::UpdateOutcome::UnknownContainer,
            }
        }

        /// A sync's outcome.
        fn sync_outcome(o: podstatus_logic::SyncOutcome) -> wit::SyncOutcome {
            use podstatus_logic::SyncOutcome as O;
            match o {
                O::UpToDate => wit::SyncOutcome::UpToDate,
                O::PodNotFound => wit::SyncOutcome::PodNotFound,
                O::GetFailed => wit::SyncOutcome::GetFailed,
                O::Recreated => wit::SyncOutcome::Recreated,
                O::WriteFailed => wit::SyncOutcome::WriteFailed,
                O::Written => wit::SyncOutcome::Written,
                O::Deleted => wit::SyncOutcome::Deleted,
                O::DeleteFailed => wit::SyncOutcome::DeleteFailed,
            }
        }

        /// A batch's report.
        fn batch_report(r: podstatus_logic::BatchReport) -> wit::BatchReport {
            wit::BatchReport { synced: r.synced, reconciled: r.reconciled, failed: r.failed }
        }
    };
}
pub(crate) use outcome_conversions;

/// The contract's API error as the logic's, for the module it is expanded in
/// (`$wit` is the generated module that defines `ApiError`).
macro_rules! api_error_conversion {
    ($wit:path) => {
        fn api_error(e: $wit) -> podstatus_logic::ApiError {
            use podstatus_logic::ApiError;
            type Wit = $wit;
            match e {
                Wit::NotFound(m) => ApiError::NotFound(m),
                Wit::Conflict(m) => ApiError::Conflict(m),
                Wit::Forbidden(m) => ApiError::Forbidden(m),
                Wit::Other(m) => ApiError::Other(m),
            }
        }
    };
}
pub(crate) use api_error_conversion;

/// The logic's imports that every contract forwards alike (pod manager, deletion
/// safety's `pod-resources-are-reclaimed`, clock, logging, sync queue), for the
/// `impl Imports for WitImports` block it is expanded in; their WIT imports keep their
/// names from 0.1.0 to 0.2.0 (only the package version differs). A glue with faults on
/// demand passes what runs before a push (`before_push: { ... }`).
macro_rules! forward_world_imports {
    () => {
        $crate::shared::forward_world_imports!(before_push: {});
    };
    (before_push: $before_push:block) => {
        fn get_pod_by_uid(&mut self, uid: &str) -> Option<String> {
            kubelet::status::pod_manager::get_pod_by_uid(uid)
        }

        fn get_mirror_pod_by_pod(&mut self, pod_json: &str) -> Option<String> {
            kubelet::status::pod_manager::get_mirror_pod_by_pod(pod_json)
        }

        fn translate_pod_uid(&mut self, uid: &str) -> String {
            kubelet::status::pod_manager::translate_pod_uid(uid)
        }

        fn get_uid_translations(&mut self) -> podstatus_logic::UidTranslations {
            let t = kubelet::status::pod_manager::get_uid_translations();
            podstatus_logic::UidTranslations { pod_to_mirror: t.pod_to_mirror, mirror_to_pod: t.mirror_to_pod }
        }

        fn pod_resources_are_reclaimed(&mut self, pod_json: &str, status_json: &str) -> bool {
            kubelet::status::deletion_safety::pod_resources_are_reclaimed(pod_json, status_json)
        }

        fn now(&mut self) -> podstatus_logic::Timestamp {
            let kubelet::status::types::Timestamp { seconds, nanoseconds } = kubelet::status::clock::now();
            podstatus_logic::Timestamp { seconds, nanoseconds }
        }

        fn log(&mut self, level: podstatus_logic::Level, message: &str) {
            log(level, message);
        }

        fn log_enabled(&mut self, level: podstatus_logic::Level) -> bool {
            kubelet::status::logging::enabled(wit_level(level))
        }

        fn push_sync_request(&mut self, request: podstatus_logic::SyncRequest) -> bool {
            $before_push
            let request = kubelet::status::types::SyncRequest {
                id: request.id,
                pod_uid: request.pod_uid,
                version: request.version,
            };
            kubelet::status::sync_queue::push(&request)
        }
    };
}
pub(crate) use forward_world_imports;

/// Logging through the host, for the module it is expanded in: `log` (the glue's own
/// messages) and `wit_level`.
macro_rules! logging {
    () => {
        /// Logs through the host.
        fn log(level: podstatus_logic::Level, message: &str) {
            kubelet::status::logging::log(wit_level(level), message);
        }

        /// The logic's level as the WIT `logging.level`.
        fn wit_level(level: podstatus_logic::Level) -> kubelet::status::logging::Level {
            use kubelet::status::logging::Level as Wit;
            use podstatus_logic::Level;
            match level {
                Level::Error => Wit::Error,
                Level::Warn => Wit::Warn,
                Level::Info => Wit::Info,
                Level::Debug => Wit::Debug,
                Level::Trace => Wit::Trace,
            }
        }
    };
}
pub(crate) use logging;

/// The logic's API-server imports on contract 0.1.x's `api-server` interface (the same
/// in 0.1.0 and 0.1.1), for the `impl Imports for WitImports` block it is expanded in.
/// A glue with faults on demand passes what runs before a status write.
macro_rules! api_server_imports {
    () => {
        $crate::shared::api_server_imports!(before_write: {});
    };
    (before_write: $before_write:block) => {
        fn get_pod(&mut self, namespace: &str, name: &str) -> Result<String, podstatus_logic::ApiError> {
            kubelet::status::api_server::get_pod(namespace, name).map_err(api_error)
        }

        fn update_pod_status(&mut self, update: podstatus_logic::StatusUpdate) -> Result<String, podstatus_logic::ApiError> {
            $before_write
            let update = kubelet::status::api_server::StatusUpdate {
                namespace: update.namespace,
                name: update.name,
                uid_precondition: update.uid_precondition,
                resource_version_precondition: update.resource_version_precondition,
                status: update.status,
            };
            kubelet::status::api_server::update_pod_status(&update).map_err(api_error)
        }

        fn delete_pod(
            &mut self,
            namespace: &str,
            name: &str,
            options: podstatus_logic::DeleteOptions,
        ) -> Result<(), podstatus_logic::ApiError> {
            let options = kubelet::status::api_server::DeleteOptions {
                uid_precondition: options.uid_precondition,
                grace_period_seconds: options.grace_period_seconds,
            };
            kubelet::status::api_server::delete_pod(namespace, name, &options).map_err(api_error)
        }
    };
}
pub(crate) use api_server_imports;

/// The logic's error as a contract 0.1.x `manager-error`, which names neither syncs
/// nor unsupported calls: only the blocking entry points are exported, and every logic
/// version a 0.1.x contract carries supports all of them.
macro_rules! manager_error_without_syncs {
    () => {
        fn manager_error(e: podstatus_logic::ManagerError) -> wit::ManagerError {
            use podstatus_logic::ManagerError as E;
            match e {
                E::InvalidPod(m) => wit::ManagerError::InvalidPod(m),
                E::InvalidStatus(m) => wit::ManagerError::InvalidStatus(m),
                E::UnknownRequest(id) => wit::ManagerError::UnknownRequest(id),
                // Only the split sync API of contract 0.2.0 names syncs; the blocking
                // entry points never return it.
                E::UnknownSync(id) => wit::ManagerError::UnknownRequest(id),
                E::InvalidState(m) | E::Unsupported(m) => wit::ManagerError::InvalidState(m),
            }
        }
    };
}
pub(crate) use manager_error_without_syncs;
