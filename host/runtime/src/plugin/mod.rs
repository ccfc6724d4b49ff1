//! Running the status-manager plugin as a sandboxed component ([`component`]), and
//! supervised ([`supervisor`]). Whatever runs a plugin answers the same [`Plugin`]
//! trait (the logic linked natively, `podstatus_plugins::NativePlugin`, too), so
//! everything above it runs any.

mod cache;
mod call_error;
mod component;
mod plugin_ext;
mod plugin_trait;
mod runtime;
pub mod split_sync;
mod supervisor;

pub use cache::{ArtifactCache, CacheOutcome, Evicted, EvictionPolicy, cache_key};
pub use call_error::{CallError, Result, describe};
pub use component::ComponentPlugin;
pub use plugin_ext::{PluginExt, unexpected_reply};
pub use plugin_trait::{Plugin, PluginMemory};
pub use runtime::{LoadError, PluginImage, PluginRuntime, PoolSize, RuntimeConfig};
pub use supervisor::{Backoff, RecoveryStats, SupervisedPlugin};
