//! The API server as the plugin sees it: the host's `api-server` import forwards to an
//! [`ApiServer`]. Implementations: [`MemoryApiServer`] (replay, tests, the embedded
//! server) here; the kube-rs client over HTTP(S) in `podstatus-agent`.
//! [`GuardedApiServer`] sits in front of any of them and keeps the plugin to the pods of
//! its node; [`FaultyApiServer`] fails a fraction of calls, for simulations.

mod faulty;
mod guarded;
pub(crate) mod interface;
pub(crate) mod memory;

pub use faulty::{FaultyApiServer, InjectedFaults};
pub use guarded::{GuardedApiServer, Refusals};
pub use interface::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
pub use memory::{MemoryApiServer, PodEvent, PodListener};
