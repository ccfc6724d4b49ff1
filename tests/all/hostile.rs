//! A hostile plugin against the host's budgets (one build, `ADVERSARY_HOSTILE`, which
//! picks its attack from the pod it is handed or the state it is given): import
//! amplification, log and queue floods, lies in change sets and in state. Each is
//! stopped with a named fault or refused, within bounded host time, memory and logs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use podstatus_runtime::{
    CallError, ComponentPlugin, FaultKind, Limits, Plugin, PluginExt, PluginRuntime, RuntimeConfig, SupervisedPlugin,
    SwapError, World, move_bulk, move_changes,
};
use podstatus_test_programs::ADVERSARY_HOSTILE;
use podstatus_tests::{TestPod, cache_dir, fault, memory_world};

fn world() -> World {
    memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1
}

fn runtime(limits: Limits) -> PluginRuntime {
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), limits, ..RuntimeConfig::default() }).unwrap()
}

/// Generous CPU time, so that only the limit under test is reached.
fn limits() -> Limits {
    Limits { call_cpu_time: Some(Duration::from_secs(30)), ..Limits::default() }
}

fn hostile(limits: Limits, world: World) -> ComponentPlugin {
    runtime(limits).load(ADVERSARY_HOSTILE).unwrap().instantiate(world).unwrap()
}

fn pod(uid: &str, attack: &str) -> String {
    format!(
        r#"{{"metadata":{{"uid":"{uid}","name":"p-{uid}","namespace":"ns","annotations":{{"a":"attack={attack}"}}}}}}"#
    )
}

/// The hostile plugin under `limits`, handed pod u1 with `attack`: the call faults with
/// `kind`, its message saying `says`. The plugin, and how long the call took.
fn attacked(limits: Limits, attack: &str, kind: FaultKind, says: &str) -> (ComponentPlugin, Duration) {
    let mut plugin = hostile(limits, world());
    let start = Instant::now();
    let (_, got, message) = fault(plugin.set_pod_status(&pod("u1", attack), "{}"));
    let took = start.elapsed();
    assert_eq!(got, kind, "{message}");
    assert!(message.contains(says), "{message}");
    (plugin, took)
}

#[test]
fn import_amplification_is_stopped_by_the_bytes_budget() {
    let limits = Limits { call_import_bytes: 64 << 20, ..limits() };
    let (mut plugin, took) = attacked(limits, "amplify", FaultKind::Imports, "get-mirror-pod-by-pod");
    let usage = plugin.last_call_usage();
    assert!(usage.import_bytes <= (64 << 20) + (4 << 20), "{usage:?}");
    eprintln!("amplify (bytes): {took:?} wall, {usage:?}");
    // The instance is not entered again.
    assert!(matches!(plugin.set_pod_status(&pod("u2", "none"), "{}"), Err(CallError::Fault { .. })));
}

#[test]
fn import_amplification_is_stopped_by_host_cpu_time() {
    let limits =
        Limits { call_cpu_time: Some(Duration::from_millis(300)), call_import_bytes: u64::MAX, ..Limits::default() };
    let (plugin, took) = attacked(limits, "amplify", FaultKind::CpuTime, "in host imports");
    let usage = plugin.last_call_usage();
    assert!(usage.host_time > usage.guest_time, "the host's work counted: {usage:?}");
    assert!(took < Duration::from_secs(10), "stopped near its budget: {took:?}");
    eprintln!("amplify (time): {took:?} wall, {usage:?}");
}

#[test]
fn memories_beside_the_main_one_share_its_limit() {
    // The adversary grows three extra memories (added to its core module by
    // tests/programs/build.rs) by 24 MiB in turn: no memory alone comes near the limit.
    let limit = 128 << 20;
    let mut plugin = hostile(Limits { memory_bytes: limit, ..limits() }, world());
    let (_, kind, message) = fault(plugin.set_pod_status(&pod("u1", "multi-memory"), "{}"));
    assert_eq!(kind, FaultKind::Memory, "{message}");
    let numbers: Vec<usize> =
        message.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).map(|s| s.parse().unwrap()).collect();
    let [_from, to, across, ..] = numbers[..] else { panic!("no sizes in {message:?}") };
    assert!(to <= limit / 2, "one memory alone stays far from the limit: {message}");
    assert!(across > limit, "{message}");
    assert!(plugin.memory_bytes() <= limit, "the host granted {} bytes", plugin.memory_bytes());
    assert!(plugin.memory_bytes() > limit / 2 + to, "several memories grew: {}", plugin.memory_bytes());
}

#[test]
fn cheap_imports_in_a_loop_are_stopped_by_the_count() {
    let limits = Limits { call_imports: 100_000, ..limits() };
    let says = "now: the plugin made more than 100000 import calls";
    let (plugin, _) = attacked(limits, "chatter", FaultKind::Imports, says);
    assert_eq!(plugin.last_call_usage().imports, 100_001);
}

/// Counts the bytes of the events written, as a log would.
struct CountingSubscriber {
    bytes: Arc<AtomicUsize>,
    lines: Arc<AtomicUsize>,
}

struct MessageBytes(usize);

impl tracing::field::Visit for MessageBytes {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        self.0 += field.name().len() + format!("{value:?}").len();
    }
}

impl tracing::Subscriber for CountingSubscriber {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut visitor = MessageBytes(0);
        event.record(&mut visitor);
        self.bytes.fetch_add(visitor.0, Ordering::Relaxed);
        self.lines.fetch_add(1, Ordering::Relaxed);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn a_log_flood_is_rate_limited_and_counted() {
    let (bytes, lines) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let subscriber = CountingSubscriber { bytes: bytes.clone(), lines: lines.clone() };
    let world = world();
    let mut plugin = hostile(limits(), world);
    let outcome =
        tracing::subscriber::with_default(subscriber, || plugin.set_pod_status(&pod("u1", "log-flood"), "{}"));
    assert!(outcome.is_ok(), "{outcome:?}");
    let dropped = plugin.dropped_log_lines();
    // 5,000 lines of 1,000 bytes against a burst of 1,000 (refilled at 100 a second).
    assert!((3_500..=4_000).contains(&dropped), "dropped {dropped}");
    let (bytes, lines) = (bytes.load(Ordering::Relaxed), lines.load(Ordering::Relaxed));
    assert!(lines as u64 + dropped <= 5_002, "a summary line a second at most: {lines} written, {dropped} dropped");
    assert!(bytes < 1_600_000, "log bytes bounded: {bytes}");
    eprintln!("log flood: {lines} lines, {bytes} bytes written, {dropped} dropped");
}

#[test]
fn a_push_of_a_uid_never_handed_over_traps() {
    for attack in ["push-foreign", "push-huge"] {
        let world = world();
        let mut plugin = hostile(limits(), world.clone());
        let (_, kind, message) = fault(plugin.set_pod_status(&pod("u1", attack), "{}"));
        assert_eq!(kind, FaultKind::ForeignUid, "{message}");
        assert!(message.len() < 1_000, "the refusal quotes a bounded part: {message}");
        assert!(world.queue.is_empty());
    }
    // A pod it was handed is queued.
    let world = world();
    let mut plugin = hostile(limits(), world.clone());
    plugin.set_pod_status(&pod("u1", "none"), "{}").unwrap();
    assert_eq!(world.queue.pop().unwrap().pod_uid, "u1");
}

#[test]
fn a_change_set_that_contradicts_the_call_is_a_fault_and_nothing_accepted_is_lost() {
    let image = runtime(limits()).load(ADVERSARY_HOSTILE).unwrap();
    let mut plugin = SupervisedPlugin::new(image, world()).unwrap();
    plugin.set_pod_status(&pod("u1", "none"), r#"{"phase":"Running"}"#).unwrap();
    let (_, kind, message) = fault(plugin.set_pod_status(&pod("u2", "lie-changes"), "{}"));
    assert_eq!(kind, FaultKind::Trap, "{message}");
    assert!(message.contains("contradicts the call's answer"), "{message}");
    let state = plugin.accepted_state();
    assert!(state.contains(r#""u1":{"version":1,"status":{"phase":"Running"}}"#), "{state}");
    // Recovered: the next call is served.
    plugin.set_pod_status(&pod("u3", "none"), "{}").unwrap();
    assert!(plugin.accepted_state().contains("\"u1\""));
}

#[test]
fn a_state_past_its_cap_is_a_named_fault_and_the_accepted_state_stays() {
    let limits = Limits { max_state_bytes: 2 << 20, ..limits() };
    let image = runtime(limits).load(ADVERSARY_HOSTILE).unwrap();
    let mut plugin = SupervisedPlugin::new(image, world()).unwrap();
    let big = format!(r#"{{"message":"{}"}}"#, "m".repeat(700 << 10));
    plugin.set_pod_status(&pod("u1", "none"), &big).unwrap();
    plugin.set_pod_status(&pod("u2", "none"), &big).unwrap();
    let (_, kind, message) = fault(plugin.set_pod_status(&pod("u3", "none"), &big));
    assert_eq!(kind, FaultKind::StateSize, "{message}");
    let state = plugin.accepted_state();
    assert!(state.contains("\"u1\"") && state.contains("\"u2\"") && !state.contains("\"u3\""));
    assert!(plugin.held_bytes() <= 2 << 20);
}

#[test]
fn the_supervisor_keeps_no_change_log_nobody_follows() {
    let image = runtime(limits()).load(ADVERSARY_HOSTILE).unwrap();
    let mut plugin = SupervisedPlugin::new(image, world()).unwrap();
    plugin.set_pod_status(&pod("u1", "none"), "{}").unwrap();
    let held = plugin.held_bytes();
    for _ in 0..2_000 {
        plugin.set_pod_status(&pod("u1", "none"), "{}").unwrap();
    }
    assert_eq!(plugin.held_bytes(), held, "flat: only the state itself is held");
    // Followed (a swap's save-state), then no more: flat again.
    let _ = plugin.save_state().unwrap();
    plugin.set_pod_status(&pod("u2", "none"), "{}").unwrap();
    assert!(plugin.held_bytes() > held);
    plugin.stop_following();
    let held = plugin.held_bytes();
    for _ in 0..100 {
        plugin.set_pod_status(&pod("u2", "none"), "{}").unwrap();
    }
    assert_eq!(plugin.held_bytes(), held);
}

fn running(uid: &str, message: &str) -> (String, String) {
    let pod = serde_json::to_string(&TestPod::new(&format!("p-{uid}"), uid).container("c").build()).unwrap();
    (pod, format!(r#"{{"phase":"Running","message":"{message}"}}"#))
}

/// The v1 plugin holding pod u1 Running with `message`, and the hostile plugin in the
/// same world (which lies where the message tells it to).
fn v1_holding_u1_and_hostile(message: &str) -> (ComponentPlugin, ComponentPlugin) {
    let world = world();
    let mut old = podstatus_tests::v1_image().instantiate(world.clone()).unwrap();
    let (pod, status) = running("u1", message);
    old.set_pod_status(&pod, &status).unwrap();
    (old, hostile(limits(), world))
}

fn assert_refused<T: std::fmt::Debug>(result: Result<T, SwapError>, says: &str) {
    match result {
        Err(SwapError::Refused(e)) => assert!(e.to_string().contains(says), "{e}"),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_swap_refuses_a_plugin_that_alters_status_bodies_in_the_state() {
    let (mut old, mut new) = v1_holding_u1_and_hostile("lie-in-load");
    assert_refused(move_bulk(&mut old, &mut new), "the status of pod \"u1\"");
    // The same plugin, told no lie, takes the state.
    let mut honest = hostile(limits(), memory_world([], true, 10).1);
    let (pod, status) = running("u2", "fine");
    old.set_pod_status(&pod, &status).unwrap();
    let mut fresh_old = podstatus_tests::v1_image().instantiate(memory_world([], true, 10).1).unwrap();
    fresh_old.set_pod_status(&pod, &status).unwrap();
    move_bulk(&mut fresh_old, &mut honest).unwrap();
}

#[test]
fn a_swap_refuses_a_plugin_that_alters_an_applied_change_set() {
    let (mut old, mut new) = v1_holding_u1_and_hostile("fine");
    move_bulk(&mut old, &mut new).unwrap();
    let (pod, status) = running("u2", "lie-in-apply");
    old.set_pod_status(&pod, &status).unwrap();
    assert_refused(move_changes(&mut old, &mut new), "does not hold the changes");
}

#[test]
fn an_honest_batch_over_10000_pods_stays_far_inside_the_import_budgets() {
    let pods: Vec<_> =
        (0..10_000).map(|i| TestPod::new(&format!("p{i}"), &format!("u{i}")).container("c").build()).collect();
    let (_, world) = memory_world(pods.clone(), true, 10);
    // No CPU budget here (a debug host on a shared machine); the release figures are
    // the sandbox_budget example's.
    let limits = Limits { call_cpu_time: None, ..Limits::default() };
    let mut plugin = runtime(limits.clone()).load(podstatus_plugins::PODSTATUS_V2).unwrap().instantiate(world).unwrap();
    let status = r#"{"phase":"Running","conditions":[{"type":"Ready","status":"True"}],"containerStatuses":[{"name":"c","ready":true,"restartCount":0,"image":"i","imageID":"","state":{"running":{}}}]}"#;
    for pod in &pods {
        plugin.set_pod_status(&serde_json::to_string(pod).unwrap(), status).unwrap();
    }
    let report = plugin.sync_batch().unwrap();
    let usage = plugin.last_call_usage();
    eprintln!("honest batch: {report:?}, {usage:?}");
    assert_eq!(report.failed, 0, "{report:?}");
    assert!(usage.imports * 10 < limits.call_imports, "{usage:?}");
    assert!(usage.import_bytes * 10 < limits.call_import_bytes, "{usage:?}");
}
