//! What a request handler is given: the parsed request ([`Call`]) and what every
//! handler shares ([`Context`]: the stores, the watch hub, the limits, the counters).

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use http::Method;
use serde_json::Value;
use tokio::sync::{Semaphore, watch as signal};

use crate::objects::ObjectStore;
use crate::options::ServeOptions;
use crate::paging::ListSnapshots;
use crate::stats::Counters;
use crate::status_body::Failure;
use crate::watch::WatchHub;
use podstatus_backends::MemoryApiServer;

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
    pub hub: Arc<WatchHub>,
    /// The snapshots of pod lists being read in pages.
    pub list_snapshots: ListSnapshots,
    /// host:port, for `/api`'s `serverAddressByClientCIDRs`.
    pub server_address: String,
    /// The server's limits.
    pub options: ServeOptions,
    /// Bytes of request bodies that may be read at once, in [`BUDGET_UNIT`]s.
    pub body_budget: Arc<Semaphore>,
    /// Turns true when the server stops (open watches end).
    pub stopping: signal::Receiver<bool>,
    /// What the server holds and has shed (a [`ServerStats`] is a snapshot of it).
    ///
    /// [`ServerStats`]: crate::stats::ServerStats
    pub counters: Arc<Counters>,
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

    /// A boolean query parameter, read as kube-apiserver reads it (Go's `ParseBool`:
    /// "1", "t", "T", "true", "TRUE", "True"; the Python client sends "True").
    pub fn flag(&self, name: &str) -> bool {
        matches!(self.param(name), Some("1" | "t" | "T" | "true" | "TRUE" | "True"))
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
