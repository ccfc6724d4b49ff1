//! Runs the kubelet's pod status manager as an untrusted WebAssembly component.
//!
//! Data flows one way: an agent calls the [`ManagerHandle`] (or replay calls a
//! [`Plugin`] directly), the handle calls the plugin, the plugin calls back through its
//! imports (one module per WIT interface), and the imports forward to the backends of
//! its [`World`] (`podstatus-backends`). A [`PluginRuntime`] compiles a component once
//! (through a compiled-artifact cache) and instantiates it inside [`Limits`];
//! [`SupervisedPlugin`] recovers a faulted instance without losing a status; a running
//! handle hot-swaps to another plugin ([`ManagerHandle::swap`]).
//!
//! This crate has no HTTP server, no Kubernetes client and no command-line parser: an
//! agent embedding it compiles wasmtime and the backends, nothing else.

pub mod api;
pub mod bindings;
mod call_pool;
mod calls;
mod hand_digests;
mod handed;
mod handle;
mod host_imports;
mod imports;
mod limits;
mod plugin;
mod reach;
mod shown;
mod state_document;
mod swap;
mod sync_runner;
pub mod sync_table;
mod world;

pub use bindings::{Contract, ResizeCondition};
pub use call_pool::CallPool;
pub use calls::{Call, Effect, ManagerCall, Reply};
pub use handed::HandedPods;
pub use handle::accepted::note_accepted;
pub use handle::admission::{ADMISSION_WAIT_MAX, Admission, SYNC_BATCH_CALLS, SYNC_POD_CALLS};
pub use handle::config::{DEFAULT_CALL_PATIENCE, DEFAULT_MAX_CALLS_IN_FLIGHT, DEFAULT_SYNC_PERIOD, SchedulerConfig};
pub use handle::hot_swap::SWAP_DRAIN_MAX;
pub use handle::manager::ManagerHandle;
pub use handle::scheduler::Scheduler;
pub use host_imports::HostImports;
pub use limits::{
    CallUsage, FaultKind, Limits, MAX_RESIZE_CONDITION_BYTES, MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES,
};
pub use plugin::split_sync;
pub use plugin::{
    ArtifactCache, Backoff, CacheOutcome, CallError, ComponentPlugin, Evicted, EvictionPolicy, LoadError, Plugin,
    PluginExt, PluginImage, PluginMemory, PluginRuntime, PoolSize, RecoveryStats, Result, RuntimeConfig,
    SupervisedPlugin, cache_key, describe,
};
pub use state_document::{Findings, HeldState, RepairError};
pub use swap::{SwapError, SwapReport, apply_checked, load_checked, move_bulk, move_changes, repair_from_record};
pub use world::World;

/// For the typed methods `manager_methods!` generates in other crates.
#[doc(hidden)]
pub use plugin::unexpected_reply;
