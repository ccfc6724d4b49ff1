//! Helpers every logic version's split-sync tests share: driving a manager over the
//! [`crate::FakeWorld`] the way a host drives contract 0.2.0 (plan, then start and resume
//! each sync with the world's answers), what the world observed, and the check that the
//! split path makes exactly the calls and imports of the blocking one.
//!
//! Every logic version is one [`Policy`] over the one [`Manager`], so these are plain
//! generic functions.

use podstatus_logic::{
    ApiCall, BatchReport, BatchSlice, Level, Manager, ManagerError, PodSync, Policy, StatusManager, SyncOrigin,
    SyncOutcome, SyncRequest, SyncStep,
};
use serde_json::{Value, json};

use crate::{Call, FakeWorld, Verb, container, pod, static_and_mirror};

/// A logic version's manager over the fake world.
pub type M<P> = Manager<FakeWorld, P>;

/// A host's `sync-pod`: the blocking one or [`split_sync_pod`].
pub type SyncPod<P> = fn(&mut M<P>, &SyncRequest) -> Result<SyncOutcome, ManagerError>;

/// A host's `sync-batch`: the blocking one or [`split_sync_batch`].
pub type SyncBatch<P> = fn(&mut M<P>) -> BatchReport;

/// A scenario run once with each pair of drivers; what each sync returned.
pub type Scenario<P> = fn(&mut M<P>, SyncPod<P>, SyncBatch<P>) -> Vec<String>;

/// Sets a status, which must be accepted.
pub fn set(m: &mut impl StatusManager, pod: &Value, status: Value) {
    m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap_or_else(|e| panic!("set_pod_status: {e}"));
}

/// A status of `phase` with one container `c`, ready or not.
pub fn running(phase: &str, ready: bool) -> Value {
    json!({"phase": phase, "containerStatuses": [container("c", ready)]})
}

/// Runs sync `id` to its end, answering each call at once from the world.
pub fn drive<P: Policy<FakeWorld>>(m: &mut M<P>, id: u64) -> Result<SyncOutcome, ManagerError> {
    let mut step = m.start_sync(id)?;
    loop {
        match step {
            SyncStep::Done(outcome) => return Ok(outcome),
            SyncStep::Call(call) => {
                let reply = m.imports_mut().answer(call);
                step = m.resume_sync(id, reply)?;
            }
        }
    }
}

/// A host's `sync-pod`: plans, then runs every planned sync; the request's outcome.
pub fn split_sync_pod<P: Policy<FakeWorld>>(m: &mut M<P>, request: &SyncRequest) -> Result<SyncOutcome, ManagerError> {
    let mut outcome = Ok(SyncOutcome::UpToDate);
    for sync in m.plan_sync_pod(request)? {
        let result = drive(m, sync.id);
        if sync.origin == SyncOrigin::Request {
            outcome = result;
        }
    }
    outcome
}

/// A host's `sync-batch`: plans it in slices of one pod (as a host serving calls in
/// between asks for it), runs every planned sync, counts the failed ones.
pub fn split_sync_batch<P: Policy<FakeWorld>>(m: &mut M<P>) -> BatchReport {
    let mut report = BatchReport::default();
    let mut syncs = Vec::new();
    let mut slice = BatchSlice::first(1);
    loop {
        let plan = m.plan_sync_batch(&slice);
        report.synced += plan.report.synced;
        report.reconciled += plan.report.reconciled;
        report.failed += plan.report.failed;
        syncs.extend(plan.syncs);
        match plan.next {
            Some(next) => {
                assert!(slice.after.as_ref().is_none_or(|after| *after < next), "a slice moves forward");
                slice.after = Some(next);
            }
            None => break,
        }
    }
    for sync in syncs {
        assert_eq!(sync.origin, SyncOrigin::Batch);
        if drive(m, sync.id).is_err() {
            report.failed += 1;
        }
    }
    report
}

/// Everything the world saw, and the manager's state.
#[derive(Debug, PartialEq)]
pub struct Observed {
    /// What each sync returned.
    pub seen: Vec<String>,
    /// Every API call, in order.
    pub calls: Vec<Call>,
    /// Every log line.
    pub logs: Vec<(Level, String)>,
    /// The state document at the end.
    pub state: String,
    /// How often deletion safety was asked: whether resources are reclaimed, whether
    /// containers may run.
    pub queries: (u32, u32),
}

/// What `m`'s world saw, with `seen` (what each sync returned).
pub fn observed<P: Policy<FakeWorld>>(m: &mut M<P>, seen: Vec<String>) -> Observed {
    let state = m.save_state().expect("save_state");
    let world = m.imports_mut();
    Observed {
        seen,
        calls: world.calls.clone(),
        logs: world.logs.clone(),
        state,
        queries: (world.reclaimed_queries, world.running_queries),
    }
}

/// Runs `scenario` over a manager of `world()` twice, once with the blocking entry
/// points and once driven one call at a time with immediate answers, checks that both
/// leave no sync in flight and observe exactly the same, and returns what they saw.
pub fn blocking_and_split_agree<P: Policy<FakeWorld> + Default>(
    world: fn() -> FakeWorld,
    scenario: Scenario<P>,
) -> Observed {
    let mut blocking = M::<P>::new(world());
    let seen = scenario(&mut blocking, |m, r| m.sync_pod(r), |m| m.sync_batch());
    let blocking = observed(&mut blocking, seen);

    let mut split = M::<P>::new(world());
    let seen = scenario(&mut split, split_sync_pod, split_sync_batch);
    assert_eq!(split.syncs_in_flight(), 0);
    let split = observed(&mut split, seen);

    assert_eq!(split, blocking);
    blocking
}

/// What a 1.27 pass goes through (logic v2 and v3): patches, a deletion after
/// terminate-pod, a pod gone from the API server, static pods with and without mirror
/// pod, drift, a failed GET, garbage from the API server as the answer to `garbage`
/// (a request's, a pass's and a batch's error; the second pod updated is `garbage_pod`)
/// and a recreated pod.
pub fn pass_scenario<P: Policy<FakeWorld>>(
    m: &mut M<P>,
    sync_pod: SyncPod<P>,
    sync_batch: SyncBatch<P>,
    garbage: Verb,
    garbage_pod: &str,
) -> Vec<String> {
    let mut seen = Vec::new();
    let world = m.imports_mut();
    let [a, b, c] = world.add_pods_a_b_c();
    let (s, mirror) = static_and_mirror("ns", "s", "uid-s", "uid-sm", &["c"]);
    world.add_managed_pod(s.clone());
    world.add_pod(mirror);
    let (t, _) = static_and_mirror("ns", "t", "uid-t", "uid-tm", &["c"]);
    world.add_managed_pod(t.clone());
    let drain = |m: &mut M<P>, seen: &mut Vec<String>| drain_requests(m, sync_pod, seen);

    set(m, &a, running("Running", false));
    set(m, &c, running("Pending", false));
    set(m, &s, running("Running", true));
    set(m, &t, running("Running", true));
    m.terminate_pod(&b.to_string()).unwrap();
    drain(m, &mut seen);

    m.imports_mut().drift_status("ns", "a", json!({"phase": "Pending"}));
    seen.push(format!("{:?}", sync_batch(m)));

    m.imports_mut().fail(Verb::GetPod, podstatus_logic::ApiError::Other("the server is unhappy".into()));
    set(m, &a, running("Running", true));
    drain(m, &mut seen);
    m.imports_mut().heal(Verb::GetPod);

    m.imports_mut().answer_garbage(garbage, "not a pod");
    set(m, &a, running("Running", false));
    let second = [&c, &s].into_iter().find(|p| p["metadata"]["name"] == garbage_pod).expect("c or s");
    set(m, second, running("Running", false));
    drain(m, &mut seen);
    seen.push(format!("{:?}", sync_batch(m)));
    m.imports_mut().heal(garbage);

    // The read (after the refused patch, for a version that patches first) finds
    // another UID.
    recreate_a(m, &a, running("Failed", false), sync_pod, sync_batch, &mut seen);
    seen
}

/// Pod ns/a deleted from the API server and created again under the same name (UID
/// uid-a2); then the old pod's `status` set and synced, and a batch, noted in `seen`.
pub fn recreate_a<P: Policy<FakeWorld>>(
    m: &mut M<P>,
    a: &Value,
    status: Value,
    sync_pod: SyncPod<P>,
    sync_batch: SyncBatch<P>,
    seen: &mut Vec<String>,
) {
    m.imports_mut().remove_api_pod("ns", "a");
    m.imports_mut().add_api_pod(pod("ns", "a", "uid-a2", &["c"]));
    set(m, a, status);
    drain_requests(m, sync_pod, seen);
    seen.push(format!("{:?}", sync_batch(m)));
}

/// A manager over `world` caching one status a pod: for each `(name, status)`, pod
/// ns/`name` (UID `uid-name`, one container `c`) is added to the world, then its status
/// set, in order; the pods as the world stored them. Most split-sync tests start here.
pub fn caching<P: Policy<FakeWorld> + Default, const N: usize>(
    mut world: FakeWorld,
    statuses: [(&str, Value); N],
) -> (M<P>, [Value; N]) {
    let pods = statuses.each_ref().map(|(name, _)| world.add_pod(pod("ns", name, &format!("uid-{name}"), &["c"])));
    let mut m = M::<P>::new(world);
    for (pod, (_, status)) in pods.iter().zip(statuses) {
        set(&mut m, pod, status);
    }
    (m, pods)
}

/// The syncs planned for the next request in the world's queue (which must be there).
pub fn plan_next_request<P: Policy<FakeWorld>>(m: &mut M<P>) -> Vec<PodSync> {
    let request = m.imports_mut().pop_request().expect("a queued request");
    m.plan_sync_pod(&request).expect("plan_sync_pod")
}

/// The call a sync is suspended in after `step` (`what` says which was meant; any
/// other step panics with it).
pub fn call_of(step: Result<SyncStep, ManagerError>, what: &str) -> ApiCall {
    match step {
        Ok(SyncStep::Call(call)) => call,
        other => panic!("{what}: {other:?}"),
    }
}

/// Answers `call` from the world and resumes sync `id` with the answer: the next step.
pub fn resume_answered<P: Policy<FakeWorld>>(m: &mut M<P>, id: u64, call: ApiCall) -> Result<SyncStep, ManagerError> {
    let reply = m.imports_mut().answer(call);
    m.resume_sync(id, reply)
}

/// Syncs every request in the world's queue with `sync_pod`, in order, noting in `seen`
/// what each returned (what the scenarios call between their steps).
pub fn drain_requests<P: Policy<FakeWorld>>(m: &mut M<P>, sync_pod: SyncPod<P>, seen: &mut Vec<String>) {
    while let Some(request) = m.imports_mut().pop_request() {
        seen.push(format!("{:?}", sync_pod(m, &request)));
    }
}
