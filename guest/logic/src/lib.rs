//! The kubelet's pod status manager, as plain Rust: one engine, and a trait for its
//! operations that every logic version implements through it.
//!
//! This crate knows nothing of WebAssembly: it talks to the world only through the
//! [`Imports`] trait, so the same code runs inside the component (through thin
//! wit-bindgen glue) and natively (benchmarks, fast fuzzing). Time comes only from
//! [`Imports::now`], and every map is ordered, so a run is reproducible byte for byte.
//!
//! - [`StatusManager`]: the operations, as the contract exports them; the glue of
//!   every contract version and the host's native plugin are written against it.
//! - [`Manager`]: its one implementation, the [`Engine`] (cache, versions, queue,
//!   syncs, state document) driven by a logic version's [`Policy`].
//! - A logic version (the crates `podstatus-logic-v1`, `-v2`, `-v3`) is a [`Policy`]:
//!   what an update caches, what a request plans, and how a sync writes
//!   ([`SyncPolicy`]).

mod api_pod;
mod engine;
mod error;
mod imports;
mod jobs;
mod manager;
mod outcomes;
mod repeats;
mod resize;
mod status;
mod sync_policy;

pub use api_pod::ApiPod;
pub use engine::Engine;
pub use engine::state::{STATE_CHANGES_FORMAT, STATE_FORMAT, STATE_VERSION};
pub use error::{InvalidPod, ManagerError, Result};
pub use imports::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level, MISFIT_REPLY, PatchImports, StatusPatch, StatusUpdate,
    SyncRequest, Timestamp, UidTranslations,
};
pub use jobs::{BatchPlan, BatchSlice, PodSync, SyncOrigin, SyncStep, SyncTarget};
pub use manager::{ContainerProbe, Manager, Policy, StatusManager};
pub use outcomes::{BatchReport, CachedStatus, SyncOutcome, UpdateOutcome};
pub use resize::{
    MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES, POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, ResizeCondition,
    ResizeConditions,
};
pub use status::{LastWritten, PendingSync, VersionedStatus};
pub use sync_policy::{SyncPolicy, UnreadWrite, Write, WritePlan};
