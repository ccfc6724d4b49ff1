//! Shared helpers of the integration tests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use podstatus_plugins::{LogicVersion, PODSTATUS_V1, PODSTATUS_V2, PODSTATUS_V3};
use podstatus_replay as replay;
use podstatus_replay::{ReplayOutcome, Trace, TraceError};
use podstatus_runtime::{Plugin, PluginImage, PluginRuntime, RuntimeConfig};

pub mod gated_api;
pub mod venv;
pub mod version_fixtures;

/// The workspace's root directory.
pub fn workspace_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_path_buf()
}

/// The fixtures directory.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Compiled artifacts shared by every test run of this checkout, so only the first
/// test binary pays for Cranelift.
pub fn cache_dir() -> PathBuf {
    workspace_dir().join("target").join("podstatus-test-cache")
}

/// The v1 plugin, compiled once per test binary.
pub fn v1_image() -> &'static PluginImage {
    static IMAGE: OnceLock<PluginImage> = OnceLock::new();
    IMAGE.get_or_init(|| load(PODSTATUS_V1))
}

/// The export, limit and message of the fault `result` must be (panics otherwise).
pub fn fault<T: std::fmt::Debug>(
    result: Result<T, podstatus_runtime::CallError>,
) -> (&'static str, podstatus_runtime::FaultKind, String) {
    match result {
        Err(podstatus_runtime::CallError::Fault { call, kind, message }) => (call, kind, message),
        other => panic!("expected a fault, got {other:?}"),
    }
}

/// A plugin compiled with the shared cache and default limits.
pub fn load(bytes: &[u8]) -> PluginImage {
    test_runtime().load(bytes).expect("the plugin loads")
}

/// A runtime with the shared artifact cache and default limits.
fn test_runtime() -> PluginRuntime {
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).expect("runtime")
}

/// Replays `trace_text` through the v1 component; `swap` steps load their plugin files.
pub fn replay_component(trace_text: &str, base_dir: &Path) -> Result<ReplayOutcome, TraceError> {
    replay_component_with(v1_image(), trace_text, base_dir)
}

/// The v2 plugin (logic v2, contract `kubelet:status@0.1.1`), compiled once per test
/// binary.
pub fn v2_image() -> &'static PluginImage {
    static IMAGE: OnceLock<PluginImage> = OnceLock::new();
    IMAGE.get_or_init(|| load(PODSTATUS_V2))
}

/// The v3 plugin (logic v3: v2 writing each version with one PATCH, no GET; contract
/// `kubelet:status@0.1.1`), compiled once per test binary.
pub fn v3_image() -> &'static PluginImage {
    static IMAGE: OnceLock<PluginImage> = OnceLock::new();
    IMAGE.get_or_init(|| load(PODSTATUS_V3))
}

/// The built-in plugin of `version` (`1.35`, `1.37-one-call`, ...), compiled once per
/// test binary.
pub fn logic_image(version: LogicVersion) -> &'static PluginImage {
    static IMAGES: OnceLock<Mutex<BTreeMap<LogicVersion, &'static PluginImage>>> = OnceLock::new();
    let mut images = IMAGES.get_or_init(Default::default).lock().unwrap_or_else(|p| p.into_inner());
    if let Some(image) = images.get(&version).copied() {
        return image;
    }
    let image: &'static PluginImage = Box::leak(Box::new(load(version.component())));
    images.insert(version, image);
    image
}

/// Replays `trace_text` through the component `image` ([`v1_image`], [`v2_image`], or
/// any other); `swap` steps load their plugin files.
pub fn replay_component_with(
    image: &PluginImage,
    trace_text: &str,
    base_dir: &Path,
) -> Result<ReplayOutcome, TraceError> {
    let trace = Trace::parse(trace_text, base_dir.to_path_buf())?;
    let runtime = test_runtime();
    let loader = |path: &Path, world| {
        let image = runtime.load_file(path)?;
        image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>)
    };
    replay::run_with_swaps(&trace, &|world| image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>), &loader)
}

/// Replays `trace_text` through the component `image` with the agent's reach guard for
/// node `node` (`podstatus replay --node NODE`).
pub fn replay_component_guarded(
    image: &PluginImage,
    trace_text: &str,
    base_dir: &Path,
    node: &str,
) -> Result<ReplayOutcome, TraceError> {
    let trace = Trace { guard_node: Some(node.to_owned()), ..Trace::parse(trace_text, base_dir.to_path_buf())? };
    replay::run(&trace, &|world| image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>))
}

/// Replays `trace_text` through the v2 component; `swap` steps load their plugin files.
pub fn replay_component_v2(trace_text: &str, base_dir: &Path) -> Result<ReplayOutcome, TraceError> {
    replay_component_with(v2_image(), trace_text, base_dir)
}

/// Replays `trace_text` through the same logic, natively.
pub fn replay_native(trace_text: &str, base_dir: &Path) -> Result<ReplayOutcome, TraceError> {
    let trace = Trace::parse(trace_text, base_dir.to_path_buf())?;
    replay::run(&trace, &|world| {
        Ok(Box::new(podstatus_plugins::NativePlugin::new(world, podstatus_plugins::LogicVersion::V1))
            as Box<dyn Plugin>)
    })
}

/// Checks that `actual` contains `expected`: objects match on the keys `expected`
/// names, lists must have the same length and match element by element, anything else
/// must be equal. Returns the path of the first mismatch.
pub fn partial_match(expected: &serde_json::Value, actual: &serde_json::Value, path: &str) -> Result<(), String> {
    use serde_json::Value;
    match (expected, actual) {
        (Value::Object(e), Value::Object(a)) => {
            for (key, value) in e {
                let child = format!("{path}.{key}");
                match a.get(key) {
                    Some(actual) => partial_match(value, actual, &child)?,
                    None if value.is_null() => {}
                    None => return Err(format!("{child}: missing, expected {value}")),
                }
            }
            Ok(())
        }
        (Value::Array(e), Value::Array(a)) => {
            if e.len() != a.len() {
                return Err(format!("{path}: expected {} elements, found {}: {}", e.len(), a.len(), actual));
            }
            e.iter().zip(a).enumerate().try_for_each(|(i, (e, a))| partial_match(e, a, &format!("{path}[{i}]")))
        }
        (e, a) if e == a => Ok(()),
        (e, a) => Err(format!("{path}: expected {e}, found {a}")),
    }
}

/// A world for tests: an in-memory API server and a pod manager both holding `pods`
/// (the pod manager following the API server), the system clock, a fixed
/// deletion-safety answer and a sync queue of `queue_capacity`.
pub fn memory_world(
    pods: impl IntoIterator<Item = k8s_openapi::api::core::v1::Pod>,
    deletion_safe: bool,
    queue_capacity: usize,
) -> (std::sync::Arc<podstatus_backends::MemoryApiServer>, podstatus_runtime::World) {
    use std::sync::Arc;

    use podstatus_backends::FixedDeletionSafety;
    use podstatus_backends::MemoryApiServer;
    use podstatus_backends::PodManager;
    use podstatus_backends::SyncQueue;
    use podstatus_backends::SystemClock;

    let api = Arc::new(MemoryApiServer::new());
    let pod_manager = Arc::new(PodManager::new());
    for pod in pods {
        api.put_pod(pod.clone()).expect("a valid test pod");
        pod_manager.add_pod(pod);
    }
    pod_manager.follow_api_server(&api);
    let world = podstatus_runtime::World {
        api_server: api.clone(),
        pod_manager,
        deletion_safety: Arc::new(FixedDeletionSafety::new(deletion_safe)),
        clock: Arc::new(SystemClock),
        queue: Arc::new(SyncQueue::new(queue_capacity)),
    };
    (api, world)
}

/// Pod number `i` of a numbered set: `default/pod-{i}`, UID `uid-{i:04}`, one container
/// `app` (image `app:1`), no status. For tests that want many alike pods.
pub fn numbered_pod(i: usize) -> k8s_openapi::api::core::v1::Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{i:04}"), "name": format!("pod-{i}"), "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}
    }))
    .expect("a valid pod")
}

/// A numbered pod's status: running and ready, its container restarted `restarts`
/// times (each count is a new status).
pub fn running_status(restarts: u64) -> String {
    serde_json::json!({"phase": "Running", "containerStatuses": [{"name": "app", "image": "app:1", "imageID": "",
        "containerID": "containerd://app", "ready": true, "restartCount": restarts,
        "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]})
    .to_string()
}

/// A test pod being built: named, with a uid, in namespace "ns" until told otherwise, with
/// no spec or status until asked for. One builder, so each test file says only what its
/// pods have that matters to it (`TestPod::new("web", "u1").node(NODE).container("c").build()`).
pub struct TestPod(k8s_openapi::api::core::v1::Pod);

impl TestPod {
    /// A pod named `name` with `uid`, in namespace "ns".
    pub fn new(name: &str, uid: &str) -> Self {
        let mut pod = k8s_openapi::api::core::v1::Pod::default();
        pod.metadata.namespace = Some("ns".into());
        pod.metadata.name = Some(name.into());
        pod.metadata.uid = Some(uid.into());
        TestPod(pod)
    }

    /// In `namespace` rather than "ns".
    pub fn namespace(mut self, namespace: &str) -> Self {
        self.0.metadata.namespace = Some(namespace.into());
        self
    }

    /// Bound to `node`.
    pub fn node(mut self, node: &str) -> Self {
        self.spec().node_name = Some(node.into());
        self
    }

    /// With one more container, named `name` (and no image).
    pub fn container(self, name: &str) -> Self {
        self.container_with_image(name, None)
    }

    /// With one more container, named `name`, running `image` if there is one.
    pub fn container_with_image(mut self, name: &str, image: Option<&str>) -> Self {
        let container = k8s_openapi::api::core::v1::Container {
            name: name.into(),
            image: image.map(Into::into),
            ..Default::default()
        };
        self.spec().containers.push(container);
        self
    }

    /// With a status in `phase`.
    pub fn phase(mut self, phase: &str) -> Self {
        self.0.status.get_or_insert_with(Default::default).phase = Some(phase.into());
        self
    }

    /// The pod.
    pub fn build(self) -> k8s_openapi::api::core::v1::Pod {
        self.0
    }

    fn spec(&mut self) -> &mut k8s_openapi::api::core::v1::PodSpec {
        self.0.spec.get_or_insert_with(Default::default)
    }
}

/// A replay report as the fixtures store it: pretty JSON and a newline.
pub fn render(outcome: &ReplayOutcome) -> String {
    serde_json::to_string_pretty(&outcome.report).expect("report serialises") + "\n"
}

/// Checks a fixture's report against the trace's hand-written `expect` block and its
/// stored `.report.json` (rewritten instead when `PODSTATUS_BLESS` is set); returns what
/// failed, each line naming the fixture.
pub fn check_fixture_report(trace: &Path, text: &str, rendered: &str) -> Vec<String> {
    let name = trace.file_name().unwrap_or_default().to_string_lossy().into_owned();
    let mut failures = Vec::new();
    let doc: serde_json::Value = serde_json::from_str(text).expect("the trace is JSON");
    let report: serde_json::Value = serde_json::from_str(rendered).expect("the report is JSON");
    match doc.get("expect") {
        Some(expect) => {
            if let Err(e) = partial_match(expect, &report, "report") {
                failures.push(format!("{name}: expectation failed at {e}"));
            }
        }
        None => failures.push(format!("{name}: has no \"expect\" block")),
    }
    let golden = PathBuf::from(trace.to_string_lossy().replace(".trace.json", ".report.json"));
    if std::env::var_os("PODSTATUS_BLESS").is_some() {
        std::fs::write(&golden, rendered).expect("writing the report");
    } else {
        match std::fs::read_to_string(&golden) {
            Ok(stored) if stored == rendered => {}
            Ok(_) => failures
                .push(format!("{name}: report differs from {} (PODSTATUS_BLESS=1 rewrites it)", golden.display())),
            Err(_) => failures.push(format!("{name}: no stored report {}", golden.display())),
        }
    }
    failures
}

/// The traces (`*.trace.json`) of `fixtures/<folder>/`, sorted.
pub fn fixture_traces(folder: &str) -> Vec<PathBuf> {
    let mut traces: Vec<PathBuf> = std::fs::read_dir(fixtures_dir().join(folder))
        .unwrap_or_else(|e| panic!("fixtures/{folder} exists: {e}"))
        .map(|e| e.expect("readable dir entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".trace.json"))
        .collect();
    traces.sort();
    traces
}

/// Every trace of `traces` replayed by `replay` (given the trace and its text) and held
/// to [`check_fixture_report`]: what failed, each line naming the fixture; a trace that
/// cannot be replayed is a failure too.
pub fn fixture_failures(
    traces: &[PathBuf],
    replay: impl Fn(&Path, &str) -> Result<ReplayOutcome, TraceError>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for trace in traces {
        let name = trace.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(trace).unwrap();
        match replay(trace, &text) {
            Ok(outcome) => failures.extend(check_fixture_report(trace, &text, &render(&outcome))),
            Err(e) => failures.push(format!("{name}: unusable trace: {e}")),
        }
    }
    failures
}

/// The kubectl on the PATH. Without one the tests fail, never pass unrun: `.ci/run`
/// installs Debian's `kubernetes-client` where the machine has none.
pub fn kubectl() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("kubectl"))
        .find(|candidate| candidate.is_file())
        .expect("kubectl is not on the PATH: install it (`apt-get install kubernetes-client`, as .ci/run does)")
}

/// A node's settings as the tests run one: `node`'s name, `target`, the default client,
/// no manifests, no metrics endpoint, no Node registered, a batch every second.
pub fn agent_config<T>(node: &str, target: T) -> podstatus_agent::AgentConfig<T> {
    podstatus_agent::AgentConfig {
        node: node.into(),
        target,
        client: podstatus_agent::client::KubeClientConfig::default(),
        manifest_dir: None,
        metrics_addr: None,
        sync_period: std::time::Duration::from_secs(1),
        batch_phase: 0.0,
        queue_capacity: podstatus_backends::DEFAULT_CAPACITY,
        register_node: None,
    }
}
