//! The `podstatus` binary as a user runs it: exit codes, output streams, stdin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

fn podstatus(args: &[&str], stdin: Option<&str>) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_podstatus"))
        .args(args)
        .env("PODSTATUS_CACHE_DIR", workspace().join("target").join("podstatus-test-cache"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("podstatus runs");
    if let Some(input) = stdin {
        child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    child.wait_with_output().unwrap()
}

fn example() -> String {
    workspace().join("examples").join("web-readiness.json").display().to_string()
}

#[test]
fn replay_of_the_example_exits_0_with_a_report() {
    let out = podstatus(&["replay", &example()], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["results"].as_array().unwrap().len(), 9);
    assert_eq!(report["fault"], serde_json::Value::Null);
    assert_eq!(report["apiserver"][0]["metadata"]["name"], "web-0");
}

#[test]
fn replay_is_byte_identical_across_runs_and_from_stdin() {
    let first = podstatus(&["replay", &example()], None);
    let second = podstatus(&["replay", &example()], None);
    assert_eq!(first.stdout, second.stdout);
    let text = std::fs::read_to_string(example()).unwrap();
    let piped = podstatus(&["replay", "-"], Some(&text));
    assert_eq!(piped.status.code(), Some(0));
    assert_eq!(first.stdout, piped.stdout);
}

#[test]
fn unusable_traces_exit_2_with_one_line_naming_the_step() {
    let cases = [
        ("not json", "not JSON"),
        (r#"{"steps": [{"op": "sync"}, {"op": "explode"}]}"#, "step 1: unknown op \"explode\""),
        (r#"{"steps": [{"op": "get-pod-status"}]}"#, "step 0: missing field `uid`"),
        (r#"{"steps": [{"op": "get-pod-status", "uid": "ghost"}]}"#, "step 0: UID \"ghost\""),
        (r#"{"pod_manager": [{"metadata": {"name": "x"}}]}"#, "pod_manager[0]: pod has no metadata.uid"),
        (
            r#"{"steps": [{"op": "set-container-startup", "uid": "u", "container_id": "c", "started": true}]}"#,
            "step 0: UID",
        ),
    ];
    for (trace, expected) in cases {
        let out = podstatus(&["replay", "-"], Some(trace));
        assert_eq!(out.status.code(), Some(2), "{trace}");
        assert!(out.stdout.is_empty(), "nothing on stdout for {trace}");
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(stderr.lines().count(), 1, "one line for {trace}: {stderr}");
        assert!(stderr.starts_with(&format!("podstatus replay: standard input: {expected}")), "{trace}: {stderr}");
    }
}

#[test]
fn a_missing_plugin_file_is_unusable_input() {
    let out = podstatus(&["replay", "--plugin", "/nonexistent/plugin.wasm", &example()], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/plugin.wasm"));
}

#[test]
fn inspect_prints_the_world_and_contract_version() {
    let out = podstatus(&["inspect"], None);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("contract: kubelet:status@0.2.0"), "{text}");
    assert!(text.contains("loadable by this host: yes"), "{text}");
    assert!(text.contains("export kubelet:status/manager@0.2.0;"), "{text}");
    // Every plugin program links the glue of every contract, and wit-component unifies
    // semver-compatible imports to the newest: a 0.2.0 plugin names 0.2.1's imports
    // (the same interfaces; this host serves both).
    for import in ["pod-manager", "deletion-safety", "clock", "logging", "sync-queue"] {
        let named = ["0.2.0", "0.2.1"].iter().any(|v| text.contains(&format!("import kubelet:status/{import}@{v};")));
        assert!(named, "{import} missing: {text}");
    }
    // The host makes a 0.2.0 plugin's API calls: it cannot reach the API server.
    assert!(!text.contains("import kubelet:status/api-server"), "{text}");
    assert!(!text.contains("wasi:"), "the plugin must import no WASI: {text}");
    assert!(text.starts_with("logic: v1: the 2017 kubelet (the seed), "), "{text}");
}

#[test]
fn inspect_and_help_say_which_release_and_mode_a_plugin_follows() {
    for (logic, said) in [
        ("v4", "logic: 1.35-one-call (alias v4): Kubernetes 1.35's status manager, one UID-guarded PATCH"),
        ("1.37", "logic: 1.37: Kubernetes 1.37's status manager, reading the pod, then patching its status"),
    ] {
        let out = podstatus(&["inspect", "--logic", logic], None);
        assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(text.starts_with(said), "{logic}: {text}");
    }
    let out = podstatus(&["replay", "--help"], None);
    let help = String::from_utf8(out.stdout).unwrap();
    for choice in ["1.27:", "1.27-one-call:", "1.35:", "1.35-one-call:", "1.37:", "1.37-one-call:", "(alias v4)"] {
        assert!(help.contains(choice), "{choice}: {help}");
    }
}

#[test]
fn help_is_there_for_every_command() {
    for args in [&["--help"][..], &["replay", "--help"], &["inspect", "--help"], &["agent", "--help"]] {
        let out = podstatus(args, None);
        assert_eq!(out.status.code(), Some(0));
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage: podstatus"));
    }
    let agent = String::from_utf8_lossy(&podstatus(&["agent", "--help"], None).stdout).into_owned();
    for flag in [
        "--node-name",
        "--hostname-override",
        "--node-lease-duration",
        "--node-status-update-frequency",
        "--kubeconfig",
    ] {
        assert!(agent.contains(flag), "agent --help lacks {flag}:\n{agent}");
    }
}

#[test]
fn replay_with_node_runs_the_reach_guard_and_reports_refusals() {
    let dir = workspace().join("tests").join("fixtures").join("replay-guarded");
    for name in ["v1-terminal-phase-does-not-go-back", "v1-pod-of-another-node"] {
        let trace = dir.join(format!("{name}.trace.json")).display().to_string();
        let guarded = podstatus(&["replay", "--node", "node-1", &trace], None);
        assert_eq!(guarded.status.code(), Some(0), "{}", String::from_utf8_lossy(&guarded.stderr));
        let expected = std::fs::read_to_string(dir.join(format!("{name}.report.json"))).unwrap();
        assert_eq!(String::from_utf8_lossy(&guarded.stdout), expected, "{name}");
        assert!(expected.contains("\"refused\": "), "{name}");
        // Without --node: the seed's unguarded world, no refusal.
        let open = podstatus(&["replay", &trace], None);
        assert_eq!(open.status.code(), Some(0));
        assert!(!String::from_utf8_lossy(&open.stdout).contains("\"refused\""), "{name}");
    }
}

#[test]
fn native_runs_every_logic_version_as_its_plugin_does() {
    for logic in ["v1", "v2", "v3"] {
        let native = podstatus(&["replay", "--native", "--logic", logic, &example()], None);
        assert_eq!(
            native.status.code(),
            Some(0),
            "--native --logic {logic}: {}",
            String::from_utf8_lossy(&native.stderr)
        );
        let sandboxed = podstatus(&["replay", "--logic", logic, &example()], None);
        assert_eq!(sandboxed.status.code(), Some(0), "--logic {logic}");
        assert_eq!(
            String::from_utf8_lossy(&native.stdout),
            String::from_utf8_lossy(&sandboxed.stdout),
            "--native --logic {logic} reports what the plugin does"
        );
    }
    let out = podstatus(&["replay", "--native", "--logic", "v3", &example()], None);
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["calls"].as_array().unwrap().iter().all(|c| c["verb"] == "patch"), "{report}");
}

#[test]
fn kube_apiserver_refuses_a_release_it_has_no_control_plane_for() {
    let out = podstatus(&["kube-apiserver", "--kubernetes", "1.27", "--data-dir", "/nonexistent/cluster"], None);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no control plane for 1.27; one of 1.35, 1.36, 1.37"), "{stderr}");
}
