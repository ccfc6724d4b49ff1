//! Logic v1: the kubelet's pod status manager as of 2017 (the seed's behaviour), as a
//! [`Policy`](podstatus_logic::Policy) over the one engine.
//!
//! What is v1's own: each update (Ready and Initialized keep their transition times, the
//! start time is kept, a deleted pod forces its update) and its 2017 Ready condition
//! ([`ready`]); a sync request writes exactly the snapshot it was queued with; each
//! sync PUTs the whole status guarded by the object as read, first checking that the
//! version still needs writing, and deletes a pod once its resources are reclaimed
//! ([`sync`]). Everything else (cache, versions, queue, batch, state document) is the
//! engine's.

mod ready;
mod sync;
mod updates;

pub use ready::generate_pod_ready_condition;

/// Logic v1's decisions: [`podstatus_logic::Policy`] and [`podstatus_logic::SyncPolicy`].
#[derive(Clone, Copy, Debug, Default)]
pub struct V1;

/// The seed's kubelet of 2017, reading the pod and then replacing its whole status
/// (GET, PUT guarded by the resourceVersion read).
impl podstatus_logic::Follows for V1 {
    const RELEASE: &'static str = "2017";
    const MODE: &'static str = "read-then-update";
}

/// Logic v1's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V1>;
