//! What the handle, its scheduler and a 0.2.0 plugin's API workers share: the plugin
//! lock, the sync queue, the runner of the syncs in flight, and the scheduler's state.

use std::ops::DerefMut;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use super::admission::ClientBudget;
use super::config::SchedulerConfig;
use super::plugin_lock::PluginLock;
use crate::bindings::SyncOutcome;
use crate::plugin::Plugin;
use crate::sync_runner::{PluginHost, SyncRunner};
use podstatus_backends::{HostView, SyncQueue};

/// The state behind a handle and its scheduler: one `Arc` of it each, and one per API
/// worker of a 0.2.0 plugin's syncs.
pub(super) struct Shared {
    /// The running plugin (see [`PluginLock`]).
    pub(super) plugin: PluginLock,
    pub(super) queue: Arc<SyncQueue>,
    pub(super) stopping: AtomicBool,
    /// See [`SchedulerConfig::admission`]; shared with `Scheduler::shutdown`.
    pub(super) admission: ClientBudget,
    /// Fed with what the node reports and what the plugin accepts (see
    /// [`ManagerHandle::observe`](super::manager::ManagerHandle::observe)).
    pub(super) host_view: OnceLock<Arc<HostView>>,
    /// A 0.2.0 plugin's syncs in flight.
    pub(super) runner: SyncRunner,
    /// See [`SchedulerConfig::batch_slice_pods`].
    pub(super) batch_slice_pods: u32,
    /// See [`SchedulerConfig::sync_period`].
    pub(super) sync_period: Duration,
    /// Where the last periodic batch stopped before its end (see
    /// [`scheduler_v0_2::sync_batch`](super::scheduler_v0_2::sync_batch)).
    pub(super) batch_resume: Mutex<Option<String>>,
    /// Whether the running plugin plans its syncs (0.2.0): its requests are taken off
    /// the queue newest first once it backs up
    /// ([`QUEUE_LIFO_AFTER`](super::admission::QUEUE_LIFO_AFTER)); a 0.1.x plugin's
    /// are taken in order, as before.
    pub(super) split_syncs: AtomicBool,
}

impl Shared {
    /// The state of a handle over `plugin`, whose sync requests arrive in `queue`.
    pub(super) fn new(plugin: Box<dyn Plugin>, queue: Arc<SyncQueue>, config: &SchedulerConfig) -> Self {
        let split_syncs = plugin.contract().has_split_syncs();
        Shared {
            plugin: PluginLock::new(plugin),
            queue,
            stopping: AtomicBool::new(false),
            admission: ClientBudget::new(config.admission.clone()),
            host_view: OnceLock::new(),
            runner: SyncRunner::new(config.max_calls_in_flight, config.call_patience, config.call_pool.clone()),
            sync_period: config.sync_period,
            batch_resume: Mutex::new(None),
            split_syncs: AtomicBool::new(split_syncs),
            batch_slice_pods: config.batch_slice_pods,
        }
    }

    /// Waits for a request's admission, at most until `deadline`; whether to shed it
    /// (see [`ClientBudget::admit_request`]).
    pub(super) fn admit_request(&self, deadline: Instant) -> bool {
        self.admission.admit_request(self.split_syncs.load(Ordering::SeqCst), &self.queue, deadline)
    }

    /// A sync of `pod_uid` ended with `outcome`: when the plugin dropped the pod's
    /// status as it should (the pod was deleted, or deleted and recreated), the host's
    /// record of it goes too, so that no swap or recovery hands it back.
    pub(super) fn note_outcome(&self, pod_uid: &str, outcome: &SyncOutcome) {
        if matches!(outcome, SyncOutcome::Deleted | SyncOutcome::Recreated)
            && let Some(view) = self.host_view.get()
        {
            view.forget_accepted(pod_uid);
        }
    }
}

impl PluginHost for Shared {
    fn plugin(&self) -> impl DerefMut<Target = Box<dyn Plugin>> {
        self.plugin.for_steps()
    }

    fn runner(&self) -> &SyncRunner {
        &self.runner
    }

    fn sync_done(&self, pod_uid: &str, outcome: &SyncOutcome) {
        self.note_outcome(pod_uid, outcome);
    }
}
