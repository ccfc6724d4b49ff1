//! What the `podstatus` process tests share: starting the binary as a user would, its
//! stderr read as it comes, signals, a bounded wait for its exit, and one HTTP request
//! at a time to what it serves.
//!
//! Each test file is a crate of its own and uses part of this module.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use podstatus_backends::testing;
use serde_json::Value;

/// How long a process may take to do what a test waits for; far above what it needs.
pub const DEADLINE: Duration = Duration::from_secs(120);

/// The workspace's root.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).ancestors().nth(2).unwrap().to_path_buf()
}

/// `podstatus ARGS` as a test runs it: the tests' artifact cache, no `RUST_LOG` or
/// in-cluster service of the caller's, no stdin, stdout dropped and stderr piped.
pub fn podstatus(args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_podstatus"));
    command
        .args(args)
        .env("PODSTATUS_CACHE_DIR", workspace().join("target").join("podstatus-test-cache"))
        .env_remove("RUST_LOG")
        .env_remove("KUBERNETES_SERVICE_HOST")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

/// `podstatus ARGS` started, its stderr read line by line on a thread of its own (so
/// the pipe never fills).
pub fn spawn(args: &[&str]) -> (Child, Receiver<String>) {
    start(podstatus(args))
}

/// `command` started (its stderr piped), its stderr read line by line on a thread of
/// its own.
pub fn start(mut command: Command) -> (Child, Receiver<String>) {
    let mut child = command.spawn().expect("podstatus runs");
    let (tx, lines) = std::sync::mpsc::channel();
    let pipe = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, lines)
}

/// Sends `signal` to the child.
pub fn signal(child: &Child, signal: libc::c_int) {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    // SAFETY: kill(2) on our own child's pid; it has not been waited for, so the pid is
    // still its own.
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill({pid}, {signal})");
}

/// Waits (bounded) for the exit; returns the exit code and every stderr line.
pub fn wait(mut child: Child, lines: &Receiver<String>) -> (Option<i32>, String) {
    let deadline = Instant::now() + DEADLINE;
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            // What it said so far is what tells why it hung.
            let said: Vec<String> = lines.try_iter().collect();
            panic!("podstatus did not exit within {DEADLINE:?}; its stderr so far:\n{}", said.join("\n"));
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // The reader thread ends with the pipe: take what it read.
    let mut stderr = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    (status.code(), stderr)
}

/// How a process ended, as [`wait_measured`] saw it.
#[derive(Debug)]
pub struct Ended {
    /// The exit code (`None`: killed by a signal).
    pub code: Option<i32>,
    /// Its peak resident memory (the kernel's `ru_maxrss` of the child), in KiB.
    pub peak_rss_kib: u64,
    /// When it was reaped.
    pub at: Instant,
    /// Every stderr line.
    pub stderr: String,
}

/// Waits for the exit within `limit` (killing the process past it: a hang is then a
/// failure with its stderr, not a stuck test), reaping it with wait4(2) to read its
/// peak memory.
pub fn wait_measured(child: Child, lines: &Receiver<String>, limit: Duration) -> Ended {
    let pid = libc::pid_t::try_from(child.id()).unwrap();
    let deadline = Instant::now() + limit;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let mut killed = false;
    loop {
        // SAFETY: wait4(2) on our own child, not yet reaped (the Child is never waited
        // on: it is dropped below without a wait), with valid pointers to locals.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        assert!(reaped >= 0, "wait4({pid}) failed");
        if reaped == pid {
            break;
        }
        if Instant::now() >= deadline && !killed {
            // SAFETY: kill(2) on our own child, not yet reaped.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            killed = true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    let at = Instant::now();
    drop(child);
    let mut stderr = String::new();
    while let Ok(line) = lines.recv_timeout(Duration::from_secs(5)) {
        stderr.push_str(&line);
        stderr.push('\n');
    }
    assert!(!killed, "still running after {limit:?}, killed; stderr:\n{stderr}");
    let code = libc::WIFEXITED(status).then(|| libc::WEXITSTATUS(status));
    Ended { code, peak_rss_kib: u64::try_from(usage.ru_maxrss).unwrap_or(0), at, stderr }
}

/// A port nobody listens on now (bound, then released).
pub fn free_port() -> SocketAddr {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap()
}

/// One request with a JSON body; the status and the body (JSON, or the text as a JSON
/// string), `None` while nothing answers.
pub fn request(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Option<(u16, Value)> {
    request_with(addr, method, path, &[], body)
}

/// [`request`] with more headers (`("Authorization", "Bearer T")`).
pub fn request_with(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    write!(stream, "{head}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()).ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.get(9..12)?.parse().ok()?;
    let (head, text) = response.split_once("\r\n\r\n")?;
    let chunked = head.lines().any(|line| line.eq_ignore_ascii_case("transfer-encoding: chunked"));
    let text = if chunked { dechunk(text)? } else { text.to_owned() };
    Some((code, serde_json::from_str(&text).unwrap_or(Value::String(text))))
}

/// A chunked body's content (lists are sent in chunks).
fn dechunk(mut rest: &str) -> Option<String> {
    let mut body = String::new();
    loop {
        let (size, after) = rest.split_once("\r\n")?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).ok()?;
        if size == 0 {
            return Some(body);
        }
        body.push_str(after.get(..size)?);
        rest = after.get(size + 2..)?;
    }
}

/// Polls `probe` until it gives something, within [`DEADLINE`].
pub fn wait_until<T>(what: &str, probe: impl FnMut() -> Option<T>) -> T {
    testing::wait_for(what, DEADLINE, Duration::from_millis(100), probe)
}

/// The condition of this type in an object's status.
pub fn condition<'a>(object: &'a Value, kind: &str) -> Option<&'a Value> {
    object.pointer("/status/conditions")?.as_array()?.iter().find(|c| c["type"] == kind)
}

/// One request over TLS to `addr`, trusting the CA in `ca` (PEM), with `headers`; the
/// status and the body (JSON, or the text as a JSON string), `None` while nothing
/// answers or the handshake fails.
pub fn request_tls(
    addr: SocketAddr,
    ca: &Path,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_file_iter(ca).ok()? {
        roots.add(cert.ok()?).ok()?;
    }
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .ok()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let name = rustls::pki_types::ServerName::IpAddress(addr.ip().into());
    let session = rustls::ClientConnection::new(std::sync::Arc::new(config), name).ok()?;
    let tcp = TcpStream::connect_timeout(&addr, Duration::from_secs(2)).ok()?;
    tcp.set_read_timeout(Some(Duration::from_secs(60))).ok()?;
    let mut stream = rustls::StreamOwned::new(session, tcp);
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}", body.len()));
    stream.write_all(head.as_bytes()).ok()?;
    let mut response = Vec::new();
    // A server that closes without close_notify ends the read with an error after the
    // whole answer: what was read is the answer.
    let _ = stream.read_to_end(&mut response);
    let response = String::from_utf8(response).ok()?;
    let code = response.get(9..12)?.parse().ok()?;
    let (_, text) = response.split_once("\r\n\r\n")?;
    Some((code, serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))))
}
