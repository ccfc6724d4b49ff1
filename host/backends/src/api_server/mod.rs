//! The API server as the plugin sees it: the host's `api-server` import forwards to an
//! [`ApiServer`]. Implementations: [`MemoryApiServer`] (replay, tests, the embedded
//! server) here; the kube-rs client over HTTP(S) in `podstatus-agent`.
//! [`FaultyApiServer`] fails a fraction of calls, for simulations. The reach guard that
//! sits in front of any of them (`crate::reach_guard`) is not here: it reads the pod
//! manager, which follows the in-memory server.

mod faulty;
pub(crate) mod interface;
pub(crate) mod memory;

pub use faulty::{FaultyApiServer, InjectedFaults};
pub use interface::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};
pub use memory::{MemoryApiServer, PodEvent, PodListener, StoredStatus};
