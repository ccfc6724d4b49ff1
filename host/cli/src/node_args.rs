//! The options that describe the node an agent registers (`podstatus agent`,
//! `podstatus simulate`), named as the kubelet's flags where it has them.

use std::time::Duration;

use podstatus_agent::node::NodeConfig;

/// The registered node's options (under their own heading in `--help`).
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Node")]
pub struct NodeArgs {
    /// How long the node's Lease (in kube-node-lease) holds; it is renewed every quarter
    /// of it, as the kubelet does (its --node-lease-duration-seconds; `40s`; whole
    /// seconds, at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "40s", value_parser = crate::input::lease_duration)]
    pub node_lease_duration: Duration,
    /// How often the node's status is computed and written if it changed (the
    /// kubelet's --node-status-update-frequency; at least 100ms).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::input::period)]
    pub node_status_update_frequency: Duration,
    /// How often the node's status is written even when nothing changed (the
    /// kubelet's nodeStatusReportFrequency; the Lease is the heartbeat in between; at
    /// least 100ms).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::input::period)]
    pub node_status_report_frequency: Duration,
    /// The node's InternalIP, also its pods' hostIP (the kubelet's --node-ip): IPv4 or
    /// IPv6.
    #[arg(long, value_name = "IP", default_value = "10.0.0.10", value_parser = crate::input::ip)]
    pub node_ip: String,
    /// Pods the node takes at most: its `pods` capacity (the kubelet's --max-pods).
    #[arg(long, value_name = "N", default_value_t = 110, value_parser = clap::value_parser!(u32).range(1..))]
    pub max_pods: u32,
    /// The node's CPU capacity, a Kubernetes quantity (`8`, `500m`).
    #[arg(long, value_name = "QUANTITY", default_value = "8", value_parser = crate::input::capacity)]
    pub node_cpu: String,
    /// The node's memory capacity, a Kubernetes quantity (`32Gi`, `64G`; not `GB`).
    #[arg(long, value_name = "QUANTITY", default_value = "32Gi", value_parser = crate::input::capacity)]
    pub node_memory: String,
}

impl NodeArgs {
    /// The node named `name`, as these options describe it.
    pub fn config(&self, name: &str) -> NodeConfig {
        NodeConfig {
            internal_ip: self.node_ip.clone(),
            cpu: self.node_cpu.clone(),
            memory: self.node_memory.clone(),
            max_pods: self.max_pods,
            lease_duration: self.node_lease_duration,
            status_update_frequency: self.node_status_update_frequency,
            status_report_frequency: self.node_status_report_frequency,
            ..NodeConfig::new(name)
        }
    }
}
