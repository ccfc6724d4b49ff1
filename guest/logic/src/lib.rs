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
//! - A logic version (the crates `podstatus-logic-v1` to `-v4`) is a [`Policy`]: what
//!   an update caches, what a request plans, and how a sync writes ([`SyncPolicy`]).
//! - Since 1.27 a logic version is a [`Logic`]: a Kubernetes release's decisions
//!   ([`Release`]: its updates, merge and equality, each release in its own crate)
//!   written in a write mode ([`ReadThenPatch`], upstream's GET, merge and PATCH; or
//!   [`OneCall`], one PATCH per status version and no GET). What the releases do alike
//!   (the update skeleton, the signal and pass, `mergePodStatus`, the patch) is written
//!   once here, generic over the release.

mod api_pod;
mod engine;
mod error;
mod imports;
mod jobs;
mod manager;
mod outcomes;
mod release;
mod repeats;
mod resize;
mod status;
mod write_modes;

pub use api_pod::ApiPod;
pub use engine::Engine;
pub use engine::state::{STATE_CHANGES_FORMAT, STATE_FORMAT, STATE_VERSION};
pub use engine::sync_policy::{SyncPolicy, UnreadWrite, Write, WritePlan};
pub use error::{InvalidPod, ManagerError, Result};
pub use imports::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, Level, MISFIT_REPLY, StatusPatch, StatusUpdate, SyncRequest,
    Timestamp, UidTranslations,
};
pub use jobs::{BatchPlan, BatchSlice, PodSync, SyncOrigin, SyncStep, SyncTarget};
pub use manager::{ContainerProbe, Manager, Policy, StatusManager};
pub use outcomes::{BatchReport, CachedStatus, SyncOutcome, UpdateOutcome};
pub use release::{
    CONTAINER_STATUS_UNKNOWN, CONTAINER_STATUS_UNKNOWN_MESSAGE, CONTAINERS_READY, DISRUPTION_TARGET, Follows, Logic,
    POD_FAILED, POD_FAILED_REASON, POD_SCHEDULED, READINESS_GATES_NOT_READY, RESTART_ALWAYS, RESTART_ON_FAILURE,
    Release, UNKNOWN_EXIT_CODE, containers_ready_condition, containers_ready_for_terminal_phase, go_quote,
    initialized_containers, is_terminal, last_terminated, merge_pod_status, pod_ready_condition,
    pod_ready_for_terminal_phase, restart_policy, shared_by_kubelet, terminated, update_last_transition_time,
    update_pod_condition, waiting,
};
pub use resize::{
    MAX_RESIZE_MESSAGE_BYTES, MAX_RESIZE_REASON_BYTES, POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, ResizeCondition,
    ResizeConditions,
};
pub use status::{LastWritten, PendingSync, VersionedStatus};
pub use write_modes::{FirstDesign, OneCall, OneCallDesign, ReadThenPatch, Refined, WriteMode};
