//! The sandbox's budgets, measured in release: what an honest logic v2 `sync-batch`
//! over 10,000 pods uses of them, what each attack of the hostile adversary cost the
//! host before it was stopped (time, import bytes, log lines), and a supervised plugin
//! serving a million calls with flat memory. Each part runs in this process alone (not
//! in the shared test process), with the default limits. Run:
//!
//! `cargo run --release -p podstatus --example sandbox_budget [calls]`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SyncQueue, SystemClock};
use podstatus_plugins::{PODSTATUS_V1, PODSTATUS_V2};
use podstatus_runtime::{CallError, Limits, PluginExt, PluginRuntime, RuntimeConfig, SupervisedPlugin, World};
use podstatus_test_programs::ADVERSARY_HOSTILE;
use serde_json::json;

fn world(pods: &[serde_json::Value], queue: usize) -> World {
    let api = Arc::new(MemoryApiServer::new());
    let pod_manager = Arc::new(PodManager::new());
    for pod in pods {
        let pod: k8s_openapi::api::core::v1::Pod = serde_json::from_value(pod.clone()).unwrap();
        api.put_pod(pod.clone()).unwrap();
        pod_manager.add_pod(pod);
    }
    World {
        api_server: api,
        pod_manager,
        deletion_safety: Arc::new(FixedDeletionSafety::new(true)),
        clock: Arc::new(SystemClock),
        queue: Arc::new(SyncQueue::new(queue)),
    }
}

fn pod(i: usize) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"uid": format!("uid-{i:05}"), "name": format!("pod-{i}"), "namespace": "default"},
        "spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "envoy", "image": "envoy:1"}, {"name": "logs", "image": "logs:1"}]}})
}

/// About 2.5 KB, like the benchmarks'.
fn status(i: usize) -> String {
    let container = |name: &str| {
        json!({"name": name, "image": format!("registry.example/{name}:4.2.0"),
            "imageID": format!("registry.example/{name}@sha256:4f8e2a1b9c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f"),
            "containerID": format!("containerd://{name}-{i}"), "ready": true, "restartCount": 0, "started": true,
            "state": {"running": {"startedAt": "2026-11-30T09:12:44Z"}}})
    };
    json!({"phase": "Running", "hostIP": "10.0.3.17", "podIP": format!("10.244.{}.{}", i / 250, i % 250),
        "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"}],
        "containerStatuses": [container("app"), container("envoy"), container("logs")]})
    .to_string()
}

/// Resident memory of this process, in MB.
fn rss_mb() -> f64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: f64 = statm.split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0.0);
    pages * 4096.0 / 1e6
}

/// Bytes the host's log lines took (what a flood costs the node's log pipeline).
static LOG_BYTES: AtomicUsize = AtomicUsize::new(0);

/// A log destination that counts what it is given and keeps nothing.
struct CountingWriter;

impl std::io::Write for CountingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        LOG_BYTES.fetch_add(buf.len(), Ordering::Relaxed);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn main() {
    let calls: usize = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(1_000_000);
    // Logs at the agent's default level (warnings and errors), counted, not printed.
    tracing_subscriber::fmt().with_max_level(tracing::Level::WARN).with_writer(|| CountingWriter).init();
    let runtime = PluginRuntime::new(&RuntimeConfig::with_default_cache()).expect("runtime");
    let limits = Limits::default();

    // An honest batch: 10,000 pods, every status to write.
    let pods: Vec<_> = (0..10_000).map(pod).collect();
    let mut v2 = runtime.load(PODSTATUS_V2).unwrap().instantiate(world(&pods, 10)).unwrap();
    for (i, pod) in pods.iter().enumerate() {
        v2.set_pod_status(&pod.to_string(), &status(i)).unwrap();
    }
    let start = Instant::now();
    let report = v2.sync_batch().expect("an honest batch stays inside the budgets");
    let usage = v2.last_call_usage();
    println!(
        "honest v2 sync-batch, 10,000 pods: {report:?} in {:.0} ms; guest {:.0} ms, host CPU in imports {:.0} ms \
         (budget {:?}), {} imports (limit {}), {:.1} MB through imports (limit {:.0} MB)",
        start.elapsed().as_secs_f64() * 1e3,
        usage.guest_time.as_secs_f64() * 1e3,
        usage.host_time.as_secs_f64() * 1e3,
        limits.call_cpu_time.unwrap(),
        usage.imports,
        limits.call_imports,
        usage.import_bytes as f64 / 1e6,
        limits.call_import_bytes as f64 / 1e6,
    );
    drop(v2);

    // Each attack, default limits.
    let hostile = runtime.load(ADVERSARY_HOSTILE).unwrap();
    println!(
        "| attack | stopped by | host time | through imports | log lines written / dropped | memory granted | RSS after |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|");
    let attacks = ["amplify", "chatter", "log-flood", "push-foreign", "push-huge", "lie-changes", "multi-memory"];
    for attack in attacks {
        let w = world(&[], 1000);
        let pod = json!({"metadata": {"uid": "u1", "name": "p", "namespace": "ns", "annotations": {"a": format!("attack={attack}")}}});
        let (outcome, usage, dropped, granted) = if attack == "lie-changes" {
            let mut p = SupervisedPlugin::new(hostile.clone(), w).unwrap();
            let start = Instant::now();
            let outcome = p.set_pod_status(&pod.to_string(), "{}");
            let usage = podstatus_runtime::CallUsage { guest_time: start.elapsed(), ..Default::default() };
            (outcome, usage, 0, "—".to_string())
        } else {
            let mut p = hostile.instantiate(w).unwrap();
            let outcome = p.set_pod_status(&pod.to_string(), "{}");
            let granted = format!("{:.0} MB", p.memory_bytes() as f64 / 1e6);
            (outcome, p.last_call_usage(), p.dropped_log_lines(), granted)
        };
        let stopped = match &outcome {
            Err(CallError::Fault { kind, .. }) => format!("`{}`", kind.as_str()),
            Ok(o) => format!("not a fault ({o:?})"),
            Err(e) => e.to_string(),
        };
        let logged = LOG_BYTES.swap(0, Ordering::Relaxed);
        let lines = if attack == "log-flood" {
            format!("{} / {dropped} ({:.2} MB of log)", 5_000 - dropped, logged as f64 / 1e6)
        } else {
            format!("0 ({logged} bytes of log)")
        };
        println!(
            "| {attack} | {stopped} | {:.0} ms | {:.1} MB in {} calls | {lines} | {granted} | {:.0} MB |",
            (usage.guest_time + usage.host_time).as_secs_f64() * 1e3,
            usage.import_bytes as f64 / 1e6,
            usage.imports,
            rss_mb()
        );
    }

    // A supervised plugin for `calls` calls: 100 pods, alternating statuses, every
    // request synced; the supervisor's memory and the process's stay flat.
    let pods: Vec<_> = (0..100).map(pod).collect();
    let w = world(&pods, 1000);
    let image = runtime.load(PODSTATUS_V1).unwrap();
    let mut plugin = SupervisedPlugin::new(image, w.clone()).unwrap();
    let pod_texts: Vec<String> = pods.iter().map(|p| p.to_string()).collect();
    let statuses = [status(1), status(2)];
    let start = Instant::now();
    let mut done = 0;
    println!("| calls | supervisor holds | RSS |");
    println!("|---:|---:|---:|");
    while done < calls {
        let i = done % 100;
        plugin.set_pod_status(&pod_texts[i], &statuses[(done / 100) % 2]).unwrap();
        done += 1;
        while let Some(request) = w.queue.pop() {
            plugin.sync_pod(&request).unwrap();
            done += 1;
        }
        if done % (calls / 5).max(1) < 2 {
            println!("| {done} | {:.2} MB | {:.0} MB |", plugin.held_bytes() as f64 / 1e6, rss_mb());
        }
    }
    println!(
        "| {done} | {:.2} MB | {:.0} MB | ({:.1} s)",
        plugin.held_bytes() as f64 / 1e6,
        rss_mb(),
        start.elapsed().as_secs_f64()
    );
}
