//! `kubelet:status/sync-queue`: the world's bounded queue.

use crate::bindings::kubelet::status::sync_queue as wit;
use crate::bindings::kubelet::status::types::SyncRequest;
use crate::imports::{HostState, MAX_UID_BYTES};
use crate::limits::FaultKind;

impl wit::Host for HostState {
    fn push(&mut self, request: SyncRequest) -> wasmtime::Result<bool> {
        self.charge("push", request.pod_uid.len() + 16)?;
        self.check_arg("push", "pod-uid", request.pod_uid.len())?;
        // Only a pod the host handed the plugin (in a call, in loaded state, or one of
        // the pod manager's) may be queued: the queue holds the host's names, never
        // the plugin's inventions.
        let known = request.pod_uid.len() <= MAX_UID_BYTES
            && (self.handed.contains(request.pod_uid.as_str())
                || self.world.pod_manager.get_any(&request.pod_uid).is_some());
        if !known {
            self.sandbox.breach = Some(FaultKind::ForeignUid);
            wasmtime::bail!(
                "push: pod UID {:?} ({} bytes) was never handed to the plugin",
                crate::shown::shown(&request.pod_uid),
                request.pod_uid.len()
            );
        }
        Ok(self.world.queue.push(request.into()))
    }
}

/// Contract 0.1.1 names the same import under its own version.
impl crate::bindings::v0_1_1::kubelet::status::sync_queue::Host for HostState {
    fn push(&mut self, request: OldRequest) -> wasmtime::Result<bool> {
        let request = SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        wit::Host::push(self, request)
    }
}

use crate::bindings::v0_1_1::kubelet::status::types::SyncRequest as OldRequest;
