//! A plugin that traps: the host names the call and why, and keeps running.

use podstatus_replay as replay;
use podstatus_replay::Trace;
use podstatus_runtime::World;
use podstatus_runtime::{CallError, Plugin, PluginExt, PluginRuntime, RuntimeConfig};
use podstatus_test_programs::ADVERSARY_TRAP_ON_SYNC;
use podstatus_tests::cache_dir;

const POD: &str =
    r#"{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c"}]}}"#;

fn world() -> World {
    podstatus_tests::memory_world([], true, podstatus_backends::DEFAULT_CAPACITY).1
}

#[test]
fn a_trap_names_the_call_and_poisons_only_that_instance() {
    let runtime =
        PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).unwrap();
    let image = runtime.load(ADVERSARY_TRAP_ON_SYNC).unwrap();
    let world = world();
    let mut plugin = image.instantiate(world.clone()).unwrap();
    plugin.set_pod_status(POD, "{}").unwrap();
    let request = world.queue.pop().expect("the plugin queued a request");

    let err = plugin.sync_pod(&request).unwrap_err();
    match &err {
        CallError::Fault { call, kind, message } => {
            assert_eq!(*call, "sync-pod");
            assert_eq!(*kind, podstatus_runtime::FaultKind::Trap);
            assert!(message.contains("wasm trap") || message.contains("unreachable"), "{message}");
        }
        other => panic!("expected a fault, got {other:?}"),
    }
    // The trapped instance refuses further calls with a clear error instead of
    // re-entering it ...
    let again = plugin.set_pod_status(POD, "{}").unwrap_err();
    assert!(again.to_string().contains("unusable after an earlier fault"), "{again}");
    // ... while the host, the runtime and a new instance carry on.
    let mut fresh = image.instantiate(world.clone()).unwrap();
    assert!(fresh.set_pod_status(POD, "{}").is_ok());
}

#[test]
fn replay_reports_the_fault_and_stops_at_the_faulting_step() {
    let runtime =
        PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).unwrap();
    let image = runtime.load(ADVERSARY_TRAP_ON_SYNC).unwrap();
    let trace = format!(
        r#"{{"apiserver": [{POD}], "pod_manager": [{POD}], "steps": [
            {{"op": "set-pod-status", "pod": "u1", "status": {{"phase": "Running"}}}},
            {{"op": "sync"}},
            {{"op": "sync-batch"}}]}}"#
    );
    let trace = Trace::parse(&trace, ".".into()).unwrap();
    let outcome = replay::run(&trace, &|w| image.instantiate(w).map(|p| Box::new(p) as Box<dyn Plugin>)).unwrap();
    assert!(outcome.faulted());
    let fault = outcome.report.fault.as_ref().unwrap();
    assert_eq!(fault.step, 1);
    assert!(fault.message.starts_with("sync-pod: "), "{}", fault.message);
    assert_eq!(outcome.report.results.len(), 2, "results end with the faulting step");
}

#[test]
fn a_component_of_another_world_is_refused_with_a_typed_error() {
    let runtime = PluginRuntime::new(&RuntimeConfig::default()).unwrap();
    // A valid component that exports nothing.
    let empty = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00];
    let err = runtime.load(&empty).err().expect("refused");
    assert!(matches!(err, podstatus_runtime::LoadError::WrongWorld(_)), "{err}");
    let err = runtime.load(b"not wasm").err().expect("refused");
    assert!(matches!(err, podstatus_runtime::LoadError::NotWasm), "{err}");
    // A core module (layer 0) is named as one, before any parser sees it.
    let core = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
    let err = runtime.load(&core).err().expect("refused");
    assert!(matches!(err, podstatus_runtime::LoadError::CoreModule), "{err}");
    // A component that is not one past its header is the parser's to describe.
    let truncated = [0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00, 0x07];
    let err = runtime.load(&truncated).err().expect("refused");
    assert!(matches!(err, podstatus_runtime::LoadError::Compile(_)), "{err}");
}
