//! The oracle as a process: the Go test binary `upstream/oracle` builds, reading one
//! trace document per line on its standard input and answering each with one line,
//! `{"report": ...}` or `{"error": "..."}`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::{Mutex, PoisonError};

use k8s_openapi::api::core::v1::Pod;
use podstatus_replay::{Call, Report, Trace};
use serde_json::Value;

use crate::go_build::{BuildError, build};
use crate::release::Release;

/// The longest answer read from the oracle (a report of a trace the fuzzer makes is
/// tens of kilobytes).
const MAX_ANSWER: usize = 64 << 20;

/// Why the oracle gave no report.
#[derive(Debug, thiserror::Error)]
pub enum OracleError {
    /// It could not be built.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// It could not be started or talked to.
    #[error("the upstream oracle for {release}: {message}")]
    Process {
        /// Its release.
        release: Release,
        /// What happened.
        message: String,
    },
    /// It ran the trace and refused it (a step it cannot run, as `podstatus replay`'s
    /// exit 2), or upstream panicked.
    #[error("{release} refused the trace: {message}")]
    Refused {
        /// Its release.
        release: Release,
        /// Its words.
        message: String,
    },
}

/// A running oracle for one release: traces replayed one at a time.
pub struct Oracle {
    release: Release,
    program: std::path::PathBuf,
    process: Mutex<Option<Process>>,
}

struct Process {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Oracle {
    /// Builds the oracle for `release` if need be (see [`build`]); the process starts
    /// with the first trace.
    pub fn new(release: Release) -> Result<Oracle, OracleError> {
        Ok(Oracle { release, program: build(release)?, process: Mutex::new(None) })
    }

    /// The release it runs.
    pub fn release(&self) -> Release {
        self.release
    }

    /// Replays `trace` through upstream's manager and returns its report as the
    /// oracle wrote it (times in the trace's clock, Go's JSON). With `quiet_from`, the
    /// faults still armed when that step is reached are removed first, as the fuzzer
    /// does before its quiescence steps.
    pub fn replay_json(&self, trace: &Trace, quiet_from: Option<usize>) -> Result<Value, OracleError> {
        self.replay_json_with(trace, quiet_from, false)
    }

    /// [`Oracle::replay_json`]; with `watched_copies`, in the fuzzer's counterfactual
    /// world where the pod manager's copies follow the API server from the start (its
    /// starting copies, and each pod it adds, are the API server's of the same UID).
    pub fn replay_json_with(
        &self,
        trace: &Trace,
        quiet_from: Option<usize>,
        watched_copies: bool,
    ) -> Result<Value, OracleError> {
        let mut doc = trace.to_value();
        if let Some(doc) = doc.as_object_mut() {
            if let Some(step) = quiet_from {
                doc.insert("quiescence_from_step".into(), step.into());
            }
            if watched_copies {
                doc.insert("watched_copies".into(), true.into());
            }
        }
        let line = serde_json::to_string(&doc).map_err(|e| self.process_error(e.to_string()))?;
        let mut guard = self.process.lock().unwrap_or_else(PoisonError::into_inner);
        let answer = match self.exchange(&mut guard, &line) {
            Ok(answer) => answer,
            Err(e) => {
                // A process that broke down is started again for the next trace.
                *guard = None;
                return Err(e);
            }
        };
        let mut answer: Value = serde_json::from_str(&answer)
            .map_err(|e| self.process_error(format!("an answer that is not JSON: {e}")))?;
        if let Some(error) = answer.get("error").and_then(Value::as_str) {
            return Err(OracleError::Refused { release: self.release, message: error.to_string() });
        }
        answer
            .get_mut("report")
            .map(Value::take)
            .ok_or_else(|| self.process_error("an answer with neither report nor error".into()))
    }

    /// [`Oracle::replay_json`], read into the replay's report type.
    pub fn replay(&self, trace: &Trace, quiet_from: Option<usize>) -> Result<Report, OracleError> {
        self.replay_with(trace, quiet_from, false)
    }

    /// [`Oracle::replay_json_with`], read into the replay's report type.
    pub fn replay_with(
        &self,
        trace: &Trace,
        quiet_from: Option<usize>,
        watched_copies: bool,
    ) -> Result<Report, OracleError> {
        let report = self.replay_json_with(trace, quiet_from, watched_copies)?;
        report_from_json(report)
            .map_err(|message| self.process_error(format!("a report the replay cannot read: {message}")))
    }

    fn exchange(&self, process: &mut Option<Process>, line: &str) -> Result<String, OracleError> {
        if process.is_none() {
            *process = Some(self.spawn()?);
        }
        let Some(p) = process.as_mut() else { unreachable!("started above") };
        let sent =
            p.stdin.write_all(line.as_bytes()).and_then(|()| p.stdin.write_all(b"\n")).and_then(|()| p.stdin.flush());
        sent.map_err(|e| self.process_error(format!("writing a trace: {e}")))?;
        let mut answer = String::new();
        let read = (&mut p.stdout).take(MAX_ANSWER as u64).read_line(&mut answer);
        match read {
            Ok(0) => Err(self.process_error(format!("it exited: {}", exit_of(&mut p.child)))),
            Ok(_) if !answer.ends_with('\n') => {
                Err(self.process_error(format!("an answer of more than {MAX_ANSWER} bytes")))
            }
            Ok(_) => Ok(answer),
            Err(e) => Err(self.process_error(format!("reading an answer: {e}"))),
        }
    }

    fn spawn(&self) -> Result<Process, OracleError> {
        let mut child = Command::new(&self.program)
            .args(["-test.run", "^TestOracle$"])
            .env("PODSTATUS_ORACLE", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            // Upstream's logs (klog) only when asked for.
            .stderr(if std::env::var_os("PODSTATUS_ORACLE_LOG").is_some() { Stdio::inherit() } else { Stdio::null() })
            .spawn()
            .map_err(|e| self.process_error(format!("starting {}: {e}", self.program.display())))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(self.process_error("no pipes to the process".into()));
        };
        Ok(Process { child, stdin, stdout: BufReader::new(stdout) })
    }

    fn process_error(&self, message: String) -> OracleError {
        OracleError::Process { release: self.release, message }
    }
}

fn exit_of(child: &mut Child) -> String {
    match child.wait() {
        Ok(status) => status.to_string(),
        Err(e) => e.to_string(),
    }
}

/// The oracle's report as the replay's [`Report`].
pub fn report_from_json(mut report: Value) -> Result<Report, String> {
    let calls = report["calls"].as_array().ok_or("no calls")?.iter().map(call_from_json).collect::<Result<_, _>>()?;
    let Value::Array(results) = report["results"].take() else { return Err("no results".into()) };
    let apiserver: Vec<Pod> =
        serde_json::from_value(report["apiserver"].take()).map_err(|e| format!("apiserver: {e}"))?;
    Ok(Report { results, calls, apiserver, fault: None })
}

fn call_from_json(call: &Value) -> Result<Call, String> {
    let text = |key: &str| call[key].as_str().map(str::to_string).ok_or(format!("a call without {key}: {call}"));
    // The report's verbs and outcomes are the replay's own words (`&'static str`).
    let word = |key: &str, words: &[&'static str]| {
        words
            .iter()
            .copied()
            .find(|w| call[key].as_str() == Some(w))
            .ok_or(format!("a call of an unknown {key}: {call}"))
    };
    let verb = word("verb", &["get", "update", "patch", "delete"])?;
    let outcome = word("outcome", &["ok", "not-found", "conflict", "error"])?;
    let optional_text = |key: &str| call.get(key).map(|v| v.as_str().map(str::to_string));
    Ok(Call {
        step: call["step"].as_u64().ok_or(format!("a call without a step: {call}"))? as usize,
        verb,
        subresource: call["subresource"].as_str().map(|_| "status"),
        namespace: text("namespace")?,
        name: text("name")?,
        target_uid: optional_text("target_uid"),
        precondition_uid: optional_text("precondition_uid"),
        grace_period_seconds: call.get("grace_period_seconds").map(Value::as_i64),
        outcome,
        refused: None,
        sync: None,
    })
}
