//! The HTTP side: the accept loop, request parsing and the table of paths.
//!
//! | path | methods |
//! |---|---|
//! | `/version`, `/api`, `/apis`, `/api/v1` (trailing `/` accepted) | GET |
//! | `/openapi/v2`, `/openapi/v3`, `/openapi/v3/{group version}` | GET |
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
//! | `/apis/podstatus.io`, `/apis/podstatus.io/v1alpha1` | GET |
//! | `/apis/podstatus.io/v1alpha1/pluginrollouts` | GET (list) |
//! | `/apis/podstatus.io/v1alpha1/namespaces/{ns}/pluginrollouts` | GET (list), POST |
//! | `/apis/podstatus.io/v1alpha1/namespaces/{ns}/pluginrollouts/{name}` | GET, PUT, PATCH, DELETE |
//! | `/apis/podstatus.io/v1alpha1/namespaces/{ns}/pluginrollouts/{name}/status` | GET, PUT, PATCH |

use std::collections::HashMap;
use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use hyper::body::{Body as _, Frame, Incoming, SizeHint};
use hyper_util::rt::{TokioIo, TokioTimer};
use serde_json::Value;
use tokio::sync::{Notify, OwnedSemaphorePermit, watch as signal};

use crate::call::{Call, Context, budget_units};
use crate::excerpt::excerpt;
use crate::objects::{LEASES, NODES, PLUGIN_ROLLOUTS, Part};
use crate::request_body::{self, BodyError};
use crate::response::{Body, failure_response, json_response, respond};
use crate::stats::Held;
use crate::status_body::Failure;
use crate::stopping::stopped;
use crate::{discovery, object_handlers as objects, openapi, pods};

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
///
/// [`ServeOptions::max_connections`]: crate::options::ServeOptions::max_connections
/// [`ServeOptions::header_timeout`]: crate::options::ServeOptions::header_timeout
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

/// `response`, with the connection closed after it (the rest of the request's body is
/// not read beyond the drain).
fn closing(mut response: Response<Body>) -> Response<Body> {
    response.headers_mut().insert(header::CONNECTION, header::HeaderValue::from_static("close"));
    response
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
        // Answered at once; what the client still sends is read and discarded.
        request_body::drain(body);
        return closing(failure_response(&Failure::too_large(limits.max_body_bytes)));
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
    let read = request_body::read_within(body, limits.max_body_bytes);
    let body = match tokio::time::timeout(limits.body_timeout, read).await {
        Ok(Ok(body)) => body,
        Ok(Err(BodyError::TooLarge)) => return closing(failure_response(&Failure::too_large(limits.max_body_bytes))),
        Ok(Err(error)) => return failure_response(&Failure::bad_request(error.to_string())),
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
    // A dry run this server cannot make is refused, never made for real.
    if let Some(dry_run) = call.param("dryRun").filter(|value| !value.is_empty()) {
        return Err(Failure::bad_request(format!(
            "dryRun: Unsupported value: \"{}\": this server makes no dry runs (nothing was written)",
            excerpt(dry_run)
        )));
    }
    let get_only = |value: Value| {
        if call.method == Method::GET {
            Ok(json_response(StatusCode::OK, &value))
        } else {
            Err(Failure::method_not_allowed(&call.method))
        }
    };
    match segments.as_slice() {
        ["version"] => get_only(discovery::version()),
        ["openapi", rest @ ..] => openapi::route(rest, call).unwrap_or_else(|| Err(Failure::no_such_path())),
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
        ["apis", "podstatus.io"] => get_only(discovery::rollout_group()),
        ["apis", "podstatus.io", "v1alpha1"] => get_only(discovery::rollout_v1alpha1_resources()),
        ["apis", "podstatus.io", "v1alpha1", "pluginrollouts"] => match call.method {
            Method::GET => objects::list(call, context, &PLUGIN_ROLLOUTS, None),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "podstatus.io", "v1alpha1", "namespaces", namespace, "pluginrollouts"] => match call.method {
            Method::GET => objects::list(call, context, &PLUGIN_ROLLOUTS, Some(namespace)),
            Method::POST => objects::create(call, context, &PLUGIN_ROLLOUTS, namespace),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "podstatus.io", "v1alpha1", "namespaces", namespace, "pluginrollouts", name] => match call.method {
            Method::GET => objects::get(call, context, &PLUGIN_ROLLOUTS, namespace, name),
            Method::PUT => objects::replace(call, context, &PLUGIN_ROLLOUTS, namespace, name, Part::Main),
            Method::PATCH => objects::patch(call, context, &PLUGIN_ROLLOUTS, namespace, name, Part::Main),
            Method::DELETE => objects::delete(call, context, &PLUGIN_ROLLOUTS, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["apis", "podstatus.io", "v1alpha1", "namespaces", namespace, "pluginrollouts", name, "status"] => {
            match call.method {
                Method::GET => objects::get(call, context, &PLUGIN_ROLLOUTS, namespace, name),
                Method::PUT => objects::replace(call, context, &PLUGIN_ROLLOUTS, namespace, name, Part::Status),
                Method::PATCH => objects::patch(call, context, &PLUGIN_ROLLOUTS, namespace, name, Part::Status),
                _ => Err(Failure::method_not_allowed(&call.method)),
            }
        }
        ["api", "v1", "pods"] => match call.method {
            Method::GET => pods::list_or_watch(call, context, None),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        ["api", "v1", "namespaces", namespace, "pods"] => match call.method {
            Method::GET => pods::list_or_watch(call, context, Some(namespace)),
            Method::POST => pods::create(call, context, namespace),
            _ => Err(Failure::method_not_allowed(&call.method)),
        },
        // A failure about the pod names it (`details.name`), as kube-apiserver's do.
        ["api", "v1", "namespaces", namespace, "pods", name] => match call.method {
            Method::GET => pods::get(call, context, namespace, name),
            Method::PUT => pods::replace(call, context, namespace, name),
            Method::PATCH => pods::patch(call, context, namespace, name),
            Method::DELETE => pods::delete(call, context, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        }
        .map_err(|failure| failure.about(name)),
        ["api", "v1", "namespaces", namespace, "pods", name, "status"] => match call.method {
            Method::GET => pods::get(call, context, namespace, name),
            Method::PUT => pods::replace_status(call, context, namespace, name),
            Method::PATCH => pods::patch_status(call, context, namespace, name),
            _ => Err(Failure::method_not_allowed(&call.method)),
        }
        .map_err(|failure| failure.about(name)),
        _ => Err(Failure::no_such_path()),
    }
}

fn aggregated_response(value: &Value) -> Response<Body> {
    respond(StatusCode::OK, discovery::AGGREGATED_DISCOVERY, serde_json::to_vec(value).unwrap_or_default())
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
