//! A fleet's HTTP control endpoint (`podstatus fleet --control-addr`, loopback by
//! default): `GET /rollout` (where the rollout stands and the figures it compares, as
//! JSON), `POST /rollout/promote`, `POST /rollout/rollback`, and `POST /rollout/canary`
//! with `{"share": "10%", "to": "v3"}` to start a canary while running.
//!
//! The server only speaks HTTP: each command goes, with a way to answer it, to the
//! fleet's own loop ([`ControlServer::next_request`]), which owns the fleet and its
//! rollout and runs one command at a time between its ticks (a promotion swaps every
//! node: that work is not done on the I/O runtime's two threads, which carry every
//! node's API calls).
//!
//! Every byte a client sends is hostile until bounded ([`ControlLimits`]): the request
//! head (hyper refuses a larger one: 431, or 414 for its URI), the path and query, the
//! method, the body (its declared length refused before a byte is read, then its bytes
//! counted), the time a client takes to send its head and its body, the open
//! connections and the commands waiting for the loop. Each refusal is a typed
//! [`ControlError`] with its status, answered as JSON `{"code": ..., "error": ...}`.
//!
//! Who may send what is the [`ControlAccess`]'s to say: a request is authenticated
//! as soon as its head is read (401 without a credential it knows), routed, then
//! authorized for its verb (403), and only then is its body read and its command sent
//! to the fleet: a refused request changes nothing. Over TLS, the handshake is bounded
//! by the read timeout and counts as one of the open connections.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use serde::Deserialize;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinSet;

use super::canary::{RolloutError, RolloutStatus};
use super::control_access::{AccessDenied, ControlAccess, Identity, UnguardedListen};

/// The most bytes of a request head hyper reads (its own floor is 8 KiB).
const MIN_HEAD_BYTES: usize = 8192;

/// What a client may send and hold.
#[derive(Clone, Debug, PartialEq)]
pub struct ControlLimits {
    /// The longest path and query, in bytes.
    pub max_path_bytes: usize,
    /// The largest body, in bytes.
    pub max_body_bytes: usize,
    /// The largest request head (request line and headers), in bytes; at least 8 KiB.
    pub max_head_bytes: usize,
    /// How long a client may take to send its head, and then its body.
    pub read_timeout: Duration,
    /// Connections open at once; past it, a new one is answered 503 and closed.
    pub max_connections: usize,
    /// Commands waiting for the fleet's loop; past it, 503.
    pub max_waiting: usize,
    /// How long a command may wait for the fleet's answer before 504 (it still runs).
    pub answer_timeout: Duration,
}

impl Default for ControlLimits {
    fn default() -> Self {
        ControlLimits {
            max_path_bytes: 256,
            max_body_bytes: 4096,
            max_head_bytes: 16 << 10,
            read_timeout: Duration::from_secs(10),
            max_connections: 16,
            max_waiting: 8,
            // A promotion of a thousand nodes swaps each of them.
            answer_timeout: Duration::from_secs(300),
        }
    }
}

/// What a client asks of the fleet.
#[derive(Clone, Debug, PartialEq)]
pub enum ControlCommand {
    /// Where the rollout stands.
    Status,
    /// Promote the canary.
    Promote,
    /// Roll the canary back.
    RollBack,
    /// Start a canary.
    Start(StartCanary),
}

/// `POST /rollout/canary`'s body.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StartCanary {
    /// The share of the nodes: `"10%"` or `0.1`, above 0 and below 1.
    #[serde(deserialize_with = "share")]
    pub share: f64,
    /// The plugin the canary moves to, by name: a logic version (`v3`) or the stem of
    /// a plugin file the fleet was given (`--canary-plugin`).
    pub to: String,
}

/// Why a request was not carried out.
#[derive(Debug, thiserror::Error)]
pub enum ControlError {
    /// No such resource.
    #[error(
        "{path}: not found; the control endpoint serves /rollout, /rollout/promote, /rollout/rollback and /rollout/canary"
    )]
    NotFound {
        /// The path asked for (within the path limit).
        path: String,
    },
    /// The resource does not take this method.
    #[error("{method} is not allowed on {path}: use {allowed}")]
    MethodNotAllowed {
        /// The method sent (at most 16 bytes of it).
        method: String,
        /// The path.
        path: String,
        /// The method it takes.
        allowed: &'static str,
    },
    /// The path and query are over the limit.
    #[error("a path of {len} bytes is over the limit of {limit} bytes")]
    PathTooLong {
        /// Its length.
        len: usize,
        /// The limit.
        limit: usize,
    },
    /// The body is over the limit (declared or sent).
    #[error("the body is over the limit of {limit} bytes")]
    BodyTooLarge {
        /// The limit.
        limit: usize,
    },
    /// The body did not arrive within the read timeout.
    #[error("the body did not arrive within {0:?}")]
    BodyTimeout(Duration),
    /// The body could not be read (the connection failed).
    #[error("reading the body: {0}")]
    BodyRead(#[source] hyper::Error),
    /// The body is not what the command takes.
    #[error("bad body: {0}")]
    BadBody(String),
    /// Too many commands wait for the fleet's loop already.
    #[error("{0} commands are waiting already; try again")]
    Busy(usize),
    /// Too many connections are open already.
    #[error("{0} connections are open already; try again")]
    TooManyConnections(usize),
    /// The fleet did not answer in time (the command still runs).
    #[error("the fleet did not answer within {0:?}; the command still runs: GET /rollout shows how it went")]
    NoAnswer(Duration),
    /// The fleet is stopping.
    #[error("the fleet is stopping")]
    Stopping,
    /// The named plugin is not one the fleet can roll out.
    #[error("unknown plugin {name:?}: the fleet can roll out {known}")]
    UnknownPlugin {
        /// The name asked for.
        name: String,
        /// The names it knows, comma-separated.
        known: String,
    },
    /// The plugin could not be loaded.
    #[error("loading the plugin {name:?}: {message}")]
    PluginLoad {
        /// Its name.
        name: String,
        /// Why.
        message: String,
    },
    /// The rollout refused the command.
    #[error(transparent)]
    Rollout(#[from] RolloutError),
    /// The request's sender is unknown (401), may not do this (403), or could not be
    /// reviewed (503).
    #[error(transparent)]
    Access(#[from] AccessDenied),
    /// A sharded fleet starts its canaries by `PluginRollout` object, not by command.
    #[error(
        "this fleet is sharded: a canary over every shard is a PluginRollout object (kubectl apply -f rollout.yaml)"
    )]
    Sharded,
    /// The fleet's rollout object could not be read or written.
    #[error("the fleet's PluginRollout: {0}")]
    Objects(String),
}

impl ControlError {
    /// The HTTP status this error is answered with.
    pub fn status(&self) -> StatusCode {
        match self {
            ControlError::NotFound { .. } => StatusCode::NOT_FOUND,
            ControlError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            ControlError::PathTooLong { .. } => StatusCode::URI_TOO_LONG,
            ControlError::BodyTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
            ControlError::BodyTimeout(_) => StatusCode::REQUEST_TIMEOUT,
            ControlError::BodyRead(_) | ControlError::BadBody(_) => StatusCode::BAD_REQUEST,
            ControlError::Busy(_) | ControlError::TooManyConnections(_) | ControlError::Stopping => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            ControlError::NoAnswer(_) => StatusCode::GATEWAY_TIMEOUT,
            ControlError::UnknownPlugin { .. } => StatusCode::UNPROCESSABLE_ENTITY,
            ControlError::PluginLoad { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            ControlError::Rollout(error) => match error {
                RolloutError::AlreadyWatching { .. } | RolloutError::NotWatching => StatusCode::CONFLICT,
                RolloutError::CanarySize { .. } | RolloutError::NoSuchNode(_) | RolloutError::CanaryGroupTaken(_) => {
                    StatusCode::UNPROCESSABLE_ENTITY
                }
                RolloutError::CanarySwapFailed { .. } => StatusCode::INTERNAL_SERVER_ERROR,
            },
            ControlError::Sharded => StatusCode::CONFLICT,
            ControlError::Objects(_) => StatusCode::SERVICE_UNAVAILABLE,
            ControlError::Access(denied) => match denied {
                AccessDenied::Unauthenticated(_) => StatusCode::UNAUTHORIZED,
                AccessDenied::Forbidden { .. } => StatusCode::FORBIDDEN,
                AccessDenied::Review(_) => StatusCode::SERVICE_UNAVAILABLE,
            },
        }
    }
}

/// What the fleet answers a command with.
pub type ControlAnswer = Result<RolloutStatus, ControlError>;

impl ControlCommand {
    /// The verb an access review asks about: reading the rollout is `get`, starting a
    /// canary `create`, deciding one (promote or roll back) `update`, as the same acts
    /// on a `PluginRollout` object are.
    pub fn verb(&self) -> &'static str {
        match self {
            ControlCommand::Status => "get",
            ControlCommand::Start(_) => "create",
            ControlCommand::Promote | ControlCommand::RollBack => "update",
        }
    }
}

/// A command waiting for the fleet's loop, and the way to answer it.
pub struct ControlRequest {
    /// What is asked.
    pub command: ControlCommand,
    /// Who asked (authenticated and authorized for it).
    pub identity: Identity,
    reply: oneshot::Sender<ControlAnswer>,
}

impl ControlRequest {
    /// Answers the client (who may have given up waiting: then nobody hears it).
    pub fn answer(self, answer: ControlAnswer) {
        let _ = self.reply.send(answer);
    }
}

/// A running control endpoint. Stops when dropped.
pub struct ControlServer {
    local_addr: SocketAddr,
    stop: watch::Sender<bool>,
    commands: Mutex<mpsc::Receiver<ControlRequest>>,
}

/// Why the control endpoint did not start.
#[derive(Debug, thiserror::Error)]
pub enum ControlServeError {
    /// The address could not be bound.
    #[error("cannot listen for control requests on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The address is beyond loopback and the endpoint is not guarded for it.
    #[error(transparent)]
    Unguarded(#[from] UnguardedListen),
}

impl ControlServer {
    /// Binds `addr` now (a taken port is an error here) and serves on `runtime` within
    /// `limits`, guarded by `access`, until dropped. Port 0 picks a free port: see
    /// [`ControlServer::local_addr`]. An address beyond loopback is refused unless
    /// `access` authenticates and serves TLS.
    pub fn start(
        addr: SocketAddr,
        access: ControlAccess,
        limits: ControlLimits,
        runtime: &tokio::runtime::Handle,
    ) -> Result<ControlServer, ControlServeError> {
        access.check_listen(addr)?;
        let (listener, local_addr) =
            crate::listen::bind_now(addr, runtime).map_err(|source| ControlServeError::Bind { addr, source })?;
        let (stop, stopped) = watch::channel(false);
        let (sender, commands) = mpsc::channel(limits.max_waiting.max(1));
        runtime.spawn(accept_loop(listener, Arc::new(Shared { limits, access, sender }), stopped));
        Ok(ControlServer { local_addr, stop, commands: Mutex::new(commands) })
    }

    /// The address actually bound.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// The next command waiting, if any (the fleet's loop calls this between ticks).
    pub fn next_request(&self) -> Option<ControlRequest> {
        self.commands.lock().unwrap_or_else(PoisonError::into_inner).try_recv().ok()
    }
}

impl Drop for ControlServer {
    fn drop(&mut self) {
        self.stop.send_replace(true);
    }
}

/// What every connection's service shares.
struct Shared {
    limits: ControlLimits,
    access: ControlAccess,
    sender: mpsc::Sender<ControlRequest>,
}

async fn accept_loop(listener: tokio::net::TcpListener, shared: Arc<Shared>, mut stopped: watch::Receiver<bool>) {
    // Connections live in the set so that leaving the loop aborts them all.
    let mut connections = JoinSet::new();
    let open = Arc::new(AtomicUsize::new(0));
    loop {
        tokio::select! {
            // Only `true` is ever sent; a dropped sender also means stop.
            _ = stopped.changed() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    let shared = Arc::clone(&shared);
                    let open = Arc::clone(&open);
                    if open.fetch_add(1, Ordering::SeqCst) >= shared.limits.max_connections {
                        open.fetch_sub(1, Ordering::SeqCst);
                        connections.spawn(connection(stream, shared, Serve::Refuse));
                        continue;
                    }
                    connections.spawn(async move {
                        connection(stream, shared, Serve::Requests).await;
                        open.fetch_sub(1, Ordering::SeqCst);
                    });
                }
                // Out of file descriptors and the like: keep serving once it passes.
                Err(error) => {
                    tracing::warn!(%error, "control endpoint: accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// What a connection is served.
#[derive(Clone, Copy)]
enum Serve {
    /// Its requests.
    Requests,
    /// A 503: it is past the cap.
    Refuse,
}

/// Serves one connection, over TLS when the endpoint has it (the handshake within the
/// read timeout: a client that stalls it holds its slot no longer than one that stalls
/// its head).
async fn connection(stream: tokio::net::TcpStream, shared: Arc<Shared>, serve: Serve) {
    let Some(tls) = shared.access.tls() else {
        return served(TokioIo::new(stream), shared, serve).await;
    };
    match tokio::time::timeout(shared.limits.read_timeout, tls.acceptor().accept(stream)).await {
        Ok(Ok(stream)) => served(TokioIo::new(stream), shared, serve).await,
        Ok(Err(error)) => tracing::debug!(%error, "control connection: TLS handshake failed"),
        Err(_) => tracing::debug!("control connection: no TLS handshake within the read timeout"),
    }
}

async fn served<I>(io: I, shared: Arc<Shared>, serve: Serve)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    match serve {
        Serve::Requests => serve_connection(io, &shared).await,
        Serve::Refuse => refuse(io, shared).await,
    }
}

async fn serve_connection<I>(io: I, shared: &Arc<Shared>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let service = service_fn(|request| {
        let shared = Arc::clone(shared);
        async move { Ok::<_, Infallible>(answer(request, &shared).await) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(shared.limits.read_timeout)
        .max_buf_size(shared.limits.max_head_bytes.max(MIN_HEAD_BYTES));
    if let Err(error) = builder.serve_connection(io, service).await {
        tracing::debug!(%error, "control connection ended with an error");
    }
}

/// Answers a connection past the cap: its first request gets 503 and the connection
/// is closed, within the read timeout.
async fn refuse<I>(io: I, shared: Arc<Shared>)
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let open = shared.limits.max_connections;
    let service = service_fn(move |_request| {
        let error = ControlError::TooManyConnections(open);
        async move { Ok::<_, Infallible>(respond(error.status(), error_json(&error))) }
    });
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder.timer(TokioTimer::new()).header_read_timeout(shared.limits.read_timeout).keep_alive(false);
    let served = builder.serve_connection(io, service);
    let _ = tokio::time::timeout(shared.limits.read_timeout, served).await;
}

async fn answer(request: Request<Incoming>, shared: &Shared) -> Response<Full<Bytes>> {
    match handle(request, shared).await {
        Ok(status) => match serde_json::to_string_pretty(&status) {
            Ok(json) => respond(StatusCode::OK, json),
            Err(error) => respond(StatusCode::INTERNAL_SERVER_ERROR, format!("{{\"error\": \"{error}\"}}")),
        },
        Err(error) => {
            let mut response = respond(error.status(), error_json(&error));
            if error.status() == StatusCode::UNAUTHORIZED {
                // RFC 6750: how to authenticate.
                response.headers_mut().insert(
                    header::WWW_AUTHENTICATE,
                    header::HeaderValue::from_static("Bearer realm=\"podstatus-fleet\""),
                );
            }
            response
        }
    }
}

/// How a path's command is made from its body.
type CommandOf = fn(Bytes) -> Result<ControlCommand, ControlError>;

async fn handle(request: Request<Incoming>, shared: &Shared) -> ControlAnswer {
    let limits = &shared.limits;
    let target = request.uri().path_and_query().map_or("", |pq| pq.as_str());
    if target.len() > limits.max_path_bytes {
        return Err(ControlError::PathTooLong { len: target.len(), limit: limits.max_path_bytes });
    }
    let (parts, body) = request.into_parts();
    // Nothing is said of the endpoint (its paths, its methods) to a stranger, and no
    // body is read for one: a refused body is drained while the answer goes out.
    let identity = match shared.access.authenticate(&parts.headers).await {
        Ok(identity) => identity,
        Err(denied) => return refused(body, limits, denied.into()),
    };
    let path = parts.uri.path().to_owned();
    let (command_of, allowed, verb): (CommandOf, _, _) = match path.as_str() {
        "/rollout" => (|_| Ok(ControlCommand::Status), Method::GET, "get"),
        "/rollout/promote" => (|_| Ok(ControlCommand::Promote), Method::POST, "update"),
        "/rollout/rollback" => (|_| Ok(ControlCommand::RollBack), Method::POST, "update"),
        "/rollout/canary" => (start_canary, Method::POST, "create"),
        _ => return refused(body, limits, ControlError::NotFound { path }),
    };
    if parts.method != allowed {
        let method: String = parts.method.as_str().chars().take(16).collect();
        let allowed = if allowed == Method::GET { "GET" } else { "POST" };
        return refused(body, limits, ControlError::MethodNotAllowed { method, path, allowed });
    }
    if let Err(denied) = shared.access.authorize(&identity, verb).await {
        return refused(body, limits, denied.into());
    }
    let body = read_body(parts.headers.get(header::CONTENT_LENGTH), body, limits).await?;
    let command = command_of(body)?;
    debug_assert_eq!(command.verb(), verb, "the route's verb is its command's");
    if command != ControlCommand::Status {
        tracing::info!(user = %identity.user, command = ?command, "control: command accepted");
    }
    let (reply, answered) = oneshot::channel();
    match shared.sender.try_send(ControlRequest { command, identity, reply }) {
        Ok(()) => {}
        Err(mpsc::error::TrySendError::Full(_)) => return Err(ControlError::Busy(limits.max_waiting)),
        Err(mpsc::error::TrySendError::Closed(_)) => return Err(ControlError::Stopping),
    }
    match tokio::time::timeout(limits.answer_timeout, answered).await {
        Ok(Ok(answer)) => answer,
        Ok(Err(_)) => Err(ControlError::Stopping),
        Err(_) => Err(ControlError::NoAnswer(limits.answer_timeout)),
    }
}

/// Refuses a request whose body is not read: what the client still sends is drained
/// while the answer goes out (a client still sending then reads its answer instead of
/// a reset connection).
fn refused(body: Incoming, limits: &ControlLimits, error: ControlError) -> ControlAnswer {
    drain(body, limits);
    Err(error)
}

/// The body, within the limits: a declared length over the limit is refused unread,
/// and the bytes sent are counted as they come, for at most the read timeout.
async fn read_body(
    content_length: Option<&header::HeaderValue>,
    mut body: Incoming,
    limits: &ControlLimits,
) -> Result<Bytes, ControlError> {
    let too_large = ControlError::BodyTooLarge { limit: limits.max_body_bytes };
    let declared = content_length.and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if declared.is_some_and(|len| len > limits.max_body_bytes as u64) {
        drain(body, limits);
        return Err(too_large);
    }
    let read = async {
        let mut read = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let Ok(data) = frame.map_err(ControlError::BodyRead)?.into_data() else { continue };
            if read.len() + data.len() > limits.max_body_bytes {
                return Ok(None);
            }
            read.extend_from_slice(&data);
        }
        Ok(Some(read.freeze()))
    };
    match tokio::time::timeout(limits.read_timeout, read).await {
        Ok(Ok(Some(read))) => Ok(read),
        Ok(Ok(None)) => {
            drain(body, limits);
            Err(too_large)
        }
        Ok(Err(error)) => Err(error),
        Err(_) => Err(ControlError::BodyTimeout(limits.read_timeout)),
    }
}

/// Reads and discards the rest of a body refused as too large, up to a few times the
/// limit and for at most the read timeout, while the answer is written: a client still
/// sending then reads its 413 instead of a reset connection.
fn drain(mut body: Incoming, limits: &ControlLimits) {
    let (most, patience) = (limits.max_body_bytes.saturating_mul(16), limits.read_timeout);
    tokio::spawn(async move {
        let discard = async {
            let mut discarded = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                discarded += frame.data_ref().map_or(0, |data| data.len());
                if discarded > most {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(patience, discard).await;
    });
}

fn start_canary(body: Bytes) -> Result<ControlCommand, ControlError> {
    let start: StartCanary = serde_json::from_slice(&body).map_err(|e| ControlError::BadBody(e.to_string()))?;
    Ok(ControlCommand::Start(start))
}

/// A share of the nodes: `"10%"`, `"0.1"` or `0.1`, above 0 and below 1.
fn share<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Share {
        Number(f64),
        Text(String),
    }
    let share = match Share::deserialize(deserializer)? {
        Share::Number(share) => Some(share).filter(|share| *share > 0.0 && *share < 1.0),
        Share::Text(text) => parse_share(&text),
    };
    share.ok_or_else(|| serde::de::Error::custom("share: not a share of the nodes above 0 and below 100%"))
}

pub use podstatus_rollout_api::parse_share;

fn error_json(error: &ControlError) -> String {
    serde_json::json!({"code": error.status().as_u16(), "error": error.to_string()}).to_string()
}

fn respond(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_are_percentages_or_fractions_strictly_between_nothing_and_everything() {
        assert_eq!(parse_share("10%"), Some(0.1));
        assert_eq!(parse_share(" 25 % "), Some(0.25));
        assert_eq!(parse_share("0.5"), Some(0.5));
        for bad in ["0", "0%", "100%", "1", "-5%", "NaN", "inf", "ten", ""] {
            assert_eq!(parse_share(bad), None, "{bad:?}");
        }
        let parsed: StartCanary = serde_json::from_str(r#"{"share": 0.2, "to": "v3"}"#).expect("a number");
        assert_eq!(parsed, StartCanary { share: 0.2, to: "v3".into() });
        let parsed: StartCanary = serde_json::from_str(r#"{"share": "20%", "to": "v3"}"#).expect("a percentage");
        assert_eq!(parsed.share, 0.2);
        for bad in [
            r#"{"share": 2, "to": "v3"}"#,
            r#"{"share": 0, "to": "v3"}"#,
            r#"{"share": -0.5, "to": "v3"}"#,
            r#"{"share": "x", "to": "v3"}"#,
            r#"{"to": "v3"}"#,
        ] {
            assert!(serde_json::from_str::<StartCanary>(bad).is_err(), "{bad}");
        }
        let unknown = serde_json::from_str::<StartCanary>(r#"{"share": 0.2, "to": "v3", "nodes": [1]}"#);
        assert!(unknown.is_err(), "unknown fields are refused");
    }

    #[test]
    fn every_error_has_its_status() {
        let cases = [
            (ControlError::PathTooLong { len: 300, limit: 256 }, 414),
            (ControlError::BodyTooLarge { limit: 4096 }, 413),
            (ControlError::BodyTimeout(Duration::from_secs(1)), 408),
            (ControlError::Busy(8), 503),
            (ControlError::NoAnswer(Duration::from_secs(1)), 504),
            (ControlError::Rollout(RolloutError::NotWatching), 409),
            (ControlError::Rollout(RolloutError::CanarySize { asked: 0, nodes: 3 }), 422),
        ];
        for (error, status) in cases {
            assert_eq!(error.status().as_u16(), status, "{error}");
            let json: serde_json::Value = serde_json::from_str(&error_json(&error)).expect("json");
            assert_eq!(json["code"], status);
        }
    }
}
