//! Swaps and recoveries trust the host's record, not the plugin's word: a plugin whose
//! `save-state` or `save-state-changes` leaves out, alters or invents statuses
//! (`guests/liar`, the real logic with the glue's `lies` feature) hands over a state
//! that the host repairs from its own record of what the plugin accepted, on both
//! contracts and in both directions between them; an honest plugin's state is never
//! touched.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::{ApiServer, HostView, MemoryApiServer, VirtualClock};
use podstatus_plugins::{PODSTATUS_V1, PODSTATUS_V1_ON_0_1, PODSTATUS_V2};
use podstatus_runtime::bindings::{Timestamp, UpdateOutcome};
use podstatus_runtime::{CallError, Findings, ManagerHandle, Plugin, SchedulerConfig, SupervisedPlugin, World};
use podstatus_test_programs::{LIAR, LIAR_SPLIT};
use podstatus_tests::gated_api::GatedApiServer;
use podstatus_tests::{load, memory_world, running_status};
use serde_json::json;

/// The UID an `invent-…` pod makes the liar add (guest/glue/src/lies.rs).
const INVENTED_UID: &str = "uid-invented-by-the-plugin";
/// Failpoint IDs of guest/glue/src/failpoints.rs.
const NANOS_BASE: u32 = 999_000_000;
const GET_POD_STATUS: u32 = 1;

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{name}"), "name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}
    }))
    .unwrap()
}

/// A node's status manager over `plugin`, observed by a host view (the host's record).
struct Node {
    api: Arc<MemoryApiServer>,
    world: World,
    view: Arc<HostView>,
    manager: ManagerHandle,
    scheduler: podstatus_runtime::Scheduler,
}

impl Node {
    fn start(names: &[&str], plugin: impl FnOnce(&World) -> Box<dyn Plugin>) -> Node {
        let (api, world) = memory_world(names.iter().map(|name| pod(name)), false, 1000);
        Node::over(api, world, plugin)
    }

    fn over(api: Arc<MemoryApiServer>, world: World, plugin: impl FnOnce(&World) -> Box<dyn Plugin>) -> Node {
        let config = SchedulerConfig { sync_period: Duration::from_secs(3600), ..SchedulerConfig::default() };
        let (manager, scheduler) = ManagerHandle::start(plugin(&world), world.queue.clone(), config);
        let view = Arc::new(HostView::new(world.deletion_safety.clone()));
        assert!(manager.observe(view.clone()));
        Node { api, world, view, manager, scheduler }
    }

    fn set(&self, name: &str, restarts: u64) -> Result<UpdateOutcome, CallError> {
        self.manager.set_pod_status(&serde_json::to_string(&pod(name)).unwrap(), &running_status(restarts))
    }

    /// Every pod's status in the plugin is the one the host recorded it accepted, the
    /// invented pod has none, and once synced the API server holds each of them.
    fn assert_holds_the_record(self, names: &[&str]) {
        for name in names {
            let uid = format!("uid-{name}");
            let held = self.manager.get_pod_status(&uid).unwrap().unwrap_or_else(|| panic!("{uid}: a status"));
            let recorded = self.view.accepted(&uid).expect("recorded");
            assert_eq!((held.version, held.status), (recorded.version, recorded.status), "{uid}");
        }
        assert_eq!(self.manager.get_pod_status(INVENTED_UID).unwrap(), None, "the invented status is gone");
        self.manager.sync_batch().unwrap();
        assert_eq!(self.scheduler.shutdown(Duration::from_secs(10)), 0);
        for name in names {
            let status = self.api.get_pod("default", name).unwrap().status.clone().expect("written");
            assert_eq!(status.phase.as_deref(), Some("Running"), "{name}");
        }
    }
}

fn unsupervised(bytes: &'static [u8]) -> impl FnOnce(&World) -> Box<dyn Plugin> {
    move |world| Box::new(load(bytes).instantiate(world.clone()).unwrap())
}

fn supervised(bytes: &'static [u8]) -> impl FnOnce(&World) -> Box<dyn Plugin> {
    move |world| Box::new(SupervisedPlugin::new(load(bytes), world.clone()).unwrap())
}

/// The pods of one lie each, told in `channel` (`""`: both), and an honest one.
fn liars(channel: &str) -> Vec<String> {
    let mut names: Vec<String> =
        ["omit", "alter", "invent"].iter().map(|lie| format!("{lie}-{channel}{lie}")).collect();
    names.push("honest".into());
    names
}

/// Swaps from `liar` (every pod's status handed over first) to `honest` and checks
/// what the swap repaired and that the new plugin holds the host's record.
fn swap_away(liar: &'static [u8], honest: &'static [u8], channel: &str) -> Findings {
    let names = liars(channel);
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let node = Node::start(&names, unsupervised(liar));
    for name in &names {
        node.set(name, 1).unwrap();
    }
    let report = node.manager.swap(Box::new(load(honest).instantiate(node.world.clone()).unwrap())).expect("swapped");
    assert_ne!(report.from, report.to, "across contracts");
    node.assert_holds_the_record(&names);
    report.repaired
}

fn assert_found_every_lie(repaired: &Findings, channel: &str) {
    assert_eq!(repaired.missing, [format!("uid-omit-{channel}omit")], "{repaired:?}");
    assert_eq!(repaired.altered, [format!("uid-alter-{channel}alter")], "{repaired:?}");
    assert_eq!(repaired.invented, [INVENTED_UID], "{repaired:?}");
}

#[test]
fn a_swap_from_a_plugin_whose_state_lies_hands_the_new_one_the_hosts_record_0_1_to_0_2() {
    for channel in ["", "in-state-", "in-changes-"] {
        assert_found_every_lie(&swap_away(LIAR, PODSTATUS_V2, channel), channel);
    }
}

#[test]
fn a_swap_from_a_plugin_whose_state_lies_hands_the_new_one_the_hosts_record_0_2_to_0_1() {
    for channel in ["", "in-state-", "in-changes-"] {
        assert_found_every_lie(&swap_away(LIAR_SPLIT, PODSTATUS_V1_ON_0_1, channel), channel);
    }
}

/// Contract 0.2.0 with syncs in flight: every sync waits at the API server while the
/// swap starts; the swap lets them finish on the liar, then repairs the new plugin from
/// the record as before.
#[test]
fn a_swap_from_a_lying_0_2_plugin_with_syncs_in_flight_repairs_from_the_record() {
    let names = liars("");
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (api, mut world) = memory_world(names.iter().map(|name| pod(name)), false, 1000);
    let gate = GatedApiServer::new(api.clone());
    world.api_server = gate.clone();
    let node = Node::over(api, world, unsupervised(LIAR_SPLIT));
    for name in &names {
        node.set(name, 1).unwrap();
    }
    assert!(gate.wait_in_flight(1, Duration::from_secs(20)), "a sync waits at the API server");
    let swapper = {
        let (manager, new) = (node.manager.clone(), load(PODSTATUS_V1_ON_0_1).instantiate(node.world.clone()).unwrap());
        std::thread::spawn(move || manager.swap(Box::new(new)))
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(!swapper.is_finished(), "the swap waits for the syncs in flight");
    gate.open();
    let report = swapper.join().unwrap().expect("swapped");
    assert_found_every_lie(&report.repaired, "");
    node.assert_holds_the_record(&names);
}

/// Under supervision the plugin's change sets build the supervisor's copy of its state,
/// which a swap hands over: lies told only there are repaired from the record too. A
/// change set that drops the very status its call accepted is refused at the call.
#[test]
fn a_supervised_plugin_lying_in_its_change_sets_is_repaired_at_the_swap() {
    let names = ["honest", "alter-in-changes-alter", "invent-in-changes-invent", "omit-in-changes-omit"];
    let node = Node::start(&names, supervised(LIAR_SPLIT));
    for name in &names[..3] {
        node.set(name, 1).unwrap();
    }
    let alone = Node::start(&["omit-in-changes-omit"], supervised(LIAR_SPLIT));
    let refused = alone.set("omit-in-changes-omit", 1).unwrap_err();
    assert!(refused.to_string().contains("contradicts the call's answer"), "{refused}");
    alone.scheduler.shutdown(Duration::from_secs(5));
    // With other lies in the change set, the drop rides along unnoticed by the call.
    node.set("omit-in-changes-omit", 1).unwrap();

    let report = node.manager.swap(Box::new(load(PODSTATUS_V1).instantiate(node.world.clone()).unwrap())).unwrap();
    assert_found_every_lie(&report.repaired, "in-changes-");
    node.assert_holds_the_record(&names);
}

/// A recovery loads the supervisor's copy, built from the plugin's change sets, into a
/// fresh instance: held against the host's record first, so the restored instance
/// holds what was accepted and nothing invented.
#[test]
fn a_recovery_after_a_fault_restores_the_hosts_record_not_the_lies_in_the_change_sets() {
    let names = ["honest", "alter-in-changes-alter", "invent-in-changes-invent"];
    let (api, mut world) = memory_world(names.iter().map(|name| pod(name)), false, 1000);
    let clock = Arc::new(VirtualClock::new(Timestamp { seconds: 1_800_000_000, nanoseconds: 0 }));
    world.clock = clock.clone();
    let node = Node::over(api, world, supervised(LIAR));
    for name in names {
        node.set(name, 1).unwrap();
    }
    let uid = "uid-alter-in-changes-alter";
    clock.set(Timestamp { seconds: 1_800_000_001, nanoseconds: NANOS_BASE + GET_POD_STATUS });
    assert!(matches!(node.manager.get_pod_status(uid), Err(CallError::Fault { .. })), "the failpoint traps");
    clock.set(Timestamp { seconds: 1_800_000_002, nanoseconds: 0 });
    node.assert_holds_the_record(&names);
}

/// An honest plugin's state is the host's record, under concurrent callers and with
/// statuses the plugin dropped as it should (a pod it deleted from the API server).
#[test]
fn an_honest_swap_repairs_nothing_even_under_load_and_after_a_deletion() {
    let names: Vec<String> = (0..12).map(|i| format!("pod-{i}")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let (api, world) = memory_world(names.iter().map(|name| pod(name)), true, 1000);
    let node = Node::over(api, world, supervised(PODSTATUS_V1_ON_0_1));
    for name in &names {
        node.set(name, 1).unwrap();
    }
    // Every status written first: a request still running would see pod-0 being
    // deleted and delete it before it is terminated.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while names.iter().any(|name| node.api.get_pod("default", name).map_or(true, |pod| pod.status.is_none())) {
        assert!(std::time::Instant::now() < deadline, "every status is written");
        std::thread::sleep(Duration::from_millis(5));
    }
    // pod-0 is terminated, written and deleted: its status and its record go.
    let mut gone = pod("pod-0");
    gone.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()));
    node.api.put_pod(gone.clone()).unwrap();
    node.manager.terminate_pod(&serde_json::to_string(&gone).unwrap()).unwrap();
    // The scheduler syncs the request, which deletes the pod; the sync's outcome, once
    // it returns, takes the record with it (the API server sees the deletion first).
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while node.api.get_pod("default", "pod-0").is_ok() || node.view.accepted("uid-pod-0").is_some() {
        assert!(std::time::Instant::now() < deadline, "pod-0 is deleted and its record went with it");
        std::thread::sleep(Duration::from_millis(5));
    }

    let writers: Vec<_> = (1..4)
        .map(|t| {
            let manager = node.manager.clone();
            let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
            std::thread::spawn(move || {
                for round in 2..40 {
                    for name in names.iter().skip(t).step_by(3) {
                        manager
                            .set_pod_status(&serde_json::to_string(&pod(name)).unwrap(), &running_status(round))
                            .unwrap();
                    }
                }
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(20));
    let report = node.manager.swap(Box::new(load(PODSTATUS_V2).instantiate(node.world.clone()).unwrap())).unwrap();
    writers.into_iter().for_each(|w| w.join().unwrap());
    assert!(report.repaired.is_empty(), "{:?}", report.repaired);
    node.assert_holds_the_record(&names[1..]);
}
