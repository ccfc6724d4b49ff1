//! `podstatus simulate` as a user runs it: a real process with its embedded API server,
//! its node agent and its metrics over real HTTP, its JSON summary, its exit codes, and
//! its answers to signals (SIGTERM flushes, SIGHUP swaps, a second SIGINT cuts the
//! flush short).
//!
//! Runs are small (a dozen pods, a few seconds) and every wait is bounded but generous:
//! CI machines are slow and busy, and nothing here asserts how long anything took.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

mod common;

use common::{DEADLINE, free_port, podstatus};

/// `podstatus simulate ARGS`, its stdout (the summary) and stderr piped.
fn command(args: &[&str]) -> Command {
    let mut command = podstatus(&[&["simulate"], args].concat());
    command.stdout(Stdio::piped());
    command
}

/// Runs `podstatus simulate ARGS` to its end.
fn simulate(args: &[&str]) -> Output {
    command(args).output().expect("podstatus runs")
}

/// The JSON summary on stdout, with stderr in the message if it is not there.
fn summary(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "no JSON summary ({e}); exit {:?}\nstdout: {}\nstderr: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Runs `podstatus simulate ARGS`, which exits 0 with a summary whose check passed:
/// the summary.
fn passed_run(args: &[&str]) -> Value {
    let out = simulate(args);
    exited_0(&out);
    let s = summary(&out);
    check_passed(&s);
    s
}

fn exited_0(out: &Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stderr: {}\nstdout: {}",
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout)
    );
}

/// The final check found every cached status in the API server.
fn check_passed(summary: &Value) {
    assert_eq!(summary["check"]["differing"], serde_json::json!([]), "{summary:#}");
    assert!(summary["check"]["compared"].as_u64().unwrap() > 0, "{summary:#}");
}

fn calls(summary: &Value, verb: &str, outcome: &str) -> u64 {
    summary["api_calls"][verb][outcome].as_u64().unwrap_or(0)
}

/// A file of this test's own, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, bytes: &[u8]) -> TempFile {
        let path = std::env::temp_dir().join(format!("podstatus-simulate-test-{}-{name}", std::process::id()));
        std::fs::write(&path, bytes).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Logic v2 built for contract 0.1.1: swapping to it from the default plugin (0.2.0)
/// crosses contracts, from overlapped syncs to serial ones, under churn.
fn v2_plugin(name: &str) -> TempFile {
    TempFile::new(name, podstatus_plugins::PODSTATUS_V2_ON_0_1)
}

#[test]
fn a_short_run_exits_0_with_a_json_summary_whose_check_passed() {
    let out = simulate(&["--pods", "12", "--duration", "2", "--json", "--churn", "30"]);
    exited_0(&out);
    let s = summary(&out);
    check_passed(&s);
    // The documented schema's name and what ran (docs/json-output.md).
    assert_eq!(s["format"], "podstatus.simulate/v1");
    assert_eq!(s["logic"], "v1", "simulate keeps the seed");
    assert_eq!(s["plugin_sha256"].as_str().map(str::len), Some(64), "{s:#}");
    // The API server's URL comes at the start, not only in the summary.
    let stderr = String::from_utf8_lossy(&out.stderr);
    let url = s["api_server"].as_str().expect("a URL");
    assert!(stderr.lines().next().is_some_and(|l| l.contains("logic v1, plugin sha256:")), "{stderr}");
    assert!(stderr.contains(&format!("; API server {url} (kubectl --server {url} get pods -A)")), "{stderr}");
    assert_eq!(s["plugin"], "kubelet:status@0.2.0");
    assert_eq!(s["pods"], 12);
    assert_eq!(s["static_pods"], 2, "the two static pods of the default manifest folder");
    assert!(s["pods_created"].as_u64().unwrap() >= 1, "{s:#}");
    assert!(s["versions"].as_u64().unwrap() > 0, "{s:#}");
    assert!(calls(&s, "get", "Success") > 0, "v1 reads the pod before each write: {s:#}");
    assert!(calls(&s, "update_status", "Success") > 0, "v1 writes with a status update: {s:#}");
    assert_eq!(calls(&s, "patch_status", "Success"), 0, "v1 never patches: {s:#}");
    assert!(s["propagation_ms"]["count"].as_u64().unwrap() > 0, "{s:#}");
    assert!(!s["pods_by_phase"].as_object().unwrap().is_empty(), "{s:#}");
    assert_eq!(s["swap"], Value::Null);
    assert!(s["api_server"].as_str().unwrap().starts_with("http://127.0.0.1:"), "{s:#}");
    assert!(s["plugin_busy_us_per_update"].as_f64().unwrap() > 0.0, "the plugin was held: {s:#}");
    assert_eq!(s.get("new_paths"), None, "only a plugin with the resize calls plays 1.35's paths: {s:#}");
}

/// The default run's honest plugin (logic v1) is refused nothing: it reads a pod it has
/// just deleted itself (a later version's request, as the seed's syncPod does), which
/// the reach guard answers as the API server does (NotFound), not with a refusal.
/// The churn is raised from its default so that pods live whole lives (and are deleted)
/// within the run: at the default rate, 8 s gives each of the 50 pods about three events,
/// and whether one reaches its deletion was a matter of the machine's timing.
#[test]
fn the_default_run_is_refused_no_api_call() {
    let s = passed_run(&["--duration", "8", "--json", "--churn", "60"]);
    assert!(calls(&s, "delete", "Success") > 0, "pods were deleted by the status manager: {s:#}");
    for (verb, outcomes) in s["api_calls"].as_object().expect("api calls") {
        assert_eq!(outcomes.get("Forbidden"), None, "{verb}: {s:#}");
    }
}

/// A latency summary as `propagation_ms` has it: count, p50, p95, p99, max.
fn latency_shaped(latency: &Value) {
    for field in ["p50", "p95", "p99", "max"] {
        assert!(latency[field].as_f64().is_some(), "{field} in {latency:#}");
    }
    assert!(latency["count"].as_u64().unwrap() > 0, "{latency:#}");
    assert!(latency["p50"].as_f64() <= latency["p99"].as_f64(), "{latency:#}");
    assert!(latency["p99"].as_f64() <= latency["max"].as_f64(), "{latency:#}");
}

#[test]
fn an_api_latency_delays_the_status_client_and_the_summary_shows_what_it_cost() {
    let s = passed_run(&["--pods", "8", "--duration", "2", "--json", "--churn", "20", "--api-latency", "20ms"]);
    let written = s["statuses_written"].as_u64().unwrap();
    assert!(written > 0, "{s:#}");
    assert!(written <= calls(&s, "update_status", "Success"), "only the churn's writes count: {s:#}");
    let per_second = written as f64 / s["seconds"].as_f64().unwrap();
    assert!((s["statuses_written_per_second"].as_f64().unwrap() - per_second).abs() < 1e-6, "{s:#}");
    // Every write waited for the status client's GET and its update: 20 ms each.
    latency_shaped(&s["propagation_ms"]);
    let p50 = s["propagation_ms"]["p50"].as_f64().unwrap();
    assert!(p50 >= 20.0, "the latency was not applied: propagation p50 {p50} ms: {s:#}");
    let caller = &s["caller_latency_ms"];
    latency_shaped(caller);
    let by_operation = caller["by_operation"].as_object().unwrap();
    latency_shaped(&by_operation["set_pod_status"]);
    let counted: u64 = by_operation.values().map(|l| l["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, caller["count"].as_u64().unwrap(), "{caller:#}");
}

#[test]
fn an_api_latency_is_refused_with_another_api_server() {
    for other in [&["--server", "http://127.0.0.1:1"][..], &["--kubeconfig", "/nonexistent"], &["--kubeconfig"]] {
        let mut args = vec!["--api-latency", "20ms"];
        args.extend_from_slice(other);
        let out = simulate(&args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("--api-latency") && stderr.contains(other[0]), "{args:?}: {stderr}");
        assert!(stderr.contains("cannot be used with"), "{args:?}: {stderr}");
    }
}

#[test]
fn an_api_server_failing_a_third_of_the_calls_loses_no_status() {
    // Half the injected faults lose the answer of a call that did happen: the plugin
    // thinks a write failed that landed. Batch syncs every second retry the rest.
    for logic in ["v1", "v2", "v3"] {
        let s = passed_run(&[
            "--pods",
            "12",
            "--duration",
            "2",
            "--json",
            "--churn",
            "30",
            "--api-fault-rate",
            "0.33",
            "--sync-period",
            "1",
            "--logic",
            logic,
        ]);
        let failed: u64 =
            ["get", "update_status", "patch_status"].iter().map(|v| calls(&s, v, "ServiceUnavailable")).sum();
        assert!(failed > 0, "{logic}: faults were injected: {s:#}");
    }
}

#[test]
fn a_fleet_run_registers_every_node_and_reports_them_ready() {
    // At one event a second, 30 pods would take 30 s to arrive: --create-rate has them
    // all within the run.
    let s = passed_run(&[
        "--nodes",
        "3",
        "--pods",
        "30",
        "--duration",
        "3",
        "--json",
        "--churn",
        "1",
        "--create-rate",
        "300",
    ]);
    assert!(s["pods_created"].as_u64().unwrap() >= 30, "{s:#}");
    assert_eq!((s["nodes"].as_u64(), s["nodes_ready"].as_u64()), (Some(3), Some(3)), "{s:#}");
    assert_eq!(s["leases_late"], 0, "{s:#}");
    assert_eq!(s["static_pods"], 6, "the default two static pods on each node: {s:#}");
    assert!(s["idle_memory_mib_per_node"].as_f64().is_some_and(|mib| mib >= 0.0), "{s:#}");
    assert!(s["peak_memory_mib"].as_f64().is_some_and(|mib| mib > 0.0), "{s:#}");
    // The memory account: every part counted, the pods held by the nodes (30 and the
    // static and mirror pods, less those deleted by the end), each part's growth per pod.
    let memory = &s["memory"];
    assert!(memory["pods"].as_u64().is_some_and(|pods| pods >= 12), "{memory:#}");
    for part in ["store", "pod_managers", "plugins", "supervisors", "host_views", "drivers"] {
        assert!(memory["bytes"][part].as_u64().is_some_and(|bytes| bytes > 0), "{part}: {memory:#}");
        assert!(memory["bytes_per_pod"][part].as_f64().is_some_and(|bytes| bytes >= 0.0), "{part}: {memory:#}");
        assert!(memory["at_start_bytes"][part].is_u64(), "{part}: {memory:#}");
    }
    assert!(memory["peak_rss_bytes"].as_u64().is_some_and(|peak| peak > 0), "{memory:#}");
    assert!(memory["allocator_overhead_per_pod"].is_number(), "{memory:#}");
    for (verb, outcomes) in s["api_calls"].as_object().expect("api calls") {
        assert_eq!(outcomes.get("Forbidden"), None, "{verb}: {s:#}");
    }
    let out = simulate(&["--nodes", "0"]);
    assert_eq!(out.status.code(), Some(2), "a fleet of no node is refused");
    for rate in ["0", "-5", "NaN", "inf"] {
        let out = simulate(&[&format!("--create-rate={rate}")]);
        assert_eq!(out.status.code(), Some(2), "--create-rate {rate}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("not a rate above zero"), "{rate}");
    }
}

#[test]
fn a_fleets_canary_is_decided_by_itself_and_the_check_holds() {
    // Half the nodes move from v1 to v3 one second in, are watched for two, and are
    // promoted or rolled back by the rollout itself; either way nothing is lost.
    let v3 = TempFile::new("canary-v3.wasm", podstatus_plugins::PODSTATUS_V3);
    let s = passed_run(&[
        "--nodes",
        "4",
        "--pods",
        "16",
        "--churn",
        "30",
        "--create-rate",
        "100",
        "--duration",
        "5",
        "--json",
        "--canary",
        "50%",
        "--canary-plugin",
        v3.path(),
        "--canary-at",
        "1",
        "--canary-watch",
        "2",
        "--canary-min-samples",
        "5",
    ]);
    let rollout = &s["rollout"];
    assert_eq!((&rollout["group"], &rollout["canary_nodes"]), (&Value::from("canary"), &Value::from(2)), "{s:#}");
    let decision = rollout["decision"].as_str().unwrap_or_default();
    assert!(["promoted", "rolled back"].contains(&decision), "{s:#}");
    assert_eq!(rollout["decided_by"], "automatic", "{s:#}");
    let criteria = rollout["verdict"]["criteria"].as_array().expect("the comparison's criteria");
    assert_eq!(criteria.len(), 4, "{s:#}");
    assert!(criteria.iter().any(|c| c["judged"] == true), "decided on samples: {s:#}");
    let groups: Vec<&str> = s["groups"].as_array().unwrap().iter().filter_map(|g| g["name"].as_str()).collect();
    assert_eq!(groups, ["base", "canary"], "{s:#}");
    let out = simulate(&["--nodes", "1", "--canary", "50%", "--canary-plugin", v3.path(), "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2), "a canary needs a fleet");
    assert!(String::from_utf8_lossy(&out.stderr).contains("two nodes or more"));
}

#[test]
fn the_table_names_the_check_when_not_asked_for_json() {
    let out = simulate(&["--pods", "10", "--duration", "1", "--quiet"]);
    exited_0(&out);
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("API server equals the cache"), "{table}");
    assert!(table.contains("plugin") && table.contains("kubelet:status@0.2.0"), "{table}");
    assert!(table.lines().any(|l| l.starts_with("logic ") && l.contains("v1, plugin sha256:")), "{table}");
    // Durations say their unit, as the flags take them: `p50 6.54ms`, never `6.54 ms`.
    let propagation = table.lines().find(|l| l.starts_with("propagation")).expect("a propagation row");
    assert!(!propagation.contains(" ms") && propagation.contains("s,"), "{propagation}");
    assert!(String::from_utf8_lossy(&out.stderr).is_empty(), "--quiet says nothing on stderr");
}

/// A short run of `logic` on contract 0.2.0, which writes patches: the summary.
fn patching_run(logic: &str) -> Value {
    let s = passed_run(&["--logic", logic, "--pods", "12", "--duration", "2", "--json", "--churn", "30"]);
    assert_eq!(s["plugin"], "kubelet:status@0.2.0");
    assert!(calls(&s, "patch_status", "Success") > 0, "{logic} writes a patch with the UID precondition: {s:#}");
    assert_eq!(s.get("new_paths"), None, "{logic} has no resize calls: {s:#}");
    s
}

#[test]
fn logic_v2_writes_statuses_as_patches() {
    let s = patching_run("v2");
    assert_eq!(calls(&s, "update_status", "Success"), 0, "v2 never replaces the status: {s:#}");
}

#[test]
fn logic_v3_writes_each_version_with_one_patch_and_no_get() {
    let s = patching_run("v3");
    assert_eq!(calls(&s, "get", "Success"), 0, "v3 never reads before writing without faults: {s:#}");
    // About one call per version; deletes (and the batch's reconciliations) weigh more
    // on 12 pods for 2 s than on the README's 1,000 pods for 90 s (1.02 to 1.04).
    let per_version = s["api_calls_per_version"].as_f64().unwrap();
    assert!(per_version < 1.25, "{per_version} API calls per version: {s:#}");
}

/// Logic v4's paths run: generations moved by resizes, sidecars, resize conditions set
/// and cleared through the plugin and written in the statuses, PodReadyToStartContainers;
/// and the API server still equals the cache.
#[test]
fn logic_v4_runs_generations_sidecars_and_resizes_and_the_check_stays_clean() {
    let s = passed_run(&["--logic", "v4", "--pods", "16", "--duration", "6", "--json", "--churn", "50"]);
    assert_eq!(s["plugin"], "kubelet:status@0.2.1");
    assert_eq!(s["faults"], serde_json::json!({}), "{s:#}");
    let paths = &s["new_paths"];
    let count = |field: &str| paths[field].as_u64().unwrap_or_else(|| panic!("{field}: {s:#}"));
    assert!(count("sidecar_pods") > 0, "{s:#}");
    assert!(count("spec_changes") > 0, "owners resized pods: {s:#}");
    let set: u64 = paths["resize_conditions_set"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
    assert!(set > 0, "{s:#}");
    assert!(count("resize_conditions_cleared") > 0, "{s:#}");
    assert!(count("statuses_with_resize_conditions") > 0, "{s:#}");
    assert!(count("api_pods_with_observed_generation") > 0, "v4 set observedGeneration: {s:#}");
    assert!(count("api_pods_ready_to_start_containers") > 0, "{s:#}");
    assert!(count("api_pods_with_sidecar_status") > 0, "{s:#}");
    assert!(calls(&s, "patch_status", "Success") > 0, "{s:#}");
    assert!(s["plugin_busy_us_per_update"].as_f64().unwrap() > 0.0, "{s:#}");
}

#[test]
fn a_swap_at_a_time_moves_to_v2_and_loses_nothing() {
    let v2 = v2_plugin("swap-at.wasm");
    // Long enough after the swap for v2 to write even on a loaded machine (a full test
    // run starts many of these at once on two cores).
    let args = ["--pods", "12", "--churn", "30", "--duration", "6", "--json", "--swap-to", v2.path(), "--swap-at", "1"];
    let s = passed_run(&args);
    let swap = &s["swap"];
    assert_eq!(swap["error"], Value::Null, "{s:#}");
    assert_eq!(swap["from"], "kubelet:status@0.2.0", "{s:#}");
    assert_eq!(swap["to"], "kubelet:status@0.1.1", "{s:#}");
    assert!(swap["at_seconds"].as_f64().unwrap() >= 1.0, "{s:#}");
    assert_eq!(s["plugin"], "kubelet:status@0.1.1", "the summary names the plugin that ran last");
    assert!(calls(&s, "update_status", "Success") > 0, "v1 wrote before the swap: {s:#}");
    assert!(calls(&s, "patch_status", "Success") > 0, "v2 wrote after it: {s:#}");
}

#[test]
fn a_swap_at_a_time_happens_even_when_the_churn_is_more_than_the_node_keeps_up_with() {
    // Far more events than a node can play: the driver is always behind its schedule
    // and never idles, yet the swap must still come at its time, not after the churn.
    let v2 = v2_plugin("swap-overload.wasm");
    let args = [
        "--pods",
        "100",
        "--churn",
        "5000",
        "--duration",
        "2",
        "--json",
        "--swap-to",
        v2.path(),
        "--swap-at",
        "0.5",
        "--kube-api-qps",
        "1000",
        "--kube-api-burst",
        "1000",
    ];
    let s = passed_run(&args);
    assert_eq!(s["swap"]["error"], Value::Null, "{s:#}");
    assert_eq!(s["swap"]["to"], "kubelet:status@0.1.1", "{s:#}");
    let at = s["swap"]["at_seconds"].as_f64().unwrap();
    assert!(at < s["seconds"].as_f64().unwrap(), "the swap came during the churn: {s:#}");
}

#[test]
fn a_swap_to_a_file_that_is_no_plugin_is_refused_before_the_run() {
    // Compiled before the churn starts: found at once, not at --swap-at (nor after a
    // run that would then succeed without the swap it was asked for).
    let garbage = TempFile::new("garbage.wasm", b"\0asm this is not a component at all");
    let args =
        ["--pods", "10", "--churn", "30", "--duration", "30", "--json", "--swap-to", garbage.path(), "--swap-at", "20"];
    let started = std::time::Instant::now();
    let out = simulate(&args);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty(), "no summary: no run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--swap-to") && stderr.contains(garbage.path()), "{stderr}");
    assert!(started.elapsed() < std::time::Duration::from_secs(20), "refused before the swap's time");
}

#[test]
fn unusable_options_exit_2_with_a_line_on_stderr() {
    let out = simulate(&["--server", "ftp://nowhere", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("ftp://nowhere"));
    let out = simulate(&["--plugin", "/nonexistent/plugin.wasm", "--duration", "1"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/plugin.wasm"));
}

/// `GET /metrics`, `None` while nothing answers there.
fn scrape(addr: SocketAddr) -> Option<String> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    response.starts_with("HTTP/1.1 200").then_some(response)
}

/// The counter of API calls with this verb and outcome in a scrape.
fn counter(metrics: &str, verb: &str, outcome: &str) -> u64 {
    let series = format!("podstatus_api_calls_total{{verb=\"{verb}\",outcome=\"{outcome}\"}} ");
    metrics.lines().find_map(|line| line.strip_prefix(&series)).and_then(|n| n.trim().parse().ok()).unwrap_or(0)
}

/// A `simulate` process running until a signal, its stderr read on a thread of its own
/// (so the pipe never fills) and forwarded line by line.
struct Running {
    child: Child,
    metrics: SocketAddr,
    stderr: std::sync::mpsc::Receiver<String>,
    stderr_seen: Vec<String>,
}

impl Running {
    fn start(extra: &[&str]) -> Running {
        let metrics = free_port();
        let addr = metrics.to_string();
        let mut args = vec!["--duration", "off", "--json", "--metrics-addr", &addr];
        args.extend_from_slice(extra);
        let (child, stderr) = common::start(command(&args));
        Running { child, metrics, stderr, stderr_seen: Vec::new() }
    }

    /// Waits until the metrics endpoint shows `verb` calls that succeeded.
    fn wait_for_writes(&mut self, verb: &str) {
        let deadline = Instant::now() + DEADLINE;
        loop {
            if let Some(metrics) = scrape(self.metrics)
                && counter(&metrics, verb, "Success") > 0
            {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                self.drain_stderr();
                panic!("simulate exited early ({status}): {}", self.stderr_seen.join("\n"));
            }
            assert!(Instant::now() < deadline, "no {verb} writes in the metrics within {DEADLINE:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for a line on stderr containing `text`.
    fn wait_for_stderr(&mut self, text: &str) {
        let deadline = Instant::now() + DEADLINE;
        while !self.stderr_seen.iter().any(|line| line.contains(text)) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => self.stderr_seen.push(line),
                Err(e) => panic!("no {text:?} on stderr ({e}): {}", self.stderr_seen.join("\n")),
            }
        }
    }

    fn drain_stderr(&mut self) {
        while let Ok(line) = self.stderr.try_recv() {
            self.stderr_seen.push(line);
        }
    }

    fn signal(&self, signal: libc::c_int) {
        common::signal(&self.child, signal);
    }

    /// Waits (bounded) for the exit; returns the status and stdout.
    fn wait(mut self) -> (ExitStatus, Vec<u8>, String) {
        let deadline = Instant::now() + DEADLINE;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            if Instant::now() >= deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                self.drain_stderr();
                panic!("simulate did not exit within {DEADLINE:?}: {}", self.stderr_seen.join("\n"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut stdout = Vec::new();
        self.child.stdout.take().unwrap().read_to_end(&mut stdout).unwrap();
        // The reader thread ends with the pipe; wait for what it still has.
        while let Ok(line) = self.stderr.recv_timeout(Duration::from_secs(10)) {
            self.stderr_seen.push(line);
        }
        (status, stdout, self.stderr_seen.join("\n"))
    }

    /// SIGTERM: the process exits 0 with a summary whose check passed. The summary and
    /// stderr.
    fn terminated_and_passed(self) -> (Value, String) {
        self.signal(libc::SIGTERM);
        let (status, stdout, stderr) = self.wait();
        assert_eq!(status.code(), Some(0), "{stderr}");
        let s = parse_summary(&stdout, &stderr);
        check_passed(&s);
        (s, stderr)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        // A failed assertion must not leave the process running.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn parse_summary(stdout: &[u8], stderr: &str) -> Value {
    serde_json::from_slice(stdout).unwrap_or_else(|e| {
        panic!("no JSON summary ({e})\nstdout: {}\nstderr: {stderr}", String::from_utf8_lossy(stdout))
    })
}

#[test]
fn sigterm_stops_the_churn_flushes_and_exits_by_the_check() {
    let mut run = Running::start(&["--pods", "10"]);
    run.wait_for_writes("update_status");
    let (s, stderr) = run.terminated_and_passed();
    assert!(stderr.contains("stopping; flushing pending statuses"), "{stderr}");
    assert!(s["versions"].as_u64().unwrap() > 0, "{s:#}");
    assert!(calls(&s, "update_status", "Success") > 0, "{s:#}");
}

#[test]
fn sighup_swaps_to_the_swap_to_plugin_while_running() {
    let v2 = v2_plugin("sighup.wasm");
    let mut run = Running::start(&["--pods", "10", "--churn", "30", "--swap-to", v2.path()]);
    run.wait_for_writes("update_status");
    run.signal(libc::SIGHUP);
    // v2 writes patches: once one is in the metrics, v2 is serving.
    run.wait_for_writes("patch_status");
    let (s, _) = run.terminated_and_passed();
    assert_eq!(s["swap"]["error"], Value::Null, "{s:#}");
    assert_eq!(s["swap"]["from"], "kubelet:status@0.2.0", "{s:#}");
    assert_eq!(s["swap"]["to"], "kubelet:status@0.1.1", "{s:#}");
    assert_eq!(s["plugin"], "kubelet:status@0.1.1", "{s:#}");
}

#[test]
fn a_second_sigint_cuts_the_flush_short_with_exit_130_and_a_summary_that_says_so() {
    // A client allowed one request a second, facing many pods' churn: the flush has a
    // backlog of minutes, so the second signal surely arrives while it runs.
    let args =
        ["--pods", "40", "--churn", "80", "--kube-api-qps", "1", "--kube-api-burst", "2", "--flush-timeout", "600"];
    let mut run = Running::start(&args);
    run.wait_for_writes("get");
    run.signal(libc::SIGINT);
    // Two signals sent back to back may be delivered as one: send the second only once
    // the first was taken.
    run.wait_for_stderr("stopping; flushing pending statuses");
    run.signal(libc::SIGINT);
    let cut_at = Instant::now();
    let (status, stdout, stderr) = run.wait();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("cutting the flush short"), "{stderr}");
    // A generous bound, to catch a flush that runs on: the backlog takes minutes.
    assert!(cut_at.elapsed() < Duration::from_secs(20), "{:?}: {stderr}", cut_at.elapsed());
    let s = parse_summary(&stdout, &stderr);
    // --duration off: the first signal was the run's end, the second cut the flush.
    assert_eq!(s["ended"]["interrupted"], false, "{s:#}");
    assert_eq!(s["ended"]["flush"], "interrupted", "{s:#}");
}

#[test]
fn flags_as_the_kubelets_writes_them() {
    // --hostname-override names the node, durations as Go writes them, -o json.
    let args =
        ["--hostname-override", "node-7", "--pods", "4", "--duration", "1s500ms", "--sync-period", "2s", "-o", "json"];
    let s = passed_run(&args);
    assert_eq!(s["node"], "node-7", "{s:#}");
    assert!((1.5..10.0).contains(&s["seconds"].as_f64().unwrap()), "{s:#}");
}

#[test]
fn bad_flags_are_refused_with_what_was_expected() {
    let out = simulate(&["--duration", "1m3x"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("\"1m3x\" is not a duration"), "{stderr}");
    // --context only makes sense with a kubeconfig.
    let out = simulate(&["--context", "prod"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--kubeconfig"));
    // A malformed RUST_LOG is an error, not silently the default filter.
    let out = command(&["--duration", "1"]).env("RUST_LOG", "podstatus=loud").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("RUST_LOG=\"podstatus=loud\" is not a log filter"));
}
