//! The server's stop signal: a `watch` channel that turns true once, heard by the
//! accept loop, every connection and every watch stream.

use tokio::sync::watch as signal;

/// Resolves once the server is stopping (or its stop signal is gone).
pub(crate) async fn stopped(stopping: &mut signal::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}
