//! Kubernetes 1.35's status manager and the releases since: what 1.35 decides
//! ([`Release135`], following upstream's `pkg/kubelet/status/status_manager.go` and
//! `generate.go` at v1.35.4, every feature gate at its 1.35 default) and what 1.37
//! decides differently ([`Release137`]: both are [`Kubelet`], 1.35's decisions and
//! where each later release decides otherwise), each written as upstream writes
//! (`--logic 1.35`: [`Kubelet135`]; `--logic 1.37`: [`Kubelet137`]) or in the one-call
//! mode (`--logic 1.35-one-call`, logic v4: [`V4`]; `--logic 1.37-one-call`:
//! [`Kubelet137OneCall`]).
//!
//! What 1.35 decides differently from 1.27 (`podstatus-logic-v2`), each in its module:
//!
//! - `status.observedGeneration` is the pod's `metadata.generation` and never moves
//!   backwards; Ready and ContainersReady (also those of a terminal phase) carry the
//!   generation as their `observedGeneration` (KEP-5067, [`pod_spec`], [`generate`]);
//! - PodReadyToStartContainers (KEP-3085) and the in-place resize conditions
//!   PodResizePending / PodResizeInProgress (KEP-1287) are the kubelet's own
//!   ([`conditions::owned_by_kubelet`]); the resize conditions themselves are kept by
//!   the engine per pod UID (`podstatus_logic::Engine::set_resize_condition`);
//! - sidecars (KEP-753): readiness counts restartable init containers, a pod has
//!   initialized once its last init container, if a sidecar, runs and has started,
//!   and the illegal-transition check covers init containers, skipping sidecars
//!   ([`containers`]); readiness is regenerated over init and regular statuses;
//! - equality compares the kubelet's conditions both ways (a removed one is a change,
//!   [`conditions`]) and the merge keeps the API server's resource-claim statuses;
//! - a container's own restart policy and rules (KEP-5307, `ContainerRestartRules`)
//!   let it leave terminated ([`containers`]); AllContainersRestarting keeps its
//!   transition time; ephemeral container statuses are normalised and sorted by name.
//!
//! Everything else is every release's (`podstatus_logic`: the update skeleton, the sync
//! signal and pass, `terminate-pod`'s container states, `mergePodStatus`, deletion) or
//! the engine's (cache, versions, batch, the state document, the same for v1 to v4, so
//! a running agent swaps among them both ways).

pub mod conditions;
pub mod containers;
mod decisions;
pub mod generate;
pub mod pod_spec;

pub use decisions::{Kubelet, Release135, Release137};
pub use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Imports, Level,
    ManagerError, POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, PodSync, ResizeCondition, Result, StatusManager,
    StatusPatch, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest, SyncStep, Timestamp, UidTranslations,
    UpdateOutcome,
};

/// `--logic 1.35-one-call` (logic v4): Kubernetes 1.35's decisions in the one-call
/// write mode (one UID-guarded strategic merge PATCH per status version carrying the
/// whole merged status, no GET).
pub type V4 = podstatus_logic::Logic<Release135, podstatus_logic::OneCall>;

/// Logic v4's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V4>;

/// `--logic 1.35`: Kubernetes 1.35's status manager as its kubelet writes (a GET, a
/// merge over the status read and a PATCH under the pod's UID).
pub type Kubelet135 = podstatus_logic::Logic<Release135, podstatus_logic::ReadThenPatch>;

/// `--logic 1.37`: Kubernetes 1.37's status manager as its kubelet writes.
pub type Kubelet137 = podstatus_logic::Logic<Release137, podstatus_logic::ReadThenPatch>;

/// `--logic 1.37-one-call`: Kubernetes 1.37's decisions in the one-call write mode.
pub type Kubelet137OneCall = podstatus_logic::Logic<Release137, podstatus_logic::OneCall>;
