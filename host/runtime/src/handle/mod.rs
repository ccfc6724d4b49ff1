//! The thread-safe handle agents use, and the scheduler that drains the sync queue and
//! runs the periodic batch sync.
//!
//! One plugin instance is entered by one thread at a time (a mutex); the scheduler
//! waits on the queue without holding it, so callers and the scheduler interleave call
//! by call, as the seed's lock and sync goroutine do.
//!
//! A 0.2.0 plugin is entered only to compute: the scheduler plans a request's or a
//! batch's syncs, and API-call workers make each sync's calls holding nothing and
//! resume it under the lock for a moment ([`crate::sync_runner`]), so many pods' syncs
//! overlap and no caller waits for the network. A 0.1.x plugin calls the API server
//! inside `sync-pod`, while it holds the mutex, so anything such a call waits for is
//! waited for by every other thread too. For those the scheduler waits for the API
//! client's rate limit *before* it takes the lock ([`config::SchedulerConfig::admission`]);
//! the client itself keeps the waits inside short (see `podstatus_agent::kube_client`).
//!
//! One file per concern, each using only those above it here, so that none imports
//! another that imports it back (and this file imports none of them: the crate root
//! re-exports their public names):
//!
//! - [`accepted`] feeds the host's record of accepted statuses (replay feeds it too);
//! - [`admission`] waits for the API client's budget outside the lock, and sheds;
//! - [`plugin_lock`] is the plugin's mutex, and the turns sync steps take behind callers;
//! - [`config`] is [`config::SchedulerConfig`];
//! - [`shared`] is the state the handle, the scheduler and the API workers share;
//! - [`scheduler_v0_1`] makes a 0.1.x plugin's syncs, under the lock;
//! - [`scheduler_v0_2`] runs a 0.2.0 plugin's split syncs, its sliced batch, its queue order;
//! - [`scheduler`] is the scheduler's thread, picking one of the two by contract, and shutdown;
//! - [`hot_swap`] swaps the running plugin;
//! - [`manager`] is [`manager::ManagerHandle`], the Manager operations callers use, each a
//!   method that [`manager_methods`] generates from the one list of operations.

pub(crate) mod accepted;
pub(crate) mod admission;
pub(crate) mod config;
pub(crate) mod hot_swap;
pub(crate) mod manager;
mod manager_methods;
mod plugin_lock;
pub(crate) mod scheduler;
mod scheduler_v0_1;
mod scheduler_v0_2;
mod shared;

/// The `tracing` target of the handle's events: this module's path, as when the handle
/// was one file, so its log lines read the same whichever file logs them.
const TARGET: &str = module_path!();
