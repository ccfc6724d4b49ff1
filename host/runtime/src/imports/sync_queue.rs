//! `kubelet:status/sync-queue`: the world's bounded queue.

use crate::bindings::kubelet::status::sync_queue as wit;
use crate::bindings::kubelet::status::types::SyncRequest;
use crate::imports::HostState;
use crate::limits::FaultKind;

impl wit::Host for HostState {
    fn push(&mut self, request: SyncRequest) -> wasmtime::Result<bool> {
        self.charge("push", request.pod_uid.len() + 16)?;
        self.check_arg("push", "pod-uid", request.pod_uid.len())?;
        self.note_pending();
        // Only a pod whose status the host handed the plugin may be queued: the queue
        // holds the host's names, never the plugin's inventions, nor the pod manager's
        // pods the plugin was never told of.
        if !self.may_reach(&request.pod_uid) {
            self.sandbox.breach = Some(FaultKind::ForeignUid);
            wasmtime::bail!(
                "push: pod UID {:?} ({} bytes) is not a pod whose status the host handed the plugin",
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
