//! The kubelet's pod status manager as Kubernetes 1.27 has it (logic v2), as plain Rust.
//!
//! Logic v1 (`podstatus-logic-v1`) reproduces the 2017 status manager. This crate holds
//! what 1.27's status manager decides ([`Release127`], following upstream's
//! `pkg/kubelet/status/status_manager.go` at v1.27.16 with the `generate.go` of that
//! release and the 1.27 feature gates: `PodDisruptionConditions` on,
//! `PodHasNetworkCondition` and `InPlacePodVerticalScaling` off), and logic v2 is that
//! release written as upstream writes ([`V2`]: `podstatus_logic::ReadThenPatch`, a GET
//! and a strategic merge patch carrying the pod's UID). What 1.27 decides:
//!
//! - which conditions the kubelet owns, and which keep their transition time
//!   ([`conditions`]); equality ignores the conditions the kubelet does not own, and a
//!   kubelet condition removed is no change
//!   ([`conditions::is_pod_status_by_kubelet_equal`]);
//! - ContainersReady and Ready over the regular containers, with the readiness gates
//!   ([`generate`]);
//! - no container goes from terminated back to running unless its restart policy allows
//!   it, and the pod has initialized once its last init container exited 0
//!   ([`containers`]).
//!
//! What every release since 1.27 does alike is the engine's (`podstatus_logic`): startup
//! probes, `terminate-pod` (containers of unknown state terminated with exit code 137, a
//! terminal phase forced), `mergePodStatus` (conditions others own kept from the API
//! server, a terminal phase waiting until no container can still run, Ready false once
//! terminal), deletion once the phase is terminal and TerminatePod finished the pod
//! (`podIsFinished`, kept in the one state document), the one-slot signal and its pass,
//! the patch (merged into and diffed from the API server's status as it is), and the
//! cache, versions, batch and state document, the same for every version, so a running
//! agent can swap v1 to v4 both ways, even in the middle of a pod's termination.

pub mod conditions;
pub mod containers;
mod decisions;
pub mod generate;

pub use decisions::Release127;
pub use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Imports, Level,
    ManagerError, PodSync, Result, StatusManager, StatusPatch, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest,
    SyncStep, Timestamp, UidTranslations, UpdateOutcome,
};

/// Logic v2: Kubernetes 1.27's decisions, written as upstream writes (GET, merge over
/// the status read, PATCH under the pod's UID).
pub type V2 = podstatus_logic::Logic<Release127, podstatus_logic::ReadThenPatch>;

/// Logic v2's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V2>;
