//! Scripted interleavings: a 0.2.0 plugin's API calls held until a step makes them.
//!
//! Without `hold-api`, replay answers every call a sync asks for at once, in the order
//! asked, so a trace gives the same report under 0.1.x and 0.2.0. After `hold-api`,
//! the `sync` and `sync-batch` steps only plan and start syncs: each call a sync asks
//! for is held, and the trace decides when it reaches the API server (`complete-api`,
//! naming the pod, or `release-api` for all, oldest first). Meanwhile any other step
//! runs: an update of the same pod, an outside writer, another pod's sync. Syncs of
//! one pod keep their order through the host's [`SyncTable`], as in the agent.

use crate::recorder::RecordingApiServer;
use podstatus_runtime::bindings::{ApiCall, PodSync, SyncStep};
use podstatus_runtime::sync_table::SyncTable;
use podstatus_runtime::{CallError, Plugin, PluginExt, World};

/// Calls held for the trace, and the syncs they belong to.
#[derive(Default)]
pub(crate) struct HeldCalls {
    table: SyncTable,
    /// Syncs suspended in a held call, in the order the calls were asked for.
    held: Vec<(PodSync, ApiCall)>,
}

impl HeldCalls {
    /// Admits `syncs` (just planned) and starts those whose pod has none in flight;
    /// their calls are held.
    pub(crate) fn run_planned(&mut self, plugin: &mut dyn Plugin, syncs: Vec<PodSync>) -> Result<(), CallError> {
        for sync in self.table.admit(syncs) {
            let step = plugin.start_sync(sync.id);
            self.advance(plugin, sync, step)?;
        }
        Ok(())
    }

    /// Makes the held call of `uid`'s sync (the oldest held call when `None`) against
    /// `world` and runs its sync on to its next call, which is held too. False when no
    /// such call was held (nothing happens: a trace shrunk by the fuzzer may name a pod
    /// whose call an earlier step no longer holds).
    pub(crate) fn complete(
        &mut self,
        plugin: &mut dyn Plugin,
        world: &World,
        recorder: &RecordingApiServer,
        uid: Option<&str>,
    ) -> Result<bool, CallError> {
        let position = match uid {
            None => (!self.held.is_empty()).then_some(0),
            Some(uid) => self.held.iter().position(|(sync, _)| sync.pod_uid == uid),
        };
        let Some(position) = position else { return Ok(false) };
        let (sync, call) = self.held.remove(position);
        recorder.set_sync(Some(&sync.pod_uid));
        let reply = podstatus_runtime::api::perform(world, call);
        recorder.set_sync(None);
        let step = plugin.resume_sync(sync.id, &reply);
        self.advance(plugin, sync, step)?;
        Ok(true)
    }

    /// Makes every held call, oldest first, until none is left.
    pub(crate) fn release(
        &mut self,
        plugin: &mut dyn Plugin,
        world: &World,
        recorder: &RecordingApiServer,
    ) -> Result<(), CallError> {
        while self.complete(plugin, world, recorder, None)? {}
        Ok(())
    }

    /// Calls held now.
    pub(crate) fn len(&self) -> usize {
        self.held.len()
    }

    /// Whether a call is held.
    pub(crate) fn is_empty(&self) -> bool {
        self.held.is_empty()
    }

    /// Holds the sync's call, or, once it is over, starts the next sync of its pod.
    fn advance(
        &mut self,
        plugin: &mut dyn Plugin,
        mut sync: PodSync,
        mut step: Result<SyncStep, CallError>,
    ) -> Result<(), CallError> {
        loop {
            match step {
                Ok(SyncStep::Call(call)) => {
                    self.held.push((sync, call));
                    return Ok(());
                }
                Ok(SyncStep::Done(_)) => {}
                Err(fault @ CallError::Fault { .. }) => return Err(fault),
                // The plugin refused a step (it logged why): the sync is over.
                Err(e) => tracing::warn!(pod = %sync.pod_uid, sync = sync.id, "sync: {e}"),
            }
            let next = self.table.finish(&sync.pod_uid, sync.id);
            for covered in &next.superseded {
                plugin.drop_sync(covered.id)?;
            }
            let Some(start) = next.start else { return Ok(()) };
            sync = start;
            step = plugin.start_sync(sync.id);
        }
    }
}
