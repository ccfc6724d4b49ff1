//! The HTTP side: the accept loop, request parsing and the table of paths.
//!
//! | path | methods |
//! |---|---|
//! | `/version`, `/api`, `/apis`, `/api/v1` (trailing `/` accepted) | GET |
//! | `/api/v1/pods` | GET (list, `?watch=true`) |
//! | `/api/v1/namespaces/{ns}/pods` | GET (list, watch), POST |
//! | `/api/v1/namespaces/{ns}/pods/{name}` | GET, PUT, PATCH, DELETE |
//! | `/api/v1/namespaces/{ns}/pods/{name}/status` | GET, PUT, PATCH |

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::sync::{mpsc, watch as signal};

use super::status_body::Failure;
use super::{discovery, pods};
use podstatus_backends::MemoryApiServer;

/// A response body: whole, or streamed (watches).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// What every request handler shares.
pub(crate) struct Context {
    /// The store served.
    pub store: Arc<MemoryApiServer>,
    /// The watch hub, fed by the store.
    pub hub: Arc<super::watch::WatchHub>,
    /// host:port, for `/api`'s `serverAddressByClientCIDRs`.
    pub server_address: String,
    /// Largest request body accepted.
    pub max_body_bytes: usize,
    /// Turns true when the server stops (open watches end).
    pub stopping: signal::Receiver<bool>,
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

/// Accepts connections until `stopping` turns true, then gives open connections up to
/// `grace` to finish (watches end on the same signal) before returning.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    context: Arc<Context>,
    mut stopping: signal::Receiver<bool>,
    grace: Duration,
) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopped(&mut stopping) => break,
            // Reap finished connections so the set does not grow.
            Some(_) = connections.join_next(), if !connections.is_empty() => continue,
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
        let _ = stream.set_nodelay(true);
        let context = Arc::clone(&context);
        let mut stopping = stopping.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let context = Arc::clone(&context);
                async move { Ok::<_, Infallible>(handle(request, &context).await) }
            });
            let connection = hyper::server::conn::http1::Builder::new().serve_connection(TokioIo::new(stream), service);
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = stopped(&mut stopping) => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = result {
                tracing::debug!(%error, "embedded API server: connection ended with an error");
            }
        });
    }
    let drain = async { while connections.join_next().await.is_some() {} };
    if tokio::time::timeout(grace, drain).await.is_err() {
        tracing::debug!("embedded API server: connections still open at shutdown are dropped");
    }
}

/// Resolves once the server is stopping (or its stop signal is gone).
pub(crate) async fn stopped(stopping: &mut signal::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

/// Answers one request; every failure becomes a `Status` response, never a dropped
/// connection.
async fn handle(request: Request<Incoming>, context: &Context) -> Response<Body> {
    let (parts, body) = request.into_parts();
    let body = match Limited::new(body, context.max_body_bytes).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let failure = if error.downcast_ref::<http_body_util::LengthLimitError>().is_some() {
                Failure {
                    code: 413,
                    reason: "RequestEntityTooLarge",
                    message: format!("the request body is larger than {} bytes", context.max_body_bytes),
                    name: None,
                }
            } else {
                Failure::bad_request(format!("cannot read the request body: {error}"))
            };
            return failure_response(&failure);
        }
    };
    let path = parts.uri.path().to_owned();
    let call = Call {
        method: parts.method.clone(),
        query: parse_query(parts.uri.query().unwrap_or_default()),
        accept: header_text(&parts.headers, header::ACCEPT),
        content_type: media_type(&header_text(&parts.headers, header::CONTENT_TYPE)),
        body,
    };
    let response = route(&path, &call, context).unwrap_or_else(|failure| failure_response(&failure));
    tracing::debug!(method = %parts.method, uri = %parts.uri, status = response.status().as_u16(), "embedded API server");
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
pub(crate) fn json_response(status: StatusCode, value: &Value) -> Response<Body> {
    respond(status, "application/json", serde_json::to_vec(value).unwrap_or_default())
}

fn aggregated_response(value: &Value) -> Response<Body> {
    respond(StatusCode::OK, discovery::AGGREGATED_DISCOVERY, serde_json::to_vec(value).unwrap_or_default())
}

/// The `Status` response of a failure.
pub(crate) fn failure_response(failure: &Failure) -> Response<Body> {
    let status = StatusCode::from_u16(failure.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &failure.to_status())
}

fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body)).boxed());
    *response.status_mut() = status;
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static(content_type));
    response
}

/// A streamed (chunked) JSON response fed by the returned sender: a watch.
pub(crate) fn streaming_response() -> (mpsc::Sender<Bytes>, Response<Body>) {
    let (sender, receiver) = mpsc::channel::<Bytes>(64);
    let frames = futures::stream::unfold(receiver, |mut receiver| async move {
        let chunk = receiver.recv().await?;
        Some((Ok::<_, Infallible>(Frame::data(chunk)), receiver))
    });
    let mut response = Response::new(BodyExt::boxed(StreamBody::new(frames)));
    response.headers_mut().insert(header::CONTENT_TYPE, header::HeaderValue::from_static("application/json"));
    (sender, response)
}

fn header_text(headers: &HeaderMap, name: header::HeaderName) -> String {
    headers.get_all(name).iter().filter_map(|value| value.to_str().ok()).collect::<Vec<_>>().join(",")
}

/// "application/merge-patch+json; charset=utf-8" -> "application/merge-patch+json".
fn media_type(content_type: &str) -> String {
    content_type.split(';').next().unwrap_or_default().trim().to_ascii_lowercase()
}

fn parse_query(query: &str) -> HashMap<String, String> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .filter_map(|pair| {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let decode = |text: &str| percent_decode(&text.replace('+', " ")).ok();
            Some((decode(key)?, decode(value)?))
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
                return Err(Failure::bad_request(format!("invalid percent-encoding in \"{text}\"")));
            };
            out.push(byte);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    String::from_utf8(out).map_err(|_| Failure::bad_request(format!("\"{text}\" is not UTF-8 once decoded")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queries_are_decoded() {
        let query = parse_query("fieldSelector=spec.nodeName%3Dnode-1&labelSelector=app+in+%28a%2Cb%29&watch=1");
        assert_eq!(query["fieldSelector"], "spec.nodeName=node-1");
        assert_eq!(query["labelSelector"], "app in (a,b)");
        assert_eq!(query["watch"], "1");
        assert!(percent_decode("%zz").is_err());
        assert!(percent_decode("%+f").is_err(), "a sign is not a hex digit");
        assert!(percent_decode("%4").is_err());
        assert_eq!(percent_decode("a%2Fb").ok().as_deref(), Some("a/b"));
        assert_eq!(media_type("application/merge-patch+json; charset=utf-8"), "application/merge-patch+json");
    }
}
