//! Responses: whole JSON bodies, Kubernetes `Status` bodies for failures, and streamed
//! (chunked) bodies bounded in bytes for watches and lists.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};

use crate::status_body::Failure;

/// A response body: whole, or streamed (watches).
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    respond(status, "application/json", serde_json::to_vec(value).unwrap_or_default())
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

pub(crate) fn respond(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> Response<Body> {
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
