//! One operation of the operations bench in a loop, alone in its process, for a
//! profiler: `perf record` (with wasmtime's perf map) names where the time goes, and
//! `valgrind --tool=callgrind` counts instructions, which do not move with the noise
//! of a shared machine the way timings do. Run:
//!
//! `cargo run --release -p podstatus --example hot_path -- KIND OP [CALLS]`
//!
//! KIND is `component` (sandboxed, the default limits), `unmetered` (no CPU budget),
//! `supervised` or `native`; OP is `set-pod-status` (a changed status each call) or
//! `sync-pod` (one pod's sync of a freshly cached change; the update before each sync
//! is in the loop too, so profile `set-pod-status` beside it to take it out), or
//! `serde-floor` (the status parsed and serialised again: natively, or in the sandbox
//! by the bench's serde-floor plugin, `component` or `unmetered`). The fixture is the
//! bench's. The first call, which caches the pod's first status, is made before the
//! loop.
//!
//! `PODSTATUS_PERF_MAP=1` has wasmtime write the perf map that names the plugin's
//! functions (`perf record -g` then `perf report --no-children --sort sym`).
//!
//! `PODSTATUS_CORE=FILE.wasm` runs a plugin core module built by hand (a logic v1
//! program of `guest/plugins`, say with other codegen flags) instead of the
//! checkout's: it is made a component here, as the build scripts make theirs.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use k8s_openapi::api::core::v1::Pod;
use podstatus_backends::{FixedDeletionSafety, MemoryApiServer, PodManager, SyncQueue, SystemClock};
use podstatus_plugins::NativePlugin;
use podstatus_plugins::PODSTATUS_V1;
use podstatus_runtime::{Limits, Plugin, PluginExt, PluginRuntime, RuntimeConfig, SupervisedPlugin, World};

#[path = "../benches/fixture/mod.rs"]
mod fixture;

fn world(queue_capacity: usize) -> World {
    let api = Arc::new(MemoryApiServer::new());
    let pod_manager = Arc::new(PodManager::new());
    let pod: Pod = serde_json::from_str(&fixture::pod_json()).expect("the fixture pod");
    api.put_pod(pod.clone()).expect("a fresh API server takes the pod");
    pod_manager.add_pod(pod);
    pod_manager.follow_api_server(&api);
    World {
        api_server: api,
        pod_manager,
        deletion_safety: Arc::new(FixedDeletionSafety::new(false)),
        clock: Arc::new(SystemClock),
        queue: Arc::new(SyncQueue::new(queue_capacity)),
    }
}

fn runtime(limits: Limits) -> anyhow::Result<PluginRuntime> {
    let cache = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/podstatus-bench-cache");
    let perf_map = std::env::var_os("PODSTATUS_PERF_MAP").is_some();
    Ok(PluginRuntime::new(&RuntimeConfig { cache_dir: Some(cache), limits, perf_map, ..RuntimeConfig::default() })?)
}

/// The component to run: `PODSTATUS_CORE`'s, else the checkout's logic v1 (its serde
/// floor for `serde-floor`).
fn component_bytes(op: &str) -> anyhow::Result<Vec<u8>> {
    let Some(core) = std::env::var_os("PODSTATUS_CORE") else {
        let bytes = if op == "serde-floor" { podstatus_test_programs::SERDE_FLOOR } else { PODSTATUS_V1 };
        return Ok(bytes.to_vec());
    };
    let core = std::fs::read(&core)?;
    wit_component::ComponentEncoder::default().module(&core)?.validate(true).encode()
}

fn plugin(kind: &str, op: &str, world: World) -> anyhow::Result<Box<dyn Plugin>> {
    let unmetered = Limits { call_cpu_time: None, ..Limits::default() };
    let bytes = component_bytes(op)?;
    Ok(match kind {
        "component" => Box::new(runtime(Limits::default())?.load(&bytes)?.instantiate(world)?),
        "unmetered" => Box::new(runtime(unmetered)?.load(&bytes)?.instantiate(world)?),
        "supervised" => Box::new(SupervisedPlugin::new(runtime(Limits::default())?.load(&bytes)?, world)?),
        "native" => Box::new(NativePlugin::new(world, podstatus_plugins::LogicVersion::V1)),
        other => anyhow::bail!("unknown kind {other:?}: component, unmetered, supervised or native"),
    })
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, op, rest @ ..] = args.as_slice() else {
        anyhow::bail!("usage: hot_path KIND OP [CALLS]");
    };
    let calls: u64 = rest.first().map(|n| n.parse()).transpose()?.unwrap_or(20_000);
    let pod = fixture::pod_json();
    let statuses = [fixture::status_json(0), fixture::status_json(1)];
    let world = world(if op == "sync-pod" { 1 } else { 0 });
    let mut plugin = plugin(kind, op, world.clone())?;
    plugin.set_pod_status(&pod, &statuses[0])?;
    if let Some(request) = world.queue.pop() {
        plugin.sync_pod(&request)?;
    }
    let start = Instant::now();
    for turn in 1..=calls {
        let status = &statuses[(turn % 2) as usize];
        match op.as_str() {
            "set-pod-status" => {
                plugin.set_pod_status(&pod, status)?;
            }
            "serde-floor" if kind == "native" => {
                let parsed: k8s_openapi::api::core::v1::PodStatus = serde_json::from_str(status)?;
                std::hint::black_box(serde_json::to_string(&parsed)?);
            }
            "serde-floor" => {
                plugin.set_pod_status(&pod, status)?;
            }
            "sync-pod" => {
                plugin.set_pod_status(&pod, status)?;
                let request = world.queue.pop().ok_or_else(|| anyhow::anyhow!("no request was queued"))?;
                plugin.sync_pod(&request)?;
            }
            other => anyhow::bail!("unknown operation {other:?}: set-pod-status, sync-pod or serde-floor"),
        }
    }
    let took = start.elapsed();
    println!("{kind} {op}: {calls} calls, {:.2} µs each", took.as_secs_f64() * 1e6 / calls as f64);
    Ok(())
}
