//! Admission: the scheduler waits, outside any lock, for the API client's budget
//! before work that makes API calls, and sheds a 0.2.0 plugin's requests once the
//! queue backs up past it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use podstatus_backends::SyncQueue;

use super::TARGET;

/// API calls one `sync-pod` makes at most: the GET of the pod, the status write, and the
/// DELETE of a terminated pod whose resources are reclaimed (without the third token, a
/// deletion right after a write would be throttled and wait for the next batch).
pub const SYNC_POD_CALLS: u32 = 3;
/// What the scheduler asks the admission for before a batch sync, whose calls it cannot
/// count beforehand: one pod's sync. Not more: a batch usually writes nothing, and while
/// the scheduler waits here the queue waits too (waiting for a full bucket held every
/// queued write up to a second at a busy churn). A batch that runs out of tokens has
/// its remaining writes refused at once (see `KubeClientConfig::throttle_wait`); the
/// next batch takes them.
pub const SYNC_BATCH_CALLS: u32 = SYNC_POD_CALLS;
/// The longest the scheduler waits for admission before a sync; then it syncs anyway
/// (a throttled write fails fast, its status stays cached, and a later sync retries).
/// Short, so that batch syncs and shutdown are not held up.
pub const ADMISSION_WAIT_MAX: Duration = Duration::from_secs(1);

/// Waits, outside any lock, until a piece of work is likely to get the API calls it
/// needs. The scheduler calls it before it takes the plugin lock (see
/// [`SchedulerConfig::admission`](super::config::SchedulerConfig::admission)).
pub trait Admission: Send + Sync {
    /// Waits until `calls` calls could start now (at most as many as can ever be ready
    /// at once: `u32::MAX` asks for a full bucket), or until `deadline`. Takes nothing:
    /// the calls themselves take their tokens. Returns whether they are ready.
    fn wait_ready(&self, calls: u32, deadline: Instant) -> bool;

    /// No call is to be made any more (the scheduler's shutdown, once the syncs it
    /// could finish are finished): every wait ends at once, and the calls waiting for
    /// their tokens (an API worker's) are refused, so that stopping does not sleep out
    /// a backlog at the rate limit. By default nothing.
    fn close(&self) {}
}

/// How long the oldest queued request may have waited before the scheduler takes the
/// newest first (see [`SyncQueue::pop_until_adaptive`]): a queue that backs up longer
/// than this is past the client's budget.
pub const QUEUE_LIFO_AFTER: Duration = Duration::from_secs(1);

/// The API calls a pass counts per pod it writes: the read and the write.
const PASS_SYNC_CALLS: u32 = 2;

/// The API client's budget as the scheduler asks it: through the configured
/// [`Admission`], or, without one, admitting everything at once.
pub(super) struct ClientBudget {
    admission: Option<Arc<dyn Admission>>,
}

impl ClientBudget {
    /// The budget `admission` keeps (`None`: no pacing).
    pub(super) fn new(admission: Option<Arc<dyn Admission>>) -> Self {
        ClientBudget { admission }
    }

    /// Waits (without the plugin lock) until `calls` API calls may go, at most until
    /// `deadline` and [`ADMISSION_WAIT_MAX`] from now.
    pub(super) fn admit(&self, calls: u32, deadline: Instant) -> bool {
        let Some(admission) = &self.admission else { return true };
        let deadline = deadline.min(Instant::now() + ADMISSION_WAIT_MAX);
        let admitted = admission.wait_ready(calls, deadline);
        if !admitted {
            tracing::debug!(target: TARGET, calls, "API calls not admitted in time");
        }
        admitted
    }

    /// No call is to be made any more ([`Admission::close`]).
    pub(super) fn close(&self) {
        if let Some(admission) = &self.admission {
            admission.close();
        }
    }

    /// Waits for a request's admission, at most until `deadline`; whether to shed it.
    /// With the queue backed up past the client's budget, a 0.2.0 plugin's request
    /// whose calls the client does not admit at once is shed: planned, and its syncs
    /// dropped unstarted, its status left unwritten for a later request or the batch
    /// sync (which writes each pod's latest status once), as a 0.1.x plugin's
    /// fail-fast client left it. Waiting instead lines every request up behind the
    /// backlog: measured at twice the budget, the median status then waited 15 s
    /// instead of 2 (README, "Figures").
    ///
    /// `split_syncs`: whether the running plugin plans its syncs (0.2.0); `queue`: the
    /// queue the request came from.
    pub(super) fn admit_request(&self, split_syncs: bool, queue: &SyncQueue, deadline: Instant) -> bool {
        let backed_up = split_syncs && queue.backed_up(QUEUE_LIFO_AFTER);
        let deadline = if backed_up { Instant::now() } else { deadline };
        let admitted = self.admit(SYNC_POD_CALLS, deadline);
        backed_up && !admitted
    }

    /// How many of `planned` syncs of one request the client admits now: the first always
    /// (the request was admitted), each further one while the bucket holds its calls too.
    /// Asked without the plugin lock; within the budget one question answers it.
    pub(super) fn admitted_syncs(&self, planned: usize) -> usize {
        let Some(admission) = &self.admission else { return planned };
        let now = Instant::now();
        let ready = |syncs: usize| {
            admission.wait_ready(u32::try_from(syncs).unwrap_or(u32::MAX).saturating_mul(PASS_SYNC_CALLS), now)
        };
        if planned <= 1 || ready(planned) {
            return planned;
        }
        (1..planned).find(|&n| !ready(n + 1)).unwrap_or(planned)
    }
}
