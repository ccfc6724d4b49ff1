//! The plugin's imports: one module per WIT interface, each only forwarding to the
//! [`World`]'s backends.
//!
//! The functions that do the forwarding work on JSON text and WIT types and are shared
//! with the native plugin, so the component and the native build see the same host.

use wasmtime::component::{HasSelf, Linker};

use crate::bindings::StatusManager;
use crate::world::World;

pub mod api_server;
pub mod clock;
pub mod deletion_safety;
pub mod logging;
pub mod pod_manager;
pub mod sync_queue;

/// What a plugin instance's store holds: the world its imports reach, nothing more.
pub struct HostState {
    pub(crate) world: World,
}

impl HostState {
    /// The state of an instance that will reach `world`.
    pub fn new(world: World) -> Self {
        HostState { world }
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
pub(crate) fn to_json<T: serde::Serialize>(value: &T) -> wasmtime::Result<String> {
    serde_json::to_string(value).map_err(|e| wasmtime::format_err!("serialising for the plugin: {e}"))
}

/// A pod as far as identity goes. The plugin may hand back a pod whose spec is not
/// fully valid (it was given that pod); only its metadata matters to the imports.
#[derive(serde::Deserialize)]
pub(crate) struct PodMeta {
    #[serde(default)]
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
}

impl PodMeta {
    pub(crate) fn into_pod(self) -> k8s_openapi::api::core::v1::Pod {
        k8s_openapi::api::core::v1::Pod { metadata: self.metadata, ..Default::default() }
    }
}
