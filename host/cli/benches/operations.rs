//! The cost of each Manager operation through the component, beside the same logic
//! called natively, beside a bare serde_json parse and serialise of the same status
//! (the floor any JSON boundary pays), natively and in the sandbox (the floor of the
//! sandbox for this work). Prints the ratios of this run at the end.
//!
//! The `release-modes` group holds one release written both ways (issue 48): `1.35`,
//! as its kubelet writes (a GET before each PATCH), beside `1.35-one-call` (one PATCH,
//! no GET), for set-pod-status and update-and-sync, against the in-memory API server
//! as it is and with 20 ms added to every API call; it prints the API calls each
//! status delivered costs.
//!
//! `cargo bench -p podstatus --bench operations`

use std::hint::black_box;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::Criterion;
use k8s_openapi::api::core::v1::{Pod, PodStatus};
use podstatus_backends::FixedDeletionSafety;
use podstatus_backends::MemoryApiServer;
use podstatus_backends::PodManager;
use podstatus_backends::SyncQueue;
use podstatus_backends::SystemClock;
use podstatus_backends::{ApiServer, DeleteOptions, StatusPatch, StatusUpdate};
use podstatus_plugins::PODSTATUS_V1;
use podstatus_plugins::{LogicVersion, NativePlugin};
use podstatus_runtime::World;
use podstatus_runtime::bindings::UpdateOutcome;
use podstatus_runtime::{Limits, Plugin, PluginExt, PluginRuntime, RuntimeConfig, SupervisedPlugin};
use podstatus_test_programs::SERDE_FLOOR;

mod fixture;

/// A world for one plugin; `queue_capacity` 0 makes every push "queue full", so
/// repeated updates keep no snapshots and memory stays flat over millions of calls.
fn world(queue_capacity: usize) -> World {
    world_on(queue_capacity, |api| api)
}

/// [`world`] with the API server `api` makes of the in-memory one the pod manager follows.
fn world_on(queue_capacity: usize, api: impl FnOnce(Arc<MemoryApiServer>) -> Arc<dyn ApiServer>) -> World {
    let memory = Arc::new(MemoryApiServer::new());
    let pod_manager = Arc::new(PodManager::new());
    let pod: Pod = serde_json::from_str(&fixture::pod_json()).unwrap();
    memory.put_pod(pod.clone()).unwrap();
    pod_manager.add_pod(pod);
    pod_manager.follow_api_server(&memory);
    World {
        api_server: api(memory),
        pod_manager,
        deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
        clock: Arc::new(SystemClock),
        queue: Arc::new(SyncQueue::new(queue_capacity)),
    }
}

/// The in-memory API server behind a latency added to every call, counting the calls.
struct Remote {
    inner: Arc<MemoryApiServer>,
    latency: Duration,
    calls: AtomicU64,
}

impl Remote {
    fn call<T>(&self, call: impl FnOnce(&MemoryApiServer) -> T) -> T {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if !self.latency.is_zero() {
            std::thread::sleep(self.latency);
        }
        call(&self.inner)
    }
}

impl ApiServer for Remote {
    fn get_pod(&self, namespace: &str, name: &str) -> podstatus_backends::Result<Arc<Pod>> {
        self.call(|api| api.get_pod(namespace, name))
    }

    fn update_pod_status(&self, update: StatusUpdate) -> podstatus_backends::Result<Arc<Pod>> {
        self.call(|api| api.update_pod_status(update))
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> podstatus_backends::Result<Arc<Pod>> {
        self.call(|api| api.patch_pod_status(patch))
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> podstatus_backends::Result<Arc<Pod>> {
        self.call(|api| api.delete_pod(namespace, name, options))
    }
}

/// [`world`] with its API server behind `latency`, and the server's call counter.
fn remote_world(queue_capacity: usize, latency: Duration) -> (World, Arc<Remote>) {
    let mut remote = None;
    let world = world_on(queue_capacity, |inner| {
        let api = Arc::new(Remote { inner, latency, calls: AtomicU64::new(0) });
        remote = Some(Arc::clone(&api));
        api
    });
    (world, remote.expect("made with the world"))
}

/// The two ways of writing 1.35 the `release-modes` group compares.
const RELEASE_MODES: [LogicVersion; 2] = [LogicVersion::K1_35, LogicVersion::V4];
/// The API latencies it compares them at: none, and a remote API server's.
const LATENCIES: [Duration; 2] = [Duration::ZERO, Duration::from_millis(20)];

fn latency_label(latency: Duration) -> String {
    if latency.is_zero() { String::new() } else { format!(", {} ms API latency", latency.as_millis()) }
}

/// 1.35 read then patch beside 1.35-one-call, in the sandbox, per latency: set-pod-status
/// and update-and-sync; then the API calls per status delivered, counted.
fn bench_release_modes(c: &mut Criterion) {
    let pod = fixture::pod_json();
    let statuses = [fixture::status_json(0), fixture::status_json(1)];
    let mut group = c.benchmark_group("release-modes");
    let mut calls = Vec::new();
    for latency in LATENCIES {
        for version in RELEASE_MODES {
            let load = |world: World| runtime(Limits::default()).load(version.component()).unwrap().instantiate(world);
            let suffix = latency_label(latency);
            let (w, _) = remote_world(0, latency);
            let mut plugin = load(w).unwrap();
            let mut turn = 0;
            group.bench_function(format!("{}/set-pod-status{suffix}", version.name()), |b| {
                b.iter(|| {
                    turn ^= 1;
                    plugin.set_pod_status(&pod, &statuses[turn]).unwrap()
                })
            });
            let (w, _) = remote_world(1, latency);
            let name = format!("{}/update-and-sync{suffix}", version.name());
            fixture::bench_update_and_sync(&mut group, &name, Box::new(load(w.clone()).unwrap()), &w.queue);
            if latency.is_zero() {
                // Per status delivered, counted over a fresh run of the same loop.
                let (w, remote_once) = remote_world(1, latency);
                let mut once = load(w.clone()).unwrap();
                const STATUSES: u64 = 100;
                for i in 0..STATUSES {
                    once.set_pod_status(&pod, &statuses[(i % 2) as usize]).unwrap();
                    let request = w.queue.pop().expect("a request was queued");
                    once.sync_pod(&request).unwrap();
                }
                let per_status = remote_once.calls.load(Ordering::Relaxed) as f64 / STATUSES as f64;
                calls.push((version.name(), per_status));
            }
        }
    }
    group.finish();
    println!("\n| logic | API calls per status delivered |");
    println!("|---|---:|");
    for (name, per_status) in calls {
        println!("| {name} | {per_status:.2} |");
    }
    println!("\n| operation | 1.35 | 1.35-one-call | what the GET costs |");
    println!("|---|---:|---:|---:|");
    for latency in LATENCIES {
        for op in ["set-pod-status", "update-and-sync"] {
            let suffix = latency_label(latency);
            let get =
                |version: LogicVersion| fixture::estimate_ns(&format!("release-modes/{}/{op}{suffix}", version.name()));
            if let (Some(read), Some(one)) = (get(RELEASE_MODES[0]), get(RELEASE_MODES[1])) {
                let us = |ns: f64| format!("{:.1} µs", ns / 1000.0);
                println!("| {op}{suffix} | {} | {} | {} |", us(read), us(one), us(read - one));
            }
        }
    }
}

type Make = fn(World) -> Box<dyn Plugin>;

fn runtime(limits: Limits) -> PluginRuntime {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/podstatus-bench-cache");
    PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache), limits, ..RuntimeConfig::default() }).unwrap()
}

/// The component in the sandbox as the host runs it by default: memory cap, boundary
/// caps and a CPU budget per call (epoch checks compiled into the plugin).
fn component(world: World) -> Box<dyn Plugin> {
    Box::new(runtime(Limits::default()).load(PODSTATUS_V1).unwrap().instantiate(world).unwrap())
}

/// The same without the CPU budget, so without epoch checks.
fn unmetered(world: World) -> Box<dyn Plugin> {
    let limits = Limits { call_cpu_time: None, ..Limits::default() };
    Box::new(runtime(limits).load(PODSTATUS_V1).unwrap().instantiate(world).unwrap())
}

fn native(world: World) -> Box<dyn Plugin> {
    Box::new(NativePlugin::new(world, podstatus_plugins::LogicVersion::V1))
}

/// The component under the supervisor, which takes the plugin's change set after every
/// call that can change state (the price of losing nothing when it faults).
fn supervised(world: World) -> Box<dyn Plugin> {
    Box::new(SupervisedPlugin::new(runtime(Limits::default()).load(PODSTATUS_V1).unwrap(), world).unwrap())
}

const KINDS: [(&str, Make); 4] =
    [("component", component), ("unmetered", unmetered), ("supervised", supervised), ("native", native)];

fn bench(c: &mut Criterion) {
    let pod = fixture::pod_json();
    let statuses = [fixture::status_json(0), fixture::status_json(1)];
    println!("status JSON: {} bytes; pod JSON: {} bytes", statuses[0].len(), pod.len());

    let mut floor = c.benchmark_group("serde-floor");
    floor.bench_function("parse+serialise status", |b| {
        b.iter(|| {
            let status: PodStatus = serde_json::from_str(black_box(&statuses[0])).unwrap();
            black_box(serde_json::to_string(&status).unwrap())
        })
    });
    // The same two lines in the sandbox, the status crossing in as the plugin's do
    // (tests/programs' serde-floor plugin): what the sandbox costs this work with and
    // without its CPU budget, with nothing of the status manager in it.
    let floors = [("sandboxed", Limits::default()), ("unmetered", Limits { call_cpu_time: None, ..Limits::default() })];
    for (kind, limits) in floors {
        let mut plugin = runtime(limits).load(SERDE_FLOOR).unwrap().instantiate(world(0)).unwrap();
        floor.bench_function(format!("parse+serialise status, {kind}"), |b| {
            b.iter(|| plugin.set_pod_status(&pod, black_box(&statuses[0])).unwrap())
        });
    }
    floor.finish();

    for (kind, make) in KINDS {
        let mut group = c.benchmark_group(kind);

        // Each call caches a real change (the two statuses alternate).
        let mut plugin = make(world(0));
        let mut turn = 0;
        group.bench_function("set-pod-status", |b| {
            b.iter(|| {
                turn ^= 1;
                plugin.set_pod_status(&pod, &statuses[turn]).unwrap()
            })
        });

        group.bench_function("get-pod-status", |b| b.iter(|| plugin.get_pod_status(black_box(fixture::UID)).unwrap()));

        let mut ready = false;
        group.bench_function("set-container-readiness", |b| {
            b.iter(|| {
                ready = !ready;
                plugin.set_container_readiness(fixture::UID, "containerd://app-1", ready).unwrap()
            })
        });

        // The kubelet's common case: a call that changes nothing (issue 27's baseline).
        // The first call caches the status; every timed one after it is Unchanged.
        plugin.set_pod_status(&pod, &statuses[0]).unwrap();
        assert_eq!(plugin.set_pod_status(&pod, &statuses[0]).unwrap(), UpdateOutcome::Unchanged, "{kind}");
        group.bench_function("set-pod-status-unchanged", |b| {
            b.iter(|| plugin.set_pod_status(&pod, black_box(&statuses[0])).unwrap())
        });
        let cached: serde_json::Value =
            serde_json::from_str(&plugin.get_pod_status(fixture::UID).unwrap().expect("cached").status).unwrap();
        let containers = cached["containerStatuses"].as_array().expect("container statuses");
        let app = containers.iter().find(|c| c["containerID"] == "containerd://app-1").expect("app-1");
        let ready = app["ready"].as_bool().unwrap_or(false);
        let same =
            |plugin: &mut Box<dyn Plugin>| plugin.set_container_readiness(fixture::UID, "containerd://app-1", ready);
        assert_eq!(same(&mut plugin).unwrap(), UpdateOutcome::Unchanged, "{kind}");
        group.bench_function("set-container-readiness-unchanged", |b| b.iter(|| same(&mut plugin).unwrap()));

        // One pod's sync: GET, status PUT and bookkeeping, for a freshly queued change.
        let w = world(1);
        fixture::bench_sync_pod(&mut group, "sync-pod", make(w.clone()), &w.queue);
        // The same status's whole way: update and sync together (per status delivered).
        let w = world(1);
        fixture::bench_update_and_sync(&mut group, "update-and-sync", make(w.clone()), &w.queue);
        group.finish();
    }
}

fn main() {
    let mut c = fixture::criterion();
    bench(&mut c);
    bench_release_modes(&mut c);
    c.final_summary();
    fixture::print_ratios();
}
