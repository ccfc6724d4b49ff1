//! The scheduler's work for a 0.2.0 plugin, which plans its syncs ("split syncs").
//!
//! Such a plugin is entered only to compute: the scheduler plans a request's or a
//! batch's syncs, and API-call workers make each sync's calls holding nothing and
//! resume it under the lock for a moment ([`crate::sync_runner`]), so many pods' syncs
//! overlap and no caller waits for the network. The batch is planned slice by slice,
//! with queued requests planned between the slices; its requests are taken off the
//! queue newest first once it backs up ([`QUEUE_LIFO_AFTER`]).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::TARGET;
use super::admission::{QUEUE_LIFO_AFTER, SYNC_POD_CALLS};
use super::plugin_lock::StepGuard;
use super::shared::Shared;
use crate::bindings::{BatchReport, SyncRequest};
use crate::plugin::split_sync::plan_in_slices;
use crate::plugin::{PluginExt, Result};
use crate::sync_runner::run_planned;

/// Plans the syncs of a request with the plugin locked for it (`plugin`), and starts
/// those the client admits now (none when the request is `shed`).
pub(super) fn plan_request(shared: &Arc<Shared>, mut plugin: StepGuard<'_>, request: &SyncRequest, shed: bool) {
    let planned = plugin.plan_sync_pod(request);
    drop(plugin);
    let mut syncs = match planned {
        Ok(syncs) => syncs,
        Err(e) => {
            return tracing::error!(target: TARGET, pod = %request.pod_uid, version = request.version, "sync: {e}");
        }
    };
    // A shed request starts none of its syncs. A pass (logic v2, v3) plans every
    // unwritten pod; past the client's budget only what it admits now starts, and the
    // others are dropped unstarted and stay unwritten for the next pass, as 1.27's
    // throttled writes do: started, they would line up behind the rate limit and hold
    // every later change of theirs behind them.
    let admitted = if shed { 0 } else { shared.admission.admitted_syncs(syncs.len()) };
    if admitted < syncs.len() {
        let mut plugin = shared.plugin.for_steps();
        for sync in syncs.drain(admitted..) {
            if let Err(e) = plugin.drop_sync(sync.id) {
                tracing::warn!(
                    target: TARGET,
                    pod = %sync.pod_uid,
                    sync = sync.id,
                    "dropping a sync past the budget: {e}"
                );
            }
        }
    }
    if shed {
        tracing::debug!(
            target: TARGET,
            pod = %request.pod_uid,
            version = request.version,
            "shed past the client's budget"
        );
    }
    run_planned(shared, syncs);
}

/// Plans a 0.2.0 plugin's batch sync slice by slice (see
/// [`SchedulerConfig::batch_slice_pods`](super::config::SchedulerConfig::batch_slice_pods)),
/// taking the plugin lock for one slice at a time and giving way to waiting callers
/// first, and starts each slice's syncs as soon as it is planned; `between` runs after
/// each slice but the last. Returns the plan's report, summed over the slices.
pub(super) fn run_batch_in_slices(
    shared: &Arc<Shared>,
    after: Option<String>,
    mut between: impl FnMut() -> bool,
) -> Result<(BatchReport, Option<String>)> {
    plan_in_slices(
        shared.batch_slice_pods,
        after,
        |slice| shared.plugin.for_steps().plan_sync_batch(slice),
        |syncs, more| {
            run_planned(shared, syncs);
            !more || between()
        },
    )
}

/// One batch sync (`what` names it in the log), once admitted, with the runner's gate
/// held; `plan_request` plans a request taken off the queue between the slices, as the
/// scheduler does one it takes (`shed` or not).
pub(super) fn sync_batch(
    shared: &Arc<Shared>,
    deadline: Instant,
    batch: Batch,
    what: &str,
    plan_request: impl Fn(&SyncRequest, bool),
) {
    // Requests queued meanwhile are planned between the slices, one per gap: a batch
    // over thousands of pods must not hold up the writes of the statuses that just
    // changed, and a queue that never empties (past the client's budget) must not
    // hold up the batch either.
    //
    // Past the client's budget the batch is a share of it, not all of it: each slice
    // waits for its calls' admission (planning faster only lines syncs up behind the
    // rate limit, where the statuses that change meanwhile wait behind them), and a
    // batch that has run for a fifth of the sync period stops, to go on from the same pod
    // next period. So the writes of what just changed keep going during a batch over
    // a long backlog, and every pod still comes round.
    let started = Instant::now();
    let time_box = match batch {
        Batch::Periodic => shared.sync_period / 5,
        Batch::Final => Duration::MAX,
    };
    let between = || {
        if let Some(request) = shared.queue.pop_adaptive(QUEUE_LIFO_AFTER) {
            let shed = shared.admit_request(deadline);
            plan_request(&request, shed);
        }
        // A periodic batch also stops when the scheduler does (shutdown runs its own).
        if started.elapsed() >= time_box || (batch == Batch::Periodic && shared.stopping.load(Ordering::SeqCst)) {
            return false;
        }
        shared.admission.admit(shared.batch_slice_pods.saturating_mul(SYNC_POD_CALLS), deadline);
        true
    };
    let resume = shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()).take();
    let after = if batch == Batch::Final { None } else { resume };
    match run_batch_in_slices(shared, after, between) {
        Ok((report, resume)) => {
            tracing::debug!(target: TARGET, ?report, resume = resume.is_some(), "{what} planned");
            *shared.batch_resume.lock().unwrap_or_else(|p| p.into_inner()) = resume;
        }
        Err(e) => tracing::error!(target: TARGET, "{what}: {e}"),
    }
}

/// Which batch the scheduler runs (a 0.2.0 plugin's: see [`sync_batch`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Batch {
    /// The scheduler's, every sync period: time-boxed, resumed where the last stopped.
    Periodic,
    /// Shutdown's last one: whole.
    Final,
}
