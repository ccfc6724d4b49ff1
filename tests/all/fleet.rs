//! `podstatus fleet` as a library (issue 28): a few nodes on `podstatus_agent::Fleet`
//! with the real components, against an embedded API server this test holds, their
//! pods created through kube-rs and run by the pod runner, the rollout driven through
//! the HTTP control endpoint by a loop as the command runs it. After every rollout the
//! check holds: each pod's status in the API server is its node's accepted one.
//!
//! Runs are small and short; every wait is bounded and generous, and nothing asserts
//! how long anything took.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use podstatus_agent::client::KubeClientConfig;
use podstatus_agent::fleet::{FleetGroup, FleetSpec};
use podstatus_agent::node::{NodeConfig, PodRunner, WatchScope};
use podstatus_agent::rollout::{
    ControlAccess, ControlLimits, ControlServer, PluginCatalog, RolloutPolicy, serve_commands,
};
use podstatus_agent::{Fleet, Rollout, Target};
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::testing;
use podstatus_backends::{ApiServer, DEFAULT_CAPACITY, MemoryApiServer};
use podstatus_plugins::LogicVersion;
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_tests::cache_dir;
use podstatus_tests::gated_api::GatedApiServer;
use serde_json::{Value, json};

use crate::raw_http::http;

const PREFIX: &str = "fleet";
/// Generous: a loaded CI machine may be slow, and nothing waits this long when it works.
const DEADLINE: Duration = Duration::from_secs(90);

fn wait_for<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    testing::wait_for(what, DEADLINE, Duration::from_millis(50), probe)
}

/// A fleet, its pod runner, its control endpoint and the loop that serves it, and the
/// test's own client of the API server.
struct Running {
    server: EmbeddedApiServer,
    fleet: Arc<Fleet>,
    runner: PodRunner,
    control: SocketAddr,
    stop: Arc<AtomicBool>,
    looping: Option<JoinHandle<()>>,
    runtime: tokio::runtime::Runtime,
    client: kube::Client,
}

impl Running {
    /// `nodes` nodes on `plugin` (a built-in plugin by its `--logic` name or alias, as
    /// `podstatus fleet` takes it), rolled out by `policy`.
    fn start(nodes: usize, plugin: &str, policy: RolloutPolicy) -> Running {
        Self::start_layered(nodes, plugin, policy, &|_, api| api)
    }

    /// [`Running::start`] with `layer` between each node's plugin and its API client.
    fn start_layered(
        nodes: usize,
        plugin: &str,
        policy: RolloutPolicy,
        layer: &dyn Fn(usize, Arc<dyn ApiServer>) -> Arc<dyn ApiServer>,
    ) -> Running {
        let options = ServeOptions {
            max_connections: ServeOptions::default().max_connections + Fleet::connections(nodes, WatchScope::Shared),
            ..ServeOptions::default()
        };
        let store = Arc::new(MemoryApiServer::with_graceful_deletion());
        let server = EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse().expect("addr"), options)
            .expect("the embedded server starts");
        let plugins = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() })
            .expect("runtime");
        let mut catalog = PluginCatalog::new(plugins.clone());
        for version in LogicVersion::ALL {
            for name in std::iter::once(version.name()).chain(version.alias()) {
                catalog.add_bytes(name, version.component(), version.program());
            }
        }
        let (image, logic) = catalog.get(plugin).expect("the plugin loads");
        let config = podstatus_agent::AgentConfig {
            node: PREFIX.into(),
            target: (),
            client: KubeClientConfig::default(),
            manifest_dir: None,
            metrics_addr: Some("127.0.0.1:0".parse().expect("addr")),
            sync_period: Duration::from_secs(1),
            batch_phase: 0.0,
            queue_capacity: DEFAULT_CAPACITY,
            register_node: Some(NodeConfig::new(PREFIX)),
        };
        let spec = FleetSpec {
            groups: vec![FleetGroup::new("all", nodes, image, &logic)],
            per_node_labels: false,
            numbers: None,
            watch: WatchScope::Shared,
        };
        let target = Target::Url(server.url());
        let fleet = Fleet::start(&target, &config, spec, &plugins, layer, &mut |_| {}).expect("the fleet starts");
        let fleet = Arc::new(fleet);
        let nodes = fleet.agents().iter().map(|a| (a.node_side(), Arc::clone(a.pod_manager()))).collect();
        let runner = PodRunner::start_many(nodes, "10.0.0.10".into());
        let control = ControlServer::start(
            "127.0.0.1:0".parse().expect("addr"),
            ControlAccess::open(),
            ControlLimits::default(),
            fleet.connection().runtime(),
        )
        .expect("the control endpoint starts");
        let addr = control.local_addr();
        let stop = Arc::new(AtomicBool::new(false));
        // The fleet's loop, as `podstatus fleet` runs it: commands, then the rollout's tick.
        let looping = {
            let (fleet, stop) = (Arc::clone(&fleet), Arc::clone(&stop));
            std::thread::spawn(move || {
                let mut rollout = Rollout::new(policy);
                while !stop.load(Ordering::SeqCst) {
                    serve_commands(&control, &fleet, &mut rollout, &catalog);
                    rollout.tick(&fleet);
                    std::thread::sleep(Duration::from_millis(20));
                }
            })
        };
        let runtime =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
        let client = {
            let _entered = runtime.enter();
            kube::Client::try_from(kube::Config::new(server.url().parse().expect("url"))).expect("client")
        };
        Running { server, fleet, runner, control: addr, stop, looping: Some(looping), runtime, client }
    }

    /// Creates `count` pods through kube-rs, spread over the nodes, whose containers
    /// exit every second and restart: a status change a second each.
    fn create_pods(&self, count: usize) {
        let pods: Api<Pod> = Api::namespaced(self.client.clone(), "default");
        for i in 0..count {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("web-{i}"), "namespace": "default",
                             "annotations": {"podstatus.io/run-for": "1s", "podstatus.io/exit-code": "1"}},
                "spec": {"nodeName": format!("{PREFIX}-{}", i % self.fleet.len()), "restartPolicy": "Always",
                         "containers": [{"name": "app", "image": "nginx:1.27"}]}
            }))
            .expect("a pod");
            self.runtime.block_on(pods.create(&PostParams::default(), &pod)).expect("create the pod");
        }
    }

    /// Waits until every pod is Running in the API server.
    fn wait_running(&self, count: usize) {
        wait_for("every pod is Running", || {
            let running = self
                .server
                .store()
                .list_pods()
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
                .count();
            (running >= count).then_some(())
        });
    }

    fn control(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        let body = body.map(|b| b.to_string()).unwrap_or_default();
        let reply = http(self.control, method, path, &[("Content-Type", "application/json")], body.as_bytes());
        (reply.code, reply.json())
    }

    /// Starts a canary of `share` to the plugin `to`, checks the nodes each plugin then
    /// serves, and waits until the canary (labelled `logic`) has written statuses.
    fn start_canary(&self, share: Value, to: &str, logic: &str, nodes_by_logic: Value) {
        let (code, status) = self.control("POST", "/rollout/canary", Some(json!({"share": share, "to": to})));
        assert_eq!(code, 200, "{status}");
        assert_eq!(status["nodes_by_logic"], nodes_by_logic, "{status}");
        wait_for("the canary writes statuses", || {
            let series = format!("podstatus_status_versions_total{{group=\"canary\",logic=\"{logic}\"}}");
            sample(&self.metrics(), &series).filter(|&n| n >= 2.0)
        });
    }

    fn rollout(&self) -> Value {
        let (code, status) = self.control("GET", "/rollout", None);
        assert_eq!(code, 200, "{status}");
        status
    }

    fn metrics(&self) -> String {
        let addr = self.fleet.metrics_addr().expect("the fleet serves metrics");
        String::from_utf8(http(addr, "GET", "/metrics", &[], b"").body).expect("text")
    }

    /// Stops the pods' runner and the loop, writes what is pending, and checks every
    /// node's pods: each API status is the node's accepted one. Returns the pods
    /// compared.
    fn stop_and_check(mut self) -> u64 {
        self.runner.stop();
        self.stop.store(true, Ordering::SeqCst);
        self.looping.take().expect("the loop").join().expect("the loop ends");
        assert!(self.fleet.flush(DEADLINE), "every pending status is written");
        let store = Arc::clone(self.server.store());
        let read = move |namespace: &str, name: &str| Ok(store.get_pod(namespace, name).ok().map(|p| (*p).clone()));
        let mut compared = 0;
        for agent in self.fleet.agents() {
            let check = podstatus_simulate::check(agent.handle(), agent.pod_manager(), &read);
            assert!(check.differing.is_empty(), "{:?}", check.differing);
            compared += check.compared;
        }
        let fleet = Arc::try_unwrap(self.fleet).ok().expect("the loop let go of the fleet");
        fleet.mark_shutting_down(Duration::from_secs(10));
        assert_eq!(fleet.shutdown(DEADLINE), 0, "nothing left unwritten");
        compared
    }
}

/// The value of the sample line `name` (with its labels, exactly), if present.
fn sample(metrics: &str, name: &str) -> Option<f64> {
    metrics.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// A policy that decides only when told.
fn manual() -> RolloutPolicy {
    RolloutPolicy { automatic: false, ..RolloutPolicy::default() }
}

#[test]
fn a_fleet_registers_ready_nodes_runs_their_pods_and_labels_its_metrics_by_group() {
    let fleet = Running::start(3, "v2", manual());
    wait_for("every node is Ready", || (fleet.fleet.ready_nodes() == 3).then_some(()));
    fleet.create_pods(6);
    fleet.wait_running(6);
    for pod in fleet.server.store().list_pods() {
        let node = pod.spec.as_ref().and_then(|s| s.node_name.clone()).unwrap_or_default();
        assert!(node.starts_with("fleet-"), "{node}");
    }
    let status = fleet.rollout();
    assert_eq!(status["state"], "idle", "{status}");
    assert_eq!(status["groups"], json!([{"name": "all", "logic": "podstatus-v2", "nodes": 3}]));
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 3}));

    // Per group, not per node: one series for the three nodes.
    let metrics = fleet.metrics();
    let labels = "group=\"all\",logic=\"podstatus-v2\"";
    for name in [
        format!("kubelet_pod_status_sync_duration_seconds_count{{{labels}}}"),
        format!("podstatus_api_calls_total{{{labels},verb=\"get\",outcome=\"Success\"}}"),
        format!("podstatus_api_calls_total{{{labels},verb=\"patch_status\",outcome=\"Success\"}}"),
        format!("podstatus_plugin_call_duration_seconds_count{{{labels},operation=\"set_pod_status\"}}"),
        format!("podstatus_status_versions_total{{{labels}}}"),
    ] {
        assert!(sample(&metrics, &name).is_some_and(|n| n >= 1.0), "{name} in\n{metrics}");
    }
    assert_eq!(sample(&metrics, &format!("podstatus_fleet_nodes{{{labels}}}")), Some(3.0), "{metrics}");
    assert!(!metrics.contains("node=\""), "no per-node series unless asked for:\n{metrics}");
    assert!(fleet.stop_and_check() >= 6);
}

#[test]
fn a_canary_promoted_over_http_moves_every_node_to_its_plugin_and_loses_nothing() {
    let fleet = Running::start(4, "v2", manual());
    fleet.create_pods(8);
    fleet.wait_running(8);
    let (code, status) = fleet.control("POST", "/rollout/canary", Some(json!({"share": "25%", "to": "v3"})));
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["state"], "watching", "{status}");
    assert_eq!(status["canary"]["nodes"], 1, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 3, "podstatus-v3": 1}), "{status}");
    // A second canary waits for the first to be decided.
    let (code, refused) = fleet.control("POST", "/rollout/canary", Some(json!({"share": 0.5, "to": "v1"})));
    assert_eq!(code, 409, "{refused}");
    assert!(refused["error"].as_str().unwrap_or_default().contains("promote it or roll it back"), "{refused}");

    // The canary's samples are its own group's while it is watched.
    wait_for("the canary writes statuses", || {
        let metrics = fleet.metrics();
        let series = "podstatus_status_versions_total{group=\"canary\",logic=\"podstatus-v3\"}";
        sample(&metrics, series).filter(|&n| n >= 2.0)
    });
    let status = fleet.rollout();
    assert!(status["canary"]["verdict"]["canary"]["versions"].as_u64() >= Some(2), "{status}");

    let (code, status) = fleet.control("POST", "/rollout/promote", None);
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["state"], "promoted", "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v3": 4}), "{status}");
    assert_eq!(status["groups"], json!([{"name": "all", "logic": "podstatus-v3", "nodes": 4}]), "{status}");
    let decision = &status["last_decision"];
    assert_eq!((&decision["outcome"], &decision["by"]), (&json!("promoted"), &json!("operator")), "{status}");
    assert_eq!(decision["swap_errors"], 0, "{status}");
    let (code, _) = fleet.control("POST", "/rollout/promote", None);
    assert_eq!(code, 409, "nothing left to promote");

    // Every node writes with v3's one PATCH from now on (v2 read each pod first): once
    // the syncs under way at the swaps are done, patches go on and no GET comes.
    let series = |verb: &str| {
        format!("podstatus_api_calls_total{{group=\"all\",logic=\"podstatus-v3\",verb=\"{verb}\",outcome=\"Success\"}}")
    };
    let (gets, patches) = (series("get"), series("patch_status"));
    let writes = |at_least: f64| {
        wait_for("the promoted nodes write", || {
            let metrics = fleet.metrics();
            sample(&metrics, &patches).filter(|&n| n > at_least).map(|n| (n, sample(&metrics, &gets).unwrap_or(0.0)))
        })
    };
    let (settled, gets_then) = writes(3.0);
    let (_, gets_now) = writes(settled + 3.0);
    assert_eq!(gets_now, gets_then, "v3 writes without reading first");
    assert!(fleet.stop_and_check() >= 8);
}

/// Issue 48: a fleet on `1.35-one-call` (v4) rolls by canary to `1.37`, Kubernetes
/// 1.37's status manager as its kubelet writes: every node moves, nothing is lost, and
/// the promoted nodes read each pod before they write it, as upstream does.
#[test]
fn a_canary_rolls_a_fleet_from_1_35_one_call_to_1_37() {
    let fleet = Running::start(4, "1.35-one-call", manual());
    fleet.create_pods(8);
    fleet.wait_running(8);
    let canary = json!({"podstatus-v4": 3, "podstatus-1-37": 1});
    fleet.start_canary(json!("25%"), "1.37", "podstatus-1-37", canary);
    let (code, status) = fleet.control("POST", "/rollout/promote", None);
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-1-37": 4}), "{status}");
    assert_eq!(status["last_decision"]["swap_errors"], 0, "{status}");
    let series = |verb: &str| {
        format!(
            "podstatus_api_calls_total{{group=\"all\",logic=\"podstatus-1-37\",verb=\"{verb}\",outcome=\"Success\"}}"
        )
    };
    wait_for("the promoted nodes read before they write", || {
        let metrics = fleet.metrics();
        let (gets, patches) = (sample(&metrics, &series("get"))?, sample(&metrics, &series("patch_status"))?);
        (gets >= 3.0 && patches >= 3.0).then_some(())
    });
    assert!(fleet.stop_and_check() >= 8);
}

#[test]
fn a_canary_rolled_back_over_http_returns_to_its_group_plugin_and_loses_nothing() {
    let fleet = Running::start(3, "v2", manual());
    fleet.create_pods(6);
    fleet.wait_running(6);
    // Only a plugin the fleet was given, by name: never a path a client sends.
    let (code, refused) = fleet.control("POST", "/rollout/canary", Some(json!({"share": 0.5, "to": "/tmp/x.wasm"})));
    assert_eq!(code, 422, "{refused}");
    assert!(refused["error"].as_str().unwrap_or_default().contains("v1, v2, v3, v4"), "{refused}");
    assert_eq!(fleet.rollout()["state"], "idle");
    fleet.start_canary(json!(0.5), "v3", "podstatus-v3", json!({"podstatus-v2": 1, "podstatus-v3": 2}));
    let (code, status) = fleet.control("POST", "/rollout/rollback", None);
    assert_eq!(code, 200, "{status}");
    assert_eq!(status["state"], "rolled_back", "{status}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v2": 3}), "{status}");
    assert_eq!(status["groups"][0]["logic"], "podstatus-v2", "the group keeps its plugin: {status}");
    assert_eq!(status["last_decision"]["outcome"], "rolled_back", "{status}");
    let (code, _) = fleet.control("POST", "/rollout/rollback", None);
    assert_eq!(code, 409, "nothing left to roll back");
    // The canary's nodes count in their own group again.
    let metrics = fleet.metrics();
    assert_eq!(sample(&metrics, "podstatus_fleet_nodes{group=\"all\",logic=\"podstatus-v2\"}"), Some(3.0), "{metrics}");
    assert!(fleet.stop_and_check() >= 6);
}

#[test]
fn a_canary_that_makes_more_api_calls_is_rolled_back_by_itself_and_loses_nothing() {
    // Logic v1 reads each pod before writing it: twice v3's calls per status version,
    // over the 1.5 the policy allows. Few samples are enough here: the figure is not noisy.
    let policy = RolloutPolicy { watch: Duration::from_secs(2), min_samples: 5, ..RolloutPolicy::default() };
    let fleet = Running::start(4, "v3", policy);
    fleet.create_pods(8);
    fleet.wait_running(8);
    let (code, status) = fleet.control("POST", "/rollout/canary", Some(json!({"share": "50%", "to": "v1"})));
    assert_eq!(code, 200, "{status}");
    let status = wait_for("the rollout decides", || {
        let status = fleet.rollout();
        (status["state"] != "watching").then_some(status)
    });
    assert_eq!(status["state"], "rolled_back", "{status}");
    let decision = &status["last_decision"];
    assert_eq!(decision["by"], "automatic", "{status}");
    let verdict = &decision["verdict"];
    let calls = verdict["criteria"]
        .as_array()
        .and_then(|criteria| criteria.iter().find(|c| c["name"] == "api_calls_per_version"))
        .unwrap_or_else(|| panic!("{verdict}"));
    assert_eq!((&calls["judged"], &calls["worse"]), (&json!(true), &json!(true)), "{verdict}");
    let (canary, rest) = (&verdict["canary"]["api_calls_per_version"], &verdict["rest"]["api_calls_per_version"]);
    assert!(canary.as_f64() > rest.as_f64().map(|r| r * 1.5), "{verdict}");
    assert_eq!(status["nodes_by_logic"], json!({"podstatus-v3": 4}), "{status}");
    assert!(fleet.stop_and_check() >= 8);
}

/// A node whose syncs are still in flight when a swap begins (its API server holding
/// every status write past the swap's wait) is not a failed swap: it is tried again
/// once the writes go through, and swaps then, losing nothing.
#[test]
fn a_swap_that_finds_the_node_busy_is_tried_again_and_goes_through() {
    // The node's plugin reaches the API server through a gate, open until the test
    // shuts it.
    let gates: Arc<std::sync::Mutex<Vec<Arc<GatedApiServer>>>> = Arc::default();
    let layer = {
        let gates = Arc::clone(&gates);
        move |_: usize, inner: Arc<dyn ApiServer>| -> Arc<dyn ApiServer> {
            let gate = GatedApiServer::new(inner);
            gate.open();
            gates.lock().expect("gates").push(Arc::clone(&gate));
            gate
        }
    };
    let fleet = Running::start_layered(1, "v2", manual(), &layer);
    let gate = Arc::clone(&gates.lock().expect("gates")[0]);
    fleet.create_pods(1);
    fleet.wait_running(1);
    gate.close();
    // Held, not passing: a call passing the gate as it shuts ends at once, and a
    // swap begun then may find the node idle (it did once in a full run).
    assert!(gate.wait_held(1, DEADLINE), "a sync's call held at the gate");
    // Open again after the first attempt's wait for the syncs in flight gave up.
    let opener = {
        let gate = Arc::clone(&gate);
        std::thread::spawn(move || {
            std::thread::sleep(podstatus_runtime::SWAP_DRAIN_MAX + Duration::from_secs(2));
            gate.open();
        })
    };
    let v3 = LogicVersion::named("v3").expect("v3");
    let plugins = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() })
        .expect("runtime");
    let image = plugins.load(v3.component()).expect("v3 loads");
    let swap = fleet.fleet.swap_nodes(&[0], &|_| (image.clone(), v3.program().to_owned()));
    opener.join().expect("the opener");
    assert_eq!((swap.swapped, swap.failed.clone(), swap.busy.clone()), (1, vec![], vec![]), "{swap:?}");
    assert!(swap.took >= podstatus_runtime::SWAP_DRAIN_MAX, "the first attempt found it busy: {swap:?}");
    assert_eq!(fleet.fleet.node_logic(0), v3.program());
    assert!(fleet.stop_and_check() >= 1);
}
