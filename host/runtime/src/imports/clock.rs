//! `kubelet:status/clock`: the world's clock, the plugin's only time source.

use crate::bindings::kubelet::status::clock as wit;
use crate::bindings::kubelet::status::types::Timestamp;
use crate::imports::HostState;

impl wit::Host for HostState {
    fn now(&mut self) -> wasmtime::Result<Timestamp> {
        self.charge("now", 0)?;
        Ok(self.world.clock.now().into())
    }
}

/// Contract 0.1.1 names the same import under its own version.
impl crate::bindings::v0_1_1::kubelet::status::clock::Host for HostState {
    fn now(&mut self) -> wasmtime::Result<OldTimestamp> {
        let now = wit::Host::now(self)?;
        Ok(OldTimestamp { seconds: now.seconds, nanoseconds: now.nanoseconds })
    }
}

use crate::bindings::v0_1_1::kubelet::status::types::Timestamp as OldTimestamp;
