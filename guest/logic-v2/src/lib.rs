//! The kubelet's pod status manager as Kubernetes 1.27 has it (logic v2), as plain Rust.
//!
//! Logic v1 (`podstatus-logic-v1`) reproduces the 2017 status manager. This crate follows
//! upstream's `pkg/kubelet/status/status_manager.go` at commit 0033cb0a (1.27), with the
//! `generate.go` of that release and the 1.27 feature gates (`PodDisruptionConditions`
//! on, `PodHasNetworkCondition` and `InPlacePodVerticalScaling` off). What it changes:
//!
//! - status writes are strategic merge patches carrying the pod's UID ([`patch`]);
//! - conditions the kubelet does not own are kept from the API server, a terminal phase
//!   waits until no container can still run, and Ready/ContainersReady are false once
//!   the phase is terminal ([`conditions::merge_pod_status`]);
//! - equality ignores the conditions the kubelet does not own
//!   ([`conditions::is_pod_status_by_kubelet_equal`]);
//! - ContainersReady and readiness gates ([`generate`]), startup probes
//!   (`set_container_startup`);
//! - `terminate-pod` marks only containers of unknown state terminated (exit code 137)
//!   and forces a terminal phase; no container goes from terminated back to running
//!   unless its restart policy allows it ([`containers`]);
//! - deletion waits for a terminal phase in the API server and for TerminatePod
//!   (`podIsFinished`, kept in v1's state document, which v1 carries untouched);
//! - a sync request is 1.27's one-slot signal: at most one is queued, and handling it
//!   tries every unwritten pod once (its `plan_sync_pod`);
//! - the status is merged into and patched from the API server's status as it is
//!   (not normalised), and the patch is empty only when Go's JSON of both is equal.
//!
//! Everything else is the engine's (`podstatus_logic::Engine`): the cache, the written
//! versions, the queued snapshots, the batch and the state document (the same format
//! for every version, read and written, so a running agent can swap v1, v2 and v3 both
//! ways, even in the middle of a pod's termination: upstream's `podIsFinished` is a
//! field of the cached status that v1 keeps without reading it).

pub mod conditions;
pub mod containers;
pub mod generate;
mod go_quote;
mod imports;
pub mod patch;
mod policy;
mod sync;
mod updates;

pub use go_quote::go_quote;
pub use imports::{Imports, StatusPatch, V1Imports};
pub use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Level, ManagerError,
    PodSync, Result, StatusManager, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest, SyncStep, Timestamp,
    UidTranslations, UpdateOutcome,
};
pub use policy::{Manager, V2};
pub use sync::{call_api, now};
pub use updates::enqueue;
pub use updates::{Found, find_container};
