//! The plugin's imports: one module per WIT interface, each only forwarding to the
//! [`World`]'s backends.
//!
//! The functions that do the forwarding work on JSON text and WIT types and are shared
//! with the native plugin, so the component and the native build see the same host.

use std::cell::Cell;

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::StatusManager;
use crate::plugin::limits::Sandbox;
use crate::world::World;

pub mod api_server;
pub mod clock;
pub mod deletion_safety;
pub mod logging;
pub mod pod_manager;
pub mod sync_queue;

/// What a plugin instance's store holds: the world its imports reach and the
/// sandbox's accounting.
pub struct HostState {
    pub(crate) world: World,
    pub(crate) sandbox: Sandbox,
}

impl HostState {
    /// The state of an instance that will reach `world` within `sandbox`'s limits.
    pub fn new(world: World, sandbox: Sandbox) -> Self {
        HostState { world, sandbox }
    }

    /// Traps when a string or list the plugin passed to `import` is over the limit.
    pub(crate) fn check_arg(&mut self, import: &str, what: &str, len: usize) -> wasmtime::Result<()> {
        self.sandbox.check_arg(import, what, len)
    }
}

impl crate::bindings::kubelet::status::types::Host for HostState {}

/// Adds every import of the `status-manager` world to `linker`.
pub fn add_to_linker(linker: &mut Linker<HostState>) -> wasmtime::Result<()> {
    StatusManager::add_to_linker::<HostState, HasSelf<HostState>>(linker, |state| state)
}

/// Parses what the plugin handed an import. The plugin is untrusted: text that is not
/// even JSON of the expected shape is a plugin bug, so the call traps with a message
/// naming the import.
pub(crate) fn parse_from_plugin<T: serde::de::DeserializeOwned>(
    import: &str,
    what: &str,
    json: &str,
) -> wasmtime::Result<T> {
    serde_json::from_str(json)
        .map_err(|e| wasmtime::format_err!("{import}: the plugin passed {what} that is not usable JSON: {e}"))
}

/// Serialises an object for the plugin. k8s-openapi's types always serialise; failing
/// here is a host bug, which traps.
///
/// The objects a thread serialises are mostly pods of similar size, so the buffer starts
/// at the size of the thread's previous one: that spares the several doublings (each a
/// reallocation and copy) of growing from empty to a pod's few kilobytes. The same text
/// as `serde_json::to_string`.
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> wasmtime::Result<String> {
    /// Beyond this a hint is not used: a rare huge object must not make every later
    /// buffer huge (nor push allocations past malloc's mmap threshold).
    const MAX_HINT: usize = 64 * 1024;
    thread_local! {
        static LAST_LEN: Cell<usize> = const { Cell::new(0) };
    }
    let hint = LAST_LEN.get();
    let mut buffer = Vec::with_capacity(if hint <= MAX_HINT { hint.max(128) } else { 128 });
    serde_json::to_writer(&mut buffer, value).map_err(|e| wasmtime::format_err!("serialising for the plugin: {e}"))?;
    LAST_LEN.set(buffer.len());
    // serde_json writes only UTF-8; checking it costs a fraction of a growth copy.
    String::from_utf8(buffer).map_err(|e| wasmtime::format_err!("serialising for the plugin: {e}"))
}

/// A pod as far as identity goes. The plugin may hand back a pod whose spec is not
/// fully valid (it was given that pod); only its metadata matters to the imports.
#[derive(serde::Deserialize)]
pub(crate) struct PodMeta {
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    /// Kept only when it is a valid status; a backend may look at it.
    #[serde(default)]
    pub status: Option<serde_json::Value>,
}

impl PodMeta {
    pub(crate) fn into_pod(self) -> k8s_openapi::api::core::v1::Pod {
        let status = self.status.and_then(|status| serde_json::from_value(status).ok());
        k8s_openapi::api::core::v1::Pod { metadata: self.metadata, status, ..Default::default() }
    }
}
