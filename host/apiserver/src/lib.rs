//! The embedded API server: the in-memory store ([`MemoryApiServer`]) served over HTTP
//! on loopback, speaking Kubernetes' REST API for pods, so that kube-rs, kubectl and the
//! Python client work against it as against a cluster.
//!
//! Served: discovery (`/version`, `/api`, `/apis`, `/api/v1`, aggregated discovery v2),
//! the OpenAPI v2 and v3 documents of the kinds served (`/openapi/v2`, `/openapi/v3`),
//! list and get of pods with field and label selectors and server-side `Table`s, watch
//! (chunked newline-delimited events, resumable from a resourceVersion, 410 when too
//! old, bookmarks), create, update, status update and patch (JSON merge patch,
//! strategic merge patch, JSON patch), delete with grace period and preconditions, and
//! Kubernetes `Status` bodies for every error. See `routes` for the paths. What
//! kube-apiserver writes into a pod itself (generation, QoS class) this server writes
//! too (`server_fields`); how its answers still differ from kube-apiserver's, and why,
//! is in docs/agent-and-deploy.md ("The embedded server beside kube-apiserver"), held
//! by `tests/all/embedded_vs_real.rs`.
//!
//! Against hostile or careless clients it holds within [`ServeOptions`]' limits
//! (connections, header and body timeouts, body sizes and bytes in flight, per-watch
//! buffers and slow watchers, object size): past a limit a client gets the status code
//! kube-apiserver would give (413, 429, 504) or a closed connection, and the others
//! are still answered. For measurements, one client (by `User-Agent`) can be answered
//! late, as across a network ([`ServeOptions::delayed_client`]). What clients write is validated as kube-apiserver validates it
//! (`validation`): 422 `Invalid` with `details.causes`.
//!
//! Give it a store made with [`MemoryApiServer::with_graceful_deletion`]: a status
//! manager deletes a pod only once it has a `deletionTimestamp`, which a store that
//! deletes at once never gives (the server works with either). Make it also
//! [`MemoryApiServer::skipping_unchanged_writes`] to answer a status write that changes
//! nothing as kube-apiserver does: the stored pod, no new resourceVersion, no event.
//!
//! [`MemoryApiServer`]: podstatus_backends::MemoryApiServer
//! [`MemoryApiServer::with_graceful_deletion`]: podstatus_backends::MemoryApiServer::with_graceful_deletion
//! [`MemoryApiServer::skipping_unchanged_writes`]: podstatus_backends::MemoryApiServer::skipping_unchanged_writes

mod call;
mod client_latency;
mod discovery;
mod excerpt;
mod field_validation;
mod identifiers;
mod media;
mod object_handlers;
mod object_tables;
mod objects;
mod openapi;
mod options;
mod paging;
mod pods;
mod request_body;
mod response;
mod routes;
mod selectors;
mod server;
mod server_fields;
mod stats;
mod status_body;
mod stopping;
mod strategic;
mod table;
mod validation;
mod watch;

pub use client_latency::DelayedClient;
pub use options::ServeOptions;
pub use server::{EmbeddedApiServer, ServeError};
pub use stats::ServerStats;
pub use validation::subdomain_problems;
