//! [`Reply`]: what a [`Call`](crate::Call) answers, by the type of the answer.

use crate::bindings::{BatchPlan, BatchReport, CachedStatus, PodSync, SyncOutcome, SyncStep, UpdateOutcome};

/// A call's answer. Variants are kinds of answers, not operations: every status
/// update answers [`Reply::Update`], so a layer that follows statuses reads it alike
/// whichever update it was, and a new operation needs a new variant only for a new
/// kind of answer. Which variant each operation answers is said once, in
/// [`for_each_operation!`](crate::for_each_operation).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reply {
    /// A pod's cached status, if any.
    Status(Option<CachedStatus>),
    /// What a status update did.
    Update(UpdateOutcome),
    /// Done; nothing to say.
    Done(()),
    /// Yes or no (a condition that was set, a sync that was known).
    Flag(bool),
    /// How many (statuses dropped).
    Count(u32),
    /// A pod's in-place resize conditions, each a PodCondition as JSON.
    Conditions(Vec<String>),
    /// How a sync ended.
    Synced(SyncOutcome),
    /// What a batch sync did.
    Batch(BatchReport),
    /// The syncs a request planned.
    Plan(Vec<PodSync>),
    /// A slice of a batch sync, planned.
    BatchPlan(BatchPlan),
    /// A sync's next step.
    Step(SyncStep),
    /// A state document or a change set.
    Document(String),
}
