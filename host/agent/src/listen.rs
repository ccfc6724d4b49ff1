//! Binding an HTTP endpoint's port before its server task starts.

use std::net::SocketAddr;

/// Binds `addr` now, on the calling thread (so a taken port is the caller's error, not a
/// task's later), and hands the socket to `runtime`; returns the listener and the
/// address actually bound (port 0 picks a free one).
pub(crate) fn bind_now(
    addr: SocketAddr,
    runtime: &tokio::runtime::Handle,
) -> std::io::Result<(tokio::net::TcpListener, SocketAddr)> {
    let std_listener = std::net::TcpListener::bind(addr)?;
    std_listener.set_nonblocking(true)?;
    let local_addr = std_listener.local_addr()?;
    let _entered = runtime.enter();
    Ok((tokio::net::TcpListener::from_std(std_listener)?, local_addr))
}
