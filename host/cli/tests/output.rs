//! Output for people and for scripts: each `--json` document parsed and held against
//! its documented schema (docs/json-output.md), the text naming what ran, and the help
//! a newcomer reads first (the commands, the `--logic` choices, the headings).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

fn podstatus(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_podstatus"))
        .args(args)
        .env("PODSTATUS_CACHE_DIR", workspace().join("target").join("podstatus-test-cache"))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("podstatus runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A JSON type of docs/json-output.md's tables.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Str,
    Int,
    Num,
    Bool,
    Array,
    Object,
    /// `object or null`, `array or null`, `string or null`.
    OrNull(&'static Kind),
}

impl Kind {
    fn matches(self, value: &Value) -> bool {
        match self {
            Kind::Str => value.is_string(),
            Kind::Int => value.is_u64() || value.is_i64(),
            Kind::Num => value.is_number(),
            Kind::Bool => value.is_boolean(),
            Kind::Array => value.is_array(),
            Kind::Object => value.is_object(),
            Kind::OrNull(kind) => value.is_null() || kind.matches(value),
        }
    }
}

/// Every field of `schema` is in `document` with its type.
fn holds(document: &Value, schema: &[(&str, Kind)], what: &str) {
    for (field, kind) in schema {
        let value = document.get(field).unwrap_or_else(|| panic!("{what}: no {field} in {document:#}"));
        assert!(kind.matches(value), "{what}: {field} is not {kind:?}: {value}");
    }
}

const VIOLATION: [(&str, Kind); 4] =
    [("invariant", Kind::Str), ("step", Kind::Int), ("message", Kind::Str), ("known_issue", Kind::OrNull(&Kind::Str))];

#[test]
fn fuzz_json_is_the_documented_document() {
    let out = podstatus(&["fuzz", "--seed", "5", "--traces", "3", "--steps", "10", "--logic", "1.37", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("one JSON document on stdout");
    holds(
        &report,
        &[
            ("format", Kind::Str),
            ("seed", Kind::Int),
            ("target", Kind::Object),
            ("against", Kind::OrNull(&Kind::Object)),
            ("steps_per_trace", Kind::Int),
            ("traces", Kind::Int),
            ("steps", Kind::Int),
            ("elapsed_seconds", Kind::Num),
            ("traces_per_second", Kind::Num),
            ("steps_per_second", Kind::Num),
            ("verdict", Kind::Str),
            ("known_issues", Kind::Array),
            ("explained", Kind::Array),
            ("tallied", Kind::OrNull(&Kind::Array)),
            ("finding", Kind::OrNull(&Kind::Object)),
            ("passed", Kind::Bool),
        ],
        "fuzz",
    );
    assert_eq!(report["format"], "podstatus.fuzz/v1");
    assert_eq!((&report["seed"], &report["traces"], &report["steps_per_trace"]), (&5.into(), &3.into(), &10.into()));
    assert_eq!((&report["verdict"], &report["passed"]), (&"no violation".into(), &true.into()));
    holds(&report["target"], &[("name", Kind::Str), ("logic", Kind::Str), ("plugin_sha256", Kind::Str)], "target");
    assert_eq!(report["target"]["logic"], "1.37");
    assert_eq!(report["target"]["plugin_sha256"].as_str().map(str::len), Some(64));

    // A finding: shrunk, written, and described field by field.
    let dir = std::env::temp_dir().join(format!("podstatus-output-fuzz-{}", std::process::id()));
    let out = podstatus(&[
        "fuzz",
        "--native",
        "--strict",
        "--seed",
        "31",
        "--traces",
        "1",
        "--json",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("one JSON document on stdout");
    assert_eq!((&report["verdict"], &report["passed"]), (&"violation".into(), &false.into()));
    assert_eq!(report["target"]["plugin_sha256"], "", "native logic: no plugin");
    let finding = &report["finding"];
    holds(
        finding,
        &[
            ("seed", Kind::Int),
            ("violation", Kind::Object),
            ("original_steps", Kind::Int),
            ("shrunk_steps", Kind::Int),
            ("shrink_runs", Kind::Int),
            ("shrunk_violation", Kind::Object),
            ("written", Kind::Str),
        ],
        "finding",
    );
    holds(&finding["violation"], &VIOLATION, "violation");
    holds(&finding["shrunk_violation"], &VIOLATION, "shrunk violation");
    assert_eq!(finding["violation"]["invariant"], "no-rollback");
    assert!(Path::new(finding["written"].as_str().unwrap()).exists(), "the trace is where it says");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn fuzz_text_names_what_ran_with_its_units() {
    let out = podstatus(&["fuzz", "--seed", "5", "--traces", "2", "--steps", "10"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let first = text.lines().next().unwrap_or_default();
    // `2 traces, 28 steps in 41.2ms: ...`: the duration says its unit.
    let elapsed = first.split(" in ").nth(1).and_then(|rest| rest.split(':').next()).expect("a duration");
    assert!(elapsed.ends_with('s') && !elapsed.contains(' '), "{first}");
    assert!(text.contains("logic v1, plugin sha256:") || text.contains("ran the built-in plugin (logic v1)"), "{text}");
    assert!(text.lines().any(|l| l.starts_with("ran ") && l.contains("logic v1")), "{text}");
}

#[test]
fn inspect_json_is_the_documented_document() {
    let out = podstatus(&["inspect", "--logic", "v3", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    let report: Value = serde_json::from_str(&stdout(&out)).expect("one JSON document on stdout");
    holds(
        &report,
        &[
            ("format", Kind::Str),
            ("logic", Kind::OrNull(&Kind::Object)),
            ("plugin_sha256", Kind::Str),
            ("contract_versions", Kind::Array),
            ("imports", Kind::Array),
            ("exports", Kind::Array),
            ("loadable", Kind::Bool),
            ("load_error", Kind::OrNull(&Kind::Str)),
            ("wit", Kind::Str),
        ],
        "inspect",
    );
    assert_eq!(report["format"], "podstatus.inspect/v1");
    assert_eq!((&report["logic"]["name"], &report["logic"]["alias"]), (&"1.27-one-call".into(), &"v3".into()));
    assert!(report["logic"]["follows"].as_str().is_some_and(|f| f.contains("1.27")), "{report}");
    assert_eq!((&report["loadable"], &report["load_error"]), (&true.into(), &Value::Null));
    assert!(
        report["contract_versions"]
            .as_array()
            .unwrap()
            .iter()
            .all(|v| v.as_str().unwrap().starts_with("kubelet:status@"))
    );
    let text = stdout(&podstatus(&["inspect", "--logic", "v3"]));
    let digest = report["plugin_sha256"].as_str().unwrap();
    assert!(text.contains(&format!("plugin: sha256:{digest}")), "the text names the same digest:\n{text}");
}

#[test]
fn the_first_line_of_help_names_every_command() {
    let help = stdout(&podstatus(&["--help"]));
    let first = help.lines().next().unwrap_or_default();
    for command in ["replay", "inspect", "fuzz", "simulate", "agent", "fleet", "serve", "kube-apiserver"] {
        assert!(first.contains(command), "{command} is not in {first:?}");
    }
}

#[test]
fn fuzz_help_lists_the_logic_choices_of_the_table() {
    let help = stdout(&podstatus(&["fuzz", "--help"]));
    for choice in ["v1", "1.27", "1.27-one-call", "1.35", "1.35-one-call", "1.37", "1.37-one-call"] {
        assert!(help.contains(&format!("- {choice}:")), "{choice} is not listed:\n{help}");
    }
    for alias in ["alias v2", "alias v3", "alias v4"] {
        assert!(help.contains(alias), "{alias} is not said:\n{help}");
    }
    assert!(help.contains("[default: 2m]"), "--shrink-time's default says its unit:\n{help}");
}

#[test]
fn long_option_lists_are_grouped_under_headings() {
    let help = stdout(&podstatus(&["simulate", "-h"]));
    let headings: Vec<&str> = help.lines().filter(|l| !l.starts_with(' ') && l.ends_with(':')).collect();
    for heading in ["Workload:", "Plugin:", "Node:", "API server and client:", "Canary rollout:", "Output:"] {
        assert!(headings.contains(&heading), "no {heading} in {headings:?}");
    }
    // Under the first heading ("Options:") only what belongs to no group: help, version.
    let options = help.split("\nOptions:\n").nth(1).and_then(|rest| rest.split("\n\n").next()).unwrap_or_default();
    let ungrouped: Vec<&str> = options.lines().filter(|l| l.trim_start().starts_with('-')).collect();
    assert!(ungrouped.len() <= 4, "options in no group: {ungrouped:#?}");
    for command in ["agent", "fleet"] {
        let help = stdout(&podstatus(&[command, "-h"]));
        assert!(help.contains("Plugin:") && help.contains("Node:"), "{command}:\n{help}");
    }
}
