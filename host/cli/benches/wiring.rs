//! What the real wiring costs: one pod's sync (GET, status PUT, bookkeeping) through the
//! component, with the API server in process (`MemoryApiServer`), over HTTP (the kube-rs
//! client to the embedded server on loopback), and over HTTP as an agent runs it
//! (behind the reach guard and the metering). Prints the ratios of this run at the end.
//!
//! `cargo bench -p podstatus --bench wiring`

use std::path::PathBuf;
use std::sync::Arc;

use criterion::Criterion;
use k8s_openapi::api::core::v1::Pod;
use podstatus_agent::client::{ClientSource, connect};
use podstatus_agent::client::{KubeApiServer, KubeClientConfig};
use podstatus_agent::metrics::MeteredApiServer;
use podstatus_agent::metrics::Metrics;
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_backends::{ApiServer, HostView, MemoryApiServer};
use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::World;
use podstatus_runtime::{Plugin, PluginRuntime, RuntimeConfig};

mod fixture;

/// The three ways to the API server, each a world around the same store content.
struct Worlds {
    in_process: World,
    http: World,
    agent: World,
    // Kept alive for the worlds above.
    _server: EmbeddedApiServer,
    _runtime: tokio::runtime::Runtime,
}

fn worlds() -> Worlds {
    let pod: Pod = serde_json::from_str(&fixture::pod_json()).unwrap();
    let world = |api_server: Arc<dyn ApiServer>| {
        let pod_manager = Arc::new(PodManager::new());
        pod_manager.add_pod(pod.clone());
        World {
            api_server,
            pod_manager,
            deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
            clock: Arc::new(SystemClock),
            queue: Arc::new(SyncQueue::new(1)),
        }
    };
    let memory = Arc::new(MemoryApiServer::new());
    memory.put_pod(pod.clone()).unwrap();

    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    store.put_pod(pod.clone()).unwrap();
    let server = EmbeddedApiServer::start(store, "127.0.0.1:0".parse().unwrap()).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let client = runtime.block_on(connect(&ClientSource::Url(server.url()))).unwrap();
    // No rate limit in the way: this measures the path, not the budget.
    let config = KubeClientConfig { qps: 1e6, burst: 1_000_000, ..KubeClientConfig::default() };
    let kube: Arc<dyn ApiServer> = Arc::new(KubeApiServer::new(runtime.handle().clone(), client, config).unwrap());

    let http = world(Arc::clone(&kube));
    let guarded = world(kube);
    // The node reported the status the bench syncs, so the guard lets its IPs through.
    let host_view = Arc::new(HostView::new(Arc::clone(&guarded.deletion_safety)));
    host_view.report_status_json(&fixture::pod_json(), &fixture::status_json(0));
    let guarded = guarded.guarded(Some("node-17".into()), host_view);
    let metered = Arc::new(MeteredApiServer::new(Arc::clone(&guarded.api_server), Arc::new(Metrics::new())));
    let agent = World { api_server: metered, ..guarded };
    Worlds { in_process: world(memory), http, agent, _server: server, _runtime: runtime }
}

fn bench(c: &mut Criterion) {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/podstatus-bench-cache");
    let runtime = PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache), ..RuntimeConfig::default() }).unwrap();
    let image = runtime.load(PODSTATUS_V1).unwrap();
    let worlds = worlds();

    let mut group = c.benchmark_group("sync-pod");
    for (name, world) in [("in-process", &worlds.in_process), ("http", &worlds.http), ("agent", &worlds.agent)] {
        let plugin: Box<dyn Plugin> = Box::new(image.instantiate(world.clone()).unwrap());
        fixture::bench_sync_pod(&mut group, name, plugin, &world.queue);
    }
    group.finish();
}

fn main() {
    let mut c = fixture::criterion();
    bench(&mut c);
    c.final_summary();
    let Some(base) = fixture::estimate_ns("sync-pod/in-process") else { return };
    println!("\n| one pod's sync through the component | time | / in process |");
    println!("|---|---:|---:|");
    for (name, what) in [
        ("in-process", "API server in process (MemoryApiServer)"),
        ("http", "kube-rs client, embedded API server over HTTP"),
        ("agent", "the same behind the reach guard and metering"),
    ] {
        if let Some(ns) = fixture::estimate_ns(&format!("sync-pod/{name}")) {
            println!("| {what} | {:.1} µs | {:.2} |", ns / 1000.0, ns / base);
        }
    }
}
