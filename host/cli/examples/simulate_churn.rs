//! Measures `podstatus simulate` across churn rates: propagation latency, API calls per
//! status version, statuses lost (the final check) and the process's peak memory. Each
//! rate runs in its own `podstatus` process (so each peak is its own), side by side in
//! one sitting. Build the binary first, in release:
//!
//! `cargo build --release -p podstatus && cargo run --release -p podstatus --example simulate_churn -- 1000 60 10,20,40,80,160`
//!
//! Arguments: pods, seconds per run, churn rates (events per second, comma-separated),
//! then anything else is passed to `simulate` as is (e.g. `--kube-api-qps 500`).
//!
//! With `PODSTATUS_CHURN_JSON=FILE`, every run's summary (`simulate --json`'s, with the
//! run's `churn`, `kube_api_qps` and `start_and_flush_seconds` added) is also written
//! to FILE, `{"source": COMMAND, "runs": [...]}`: what `docs/figures/plot_runs.py`
//! draws (`docs/figures/churn-*.json`).

use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let pods = args.first().map_or("1000", String::as_str);
    let seconds = args.get(1).map_or("60", String::as_str);
    let rates = args.get(2).map_or("10,20,40,80,160", String::as_str);
    let extra = args.get(3..).unwrap_or_default();
    // The example lives in target/release/examples/; the binary one level up.
    let exe = std::env::current_exe()?;
    let binary = exe.parent().and_then(|examples| examples.parent()).map(|dir| dir.join("podstatus"));
    let binary = binary.filter(|b| b.exists()).ok_or("build the binary first: cargo build --release -p podstatus")?;

    println!(
        "pods {pods}, {seconds} s per run, {}",
        if extra.is_empty() { "default QPS 50 / burst 100".to_owned() } else { extra.join(" ") }
    );
    println!();
    println!(
        "| churn (events/s) | new versions | statuses written | API calls / version | p50 | p95 | p99 | max | past a full queue | start + final flush | pods differing | peak RSS | written / s (churn) | caller p50 | caller p99 |"
    );
    println!("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let qps = extra
        .iter()
        .position(|arg| arg == "--kube-api-qps")
        .and_then(|at| extra.get(at + 1))
        .and_then(|qps| qps.parse::<f64>().ok())
        .unwrap_or(50.0);
    let mut runs = Vec::new();
    for rate in rates.split(',') {
        let started = std::time::Instant::now();
        let output = Command::new(&binary)
            .args(["simulate", "--json", "--quiet", "--pods", pods, "--duration", seconds, "--churn", rate])
            .args(["--flush-timeout", "300"])
            .args(extra)
            .output()?;
        let wall = started.elapsed().as_secs_f64();
        let summary: serde_json::Value = serde_json::from_slice(&output.stdout)
            .map_err(|e| format!("churn {rate}: no summary ({e}): {}", String::from_utf8_lossy(&output.stderr)))?;
        let f = |pointer: &str| summary.pointer(pointer).and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN);
        let run = f("/seconds");
        let written = summary["api_calls"]
            .as_object()
            .into_iter()
            .flatten()
            .filter(|(verb, _)| verb.ends_with("status"))
            .filter_map(|(_, outcomes)| outcomes["Success"].as_f64())
            .sum::<f64>();
        let lost = summary["check"]["differing"].as_array().map_or(0, Vec::len);
        println!(
            "| {rate} | {} | {} | {:.2} | {:.1} ms | {:.1} ms | {:.1} ms | {:.1} ms | {} | {:.1} s | {lost} of {} | {:.0} MiB | {:.1} | {:.3} ms | {:.3} ms |",
            f("/versions"),
            written,
            f("/api_calls_per_version"),
            f("/propagation_ms/p50"),
            f("/propagation_ms/p95"),
            f("/propagation_ms/p99"),
            f("/propagation_ms/max"),
            f("/queue_full"),
            wall - run,
            f("/check/compared"),
            f("/peak_memory_mib"),
            f("/statuses_written_per_second"),
            f("/caller_latency_ms/p50"),
            f("/caller_latency_ms/p99"),
        );
        let flush = wall - f("/seconds");
        let mut run = summary;
        run["churn"] = serde_json::json!(rate.parse::<f64>().unwrap_or(f64::NAN));
        run["kube_api_qps"] = serde_json::json!(qps);
        run["start_and_flush_seconds"] = serde_json::json!(flush);
        runs.push(run);
    }
    if let Some(path) = std::env::var_os("PODSTATUS_CHURN_JSON") {
        let command = std::env::args().collect::<Vec<_>>().join(" ");
        let document = serde_json::json!({"source": command, "runs": runs});
        std::fs::write(&path, serde_json::to_vec_pretty(&document)?)?;
    }
    Ok(())
}
