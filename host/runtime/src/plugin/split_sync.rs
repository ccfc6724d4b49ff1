//! Running a 0.2.0 plugin's syncs start to end, each API call answered at once.
//!
//! A 0.2.0 plugin plans a request's (or a batch's) syncs and the host drives each one
//! call by call. Where nothing else may happen in between (replay without an
//! interleaving, the fuzzer's default, tests, a 0.1.x caller's `sync-pod`), the host
//! runs them here: in the order planned, every call made the moment it is asked for.
//! That is exactly what a 0.1.x plugin does inside `sync-pod`, so a trace gives the same
//! report with either contract.

use crate::api;
use crate::bindings::{BatchPlan, BatchReport, BatchSlice, PodSync, SyncOrigin, SyncOutcome, SyncRequest, SyncStep};
use crate::plugin::call_error::{CallError, Result};
use crate::plugin::plugin_ext::PluginExt;
use crate::plugin::plugin_trait::Plugin;
use crate::world::World;

/// `sync-pod` of 0.1.x on a 0.2.0 plugin: plans `request`'s syncs and runs each to its
/// end. The outcome is the request's pod's sync's (`up-to-date` when it planned none);
/// its error, if any, is returned after the others ran (the plugin logged theirs). A
/// fault stops at once: the instance cannot be entered again.
pub fn sync_pod_now(plugin: &mut (impl Plugin + ?Sized), world: &World, request: &SyncRequest) -> Result<SyncOutcome> {
    let syncs = plugin.plan_sync_pod(request)?;
    let mut outcome = Ok(SyncOutcome::UpToDate);
    for sync in syncs {
        match run_now(plugin, world, sync.id) {
            Err(fault @ CallError::Fault { .. }) => return Err(fault),
            result if sync.origin == SyncOrigin::Request => outcome = result,
            _ => {}
        }
    }
    outcome
}

/// How many pods one slice of a batch sync decides, by default: deciding one costs the
/// plugin a pod manager read and two parses (about 75 µs in the sandbox, measured in
/// `simulate` with 1,000 pods), so a slice holds the plugin about 0.3 ms, and callers
/// wait at most that long behind a batch.
pub const DEFAULT_BATCH_SLICE_PODS: u32 = 4;

/// Plans a whole batch sync, asking for its slices of at most `max_pods` pods back to
/// back, as one plan: the reports summed, the syncs in order. With nothing in between
/// that is exactly what one 0.1.x batch decides.
pub fn plan_whole_batch(plugin: &mut (impl Plugin + ?Sized), max_pods: u32) -> Result<BatchPlan> {
    let mut syncs = Vec::new();
    let (report, _) = plan_in_slices(
        max_pods,
        None,
        |slice| plugin.plan_sync_batch(slice),
        |planned, _| {
            syncs.extend(planned);
            true
        },
    )?;
    Ok(BatchPlan { report, syncs, next: None })
}

/// Walks a batch sync slice by slice, at most `max_pods` pods each, from the first pod
/// after `after` (None: from the start): `plan` plans a slice (however its caller
/// reaches the plugin), `take` receives each slice's syncs and whether more slices
/// follow, and answers whether to go on. Returns the report, the slices' summed, and
/// the cursor to resume from when `take` stopped the walk before its end.
pub(crate) fn plan_in_slices(
    max_pods: u32,
    after: Option<String>,
    mut plan: impl FnMut(&BatchSlice) -> Result<BatchPlan>,
    mut take: impl FnMut(Vec<PodSync>, bool) -> bool,
) -> Result<(BatchReport, Option<String>)> {
    let mut report = BatchReport { synced: 0, reconciled: 0, failed: 0 };
    let mut slice = BatchSlice { after, max_pods };
    loop {
        let planned = plan(&slice)?;
        report.synced = report.synced.saturating_add(planned.report.synced);
        report.reconciled = report.reconciled.saturating_add(planned.report.reconciled);
        report.failed = report.failed.saturating_add(planned.report.failed);
        let go_on = take(planned.syncs, planned.next.is_some());
        match planned.next {
            Some(next) if go_on => slice.after = Some(next),
            Some(next) => return Ok((report, Some(next))),
            None => return Ok((report, None)),
        }
    }
}

/// `sync-batch` of 0.1.x on a 0.2.0 plugin: plans the batch and runs each sync to its
/// end; a sync that fails counts in `failed`, as 0.1.x counts it.
pub fn sync_batch_now(plugin: &mut (impl Plugin + ?Sized), world: &World) -> Result<BatchReport> {
    let plan = plan_whole_batch(plugin, DEFAULT_BATCH_SLICE_PODS)?;
    let mut report = plan.report;
    for sync in plan.syncs {
        match run_now(plugin, world, sync.id) {
            Ok(_) => {}
            Err(fault @ CallError::Fault { .. }) => return Err(fault),
            Err(_) => report.failed = report.failed.saturating_add(1),
        }
    }
    Ok(report)
}

/// Starts the planned sync `id` and answers each call it asks for at once, against
/// `world`'s API server, until it is done.
pub fn run_now(plugin: &mut (impl Plugin + ?Sized), world: &World, id: u64) -> Result<SyncOutcome> {
    let mut step = plugin.start_sync(id)?;
    loop {
        match step {
            SyncStep::Done(outcome) => return Ok(outcome),
            SyncStep::Call(call) => {
                let reply = api::perform(world, call);
                step = plugin.resume_sync(id, &reply)?;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch over `uids`, as a plugin slices it: the UIDs after the slice's start, at
    /// most `max-pods` of them, one sync each.
    fn slice_of(uids: &[&str], slice: &BatchSlice) -> Result<BatchPlan> {
        let after = slice.after.as_deref().unwrap_or("");
        let rest: Vec<&str> = uids.iter().copied().filter(|uid| *uid > after).collect();
        let taken = &rest[..rest.len().min(slice.max_pods.max(1) as usize)];
        let syncs = taken
            .iter()
            .map(|uid| PodSync { id: uid.len() as u64, pod_uid: (*uid).to_owned(), origin: SyncOrigin::Batch })
            .collect();
        let next = (taken.len() < rest.len()).then(|| taken.last().map(|uid| (*uid).to_owned())).flatten();
        let report = BatchReport { synced: taken.len() as u32, reconciled: 0, failed: 0 };
        Ok(BatchPlan { report, syncs, next })
    }

    #[test]
    fn a_walk_stopped_early_resumes_where_it_stopped_and_covers_the_rest_once() {
        let uids = ["a", "b", "c", "d", "e"];
        let mut seen = Vec::new();
        let mut slices = 0;
        let (report, resume) = plan_in_slices(
            2,
            None,
            |s| slice_of(&uids, s),
            |syncs, _| {
                seen.extend(syncs.into_iter().map(|s| s.pod_uid));
                slices += 1;
                slices < 2
            },
        )
        .unwrap();
        assert_eq!((report.synced, resume.as_deref()), (4, Some("d")), "stopped after two slices");
        let (report, resume) = plan_in_slices(
            2,
            resume,
            |s| slice_of(&uids, s),
            |syncs, more| {
                seen.extend(syncs.into_iter().map(|s| s.pod_uid));
                assert!(!more, "one slice is left");
                true
            },
        )
        .unwrap();
        assert_eq!((report.synced, resume), (1, None), "the walk reached the end");
        assert_eq!(seen, uids);
    }
}
