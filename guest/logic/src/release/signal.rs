//! The sync signal as every release since 1.27 raises it: a one-slot channel
//! (`updateStatusInternal`: `select { case m.podStatusChannel <- struct{}{}: default: }`)
//! whose signal starts a pass over every unwritten pod (`Start`'s loop, `syncBatch(false)`).

use std::sync::Arc;

use crate::engine::Engine;
use crate::error::Result;
use crate::imports::{Imports, Level, SyncRequest};
use crate::jobs::{PodSync, SyncOrigin, SyncTarget};
use crate::outcomes::UpdateOutcome;
use crate::status::VersionedStatus;

/// Signals the sync loop: queues a sync request for `uid` unless the slot is full
/// already, in which case that request's pass writes this version too.
pub(crate) fn enqueue<I: Imports>(engine: &mut Engine<I>, uid: &str, status: Arc<VersionedStatus>) -> UpdateOutcome {
    if signal_waiting(engine) {
        engine.log(Level::Trace, || {
            format!("a sync is queued already; it will write version {} of pod {uid}", status.version)
        });
        return UpdateOutcome::Queued;
    }
    engine.enqueue(uid, status)
}

/// Whether the slot is full: the channel holds one signal until the sync loop takes
/// it, whatever the pod it was raised for (one since written by a batch sync, a static
/// pod without a mirror pod) and whatever was written since; the pass it starts syncs
/// every pod then unwritten. The host keeps its queue and the state in step (a
/// supervisor that restores an instance queues again the request a faulted sync was
/// handed), so a queued request is never lost.
fn signal_waiting<I: Imports>(engine: &mut Engine<I>) -> bool {
    !engine.queued_pods().is_empty()
}

/// Takes one request off the sync queue (it is used up) and plans its pass: a sync
/// of the request's pod (unless its status is gone) and then one of every other
/// cached pod in UID order whose latest status is not written already (as the pass
/// collects them), each writing the pod's latest status when it starts, unless that
/// version is written by then. The static-to-mirror pod UIDs are read once, for the
/// whole pass.
pub(crate) fn plan_pass<I: Imports>(engine: &mut Engine<I>, request: &SyncRequest) -> Result<Vec<PodSync>> {
    engine.take_request(request)?;
    let pod_to_mirror = Arc::new(engine.pod_to_mirror());
    let mut syncs = Vec::new();
    let target = || SyncTarget::LatestIfUnwritten(Arc::clone(&pod_to_mirror));
    if engine.cached(&request.pod_uid).is_some() {
        syncs.push(engine.plan_sync(&request.pod_uid, SyncOrigin::Request, target()));
    }
    for uid in engine.unwritten_for_pass(&pod_to_mirror, &request.pod_uid) {
        syncs.push(engine.plan_sync(&uid, SyncOrigin::Pass, target()));
    }
    Ok(syncs)
}
