//! Adversarial plugins: each is stopped at its limit with a typed error naming the
//! limit, and the host (the runtime, other instances) keeps serving.

use std::time::{Duration, Instant};

use podstatus_runtime::World;
use podstatus_runtime::{CallError, FaultKind, Limits, Plugin, PluginExt, PluginRuntime, RuntimeConfig};
use podstatus_test_programs::{
    ADVERSARY_ABSURD_IMPORT, ADVERSARY_GARBAGE_OUTPUT, ADVERSARY_HUGE_OUTPUT, ADVERSARY_INFINITE_LOOP,
    ADVERSARY_MEMORY_BOMB, ADVERSARY_STACK_OVERFLOW, ADVERSARY_TRAP_MID_SYNC,
};
use podstatus_tests::{cache_dir, fault, v1_image};

const POD: &str =
    r#"{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c"}]}}"#;

fn world() -> World {
    podstatus_tests::memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1
}

/// A tight memory cap, so the bomb goes off fast; a CPU budget generous enough that
/// only the infinite loop reaches it, even on a loaded machine (the budget counts the
/// guest's wall time).
fn limits() -> Limits {
    Limits { memory_bytes: 64 << 20, call_cpu_time: Some(Duration::from_secs(30)), ..Limits::default() }
}

fn runtime() -> PluginRuntime {
    runtime_with(limits())
}

/// A runtime with the shared cache and `limits`.
fn runtime_with(limits: Limits) -> PluginRuntime {
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), limits, ..RuntimeConfig::default() }).unwrap()
}

/// After any adversary, a well-behaved plugin in the same runtime still works.
fn host_still_serves(runtime: &PluginRuntime) {
    let mut good = v1_image().instantiate(world()).unwrap();
    assert!(good.set_pod_status(POD, "{}").is_ok());
    let image = runtime.load(podstatus_plugins::PODSTATUS_V1).unwrap();
    let mut same_runtime = image.instantiate(world()).unwrap();
    assert!(same_runtime.set_pod_status(POD, "{}").is_ok());
}

#[test]
fn an_infinite_loop_is_stopped_by_the_cpu_budget() {
    let runtime = runtime_with(Limits { call_cpu_time: Some(Duration::from_millis(200)), ..limits() });
    let mut plugin = runtime.load(ADVERSARY_INFINITE_LOOP).unwrap().instantiate(world()).unwrap();
    let start = Instant::now();
    let (call, kind, message) = fault(plugin.set_pod_status(POD, "{}"));
    assert_eq!((call, kind), ("set-pod-status", FaultKind::CpuTime), "{message}");
    assert!(start.elapsed() < Duration::from_secs(5), "stopped near its 200 ms budget, took {:?}", start.elapsed());
    host_still_serves(&runtime);
}

#[test]
fn fuel_stops_a_loop_deterministically() {
    let runtime = runtime_with(Limits { call_fuel: Some(50_000_000), ..limits() });
    let mut plugin = runtime.load(ADVERSARY_INFINITE_LOOP).unwrap().instantiate(world()).unwrap();
    let (_, kind, message) = fault(plugin.set_pod_status(POD, "{}"));
    assert_eq!(kind, FaultKind::Fuel, "{message}");
    // The real plugin runs within the same fuel.
    let mut good = runtime.load(podstatus_plugins::PODSTATUS_V1).unwrap().instantiate(world()).unwrap();
    assert!(good.set_pod_status(POD, "{}").is_ok());
}

#[test]
fn each_adversary_faults_at_its_limit_and_the_host_still_serves() {
    type Call = fn(&mut dyn Plugin) -> (&'static str, FaultKind, String);
    let set: Call = |plugin| fault(plugin.set_pod_status(POD, "{}"));
    let get: Call = |plugin| fault(plugin.get_pod_status("u1"));
    // (case, adversary, the call that faults, the fault, what its message says): a
    // memory bomb hits the memory cap; a stack overflow is a fault, not a crash; a huge
    // output is refused at the boundary; an import called with absurd arguments traps
    // naming the limit.
    let cases: [(&str, &[u8], Call, FaultKind, &str); 4] = [
        ("memory bomb", ADVERSARY_MEMORY_BOMB, set, FaultKind::Memory, "over its limit of 67108864 bytes"),
        ("stack overflow", ADVERSARY_STACK_OVERFLOW, set, FaultKind::StackOverflow, ""),
        ("huge output", ADVERSARY_HUGE_OUTPUT, get, FaultKind::Oversized, ""),
        (
            "absurd import",
            ADVERSARY_ABSURD_IMPORT,
            set,
            FaultKind::Oversized,
            "get-pod: namespace of 8388608 bytes exceeds the boundary limit",
        ),
    ];
    for (name, adversary, call, kind, says) in cases {
        let runtime = runtime();
        let mut plugin = runtime.load(adversary).unwrap().instantiate(world()).unwrap();
        let (_, got, message) = call(&mut plugin);
        assert_eq!(got, kind, "{name}: {message}");
        assert!(message.contains(says), "{name}: {message}");
        host_still_serves(&runtime);
    }
}

#[test]
fn a_trap_in_the_middle_of_a_sync_is_contained() {
    let runtime = runtime();
    let world = world();
    let mut plugin = runtime.load(ADVERSARY_TRAP_MID_SYNC).unwrap().instantiate(world.clone()).unwrap();
    plugin.set_pod_status(POD, "{}").unwrap();
    let request = world.queue.pop().unwrap();
    let (call, kind, message) = fault(plugin.sync_pod(&request));
    // The plugin's panic message stays inside it (panics abort in wasm): the host
    // sees the trap, where it happened and the call.
    assert_eq!((call, kind), ("sync-pod", FaultKind::Trap), "{message}");
    assert!(message.contains("unreachable"), "{message}");
    host_still_serves(&runtime);
}

#[test]
fn garbage_output_is_reported_not_trusted() {
    // A status that is not JSON reaches the host as a string; the replay treats it
    // as the plugin's fault (see replay::runner), never as the cache's content.
    let runtime = runtime();
    let mut plugin = runtime.load(ADVERSARY_GARBAGE_OUTPUT).unwrap().instantiate(world()).unwrap();
    let cached = plugin.get_pod_status("u1").unwrap().unwrap();
    assert!(serde_json::from_str::<serde_json::Value>(&cached.status).is_err());
    let trace = podstatus_replay::Trace::parse(
        &format!(r#"{{"pod_manager": [{POD}], "steps": [{{"op": "get-pod-status", "uid": "u1"}}]}}"#),
        ".".into(),
    )
    .unwrap();
    let image = runtime.load(ADVERSARY_GARBAGE_OUTPUT).unwrap();
    let outcome =
        podstatus_replay::run(&trace, &|w| Ok(Box::new(image.instantiate(w).unwrap()) as Box<dyn Plugin>)).unwrap();
    let fault = outcome.report.fault.expect("a fault");
    assert!(fault.message.contains("not JSON"), "{}", fault.message);
}

#[test]
fn oversized_input_is_refused_before_the_plugin_sees_it() {
    let mut plugin = v1_image().instantiate(world()).unwrap();
    let huge = format!(r#"{{"phase": "{}"}}"#, "x".repeat(5 << 20));
    match plugin.set_pod_status(POD, &huge) {
        Err(CallError::TooLarge { call: "set-pod-status", what: "status", .. }) => {}
        other => panic!("expected TooLarge, got {other:?}"),
    }
    assert!(plugin.set_pod_status(POD, "{}").is_ok(), "the instance is untouched");
}
