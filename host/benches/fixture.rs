// Each bench uses the part of the fixture it needs.
#![allow(dead_code)]

//! A realistic pod (three containers, one init container) and a ~3 KB status for it,
//! and the ratio table printed after the run.

use std::path::PathBuf;

pub const UID: &str = "8d3f6a2e-5b1c-4f0e-9a77-3c2b1d0e9f10";

pub fn pod_json() -> String {
    serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "checkout-7d9f8b6c5-x2x4q", "namespace": "shop", "uid": UID,
            "labels": {"app": "checkout", "pod-template-hash": "7d9f8b6c5", "tier": "backend"},
            "annotations": {"kubernetes.io/config.source": "api", "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "checkout-7d9f8b6c5",
                "uid": "1b2c3d4e-0000-4000-8000-000000000001", "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {
            "nodeName": "node-17", "restartPolicy": "Always", "serviceAccountName": "checkout",
            "initContainers": [{"name": "migrate", "image": "registry.example/checkout-migrate:4.2.0", "command": ["/migrate", "--up"]}],
            "containers": [
                {"name": "app", "image": "registry.example/checkout:4.2.0", "ports": [{"containerPort": 8080, "name": "http"}],
                 "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}, "limits": {"memory": "512Mi"}},
                 "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080}, "periodSeconds": 5}},
                {"name": "envoy", "image": "envoyproxy/envoy:v1.31.2", "ports": [{"containerPort": 9901, "name": "admin"}]},
                {"name": "log-shipper", "image": "fluent/fluent-bit:3.1", "volumeMounts": [{"name": "logs", "mountPath": "/var/log/app"}]}
            ],
            "volumes": [{"name": "logs", "emptyDir": {}}]
        }
    })
    .to_string()
}

/// The status; `variant` changes the app container's restart count, so the two
/// variants differ after normalisation.
pub fn status_json(variant: i32) -> String {
    let container = |name: &str, image: &str, id: &str, ready: bool, restarts: i32| {
        serde_json::json!({
            "name": name, "image": image, "imageID": format!("{image}@sha256:4f8e2a1b9c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"),
            "containerID": format!("containerd://{id}"), "ready": ready, "restartCount": restarts, "started": true,
            "state": {"running": {"startedAt": "2026-11-30T09:12:44.532Z"}},
            "lastState": {"terminated": {"exitCode": 137, "reason": "OOMKilled", "message": "container exceeded its memory limit",
                "startedAt": "2026-11-30T08:01:02Z", "finishedAt": "2026-11-30T09:12:40Z", "containerID": format!("containerd://{id}-old")}}
        })
    };
    serde_json::json!({
        "phase": "Running", "hostIP": "10.0.3.17", "podIP": "10.244.17.33",
        "hostIPs": [{"ip": "10.0.3.17"}], "podIPs": [{"ip": "10.244.17.33"}], "qosClass": "Burstable",
        "startTime": "2026-11-30T08:00:58Z",
        "conditions": [
            {"type": "PodReadyToStartContainers", "status": "True", "lastTransitionTime": "2026-11-30T08:01:00Z"},
            {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-11-30T08:01:01Z"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T09:12:50Z"},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-11-30T09:12:50Z"},
            {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-11-30T08:00:58Z"}
        ],
        "initContainerStatuses": [{"name": "migrate", "image": "registry.example/checkout-migrate:4.2.0",
            "imageID": "registry.example/checkout-migrate@sha256:0a1b2c3d4e5f", "containerID": "containerd://migrate-1",
            "ready": true, "restartCount": 0,
            "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": "2026-11-30T08:01:00Z", "finishedAt": "2026-11-30T08:01:01Z"}}}],
        "containerStatuses": [
            container("app", "registry.example/checkout:4.2.0", "app-1", true, 3 + variant),
            container("envoy", "envoyproxy/envoy:v1.31.2", "envoy-1", true, 0),
            container("log-shipper", "fluent/fluent-bit:3.1", "logs-1", true, 0)
        ]
    })
    .to_string()
}

pub fn estimate_ns(id: &str) -> Option<f64> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/criterion").join(id).join("new/estimates.json");
    let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).ok()?).ok()?;
    doc["mean"]["point_estimate"].as_f64()
}

/// The table the README shows: each operation's mean time natively, through the
/// component without and with its CPU budget, and under the supervisor, with the ratios
/// the targets are about.
pub fn print_ratios() {
    let Some(floor) = estimate_ns("serde-floor/parse+serialise status") else { return };
    println!(
        "\n| operation | native | component, no CPU budget | / native | component, sandboxed | / native | / serde floor | supervised |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    let us = |ns: f64| format!("{:.1} µs", ns / 1000.0);
    for op in ["set-pod-status", "get-pod-status", "set-container-readiness", "sync-pod"] {
        let get = |kind: &str| estimate_ns(&format!("{kind}/{op}"));
        let (Some(n), Some(c), Some(u)) = (get("native"), get("component"), get("unmetered")) else { continue };
        let s = get("supervised").map_or("–".to_string(), us);
        println!("| {op} | {} | {} | {:.2} | {} | {:.2} | {:.2} | {s} |", us(n), us(u), u / n, us(c), c / n, c / floor);
    }
    println!("| serde floor (parse + serialise the status) | {} | | | | | 1.00 | |", us(floor));
}

/// Benchmarks one pod's sync (GET, status write, bookkeeping) for a freshly queued
/// change: each iteration first caches the other of two statuses, so there is always
/// something to write. `queue` is the queue of `plugin`'s world.
pub fn bench_sync_pod(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    plugin: Box<dyn podstatus::plugin::Plugin>,
    queue: &podstatus::backends::sync_queue::SyncQueue,
) {
    let (pod, statuses) = (pod_json(), [status_json(0), status_json(1)]);
    let plugin = std::cell::RefCell::new(plugin);
    let mut turn = 0;
    group.bench_function(name, |b| {
        b.iter_batched(
            || {
                turn ^= 1;
                plugin.borrow_mut().set_pod_status(&pod, &statuses[turn]).unwrap();
                queue.pop().expect("a request was queued")
            },
            |request| plugin.borrow_mut().sync_pod(&request).unwrap(),
            criterion::BatchSize::SmallInput,
        )
    });
}

/// Criterion as every bench here runs it: short, so that a whole table is one sitting
/// (the ratios are what matter, and they come from the same run).
pub fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(std::time::Duration::from_secs(1))
        .measurement_time(std::time::Duration::from_secs(3))
        .sample_size(40)
        .configure_from_args()
}
