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
