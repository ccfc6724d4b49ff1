//! Backends the host's WIT imports forward to. A backend knows nothing of wasmtime: the
//! import impls are thin adapters, so the same backends serve replay, tests and, later,
//! a real cluster.

pub mod api_server;
pub mod clock;
pub mod deletion_safety;
pub mod pod_identity;
pub mod pod_manager;
pub mod sync_queue;

pub use api_server::{
    ApiError, ApiServer, DeleteOptions, GuardedApiServer, MemoryApiServer, PodEvent, PodListener, Refusals,
    StatusUpdate,
};
pub use pod_identity::{full_name, is_mirror_pod, is_static_pod};
pub use pod_manager::PodManager;
