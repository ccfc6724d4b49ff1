//! The server's limits ([`ServeOptions`]).

use std::time::Duration;

use crate::client_latency::DelayedClient;

/// Limits of a server; [`ServeOptions::default`] suits a node's worth of pods. Where
/// kube-apiserver has the same limit, the default is its default (said at each field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ServeOptions {
    /// Changes kept for watches that resume from a resourceVersion; a resume from
    /// further back gets 410 Expired (the client lists again).
    pub watch_history: usize,
    /// Changes queued per watcher; one that falls further behind is cut off with 410
    /// rather than slow down writers.
    pub watcher_buffer: usize,
    /// Bytes of encoded events queued per watch stream, or of a list's encoded items,
    /// before the stream waits for its client (default 1 MiB). What a watch or a list
    /// response holds is bounded by this, not by the number of pods.
    pub watcher_buffer_bytes: usize,
    /// How long a watch stream may wait for its client to take the next event before
    /// it is closed (default 5 s). kube-apiserver's watch cache does the same to a
    /// watcher it cannot hand events to ("Forcing watcher close due to
    /// unresponsiveness"): the stream ends, the client watches again from its last
    /// resourceVersion, or lists again on the 410 a resume from too far back gets.
    pub slow_watcher_timeout: Duration,
    /// Largest request body accepted (default 3 MiB, kube-apiserver's
    /// `MaxRequestBodyBytes`); a larger declared `Content-Length` gets 413 before
    /// anything is read, a larger chunked body 413 once the limit is reached.
    pub max_body_bytes: usize,
    /// Bytes of request bodies being read at once, all requests together (default
    /// 32 MiB): a body is reserved its declared length (the maximum when chunked)
    /// before it is read; one that does not fit gets 429 with `Retry-After`, as
    /// kube-apiserver answers past its in-flight limits. Memory spent on bodies is
    /// thus bounded whatever clients send.
    pub body_bytes_in_flight: usize,
    /// Largest object stored (default 1.5 MiB, etcd's `--max-request-bytes`, the
    /// limit behind kube-apiserver): a write that would make a larger pod gets 413.
    pub max_object_bytes: usize,
    /// How long a client has to send a request's headers, and how long a keep-alive
    /// connection may sit idle between requests (default 32 s, kube-apiserver's
    /// `ReadHeaderTimeout`); the connection is closed after it.
    pub header_timeout: Duration,
    /// How long a client has to send a request's body (default 60 s, kube-apiserver's
    /// `--request-timeout`); then 504 `Timeout` and the connection is closed. Also how
    /// long a list (streamed, see `watcher_buffer_bytes`) waits for a client that takes
    /// nothing before it is cut short.
    pub body_timeout: Duration,
    /// Connections open at once (default 512). At the cap, an idle connection is closed
    /// to admit the new one: one still sending its first headers before a keep-alive
    /// client's between requests, the one idle longest first; when every connection is busy in a request, the new one gets 429 with
    /// `Retry-After` and is closed, as kube-apiserver answers past
    /// `--max-requests-inflight`. Either way the server keeps answering.
    pub max_connections: usize,
    /// Nodes and leases held at most, together (default 10,000): past it a create gets
    /// 403 "exceeded quota", so clients cannot grow the server's memory by creating
    /// small objects. Pods are bounded by the store the server is given.
    pub max_objects: usize,
    /// A client whose every request is answered this much later (default none): what a
    /// network between it and the server would do to it, and to it alone (see
    /// [`DelayedClient`]). The wait holds nothing: other requests go on meanwhile.
    pub delayed_client: Option<DelayedClient>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        Self {
            watch_history: 10_000,
            watcher_buffer: 10_000,
            watcher_buffer_bytes: 1 << 20,
            slow_watcher_timeout: Duration::from_secs(5),
            max_body_bytes: 3 << 20,
            body_bytes_in_flight: 32 << 20,
            max_object_bytes: 3 << 19,
            header_timeout: Duration::from_secs(32),
            body_timeout: Duration::from_secs(60),
            max_connections: 512,
            max_objects: 10_000,
            delayed_client: None,
        }
    }
}
