//! `simulate::run` and its final check as a library: a node agent writing over real HTTP
//! to an embedded API server this test holds (so the store can be read and tampered
//! with directly), through a kubeconfig as a cluster would be reached.
//!
//! Runs are small and short; every wait is bounded and generous, and nothing asserts
//! how long anything took.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_agent::node::NodeConfig;
use podstatus_agent::{AgentConfig, NodeAgent, Target};
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::pod_identity::is_mirror_pod;
use podstatus_backends::testing;
use podstatus_backends::{ApiServer, DeleteOptions, MemoryApiServer, PodEvent};
use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_simulate::{
    ApiServerTarget, OwnerError, Signals, SimulateConfig, SimulatedNode, SimulatedNodeError, SimulatedTarget, Summary,
    check,
};
use podstatus_tests::{TestPod, cache_dir};

const NODE: &str = "sim-node";
/// Generous: a loaded CI machine may be slow, and nothing waits this long when it works.
const DEADLINE: Duration = Duration::from_secs(60);

fn runtime() -> PluginRuntime {
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).expect("runtime")
}

/// An embedded API server of the test's own, deleting gracefully as Kubernetes does.
fn server() -> EmbeddedApiServer {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    EmbeddedApiServer::start(store, "127.0.0.1:0".parse().unwrap()).expect("the embedded server starts")
}

fn agent_config(target: Target) -> AgentConfig<SimulatedTarget> {
    podstatus_tests::agent_config(NODE, SimulatedTarget::from(ApiServerTarget::Running(target)))
}

fn simulation(target: Target, pods: usize, churn: f64, seconds: f64) -> SimulateConfig {
    SimulateConfig {
        agent: agent_config(target),
        pods,
        static_pods: 2,
        churn,
        duration: Some(Duration::from_secs_f64(seconds)),
        seed: 7,
        cycles: None,
        swap_at: None,
        swap_on_signal: None,
        flush_timeout: Duration::from_secs(60),
        resync: None,
        nodes: 1,
        arrival_rate: None,
        canary: None,
        logic: "podstatus-v1".into(),
    }
}

fn run(config: SimulateConfig) -> Summary {
    let plugins = runtime();
    let image = plugins.load(PODSTATUS_V1).expect("v1 loads");
    podstatus_simulate::run(config, plugins, image, &Signals::default()).expect("the simulation runs")
}

/// A kubeconfig file, as `kubectl config` would write one, for a server without
/// credentials.
struct Kubeconfig(PathBuf);

impl Kubeconfig {
    fn for_server(url: &str) -> Kubeconfig {
        let path = std::env::temp_dir().join(format!("podstatus-simulate-kubeconfig-{}.yaml", std::process::id()));
        let text = format!(
            "apiVersion: v1\n\
             kind: Config\n\
             clusters:\n\
             - name: embedded\n  cluster:\n    server: {url}\n\
             users:\n\
             - name: nobody\n  user: {{}}\n\
             contexts:\n\
             - name: embedded\n  context:\n    cluster: embedded\n    user: nobody\n    namespace: sim\n\
             current-context: embedded\n"
        );
        std::fs::write(&path, text).unwrap();
        Kubeconfig(path)
    }
}

impl Drop for Kubeconfig {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn on_node(pod: &Pod) -> bool {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(NODE)
}

#[test]
fn a_run_through_a_kubeconfig_leaves_every_status_in_the_api_server() {
    let server = server();
    let kubeconfig = Kubeconfig::for_server(&server.url());
    let mut config = simulation(Target::Kubeconfig { path: Some(kubeconfig.0.clone()), context: None }, 10, 30.0, 2.0);
    config.agent.register_node = Some(NodeConfig::new(NODE));
    let summary = run(config);

    assert!(summary.passed(), "{summary}");
    assert!(summary.check.compared > 0, "{summary}");
    let url = server.url();
    assert!(summary.api_server.starts_with(url.trim_end_matches('/')), "{} is not {url}", summary.api_server);
    assert!(summary.versions > 0, "{summary}");
    assert_eq!(summary.static_pods, 2, "{summary}");

    // The statuses are in the store this test holds, not in some other server.
    let pods: Vec<Pod> = server.store().list_pods().into_iter().filter(on_node).collect();
    let with_status = pods.iter().filter(|p| p.status.as_ref().and_then(|s| s.phase.as_ref()).is_some()).count();
    assert!(
        with_status as u64 >= summary.check.compared,
        "{with_status} pods with a status in the store, {} compared",
        summary.check.compared
    );
    let mirrors: Vec<&Pod> = pods.iter().filter(|p| is_mirror_pod(p)).collect();
    assert_eq!(mirrors.len(), 2, "a mirror pod per static pod");
    for mirror in mirrors {
        let phase = mirror.status.as_ref().and_then(|s| s.phase.as_deref());
        assert!(matches!(phase, Some("Pending" | "Running")), "{:?}: {phase:?}", mirror.metadata.name);
    }
    let by_phase: u64 = summary.pods_by_phase.values().sum();
    assert!(by_phase > 0, "{summary}");

    // The node registered as `podstatus agent` registers it, reported shutting down at
    // the end of the run.
    let node = crate::raw_http::http(server.local_addr(), "GET", &format!("/api/v1/nodes/{NODE}"), &[], b"").json();
    let ready = node["status"]["conditions"].as_array().and_then(|c| c.iter().find(|c| c["type"] == "Ready")).cloned();
    let ready = ready.unwrap_or_else(|| panic!("no Ready condition: {node}"));
    assert_eq!(
        (&ready["status"], &ready["message"]),
        (&serde_json::json!("False"), &serde_json::json!("node is shutting down"))
    );
}

/// A pod bound to the node, as its owner creates it.
fn pod(name: &str, uid: &str) -> Pod {
    TestPod::new(name, uid).namespace("sim").node(NODE).container("app").build()
}

fn running() -> PodStatus {
    serde_json::from_value(serde_json::json!({
        "phase": "Running",
        "podIP": "10.244.0.9",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T12:00:00Z"}],
        "containerStatuses": [{
            "name": "app", "image": "app:1", "imageID": "app@sha256:0", "ready": true, "restartCount": 0,
            "containerID": "containerd://app-0", "state": {"running": {"startedAt": "2026-11-30T12:00:00Z"}}
        }]
    }))
    .unwrap()
}

/// An agent running `plugin` (`loads` says what failed if it does not load) against an
/// embedded server of its own, with no batch sync within a test's time: nothing the
/// agent does unasked may repair what a test does behind a check. The server (kept
/// running while it is held), its store and the agent.
fn agent_without_batch_syncs(plugin: &[u8], loads: &str) -> (EmbeddedApiServer, Arc<MemoryApiServer>, NodeAgent) {
    let server = server();
    let store = Arc::clone(server.store());
    // The agent's own: against a server already running, the simulator adds nothing.
    let target = Target::Url(server.url());
    let mut config = agent_config(target.clone()).with_target(target);
    config.sync_period = Duration::from_secs(3600);
    let plugins = runtime();
    let image = plugins.load(plugin).expect(loads);
    let agent = NodeAgent::start(&config, plugins, image).expect("the agent starts");
    (server, store, agent)
}

/// What the check reads as the API server's: `store`'s pod of that namespace and name.
fn reader_of(store: &MemoryApiServer) -> impl Fn(&str, &str) -> Result<Option<Pod>, OwnerError> + '_ {
    |namespace, name| {
        Ok(store
            .list_pods()
            .into_iter()
            .find(|p| p.metadata.namespace.as_deref() == Some(namespace) && p.metadata.name.as_deref() == Some(name)))
    }
}

/// Sets [`running`] as the status of every pod the agent's pod manager holds; each is
/// queued.
fn set_every_held_pod_running(agent: &NodeAgent) {
    for held in agent.pod_manager().pods() {
        let outcome = agent.handle().set_pod_status(held.json(), &serde_json::to_string(&running()).unwrap()).unwrap();
        assert!(matches!(outcome, UpdateOutcome::Queued), "{outcome:?}");
    }
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    testing::wait_until(what, DEADLINE, Duration::from_millis(20), done)
}

/// The kubelet's pod workers resync every pod and report the status they generate,
/// most often the one reported last: each such call changes nothing, and the run ends
/// as clean as one without them.
#[test]
fn a_resync_sends_the_last_status_again_and_changes_nothing() {
    let server = server();
    let mut config = simulation(Target::Url(server.url()), 12, 20.0, 3.0);
    config.resync = Some(Duration::from_millis(200));
    let summary = run(config);

    assert!(summary.passed(), "{summary}");
    assert!(summary.resyncs > 20, "{summary}");
    assert!(summary.unchanged >= summary.resyncs, "every resync is unchanged: {summary}");
    assert!(summary.versions > 0, "{summary}");
}

/// A fleet's check reads the API server's pods page by page and compares each as it
/// comes, keeping none: it finds what a node's check finds (a status someone else
/// wrote, a pod gone from the API server), and leaves other nodes' pods alone.
#[test]
fn a_fleets_paged_check_finds_what_a_nodes_check_finds() {
    let (server, store, agent) = agent_without_batch_syncs(PODSTATUS_V1, "v1 loads");
    for (name, uid) in [("web-a", "uid-a"), ("web-b", "uid-b"), ("web-c", "uid-c")] {
        store.create_pod(pod(name, uid)).unwrap();
    }
    let elsewhere = TestPod::new("web-x", "uid-x").namespace("sim").node("other-node").container("app").build();
    store.create_pod(elsewhere).unwrap();
    wait_until("the watch brings the node's pods", || agent.pod_manager().pods().len() == 3);
    set_every_held_pod_running(&agent);
    let running_in_store = || {
        store
            .list_pods()
            .iter()
            .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
            .count()
    };
    wait_until("every status is written", || running_in_store() == 3);

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = {
        let _entered = runtime.enter();
        kube::Client::try_from(kube::Config::new(server.url().parse().unwrap())).unwrap()
    };
    let owners = podstatus_simulate::KubeOwners::new(client, runtime.handle().clone());
    let nodes = [podstatus_simulate::CheckedNode { name: NODE, handle: agent.handle(), pods: agent.pod_manager() }];
    let clean = podstatus_simulate::check_fleet(&owners, &nodes, false);
    assert_eq!((clean.nodes[0].compared, clean.nodes[0].differing.len()), (3, 0), "{clean:?}");
    assert_eq!(clean.pods_by_phase.get("Running"), Some(&3), "the node's pods only: {clean:?}");

    // Someone else writes web-b's status, and web-c leaves the API server (and so the
    // node, as a kubelet lets go of a deleted pod).
    let mut tampered = store.list_pods().into_iter().find(|p| p.metadata.name.as_deref() == Some("web-b")).unwrap();
    tampered.status.as_mut().unwrap().phase = Some("Failed".into());
    store.put_pod(tampered).unwrap();
    let at_once = DeleteOptions { grace_period_seconds: Some(0), ..DeleteOptions::default() };
    store.delete_pod("sim", "web-c", &at_once).expect("web-c was there");
    wait_until("the node lets go of web-c", || agent.pod_manager().pods().len() == 2);
    let dirty = podstatus_simulate::check_fleet(&owners, &nodes, false);
    let node = &dirty.nodes[0];
    assert_eq!(node.compared, 2, "{dirty:?}");
    assert_eq!(node.differing.len(), 1, "{dirty:?}");
    assert_eq!(node.differing[0].pod, "sim/web-b");
    assert!(node.differing[0].detail.contains("phase"), "{}", node.differing[0].detail);
    assert!(node.differing[0].detail.contains("Failed"), "{}", node.differing[0].detail);
    let single = check(agent.handle(), agent.pod_manager(), &reader_of(&store));
    assert_eq!(format!("{:?}", single.differing), format!("{:?}", node.differing), "as a node's own check");

    // Checked as another node's: no page brings the node's pods, so each is compared
    // last, as absent from the API server (and the other node's pod is not ours).
    let misnamed = [podstatus_simulate::CheckedNode { name: "other-node", ..nodes[0] }];
    let absent = podstatus_simulate::check_fleet(&owners, &misnamed, false);
    let node = &absent.nodes[0];
    assert_eq!(node.compared, 2, "{absent:?}");
    assert!(node.differing.iter().all(|d| d.detail == "not in the API server"), "{absent:?}");
    assert_eq!(node.differing.len(), 2, "{absent:?}");
    assert_eq!(absent.pods_by_phase.values().sum::<u64>(), 1, "web-x only: {absent:?}");
    agent.shutdown(Duration::from_secs(10));
}

#[test]
fn the_check_names_a_pod_whose_api_server_status_is_not_the_cached_one() {
    // No batch sync during the test: nothing may repair the tampering behind the check.
    let (server, store, agent) = agent_without_batch_syncs(PODSTATUS_V1, "v1 loads");

    for (name, uid) in [("web-a", "uid-a"), ("web-b", "uid-b")] {
        store.create_pod(pod(name, uid)).unwrap();
    }
    wait_until("the watch brings both pods", || agent.pod_manager().pods().len() == 2);
    set_every_held_pod_running(&agent);
    let phase = |name: &str| {
        let stored = store.list_pods().into_iter().find(|p| p.metadata.name.as_deref() == Some(name));
        stored.and_then(|p| p.status).and_then(|s| s.phase)
    };
    wait_until("both statuses are written", || {
        phase("web-a").as_deref() == Some("Running") && phase("web-b").as_deref() == Some("Running")
    });
    // Every request of the agent's client is in client-go's metrics: the watch's list
    // and the plugin's GETs, its status PUTs (counted once the client has the answer,
    // which may be a moment after the store holds the write).
    let host = server.url().trim_start_matches("http://").to_owned();
    let requests = |verb: &str| agent.metrics().rest_client_requests("200", verb, &host);
    wait_until("the GETs and PUTs counted", || requests("GET") >= 3 && requests("PUT") >= 2);

    let read = reader_of(&store);
    let clean = check(agent.handle(), agent.pod_manager(), &read);
    assert_eq!(clean.compared, 2, "{clean:?}");
    assert!(clean.differing.is_empty(), "{clean:?}");

    // Someone else writes web-b's status: the API server no longer holds the cache's.
    let mut tampered = store.list_pods().into_iter().find(|p| p.metadata.name.as_deref() == Some("web-b")).unwrap();
    tampered.status.as_mut().unwrap().phase = Some("Failed".into());
    store.put_pod(tampered).unwrap();
    let dirty = check(agent.handle(), agent.pod_manager(), &read);
    assert_eq!(dirty.compared, 2, "{dirty:?}");
    assert_eq!(dirty.differing.len(), 1, "{dirty:?}");
    assert_eq!(dirty.differing[0].pod, "sim/web-b");
    assert!(dirty.differing[0].detail.contains("phase"), "{}", dirty.differing[0].detail);
    assert!(dirty.differing[0].detail.contains("Failed"), "{}", dirty.differing[0].detail);

    // A reader that cannot find the pod: named too, never counted as equal.
    let nothing = |_: &str, _: &str| -> Result<Option<Pod>, OwnerError> { Ok(None) };
    let missing = check(agent.handle(), agent.pod_manager(), &nothing);
    assert_eq!(missing.differing.len(), 2, "{missing:?}");
    assert!(missing.differing.iter().all(|d| d.detail == "not in the API server"), "{missing:?}");
    agent.shutdown(Duration::from_secs(10));
}

/// Slot and generation from a simulated pod's name (`web-0003-1`).
fn slot_and_generation(name: &str) -> Option<(String, u32)> {
    let (rest, generation) = name.rsplit_once('-')?;
    let (_, slot) = rest.rsplit_once('-')?;
    Some((slot.to_owned(), generation.parse().ok()?))
}

#[test]
fn terminated_pods_are_deleted_by_the_status_manager_and_gone_from_the_store() {
    let server = server();
    let store = Arc::clone(server.store());
    // Every pod the store deletes, as it was last: the status manager deletes a pod only
    // once it has been marked for deletion and its status is final.
    let deleted: Arc<Mutex<Vec<Arc<Pod>>>> = Arc::default();
    let sink = Arc::clone(&deleted);
    store.subscribe(Box::new(move |event| {
        if let PodEvent::Deleted(pod) = event {
            sink.lock().unwrap().push(Arc::new(pod.pod().expect("a stored pod parses")));
        }
    }));

    let summary = run(simulation(Target::Url(server.url()), 8, 40.0, 4.0));
    assert!(summary.passed(), "{summary}");
    assert!(summary.pods_deleted > 0, "deleting churn deletes pods: {summary}");
    let delete_calls = summary.api_calls.get("delete").and_then(|o| o.get("Success")).copied().unwrap_or(0);
    assert!(delete_calls >= summary.pods_deleted, "{summary}");
    assert!(summary.pods_created > summary.pods as u64, "deleted pods were replaced: {summary}");

    let deleted = deleted.lock().unwrap();
    let by_status_manager: Vec<&Arc<Pod>> =
        deleted.iter().filter(|p| p.metadata.deletion_timestamp.is_some()).collect();
    assert!(
        by_status_manager.len() as u64 >= summary.pods_deleted,
        "{} graceful deletions finished in the store, {} counted",
        by_status_manager.len(),
        summary.pods_deleted
    );
    for pod in &by_status_manager {
        let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
        assert!(matches!(phase, Some("Succeeded" | "Failed")), "{:?} deleted in phase {phase:?}", pod.metadata.name);
    }

    // Gone from the store: no deleted pod is there, and no slot has two pods.
    let left: Vec<Pod> =
        store.list_pods().into_iter().filter(|p| p.metadata.namespace.as_deref() == Some("sim")).collect();
    for gone in deleted.iter() {
        assert!(
            !left.iter().any(|p| p.metadata.uid == gone.metadata.uid),
            "{:?} was deleted but is in the store",
            gone.metadata.name
        );
    }
    let mut slots = BTreeMap::<String, Vec<u32>>::new();
    for pod in &left {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let (slot, generation) = slot_and_generation(&name).unwrap_or_else(|| panic!("a simulated pod's name: {name}"));
        slots.entry(slot).or_default().push(generation);
    }
    assert!(slots.values().all(|g| g.len() == 1), "one pod per slot: {slots:?}");
    assert!(
        left.len() as u64 <= summary.pods_created - summary.pods_deleted,
        "{} pods left, {} created, {} deleted",
        left.len(),
        summary.pods_created,
        summary.pods_deleted
    );
}

#[test]
fn a_plugin_that_forgets_what_it_accepted_fails_the_check() {
    // The prober, told to forget (`podstatus.test/probe: forget`), accepts every status,
    // writes nothing, and then holds nothing: comparing the API server with what the
    // plugin claims to hold would find nothing to compare. The host's record of what it
    // accepted does.
    let (_server, store, agent) = agent_without_batch_syncs(podstatus_test_programs::PROBER, "the prober loads");

    let mut forgetful = pod("web-f", "uid-f");
    forgetful.metadata.annotations = Some([("podstatus.test/probe".to_owned(), "forget".to_owned())].into());
    store.create_pod(forgetful).unwrap();
    wait_until("the watch brings the pod", || agent.pod_manager().pods().len() == 1);
    set_every_held_pod_running(&agent);
    assert_eq!(agent.handle().get_pod_status("uid-f").unwrap(), None, "forgotten");

    let read = reader_of(&store);
    let checked = check(agent.handle(), agent.pod_manager(), &read);
    assert_eq!(checked.compared, 1, "{checked:?}");
    assert_eq!(checked.differing.len(), 1, "{checked:?}");
    assert_eq!(checked.differing[0].pod, "sim/web-f");
    assert!(checked.differing[0].detail.starts_with("accepted (and since forgotten)"), "{checked:?}");
    agent.shutdown(Duration::from_secs(10));
}

#[test]
fn the_agents_guard_decides_by_what_the_node_reported() {
    // The whole agent (kube-rs client, HTTP, watch, handle feeding the host's view) with
    // the prober: a forged IP and a force-delete of a running pod never reach the store;
    // the IP the node reported does.
    let (_server, store, agent) = agent_without_batch_syncs(podstatus_test_programs::PROBER, "the prober loads");

    let probing = |name: &str, uid: &str, probe: &str, ip: &str| {
        let mut pod = pod(name, uid);
        pod.metadata.annotations = Some(
            [("podstatus.test/probe".to_owned(), probe.to_owned()), ("podstatus.test/ip".to_owned(), ip.to_owned())]
                .into(),
        );
        pod
    };
    for pod in [
        probing("web-forged", "uid-forged", "forge-ip", "10.66.6.6"),
        probing("web-honest", "uid-honest", "forge-ip", "10.244.0.9"),
        probing("db-0", "uid-db", "delete", ""),
    ] {
        store.create_pod(pod).unwrap();
    }
    wait_until("the watch brings the pods", || agent.pod_manager().pods().len() == 3);
    set_every_held_pod_running(&agent);
    let probed = |uid: &str| {
        let cached = agent.handle().get_pod_status(uid).unwrap().expect("held");
        let status: serde_json::Value = serde_json::from_str(&cached.status).unwrap();
        status["message"].as_str().unwrap_or_default().to_owned()
    };
    wait_until("every probe ran", || {
        ["uid-forged", "uid-honest", "uid-db"].iter().all(|uid| probed(uid) != "not probed yet")
    });
    assert!(probed("uid-forged").starts_with("forbidden: "), "{}", probed("uid-forged"));
    assert!(probed("uid-db").contains("not being deleted"), "{}", probed("uid-db"));
    assert_eq!(probed("uid-honest"), "ok");
    let stored = |name: &str| {
        store.list_pods().into_iter().find(|p| p.metadata.name.as_deref() == Some(name)).expect("still there")
    };
    assert_eq!(stored("web-forged").status, None, "untouched");
    assert!(stored("db-0").metadata.deletion_timestamp.is_none(), "not deleted");
    let ip = stored("web-honest").status.and_then(|s| s.pod_ip);
    assert_eq!(ip.as_deref(), Some("10.244.0.9"));
    agent.shutdown(Duration::from_secs(10));
}

#[test]
fn an_added_api_latency_needs_the_embedded_server() {
    // The latency is the embedded server's doing: against another server (or a
    // cluster) it could not be applied, and silently running without it would report
    // figures that are not what was asked for.
    let server = server();
    let mut config = agent_config(Target::Url(server.url()));
    config.target.api_latency = Some(Duration::from_millis(20));
    let plugins = runtime();
    let image = plugins.load(PODSTATUS_V1).expect("v1 loads");
    let error = SimulatedNode::start(&config, plugins, image).err().expect("refused");
    assert!(matches!(error, SimulatedNodeError::LatencyNeedsEmbeddedServer), "{error}");
    assert!(error.to_string().contains("embedded API server"), "{error}");
}

#[test]
fn a_fleet_keeps_each_nodes_pods_on_its_node_and_every_status_in_the_api_server() {
    // Three nodes in one process on one connection and one pod watch: each node's pods
    // (named after its index) are bound to it and reach its plugin alone, each node
    // registers and renews its own Node and Lease, and the check holds for all of them.
    let server = server();
    let mut config = simulation(Target::Url(server.url()), 12, 30.0, 4.0);
    config.nodes = 3;
    config.static_pods = 1;
    config.agent.register_node = Some(NodeConfig::new(NODE));
    let summary = run(config);

    assert!(summary.passed(), "{summary}");
    assert!(summary.check.compared >= 3, "{summary}");
    let fleet = summary.fleet.as_ref().expect("a fleet reports its figures");
    assert_eq!((fleet.nodes, fleet.nodes_ready), (3, 3), "{summary}");
    assert!(fleet.lease_renewals >= 3, "every node renewed its Lease: {summary}");
    assert_eq!(summary.static_pods, 3, "one static pod per node: {summary}");
    let json = serde_json::to_value(&summary).expect("the summary serialises");
    assert_eq!(json["nodes"], 3, "the fleet's figures sit beside the others: {json}");

    let pods = server.store().list_pods();
    for i in 0..3 {
        let node = format!("{NODE}-{i}");
        let prefix = format!("n{i}-");
        let own: Vec<&Pod> =
            pods.iter().filter(|p| p.metadata.name.as_deref().is_some_and(|n| n.starts_with(&prefix))).collect();
        assert!(!own.is_empty(), "node {i} created pods");
        for pod in own {
            assert_eq!(pod.spec.as_ref().and_then(|s| s.node_name.as_deref()), Some(node.as_str()), "{pod:?}");
        }
        let mirror = format!("static-0-{node}");
        assert!(pods.iter().any(|p| p.metadata.name.as_deref() == Some(mirror.as_str())), "{mirror} exists");
        let stored = crate::raw_http::http(server.local_addr(), "GET", &format!("/api/v1/nodes/{node}"), &[], b"");
        assert_eq!(stored.json()["metadata"]["name"], node.as_str(), "node {i} registered");
    }
}

#[test]
fn hostile_plugins_in_a_fleet_are_contained_to_their_own_nodes() {
    // Honest nodes beside nodes whose plugin (the hostile adversary, told its attack by
    // an annotation of its nodes' pods) loops on an import, floods the log or amplifies
    // its imports: each hostile node faults within its own limits and its supervisor
    // recovers it, every node stays Ready, and the honest nodes' statuses all reach the
    // API server.
    use podstatus_simulate::NodeGroup;
    use podstatus_test_programs::ADVERSARY_HOSTILE;
    let limits = podstatus_runtime::Limits {
        call_cpu_time: Some(Duration::from_millis(200)),
        ..podstatus_runtime::Limits::default()
    };
    let plugins =
        PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), limits, ..RuntimeConfig::default() })
            .expect("runtime");
    let hostile = plugins.load(ADVERSARY_HOSTILE).expect("the adversary loads");
    let attack = |name: &str| NodeGroup {
        pod_annotations: BTreeMap::from([("a".to_owned(), format!("attack={name}"))]),
        logic: "adversary-hostile".into(),
        ..NodeGroup::new(name, 1, hostile.clone())
    };
    let groups = vec![
        NodeGroup::new("honest", 3, plugins.load(PODSTATUS_V1).expect("v1 loads")),
        attack("chatter"),
        attack("log-flood"),
        attack("amplify"),
    ];
    let server = server();
    let mut config = simulation(Target::Url(server.url()), 18, 40.0, 4.0);
    config.agent.register_node = Some(NodeConfig::new(NODE));
    config.static_pods = 0;
    let summary = podstatus_simulate::run_fleet(config, plugins, groups, &Signals::default(), &mut |_| {})
        .expect("the fleet runs");

    let fleet = summary.fleet.as_ref().expect("a fleet reports its figures");
    assert_eq!((fleet.nodes, fleet.nodes_ready), (6, 6), "{summary}");
    let by_name = |name: &str| fleet.groups.iter().find(|g| g.name == name).unwrap_or_else(|| panic!("{name}"));
    let honest = by_name("honest");
    assert_eq!((honest.nodes, honest.faults, honest.differing), (3, 0, 0), "{summary}");
    assert!(honest.compared >= 3, "{summary}");
    // The honest group's own metrics: its writes timed, nothing restored.
    assert_eq!(honest.recoveries, 0, "{summary}");
    assert!(honest.propagation_ms.count >= 3, "{summary}");
    for hostile in ["chatter", "log-flood", "amplify"] {
        assert!(by_name(hostile).faults > 0, "the {hostile} node faulted: {summary}");
    }
    // The CPU budget stops the chatter and a limit the amplifier, each a trap after
    // which the node's supervisor restores its instance.
    for trapped in ["chatter", "amplify"] {
        assert!(by_name(trapped).recoveries > 0, "the {trapped} node's supervisor restored it: {summary}");
    }
}
