//! The host of the podstatus plugin: it loads the status manager as an untrusted
//! WebAssembly component, supplies its imports from real backends and drives it.
//!
//! Data flows one way: an agent calls the [`handle::ManagerHandle`] (or the replay
//! runner), which calls the [`plugin`]; the plugin calls back through the [`imports`],
//! which forward to the [`backends`]. Nothing below the plugin knows wasmtime.

pub mod agent;
pub mod backends;
pub mod bindings;
pub mod components;
pub mod embedded_server;
pub mod fuzz;
pub mod handle;
pub mod imports;
pub mod inspect;
pub mod metrics;
pub mod plugin;
pub mod replay;
pub mod simulate;
pub mod swap;
pub mod world;

#[cfg(test)]
mod test_pods;
