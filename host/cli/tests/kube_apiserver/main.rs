//! `podstatus` against Kubernetes itself: a real kube-apiserver and etcd of the release
//! logic v4 follows (or the one `PODSTATUS_KUBE_RELEASE` names), started from
//! `upstream/cmd/controlplane` (built with Go on first use, cached under `target/`),
//! with authorization `Node,RBAC`, the `NodeRestriction` admission plugin and a client
//! certificate per node.
//!
//! - [`agent`]: `podstatus agent` as a node: registration, Lease, pods to Running, the
//!   deletion guarded by the pod's UID, every logic version, a hot swap.
//! - [`faults`]: what a real server does to its clients: a restart, a watch from a
//!   compacted resourceVersion (410 Gone), 429 with Retry-After.
//!
//! Without Go the tests fail naming what is missing; they never pass unrun.

#[path = "../common/mod.rs"]
mod common;

mod agent;
mod cluster;
mod faults;
mod fleet;
mod fleet_control;
mod fleet_shards;
mod simulate;
