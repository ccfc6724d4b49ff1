//! Logic v4: the kubelet's pod status manager as Kubernetes 1.35 has it, every feature
//! gate at its 1.35 default, writing as logic v3 does.
//!
//! It follows upstream's `pkg/kubelet/status/status_manager.go` and `generate.go` of
//! 1.35. What differs from logic v2 (1.27), each in its module:
//!
//! - `status.observedGeneration` is the pod's `metadata.generation` and never moves
//!   backwards; Ready and ContainersReady (also those of a terminal phase) carry the
//!   generation as their `observedGeneration` (KEP-5067, [`generate`], [`updates`]);
//! - PodReadyToStartContainers (KEP-3085) and the in-place resize conditions
//!   PodResizePending / PodResizeInProgress (KEP-1287) are the kubelet's own
//!   ([`conditions::owned_by_kubelet`]); the resize conditions themselves are kept by
//!   the engine per pod UID (`podstatus_logic::Engine::set_resize_condition`);
//! - sidecars (KEP-753): readiness counts restartable init containers, a pod has
//!   initialized once its last init container, if a sidecar, runs and has started,
//!   and the illegal-transition check covers init containers, skipping sidecars
//!   ([`containers`]); readiness is regenerated over init and regular statuses;
//! - equality compares the kubelet's conditions both ways (a removed one is a change)
//!   and the merge keeps the API server's resource-claim statuses ([`conditions`]);
//! - the sync writes as v3 does: one UID-guarded strategic merge PATCH, no GET
//!   ([`sync`]).
//!
//! Everything else is v2's (the sync signal and pass, `terminate-pod`'s container
//! states, deletion) or the engine's (cache, versions, batch, the state document, the
//! same for v1 to v4, so a running agent swaps among them both ways).

pub mod conditions;
pub mod containers;
pub mod generate;
pub mod pod_spec;
mod sync;
mod updates;

pub use podstatus_logic::{POD_RESIZE_IN_PROGRESS, POD_RESIZE_PENDING, ResizeCondition};
pub use podstatus_logic_v2::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Imports, Level,
    ManagerError, PodSync, Result, StatusManager, StatusPatch, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest,
    SyncStep, Timestamp, UidTranslations, UpdateOutcome, V1Imports,
};

/// Logic v4's decisions: 1.35's [`podstatus_logic::Policy`] and a
/// [`podstatus_logic::SyncPolicy`] that writes as v3's does.
#[derive(Clone, Copy, Debug, Default)]
pub struct V4;

/// Logic v4's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V4>;
