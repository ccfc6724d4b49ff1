//! Recovery with nothing lost: the real plugin, faulting on demand (the `failpoints`
//! build) in every Manager operation and in both sync paths, is restored by the
//! supervisor with every status it had accepted; nothing stale reaches the API server.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::ApiServer;
use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::VirtualClock;
use podstatus_runtime::World;
use podstatus_runtime::bindings::Timestamp;
use podstatus_runtime::bindings::{SyncStep, UpdateOutcome};
use podstatus_runtime::{CallError, PluginExt, PluginRuntime, RuntimeConfig, SupervisedPlugin};
use podstatus_test_programs::{FAILPOINTS, FAILPOINTS_SPLIT};
use podstatus_tests::cache_dir;
use serde_json::{Value, json};

/// Failpoint IDs of guest/glue/src/failpoints.rs.
const NANOS_BASE: u32 = 999_000_000;
const GET_POD_STATUS: u32 = 1;
const SET_POD_STATUS: u32 = 2;
const SET_CONTAINER_READINESS: u32 = 3;
const TERMINATE_POD: u32 = 4;
const REMOVE_ORPHANED_STATUSES: u32 = 5;
const SYNC_POD: u32 = 6;
const SYNC_BATCH: u32 = 7;
const SAVE_STATE_CHANGES: u32 = 8;
const START_SYNC: u32 = 9;
const RESUME_SYNC: u32 = 10;
const WRITE: u32 = 20;
const PUSH: u32 = 21;

const PODS: [&str; 4] = ["p0", "p1", "p2", "p3"];

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{name}"), "name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "side", "image": "side:1"}]}
    }))
    .unwrap()
}

fn status(phase: &str, ready: bool) -> String {
    let container = |name: &str| {
        json!({"name": name, "image": format!("{name}:1"), "imageID": "", "containerID": format!("containerd://{name}"),
               "ready": ready, "restartCount": 0, "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}})
    };
    json!({"phase": phase, "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
           "containerStatuses": [container("app"), container("side")]})
    .to_string()
}

struct Scene {
    api: Arc<MemoryApiServer>,
    clock: Arc<VirtualClock>,
    world: World,
    plugin: SupervisedPlugin,
}

impl Scene {
    fn new() -> Scene {
        Scene::of(FAILPOINTS)
    }

    fn of(plugin: &[u8]) -> Scene {
        let api = Arc::new(MemoryApiServer::new());
        let pod_manager = Arc::new(PodManager::new());
        for name in PODS {
            api.put_pod(pod(name)).unwrap();
            pod_manager.add_pod(pod(name));
        }
        pod_manager.follow_api_server(&api);
        let clock = Arc::new(VirtualClock::new(Timestamp { seconds: 1_800_000_000, nanoseconds: 0 }));
        let world = World {
            api_server: api.clone(),
            pod_manager,
            deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
            clock: clock.clone(),
            queue: Arc::new(SyncQueue::default()),
        };
        let runtime =
            PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache_dir()), ..RuntimeConfig::default() }).unwrap();
        let plugin = SupervisedPlugin::new(runtime.load(plugin).unwrap(), world.clone()).unwrap();
        Scene { api, clock, world, plugin }
    }

    fn set(&mut self, name: &str, phase: &str, ready: bool) -> Result<(), CallError> {
        self.plugin.set_pod_status(&serde_json::to_string(&pod(name)).unwrap(), &status(phase, ready)).map(drop)
    }

    /// A bit of everything: written statuses, queued ones, a readiness change.
    fn prelude(&mut self) {
        for name in PODS.iter().take(3) {
            self.set(name, "Pending", false).unwrap();
        }
        self.drain().unwrap();
        self.tick();
        self.set("p0", "Running", false).unwrap();
        self.set("p1", "Running", true).unwrap();
        self.plugin.set_container_readiness("uid-p2", "containerd://app", true).unwrap();
    }

    /// Moves to the next whole second, which disarms every failpoint.
    fn tick(&self) {
        let now = self.world.clock.now();
        self.clock.set(Timestamp { seconds: now.seconds + 1, nanoseconds: 0 });
    }

    fn arm(&self, id: u32) {
        let now = self.world.clock.now();
        self.clock.set(Timestamp { seconds: now.seconds + 1, nanoseconds: NANOS_BASE + id });
    }

    fn drain(&mut self) -> Result<(), CallError> {
        while let Some(request) = self.world.queue.pop() {
            self.plugin.sync_pod(&request)?;
        }
        Ok(())
    }

    /// Every pod's cached version and status.
    fn cache(&mut self) -> BTreeMap<String, (u64, Value)> {
        let mut cache = BTreeMap::new();
        for name in PODS {
            let uid = format!("uid-{name}");
            if let Some(c) = self.plugin.get_pod_status(&uid).unwrap() {
                cache.insert(uid, (c.version, serde_json::from_str(&c.status).unwrap()));
            }
        }
        cache
    }
}

type Action = fn(&mut Scene) -> Result<(), CallError>;

#[test]
fn a_fault_anywhere_loses_nothing_accepted_and_writes_nothing_stale() {
    let cases: [(&str, u32, Action); 11] = [
        ("get-pod-status", GET_POD_STATUS, |s| s.plugin.get_pod_status("uid-p0").map(drop)),
        ("set-pod-status", SET_POD_STATUS, |s| s.set("p3", "Running", true)),
        ("set-pod-status, after caching, before queuing", PUSH, |s| s.set("p3", "Running", true)),
        ("set-container-readiness", SET_CONTAINER_READINESS, |s| {
            s.plugin.set_container_readiness("uid-p0", "containerd://app", true).map(drop)
        }),
        ("terminate-pod", TERMINATE_POD, |s| {
            s.plugin.terminate_pod(&serde_json::to_string(&pod("p1")).unwrap()).map(drop)
        }),
        ("remove-orphaned-statuses", REMOVE_ORPHANED_STATUSES, |s| {
            s.plugin.remove_orphaned_statuses(&["uid-p0".into()]).map(drop)
        }),
        ("sync-pod, on entry", SYNC_POD, |s| s.drain()),
        ("sync-pod, between read and write", WRITE, |s| s.drain()),
        ("sync-batch, on entry", SYNC_BATCH, |s| s.plugin.sync_batch().map(drop)),
        ("sync-batch, before its first write", WRITE, |s| s.plugin.sync_batch().map(drop)),
        ("saving the changes of an accepted call", SAVE_STATE_CHANGES, |s| s.set("p3", "Running", true)),
    ];
    for (name, failpoint, action) in cases {
        let mut scene = Scene::new();
        scene.prelude();
        let before = scene.cache();
        let api_before: Vec<Pod> = scene.api.list_pods();

        scene.arm(failpoint);
        let result = action(&mut scene);
        scene.tick();
        assert!(matches!(result, Err(CallError::Fault { .. })), "{name}: expected a fault, got {result:?}");
        assert_eq!(scene.plugin.stats().recoveries, 1, "{name}: one recovery");

        // Everything accepted before the fault is still there, unchanged, and the
        // faulted call left nothing behind.
        assert_eq!(scene.cache(), before, "{name}: cache after recovery");
        if failpoint != WRITE {
            assert_eq!(scene.api.list_pods(), api_before, "{name}: the API server was not touched");
        }

        // Quiescence: the restored instance handles the queued requests and the batch.
        scene.drain().unwrap_or_else(|e| panic!("{name}: {e}"));
        scene.plugin.sync_batch().unwrap_or_else(|e| panic!("{name}: {e}"));
        for (uid, (_, cached)) in scene.cache() {
            let name_of = uid.trim_start_matches("uid-");
            let stored = scene.api.get_pod("default", name_of).unwrap();
            let api_status = serde_json::to_value(stored.status.as_ref().unwrap()).unwrap();
            assert_eq!(api_status, cached, "{name}: the API server holds the latest accepted status of {uid}");
        }
    }
}

/// Issue 27: an update that changes nothing takes no change set (a fault in saving
/// changes cannot follow one), and a changed one still does.
#[test]
fn an_update_that_changes_nothing_takes_no_change_set() {
    let mut scene = Scene::new();
    scene.prelude();
    scene.arm(SAVE_STATE_CHANGES);
    // The prelude left p1 Running and ready, and p2's app container ready.
    let p1 = serde_json::to_string(&pod("p1")).unwrap();
    assert_eq!(scene.plugin.set_pod_status(&p1, &status("Running", true)).unwrap(), UpdateOutcome::Unchanged);
    let ready = scene.plugin.set_container_readiness("uid-p2", "containerd://app", true).unwrap();
    assert_eq!(ready, UpdateOutcome::Unchanged);
    assert_eq!(scene.plugin.stats().recoveries, 0, "no change set was taken");
    let changed = scene.set("p1", "Running", false);
    assert!(matches!(changed, Err(CallError::Fault { .. })), "a change takes its change set: {changed:?}");
    assert_eq!(scene.plugin.stats().recoveries, 1);
}

#[test]
fn recovery_is_counted_and_timed() {
    let mut scene = Scene::new();
    scene.prelude();
    scene.arm(SYNC_BATCH);
    assert!(scene.plugin.sync_batch().is_err());
    scene.tick();
    let stats = scene.plugin.stats().clone();
    assert_eq!(stats.recoveries, 1);
    assert_eq!(stats.faults.get("trap"), Some(&1));
    assert_eq!(stats.faults_by_call.get("sync-batch"), Some(&1));
    assert!(stats.last_recovery.is_some());
    // And the restored instance carries on as if nothing happened.
    assert!(scene.plugin.sync_batch().is_ok());
}

/// Contract 0.2.0: a fault while syncs are in flight (their calls out, the host holding
/// the answers) loses no accepted status. The restored instance knows none of the
/// syncs (they are not state): each is refused when the host goes on with it, and a
/// later sync writes every status the node handed over.
#[test]
fn a_fault_with_syncs_in_flight_loses_nothing_accepted() {
    for failpoint in [START_SYNC, RESUME_SYNC] {
        let mut scene = Scene::of(FAILPOINTS_SPLIT);
        for name in PODS {
            assert_eq!(
                scene
                    .plugin
                    .set_pod_status(&serde_json::to_string(&pod(name)).unwrap(), &status("Running", true))
                    .unwrap(),
                UpdateOutcome::Queued
            );
        }
        // Plan every request; start the syncs, and make the calls, of all but the last.
        let mut syncs = Vec::new();
        while let Some(request) = scene.world.queue.pop() {
            syncs.extend(scene.plugin.plan_sync_pod(&request).unwrap());
        }
        assert_eq!(syncs.len(), PODS.len());
        let mut answers = Vec::new();
        for sync in &syncs[..PODS.len() - 1] {
            let SyncStep::Call(call) = scene.plugin.start_sync(sync.id).unwrap() else { panic!("a GET first") };
            answers.push((sync.id, podstatus_runtime::api::perform(&scene.world, call)));
        }
        let before = scene.cache();

        // The fault, in the step the host takes next.
        scene.arm(failpoint);
        let (id, answer) = answers.remove(0);
        let faulted = match failpoint {
            START_SYNC => scene.plugin.start_sync(syncs[PODS.len() - 1].id).map(drop),
            _ => scene.plugin.resume_sync(id, &answer).map(drop),
        };
        assert!(matches!(faulted, Err(CallError::Fault { .. })), "failpoint {failpoint}: {faulted:?}");
        scene.tick();
        assert_eq!(scene.plugin.stats().recoveries, 1);
        assert_eq!(scene.cache(), before, "failpoint {failpoint}: every accepted status survives");

        // The syncs in flight are gone with the instance: refused, not run twice.
        for (id, answer) in answers {
            let refused = scene.plugin.resume_sync(id, &answer);
            assert!(
                matches!(refused, Err(CallError::Rejected { error: podstatus_runtime::bindings::ManagerError::UnknownSync(n), .. }) if n == id),
                "{refused:?}"
            );
        }
        // A batch writes what they did not.
        scene.plugin.sync_batch().unwrap();
        for name in PODS {
            let pod = scene.api.get_pod("default", name).unwrap();
            let phase = pod.status.as_ref().and_then(|s| s.phase.clone());
            assert_eq!(phase.as_deref(), Some("Running"), "failpoint {failpoint}: {name} written");
        }
    }
}
