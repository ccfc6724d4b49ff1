//! The node agent's side of the wiring: where the node's pods come from (a watch of the
//! API server, static pod manifests) and how the agent runs the status manager on them.

pub mod node;
pub mod pod_watch;
pub mod static_pods;
