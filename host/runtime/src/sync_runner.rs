//! Overlapping syncs of a 0.2.0 plugin: the plugin is entered only to plan and to take
//! each step, never while an API call is out.
//!
//! The scheduler plans a request's or a batch's syncs under the plugin lock, admits
//! them through the [`SyncTable`] (one sync per pod in flight) and starts those it may.
//! A sync that asks for an API call is handed, with the call, to a pool of worker
//! threads: a worker makes the call holding nothing (waiting for its rate-limit token
//! like any client, [`podstatus_backends::patience`]), then takes the plugin lock just
//! long enough to resume the sync, and goes on with its next call or, once it is over,
//! with the next sync of the same pod. Callers of the Manager operations wait for the
//! plugin only while it computes.
//!
//! The workers are the runner's own threads, or the threads of a [`CallPool`] it shares
//! with other runners (a fleet's nodes): then the runner keeps its calls past its limit
//! in a backlog of its own and has at most that many tasks on the pool at once.

use std::collections::VecDeque;
use std::ops::DerefMut;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::api;
use crate::bindings::{ApiCall, PodSync, SyncOrigin, SyncOutcome, SyncStep};
use crate::call_pool::CallPool;
use crate::plugin::{Plugin, PluginExt, Result};
use crate::sync_table::SyncTable;
use crate::world::World;

/// What the runner needs of whoever owns the plugin (the handle).
pub(crate) trait PluginHost: Send + Sync + 'static {
    /// The plugin, locked (the handle's lock for sync steps). Any guard: the runner
    /// does not depend on the handle that owns it.
    fn plugin(&self) -> impl DerefMut<Target = Box<dyn Plugin>>;
    /// The runner of this plugin's syncs.
    fn runner(&self) -> &SyncRunner;
    /// A sync of `pod_uid` ended with `outcome` (before the runner lets a swap go on).
    fn sync_done(&self, pod_uid: &str, outcome: &SyncOutcome);
}

/// A sync suspended in an API call, on its way to a worker.
struct Job {
    sync: PodSync,
    call: ApiCall,
    world: World,
}

/// The workers' side of the runner.
enum Calls {
    /// No call was made yet: no worker runs.
    NotStarted,
    /// Workers take calls from here.
    Running(Sender<Job>),
    /// Calls go to a shared pool: at most `max_calls` tasks of this runner on it at once
    /// (`active`), each taking calls from the backlog until it is empty.
    Pooled {
        pool: Arc<CallPool>,
        backlog: VecDeque<Job>,
        active: usize,
        /// Set by [`SyncRunner::stop`]: no call is taken any more.
        stopping: bool,
    },
    /// The runner stopped: no call is made any more.
    Stopped,
}

/// The syncs in flight and the workers that make their calls.
pub(crate) struct SyncRunner {
    table: Mutex<SyncTable>,
    /// Signalled whenever the table becomes idle.
    idle: Condvar,
    calls: Mutex<Calls>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Signalled when a pooled runner's last active task ends.
    drained: Condvar,
    /// Held while a request's or batch's syncs are planned and admitted, and by a swap
    /// while it drains and hands over: no sync is planned by a plugin on its way out.
    gate: Mutex<()>,
    /// Worker threads (the most API calls in flight at once).
    max_calls: usize,
    /// How long a worker's call may wait for a rate-limit token.
    patience: Duration,
}

impl SyncRunner {
    /// A runner of at most `max_calls` calls at once, each waiting at most `patience`
    /// for its token, made on `pool`'s threads, or else on workers of its own that start
    /// with the first call.
    pub(crate) fn new(max_calls: usize, patience: Duration, pool: Option<Arc<CallPool>>) -> Self {
        let calls = match pool {
            Some(pool) => Calls::Pooled { pool, backlog: VecDeque::new(), active: 0, stopping: false },
            None => Calls::NotStarted,
        };
        SyncRunner {
            table: Mutex::new(SyncTable::new()),
            idle: Condvar::new(),
            calls: Mutex::new(calls),
            workers: Mutex::new(Vec::new()),
            drained: Condvar::new(),
            gate: Mutex::new(()),
            max_calls: max_calls.max(1),
            patience,
        }
    }

    fn table(&self) -> MutexGuard<'_, SyncTable> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Holds off planning (see the field).
    pub(crate) fn gate(&self) -> MutexGuard<'_, ()> {
        self.gate.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Syncs in flight and waiting.
    pub(crate) fn pending(&self) -> usize {
        let table = self.table();
        table.in_flight() + table.waiting()
    }

    /// Waits until no sync is in flight or waiting, at most until `deadline`; whether it
    /// is so.
    pub(crate) fn wait_idle(&self, deadline: Instant) -> bool {
        let mut table = self.table();
        while !table.is_idle() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return false;
            }
            table = self.idle.wait_timeout(table, left).unwrap_or_else(PoisonError::into_inner).0;
        }
        true
    }

    /// The sync `id` of `pod_uid` is over: what to start next (see [`SyncTable::finish`]),
    /// waking whoever waits for the table to be idle.
    fn finish(&self, pod_uid: &str, id: u64) -> crate::sync_table::Next {
        let mut table = self.table();
        let next = table.finish(pod_uid, id);
        if table.is_idle() {
            self.idle.notify_all();
        }
        next
    }

    fn calls(&self) -> MutexGuard<'_, Calls> {
        self.calls.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Stops the workers once their calls are made; syncs still waiting are forgotten.
    pub(crate) fn stop(&self) {
        let mut calls = self.calls();
        if let Calls::Pooled { backlog, stopping, .. } = &mut *calls {
            *stopping = true;
            backlog.clear();
            // The pool's threads are not ours to join: wait for this runner's tasks.
            while matches!(&*calls, Calls::Pooled { active, .. } if *active > 0) {
                calls = self.drained.wait(calls).unwrap_or_else(PoisonError::into_inner);
            }
        }
        *calls = Calls::Stopped;
        drop(calls);
        let workers = std::mem::take(&mut *self.workers.lock().unwrap_or_else(PoisonError::into_inner));
        for worker in workers {
            let _ = worker.join();
        }
    }
}

/// Admits `syncs` (planned by the plugin) and starts those whose pod has none in flight.
pub(crate) fn run_planned<H: PluginHost>(host: &Arc<H>, syncs: Vec<PodSync>) {
    let ready = host.runner().table().admit(syncs);
    for sync in ready {
        let (step, world) = {
            let mut plugin = host.plugin();
            (plugin.start_sync(sync.id), plugin.world().clone())
        };
        advance(host, sync, step, world);
    }
}

/// Moves `sync` on after a step: hands its call to a worker, or, once it is over, starts
/// the next sync of its pod (dropping the older ones it covers).
fn advance<H: PluginHost>(host: &Arc<H>, mut sync: PodSync, mut step: Result<SyncStep>, mut world: World) {
    loop {
        match step {
            Ok(SyncStep::Call(call)) => {
                dispatch(host, Job { sync, call, world });
                return;
            }
            Ok(SyncStep::Done(outcome)) => {
                tracing::debug!(pod = %sync.pod_uid, sync = sync.id, origin = ?sync.origin, ?outcome, "synced");
                host.sync_done(&sync.pod_uid, &outcome);
            }
            Err(e) if sync.origin == SyncOrigin::Request => {
                tracing::error!(pod = %sync.pod_uid, sync = sync.id, "sync: {e}");
            }
            // The plugin logged why (as 0.1.x logged a failed sync in a pass or batch).
            Err(e) => tracing::debug!(pod = %sync.pod_uid, sync = sync.id, origin = ?sync.origin, "sync failed: {e}"),
        }
        let next = host.runner().finish(&sync.pod_uid, sync.id);
        let Some(start) = next.start else { return };
        let mut plugin = host.plugin();
        for covered in &next.superseded {
            if let Err(e) = plugin.drop_sync(covered.id) {
                tracing::warn!(pod = %covered.pod_uid, sync = covered.id, "dropping a covered sync: {e}");
            }
        }
        sync = start;
        step = plugin.start_sync(sync.id);
        world = plugin.world().clone();
    }
}

/// Hands a call to the workers, starting them on first use (or to the pool).
fn dispatch<H: PluginHost>(host: &Arc<H>, job: Job) {
    let runner = host.runner();
    let mut calls = runner.calls();
    if matches!(*calls, Calls::NotStarted) {
        let (sender, receiver) = channel();
        let receiver = Arc::new(Mutex::new(receiver));
        let mut workers = runner.workers.lock().unwrap_or_else(PoisonError::into_inner);
        for n in 0..runner.max_calls {
            let host = Arc::clone(host);
            let receiver = Arc::clone(&receiver);
            let spawned =
                std::thread::Builder::new().name(format!("podstatus-api-{n}")).spawn(move || work(&host, &receiver));
            match spawned {
                Ok(worker) => workers.push(worker),
                Err(e) => tracing::error!("starting an API worker: {e}"),
            }
        }
        *calls = Calls::Running(sender);
    }
    let job = match &mut *calls {
        Calls::Running(sender) => match sender.send(job) {
            Ok(()) => return,
            Err(unsent) => unsent.0,
        },
        Calls::Pooled { pool, backlog, active, stopping: false } => {
            backlog.push_back(job);
            if *active >= runner.max_calls {
                return;
            }
            *active += 1;
            let (pool, drainer) = (Arc::clone(pool), Arc::clone(host));
            drop(calls);
            // The runner holds the pool, so the pool is not shutting down: it takes it.
            if pool.submit(Box::new(move || drain(&drainer))).is_err() {
                tracing::error!("the call pool refused a task: its calls wait for the next sync");
            }
            return;
        }
        Calls::Pooled { stopping: true, .. } | Calls::NotStarted | Calls::Stopped => job,
    };
    drop(calls);
    abandon(host, &job);
}

/// Stopping: `job`'s call is not made; its sync ends here (its status stays cached).
fn abandon<H: PluginHost>(host: &Arc<H>, job: &Job) {
    tracing::debug!(pod = %job.sync.pod_uid, sync = job.sync.id, "not syncing: the runner stopped");
    let _ = host.plugin().drop_sync(job.sync.id);
    // The waiting syncs of the pod are forgotten with the runner.
    let _ = host.runner().finish(&job.sync.pod_uid, job.sync.id);
}

/// A pooled runner's task on a pool thread: makes the backlog's calls until it is
/// empty (or the runner stops).
fn drain<H: PluginHost>(host: &Arc<H>) {
    let runner = host.runner();
    podstatus_backends::patience::set(runner.patience);
    loop {
        let job = {
            let mut calls = runner.calls();
            let Calls::Pooled { backlog, active, stopping, .. } = &mut *calls else { return };
            match backlog.pop_front().filter(|_| !*stopping) {
                Some(job) => job,
                None => {
                    *active -= 1;
                    if *active == 0 {
                        runner.drained.notify_all();
                    }
                    return;
                }
            }
        };
        call(host, job);
    }
}

/// Makes a job's call holding nothing, then resumes its sync under the plugin lock.
fn call<H: PluginHost>(host: &Arc<H>, Job { sync, call, world }: Job) {
    let reply = api::perform(&world, call);
    let (step, world) = {
        let mut plugin = host.plugin();
        (plugin.resume_sync(sync.id, &reply), plugin.world().clone())
    };
    advance(host, sync, step, world);
}

/// A worker: makes calls holding nothing, resumes their syncs under the plugin lock.
fn work<H: PluginHost>(host: &Arc<H>, receiver: &Mutex<Receiver<Job>>) {
    podstatus_backends::patience::set(host.runner().patience);
    loop {
        let job = receiver.lock().unwrap_or_else(PoisonError::into_inner).recv();
        let Ok(job) = job else { return };
        // Calls queued before the runner stopped are not made: a backlog at a low QPS
        // would keep the workers (and the stop that joins them) busy for minutes.
        if matches!(*host.runner().calls(), Calls::Stopped) {
            abandon(host, &job);
            continue;
        }
        call(host, job);
    }
}
