//! Kubernetes' own status manager as podstatus's oracle.
//!
//! `upstream/` (a Go module of ours) replays a podstatus trace through the kubelet's
//! real `pkg/kubelet/status` of a Kubernetes release and prints the report in `podstatus
//! replay`'s format. This crate builds that program for a [`Release`] (once, cached
//! under `target/upstream/`), runs it as an [`Oracle`] process that replays trace after
//! trace, and reads its reports into the replay's own [`podstatus_replay::Report`], in
//! the canonical form [`canonical`] gives both sides of a comparison.
//!
//! - [`release`]: the releases the oracle builds, and their names on the command line.
//! - [`go_build`]: the Go build (the overlay that reaches upstream's private parts).
//! - [`oracle`]: the process and its protocol.
//! - [`canonical`]: reports as Go's types see them, so that JSON spelling never counts
//!   as a difference.
//! - [`control_plane`]: a real etcd and kube-apiserver of a release, in one process, for
//!   end-to-end tests.

pub mod canonical;
pub mod control_plane;
pub mod go_build;
pub mod oracle;
pub mod release;

pub use canonical::canonical;
pub use control_plane::{ControlPlane, ControlPlaneConfig, ControlPlaneError, Ready};
pub use go_build::{BuildError, Program, build, build_program};
pub use oracle::{Oracle, OracleError};
pub use release::{RELEASES, Release};
