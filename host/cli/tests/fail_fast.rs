//! What a newcomer meets (issue 49, part A): nothing hangs, nothing grows, every error is
//! one line naming the flag, file, step or URL and the cause, and each class of failure
//! has its exit code (2 bad input, 1 a failure at run time, 130 cut short by a signal).
//!
//! One table: each case is a command a new user ran, what it must exit with, the words
//! its stderr (or summary) must hold and must not, and a generous bound on its time (to
//! catch a hang, not to measure) and, where the case was about memory, on its peak.
//! Every process's stderr is a pipe here: none may hold a colour code.

use std::io::Read;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

mod common;

use common::{podstatus, signal, start, wait_measured};

/// A case of the table.
struct Case {
    /// What the user did, as the issue's "Today" says it.
    what: &'static str,
    args: Vec<String>,
    /// Signals to send, and when: `Signal::After` counts from the start, `Signal::Flush`
    /// sends SIGINT once the run is flushing (a second one if the first only stopped
    /// the churn).
    signal: Option<Signal>,
    /// The exit code.
    exit: i32,
    /// Words stderr must hold.
    says: Vec<String>,
    /// Words stderr must not hold (a byte dump, a chain said twice).
    never: Vec<&'static str>,
    /// Words the summary on stdout must hold.
    summary: Vec<&'static str>,
    /// Whether stderr is one line (an error and nothing else).
    one_line: bool,
    /// The longest it may take: from the start, or from the last signal.
    within: Duration,
    /// The most resident memory it may use, in MiB, where the case is about memory.
    peak_mib: Option<u64>,
}

enum Signal {
    After(Duration, libc::c_int),
    Flush,
}

impl Case {
    /// A command refused at once: exit 2, one line holding `says`.
    fn refused(what: &'static str, args: &[&str], says: &[&str]) -> Case {
        Case {
            what,
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            signal: None,
            exit: 2,
            says: says.iter().map(|s| (*s).to_owned()).collect(),
            never: vec![],
            summary: vec![],
            one_line: true,
            within: Duration::from_secs(20),
            peak_mib: None,
        }
    }
}

/// A scratch folder of this test's files.
fn scratch() -> PathBuf {
    let dir = common::workspace().join("target").join(format!("fail-fast-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

#[test]
fn every_case_of_today_fails_fast_in_one_line_with_its_exit_code() {
    let dir = scratch();
    let bad_wasm = write(&dir, "bad.wasm", "garbage, not WebAssembly\n");
    let not_json = write(&dir, "not-json.json", "not json\n");
    let unknown_op = write(&dir, "unknown-op.json", r#"{"steps": [{"op": "explode"}]}"#);
    let far_clock = write(&dir, "far-clock.json", r#"{"steps": [{"op": "advance-clock", "ms": 300000000000000}]}"#);
    let kubeconfig = write(&dir, "bad-kubeconfig", "not: [a kubeconfig\n");
    let manifests = dir.join("manifests");
    std::fs::create_dir_all(&manifests).unwrap();
    write(&manifests, "broken.yaml", "apiVersion: v1\nkind: Pod\nmetadata: [\n");
    let manifests = manifests.display().to_string();
    // Held for the whole test: the port in use.
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = taken.local_addr().unwrap().to_string();
    let example = common::workspace().join("examples").join("web-readiness.json").display().to_string();
    let flush_case = |what: &'static str, flush_timeout: &str, signal: Option<Signal>| Case {
        what,
        args: [
            "simulate",
            "--pods",
            "300",
            "--churn",
            "150",
            "--kube-api-qps",
            "10",
            "--duration",
            "5s",
            "--flush-timeout",
            flush_timeout,
            "--quiet",
            "--json",
        ]
        .map(str::to_owned)
        .to_vec(),
        signal,
        exit: 1,
        says: vec![],
        never: vec![],
        summary: vec![],
        one_line: false,
        within: Duration::from_secs(60),
        peak_mib: None,
    };

    let cases = vec![
        // Hangs and memory without bound.
        Case::refused(
            "agent --node-name Bad_Name",
            &["agent", "--node-name", "Bad_Name"],
            &["--node-name", "RFC 1123 subdomain"],
        ),
        Case::refused("agent --node-name \"\"", &["agent", "--node-name", ""], &["--node-name", "needs a name"]),
        Case {
            exit: 1,
            says: vec!["http://127.0.0.1:1".into(), "Connection refused".into(), "stopped before".into()],
            one_line: false,
            signal: Some(Signal::After(Duration::from_secs(3), libc::SIGTERM)),
            within: Duration::from_secs(5),
            ..Case::refused(
                "agent --server http://127.0.0.1:1, SIGTERM",
                &["agent", "--node-name", "n1", "--server", "http://127.0.0.1:1"],
                &[],
            )
        },
        Case {
            peak_mib: Some(256),
            ..Case::refused("replay /dev/zero", &["replay", "/dev/zero"], &["/dev/zero", "larger than 64 MiB"])
        },
        Case {
            peak_mib: Some(128),
            ..Case::refused(
                "fuzz --traces 1 --steps 4294967295",
                &["fuzz", "--traces", "1", "--steps", "4294967295"],
                &["--steps", "above 10000", "a trace is generated whole"],
            )
        },
        Case {
            summary: vec![r#""flush": "timed-out""#],
            within: Duration::from_secs(40),
            ..flush_case("simulate ... --flush-timeout 5s (a backlog past it)", "5s", None)
        },
        Case {
            exit: 130,
            summary: vec![r#""flush": "interrupted""#],
            says: vec!["cutting the flush short".into()],
            within: Duration::from_secs(5),
            ..flush_case("simulate ... SIGINT during the flush", "10m", Some(Signal::Flush))
        },
        // Bad values accepted.
        Case::refused(
            "--api-fault-rate 2",
            &["simulate", "--api-fault-rate", "2"],
            &["--api-fault-rate", "fraction from 0 to 1"],
        ),
        Case::refused(
            "--node-cpu lots",
            &["agent", "--node-name", "n1", "--node-cpu", "lots"],
            &["--node-cpu", "not a Kubernetes quantity"],
        ),
        Case::refused(
            "--node-memory 32GB",
            &["agent", "--node-name", "n1", "--node-memory", "32GB"],
            &["--node-memory", "not a Kubernetes quantity"],
        ),
        Case::refused(
            "--node-ip 999.1.1.1",
            &["agent", "--node-name", "n1", "--node-ip", "999.1.1.1"],
            &["--node-ip", "not an IP address"],
        ),
        Case::refused(
            "--sync-period 0",
            &["simulate", "--sync-period", "0"],
            &["--sync-period", "no duration flag takes 0"],
        ),
        Case::refused("simulate --duration 0", &["simulate", "--duration", "0"], &["--duration", "or off"]),
        Case::refused("simulate --resync 0", &["simulate", "--resync", "0"], &["--resync", "or off"]),
        Case::refused("fuzz --duration 0", &["fuzz", "--duration", "0"], &["--duration", "no duration flag takes 0"]),
        Case::refused(
            "advance-clock by 3e14 ms",
            &["replay", &far_clock],
            &["far-clock.json", "step 0", "advance-clock"],
        ),
        Case::refused(
            "simulate --swap-to bad.wasm",
            &["simulate", "--swap-to", &bad_wasm],
            &["--swap-to", "bad.wasm", "not a WebAssembly file"],
        ),
        Case {
            exit: 0,
            one_line: false,
            says: vec!["broken.yaml".into(), "not a pod manifest".into()],
            within: Duration::from_secs(40),
            ..Case::refused(
                "a bad static pod manifest",
                &["simulate", "--pods", "2", "--duration", "1s", "--pod-manifest-path", &manifests, "--quiet"],
                &[],
            )
        },
        // Errors.
        Case {
            never: vec!["0x61", "expected=["],
            ..Case::refused(
                "replay --plugin bad.wasm",
                &["replay", "--plugin", &bad_wasm, &example],
                &["--plugin", "bad.wasm", "not a WebAssembly file"],
            )
        },
        Case {
            never: vec!["0x61", "expected=["],
            ..Case::refused(
                "inspect --plugin bad.wasm",
                &["inspect", "--plugin", &bad_wasm],
                &["bad.wasm", "not a WebAssembly file"],
            )
        },
        Case::refused("replay of a file that is not JSON", &["replay", &not_json], &["not-json.json", "not JSON"]),
        Case::refused(
            "replay of an unknown op",
            &["replay", &unknown_op],
            &["unknown-op.json", "unknown op \"explode\"", "the ops are", "advance-clock"],
        ),
        Case {
            exit: 1,
            ..Case::refused(
                "serve on a port in use",
                &["serve", "--listen", &taken],
                &["cannot listen on", "Address already in use"],
            )
        },
        Case {
            exit: 1,
            ..Case::refused(
                "simulate on a port in use",
                &["simulate", "--listen", &taken],
                &["cannot listen on", "Address already in use"],
            )
        },
        Case::refused(
            "agent --kubeconfig of a broken file",
            &["agent", "--node-name", "n1", "--kubeconfig", &kubeconfig],
            &["bad-kubeconfig", "failed to parse kubeconfig YAML"],
        ),
    ];

    for case in cases {
        run(&case);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `case` and holds it to what it says.
fn run(case: &Case) {
    let what = case.what;
    let args: Vec<&str> = case.args.iter().map(String::as_str).collect();
    let mut command = podstatus(&args);
    command.stdout(Stdio::piped());
    let started = Instant::now();
    let (mut child, lines) = start(command);
    let mut stdout_pipe = child.stdout.take().expect("stdout");
    let stdout = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout_pipe.read_to_string(&mut text);
        text
    });
    let mut early = Vec::new();
    let mut last_signal = started;
    match &case.signal {
        None => {}
        Some(Signal::After(after, sig)) => {
            std::thread::sleep(*after);
            signal(&child, *sig);
            last_signal = Instant::now();
        }
        Some(Signal::Flush) => {
            // Once the churn is over (5 s and the start), the run is flushing; a signal that
            // came before it only stopped the churn, and a second one cuts the flush.
            std::thread::sleep(Duration::from_secs(8));
            signal(&child, libc::SIGINT);
            loop {
                let line = lines.recv_timeout(Duration::from_secs(20)).unwrap_or_else(|e| panic!("{what}: {e}"));
                let (cut, stopped) =
                    (line.contains("cutting the flush short"), line.contains("signal again to cut the flush short"));
                early.push(line);
                if stopped {
                    signal(&child, libc::SIGINT);
                }
                if cut || stopped {
                    break;
                }
            }
            last_signal = Instant::now();
        }
    }
    let limit = case.within + last_signal.duration_since(started);
    let ended = wait_measured(child, &lines, limit + Duration::from_secs(60));
    let stderr = early.join("\n") + "\n" + &ended.stderr;
    let stderr = stderr.trim_start_matches('\n');
    let stdout = stdout.join().unwrap();
    let took = ended.at.duration_since(last_signal);
    assert_eq!(ended.code, Some(case.exit), "{what}: exit; stderr:\n{stderr}\nstdout:\n{stdout}");
    assert!(took <= case.within, "{what}: took {took:?}, more than {:?}; stderr:\n{stderr}", case.within);
    for word in &case.says {
        let times = stderr.matches(word.as_str()).count();
        assert!(times > 0, "{what}: stderr lacks {word:?}:\n{stderr}");
        if case.one_line {
            assert_eq!(times, 1, "{what}: {word:?} said {times} times (a chain repeated):\n{stderr}");
        }
    }
    for word in &case.never {
        assert!(!stderr.contains(word), "{what}: stderr holds {word:?}:\n{stderr}");
    }
    assert!(!stderr.contains('\u{1b}'), "{what}: a colour code on a stderr that is no terminal:\n{stderr}");
    if case.one_line {
        assert_eq!(stderr.lines().count(), 1, "{what}: one line:\n{stderr}");
        assert!(stdout.is_empty(), "{what}: nothing on stdout:\n{stdout}");
    }
    for word in &case.summary {
        assert!(stdout.contains(word), "{what}: the summary lacks {word:?}:\n{stdout}");
    }
    if let Some(mib) = case.peak_mib {
        let peak = ended.peak_rss_kib / 1024;
        assert!(peak <= mib, "{what}: peak memory {peak} MiB, more than {mib} MiB");
    }
}
