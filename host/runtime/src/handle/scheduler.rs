//! The scheduler: the thread that drains the sync queue and runs the periodic batch
//! sync, and its shutdown.
//!
//! It waits on the queue without holding the plugin lock, and hands each request and
//! batch to the running plugin's way of syncing ([`super::scheduler_v0_1`] or
//! [`super::scheduler_v0_2`]), as its contract says, asked under the lock each time (a
//! swap may have changed the plugin since).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::admission::{QUEUE_LIFO_AFTER, SYNC_BATCH_CALLS};
use super::config::SchedulerConfig;
use super::scheduler_v0_2::Batch;
use super::shared::Shared;
use super::{scheduler_v0_1, scheduler_v0_2};
use crate::bindings::SyncRequest;
use podstatus_backends::Wait;

/// The running scheduler; dropping it stops the thread (without flushing).
pub struct Scheduler {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl Scheduler {
    /// Starts the scheduler's thread over `shared`.
    pub(super) fn spawn(shared: Arc<Shared>, config: SchedulerConfig) -> Scheduler {
        let worker = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("podstatus-sync".into())
            .spawn(move || run_scheduler(&worker, &config))
            .expect("spawning the scheduler thread");
        Scheduler { shared, thread: Some(thread) }
    }

    /// Stops taking work, hands every queued request to the plugin (until `timeout`),
    /// runs one last batch sync if time is left, lets the syncs in flight finish, and
    /// joins the threads. Returns how many queued requests and syncs were left
    /// unhandled.
    pub fn shutdown(mut self, timeout: Duration) -> usize {
        let deadline = Instant::now() + timeout;
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.queue.close();
        // With no time left nothing more is written: the thread's waits for the client's
        // budget end now rather than after their own time.
        if timeout.is_zero() {
            self.shared.admission.close();
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        let left = loop {
            if Instant::now() >= deadline {
                break self.shared.queue.len();
            }
            let Some(request) = self.shared.queue.pop() else {
                // Everything queued was handed over: the last batch once its syncs ran.
                self.shared.runner.wait_idle(deadline);
                if Instant::now() < deadline {
                    batch_sync(&self.shared, deadline, Batch::Final);
                }
                break 0;
            };
            handle_request(&self.shared, &request, deadline);
        };
        self.shared.runner.wait_idle(deadline);
        let in_flight = self.shared.runner.pending();
        // The time is up: calls still waiting for their rate-limit tokens give up, and
        // the workers stop after the calls they are making.
        self.shared.admission.close();
        self.shared.runner.stop();
        left + in_flight
    }
}

impl Drop for Scheduler {
    fn drop(&mut self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        self.shared.queue.close();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.shared.runner.stop();
    }
}

/// When the first batch of a handle started at `start` comes: a period after it, less
/// `phase` of a period (see [`SchedulerConfig::batch_phase`]).
fn first_batch_at(start: Instant, period: Duration, phase: f64) -> Instant {
    let phase = if (0.0..1.0).contains(&phase) { phase } else { 0.0 };
    start + period.mul_f64(1.0 - phase)
}

fn run_scheduler(shared: &Arc<Shared>, config: &SchedulerConfig) {
    let mut next_batch = first_batch_at(Instant::now(), config.sync_period, config.batch_phase);
    while !shared.stopping.load(Ordering::SeqCst) {
        let popped = if shared.split_syncs.load(Ordering::SeqCst) {
            shared.queue.pop_until_adaptive(next_batch, QUEUE_LIFO_AFTER)
        } else {
            shared.queue.pop_until(next_batch)
        };
        match popped {
            Wait::Request(request) => handle_request(shared, &request, next_batch),
            Wait::TimedOut => {
                batch_sync(shared, Instant::now() + config.sync_period, Batch::Periodic);
                next_batch = Instant::now() + config.sync_period;
            }
            Wait::Closed => break,
        }
    }
}

/// What the scheduler does with a request taken off the queue: a 0.2.0 plugin plans its
/// syncs, which run overlapped; a 0.1.x plugin syncs it under the lock, once the API
/// client is likely to admit its calls (waiting at most until `deadline`).
///
/// Either way the scheduler first waits (holding nothing) until the API client is
/// likely to admit the calls: planning syncs faster than the budget carries only plans
/// calls that are throttled (a 0.2.0 sync whose token would come after its call timeout
/// fails at once, and logic v2's next request plans the same pods again).
fn handle_request(shared: &Arc<Shared>, request: &SyncRequest, deadline: Instant) {
    let shed = shared.admit_request(deadline);
    let _gate = shared.runner.gate();
    plan_request(shared, request, shed);
}

/// [`handle_request`] once admitted, with the runner's gate held.
fn plan_request(shared: &Arc<Shared>, request: &SyncRequest, shed: bool) {
    let mut plugin = shared.plugin.for_steps();
    if !plugin.contract().has_split_syncs() {
        let outcome = scheduler_v0_1::sync_request(plugin.as_mut(), request);
        // Under the lock still: a swap sees the status and its record go together.
        if let Some(outcome) = outcome {
            shared.note_outcome(&request.pod_uid, &outcome);
        }
        return;
    }
    scheduler_v0_2::plan_request(shared, plugin, request, shed);
}

/// One periodic batch sync (`what` names it in the log), as [`handle_request`] does a
/// request.
fn batch_sync(shared: &Arc<Shared>, deadline: Instant, batch: Batch) {
    let what = match batch {
        Batch::Periodic => "batch sync",
        Batch::Final => "final batch sync",
    };
    shared.admission.admit(SYNC_BATCH_CALLS, deadline);
    let _gate = shared.runner.gate();
    let mut plugin = shared.plugin.lock();
    if !plugin.contract().has_split_syncs() {
        scheduler_v0_1::sync_batch(plugin.as_mut(), what);
        return;
    }
    drop(plugin);
    scheduler_v0_2::sync_batch(shared, deadline, batch, what, |request, shed| plan_request(shared, request, shed));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_phase_brings_the_first_batch_forward_by_that_share_of_a_period() {
        let start = Instant::now();
        let period = Duration::from_secs(10);
        assert_eq!(first_batch_at(start, period, 0.0), start + period, "no phase: a whole period");
        assert_eq!(first_batch_at(start, period, 0.25), start + Duration::from_millis(7_500));
        assert_eq!(first_batch_at(start, period, 0.999), start + Duration::from_millis(10));
        for nonsense in [1.0, 1.5, -0.1, f64::NAN, f64::INFINITY] {
            assert_eq!(first_batch_at(start, period, nonsense), start + period, "{nonsense} is no phase");
        }
    }
}
