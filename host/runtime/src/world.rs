//! The backends one plugin instance talks to through its imports.

use std::sync::Arc;

use podstatus_backends::ApiServer;
use podstatus_backends::Clock;
use podstatus_backends::DeletionSafety;
use podstatus_backends::HostView;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;

/// Everything outside the plugin. Cheap to clone: each backend is shared (`Arc`)
/// between the plugin's imports and whoever drives the world (scheduler, replay, tests).
#[derive(Clone)]
pub struct World {
    /// Where statuses are written.
    pub api_server: Arc<dyn ApiServer>,
    /// The node's pods, static and mirror pods included.
    pub pod_manager: Arc<PodManager>,
    /// Whether a terminated pod's resources are reclaimed.
    pub deletion_safety: Arc<dyn DeletionSafety>,
    /// The plugin's only time source.
    pub clock: Arc<dyn Clock>,
    /// The sync queue the scheduler drains.
    pub queue: Arc<SyncQueue>,
}

impl World {
    /// This world with the plugin's reach enforced by the host: the plugin may read and
    /// write only the pods of this node (its pod manager's, or bound to `node_name`),
    /// write only their status, pinned to a UID the node owns and with only the IPs the
    /// node reported (`host_view`), and delete only a pod being deleted, never a mirror
    /// pod, once `host_view` says none of its containers can run (see
    /// [`podstatus_backends::GuardedApiServer`]). Whoever hands the plugin its statuses
    /// must feed `host_view` (the agent: [`crate::ManagerHandle::observe`]). What an
    /// agent running an untrusted plugin should use.
    pub fn guarded(mut self, node_name: Option<String>, host_view: Arc<HostView>) -> World {
        let guard = podstatus_backends::GuardedApiServer::new(
            Arc::clone(&self.api_server),
            Arc::clone(&self.pod_manager),
            node_name,
            host_view,
        );
        self.api_server = Arc::new(guard);
        self
    }
}
