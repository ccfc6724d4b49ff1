//! What crosses a fleet's pod watches (issue 51): a shard of a fleet, watching each of
//! its nodes' pods apart (`WatchScope::PerNode`, as every kubelet watches), is sent
//! its own nodes' pods alone; one shared watch of every pod is sent the whole
//! cluster's. Counted by the embedded server as it sends each pod event.

use std::sync::Arc;
use std::time::Duration;

use podstatus_agent::fleet::{FleetGroup, FleetSpec};
use podstatus_agent::node::WatchScope;
use podstatus_agent::{Fleet, Target};
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::MemoryApiServer;
use podstatus_backends::testing::{self, pod};
use podstatus_plugins::LogicVersion;
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_tests::cache_dir;

const PREFIX: &str = "watched";
/// Pods created on the nodes of other shards while this one runs.
const FOREIGN_PODS: usize = 20;

/// The pod events the server sent on watches after the shard of nodes 1 and 3 (of
/// 0..3) started: `FOREIGN_PODS` pods created on nodes 0 and 2, then one on node 1,
/// counted once the shard's pod manager of node 1 has that last one.
fn events_sent_to_a_shard(scope: WatchScope) -> usize {
    let options = ServeOptions {
        max_connections: ServeOptions::default().max_connections + Fleet::connections(2, scope),
        ..ServeOptions::default()
    };
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    let server = EmbeddedApiServer::start_with(Arc::clone(&store), "127.0.0.1:0".parse().expect("addr"), options)
        .expect("the embedded server starts");
    let plugins = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() })
        .expect("runtime");
    let version = LogicVersion::ALL[0];
    let image = plugins.load(version.component()).expect("the plugin loads");
    let config = podstatus_tests::agent_config(PREFIX, ());
    let spec = FleetSpec {
        groups: vec![FleetGroup::new("all", 2, image, version.name())],
        per_node_labels: false,
        numbers: Some(vec![1, 3]),
        watch: scope,
    };
    let fleet = Fleet::start(&Target::Url(server.url()), &config, spec, &plugins, &|_, api| api, &mut |_| {})
        .expect("the shard starts");
    let before = server.stats().pod_watch_events;

    for i in 0..FOREIGN_PODS {
        let node = format!("{PREFIX}-{}", 2 * (i % 2));
        store.create_pod(pod(&format!("foreign-{i}"), &format!("uf{i}")).node(&node).build()).expect("created");
    }
    store.create_pod(pod("own", "own").node(&format!("{PREFIX}-1")).build()).expect("created");
    let node_1 = Arc::clone(fleet.agents()[0].pod_manager());
    testing::wait_until("node 1 has its pod", Duration::from_secs(60), Duration::from_millis(20), || {
        node_1.get_pod_by_uid("own").is_some()
    });
    // Events of one watch are sent in write order: the last pod's event is sent after
    // every event that watch was to be sent of the others. Counted just after sending.
    std::thread::sleep(Duration::from_millis(200));
    let sent = server.stats().pod_watch_events - before;
    let held: Vec<Vec<String>> = fleet.agents().iter().map(|agent| agent.pod_manager().uids()).collect();
    assert_eq!(held, [vec!["own".to_owned()], vec![]], "nodes 1 and 3 hold their own pods alone, either way");
    fleet.shutdown(Duration::from_secs(10));
    sent
}

#[test]
fn a_shard_watching_per_node_is_sent_its_own_nodes_pods_alone() {
    assert_eq!(events_sent_to_a_shard(WatchScope::PerNode), 1, "only its own node's pod crossed");
}

#[test]
fn a_shared_watch_is_sent_every_pod_of_the_cluster() {
    assert_eq!(events_sent_to_a_shard(WatchScope::Shared), FOREIGN_PODS + 1);
}
