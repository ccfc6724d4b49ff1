//! What the server holds and has shed: the live [`Counters`] its connections, watches
//! and lists keep, and the [`ServerStats`] snapshot of them a caller reads.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What a server holds and has shed (see [`EmbeddedApiServer::stats`]).
///
/// [`EmbeddedApiServer::stats`]: crate::server::EmbeddedApiServer::stats
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Connections open now.
    pub open_connections: usize,
    /// Watch streams open now.
    pub open_watches: usize,
    /// Idle connections closed to admit new ones at the connection cap.
    pub idle_connections_closed: usize,
    /// Connections answered 429 and closed because every connection was busy.
    pub connections_refused: usize,
    /// Watch streams closed because their client took nothing for the slow-watcher
    /// timeout.
    pub slow_watches_closed: usize,
    /// Lists cut short because their client took nothing for the body timeout.
    pub slow_lists_closed: usize,
    /// Requests answered 429 because the bodies being read used the whole budget.
    pub bodies_refused: usize,
    /// Pod list requests answered so far (a client that relists shows here).
    pub pod_lists: usize,
    /// Pod watch requests answered so far.
    pub pod_watches: usize,
    /// Pod events (ADDED, MODIFIED, DELETED) sent on watches so far: what crossed to
    /// the watchers (a watch of one node's pods is sent that node's alone).
    pub pod_watch_events: usize,
    /// Requests held back by [`ServeOptions::delayed_client`] so far.
    ///
    /// [`ServeOptions::delayed_client`]: crate::options::ServeOptions::delayed_client
    pub delayed_requests: usize,
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
    pub pod_watch_events: AtomicUsize,
    pub delayed_requests: AtomicUsize,
}

impl Counters {
    pub fn snapshot(&self) -> ServerStats {
        let get = |counter: &AtomicUsize| counter.load(Ordering::SeqCst);
        ServerStats {
            open_connections: get(&self.connections),
            open_watches: get(&self.watches),
            idle_connections_closed: get(&self.idle_connections_closed),
            connections_refused: get(&self.connections_refused),
            slow_watches_closed: get(&self.slow_watches_closed),
            slow_lists_closed: get(&self.slow_lists_closed),
            bodies_refused: get(&self.bodies_refused),
            pod_lists: get(&self.pod_lists),
            pod_watches: get(&self.pod_watches),
            pod_watch_events: get(&self.pod_watch_events),
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
