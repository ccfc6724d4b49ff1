//! `podstatus fleet`'s control endpoint options: where it listens, who may use it
//! (a token file, the cluster's TokenReview and SubjectAccessReview) and its TLS. Read
//! and checked before a node starts: a bad file or an address beyond loopback that is
//! not guarded is bad input (exit 2), not a fleet that registered its nodes and then
//! failed.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use podstatus_agent::client::Connection;
use podstatus_agent::rollout::{ControlAccess, ControlTls, ControlToken, KubernetesReviewer, UnguardedListen};

use crate::failure::InputContext;

/// How control requests are authenticated beyond a token file.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ControlAuthMode {
    /// TokenReview says who a bearer token is, SubjectAccessReview whether that user
    /// may `get` (GET /rollout), `create` (a canary) or `update` (promote, roll back)
    /// `pluginrollouts.podstatus.io` in the fleet's namespace.
    Kubernetes,
}

/// Where the control endpoint listens and how it is guarded.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Control endpoint")]
pub struct ControlArgs {
    /// Where the control endpoint listens (GET /rollout, POST /rollout/promote,
    /// /rollout/rollback, /rollout/canary). Loopback by default: it swaps plugins, and
    /// beyond loopback it needs --control-token-file or --control-auth, and TLS.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:10350")]
    pub control_addr: SocketAddr,
    /// A file holding the bearer token operators present (`Authorization: Bearer
    /// TOKEN`); its holder may do everything. Compared in constant time.
    #[arg(long, value_name = "FILE")]
    pub control_token_file: Option<PathBuf>,
    /// Authenticate and authorize control requests through the fleet's API server
    /// (the fleet's identity needs the `system:auth-delegator` ClusterRole).
    #[arg(long, value_enum, value_name = "MODE")]
    pub control_auth: Option<ControlAuthMode>,
    /// The endpoint's certificate chain (PEM), to serve it over TLS.
    #[arg(long, value_name = "FILE", requires = "control_tls_private_key_file")]
    pub control_tls_cert_file: Option<PathBuf>,
    /// The private key of --control-tls-cert-file (PEM).
    #[arg(long, value_name = "FILE", requires = "control_tls_cert_file")]
    pub control_tls_private_key_file: Option<PathBuf>,
}

/// The endpoint's access as read from the options, before the fleet's client exists.
pub struct PlannedAccess {
    access: ControlAccess,
    kubernetes: bool,
}

impl ControlArgs {
    /// Reads the token and TLS files and checks the address: all bad input when wrong.
    /// `embedded`: the fleet starts its own API server, which reviews no tokens.
    pub fn plan(&self, embedded: bool) -> anyhow::Result<PlannedAccess> {
        let mut access = ControlAccess::open();
        if let Some(path) = &self.control_token_file {
            access = access.with_token(ControlToken::from_file(path).input("--control-token-file")?);
        }
        if let (Some(cert), Some(key)) = (&self.control_tls_cert_file, &self.control_tls_private_key_file) {
            access = access.with_tls(ControlTls::from_pem_files(cert, key).input("--control-tls-cert-file")?);
        }
        let kubernetes = self.control_auth == Some(ControlAuthMode::Kubernetes);
        if kubernetes && embedded {
            return Err(crate::failure::BadInput::error(
                "--control-auth kubernetes",
                "needs a cluster (--kubeconfig, or in a pod): the embedded API server reviews no tokens",
            ));
        }
        let authenticates = access.authenticates() || kubernetes;
        UnguardedListen::check(self.control_addr, authenticates, access.tls().is_some())
            .input(format!("--control-addr {}", self.control_addr))?;
        Ok(PlannedAccess { access, kubernetes })
    }
}

impl PlannedAccess {
    /// The access, its reviews (when asked for) made through the fleet's `connection`
    /// about rollouts in `namespace` (a shard's `--shard-namespace`, where its
    /// PluginRollouts are), else the connection's (the pod's, or the kubeconfig
    /// context's).
    pub fn finish(self, connection: &Connection, namespace: Option<&str>) -> ControlAccess {
        if !self.kubernetes {
            return self.access;
        }
        let reviewer = match namespace {
            Some(namespace) => KubernetesReviewer::new(connection.client().clone(), Some(namespace.to_owned())),
            None => KubernetesReviewer::in_default_namespace(connection.client()),
        };
        self.access.with_reviewer(Arc::new(reviewer))
    }
}
