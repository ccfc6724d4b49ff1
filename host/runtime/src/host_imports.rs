//! [`HostImports`]: the plugin's imports as plain functions over a [`World`], for a
//! plugin linked natively.

use crate::api;
use crate::bindings::kubelet::status::logging::Level;
use crate::bindings::kubelet::status::pod_manager::UidTranslations;
use crate::bindings::{ApiError, DeleteOptions, StatusPatch, StatusUpdate, SyncRequest, Timestamp};
use crate::imports::{deletion_safety, logging, pod_manager};
use crate::world::World;

/// What a plugin's imports do, on a [`World`], without a store or a sandbox: the very
/// functions the component's imports forward to, so that a plugin linked natively
/// (`podstatus_plugins::NativePlugin`) and its component differ only by the
/// WebAssembly boundary.
///
/// A host error that would trap a component (a host bug, such as a pod the logic
/// handed back that is not JSON) panics here: natively there is no sandbox to stop in.
/// Each method is `#[inline]`: the native plugin's imports compile to the calls they
/// make, as when they were written in the same crate (a probe result that changes
/// nothing is one pod manager read, 35 ns in all).
#[derive(Clone)]
pub struct HostImports {
    world: World,
}

fn host_bug<T>(result: wasmtime::Result<T>) -> T {
    result.unwrap_or_else(|e| panic!("host import failed: {e:#}"))
}

impl HostImports {
    /// The imports of a plugin whose world is `world`.
    #[inline]
    pub fn new(world: World) -> Self {
        HostImports { world }
    }

    /// The world they reach.
    #[inline]
    pub fn world(&self) -> &World {
        &self.world
    }

    /// `api-server.get-pod` (contract 0.1.x).
    #[inline]
    pub fn get_pod(&self, namespace: &str, name: &str) -> Result<String, ApiError> {
        host_bug(api::get_pod(&self.world, namespace, name))
    }

    /// `api-server.update-pod-status` (contract 0.1.x).
    #[inline]
    pub fn update_pod_status(&self, update: StatusUpdate) -> Result<String, ApiError> {
        host_bug(api::update_pod_status(&self.world, update))
    }

    /// `api-server.patch-pod-status` (contract 0.1.x).
    #[inline]
    pub fn patch_pod_status(&self, patch: StatusPatch) -> Result<String, ApiError> {
        host_bug(api::patch_pod_status(&self.world, patch))
    }

    /// `api-server.delete-pod` (contract 0.1.x).
    #[inline]
    pub fn delete_pod(&self, namespace: &str, name: &str, options: DeleteOptions) -> Result<(), ApiError> {
        api::delete_pod(&self.world, namespace, name, options)
    }

    /// `pod-manager.get-pod-by-uid`.
    #[inline]
    pub fn get_pod_by_uid(&self, uid: &str) -> Option<String> {
        host_bug(pod_manager::get_pod_by_uid(&self.world, uid))
    }

    /// Whether the pod manager holds the pod `uid`: its answer without serialising the
    /// pod (what a probe result that changes nothing asks).
    #[inline]
    pub fn has_pod(&self, uid: &str) -> bool {
        self.world.pod_manager.get_pod_by_uid(uid).is_some()
    }

    /// `pod-manager.get-mirror-pod-by-pod`.
    #[inline]
    pub fn get_mirror_pod_by_pod(&self, pod_json: &str) -> Option<String> {
        host_bug(pod_manager::get_mirror_pod_by_pod(&self.world, pod_json))
    }

    /// `pod-manager.translate-pod-uid`.
    #[inline]
    pub fn translate_pod_uid(&self, uid: &str) -> String {
        self.world.pod_manager.translate_pod_uid(uid)
    }

    /// `pod-manager.get-uid-translations`.
    #[inline]
    pub fn get_uid_translations(&self) -> UidTranslations {
        pod_manager::get_uid_translations(&self.world)
    }

    /// `deletion-safety.pod-resources-are-reclaimed`.
    #[inline]
    pub fn pod_resources_are_reclaimed(&self, pod_json: &str, status_json: &str) -> bool {
        host_bug(deletion_safety::pod_resources_are_reclaimed(&self.world, pod_json, status_json))
    }

    /// `deletion-safety.pod-could-have-running-containers`.
    #[inline]
    pub fn pod_could_have_running_containers(&self, pod_json: &str) -> bool {
        host_bug(deletion_safety::pod_could_have_running_containers(&self.world, pod_json))
    }

    /// `clock.now`.
    #[inline]
    pub fn now(&self) -> Timestamp {
        self.world.clock.now()
    }

    /// `logging.log`.
    #[inline]
    pub fn log(&self, level: Level, message: &str) {
        logging::log(level, message);
    }

    /// `logging.enabled`.
    #[inline]
    pub fn log_enabled(&self, level: Level) -> bool {
        logging::enabled(level)
    }

    /// `sync-queue.push`: false when the queue is full.
    #[inline]
    pub fn push_sync_request(&self, request: SyncRequest) -> bool {
        self.world.queue.push(request)
    }
}
