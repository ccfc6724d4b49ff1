//! Contract 0.2.0 through the real host: a plugin is never entered while an API call is
//! out, so many pods' syncs overlap, callers are served while every call waits, syncs of
//! one pod keep their order, and a hot swap with syncs in flight loses and doubles
//! nothing. The API server holds every call at a gate the test opens, so each claim is
//! a count, not a timing.

use std::sync::Arc;
use std::time::Duration;

use podstatus_backends::{ApiServer, MemoryApiServer};
use podstatus_plugins::{PODSTATUS_V1_ON_0_1, PODSTATUS_V2};
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{Contract, ManagerHandle, SchedulerConfig, World};
use podstatus_tests::gated_api::GatedApiServer;
use podstatus_tests::{load, numbered_pod, running_status, v2_image};
use serde_json::Value;

const WAIT: Duration = Duration::from_secs(20);

/// A world of `pods` pods whose API server holds every call at a closed gate.
fn gated_world(pods: usize) -> (Arc<MemoryApiServer>, Arc<GatedApiServer>, World) {
    let (store, mut world) = podstatus_tests::memory_world((0..pods).map(numbered_pod), true, 10_000);
    let gate = GatedApiServer::new(store.clone());
    world.api_server = gate.clone();
    (store, gate, world)
}

fn restarts_in_api(store: &MemoryApiServer, i: usize) -> Option<u64> {
    let pod = store.get_pod("default", &format!("pod-{i}")).ok()?;
    let status = serde_json::to_value(pod.status.as_ref()?).ok()?;
    status.pointer("/containerStatuses/0/restartCount").and_then(Value::as_u64)
}

fn pod_json(i: usize) -> String {
    serde_json::to_string(&numbered_pod(i)).unwrap()
}

/// Waits until `check` holds, at most [`WAIT`].
fn eventually(what: &str, check: impl Fn() -> bool) {
    let deadline = std::time::Instant::now() + WAIT;
    while !check() {
        assert!(std::time::Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn syncs_of_many_pods_overlap_and_callers_are_served_while_every_call_waits() {
    const PODS: usize = 12;
    let (store, gate, world) = gated_world(PODS);
    assert_eq!(v2_image().contract(), Contract::V0_2_0);
    let plugin = v2_image().instantiate(world.clone()).unwrap();
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());

    for i in 0..PODS {
        assert_eq!(manager.set_pod_status(&pod_json(i), &running_status(1)).unwrap(), UpdateOutcome::Queued);
    }
    // Logic v2 queues one request, whose pass plans a sync of every pod: each asks for
    // its GET, and all of them wait at the gate together.
    assert!(gate.wait_in_flight(PODS, WAIT), "only {} calls in flight", gate.in_flight());

    // Every call is out, and the plugin still serves the node's side.
    for i in 0..PODS {
        let cached = manager.get_pod_status(&format!("uid-{i:04}")).unwrap().expect("cached");
        assert_eq!(cached.version, 1);
        assert_eq!(manager.set_pod_status(&pod_json(i), &running_status(2)).unwrap(), UpdateOutcome::Queued);
    }
    assert_eq!(gate.in_flight(), PODS, "no second call of a pod while its first is out");

    gate.open();
    eventually("every pod's newest status is in the API server", || {
        (0..PODS).all(|i| restarts_in_api(&store, i) == Some(2))
    });
    assert_eq!(scheduler.shutdown(WAIT), 0);
    assert!(gate.max_in_flight() >= PODS, "calls overlapped: {}", gate.max_in_flight());
    assert_eq!(gate.max_per_pod(), 1, "never two calls of one pod at once");
}

#[test]
fn handles_sharing_a_call_pool_keep_their_own_limit_and_the_pool_caps_them_all() {
    // Two nodes' handles, each allowed 3 calls at once, on a pool of 4 threads: every
    // call waits at its node's gate, so what is in flight is what the limits allow.
    const PODS: usize = 8;
    let pool = podstatus_runtime::CallPool::new(4).expect("a pool starts");
    let config = SchedulerConfig { max_calls_in_flight: 3, call_pool: Some(pool), ..SchedulerConfig::default() };
    let nodes: Vec<_> = (0..2)
        .map(|_| {
            let (store, gate, world) = gated_world(PODS);
            let plugin = v2_image().instantiate(world.clone()).unwrap();
            let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config.clone());
            for i in 0..PODS {
                assert_eq!(manager.set_pod_status(&pod_json(i), &running_status(1)).unwrap(), UpdateOutcome::Queued);
            }
            (store, gate, manager, scheduler)
        })
        .collect();
    let in_flight = || nodes.iter().map(|(_, gate, _, _)| gate.in_flight()).sum::<usize>();
    eventually("the pool's four threads are all in a call", || in_flight() == 4);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(in_flight(), 4, "no fifth call while four are out");
    for (_, gate, _, _) in &nodes {
        assert!(gate.in_flight() <= 3, "a node past its own limit: {}", gate.in_flight());
    }

    for (_, gate, _, _) in &nodes {
        gate.open();
    }
    for (store, gate, _, scheduler) in nodes {
        eventually("every pod's status is in its node's API server", || {
            (0..PODS).all(|i| restarts_in_api(&store, i) == Some(1))
        });
        assert_eq!(scheduler.shutdown(WAIT), 0);
        assert!(gate.max_in_flight() <= 3, "a node's calls past its limit: {}", gate.max_in_flight());
    }
}

#[test]
fn a_pods_later_versions_wait_behind_its_sync_and_coalesce() {
    let (store, gate, world) = gated_world(1);
    let plugin = v2_image().instantiate(world.clone()).unwrap();
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());

    manager.set_pod_status(&pod_json(0), &running_status(1)).unwrap();
    assert!(gate.wait_in_flight(1, WAIT));
    // Four newer versions while the first sync's GET is out: each queues a request
    // whose sync of the pod must wait behind the one in flight.
    for restarts in 2..=5 {
        manager.set_pod_status(&pod_json(0), &running_status(restarts)).unwrap();
    }
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(gate.in_flight(), 1, "the later syncs wait; nothing else of the pod is sent");

    gate.open();
    eventually("the newest version is written", || restarts_in_api(&store, 0) == Some(5));
    assert_eq!(scheduler.shutdown(WAIT), 0);
    assert_eq!(gate.max_per_pod(), 1);
    assert!(gate.writes("pod-0") <= 2, "the waiting versions coalesced: {} writes", gate.writes("pod-0"));
}

#[test]
fn a_hot_swap_with_syncs_in_flight_loses_and_doubles_nothing_both_ways() {
    const PODS: usize = 8;
    let (store, gate, world) = gated_world(PODS);
    let plugin = v2_image().instantiate(world.clone()).unwrap();
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());
    for i in 0..PODS {
        manager.set_pod_status(&pod_json(i), &running_status(1)).unwrap();
    }
    assert!(gate.wait_in_flight(PODS, WAIT));

    // 0.2.0 to 0.1.0 while every sync waits on the API server: the swap lets them
    // finish on the old plugin, then hands over.
    let serial = load(PODSTATUS_V1_ON_0_1).instantiate(world.clone()).unwrap();
    let swapper = {
        let manager = manager.clone();
        std::thread::spawn(move || manager.swap(Box::new(serial)))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!swapper.is_finished(), "the swap waits for the syncs in flight");
    gate.open();
    let report = swapper.join().unwrap().expect("swapped");
    assert_eq!((report.from, report.to), (Contract::V0_2_0, Contract::V0_1_0));
    eventually("the first versions are written", || (0..PODS).all(|i| restarts_in_api(&store, i) == Some(1)));

    // 0.1.0 writes serially; then back to 0.2.0 while its syncs are queued.
    for i in 0..PODS {
        manager.set_pod_status(&pod_json(i), &running_status(2)).unwrap();
    }
    let overlapping = load(PODSTATUS_V2).instantiate(world.clone()).unwrap();
    let report = manager.swap(Box::new(overlapping)).expect("swapped back");
    assert_eq!((report.from, report.to), (Contract::V0_1_0, Contract::V0_2_0));
    for i in 0..PODS {
        manager.set_pod_status(&pod_json(i), &running_status(3)).unwrap();
    }
    eventually("the newest versions are written", || (0..PODS).all(|i| restarts_in_api(&store, i) == Some(3)));
    assert_eq!(scheduler.shutdown(WAIT), 0);
    for i in 0..PODS {
        let cached = manager.get_pod_status(&format!("uid-{i:04}")).unwrap().expect("cached");
        assert_eq!(cached.version, 3, "every accepted version counted once");
        assert!(gate.writes(&format!("pod-{i}")) <= 3, "no version written twice");
    }
    assert_eq!(gate.max_per_pod(), 1);
}
