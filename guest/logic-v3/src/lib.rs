//! Logic v3: the status manager of Kubernetes 1.27 (logic v2's release,
//! `podstatus_logic_v2::Release127`), writing each status version with one API call.
//!
//! Upstream (and v2) GET the pod before every status write, then PATCH: two calls per
//! version, so the kubelet's client budget (QPS 50) carries about 25 status changes a
//! second. v3 sends only the PATCH, a strategic merge patch of `status` carrying the
//! pod's UID as precondition, which lets the API server make both checks itself: the
//! one-call write mode (`podstatus_logic::OneCall`, whose module says how it works), as
//! v3 first shipped it (`podstatus_logic::FirstDesign`: the patch is the diff from its
//! base with the conditions it names whole; the refinements logic v4 added are not
//! v3's).
//!
//! Everything else is 1.27's (every update, the sync signal and pass, deletion) or the
//! engine's (the batch and the state document, whose optional `lastWritten` v1 and v2
//! carry untouched, so a running agent swaps among the versions both ways).

pub use podstatus_logic::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Imports, Level,
    ManagerError, PodSync, Result, StatusManager, StatusPatch, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest,
    SyncStep, Timestamp, UidTranslations, UpdateOutcome,
};

/// Logic v3's decisions: Kubernetes 1.27's, written in the one-call mode as v3 first
/// shipped it.
pub type V3 =
    podstatus_logic::Logic<podstatus_logic_v2::Release127, podstatus_logic::OneCall<podstatus_logic::FirstDesign>>;

/// Logic v3's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V3>;
