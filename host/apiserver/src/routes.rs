//! The HTTP side: the accept loop, request parsing and the table of paths.
//!
//! | path | methods |
//! |---|---|
//! | `/version`, `/api`, `/apis`, `/api/v1` (trailing `/` accepted) | GET |
//! | `/api/v1/pods` | GET (list, `?watch=true`) |
//! | `/api/v1/namespaces/{ns}/pods` | GET (list, watch), POST |
//! | `/api/v1/namespaces/{ns}/pods/{name}` | GET, PUT, PATCH, DELETE |
//! | `/api/v1/namespaces/{ns}/pods/{name}/status` | GET, PUT, PATCH |
//! | `/api/v1/nodes` | GET (list), POST |
//! | `/api/v1/nodes/{name}` | GET, PUT, PATCH, DELETE |
//! | `/api/v1/nodes/{name}/status` | GET, PUT, PATCH |
//! | `/apis/coordination.k8s.io`, `/apis/coordination.k8s.io/v1` | GET |
//! | `/apis/coordination.k8s.io/v1/leases` | GET (list) |
//! | `/apis/coordination.k8s.io/v1/namespaces/{ns}/leases` | GET (list), POST |
//! | `/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}` | GET, PUT, PATCH, DELETE |

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, mpsc, watch as signal};

use super::ServeOptions;
use super::objects::{LEASES, NODES, ObjectStore, Part};
use super::status_body::Failure;
use super::{discovery, object_handlers as objects, pods};
use podstatus_backends::MemoryApiServer;

/// A response body: whole, or streamed (watches).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// Request bodies are reserved in units of this many bytes (a semaphore counts in
/// `u32`s).
const BUDGET_UNIT: usize = 1024;

/// What every request handler shares.
pub(crate) struct Context {
    /// The store served.
    pub store: Arc<MemoryApiServer>,
    /// Nodes and leases.
    pub objects: Arc<ObjectStore>,
    /// The watch hub, fed by the store.
    pub hub: Arc<super::watch::WatchHub>,
    /// host:port, for `/api`'s `serverAddressByClientCIDRs`.
    pub server_address: String,
    /// The server's limits.
    pub options: ServeOptions,
    /// Bytes of request bodies that may be read at once, in [`BUDGET_UNIT`]s.
    pub body_budget: Arc<Semaphore>,
    /// Turns true when the server stops (open watches end).
    pub stopping: signal::Receiver<bool>,
    /// What the server holds and has shed, for [`super::EmbeddedApiServer::stats`].
    pub counters: Arc<Counters>,
}

/// Live counts of what the server holds and what it has shed.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    pub connections: AtomicUsize,
    pub watches: AtomicUsize,
    pub idle_connections_closed: AtomicUsize,
    pub connections_refused: AtomicUsize,
    pub slow_watches_closed: AtomicUsize,
    pub slow_lists_closed: AtomicUsize,
    pub bodies_refused: AtomicUsize,
    pub pod_lists: AtomicUsize,
    pub pod_watches: AtomicUsize,
    pub delayed_requests: AtomicUsize,
}

impl Counters {
    pub fn snapshot(&self) -> super::ServerStats {
        let get = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
        super::ServerStats {
            open_connections: get(&self.connections),
            open_watches: get(&self.watches),
            idle_connections_closed: get(&self.idle_connections_closed),
            connections_refused: get(&self.connections_refused),
            slow_watches_closed: get(&self.slow_watches_closed),
            slow_lists_closed: get(&self.slow_lists_closed),
            bodies_refused: get(&self.bodies_refused),
            pod_lists: get(&self.pod_lists),
            pod_watches: get(&self.pod_watches),
            delayed_requests: get(&self.delayed_requests),
        }
    }
}

/// Counts one while alive.
pub(crate) struct Held(Arc<Counters>, fn(&Counters) -> &AtomicUsize);

impl Held {
    pub fn new(counters: &Arc<Counters>, which: fn(&Counters) -> &AtomicUsize) -> Self {
        which(counters).fetch_add(1, Ordering::SeqCst);
        Self(Arc::clone(counters), which)
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        (self.1)(&self.0).fetch_sub(1, Ordering::SeqCst);
    }
}

/// The semaphore permits for `bytes` of request bodies.
pub(crate) fn budget_units(bytes: usize) -> usize {
    bytes.div_ceil(BUDGET_UNIT).min(Semaphore::MAX_PERMITS)
}

/// A parsed request, as the handlers see it.
pub(crate) struct Call {
    pub method: Method,
    /// Decoded query parameters (the last of a repeated one wins).
    pub query: HashMap<String, String>,
    /// The `Accept` header ("" when absent).
    pub accept: String,
    /// The `Content-Type` header's media type, lowercased, without parameters ("" when absent).
    pub content_type: String,
    pub body: Bytes,
}

impl Call {
    /// A query parameter.
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query.get(name).map(String::as_str)
    }

    /// A boolean query parameter ("true" or "1").
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("true" | "1"))
    }

    /// The body as JSON; no Content-Type is taken as JSON (the Python client sends none).
    pub fn json_body(&self) -> Result<Value, Failure> {
        let json_like = self.content_type.is_empty()
            || self.content_type == "application/json"
            || self.content_type.ends_with("+json")
            || self.content_type == "*/*";
        if !json_like {
            return Err(Failure::unsupported_media_type(&self.content_type));
        }
        serde_json::from_slice(&self.body)
            .map_err(|e| Failure::bad_request(format!("the request body is not valid JSON: {e}")))
    }
}

/// One open connection, as the accept loop sees it.
struct Connection {
    /// Requests being answered (a watch counts until its stream ends).
    busy: AtomicUsize,
    /// When the connection last became idle, in milliseconds since the server started.
    idle_since: AtomicU64,
    /// Whether a whole request ever arrived on it (a keep-alive client's connection,
    /// rather than one still sending its first headers).
    served: AtomicBool,
    /// Notified to close the connection (it is the idlest and the server is full).
    evict: Notify,
}

/// Marks a connection busy while it lives: from a request's headers to the end of its
/// response body.
struct Busy {
    connection: Arc<Connection>,
    epoch: Instant,
}

impl Busy {
    fn enter(connection: &Arc<Connection>, epoch: Instant) -> Self {
        connection.busy.fetch_add(1, Ordering::SeqCst);
        connection.served.store(true, Ordering::SeqCst);
        Self { connection: Arc::clone(connection), epoch }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.connection.idle_since.store(millis_since(self.epoch), Ordering::SeqCst);
        self.connection.busy.fetch_sub(1, Ordering::SeqCst);
    }
}

fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// A response body that keeps its connection marked busy until it is done.
struct BusyBody {
    inner: Body,
    _busy: Busy,
}

impl hyper::body::Body for BusyBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Accepts connections until `stopping` turns true, then gives open connections up to
/// `grace` to finish (watches end on the same signal) before returning.
///
/// Connections are capped at [`ServeOptions::max_connections`]: at the cap the idlest
/// idle connection is closed for the new one, or, all being busy, the new one is
/// answered 429 and closed. Headers must arrive within
/// [`ServeOptions::header_timeout`] (which also bounds keep-alive idleness).
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    context: Arc<Context>,
    mut stopping: signal::Receiver<bool>,
    grace: Duration,
) {
    let epoch = Instant::now();
    let options = context.options;
    let mut connections = tokio::task::JoinSet::new();
    let mut open: HashMap<u64, Arc<Connection>> = HashMap::new();
    let mut next_id = 0u64;
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stopping) => break,
            // Reap finished connections so the set does not grow.
            Some(done) = connections.join_next(), if !connections.is_empty() => {
                if let Ok(id) = done {
                    open.remove(&id);
                }
                continue;
            }
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(error) => {
                // Out of file descriptors and the like: say so, wait a little, go on.
                tracing::warn!(%error, "embedded API server: accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        if open.len() >= options.max_connections.max(1) {
            if evict_idlest(&mut open) {
                context.counters.idle_connections_closed.fetch_add(1, Ordering::SeqCst);
            } else {
                tracing::debug!(open = open.len(), "embedded API server: every connection busy; shedding one");
                context.counters.connections_refused.fetch_add(1, Ordering::SeqCst);
                connections.spawn(shed(stream));
                continue;
            }
        }
        let _ = stream.set_nodelay(true);
        let id = next_id;
        next_id += 1;
        let connection = Arc::new(Connection {
            busy: AtomicUsize::new(0),
            idle_since: AtomicU64::new(millis_since(epoch)),
            served: AtomicBool::new(false),
            evict: Notify::new(),
        });
        open.insert(id, Arc::clone(&connection));
        let context = Arc::clone(&context);
        let mut stopping = stopping.clone();
        let held = Held::new(&context.counters, |counters| &counters.connections);
        connections.spawn(async move {
            let _held = held;
            let tracked = Arc::clone(&connection);
            let service = hyper::service::service_fn(move |request| {
                let context = Arc::clone(&context);
                let busy = Busy::enter(&tracked, epoch);
                async move {
                    let response = handle(request, &context).await;
                    Ok::<_, Infallible>(response.map(|inner| BusyBody { inner, _busy: busy }))
                }
            });
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder.timer(TokioTimer::new()).header_read_timeout(options.header_timeout);
            let connection_future = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection_future);
            let result = tokio::select! {
                result = connection_future.as_mut() => result,
                () = connection.evict.notified() => Ok(()),
                () = stopped(&mut stopping) => {
                    connection_future.as_mut().graceful_shutdown();
                    connection_future.await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%error, "embedded API server: connection ended with an error");
            }
            id
        });
    }
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(grace, drain).await.is_err() {
        tracing::debug!("embedded API server: connections still open at shutdown are dropped");
    }
}

/// Closes an idle connection to make room: one that never finished a request first
/// (a flood of half-sent requests does not push out keep-alive clients), the one idle
/// longest among those; false when every one is busy.
fn evict_idlest(open: &mut HashMap<u64, Arc<Connection>>) -> bool {
    let idlest = open
        .iter()
        .filter(|(_, connection)| connection.busy.load(Ordering::SeqCst) == 0)
        // Ties (the same millisecond) go to the older connection.
        .min_by_key(|(id, connection)| {
            (connection.served.load(Ordering::SeqCst), connection.idle_since.load(Ordering::SeqCst), **id)
        })
        .map(|(id, _)| *id);
    let Some(connection) = idlest.and_then(|id| open.remove(&id)) else { return false };
    tracing::debug!("embedded API server: at the connection cap; closing the idlest connection");
    connection.evict.notify_one();
    true
}

/// Answers a connection the server has no room for: 429 with `Retry-After`, then
/// closed. Bounded in time and bytes: a client that does not read or write does not
/// hold it. The request is read first (up to 64 KiB), so that closing does not reset
/// the connection before the client reads the answer.
async fn shed(stream: tokio::net::TcpStream) -> u64 {
    let status = serde_json::to_vec(&Failure::too_many_requests().to_status()).unwrap_or_default();
    let mut answer = format!(
        "HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        status.len()
    )
    .into_bytes();
    answer.extend(status);
    let exchange = async {
        let mut request = [0u8; 16 << 10];
        let mut read = 0usize;
        // The head usually comes in one segment; whatever comes within the bound.
        while read < 64 << 10 {
            if tokio::time::timeout(Duration::from_millis(100), stream.readable()).await.is_err() {
                break;
            }
            match stream.try_read(&mut request) {
                Ok(0) => break,
                Ok(n) => {
                    read += n;
                    if request[..n].windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
        let mut at = 0;
        while at < answer.len() {
            stream.writable().await?;
            match stream.try_write(&answer[at..]) {
                Ok(n) => at += n,
                Err(error) if error.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(error) => return Err(error),
            }
        }
        Ok(())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), exchange).await;
    if let Ok(stream) = stream.into_std() {
        let _ = stream.shutdown(std::net::Shutdown::Write);
    }
    u64::MAX
}

/// Resolves once the server is stopping (or its stop signal is gone).
pub(crate) async fn stopped(stopping: &mut signal::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// Answers one request; every failure becomes a `Status` response, never a dropped
/// connection.
async fn handle(request: Request<Incoming>, context: &Context) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let limits = &context.options;
    // Before anything is read or reserved: the wait holds nothing but the connection.
    if let Some(latency) = limits.delayed_client.and_then(|client| client.delay_for(&parts.headers)) {
        context.counters.delayed_requests.fetch_add(1, Ordering::SeqCst);
        tokio::time::sleep(latency).await;
    }
    // Nothing is read before the declared length is known to fit.
    let declared = body.size_hint().exact();
    let limit = u64::try_from(limits.max_body_bytes).unwrap_or(u64::MAX);
    if declared.is_some_and(|length| length > limit) {
        return failure_response(&Failure::too_large(limits.max_body_bytes));
    }
    let reserve = declared.map_or(limits.max_body_bytes, |length| usize::try_from(length).unwrap_or(usize::MAX));
    let _reserved: Option<OwnedSemaphorePermit> = if reserve == 0 || body.is_end_stream() {
        None
    } else {
        let units = u32::try_from(budget_units(reserve)).unwrap_or(u32::MAX);
        match Arc::clone(&context.body_budget).try_acquire_many_owned(units) {
            Ok(permit) => Some(permit),
            Err(_) => {
                context.counters.bodies_refused.fetch_add(1, Ordering::SeqCst);
                return failure_response(&Failure::too_many_requests());
            }
        }
    };
    let read = Limited::new(body, limits.max_body_bytes).collect();
    let body = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(collected)) => collected.to_bytes(),
        Ok(Err(error)) => {
            let failure = if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Failure::too_large(limits.max_body_bytes)
            } else {
                Failure::bad_request(format!("cannot read the request body: {error}"))
            };
            return failure_response(&failure);
        }
        Err(_) => return failure_response(&Failure::timeout()),
    };
    let response = match parse_query(parts.uri.query().unwrap_or_default()) {
        Ok(query) => {
            let call = Call {
                method: parts.method.clone(),
                query,
                accept: header_text(&parts.headers, header::ACCEPT),
                content_type: media_type(&header_text(&parts.headers, header::CONTENT_TYPE)),
                body,
            };
            route(parts.uri.path(), &call, context).unwrap_or_else(|failure| failure_response(&failure))
        }
        Err(failure) => failure_response(&failure),
    };
    let path = excerpt(parts.uri.path());
    tracing::debug!(method = %parts.method, path, status = response.status().as_u16(), "embedded API server");
    response
}

/// The path table.
fn route(path: &str, call: &Call, context: &Context) -> Result<Response<Body>, Failure> {
    let segments: Vec<String> =
        path.split('/').filter(|segment| !segment.is_empty()).map(percent_decode).collect::<Result<_, _>>()?;
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let get_only = |value: Value| {
        if call.method == Method::GET {
            Ok(json_response(StatusCode::OK, &value))
        } else {
            Err(Failure::method_not_allowed(&call.method))
        }
    };
    match segments.as_slice() {
        ["version"] => get_only(discovery::version()),
        ["api"] if discovery::wants_aggregated(&call.accept) && call.method == Method::GET => {
            Ok(aggregated_response(&discovery::aggregated_core()))
        }
        ["apis"] if discovery::wants_aggregated(&call.accept) && call.method == Method::GET => {
            Ok(aggregated_response(&discovery::aggregated_groups()))
        }
        ["api"] => get_only(discovery::core_versions(&context.server_address)),
        ["apis"] => get_only(discovery::groups()),
        ["api", "v1"] => get_only(discovery::core_v1_resources()),
        ["apis", "coordination.k8s.io"] => get_only(discovery::coordination_group()),
        ["apis", "coordination.k8s.io", "v1"] => get_only(discovery::coordination_v1_resources()),
        ["api", "v1", "nodes"] => match call.method {
            Method::GET => objects::list(call, context, &NODES, None),
            Method::POST => objects::create(call, context, &NODES, ""),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "nodes", name] => match call.method {
            Method::GET => objects::get(call, context, &NODES, "", name),
            Method::PUT => objects::replace(call, context, &NODES, "", name, Part::Main),
            Method::PATCH => objects::patch(call, context, &NODES, "", name, Part::Main),
            Method::DELETE => objects::delete(call, context, &NODES, "", name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "nodes", name, "status"] => match call.method {
            Method::GET => objects::get(call, context, &NODES, "", name),
            Method::PUT => objects::replace(call, context, &NODES, "", name, Part::Status),
            Method::PATCH => objects::patch(call, context, &NODES, "", name, Part::Status),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "coordination.k8s.io", "v1", "leases"] => match call.method {
            Method::GET => objects::list(call, context, &LEASES, None),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "coordination.k8s.io", "v1", "namespaces", namespace, "leases"] => match call.method {
            Method::GET => objects::list(call, context, &LEASES, Some(namespace)),
            Method::POST => objects::create(call, context, &LEASES, namespace),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "coordination.k8s.io", "v1", "namespaces", namespace, "leases", name] => match call.method {
            Method::GET => objects::get(call, context, &LEASES, namespace, name),
            Method::PUT => objects::replace(call, context, &LEASES, namespace, name, Part::Main),
            Method::PATCH => objects::patch(call, context, &LEASES, namespace, name, Part::Main),
            Method::DELETE => objects::delete(call, context, &LEASES, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "pods"] => match call.method {
            Method::GET => pods::list_or_watch(call, context, None),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "namespaces", namespace, "pods"] => match call.method {
            Method::GET => pods::list_or_watch(call, context, Some(namespace)),
            Method::POST => pods::create(call, context, namespace),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "namespaces", namespace, "pods", name] => match call.method {
            Method::GET => pods::get(call, context, namespace, name),
            Method::PUT => pods::replace(call, context, namespace, name),
            Method::PATCH => pods::patch(call, context, namespace, name),
            Method::DELETE => pods::delete(call, context, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "namespaces", namespace, "pods", name, "status"] => match call.method {
            Method::GET => pods::get(call, context, namespace, name),
            Method::PUT => pods::replace_status(call, context, namespace, name),
            Method::PATCH => pods::patch_status(call, context, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        _ => Err(Failure::no_such_path()),
    }
}

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    respond(status, "application/json", serde_json::to_vec(value).unwrap_or_default())
}

fn aggregated_response(value: &Value) -> Response<Body> {
    respond(StatusCode::OK, discovery::AGGREGATED_DISCOVERY, serde_json::to_vec(value).unwrap_or_default())
}

/// The `Status` response of a failure.
pub(crate) fn failure_response(failure: &Failure) -> Response<Body> {
    let status = StatusCode::from_u16(failure.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response =
        respond(status, "application/json", serde_json::to_vec(&failure.to_status()).unwrap_or_default());
    if let Some(seconds) = failure.retry_after_seconds {
        response.headers_mut().insert(header::RETRY_AFTER, header::HeaderValue::from(seconds));
    }
    response
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}

/// A streamed (chunked) JSON response fed by the returned sender: a watch. At most
/// `buffer_bytes` of chunks wait for the client (see [`StreamSender::send`]).
pub(crate) fn streaming_response(buffer_bytes: usize) -> (StreamSender, Response<Body>) {
    let (sender, receiver) = mpsc::unbounded_channel::<(Bytes, OwnedSemaphorePermit)>();
    let frames = futures::stream::unfold(receiver, |mut receiver| async move {
        // The permit is returned once hyper has taken the chunk.
        let (chunk, _room) = receiver.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), receiver))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    let capacity = u32::try_from(buffer_bytes.clamp(1, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    (StreamSender { chunks: sender, room: Arc::new(Semaphore::new(capacity as usize)), capacity }, response)
}

/// The sending end of a streamed response, bounded in bytes.
pub(crate) struct StreamSender {
    chunks: mpsc::UnboundedSender<(Bytes, OwnedSemaphorePermit)>,
    /// Bytes that may still be queued.
    room: Arc<Semaphore>,
    capacity: u32,
}

/// Why a chunk was not sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SendFailed {
    /// The client is gone.
    Closed,
    /// The client took nothing for the whole patience: it is too slow.
    Stalled,
}

impl StreamSender {
    /// Queues `chunk`, waiting up to `patience` for room (a chunk larger than the
    /// buffer waits for the buffer to empty).
    pub async fn send(&self, chunk: Bytes, patience: Duration) -> Result<(), SendFailed> {
        let units = u32::try_from(chunk.len()).unwrap_or(u32::MAX).clamp(1, self.capacity);
        let room = match tokio::time::timeout(patience, Arc::clone(&self.room).acquire_many_owned(units)).await {
            Ok(Ok(room)) => room,
            Ok(Err(_)) => return Err(SendFailed::Closed),
            Err(_) => return Err(SendFailed::Stalled),
        };
        self.chunks.send((chunk, room)).map_err(|_| SendFailed::Closed)
    }

    /// Queues `chunk` if there is room now.
    pub fn try_send(&self, chunk: Bytes) -> bool {
        let units = u32::try_from(chunk.len()).unwrap_or(u32::MAX).clamp(1, self.capacity);
        match Arc::clone(&self.room).try_acquire_many_owned(units) {
            Ok(room) => self.chunks.send((chunk, room)).is_ok(),
            Err(_) => false,
        }
    }

    /// Resolves once the client is gone.
    pub async fn closed(&self) {
        self.chunks.closed().await;
    }
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers.get_all(name).iter().filter_map(|value| value.to_str().ok()).collect::<Vec<_>>().join(",")
}

/// "application/merge-patch+json; charset=utf-8" -> "application/merge-patch+json".
fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

/// The query's parameters; a parameter that does not decode is a 400, never skipped
/// (a selector dropped would select everything).
fn parse_query(query: &str) -> Result<HashMap<String, String>, Failure> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |text: &str| percent_decode(&text.replace('+', " "));
            Ok((decode(key)?, decode(value)?))
        })
        .collect()
}

fn percent_decode(text: &str) -> Result<String, Failure> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%' {
            // Two hex digits exactly: `from_str_radix` alone would also take "+f".
            let hex = bytes.get(at + 1..at + 3).filter(|hex| hex.iter().all(u8::is_ascii_hexdigit));
            let byte = hex.and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok());
            let Some(byte) = byte else {
                return Err(Failure::bad_request(format!("invalid percent-encoding in \"{}\"", excerpt(text))));
            };
            out.push(byte);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Failure::bad_request(format!("\"{}\" is not UTF-8 once decoded", excerpt(text))))
}

/// At most the first 64 characters of a client's text, for a message.
pub(crate) fn excerpt(text: &str) -> String {
    match text.char_indices().nth(64) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        let query = parse_query("fieldSelector=spec.nodeName%3Dnode-1&labelSelector=app+in+%28a%2Cb%29&watch=1")
            .expect("decodes");
        assert_eq!(query["fieldSelector"], "spec.nodeName=node-1");
        assert_eq!(query["labelSelector"], "app in (a,b)");
        assert_eq!(query["watch"], "1");
        assert!(percent_decode("%zz").is_err());
        assert!(parse_query("labelSelector=%ff").is_err(), "not UTF-8: refused, not skipped");
        assert!(parse_query("a=1&labelSelector=%zz").is_err());
        assert!(percent_decode("%+f").is_err(), "a sign is not a hex digit");
        assert!(percent_decode("%4").is_err());
        assert_eq!(percent_decode("a%2Fb").ok().as_deref(), Some("a/b"));
        assert_eq!(media_type("application/merge-patch+json; charset=utf-8"), "application/merge-patch+json");
    }
}
