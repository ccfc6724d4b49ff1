//! The client flags `podstatus agent` and `podstatus simulate` share.

use podstatus_agent::client::KubeClientConfig;
use podstatus_agent::node::NodeConfig;
use podstatus_agent::{AgentConfig, Target};
use podstatus_backends::DEFAULT_CAPACITY;
use podstatus_simulate::{ApiServerTarget, SimulatedTarget};

/// How the node agent reaches its API server and paces its client: what `agent` and
/// `simulate` share (under their own heading in `--help`, but for the status
/// manager's own options).
#[derive(clap::Args)]
#[command(next_help_heading = "API server and client")]
pub struct ClientArgs {
    /// Use a cluster instead of the embedded API server: this kubeconfig file, or with
    /// no FILE, KUBECONFIG, ~/.kube/config or the in-cluster service account.
    ///
    /// (Parsed as a plain OS string: clap's path parser refuses the empty value that
    /// stands for "no FILE".)
    #[arg(
        long,
        value_name = "FILE",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with = "server",
        value_parser = clap::builder::TypedValueParser::map(clap::builder::OsStringValueParser::new(), std::path::PathBuf::from),
    )]
    pub kubeconfig: Option<std::path::PathBuf>,
    /// The kubeconfig context to use (with --kubeconfig) instead of its current one.
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
    /// Use the API server at this URL (no credentials) instead of the embedded one:
    /// `http://HOST:PORT` or `https://...`.
    #[arg(long, value_name = "URL", value_parser = crate::input::url)]
    pub server: Option<String>,
    /// Static pod manifests (the kubelet's --pod-manifest-path).
    #[arg(long, value_name = "DIR", help_heading = "Status manager")]
    pub pod_manifest_path: Option<std::path::PathBuf>,
    /// Serve Prometheus metrics here (e.g. 127.0.0.1:9090).
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    pub metrics_addr: Option<std::net::SocketAddr>,
    /// API requests per second the client may make (the kubelet's --kube-api-qps;
    /// above zero).
    #[arg(long, default_value_t = 50.0, value_parser = crate::input::qps)]
    pub kube_api_qps: f32,
    /// Burst of API requests above the QPS (the kubelet's --kube-api-burst; at least 1).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    pub kube_api_burst: u32,
    /// Time between the status manager's batch syncs (`10s`; a bare number is seconds;
    /// at least 100ms).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::input::period)]
    pub sync_period: std::time::Duration,
}

impl ClientArgs {
    /// Where the API server is, from `--kubeconfig [FILE]`, `--context` and `--server`,
    /// else the embedded server on `listen`.
    pub fn target(&self, listen: std::net::SocketAddr) -> ApiServerTarget {
        let path = match (&self.kubeconfig, &self.server) {
            (Some(path), _) => (!path.as_os_str().is_empty()).then(|| path.clone()),
            (None, Some(url)) => return ApiServerTarget::Running(Target::Url(url.clone())),
            (None, None) => return ApiServerTarget::Embedded(listen),
        };
        ApiServerTarget::Running(Target::Kubeconfig { path, context: self.context.clone() })
    }

    /// The agent for node `node` (registered as `registration` says) against `target`,
    /// with these flags' client budget, manifests, metrics and sync period.
    pub fn agent_config(
        &self,
        node: &str,
        target: ApiServerTarget,
        registration: NodeConfig,
    ) -> AgentConfig<SimulatedTarget> {
        AgentConfig {
            node: node.to_string(),
            target: SimulatedTarget::from(target),
            client: KubeClientConfig {
                qps: self.kube_api_qps,
                burst: self.kube_api_burst,
                ..KubeClientConfig::default()
            },
            manifest_dir: self.pod_manifest_path.clone(),
            metrics_addr: self.metrics_addr,
            sync_period: self.sync_period,
            batch_phase: 0.0,
            queue_capacity: DEFAULT_CAPACITY,
            register_node: Some(registration),
        }
    }
}
