//! Reading a request's body within the server's limit, and answering one over it so
//! that the client can read the answer.
//!
//! A client (the official Python client, kubectl) sends its whole body before it reads
//! the response. A server that answers 413 and closes while the client is still sending
//! makes the client fail with a broken pipe or a reset instead of the 413. So, as Go's
//! HTTP server behind kube-apiserver does, the rest of an oversized body is read and
//! discarded (bounded by [`DRAIN_MAX_BYTES`] and [`DRAIN_MAX_TIME`]) while the answer is
//! written, and only then is the connection closed.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// The most of an oversized body read (and discarded) after the answer: past it, the
/// connection is closed whatever the client still sends.
pub const DRAIN_MAX_BYTES: usize = 32 << 20;

/// The longest an oversized body is read (and discarded) after the answer.
pub const DRAIN_MAX_TIME: Duration = Duration::from_secs(5);

/// Why a body was not read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BodyError {
    /// Over the limit: the rest is being drained, the answer is 413.
    #[error("the request body is over the limit")]
    TooLarge,
    /// The connection failed while the body was read.
    #[error("cannot read the request body: {0}")]
    Read(#[source] hyper::Error),
}

/// The body, read whole while it stays within `limit` bytes; past it, the rest is left
/// to [`drain`] and the answer is [`BodyError::TooLarge`].
pub(crate) async fn read_within(mut body: Incoming, limit: usize) -> Result<Bytes, BodyError> {
    let mut read = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let Ok(data) = frame.map_err(BodyError::Read)?.into_data() else { continue };
        if read.len() + data.len() > limit {
            drain(body);
            return Err(BodyError::TooLarge);
        }
        read.extend_from_slice(&data);
    }
    Ok(read.freeze())
}

/// Reads and discards the rest of `body` in the background, up to [`DRAIN_MAX_BYTES`]
/// and [`DRAIN_MAX_TIME`], so that a client still sending can finish and read the
/// answer; dropping the body then lets the connection close.
pub(crate) fn drain(mut body: Incoming) {
    tokio::spawn(async move {
        let discard = async {
            let mut discarded = 0usize;
            while let Some(Ok(frame)) = body.frame().await {
                discarded += frame.data_ref().map_or(0, |data| data.len());
                if discarded > DRAIN_MAX_BYTES {
                    break;
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN_MAX_TIME, discard).await;
    });
}
