//! Running the status-manager plugin: as a sandboxed component ([`component`]), or
//! natively from the same logic crate ([`native`]) for benchmarks and fast fuzzing.
//! Both answer the same [`Plugin`] trait, so everything above them runs either.

mod cache;
mod call_error;
mod component;
pub(crate) mod limits;
mod native;
mod plugin_trait;
mod runtime;
pub mod split_sync;
mod supervisor;

pub use cache::{ArtifactCache, CacheOutcome, Evicted, EvictionPolicy, cache_key};
pub use call_error::{CallError, Result, describe};
pub use component::ComponentPlugin;
pub use limits::{
    CallUsage, FaultKind, Limits, MAX_RESIZE_CONDITION_BYTES, MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES,
};
pub use native::{LogicVersion, NativePlugin};
pub use plugin_trait::Plugin;
pub use runtime::{LoadError, PluginImage, PluginRuntime, PoolSize, RuntimeConfig};
pub use supervisor::{Backoff, RecoveryStats, SupervisedPlugin};
