//! A raw HTTP/1.1 client over TCP for the embedded API server's tests: what a hostile
//! or careless client sends is exactly what these send, byte for byte.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::{Value, json};

/// Generous: bounds reads that should take milliseconds.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// One HTTP/1.1 exchange: status, headers (lowercased names), body (de-chunked).
pub struct Reply {
    pub code: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Asserts the code and a Kubernetes `Status` with this reason; returns the Status.
    pub fn status(&self, code: u16, reason: &str) -> Value {
        assert_eq!(self.code, code, "{}", String::from_utf8_lossy(&self.body));
        let status = self.json();
        assert_eq!((&status["kind"], &status["status"]), (&json!("Status"), &json!("Failure")), "{status}");
        assert_eq!((&status["code"], &status["reason"]), (&json!(code), &json!(reason)), "{status}");
        status
    }
}

/// A connection whose reads give up after [`PATIENCE`].
pub fn connect(addr: SocketAddr) -> TcpStream {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_read_timeout(Some(PATIENCE)).expect("timeout");
    stream
}

/// Sends a whole request on a new connection (closed after the answer).
pub fn open(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> TcpStream {
    let mut stream = connect(addr);
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    stream.write_all(head.as_bytes()).expect("send head");
    stream.write_all(body).expect("send body");
    stream
}

/// Sends a whole request and reads the whole answer.
pub fn http(addr: SocketAddr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Reply {
    read_reply(&mut open(addr, method, path, headers, body))
}

/// Reads one whole answer: by chunks, by `Content-Length`, or to the end.
pub fn read_reply(stream: &mut impl Read) -> Reply {
    let mut reader = BufReader::new(stream);
    let (code, headers) = read_head(&mut reader);
    let chunked = headers.iter().any(|(n, v)| n == "transfer-encoding" && v.contains("chunked"));
    let length = headers.iter().find(|(n, _)| n == "content-length").and_then(|(_, v)| v.parse::<usize>().ok());
    let mut body = Vec::new();
    if chunked {
        while let Some(chunk) = read_chunk(&mut reader) {
            body.extend(chunk);
        }
    } else if let Some(length) = length {
        body.resize(length, 0);
        reader.read_exact(&mut body).expect("body");
    } else {
        reader.read_to_end(&mut body).expect("body");
    }
    Reply { code, headers, body }
}

/// The status line and the headers (names lowercased).
pub fn read_head(reader: &mut impl BufRead) -> (u16, Vec<(String, String)>) {
    let mut line = String::new();
    reader.read_line(&mut line).expect("status line");
    let code = line.split_whitespace().nth(1).and_then(|c| c.parse().ok()).unwrap_or_else(|| panic!("{line:?}"));
    let mut headers = Vec::new();
    loop {
        line.clear();
        reader.read_line(&mut line).expect("header");
        let Some((name, value)) = line.trim_end().split_once(':') else { break };
        headers.push((name.to_ascii_lowercase(), value.trim().to_owned()));
    }
    (code, headers)
}

/// One chunk of a chunked body; None at its end (or when the stream ends or breaks).
pub fn read_chunk(reader: &mut impl BufRead) -> Option<Vec<u8>> {
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let size = usize::from_str_radix(line.trim(), 16).ok()?;
    if size == 0 {
        return None;
    }
    let mut chunk = vec![0; size + 2];
    reader.read_exact(&mut chunk).ok()?;
    chunk.truncate(size);
    Some(chunk)
}

/// Creates `pod` in namespace `ns`; returns the stored object.
pub fn create(addr: SocketAddr, pod: &Value) -> Value {
    let reply = http(addr, "POST", "/api/v1/namespaces/ns/pods", &[], pod.to_string().as_bytes());
    assert_eq!(reply.code, 201, "{}", String::from_utf8_lossy(&reply.body));
    reply.json()
}
