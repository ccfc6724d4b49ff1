//! Integration tests: the real component through the real host, in one test binary
//! (one link instead of one per file, as wasmtime's `tests/all`).

mod agent;
mod agent_pods;
mod artifact_cache;
mod bad_input;
mod conformance_v4;
mod deploy;
mod embedded_server;
mod embedded_server_hostile;
mod embedded_server_latency;
mod embedded_server_nodes;
mod handle;
mod hostile;
mod hostile_split;
mod kube_client;
mod kubectl;
mod lying_plugins;
mod metrics;
mod overlap;
mod plugin_faults;
mod python_client;
mod raw_http;
mod reach;
mod recovery;
mod replay_fixtures;
mod replay_guarded;
mod resize;
mod sandbox;
mod serde_floor;
mod simulate;
mod split_syncs;
mod swap;
mod v1_vs_v2;
mod v2_vs_v3;
mod v2_vs_v4;
