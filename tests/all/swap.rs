//! Hot swap: the state moves to the new plugin under load, nothing is lost or runs
//! twice, and a new plugin that fails in any way leaves the old one serving.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use podstatus_backends::ApiServer;
use podstatus_backends::MemoryApiServer;
use podstatus_runtime::World;
use podstatus_runtime::{Contract, SwapError};
use podstatus_runtime::{ManagerHandle, SchedulerConfig};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_test_programs::{ADVERSARY_REFUSE_STATE, ADVERSARY_TRAP_ON_LOAD, ADVERSARY_TRAP_ON_SYNC, WRONG_CONTRACT};
use podstatus_tests::{cache_dir, numbered_pod, replay_component, running_status, v1_image};
use serde_json::json;

fn world(pods: usize) -> (Arc<MemoryApiServer>, World) {
    podstatus_tests::memory_world((0..pods).map(numbered_pod), false, 100_000)
}

fn runtime() -> PluginRuntime {
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).unwrap()
}

#[test]
fn a_swap_under_concurrent_callers_loses_nothing_and_runs_nothing_twice() {
    const PODS: usize = 40;
    let (api, world) = world(PODS);
    let (manager, scheduler) = ManagerHandle::start(
        Box::new(v1_image().instantiate(world.clone()).unwrap()),
        world.queue.clone(),
        SchedulerConfig::default(),
    );

    // Writers change every pod's status over and over; each accepted change is one
    // version, so the final version of a pod counts its accepted calls.
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let writers: Vec<_> = (0..3)
        .map(|t| {
            let (manager, stop, accepted) = (manager.clone(), stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                let mut round = 0;
                while !stop.load(Ordering::SeqCst) || round < 5 {
                    round += 1;
                    for i in (t..PODS).step_by(3) {
                        let json = serde_json::to_string(&numbered_pod(i)).unwrap();
                        manager.set_pod_status(&json, &running_status(round)).unwrap();
                        accepted.fetch_add(1, Ordering::SeqCst);
                    }
                }
                round
            })
        })
        .collect();

    std::thread::sleep(Duration::from_millis(30));
    let new = v1_image().instantiate(world.clone()).unwrap();
    let report = manager.swap(Box::new(new)).expect("the swap succeeds");
    assert!(report.pause <= report.total);
    stop.store(true, Ordering::SeqCst);
    let rounds: Vec<u64> = writers.into_iter().map(|w| w.join().unwrap()).collect();

    // Every accepted change is a version: none lost in the switch, none applied twice.
    let mut versions = 0;
    for i in 0..PODS {
        versions += manager.get_pod_status(&format!("uid-{i:04}")).unwrap().expect("cached").version;
    }
    assert_eq!(versions, accepted.load(Ordering::SeqCst));
    assert_eq!(versions, (0..PODS).map(|i| rounds[i % 3]).sum::<u64>());

    // Requests queued by the old plugin are handled by the new one; the API server ends
    // with every pod's latest status.
    manager.sync_batch().unwrap();
    assert_eq!(scheduler.shutdown(Duration::from_secs(10)), 0);
    for i in 0..PODS {
        let restarts =
            api.get_pod("default", &format!("pod-{i}")).unwrap().status.clone().unwrap().container_statuses.unwrap()[0]
                .restart_count;
        assert_eq!(restarts as u64, rounds[i % 3], "pod {i}");
    }
}

#[test]
fn a_failing_new_plugin_leaves_the_old_one_serving() {
    let runtime = runtime();
    let (_, world) = world(3);
    let (manager, _scheduler) = ManagerHandle::start(
        Box::new(v1_image().instantiate(world.clone()).unwrap()),
        world.queue.clone(),
        SchedulerConfig::default(),
    );
    for i in 0..3 {
        manager.set_pod_status(&serde_json::to_string(&numbered_pod(i)).unwrap(), &running_status(1)).unwrap();
    }

    let cases: [(&str, &[u8]); 3] = [
        ("traps when handed the state", ADVERSARY_TRAP_ON_LOAD),
        ("refuses the state", ADVERSARY_REFUSE_STATE),
        ("says ok but keeps nothing", ADVERSARY_TRAP_ON_SYNC),
    ];
    for (what, bytes) in cases {
        let new = runtime.load(bytes).unwrap().instantiate(world.clone()).unwrap();
        let err = manager.swap(Box::new(new)).expect_err(what);
        assert!(matches!(err, SwapError::Refused(_)), "{what}: {err}");
        assert_eq!(manager.get_pod_status("uid-0002").unwrap().unwrap().version, 1, "{what}: the old plugin serves");
    }

    // A plugin of another contract version never gets as far as an instance.
    let err = runtime.load(WRONG_CONTRACT).err().expect("refused");
    assert!(matches!(err, podstatus_runtime::LoadError::WrongWorld(_)), "{err}");

    assert_eq!(
        manager.set_pod_status(&serde_json::to_string(&numbered_pod(0)).unwrap(), &running_status(2)).unwrap(),
        podstatus_runtime::bindings::UpdateOutcome::Queued
    );
}

fn v1_plugin_file() -> PathBuf {
    podstatus_tests::workspace_dir().join("target").join("guest").join("podstatus-v1-on-0-1.wasm")
}

#[test]
fn replay_swaps_in_the_middle_of_every_kind_of_operation_without_changing_the_outcome() {
    let trace: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(podstatus_tests::fixtures_dir().join("replay/upstream-static-pod.trace.json"))
            .unwrap(),
    )
    .unwrap();
    let steps = trace["steps"].as_array().unwrap().clone();
    let swap = json!({"op": "swap", "plugin": v1_plugin_file()});
    let mut with_swaps = trace.clone();
    with_swaps["steps"] = steps.iter().flat_map(|s| [s.clone(), swap.clone()]).collect();

    let base = podstatus_tests::fixtures_dir().join("replay");
    let plain = replay_component(&trace.to_string(), &base).unwrap().report;
    let swapped = replay_component(&with_swaps.to_string(), &base).unwrap().report;
    // Every swap succeeded, and apart from those results the report is the same.
    let swap_results: Vec<_> = swapped.results.iter().skip(1).step_by(2).collect();
    assert!(swap_results.iter().all(|r| **r == json!({"swapped": true})), "{swap_results:?}");
    let other_results: Vec<_> = swapped.results.iter().step_by(2).cloned().collect();
    assert_eq!(other_results, plain.results);
    let calls = |report: &podstatus_replay::Report| -> Vec<(String, String, String)> {
        report.calls.iter().map(|c| (c.verb.to_string(), c.name.clone(), c.outcome.to_string())).collect()
    };
    assert_eq!(calls(&swapped), calls(&plain));
    assert_eq!(serde_json::to_value(&swapped.apiserver).unwrap(), serde_json::to_value(&plain.apiserver).unwrap());
}

#[test]
fn a_refused_swap_in_replay_is_recorded_and_the_old_plugin_serves_on() {
    let trace = json!({
        "pod_manager": [numbered_pod(1)], "apiserver": [numbered_pod(1)],
        "steps": [
            {"op": "set-pod-status", "pod": "uid-0001", "status": serde_json::from_str::<serde_json::Value>(&running_status(1)).unwrap()},
            {"op": "swap", "plugin": "does-not-exist.wasm"},
            {"op": "get-pod-status", "uid": "uid-0001"}
        ]
    });
    let report = replay_component(&trace.to_string(), &podstatus_tests::fixtures_dir()).unwrap().report;
    assert_eq!(report.results[1]["swapped"], false);
    assert!(report.results[1]["error"].as_str().unwrap().contains("does-not-exist.wasm"));
    assert_eq!(report.results[2]["version"], 1);
}

#[test]
fn supervised_plugins_swap_both_ways_between_logic_versions() {
    use podstatus_runtime::SupervisedPlugin;
    let runtime = runtime();
    // Across contracts too: logic v1 built for 0.1.0, logic v2 for 0.2.0.
    let v1 = runtime.load(podstatus_plugins::PODSTATUS_V1_ON_0_1).unwrap();
    let v2 = runtime.load(podstatus_plugins::PODSTATUS_V2).unwrap();
    assert_eq!((v1.contract(), v2.contract()), (Contract::V0_1_0, Contract::V0_2_0));
    let (api, world) = world(6);
    let (manager, scheduler) = ManagerHandle::start(
        Box::new(SupervisedPlugin::new(v1.clone(), world.clone()).unwrap()),
        world.queue.clone(),
        SchedulerConfig::default(),
    );
    for i in 0..6 {
        manager.set_pod_status(&serde_json::to_string(&numbered_pod(i)).unwrap(), &running_status(1)).unwrap();
    }
    let report = manager.swap(Box::new(SupervisedPlugin::new(v2.clone(), world.clone()).unwrap())).unwrap();
    assert_eq!((report.from, report.to), (Contract::V0_1_0, Contract::V0_2_0));
    assert_eq!(manager.contract().package(), "kubelet:status@0.2.0");
    // v2 goes on from v1's versions.
    for i in 0..3 {
        manager.set_pod_status(&serde_json::to_string(&numbered_pod(i)).unwrap(), &running_status(2)).unwrap();
    }
    let report = manager.swap(Box::new(SupervisedPlugin::new(v1, world.clone()).unwrap())).unwrap();
    assert_eq!(report.to, Contract::V0_1_0);
    for i in 0..6 {
        let cached = manager.get_pod_status(&format!("uid-{i:04}")).unwrap().expect("kept across both swaps");
        assert_eq!(cached.version, if i < 3 { 2 } else { 1 }, "pod {i}");
    }
    manager.sync_batch().unwrap();
    assert_eq!(scheduler.shutdown(Duration::from_secs(10)), 0);
    for i in 0..6 {
        let restarts =
            api.get_pod("default", &format!("pod-{i}")).unwrap().status.clone().unwrap().container_statuses.unwrap()[0]
                .restart_count;
        assert_eq!(restarts, if i < 3 { 2 } else { 1 }, "pod {i}");
    }
}

fn v2_plugin_file() -> PathBuf {
    podstatus_tests::workspace_dir().join("target").join("guest").join("podstatus-v2-on-0-1.wasm")
}

/// v2 marks a status from terminate-pod as finished (upstream's `podIsFinished`) and
/// deletes a pod only with such a status. The mark lives in the state document: v1
/// carries it through a swap, and through its own new versions of the status, so v2
/// still deletes the pod after v2 -> v1 -> v2 in the middle of its termination.
#[test]
fn a_pod_terminated_by_v2_is_still_deleted_after_v2_to_v1_to_v2() {
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": "uid-term", "name": "term-0", "namespace": "default",
                     "deletionTimestamp": "2026-01-01T00:00:00Z", "deletionGracePeriodSeconds": 30},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]},
        "status": {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
    });
    let failed = json!({"phase": "Failed", "startTime": "2026-01-01T00:00:00Z",
        "containerStatuses": [{"name": "app", "image": "app:1", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                "message": "The container could not be located when the pod was terminated"}}}]});
    let steps = |swap_to_v1: bool| {
        let mut steps = vec![
            // A container may still run: v2 holds the terminal phase back.
            json!({"op": "terminate-pod", "pod": "uid-term"}),
            json!({"op": "sync"}),
        ];
        if swap_to_v1 {
            steps.extend([
                json!({"op": "swap", "plugin": v1_plugin_file()}),
                // v1 makes a version of its own (the pod is being deleted: forced) and
                // writes it; it deletes nothing while resources are not reclaimed.
                json!({"op": "set-pod-status", "pod": "uid-term", "status": failed}),
                json!({"op": "sync"}),
                json!({"op": "swap", "plugin": v2_plugin_file()}),
            ]);
        }
        steps.extend([json!({"op": "set-deletion-safe", "value": true}), json!({"op": "sync-batch"})]);
        steps
    };
    let trace = |swap_to_v1: bool| {
        json!({"deletion_safe": false, "apiserver": [pod], "pod_manager": [pod], "steps": steps(swap_to_v1)})
            .to_string()
    };
    let base = podstatus_tests::fixtures_dir();
    for swap_to_v1 in [false, true] {
        let report = podstatus_tests::replay_component_v2(&trace(swap_to_v1), &base).unwrap().report;
        let report = serde_json::to_value(&report).unwrap();
        assert_eq!(report["fault"], serde_json::Value::Null);
        let verbs: Vec<(u64, &str)> = report["calls"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| (c["step"].as_u64().unwrap(), c["verb"].as_str().unwrap()))
            .collect();
        let last = report["results"].as_array().unwrap().len() as u64 - 1;
        if swap_to_v1 {
            assert_eq!(report["results"][2], json!({"swapped": true}));
            assert_eq!(report["results"][5], json!({"swapped": true}));
            // v1 wrote its version (with the terminal phase) and deleted nothing.
            assert!(verbs.contains(&(4, "update")), "{verbs:?}");
            assert!(!verbs.iter().any(|(step, verb)| *step < last && *verb == "delete"), "{verbs:?}");
        }
        assert_eq!(verbs.last(), Some(&(last, "delete")), "swap to v1: {swap_to_v1}: {verbs:?}");
        assert_eq!(report["apiserver"], json!([]), "swap to v1: {swap_to_v1}");
    }
}

/// The finished mark travels with the state the host moves: the supervisor's copy (what
/// recovery loads) has it after terminate-pod, the swap's check demands it of the new
/// plugin, and supervised v2 -> v1 -> v2 in the middle of a termination still deletes.
#[test]
fn supervised_swaps_and_the_recovery_copy_carry_the_finished_mark() {
    use podstatus_runtime::{Plugin, PluginExt, SupervisedPlugin};
    use podstatus_runtime::{move_bulk, move_changes};

    let runtime = runtime();
    let v1 = runtime.load(podstatus_plugins::PODSTATUS_V1).unwrap();
    let v2 = runtime.load(podstatus_plugins::PODSTATUS_V2).unwrap();
    let mut terminating = numbered_pod(7);
    terminating.metadata.deletion_timestamp =
        Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time("2026-01-01T00:00:00Z".parse().unwrap()));
    let pod_json = serde_json::to_string(&terminating).unwrap();
    // Resources not reclaimed, containers may run: v2 holds the terminal phase back.
    let (api, world) = podstatus_tests::memory_world([terminating], false, 100);
    let drain = |plugin: &mut dyn Plugin| {
        for request in world.queue.drain() {
            plugin.sync_pod(&request).unwrap();
        }
    };
    let finished = |document: &str| -> serde_json::Value {
        let document: serde_json::Value = serde_json::from_str(document).unwrap();
        document["statuses"]["uid-0007"]["podIsFinished"].clone()
    };

    let mut first = SupervisedPlugin::new(v2.clone(), world.clone()).unwrap();
    first.terminate_pod(&pod_json).unwrap();
    drain(&mut first);
    assert_eq!(finished(&first.accepted_state()), true, "the recovery copy has the mark");
    assert!(api.get_pod("default", "pod-7").is_ok(), "not terminal in the API server yet");

    // v2 -> v1: v1 makes a version of its own (forced: the pod is being deleted) and
    // writes it, deleting nothing while resources are not reclaimed.
    let mut middle = SupervisedPlugin::new(v1, world.clone()).unwrap();
    move_bulk(&mut first, &mut middle).unwrap();
    move_changes(&mut first, &mut middle).unwrap();
    let status = json!({"phase": "Failed", "startTime": "2026-01-01T00:00:00Z"}).to_string();
    middle.set_pod_status(&pod_json, &status).unwrap();
    drain(&mut middle);
    assert_eq!(middle.get_pod_status("uid-0007").unwrap().unwrap().version, 2);
    assert_eq!(finished(&middle.accepted_state()), true, "v1 keeps the mark on its own version");
    assert!(api.get_pod("default", "pod-7").is_ok(), "v1 waits for the resources");

    // v1 -> v2: the mark is back, and the batch deletes the now Failed pod.
    let mut last = SupervisedPlugin::new(v2, world.clone()).unwrap();
    move_bulk(&mut middle, &mut last).unwrap();
    move_changes(&mut middle, &mut last).unwrap();
    assert_eq!(finished(&last.accepted_state()), true);
    last.sync_batch().unwrap();
    assert!(api.get_pod("default", "pod-7").is_err(), "deleted");
    assert_eq!(last.get_pod_status("uid-0007").unwrap(), None);
}

/// Logic v3 keeps what it last wrote for each pod (its next patch's base) in the state
/// document: v1 and v2 carry it untouched through swaps and their own writes, and once
/// either has written a newer version v3 no longer trusts it (it patches from the pod
/// manager's copy), so v3 -> v1 -> v2 -> v3 with writes in between leaves every pod's
/// latest status in the API server; the swaps go through the handle (and its check that
/// the new plugin holds the whole state, `lastWritten` included).
#[test]
fn logic_v3_swaps_both_ways_with_v1_and_v2_and_its_last_written_statuses_survive() {
    use podstatus_runtime::{PluginExt, SupervisedPlugin, move_bulk, move_changes};
    let runtime = runtime();
    let v1 = runtime.load(podstatus_plugins::PODSTATUS_V1).unwrap();
    let v2 = runtime.load(podstatus_plugins::PODSTATUS_V2).unwrap();
    let v3 = runtime.load(podstatus_plugins::PODSTATUS_V3).unwrap();
    assert_eq!(v3.contract(), Contract::V0_2_0);
    let restarts = |api: &MemoryApiServer, i: usize| {
        api.get_pod("default", &format!("pod-{i}")).unwrap().status.clone().unwrap().container_statuses.unwrap()[0]
            .restart_count
    };
    let last_written = |document: &str, i: usize| -> serde_json::Value {
        let document: serde_json::Value = serde_json::from_str(document).unwrap();
        document["statuses"][format!("uid-{i:04}")]["lastWritten"].clone()
    };

    // Directly: the supervisor's copy has v3's record, v1 and v2 hand it back as it is.
    let (api, small) = world(2);
    let mut first = SupervisedPlugin::new(v3.clone(), small.clone()).unwrap();
    first.set_pod_status(&serde_json::to_string(&numbered_pod(0)).unwrap(), &running_status(1)).unwrap();
    first.sync_batch().unwrap();
    let written = last_written(&first.accepted_state(), 0);
    assert_eq!((written["uid"].as_str(), written["version"].as_u64()), (Some("uid-0000"), Some(1)), "{written}");
    assert_eq!(restarts(&api, 0), 1);
    for older in [v1.clone(), v2.clone()] {
        let mut other = SupervisedPlugin::new(older, small.clone()).unwrap();
        move_bulk(&mut first, &mut other).unwrap();
        move_changes(&mut first, &mut other).unwrap();
        assert_eq!(last_written(&other.accepted_state(), 0), written, "carried untouched");
        assert_eq!(last_written(&other.save_state().unwrap(), 0), written, "and saved again");
        let mut back = SupervisedPlugin::new(v3.clone(), small.clone()).unwrap();
        move_bulk(&mut other, &mut back).unwrap();
        move_changes(&mut other, &mut back).unwrap();
        assert_eq!(last_written(&back.accepted_state(), 0), written);
        first = back;
    }

    // Through the handle, with writes by every version in between.
    let (api, world) = world(4);
    let (manager, scheduler) = ManagerHandle::start(
        Box::new(SupervisedPlugin::new(v3.clone(), world.clone()).unwrap()),
        world.queue.clone(),
        SchedulerConfig::default(),
    );
    let set = |pods: std::ops::Range<usize>, restarts: u64| {
        for i in pods {
            manager
                .set_pod_status(&serde_json::to_string(&numbered_pod(i)).unwrap(), &running_status(restarts))
                .unwrap();
        }
        manager.sync_batch().unwrap();
    };
    set(0..4, 1);
    for (plugin, pods, n) in [(v1, 0..2, 2), (v2, 1..3, 3), (v3, 0..1, 4)] {
        manager.swap(Box::new(SupervisedPlugin::new(plugin, world.clone()).unwrap())).unwrap();
        set(pods, n);
    }
    assert_eq!(scheduler.shutdown(Duration::from_secs(10)), 0);
    // pod 0: v1 wrote 2 over v3's record, then v3 wrote 4 (from the pod manager's copy).
    for (i, expected) in [(0, 4), (1, 3), (2, 3), (3, 1)] {
        assert_eq!(restarts(&api, i), expected, "pod {i}");
    }
}
