//! Measures a hot swap under load: how long calls are held (the pause) and how long the
//! whole swap takes, with 1,000 and 10,000 cached pods, while writer threads keep
//! changing statuses; plain and supervised, and with a host view observed (the host's
//! record of accepted statuses, which the switch holds the state against). Run in
//! release:
//!
//! `cargo run --release -p podstatus --example swap_pause`

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::HostView;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::World;
use podstatus_runtime::{ManagerHandle, SchedulerConfig};
use podstatus_runtime::{Plugin, PluginImage, PluginRuntime, RuntimeConfig, SupervisedPlugin};
use serde_json::json;

const SWAPS: usize = 7;

fn pod(i: usize) -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{i:05}"), "name": format!("pod-{i}"), "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "envoy", "image": "envoy:1"}, {"name": "logs", "image": "logs:1"}]}
    }))
    .unwrap()
}

/// A status of about 2.5 KB, like the benchmarks'.
fn status(i: usize, round: usize) -> String {
    let container = |name: &str| {
        json!({"name": name, "image": format!("registry.example/{name}:4.2.0"),
            "imageID": format!("registry.example/{name}@sha256:4f8e2a1b9c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"),
            "containerID": format!("containerd://{name}-{i}"), "ready": true, "restartCount": round, "started": true,
            "state": {"running": {"startedAt": "2026-11-30T09:12:44Z"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-30T08:01:02Z", "finishedAt": "2026-11-30T09:12:40Z"}}})
    };
    json!({"phase": "Running", "hostIP": "10.0.3.17", "podIP": format!("10.244.{}.{}", i / 250, i % 250), "qosClass": "Burstable",
        "startTime": "2026-11-30T08:00:58Z",
        "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
        "containerStatuses": [container("app"), container("envoy"), container("logs")]})
    .to_string()
}

fn main() {
    let runtime = PluginRuntime::new(&RuntimeConfig::with_default_cache()).expect("runtime");
    let image = runtime.load(PODSTATUS_V1).expect("the plugin loads");
    println!(
        "| cached pods | plugin | host record | state moved | pause: calls held (median / max of {SWAPS}) | bulk save, one call (median) | whole swap (median) |"
    );
    println!("|---:|---|---|---:|---:|---:|---:|");
    let runs = [1_000, 10_000].into_iter().flat_map(|pods| {
        [(false, false), (true, false), (false, true), (true, true)].map(|(sup, obs)| (pods, sup, obs))
    });
    for (pods, supervised, observed) in runs {
        let api = Arc::new(MemoryApiServer::new());
        let pod_manager = Arc::new(PodManager::new());
        for i in 0..pods {
            api.put_pod(pod(i)).unwrap();
            pod_manager.add_pod(pod(i));
        }
        pod_manager.follow_api_server(&api);
        let world = World {
            api_server: api,
            pod_manager,
            deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
            clock: Arc::new(SystemClock),
            queue: Arc::new(SyncQueue::default()),
        };
        let make = |image: &PluginImage, world: &World| -> Box<dyn Plugin> {
            if supervised {
                Box::new(SupervisedPlugin::new(image.clone(), world.clone()).unwrap())
            } else {
                Box::new(image.instantiate(world.clone()).unwrap())
            }
        };
        let (manager, scheduler) =
            ManagerHandle::start(make(&image, &world), world.queue.clone(), SchedulerConfig::default());
        if observed {
            manager.observe(Arc::new(HostView::new(world.deletion_safety.clone())));
        }
        let jsons: Arc<Vec<String>> = Arc::new((0..pods).map(|i| serde_json::to_string(&pod(i)).unwrap()).collect());
        for (i, json) in jsons.iter().enumerate() {
            manager.set_pod_status(json, &status(i, 0)).unwrap();
        }
        while manager.queue_len() > 0 {
            std::thread::sleep(Duration::from_millis(10));
        }

        // Two writers keep changing statuses throughout, 2,000 changes a second in all
        // (a busy node: a kubelet runs at most a few hundred pods).
        let stop = Arc::new(AtomicBool::new(false));
        let writers: Vec<_> = (0..2)
            .map(|t| {
                let (manager, stop, jsons) = (manager.clone(), stop.clone(), jsons.clone());
                std::thread::spawn(move || {
                    let mut round = 1usize;
                    while !stop.load(Ordering::Relaxed) {
                        let i = (round * 2 + t) % jsons.len();
                        manager.set_pod_status(&jsons[i], &status(i, round)).unwrap();
                        round += 1;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                })
            })
            .collect();

        let mut reports = Vec::new();
        for _ in 0..SWAPS {
            let report = manager.swap(make(&image, &world)).expect("swap");
            assert!(report.repaired.is_empty(), "an honest plugin is repaired nothing: {:?}", report.repaired);
            reports.push(report);
            std::thread::sleep(Duration::from_millis(20));
        }
        stop.store(true, Ordering::Relaxed);
        for w in writers {
            w.join().unwrap();
        }
        scheduler.shutdown(Duration::from_secs(30));

        let mut pauses: Vec<Duration> = reports.iter().map(|r| r.pause).collect();
        let mut totals: Vec<Duration> = reports.iter().map(|r| r.total).collect();
        let mut saves: Vec<Duration> = reports.iter().map(|r| r.save).collect();
        pauses.sort();
        totals.sort();
        saves.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1e3;
        println!(
            "| {pods} | {} | {} | {:.1} MB | {:.2} ms / {:.2} ms | {:.1} ms | {:.0} ms |",
            if supervised { "supervised" } else { "plain" },
            if observed { "held against" } else { "none" },
            reports[0].state_bytes as f64 / 1e6,
            ms(pauses[SWAPS / 2]),
            ms(pauses[SWAPS - 1]),
            ms(saves[SWAPS / 2]),
            ms(totals[SWAPS / 2])
        );
    }
}
