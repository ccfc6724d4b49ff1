//! A real Kubernetes control plane for end-to-end tests: etcd and kube-apiserver of a
//! release, in one process of `upstream/cmd/controlplane`, on loopback, with
//! certificates of its own and kubeconfigs for an admin, for nodes and for other users.
//!
//! The process keeps everything in its data directory (certificates, the ports it
//! chose, etcd's data), so it can be stopped and started again on the same directory:
//! the same server URL, the same credentials, the same objects. Its stderr (the
//! apiserver's and etcd's logs) goes to `controlplane.log` there, read back when it
//! fails to start.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::go_build::{BuildError, Program, build_program};
use crate::release::Release;

/// How long a start may take: the apiserver's own start, on a loaded two-core machine,
/// with etcd's first write to disk.
pub const START_TIMEOUT: Duration = Duration::from_secs(180);
/// How long a stop waits for the process to exit after SIGTERM before killing it.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(60);
/// The longest ready line read (it names a kubeconfig per node: a fleet's hundreds).
const READY_LINE_LIMIT: u64 = 4 << 20;

/// What the control plane runs with.
#[derive(Clone, Debug)]
pub struct ControlPlaneConfig {
    /// The release of kube-apiserver (and of the etcd it requires).
    pub release: Release,
    /// Where everything lives; the same directory restarts the same cluster.
    pub data_dir: PathBuf,
    /// Nodes to write kubeconfigs for (`system:node:NAME` in `system:nodes`).
    pub nodes: Vec<String>,
    /// Other users to write kubeconfigs for: a name and its groups.
    pub users: Vec<(String, Vec<String>)>,
    /// A low `--max-requests-inflight` (and mutating), with priority and fairness off,
    /// so the server answers 429 with Retry-After under load.
    pub max_requests_inflight: Option<u32>,
    /// More kube-apiserver flags (`--etcd-compaction-interval=1s`), given last.
    pub apiserver_args: Vec<String>,
}

impl ControlPlaneConfig {
    /// A control plane of `release` in `data_dir`, with the admin's kubeconfig only.
    pub fn new(release: Release, data_dir: impl Into<PathBuf>) -> Self {
        ControlPlaneConfig {
            release,
            data_dir: data_dir.into(),
            nodes: Vec::new(),
            users: Vec::new(),
            max_requests_inflight: None,
            apiserver_args: Vec::new(),
        }
    }

    /// The program's arguments, for a process whose stdin is a pipe of its parent's
    /// (`--exit-with-stdin`: when the parent ends, however it ends, a test binary never
    /// dropping its statics among them, the control plane stops with it) or not.
    pub fn args(&self, exit_with_stdin: bool) -> Vec<String> {
        let mut args = vec!["--data-dir".to_string(), self.data_dir.to_string_lossy().into_owned()];
        if exit_with_stdin {
            args.push("--exit-with-stdin".to_string());
        }
        for node in &self.nodes {
            args.extend(["--node".to_string(), node.clone()]);
        }
        for (name, groups) in &self.users {
            let user = if groups.is_empty() { name.clone() } else { format!("{name}={}", groups.join(",")) };
            args.extend(["--user".to_string(), user]);
        }
        if let Some(n) = self.max_requests_inflight {
            args.extend(["--max-requests-inflight".to_string(), n.to_string()]);
        }
        for arg in &self.apiserver_args {
            args.extend(["--apiserver-arg".to_string(), arg.clone()]);
        }
        args
    }
}

/// What the process says once the apiserver is ready: where it listens and the
/// credentials it wrote.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct Ready {
    /// `https://127.0.0.1:PORT`.
    pub server: String,
    /// The cluster's CA certificate (PEM).
    pub ca: PathBuf,
    /// The admin's kubeconfig (`system:masters`).
    pub admin: PathBuf,
    /// Each node's kubeconfig, by node name.
    #[serde(default)]
    pub nodes: BTreeMap<String, PathBuf>,
    /// Each other user's kubeconfig, by user name.
    #[serde(default)]
    pub users: BTreeMap<String, PathBuf>,
    /// etcd's client URL.
    pub etcd: String,
    /// The version of `k8s.io/kubernetes` the program runs.
    pub kubernetes: String,
    /// Milliseconds from the process's start to the apiserver's `/readyz` answering 200.
    pub ready_ms: u64,
}

/// Why the control plane could not be started or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    /// Building the program.
    #[error(transparent)]
    Build(#[from] BuildError),
    /// Creating the data directory, the log, or spawning the program.
    #[error("the control plane ({path}): {source}")]
    Io {
        /// The file or program.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The release has no control plane of ours ([`Release::control_plane`]).
    #[error("the control plane builds for Kubernetes 1.35 and later, not {0}")]
    Unsupported(Release),
    /// The process exited, or said nothing within the time, before it was ready.
    #[error("the control plane did not start ({why}); the last lines of {log}:\n{tail}")]
    NotReady {
        /// Exited with what, or timed out.
        why: String,
        /// Its log.
        log: PathBuf,
        /// The log's last lines.
        tail: String,
    },
}

/// A running control plane; killed when dropped.
pub struct ControlPlane {
    config: ControlPlaneConfig,
    program: PathBuf,
    /// Its stdin stays open (taken by no one) for as long as the child is ours.
    child: Child,
    ready: Ready,
}

impl ControlPlane {
    /// Builds the program of the release if need be (cached under `target/upstream/`),
    /// starts it and waits until the apiserver is ready.
    pub fn start(config: ControlPlaneConfig) -> Result<Self, ControlPlaneError> {
        if !config.release.control_plane {
            return Err(ControlPlaneError::Unsupported(config.release));
        }
        let program = build_program(Program::ControlPlane, config.release)?;
        let (child, ready) = spawn(&program, &config)?;
        Ok(ControlPlane { config, program, child, ready })
    }

    /// Where it listens and the credentials it wrote.
    pub fn ready(&self) -> &Ready {
        &self.ready
    }

    /// The API server's URL.
    pub fn server(&self) -> &str {
        &self.ready.server
    }

    /// The admin's kubeconfig.
    pub fn admin_kubeconfig(&self) -> &Path {
        &self.ready.admin
    }

    /// `node`'s kubeconfig (it must be among the config's nodes).
    pub fn node_kubeconfig(&self, node: &str) -> Option<&Path> {
        self.ready.nodes.get(node).map(PathBuf::as_path)
    }

    /// Stops it as an operator would (SIGTERM: the apiserver drains, etcd closes), killing
    /// it if it has not exited within [`STOP_TIMEOUT`].
    pub fn stop(&mut self) -> Result<ExitStatus, ControlPlaneError> {
        terminate(&mut self.child, STOP_TIMEOUT)
            .map_err(|source| ControlPlaneError::Io { path: self.program.clone(), source })
    }

    /// Kills it at once (SIGKILL), as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Starts it again on the same data directory (after [`Self::stop`] or
    /// [`Self::kill`]; a running one is stopped first): the same URL, credentials and
    /// objects.
    pub fn restart(&mut self) -> Result<&Ready, ControlPlaneError> {
        if self.child.try_wait().ok().flatten().is_none() {
            self.stop()?;
        }
        let (child, ready) = spawn(&self.program, &self.config)?;
        (self.child, self.ready) = (child, ready);
        Ok(&self.ready)
    }
}

impl Drop for ControlPlane {
    fn drop(&mut self) {
        self.kill();
    }
}

fn log_path(data_dir: &Path) -> PathBuf {
    data_dir.join("controlplane.log")
}

/// Starts `program` and reads its ready line.
fn spawn(program: &Path, config: &ControlPlaneConfig) -> Result<(Child, Ready), ControlPlaneError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ControlPlaneError::Io { path, source }
    };
    std::fs::create_dir_all(&config.data_dir).map_err(io(&config.data_dir))?;
    let log = log_path(&config.data_dir);
    let log_file = std::fs::OpenOptions::new().create(true).append(true).open(&log).map_err(io(&log))?;
    let mut child = Command::new(program)
        .args(config.args(true))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(log_file)
        .spawn()
        .map_err(io(program))?;
    let stdout = child.stdout.take().ok_or_else(|| io(program)(std::io::Error::other("no stdout")))?;
    // The line comes from a thread, so that a program that never says it is ready
    // cannot hold the caller past the timeout.
    let (sender, lines) = mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let read = BufReader::new(std::io::Read::take(stdout, READY_LINE_LIMIT)).read_line(&mut line);
        let _ = sender.send(read.map(|_| line));
    });
    let started = Instant::now();
    let why = loop {
        match lines.recv_timeout(Duration::from_millis(200)) {
            Ok(Ok(line)) if !line.trim().is_empty() => match serde_json::from_str::<Ready>(&line) {
                Ok(ready) => return Ok((child, ready)),
                Err(e) => break format!("its ready line is not what was expected ({e}): {}", line.trim()),
            },
            Ok(Ok(_)) => break "it closed its output without a ready line".to_string(),
            Ok(Err(e)) => break format!("reading its output: {e}"),
            Err(mpsc::RecvTimeoutError::Timeout) if started.elapsed() < START_TIMEOUT => {}
            Err(mpsc::RecvTimeoutError::Timeout) => break format!("no ready line within {START_TIMEOUT:?}"),
            Err(mpsc::RecvTimeoutError::Disconnected) => break "its output ended".to_string(),
        }
    };
    let _ = child.kill();
    let status = child.wait().map(|s| s.to_string()).unwrap_or_default();
    Err(ControlPlaneError::NotReady { why: format!("{why}; {status}"), tail: tail(&log, 30), log })
}

/// SIGTERM, then up to `timeout` for the exit, then SIGKILL.
fn terminate(child: &mut Child, timeout: Duration) -> std::io::Result<ExitStatus> {
    if let Some(status) = child.try_wait()? {
        return Ok(status);
    }
    let pid = libc::pid_t::try_from(child.id()).map_err(std::io::Error::other)?;
    // SAFETY: kill(2) with a pid of our own child (not yet reaped: try_wait above saw it
    // running) and a valid signal number touches no memory.
    if unsafe { libc::kill(pid, libc::SIGTERM) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Some(status) = child.try_wait()? {
            return Ok(status);
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.kill()?;
    child.wait()
}

/// The last `n` lines of `path` (at most its last 64 KiB).
fn tail(path: &Path, n: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let text = String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(64 << 10)..]).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
