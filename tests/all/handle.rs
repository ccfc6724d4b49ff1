//! The thread-safe handle and the scheduler, with the real component.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::ApiServer;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::testing;
use podstatus_runtime::World;
use podstatus_runtime::{ManagerHandle, SchedulerConfig};
use podstatus_tests::v1_image;

fn pod(i: usize) -> Pod {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{i:03}"), "name": format!("pod-{i}"), "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}]}
    }))
    .unwrap()
}

fn running(i: usize) -> String {
    serde_json::json!({
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True"}],
        "containerStatuses": [{"name": "app", "image": "app:1", "imageID": "sha256:1",
            "containerID": format!("containerd://c{i}"), "ready": true, "restartCount": 0,
            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}]
    })
    .to_string()
}

fn wait_until(what: &str, done: impl FnMut() -> bool) {
    testing::wait_until(what, Duration::from_secs(20), Duration::from_millis(5), done)
}

fn setup(pods: usize) -> (Arc<MemoryApiServer>, World) {
    podstatus_tests::memory_world((0..pods).map(pod), false, podstatus_backends::DEFAULT_CAPACITY)
}

#[test]
fn statuses_set_from_many_threads_all_reach_the_api_server() {
    const THREADS: usize = 4;
    const PODS_PER_THREAD: usize = 25;
    let (api, world) = setup(THREADS * PODS_PER_THREAD);
    let plugin = v1_image().instantiate(world.clone()).unwrap();
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), SchedulerConfig::default());

    let workers: Vec<_> = (0..THREADS)
        .map(|t| {
            let manager = manager.clone();
            std::thread::spawn(move || {
                for i in t * PODS_PER_THREAD..(t + 1) * PODS_PER_THREAD {
                    let json = serde_json::to_string(&pod(i)).unwrap();
                    manager.set_pod_status(&json, &running(i)).unwrap();
                }
            })
        })
        .collect();
    for w in workers {
        w.join().unwrap();
    }

    wait_until("every status is in the API server", || {
        (0..THREADS * PODS_PER_THREAD).all(|i| {
            api.get_pod("default", &format!("pod-{i}")).unwrap().status.as_ref().and_then(|s| s.phase.as_deref())
                == Some("Running")
        })
    });
    for i in 0..THREADS * PODS_PER_THREAD {
        let cached = manager.get_pod_status(&format!("uid-{i:03}")).unwrap().expect("cached");
        assert_eq!(cached.version, 1);
    }
    assert_eq!(scheduler.shutdown(Duration::from_secs(5)), 0);
}

#[test]
fn the_periodic_batch_repairs_drift() {
    let (api, world) = setup(1);
    let plugin = v1_image().instantiate(world.clone()).unwrap();
    let config = SchedulerConfig { sync_period: Duration::from_millis(50), ..SchedulerConfig::default() };
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config);
    manager.set_pod_status(&serde_json::to_string(&pod(0)).unwrap(), &running(0)).unwrap();
    let phase = || api.get_pod("default", "pod-0").unwrap().status.as_ref().and_then(|s| s.phase.clone());
    wait_until("the status is written", || phase().as_deref() == Some("Running"));

    // Someone else overwrites the status; the kubelet is the source of truth.
    let mut drifted = Pod::clone(&api.get_pod("default", "pod-0").unwrap());
    drifted.status.as_mut().unwrap().phase = Some("Unknown".into());
    api.put_pod(drifted).unwrap();
    wait_until("the batch sync writes the cached status back", || phase().as_deref() == Some("Running"));
    drop(scheduler);
}

#[test]
fn a_batch_planned_one_pod_at_a_time_repairs_every_pod_and_lets_callers_in_between() {
    const PODS: usize = 12;
    let (api, world) = setup(PODS);
    let plugin = v1_image().instantiate(world.clone()).unwrap();
    let config =
        SchedulerConfig { sync_period: Duration::from_millis(50), batch_slice_pods: 1, ..SchedulerConfig::default() };
    let (manager, scheduler) = ManagerHandle::start(Box::new(plugin), world.queue.clone(), config);
    for i in 0..PODS {
        manager.set_pod_status(&serde_json::to_string(&pod(i)).unwrap(), &running(i)).unwrap();
    }
    let phase =
        |i: usize| api.get_pod("default", &format!("pod-{i}")).unwrap().status.as_ref().and_then(|s| s.phase.clone());
    wait_until("every status is written", || (0..PODS).all(|i| phase(i).as_deref() == Some("Running")));

    // Every pod drifts; the batch, deciding one pod per call, writes each one back
    // while the node's calls keep being served.
    for i in 0..PODS {
        let mut drifted = Pod::clone(&api.get_pod("default", &format!("pod-{i}")).unwrap());
        drifted.status.as_mut().unwrap().phase = Some("Unknown".into());
        api.put_pod(drifted).unwrap();
    }
    wait_until("the batch writes every cached status back", || {
        assert!(manager.get_pod_status("uid-000").unwrap().is_some());
        (0..PODS).all(|i| phase(i).as_deref() == Some("Running"))
    });
    assert_eq!(scheduler.shutdown(Duration::from_secs(5)), 0);
}
