//! Measures what the embedded API server holds against hostile clients on loopback, and
//! how long a plain GET of one pod takes meanwhile: 1,100 idle half-sent requests, 24
//! bodies declared at the limit and stalled one byte short, 24 watches of an 8 MiB list
//! that never read, 24 GETs of that list that never read. Server and clients share this process; memory is its RSS
//! (`/proc/self/status`), each attack in a process of its own. Default limits
//! throughout (`ServeOptions::default()`).
//!
//! `cargo run --release -p podstatus --example hostile_clients`

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Container, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::MemoryApiServer;

const ATTACKS: [&str; 5] = ["none", "half-sent", "stalled-bodies", "silent-watches", "silent-lists"];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    match std::env::args().nth(1) {
        // One attack in this process.
        Some(attack) => run(&attack),
        // Each attack in a process of its own, so that each RSS is its own.
        None => {
            println!(
                "| attack | held by the server | RSS before → during | GET of one pod meanwhile (median / max of 20) |"
            );
            println!("|---|---|---:|---:|");
            for attack in ATTACKS {
                let output = std::process::Command::new(std::env::current_exe()?).arg(attack).output()?;
                if !output.status.success() {
                    return Err(format!("{attack}: {}", String::from_utf8_lossy(&output.stderr)).into());
                }
                print!("{}", String::from_utf8_lossy(&output.stdout));
            }
            Ok(())
        }
    }
}

fn run(attack: &str) -> Result<(), Box<dyn std::error::Error>> {
    let store = Arc::new(MemoryApiServer::with_graceful_deletion());
    // 1,000 pods of 8 KiB: an 8 MiB list.
    let padding = "x".repeat(8 << 10);
    for i in 0..1000 {
        store.create_pod(Pod {
            metadata: ObjectMeta {
                name: Some(format!("pod-{i}")),
                namespace: Some("ns".into()),
                uid: Some(format!("uid-{i}")),
                annotations: Some([("pad".to_owned(), padding.clone())].into()),
                ..ObjectMeta::default()
            },
            spec: Some(PodSpec {
                node_name: Some("node".into()),
                containers: vec![Container { name: "c".into(), ..Container::default() }],
                ..PodSpec::default()
            }),
            status: None,
        })?;
    }
    let options = ServeOptions::default();
    let server = EmbeddedApiServer::start_with(store, "127.0.0.1:0".parse()?, options)?;
    let addr = server.local_addr();
    let (_, list) = get(addr, "/api/v1/namespaces/ns/pods")?;
    if list < 8 << 20 {
        return Err(format!("the list is {list} bytes").into());
    }
    let before = rss_mib()?;
    match attack {
        "none" => row("none", "", before, addr)?,
        "half-sent" => {
            // 1,100 connections that send half a request and wait.
            let _half_sent = clients(addr, 1100, b"GET /api/v1/pods HTTP/1.1\r\nHost: x\r\n")?;
            std::thread::sleep(Duration::from_millis(500));
            let stats = server.stats();
            let held = format!(
                "{} connections open, {} idle ones closed for newer",
                stats.open_connections, stats.idle_connections_closed
            );
            row("1,100 idle half-sent requests", &held, before, addr)?;
        }
        "stalled-bodies" => {
            // 24 bodies declared at the limit, sent but for the last byte.
            let mut stalled = Vec::new();
            let body = vec![b' '; options.max_body_bytes - 1];
            for _ in 0..24 {
                let mut stream = TcpStream::connect(addr)?;
                let head = format!(
                    "POST /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
                    options.max_body_bytes
                );
                stream.write_all(head.as_bytes())?;
                stream.set_write_timeout(Some(Duration::from_secs(5)))?;
                let _ = stream.write_all(&body);
                stalled.push(stream);
            }
            std::thread::sleep(Duration::from_millis(500));
            let held = format!(
                "{} bodies being read, {} refused with 429 (budget {} MiB)",
                24 - server.stats().bodies_refused,
                server.stats().bodies_refused,
                options.body_bytes_in_flight >> 20
            );
            row("24 bodies of 3 MiB stalled one byte short", &held, before, addr)?;
        }
        "silent-watches" => {
            // 24 watches of the whole list that never read.
            let _watchers =
                clients(addr, 24, b"GET /api/v1/namespaces/ns/pods?watch=true HTTP/1.1\r\nHost: x\r\n\r\n")?;
            std::thread::sleep(Duration::from_secs(1));
            let held = format!("{} watches open", server.stats().open_watches);
            row("24 watches of the 8 MiB list that never read (after 1 s)", &held, before, addr)?;
            std::thread::sleep(options.slow_watcher_timeout + Duration::from_secs(1));
            let stats = server.stats();
            let held = format!("{} watches open, {} closed as too slow", stats.open_watches, stats.slow_watches_closed);
            let label =
                format!("the same, after the {} s slow-watcher timeout", options.slow_watcher_timeout.as_secs());
            row(&label, &held, before, addr)?;
        }
        "silent-lists" => {
            // 24 lists of the whole list that are never read.
            let _listers = clients(addr, 24, b"GET /api/v1/namespaces/ns/pods HTTP/1.1\r\nHost: x\r\n\r\n")?;
            std::thread::sleep(Duration::from_secs(1));
            row("24 lists of the 8 MiB list that are never read (after 1 s)", "", before, addr)?;
        }
        other => return Err(format!("no attack {other:?}; one of {ATTACKS:?}").into()),
    }
    Ok(())
}

/// `count` connections to `addr` that sent `head` and then nothing: held open while the
/// caller keeps them.
fn clients(addr: SocketAddr, count: usize, head: &[u8]) -> std::io::Result<Vec<TcpStream>> {
    (0..count)
        .map(|_| {
            let mut stream = TcpStream::connect(addr)?;
            stream.write_all(head)?;
            Ok(stream)
        })
        .collect()
}

fn row(attack: &str, held: &str, before: f64, addr: SocketAddr) -> Result<(), Box<dyn std::error::Error>> {
    let mut times = Vec::new();
    for _ in 0..20 {
        let started = Instant::now();
        let (code, _) = get(addr, "/api/v1/namespaces/ns/pods/pod-7")?;
        times.push(started.elapsed());
        if code != 200 {
            return Err(format!("GET answered {code}").into());
        }
    }
    times.sort();
    println!(
        "| {attack} | {held} | {before:.0} → {:.0} MiB | {:.2} ms / {:.2} ms |",
        rss_mib()?,
        times[times.len() / 2].as_secs_f64() * 1e3,
        times[times.len() - 1].as_secs_f64() * 1e3
    );
    Ok(())
}

/// A GET over a fresh connection: the status code and the body's length.
fn get(addr: SocketAddr, path: &str) -> Result<(u16, usize), Box<dyn std::error::Error>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    stream.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())?;
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let code = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).ok_or("no status line")?;
    let mut rest = Vec::new();
    reader.read_to_end(&mut rest)?;
    Ok((code, rest.len()))
}

fn rss_mib() -> Result<f64, Box<dyn std::error::Error>> {
    let status = std::fs::read_to_string("/proc/self/status")?;
    let kib: f64 = status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or("no VmRSS")?;
    Ok(kib / 1024.0)
}
