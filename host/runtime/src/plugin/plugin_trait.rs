//! The status manager's operations as the host calls them, whatever runs them.

use std::sync::Arc;

use podstatus_backends::HostView;

use crate::bindings::Contract;
use crate::calls::{Call, Reply};
use crate::handed::HandedPods;
use crate::plugin::call_error::Result;
use crate::world::World;

/// A status manager, whatever runs it (a component, the native logic, a layer over
/// another plugin): one [`call`](Plugin::call) for every operation, and the
/// lifecycle around it.
///
/// The typed methods (`plugin.set_pod_status(pod, status)`) are
/// [`PluginExt`](crate::PluginExt)'s, each a [`Call`] made through `call`: a layer
/// implements `call` once and sees every operation.
pub trait Plugin: Send {
    /// Makes `call`. The answer is the [`Reply`] variant the operation's list says
    /// (`set-pod-status` answers [`Reply::Update`]), or why there is none.
    fn call(&mut self, call: Call<'_>) -> Result<Reply>;
    /// The host's view of the node's pods, with its record of accepted statuses, from
    /// now on: a plugin that restores state by itself (the supervisor, after a fault)
    /// holds what it restores against the record. Ignored by default.
    fn observe(&mut self, _view: Arc<HostView>) {}
    /// The host's record of the pods whose status it handed this plugin, the only pods
    /// the plugin may reach ([`HandedPods`]); `None` for a plugin the host trusts as
    /// itself (the logic linked natively), which keeps none.
    fn handed(&self) -> Option<Arc<HandedPods>> {
        None
    }
    /// Reaches by `record` from now on, instead of its own: the record of the plugin
    /// this one takes over from (a swap, a recovery), which the host carries across.
    /// Called before any state is loaded into it. Ignored by default.
    fn carry_handed(&mut self, _record: Arc<HandedPods>) {}
    /// The world the plugin's imports reach: where the host makes the API calls a 0.2.0
    /// plugin's syncs ask for.
    fn world(&self) -> &World;
    /// Nobody follows this plugin's changes any more (a swap into it is done): a
    /// plugin that keeps them for a follower (the supervisor) drops them.
    fn stop_following(&mut self) {}
    /// The WIT package the plugin implements (`kubelet:status@0.1.0`, ...).
    fn contract(&self) -> Contract;
    /// What the plugin holds in memory now, for the memory account (`simulate
    /// --json`'s `memory`): nothing by default (the logic linked natively lives on the
    /// host's heap, where nothing counts it apart).
    fn memory(&self) -> PluginMemory {
        PluginMemory::default()
    }
}

/// Bytes a plugin holds, by where ([`Plugin::memory`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PluginMemory {
    /// The instance's linear memories, as large as the plugin grew them (wasmtime's
    /// size of each memory: what the sandbox charges against its limit).
    pub linear: usize,
    /// The supervisor's copy of the accepted state and the changes it keeps for a
    /// follower (its keys and entries as text).
    pub accepted_state: usize,
}
