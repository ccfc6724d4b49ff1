//! `kubelet:status/sync-queue`: the world's bounded queue.

use crate::bindings::kubelet::status::sync_queue as wit;
use crate::bindings::kubelet::status::types::SyncRequest;
use crate::imports::HostState;

impl wit::Host for HostState {
    fn push(&mut self, request: SyncRequest) -> wasmtime::Result<bool> {
        self.check_arg("push", "pod-uid", request.pod_uid.len())?;
        Ok(self.world.queue.push(request.into()))
    }
}
