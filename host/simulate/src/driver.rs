//! The node side of a simulation: it plays the kubelet's pod workers and container
//! runtime, and the pods' owners. Each pod's next event comes at a random time (the
//! churn sets the mean); the driver turns events into calls on the status manager
//! (through [`TimedManager`], which measures what each call costs the node) and, for
//! owners, on the API server.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use crate::kubelet_1_35::{Call, Kubelet135, NewPaths};
use crate::owners::Owners;
use podstatus_agent::metrics::TimedManager;
use podstatus_agent::node::{Flushed, report, report_pod_status_json};
use podstatus_agent::node::{LifeEvent as Event, LifeStage as Stage, PodKind as Kind, PodLife, SIMULATED_NAMESPACE};
use podstatus_backends::PodManager;
use podstatus_backends::rng::{Entropy, SplitMix64};
use podstatus_runtime::CallError;
use podstatus_runtime::bindings::UpdateOutcome;

/// How often a pod waiting on the API server or the watch looks again.
const POLL: Duration = Duration::from_millis(20);
/// How often the driver drops the statuses of pods the node no longer has, as the
/// kubelet's housekeeping does (`RemoveOrphanedStatuses`, every 2 s upstream).
const HOUSEKEEPING: Duration = Duration::from_secs(2);
/// How often the driver ticks (progress, swaps) at least.
const TICK: Duration = Duration::from_millis(50);
/// How far past its interval a pod's resync may come (the kubelet's pod workers:
/// `workerResyncIntervalJitterFactor`, `pkg/kubelet/pod_workers.go`).
const RESYNC_JITTER: f64 = 0.5;

/// How the driver runs.
#[derive(Clone, Debug)]
pub struct DriverConfig {
    /// Pods alive at once (a deleted pod is replaced).
    pub pods: usize,
    /// Lifecycle events per second, over all pods.
    pub churn: f64,
    /// The node the pods are bound to.
    pub node: String,
    /// The generator's seed.
    pub seed: u64,
    /// Stop once this many pods have lived their whole lives (deleted by the status
    /// manager after termination); `None` runs until the deadline.
    pub cycles: Option<u64>,
    /// Play a Kubernetes 1.35 kubelet and its users too ([`Kubelet135`]: generations,
    /// sidecars, in-place resizes through the plugin's resize calls): for a plugin
    /// whose contract has them (logic v4).
    pub kubelet_1_35: bool,
    /// How often each pod is synced again with nothing new to report, as the kubelet's
    /// pod workers do every `--sync-frequency` (1 minute by default), each calling
    /// `SetPodStatus` with the status it generates, most often the one it sent last;
    /// `None` never.
    pub resync: Option<Duration>,
    /// Put before every pod's name (`PREFIX-web-0001-0`): a fleet's nodes create their
    /// pods in one namespace.
    pub name_prefix: Option<String>,
    /// Create the first pods at this many a second, one after another, as a workload
    /// scaled up at once would have them; `None` has them arrive like any event, at the
    /// churn's rate.
    pub arrival_rate: Option<f64>,
    /// Annotations every pod is created with, beside its own (a fleet group's: what a
    /// workload of that group's nodes carries).
    pub annotations: BTreeMap<String, String>,
}

/// What the driver counted.
#[derive(Clone, Debug, Default)]
pub struct DriverCounts {
    /// Calls by operation.
    pub updates: BTreeMap<&'static str, u64>,
    /// Calls that made a new version.
    pub versions: u64,
    /// Calls that changed nothing.
    pub unchanged: u64,
    /// New versions past a full queue.
    pub queue_full: u64,
    /// Failed calls by what failed.
    pub faults: BTreeMap<String, u64>,
    /// Pods created in the API server.
    pub created: u64,
    /// Pods that went away after their termination (deleted by the status manager).
    pub deleted: u64,
    /// Owner calls that failed (logged; the pod's life waits and tries again).
    pub owner_errors: u64,
    /// Resyncs: a pod's last status sent again ([`DriverConfig::resync`]). Their
    /// outcomes are counted with the other calls' too.
    pub resyncs: u64,
    /// Of the pods created, the node's first ones (its `pods`, before any replacement).
    pub first_created: u64,
    /// When the last of the node's first pods was created, if all were.
    pub first_created_at: Option<Instant>,
}

impl DriverCounts {
    /// Adds another node's counts to these (a fleet's summary).
    pub fn add(&mut self, other: &DriverCounts) {
        for (op, n) in &other.updates {
            *self.updates.entry(op).or_default() += n;
        }
        for (fault, n) in &other.faults {
            *self.faults.entry(fault.clone()).or_default() += n;
        }
        self.versions += other.versions;
        self.unchanged += other.unchanged;
        self.queue_full += other.queue_full;
        self.created += other.created;
        self.deleted += other.deleted;
        self.owner_errors += other.owner_errors;
        self.resyncs += other.resyncs;
        self.first_created += other.first_created;
        self.first_created_at = self.first_created_at.max(other.first_created_at);
    }
}

/// The simulated node: every pod's life and when its next event is due.
pub struct Driver {
    config: DriverConfig,
    rng: SplitMix64,
    lives: Vec<PodLife>,
    due: BinaryHeap<Reverse<(Instant, usize)>>,
    /// Counts so far.
    pub counts: DriverCounts,
    next_housekeeping: Instant,
    /// The 1.35 kubelet's additions, when the run plays one.
    kubelet: Option<Kubelet135>,
    /// Each slot's last status sent, as sent (its pod's UID and the JSON), while it
    /// is still the pod's whole news: any other report for the pod forgets it, so a
    /// resync never sends what the node would no longer generate.
    last_sent: Vec<Option<(String, String)>>,
    /// When each slot's next resync is due (with [`DriverConfig::resync`]).
    resyncs: BinaryHeap<Reverse<(Instant, usize)>>,
    /// The resyncs' jitter, apart from the lives' generator: the same seed gives the
    /// same pod lives with resyncs or without.
    resync_rng: SplitMix64,
}

impl Driver {
    /// A node with `config.pods` pods to create, plus the static pods the pod manager
    /// already holds (from the manifest folder).
    pub fn new(config: DriverConfig, pod_manager: &PodManager) -> Self {
        let mut rng = SplitMix64::new(config.seed);
        let entropy: &mut dyn Entropy = &mut rng;
        let mut lives: Vec<PodLife> = (0..config.pods)
            .map(|slot| {
                let kind = if entropy.chance(75) { Kind::Service } else { Kind::Job };
                named(PodLife::new(slot, 0, kind, entropy), config.name_prefix.as_deref())
            })
            .collect();
        // The pod manager's pairing already knows every static pod (mirror pods aside).
        let (static_to_mirror, _) = pod_manager.get_uid_translations();
        for uid in static_to_mirror.into_keys() {
            let mut life = PodLife::new(lives.len(), 0, Kind::Static, entropy);
            life.uid = Some(uid);
            lives.push(life);
        }
        let now = Instant::now();
        let kubelet = config.kubelet_1_35.then(|| Kubelet135::new(config.seed));
        let resync_rng = SplitMix64::new(config.seed ^ 0x7265_7379_6e63);
        let mut driver = Driver {
            kubelet,
            config,
            rng,
            last_sent: vec![None; lives.len()],
            lives,
            resyncs: BinaryHeap::new(),
            resync_rng,
            due: BinaryHeap::new(),
            counts: DriverCounts::default(),
            next_housekeeping: now + HOUSEKEEPING,
        };
        // Pods arrive like every other event, at the churn's rate: a node does not get
        // all its pods in one instant, and the first writes then fit the QPS budget.
        for slot in 0..driver.lives.len() {
            let at = match driver.config.arrival_rate.filter(|rate| *rate > 0.0) {
                Some(rate) => now + Duration::from_secs_f64(slot as f64 / rate),
                None => now + driver.interval(),
            };
            driver.due.push(Reverse((at, slot)));
            if let Some(at) = driver.next_resync(now) {
                driver.resyncs.push(Reverse((at, slot)));
            }
        }
        driver
    }

    /// Bytes the simulated node holds, for the memory account: its pods' lives, the
    /// last status sent of each (kept for resyncs), and its schedules of events.
    pub fn held_bytes(&self) -> usize {
        use std::mem::size_of;
        let lives: usize = self.lives.iter().map(PodLife::held_bytes).sum();
        let last_sent: usize = self.last_sent.len() * size_of::<Option<(String, String)>>()
            + self.last_sent.iter().flatten().map(|(uid, json)| uid.len() + json.len()).sum::<usize>();
        let schedules = (self.due.len() + self.resyncs.len()) * size_of::<Reverse<(Instant, usize)>>();
        let kubelet = self.kubelet.as_ref().map_or(0, Kubelet135::held_bytes);
        lives + last_sent + schedules + kubelet
    }

    /// What the 1.35 kubelet's paths did, when the run played one.
    pub fn new_paths(&self) -> Option<NewPaths> {
        self.kubelet.as_ref().map(|k| k.counts.clone())
    }

    /// Static pods among the lives.
    pub fn static_pods(&self) -> usize {
        self.lives.iter().filter(|l| l.kind == Kind::Static).count()
    }

    /// Runs events until `until` or until `stop` is set, calling `tick` between events
    /// (progress, swaps). Returns early when stopped. A fleet runs many drivers on a few
    /// threads instead ([`crate::driver_pool`]), through [`Driver::next_at`] and
    /// [`Driver::run_due`].
    pub fn run(
        &mut self,
        handle: &TimedManager,
        pods: &PodManager,
        owners: &dyn Owners,
        until: Instant,
        stop: &AtomicBool,
        mut tick: impl FnMut(&Self),
    ) {
        let mut last_tick = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= until || self.finished() {
                break;
            }
            let Some(at) = self.next_at() else { break };
            if at > now {
                std::thread::sleep((at - now).min(until - now).min(TICK));
                tick(self);
                last_tick = Instant::now();
                continue;
            }
            self.run_due(handle, pods, owners, now);
            // A driver behind its schedule never sleeps: it must still tick, or a swap
            // due (or signalled) would wait for the churn to end.
            if last_tick.elapsed() >= TICK {
                tick(self);
                last_tick = Instant::now();
            }
        }
    }

    /// Whether the run asked for a number of pod lives and they are all over.
    pub fn finished(&self) -> bool {
        self.config.cycles.is_some_and(|cycles| self.counts.deleted >= cycles)
    }

    /// When the driver has something to do next: a pod's event, a resync or the
    /// housekeeping; None when it has no pod at all.
    pub fn next_at(&self) -> Option<Instant> {
        let Reverse((event, _)) = self.due.peek()?;
        let resync = self.resyncs.peek().map(|Reverse((at, _))| *at);
        Some(resync.map_or(*event, |resync| resync.min(*event)).min(self.next_housekeeping))
    }

    /// Does what is due at `now`: the housekeeping when it is due, then one resync or
    /// one pod's event (a resync first).
    pub fn run_due(&mut self, handle: &TimedManager, pods: &PodManager, owners: &dyn Owners, now: Instant) {
        if now >= self.next_housekeeping {
            self.housekeeping(handle, pods);
            self.next_housekeeping = now + HOUSEKEEPING;
        }
        if let Some(&Reverse((at, slot))) = self.resyncs.peek()
            && at <= now
        {
            self.resyncs.pop();
            self.resync(slot, handle, pods);
            if let Some(at) = self.next_resync(Instant::now()) {
                self.resyncs.push(Reverse((at, slot)));
            }
            return;
        }
        if let Some(&Reverse((at, slot))) = self.due.peek()
            && at <= now
        {
            self.due.pop();
            let wait = self.step(slot, handle, pods, owners);
            self.due.push(Reverse((Instant::now() + wait, slot)));
        }
    }

    /// When a resync that starts its interval at `now` is due: the interval, plus up to
    /// half of it more (the pod workers' jitter), so pods do not resync in step.
    fn next_resync(&mut self, now: Instant) -> Option<Instant> {
        let interval = self.config.resync?;
        let entropy: &mut dyn Entropy = &mut self.resync_rng;
        Some(now + interval.mul_f64(1.0 + RESYNC_JITTER * entropy.unit()))
    }

    /// A pod's sync with nothing new: its last status sent again, if that is still the
    /// pod's news and the node still has the pod (not being deleted: its life reports
    /// its end itself).
    fn resync(&mut self, slot: usize, handle: &TimedManager, pods: &PodManager) {
        let Some((uid, status)) = &self.last_sent[slot] else { return };
        if self.lives[slot].uid.as_deref() != Some(uid.as_str()) {
            return;
        }
        let Some(pod) = pods.get_pod_by_uid(uid).filter(|p| !p.is_being_deleted()) else {
            return;
        };
        let (op, outcome) = report_pod_status_json(handle, pod.json(), status);
        self.counts.resyncs += 1;
        self.count(op, outcome);
    }

    /// The run is over: lets go of each pod's last status, kept for its resyncs, and
    /// stops the resyncs; the counts stay. A fleet's 100,000 statuses are about
    /// 100 MiB, which the final check's list of as many would otherwise add to the
    /// run's peak of memory.
    pub fn stop_resyncs(&mut self) {
        self.last_sent.iter_mut().for_each(|sent| *sent = None);
        self.resyncs.clear();
    }

    /// Drops the statuses of pods the node no longer has.
    pub fn housekeeping(&mut self, handle: &TimedManager, pods: &PodManager) {
        let keep: Vec<String> = pods.uids();
        if let Err(e) = handle.remove_orphaned_statuses(&keep) {
            self.fault("remove-orphaned-statuses", &e);
        }
    }

    /// After the churn: stop the resyncs, drop orphans, let the queue drain, then
    /// batch-sync until nothing is left to write (the rate limit may refuse some writes
    /// of a batch: the next one takes them), until `deadline` at most and while `go_on`
    /// ([`podstatus_agent::NodeAgent::flush_until`]).
    pub fn quiet_sync(
        &mut self,
        agent: &podstatus_agent::NodeAgent,
        handle: &TimedManager,
        deadline: Instant,
        go_on: &dyn Fn() -> bool,
    ) -> Flushed {
        self.stop_resyncs();
        self.housekeeping(handle, agent.pod_manager());
        agent.flush_until(deadline, go_on)
    }

    /// One event of one pod; returns how long until its next.
    fn step(&mut self, slot: usize, handle: &TimedManager, pods: &PodManager, owners: &dyn Owners) -> Duration {
        if self.lives[slot].stage == Stage::Gone {
            return self.replace(slot, owners);
        }
        if self.lives[slot].uid.is_none() {
            return self.create(slot, owners);
        }
        let uid = self.lives[slot].uid.clone().unwrap_or_default();
        let held = pods.get_pod_by_uid(&uid);
        // The kubelet learns of a pod from its watch: until the watch brings it, wait.
        if held.is_none() && self.lives[slot].stage == Stage::Created {
            return POLL;
        }
        let deleting = held.as_ref().is_some_and(|p| p.is_being_deleted());
        let now = jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
        // The 1.35 kubelet reads the pod whole (its generation, its containers): parsed
        // for it alone.
        let typed = self.kubelet.is_some().then(|| held.as_ref().and_then(|pod| pod.pod().ok())).flatten();
        if let (Some(kubelet), Some(pod)) = (self.kubelet.as_mut(), typed.as_ref())
            && !deleting
            && let Some(calls) = kubelet.step(&self.lives[slot], pod, &now, handle, owners)
        {
            self.last_sent[slot] = None;
            self.count_calls(calls);
            return self.interval();
        }
        let was_terminated = self.lives[slot].stage == Stage::Terminated;
        let event = self.lives[slot].next(&mut self.rng, &now, deleting, held.is_some());
        let mut calls = Vec::new();
        let event = match (self.kubelet.as_mut(), typed.as_ref(), event) {
            (Some(kubelet), Some(pod), Event::SetStatus(status)) => {
                Event::SetStatus(kubelet.status(&self.lives[slot], pod, status, &now, handle, &mut calls))
            }
            (Some(kubelet), Some(pod), Event::Kill(status)) => {
                Event::Kill(kubelet.status(&self.lives[slot], pod, status, &now, handle, &mut calls))
            }
            (_, _, event) => event,
        };
        self.count_calls(calls);
        // A terminated pod that left the node was deleted by the status manager. Counted
        // here: the event that says so is a `Wait`, which returns early below.
        if was_terminated && self.lives[slot].stage == Stage::Gone {
            self.counts.deleted += 1;
        }
        match (event, held) {
            (Event::Wait, _) => return POLL,
            (Event::RequestDeletion, _) => {
                let life = &self.lives[slot];
                if let Err(e) = owners.delete(SIMULATED_NAMESPACE, &life.name()) {
                    tracing::warn!(pod = %life.name(), "deleting: {e}");
                    self.counts.owner_errors += 1;
                }
            }
            // A status is kept, as sent, for a resync to send again; any other report
            // leaves nothing to send until the pod's next status (its readiness or its
            // end is news the last status does not hold).
            (Event::SetStatus(status), Some(pod)) => {
                let json = serde_json::to_string(&status).unwrap_or_default();
                let (op, outcome) = report_pod_status_json(handle, pod.json(), &json);
                self.count(op, outcome);
                self.last_sent[slot] = self.lives[slot].uid.clone().map(|uid| (uid, json));
            }
            (event, Some(pod)) => {
                for (op, outcome) in report(handle, &pod, &event) {
                    self.count(op, outcome);
                }
                self.last_sent[slot] = None;
            }
            // The pod left the node under our feet (deleted elsewhere): nothing to report.
            (_, None) => return POLL,
        }
        self.interval()
    }

    fn create(&mut self, slot: usize, owners: &dyn Owners) -> Duration {
        let mut pod = self.lives[slot].manifest(&self.config.node);
        if !self.config.annotations.is_empty() {
            let annotations = pod.metadata.annotations.get_or_insert_with(Default::default);
            annotations.extend(self.config.annotations.iter().map(|(k, v)| (k.clone(), v.clone())));
        }
        let pod = match self.kubelet.as_mut() {
            Some(kubelet) => kubelet.manifest(&self.lives[slot], pod),
            None => pod,
        };
        match owners.create(pod) {
            Ok(created) => {
                self.lives[slot].uid = created.metadata.uid;
                self.counts.created += 1;
                if self.lives[slot].generation == 0 {
                    self.counts.first_created += 1;
                    if self.counts.first_created == self.config.pods as u64 {
                        self.counts.first_created_at = Some(Instant::now());
                    }
                }
                if let Some(kubelet) = self.kubelet.as_mut() {
                    kubelet.created(slot);
                }
                POLL
            }
            Err(e) => {
                tracing::warn!(pod = %self.lives[slot].name(), "creating: {e}");
                self.counts.owner_errors += 1;
                self.interval()
            }
        }
    }

    /// A new pod in a slot whose pod is gone, as a workload controller would make.
    fn replace(&mut self, slot: usize, owners: &dyn Owners) -> Duration {
        let old = &self.lives[slot];
        let (generation, kind) = (old.generation + 1, old.kind);
        self.lives[slot] =
            named(PodLife::new(slot, generation, kind, &mut self.rng), self.config.name_prefix.as_deref());
        self.last_sent[slot] = None;
        self.create(slot, owners)
    }

    /// Time to a pod's next event: exponential, with the mean the churn asks for.
    fn interval(&mut self) -> Duration {
        let mean = self.lives.len() as f64 / self.config.churn.max(0.001);
        let entropy: &mut dyn Entropy = &mut self.rng;
        Duration::from_secs_f64(-mean * (1.0 - entropy.unit()).ln()).min(Duration::from_secs(3600))
    }

    fn count(&mut self, op: &'static str, outcome: Result<UpdateOutcome, CallError>) {
        *self.counts.updates.entry(op).or_default() += 1;
        match outcome {
            Ok(UpdateOutcome::Queued) => self.counts.versions += 1,
            Ok(UpdateOutcome::QueueFull) => {
                self.counts.versions += 1;
                self.counts.queue_full += 1;
            }
            Ok(UpdateOutcome::Unchanged) => self.counts.unchanged += 1,
            // The plugin's answer that it had nothing to update (the pod or container
            // is unknown to it): expected while a pod comes or goes.
            Ok(other) => *self.counts.faults.entry(format!("{op}: {}", outcome_name(other))).or_default() += 1,
            Err(e) => self.fault(op, &e),
        }
    }

    fn count_calls(&mut self, calls: Vec<Call>) {
        for call in calls {
            match call {
                Call::Update(op, outcome) => self.count(op, outcome),
                Call::Failed(op, error) => self.fault(op, &error),
            }
        }
    }

    fn fault(&mut self, op: &str, error: &CallError) {
        tracing::warn!("{op}: {error}");
        *self.counts.faults.entry(format!("{op}: {}", fault_kind(error))).or_default() += 1;
    }

    /// Pods alive now, by stage.
    pub fn stages(&self) -> BTreeMap<&'static str, usize> {
        let mut out = BTreeMap::new();
        for life in &self.lives {
            *out.entry(stage_name(life.stage)).or_default() += 1;
        }
        out
    }
}

/// `life` under the driver's name prefix, if it has one.
fn named(life: PodLife, prefix: Option<&str>) -> PodLife {
    match prefix {
        Some(prefix) => life.with_name_prefix(prefix),
        None => life,
    }
}

fn fault_kind(error: &CallError) -> &'static str {
    match error {
        CallError::Rejected { .. } => "rejected",
        CallError::Fault { .. } => "fault",
        CallError::Unsupported { .. } => "unsupported",
        CallError::TooLarge { .. } => "too large",
    }
}

fn outcome_name(outcome: UpdateOutcome) -> &'static str {
    match outcome {
        UpdateOutcome::Queued => "queued",
        UpdateOutcome::QueueFull => "queue full",
        UpdateOutcome::Unchanged => "unchanged",
        UpdateOutcome::PodNotFound => "pod not found",
        UpdateOutcome::NotCached => "not cached",
        UpdateOutcome::UnknownContainer => "unknown container",
    }
}

fn stage_name(stage: Stage) -> &'static str {
    match stage {
        Stage::Created => "created",
        Stage::Pending => "pending",
        Stage::Initializing => "initializing",
        Stage::Running => "running",
        Stage::Finished => "finished",
        Stage::DeleteRequested => "deleting",
        Stage::Terminated => "terminated",
        Stage::Gone => "gone",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After the run the driver keeps its counts, not the statuses its resyncs would
    /// send again, and no resync comes due.
    #[test]
    fn stopping_the_resyncs_lets_go_of_the_last_statuses_and_schedules_none() {
        let config = DriverConfig {
            pods: 3,
            churn: 0.001,
            node: "n".into(),
            seed: 1,
            cycles: None,
            kubelet_1_35: false,
            resync: Some(Duration::from_millis(1)),
            name_prefix: None,
            arrival_rate: None,
            annotations: BTreeMap::new(),
        };
        let start = Instant::now();
        let mut driver = Driver::new(config, &PodManager::new());
        assert!(driver.next_at().expect("pods") < start + Duration::from_millis(100), "a resync is due first");
        driver.last_sent[1] = Some(("uid-1".into(), r#"{"phase":"Running"}"#.into()));
        driver.counts.resyncs = 4;

        driver.stop_resyncs();
        assert!(driver.last_sent.iter().all(Option::is_none));
        assert!(driver.next_at().expect("pods") >= start + HOUSEKEEPING, "only events and housekeeping are due");
        assert_eq!(driver.counts.resyncs, 4, "the counts stay");
    }
}
