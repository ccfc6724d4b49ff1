//! The kube-rs API server client over real HTTP: against the embedded API server, a
//! server that accepts connections and never answers, and a refused port; and the
//! status manager's other threads kept going while its API server is stalled.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_agent::client::{ClientSource, connect};
use podstatus_agent::client::{KubeApiServer, KubeClientConfig};
use podstatus_agent::client::{Outcome, Verb};
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::testing;
use podstatus_backends::{ApiError, ApiServer, DeleteOptions, MemoryApiServer, StatusPatch, StatusUpdate};
use podstatus_runtime::Admission;
use podstatus_runtime::{ManagerHandle, SchedulerConfig};
use podstatus_tests::{TestPod, v1_image};

/// Generous: these bound waits, they never measure them.
const PATIENCE: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("a tokio runtime")
}

fn pod(name: &str, uid: &str) -> Pod {
    TestPod::new(name, uid).namespace("default").container_with_image("app", Some("app:1")).phase("Pending").build()
}

fn running() -> PodStatus {
    serde_json::from_value(serde_json::json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}]
    }))
    .unwrap()
}

/// A client of `url` with `config`, its requests carried by `runtime`.
fn client(runtime: &tokio::runtime::Runtime, url: String, config: KubeClientConfig) -> KubeApiServer {
    let client = runtime.block_on(connect(&ClientSource::Url(url))).expect("a client for the URL");
    KubeApiServer::new(runtime.handle().clone(), client, config).expect("a valid client config")
}

/// The embedded API server over `store` on a loopback port.
fn serve(store: &Arc<MemoryApiServer>) -> EmbeddedApiServer {
    EmbeddedApiServer::start(Arc::clone(store), "127.0.0.1:0".parse().unwrap()).expect("the embedded server starts")
}

/// The default config but for the call timeout and the breaker's first and longest
/// backoff.
fn timeouts(
    call_timeout: Duration,
    breaker_initial_backoff: Duration,
    breaker_max_backoff: Duration,
) -> KubeClientConfig {
    KubeClientConfig { call_timeout, breaker_initial_backoff, breaker_max_backoff, ..KubeClientConfig::default() }
}

/// The embedded API server over `store` holding `pod`, and a client of it with the
/// default config, its requests carried by the runtime returned beside it.
fn served(
    store: MemoryApiServer,
    pod: Pod,
) -> (Arc<MemoryApiServer>, EmbeddedApiServer, tokio::runtime::Runtime, KubeApiServer) {
    let store = Arc::new(store);
    store.put_pod(pod).unwrap();
    let server = serve(&store);
    let runtime = runtime();
    let api = client(&runtime, server.url(), KubeClientConfig::default());
    (store, server, runtime, api)
}

/// A server that accepts connections and never answers; stops accepting when dropped.
struct StalledServer {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
}

impl StalledServer {
    fn start() -> StalledServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        std::thread::spawn(move || {
            // Held, never read or answered.
            let mut held = Vec::new();
            for stream in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    break;
                }
                held.extend(stream.ok());
            }
        });
        StalledServer { addr, stop }
    }

    fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for StalledServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
    }
}

fn unavailable_message(result: Result<Arc<Pod>, ApiError>) -> String {
    match result {
        Err(ApiError::Unavailable { message }) => message,
        other => panic!("expected Unavailable, found {other:?}"),
    }
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    testing::wait_until(what, PATIENCE, Duration::from_millis(10), done)
}

#[test]
fn get_status_put_status_patch_and_delete_through_the_trait() {
    let (store, server, _runtime, api) = served(MemoryApiServer::new(), pod("web", "u1"));

    let got = api.get_pod("default", "web").unwrap();
    assert_eq!(got.metadata.uid.as_deref(), Some("u1"));
    let version = got.metadata.resource_version.clone();

    let update = StatusUpdate {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: Some("u1".into()),
        resource_version_precondition: version,
        status: running(),
    };
    let written = api.update_pod_status(update).unwrap();
    assert_eq!(written.status.as_ref().and_then(|s| s.phase.as_deref()), Some("Running"));
    let stored = store.get_pod("default", "web").unwrap();
    assert_eq!(stored.status, Some(running()));
    // Only the status changed.
    assert_eq!(stored.spec, pod("web", "u1").spec);

    // A strategic merge patch: conditions merge by type, the phase is kept.
    let patch = StatusPatch {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: Some("u1".into()),
        patch: serde_json::json!({"status": {"conditions": [{"type": "PodScheduled", "status": "True"}]}}),
    };
    let patched = api.patch_pod_status(patch).unwrap();
    let status = patched.status.clone().unwrap();
    let types: Vec<_> = status.conditions.unwrap_or_default().into_iter().map(|c| c.type_).collect();
    assert_eq!(status.phase.as_deref(), Some("Running"));
    assert_eq!(types.len(), 2, "{types:?}");
    assert!(types.iter().any(|t| t == "Ready") && types.iter().any(|t| t == "PodScheduled"), "{types:?}");
    assert_eq!(store.get_pod("default", "web").unwrap().status, patched.status);

    let options = DeleteOptions {
        uid_precondition: Some("u1".into()),
        grace_period_seconds: Some(0),
        ..DeleteOptions::default()
    };
    let deleted = api.delete_pod("default", "web", &options).unwrap();
    assert_eq!(deleted.metadata.uid.as_deref(), Some("u1"));
    assert!(store.get_pod("default", "web").is_err(), "the pod is gone from the store");

    for verb in Verb::ALL {
        assert_eq!(api.call_count(verb, Outcome::Ok), 1, "{}", verb.as_str());
    }
    server.shutdown();
}

#[test]
fn the_compact_calls_hand_on_the_servers_own_bytes() {
    let labelled = testing::pod("web", "u1").namespace("default").labels(&[("app", "web")]).container("app").build();
    let (store, server, _runtime, api) = served(MemoryApiServer::new(), labelled);

    // A GET answers the stored pod's text as the server sent it, read for its fields
    // but never parsed into a tree and written again.
    let got = api.get_pod_compact("default", "web").unwrap();
    assert_eq!(got.json(), store.get_pod_compact("default", "web").unwrap().json());
    assert_eq!((got.uid(), got.name()), (Some("u1"), Some("web")));

    // The PUT that follows carries the metadata read off that text: the labels stay.
    let update = StatusUpdate {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: Some("u1".into()),
        resource_version_precondition: got.resource_version().map(str::to_owned),
        status: running(),
    };
    let written = api.update_pod_status_compact(update).unwrap();
    let stored = store.get_pod_compact("default", "web").unwrap();
    assert_eq!(written.json(), stored.json());
    assert_ne!(written.resource_version(), got.resource_version(), "a new version");
    let labels = stored.labels().unwrap_or_default();
    assert_eq!(labels.get("app").map(String::as_str), Some("web"), "{labels:?}");
    assert_eq!(stored.status().unwrap(), Some(running()));

    let patch = StatusPatch {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: Some("u1".into()),
        patch: serde_json::json!({"status": {"phase": "Succeeded"}}),
    };
    let patched = api.patch_pod_status_compact(patch).unwrap();
    assert_eq!(patched.json(), store.get_pod_compact("default", "web").unwrap().json());
    assert_eq!(patched.field(podstatus_backends::PodField::Phase), Some("Succeeded"));
    // One GET (the PUT found the pod read), each counted once, as the typed calls are.
    for verb in [Verb::Get, Verb::UpdateStatus, Verb::PatchStatus] {
        assert_eq!(api.call_count(verb, Outcome::Ok), 1, "{}", verb.as_str());
    }
    server.shutdown();
}

#[test]
fn names_that_cannot_name_a_pod_are_refused_before_a_url() {
    // kube-rs puts the name into the path unescaped: `a?b` would GET pod `a`.
    let (store, server, _runtime, api) = served(MemoryApiServer::new(), pod("a", "ua"));
    for name in ["a?b", "a/status", "a#x", "..", "A", "a%3Fb"] {
        let error = api.get_pod("default", name).expect_err(name);
        assert_eq!((error.code(), error.reason()), (422, "Invalid"), "{name}: {error}");
    }
    let error = api.get_pod("a?b", "a").expect_err("namespace");
    assert_eq!(error.code(), 422, "{error}");
    let options = DeleteOptions { grace_period_seconds: Some(0), ..DeleteOptions::default() };
    assert_eq!(api.delete_pod("default", "a?x", &options).map_err(|e| e.code()), Err(422));
    assert!(store.get_pod("default", "a").is_ok(), "pod a was not deleted through a?x");
    assert_eq!(api.call_count(Verb::Get, Outcome::Invalid), 7);
    assert_eq!(api.call_count(Verb::Get, Outcome::Ok), 0, "no request left");
    assert_eq!(api.get_pod("default", "a").unwrap().metadata.uid.as_deref(), Some("ua"));
    server.shutdown();
}

#[test]
fn failed_preconditions_are_conflicts_and_absent_pods_not_found() {
    let (store, server, _runtime, api) = served(MemoryApiServer::new(), pod("web", "u1"));
    let update = |uid: &str, version: Option<String>| StatusUpdate {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: Some(uid.into()),
        resource_version_precondition: version,
        status: running(),
    };

    let error = api.update_pod_status(update("someone-else", None)).unwrap_err();
    assert!(matches!(error, ApiError::Conflict { .. }), "{error:?}");

    let stale = api.get_pod("default", "web").unwrap().metadata.resource_version.clone();
    api.update_pod_status(update("u1", None)).unwrap();
    let error = api.update_pod_status(update("u1", stale)).unwrap_err();
    assert!(matches!(error, ApiError::Conflict { .. }), "{error:?}");

    let patch = StatusPatch {
        namespace: "default".into(),
        name: "web".into(),
        uid_precondition: None,
        patch: serde_json::json!({"metadata": {"uid": "someone-else"}, "status": {"phase": "Failed"}}),
    };
    let error = api.patch_pod_status(patch).unwrap_err();
    assert!(matches!(error, ApiError::Conflict { .. }), "{error:?}");

    let wrong_uid = DeleteOptions { uid_precondition: Some("someone-else".into()), ..DeleteOptions::default() };
    let error = api.delete_pod("default", "web", &wrong_uid).unwrap_err();
    assert!(matches!(error, ApiError::Conflict { .. }), "{error:?}");
    assert!(store.get_pod("default", "web").is_ok(), "a refused delete leaves the pod");
    assert_eq!(
        store.get_pod("default", "web").unwrap().status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Running")
    );

    let absent = ApiError::NotFound { namespace: "default".into(), name: "gone".into() };
    assert_eq!(api.get_pod("default", "gone").unwrap_err(), absent);
    let update_absent = StatusUpdate { name: "gone".into(), ..update("u1", None) };
    assert_eq!(api.update_pod_status(update_absent).unwrap_err(), absent);
    assert_eq!(api.delete_pod("default", "gone", &DeleteOptions::default()).unwrap_err(), absent);

    assert_eq!(api.call_count(Verb::UpdateStatus, Outcome::Conflict), 2);
    assert_eq!(api.call_count(Verb::PatchStatus, Outcome::Conflict), 1);
    assert_eq!(api.call_count(Verb::Delete, Outcome::Conflict), 1);
    // The absent pod's GET, and the update's own read of it (a status PUT carries the
    // pod's metadata as read: without a read of the plugin's before it, one is made).
    assert_eq!(api.call_count(Verb::Get, Outcome::NotFound), 2);
    assert!(!api.circuit_open(), "answers, even errors, keep the circuit closed");
    server.shutdown();
}

#[test]
fn a_graceful_delete_leaves_the_pod_terminating() {
    // Kubernetes deletes a pod gracefully only once it is bound to a node.
    let mut bound = pod("web", "u1");
    bound.spec.as_mut().unwrap().node_name = Some("node-a".into());
    let (store, server, _runtime, api) = served(MemoryApiServer::with_graceful_deletion(), bound);

    let stale = DeleteOptions {
        uid_precondition: Some("u1".into()),
        resource_version_precondition: Some("0".into()),
        grace_period_seconds: Some(30),
    };
    let error = api.delete_pod("default", "web", &stale).unwrap_err();
    assert!(matches!(error, ApiError::Conflict { .. }), "{error:?}");

    let current = api.get_pod("default", "web").unwrap().metadata.resource_version.clone();
    let options = DeleteOptions {
        uid_precondition: Some("u1".into()),
        resource_version_precondition: current,
        grace_period_seconds: Some(30),
    };
    let deleted = api.delete_pod("default", "web", &options).unwrap();
    assert!(deleted.metadata.deletion_timestamp.is_some(), "{:?}", deleted.metadata);
    assert!(store.get_pod("default", "web").unwrap().metadata.deletion_timestamp.is_some());

    let negative = DeleteOptions { grace_period_seconds: Some(-1), ..DeleteOptions::default() };
    let error = api.delete_pod("default", "web", &negative).unwrap_err();
    assert!(matches!(error, ApiError::Invalid { .. }), "{error:?}");
    server.shutdown();
}

#[test]
fn a_drained_bucket_fails_calls_fast_and_admission_waits_for_the_refill() {
    let store = Arc::new(MemoryApiServer::new());
    let server = serve(&store);
    let runtime = runtime();
    // One token, then one per 1000 s: the second call cannot get one.
    let config = KubeClientConfig { qps: 0.001, burst: 1, ..KubeClientConfig::default() };
    let api = client(&runtime, server.url(), config);
    assert!(matches!(api.get_pod("default", "a"), Err(ApiError::NotFound { .. })));
    let message = unavailable_message(api.get_pod("default", "a"));
    assert!(message.contains("client-side throttling"), "{message}");
    assert_eq!(api.call_count(Verb::Get, Outcome::Throttled), 1);
    assert!(!api.circuit_open(), "throttling says nothing about the server");

    // A bucket that refills: admission returns once the token is back, takes nothing,
    // and the call then goes.
    let config = KubeClientConfig { qps: 20.0, burst: 1, ..KubeClientConfig::default() };
    let api = client(&runtime, server.url(), config);
    let limiter = api.rate_limiter();
    assert!(limiter.try_acquire());
    assert!(!limiter.try_acquire(), "the bucket is drained");
    assert!(limiter.wait_ready(1, Instant::now() + PATIENCE), "a token comes back");
    assert!(matches!(api.get_pod("default", "a"), Err(ApiError::NotFound { .. })));
    server.shutdown();
}

#[test]
fn a_stalled_server_times_out_then_the_breaker_fails_calls_fast() {
    let stalled = StalledServer::start();
    let runtime = runtime();
    // A backoff long enough that the next call surely lands inside the window.
    let config = timeouts(Duration::from_millis(300), Duration::from_secs(600), Duration::from_secs(600));
    let api = client(&runtime, stalled.url(), config);

    let message = unavailable_message(api.get_pod("default", "a"));
    assert!(message.contains("no answer"), "{message}");
    assert_eq!(api.call_count(Verb::Get, Outcome::Timeout), 1);
    assert!(api.circuit_open());

    let message = unavailable_message(api.get_pod("default", "a"));
    assert!(message.contains("circuit open"), "{message}");
    let update = StatusUpdate { namespace: "default".into(), name: "a".into(), ..StatusUpdate::default() };
    assert!(matches!(api.update_pod_status(update), Err(ApiError::Unavailable { .. })));
    // The update's read of the pod (its metadata, for the PUT) fails fast first.
    assert_eq!(api.call_count(Verb::Get, Outcome::CircuitOpen), 2);
    assert_eq!(api.call_count(Verb::UpdateStatus, Outcome::CircuitOpen), 0);
}

#[test]
fn a_refused_port_is_unavailable() {
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let runtime = runtime();
    let api = client(&runtime, format!("http://127.0.0.1:{port}"), KubeClientConfig::default());
    let message = unavailable_message(api.get_pod("default", "a"));
    assert!(message.contains("could not be reached"), "{message}");
    assert_eq!(api.call_count(Verb::Get, Outcome::Error), 1);
    assert!(api.circuit_open());
}

#[test]
fn a_call_from_inside_an_async_task_is_refused_not_a_panic() {
    let store = Arc::new(MemoryApiServer::new());
    let server = serve(&store);
    let runtime = runtime();
    let api = Arc::new(client(&runtime, server.url(), KubeClientConfig::default()));
    let inside = Arc::clone(&api);
    let result = runtime.block_on(async move { tokio::spawn(async move { inside.get_pod("default", "a") }).await });
    let error = result.expect("the task did not panic").unwrap_err();
    assert!(matches!(&error, ApiError::Internal { message } if message.contains("async task")), "{error:?}");
    // From a plain thread the same client works.
    assert!(matches!(api.get_pod("default", "a"), Err(ApiError::NotFound { .. })));
    server.shutdown();
}

/// The property the client exists for: the plugin syncs against a stalled API server
/// through the handle and the scheduler, and another thread's Manager operations still
/// complete, their statuses cached.
#[test]
fn a_stalled_api_server_does_not_hold_up_other_threads() {
    const PODS: usize = 8;
    let pods: Vec<Pod> = (0..PODS).map(|i| pod(&format!("pod-{i}"), &format!("uid-{i}"))).collect();
    let (_memory, mut world) = podstatus_tests::memory_world(pods.clone(), false, 64);
    let stalled = StalledServer::start();
    let runtime = runtime();
    let config = timeouts(Duration::from_millis(500), Duration::from_millis(200), Duration::from_secs(2));
    let api = Arc::new(client(&runtime, stalled.url(), config));
    world.api_server = api.clone();
    let plugin = v1_image().instantiate(world.clone()).unwrap();
    let scheduler_config = SchedulerConfig {
        sync_period: Duration::from_millis(200),
        admission: Some(api.rate_limiter()),
        ..SchedulerConfig::default()
    };
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), scheduler_config);

    // The first status queues a sync; wait until the scheduler is stuck on the server.
    let first = serde_json::to_string(&pods[0]).unwrap();
    let status = serde_json::to_string(&running()).unwrap();
    manager.set_pod_status(&first, &status).unwrap();
    wait_until("a sync reached the stalled server", || {
        api.call_count(Verb::Get, Outcome::Timeout) + api.call_count(Verb::Get, Outcome::CircuitOpen) > 0
    });

    // Another thread sets and reads every pod's status meanwhile.
    let (done, finished) = mpsc::channel();
    let caller = manager.clone();
    let others = pods[1..].to_vec();
    let status_text = status.clone();
    std::thread::spawn(move || {
        let result: Result<Vec<u64>, String> = others
            .iter()
            .map(|pod| {
                let json = serde_json::to_string(pod).unwrap();
                caller.set_pod_status(&json, &status_text).map_err(|e| e.to_string())?;
                let uid = pod.metadata.uid.clone().unwrap();
                let cached = caller.get_pod_status(&uid).map_err(|e| e.to_string())?;
                cached.map(|c| c.version).ok_or_else(|| format!("{uid}: not cached"))
            })
            .collect();
        let _ = done.send(result);
    });
    let versions = finished
        .recv_timeout(PATIENCE)
        .expect("the other thread's Manager operations completed while the API server stalled")
        .expect("every operation succeeded");
    assert_eq!(versions, vec![1; PODS - 1]);
    let cached = manager.get_pod_status("uid-0").unwrap().expect("the first status is cached");
    assert!(cached.status.contains("Running"), "{}", cached.status);

    // Nothing reached the server: every write attempted failed, none got through.
    let written: u64 = [Verb::UpdateStatus, Verb::PatchStatus].iter().map(|&v| api.call_count(v, Outcome::Ok)).sum();
    assert_eq!(written, 0);
    drop(scheduler);
}

/// An admission that reports each wait and holds it until released, whatever the
/// deadline: if the scheduler held the plugin lock while waiting, other threads would
/// be stuck until the release.
struct HeldAdmission {
    entered: std::sync::Mutex<mpsc::Sender<u32>>,
    release: std::sync::Mutex<mpsc::Receiver<()>>,
}

impl Admission for HeldAdmission {
    fn wait_ready(&self, calls: u32, _deadline: Instant) -> bool {
        let _ = self.entered.lock().unwrap().send(calls);
        let _ = self.release.lock().unwrap().recv_timeout(PATIENCE);
        true
    }
}

#[test]
fn the_scheduler_waits_for_admission_without_the_plugin_lock() {
    let pods: Vec<Pod> = (0..2).map(|i| pod(&format!("pod-{i}"), &format!("uid-{i}"))).collect();
    let (_memory, world) = podstatus_tests::memory_world(pods.clone(), false, 64);
    let (entered, waits) = mpsc::channel();
    let (release, released) = mpsc::channel();
    let admission =
        Arc::new(HeldAdmission { entered: std::sync::Mutex::new(entered), release: std::sync::Mutex::new(released) });
    // Admission is for plugins that call the API server under the lock (contract 0.1.x).
    let plugin = podstatus_tests::load(podstatus_plugins::PODSTATUS_V1_ON_0_1).instantiate(world.clone()).unwrap();
    let config = SchedulerConfig {
        sync_period: Duration::from_secs(3600),
        admission: Some(admission),
        ..SchedulerConfig::default()
    };
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config);
    let status = serde_json::to_string(&running()).unwrap();

    manager.set_pod_status(&serde_json::to_string(&pods[0]).unwrap(), &status).unwrap();
    let calls = waits.recv_timeout(PATIENCE).expect("the scheduler asks for admission before the sync");
    assert_eq!(calls, podstatus_runtime::SYNC_POD_CALLS);

    // The scheduler is held in admission: other threads still get the plugin.
    let (done, finished) = mpsc::channel();
    let caller = manager.clone();
    let other = serde_json::to_string(&pods[1]).unwrap();
    let status_text = status.clone();
    std::thread::spawn(move || {
        let set = caller.set_pod_status(&other, &status_text).map(drop).map_err(|e| e.to_string());
        let got = caller.get_pod_status("uid-1").map_err(|e| e.to_string());
        let _ = done.send((set, got));
    });
    let (set, got) = finished.recv_timeout(PATIENCE).expect("the other thread's calls completed");
    set.unwrap();
    assert_eq!(got.unwrap().map(|c| c.version), Some(1));

    // Released, the scheduler syncs and asks again for the next request.
    release.send(()).unwrap();
    assert_eq!(waits.recv_timeout(PATIENCE).expect("the next sync asks too"), podstatus_runtime::SYNC_POD_CALLS);
    release.send(()).unwrap();
    // Any later wait returns at once.
    drop(release);
    drop(scheduler);
}

/// A budget that never admits anything: each wait lasts until its deadline.
struct ClosedBudget {
    waits: std::sync::atomic::AtomicUsize,
}

impl Admission for ClosedBudget {
    fn wait_ready(&self, _calls: u32, deadline: Instant) -> bool {
        self.waits.fetch_add(1, Ordering::SeqCst);
        std::thread::sleep(deadline.saturating_duration_since(Instant::now()));
        false
    }
}

/// Past the budget a 0.2.0 plugin's requests are shed, not lined up: the first
/// request (the queue not yet backed up) waits its admission out and syncs anyway;
/// once the oldest queued request has waited over `QUEUE_LIFO_AFTER`, those the budget
/// does not admit at once are planned and dropped, their statuses kept for the batch,
/// which then writes every one of them.
#[test]
fn past_the_budget_requests_are_shed_to_the_batch_and_nothing_is_lost() {
    const PODS: usize = 6;
    let pods: Vec<Pod> = (0..PODS).map(|i| pod(&format!("pod-{i}"), &format!("uid-{i}"))).collect();
    let (memory, world) = podstatus_tests::memory_world(pods.clone(), false, 64);
    let plugin = v1_image().instantiate(world.clone()).unwrap();
    let budget = Arc::new(ClosedBudget { waits: Default::default() });
    let config = SchedulerConfig {
        sync_period: Duration::from_secs(3600),
        admission: Some(budget.clone()),
        ..SchedulerConfig::default()
    };
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config);
    let status = serde_json::to_string(&running()).unwrap();
    for pod in &pods {
        manager.set_pod_status(&serde_json::to_string(pod).unwrap(), &status).unwrap();
    }
    let phase =
        |name: &str| memory.get_pod("default", name).unwrap().status.clone().and_then(|s| s.phase).unwrap_or_default();
    wait_until("the queue is taken", || world.queue.is_empty());
    wait_until("the first request syncs anyway", || phase("pod-0") == "Running");
    // One wait per request taken (the first waits its second out, the others only look).
    wait_until("every request asked", || budget.waits.load(Ordering::SeqCst) >= PODS);
    std::thread::sleep(Duration::from_millis(200));
    let shed: Vec<usize> = (1..PODS).filter(|i| phase(&format!("pod-{i}")) != "Running").collect();
    assert!(!shed.is_empty(), "with the queue backed up and the budget closed, requests are shed");
    for i in &shed {
        let cached = manager.get_pod_status(&format!("uid-{i}")).unwrap().expect("a shed status stays cached");
        assert_eq!(cached.version, 1);
    }
    // The batch (here run at once, as the agent's flush does) writes them all.
    manager.sync_batch().unwrap();
    for i in 0..PODS {
        assert_eq!(phase(&format!("pod-{i}")), "Running", "pod-{i}");
    }
    assert_eq!(scheduler.shutdown(Duration::from_secs(5)), 0);
}
