//! [`ManagerHandle`]: the status manager as other threads see it, every Manager
//! operation callable from any thread, each entering the plugin under its lock.

use std::sync::Arc;
use std::time::Instant;

use super::config::SchedulerConfig;
use super::hot_swap::{self, SWAP_DRAIN_MAX};
use super::scheduler::Scheduler;
use super::scheduler_v0_2::run_batch_in_slices;
use super::shared::Shared;
use crate::bindings::{BatchReport, Contract};
use crate::calls::{Call, ManagerCall, Reply};
use crate::plugin::{Plugin, PluginExt, Result};
use crate::swap::{SwapError, SwapReport};
use podstatus_backends::{HostView, NodeReport, SyncQueue};

/// The status manager as other threads see it: cheap to clone, every Manager operation
/// callable from any thread.
///
/// Start one over a plugin and the world its imports reach, hand it statuses, shut it
/// down (which writes what is still queued):
///
/// ```
/// use std::sync::Arc;
/// use std::time::Duration;
///
/// use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SyncQueue, SystemClock};
/// use podstatus_plugins::PODSTATUS_V1;
/// use podstatus_runtime::{ManagerHandle, PluginRuntime, RuntimeConfig, SchedulerConfig, World};
///
/// let world = World {
///     api_server: Arc::new(MemoryApiServer::new()),
///     pod_manager: Arc::new(PodManager::new()),
///     deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
///     clock: Arc::new(SystemClock),
///     queue: Arc::new(SyncQueue::new(1000)),
/// };
/// let runtime = PluginRuntime::new(&RuntimeConfig::default())?;
/// let plugin = runtime.load(PODSTATUS_V1)?.instantiate(world.clone())?;
/// let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());
///
/// let pod = r#"{"metadata": {"name": "web", "namespace": "default", "uid": "u1"},
///               "spec": {"containers": [{"name": "app"}]}}"#;
/// manager.set_pod_status(pod, r#"{"phase": "Running"}"#)?;
/// let cached = manager.get_pod_status("u1")?.expect("cached");
/// assert_eq!(cached.version, 1);
///
/// let unwritten = scheduler.shutdown(Duration::from_secs(5));
/// assert_eq!(unwritten, 0);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ManagerHandle {
    shared: Arc<Shared>,
}

impl ManagerHandle {
    /// Starts the scheduler over `plugin`, whose sync requests arrive in `queue` (the queue
    /// of the plugin's world), and returns the handle and the scheduler.
    pub fn start(
        plugin: Box<dyn Plugin>,
        queue: Arc<SyncQueue>,
        config: SchedulerConfig,
    ) -> (ManagerHandle, Scheduler) {
        let shared = Arc::new(Shared::new(plugin, queue, &config));
        let scheduler = Scheduler::spawn(Arc::clone(&shared), config);
        (ManagerHandle { shared }, scheduler)
    }

    /// Feeds `view` from now on, for the reach guard and the final check: every status
    /// and termination the node reports, before the plugin sees it, and every status
    /// the plugin accepts (as its `get-pod-status` gives it right after accepting,
    /// while no other call can come in between). A handle observes one view: later
    /// calls are ignored (returns whether this one took).
    pub fn observe(&self, view: Arc<HostView>) -> bool {
        let took = self.shared.host_view.set(Arc::clone(&view)).is_ok();
        if took {
            self.shared.plugin.lock().observe(view);
        }
        took
    }

    /// The view this handle feeds, if any.
    pub fn host_view(&self) -> Option<&Arc<HostView>> {
        self.shared.host_view.get()
    }

    /// Makes one of the Manager operations' calls, from any thread: the plugin entered
    /// under its lock, before the scheduler's sync steps waiting for it. When observing
    /// ([`Self::observe`]), what the node reports is recorded in the view before the
    /// plugin sees it, and every status the plugin accepts after (see
    /// `note_accepted`). The typed methods (`set_pod_status`, ...) call this.
    pub fn call(&self, call: ManagerCall<'_>) -> Result<Reply> {
        let view = self.host_view();
        match call {
            ManagerCall::SetPodStatus { pod, status } => {
                // Parsed before the plugin is locked, so other callers need not wait for
                // it (not at all when it repeats the pod's last report, the kubelet's
                // common call).
                let report = view.and_then(|view| view.prepare_status(pod, status));
                let mut plugin = self.shared.plugin.for_caller();
                let uid = view.zip(report).and_then(|(view, report)| view.record_prepared(report, pod, status));
                let outcome = plugin.call(call.into());
                self.note_accepted(plugin.as_mut(), uid.as_deref(), Some(status), &outcome);
                outcome
            }
            ManagerCall::TerminatePod { pod } => {
                let report = view.and_then(|_| NodeReport::termination(pod));
                let mut plugin = self.shared.plugin.for_caller();
                let uid = view.zip(report).and_then(|(view, report)| view.record(report));
                let outcome = plugin.call(call.into());
                self.note_accepted(plugin.as_mut(), uid.as_deref(), None, &outcome);
                outcome
            }
            // The view's records of the pods dropped go too.
            ManagerCall::RemoveOrphanedStatuses { keep } => {
                let mut plugin = self.shared.plugin.for_caller();
                if let Some(view) = view {
                    view.retain(keep);
                }
                plugin.call(call.into())
            }
            // Any other update names its pod by UID. A readiness or startup change is the
            // host's own word on the container, noted before the plugin sees it (a write
            // may then carry it). A resize condition makes no status version, so the view
            // has nothing to note: the caller puts the conditions into the next status it
            // sets.
            _ => {
                let call = Call::from(call);
                let mut plugin = self.shared.plugin.for_caller();
                match (view, call) {
                    (Some(view), Call::SetContainerReadiness { pod_uid, container_id, ready }) => {
                        view.report_readiness(pod_uid, container_id, ready)
                    }
                    (Some(view), Call::SetContainerStartup { pod_uid, container_id, started }) => {
                        view.report_startup(pod_uid, container_id, started)
                    }
                    _ => {}
                }
                let outcome = plugin.call(call);
                if call.updates_status() {
                    self.note_accepted(plugin.as_mut(), call.pod_uid(), None, &outcome);
                }
                outcome
            }
        }
    }

    crate::manager_methods!();

    /// Records, when observing, what the plugin now holds for `uid` after it accepted
    /// a change (`outcome`): see [`super::accepted::note_accepted`].
    fn note_accepted(
        &self,
        plugin: &mut dyn Plugin,
        uid: Option<&str>,
        reported: Option<&str>,
        outcome: &Result<Reply>,
    ) {
        if let Some(view) = self.shared.host_view.get() {
            super::accepted::note_accepted(view, plugin, uid, reported, outcome);
        }
    }

    /// Runs a batch sync now, outside the schedule. A 0.2.0 plugin's batch is planned
    /// and its syncs run overlapped, by the API-call workers (which wait for their
    /// rate-limit tokens like any client); it waits for syncs in flight before planning
    /// and returns once none is (each wait at most [`SWAP_DRAIN_MAX`]). The report is the plan's: its `failed` counts
    /// the pods the batch skipped while deciding, not syncs that then failed.
    pub fn sync_batch(&self) -> Result<BatchReport> {
        // Planned whole, each wait for syncs in flight at most SWAP_DRAIN_MAX.
        let whole = self.sync_batch_until(Instant::now() + std::time::Duration::from_secs(86_400 * 365), &|| true)?;
        Ok(whole.unwrap_or(BatchReport { synced: 0, reconciled: 0, failed: 0 }))
    }

    /// [`ManagerHandle::sync_batch`], ending by `deadline` or as soon as `go_on` says
    /// no (checked every few milliseconds): a 0.2.0 plugin's batch stops being planned
    /// between its slices, and the waits for syncs in flight end (the syncs started run
    /// on; each call is bounded by the client's timeout). What a flush with a hard limit
    /// uses: without it, a batch over a backlog at a low QPS ran for minutes past its
    /// time. A 0.1.x plugin's batch is one call of its own, and runs to its end. `None`
    /// when the batch was not planned whole.
    pub fn sync_batch_until(&self, deadline: Instant, go_on: &dyn Fn() -> bool) -> Result<Option<BatchReport>> {
        let gate = self.shared.runner.gate();
        if !self.shared.plugin.lock().contract().has_split_syncs() {
            return self.shared.plugin.lock().sync_batch().map(Some);
        }
        // Syncs still in flight (an earlier batch's) finish first: a batch planned over
        // them plans again what they are writing, and each such sync would cost a GET.
        let idle = self.wait_idle_while(deadline.min(Instant::now() + SWAP_DRAIN_MAX), go_on);
        if !idle && (Instant::now() >= deadline || !go_on()) {
            return Ok(None);
        }
        let (report, rest) = run_batch_in_slices(&self.shared, None, || Instant::now() < deadline && go_on())?;
        drop(gate);
        self.wait_idle_while(deadline.min(Instant::now() + SWAP_DRAIN_MAX), go_on);
        Ok(rest.is_none().then_some(report))
    }

    /// Waits until no sync is in flight, at most until `deadline` and while `go_on`;
    /// whether none is.
    fn wait_idle_while(&self, deadline: Instant, go_on: &dyn Fn() -> bool) -> bool {
        /// How often `go_on` is asked.
        const POLL: std::time::Duration = std::time::Duration::from_millis(20);
        loop {
            let now = Instant::now();
            if self.shared.runner.wait_idle(deadline.min(now + POLL)) {
                return true;
            }
            if Instant::now() >= deadline || !go_on() {
                return false;
            }
        }
    }

    /// Requests waiting in the sync queue.
    pub fn queue_len(&self) -> usize {
        self.shared.queue.len()
    }

    /// How long the plugin has been held by calls, sync steps and the batch, in all,
    /// since the handle started: the plugin's own time (no call of it waits for the
    /// network) and the host's work around each call. What `simulate` reports per
    /// status as the plugin's CPU.
    pub fn plugin_busy(&self) -> std::time::Duration {
        self.shared.plugin.held()
    }

    /// What the running plugin holds in memory now ([`crate::Plugin::memory`]), for
    /// the memory account. Waits for the plugin like a call.
    pub fn plugin_memory(&self) -> crate::PluginMemory {
        self.shared.plugin.lock().memory()
    }

    /// The contract the running plugin implements.
    pub fn contract(&self) -> Contract {
        self.shared.plugin.lock().contract()
    }

    /// Replaces the running plugin with `new` (already compiled and instantiated:
    /// nothing slow happens while calls wait), carrying its state over: the bulk moves
    /// while the old plugin keeps serving, then calls are held while what changed since
    /// moves and the new plugin takes over. Calls that arrive meanwhile wait and go to
    /// the new plugin; none is lost or runs twice. On any failure the old plugin keeps
    /// serving and the error says why. A 0.2.0 plugin's syncs in flight finish on it
    /// first (none is planned meanwhile), so none is lost or runs twice.
    pub fn swap(&self, new: Box<dyn Plugin>) -> std::result::Result<SwapReport, SwapError> {
        hot_swap::swap(&self.shared, new)
    }
}
