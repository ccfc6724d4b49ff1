//! Logic v3: the status manager of logic v2 (Kubernetes 1.27), writing each status
//! version with one API call.
//!
//! Upstream (and v2) GET the pod before every status write, to learn its UID and
//! current status, then PATCH: two calls per version, so the kubelet's client budget
//! (QPS 50) carries about 25 status changes a second. v3 sends only the PATCH, a
//! strategic merge patch of `status` carrying the pod's UID as precondition, which lets
//! the API server make both checks itself ([`V3`]):
//!
//! - the patch is computed against what v3 last wrote for the pod (the API server's
//!   answer to that write, kept in the state document as an optional field of the
//!   status entry, `podstatus_logic::LastWritten`) or, for a pod not written yet (or
//!   whose last write is void: another version wrote since, or a reconciliation forgot
//!   the written version), against the pod manager's copy; when it is empty nothing is
//!   sent;
//! - the server's merge keeps the conditions other writers own, as the GET-and-merge
//!   does;
//! - a refused precondition or a conflict means the pod was recreated or the copy was
//!   stale: then, and only then, v3 GETs and does what v2 does (the recreated-pod check,
//!   a patch recomputed from the pod as read); a 404 ends the sync as v2's GET does;
//! - deletion is decided with v2's rules from the PATCH's answer (the pod as the server
//!   now has it), or from the pod manager's copy when nothing was sent;
//! - drift that other writers cause in fields the kubelet owns is repaired by the batch
//!   sync's reconciliation against the pod manager's copy, as in v2 (a reconciliation
//!   forgets the written version, so the repairing patch is computed from that copy).
//!
//! Everything else is v2's: the same crate does every update, the sync signal and pass,
//! the batch, and the state document (v1's format, which v1 and v2 carry v3's field in
//! untouched, so a running agent swaps among the three both ways).

mod policy;
pub mod whole_conditions;
pub mod whole_status;

pub use podstatus_logic_v2::{
    ApiCall, ApiError, ApiReply, BatchPlan, BatchReport, BatchSlice, CachedStatus, DeleteOptions, Imports, Level,
    ManagerError, PodSync, Result, StatusManager, StatusPatch, StatusUpdate, SyncOrigin, SyncOutcome, SyncRequest,
    SyncStep, Timestamp, UidTranslations, UpdateOutcome, V1Imports,
};

/// Logic v3's decisions: v2's [`podstatus_logic::Policy`] and a
/// [`podstatus_logic::SyncPolicy`] that writes without reading first.
#[derive(Clone, Copy, Debug, Default)]
pub struct V3;

/// Logic v3's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V3>;
