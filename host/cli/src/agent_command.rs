//! `podstatus agent`: a long-running virtual node with the kubelet's status logic. It
//! registers its Node and renews its Lease, runs the pods scheduled to it through the
//! simulated runtime, reports every status through the plugin, and on SIGTERM stops
//! taking work, flushes and reports the node as shutting down.

use crate::client_args::ClientArgs;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use podstatus_agent::Target;
use podstatus_agent::node::PodRunner;
use podstatus_runtime::PluginRuntime;
use podstatus_simulate::{ApiServerTarget, Signals, SimulatedNode};

use crate::node_args::NodeArgs;
use crate::plugin_args::{NODE_DEFAULT_LOGIC, PluginArgs, RanPlugin};
use crate::simulate_command;

/// Exit code when the agent could not start.
const UNUSABLE: u8 = 2;
/// Exit code when statuses were left unwritten at shutdown.
const UNFLUSHED: u8 = 1;
/// How long reporting the node as shutting down may take.
const MARK_TIMEOUT: Duration = Duration::from_secs(10);

/// `podstatus agent`'s options. The agent acts for a real node: it runs the newest
/// release followed faithfully unless told otherwise (`--logic`).
#[derive(clap::Args)]
#[command(mut_arg("logic", |arg| arg.default_value(NODE_DEFAULT_LOGIC)))]
pub struct AgentArgs {
    /// The node's name (the kubelet's --hostname-override); in a pod, pass the pod's
    /// name (`--node-name $(POD_NAME)`).
    #[arg(long, visible_alias = "hostname-override", value_name = "NAME")]
    node_name: String,
    /// Where the embedded API server listens (without --kubeconfig or --server); not
    /// `serve`'s 8080 nor `fleet`'s 8082, so that the three run side by side.
    #[arg(long, default_value = "127.0.0.1:8081", help_heading = "API server and client")]
    listen: std::net::SocketAddr,
    /// How long the flush at shutdown may take.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = podstatus_agent::parse_go_duration)]
    flush_timeout: Duration,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    plugin: PluginArgs,
}

pub fn run(args: &AgentArgs) -> ExitCode {
    match agent(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(UNFLUSHED),
        Err(e) => {
            eprintln!("podstatus agent: {e:#}");
            ExitCode::from(UNUSABLE)
        }
    }
}

fn agent(args: &AgentArgs) -> anyhow::Result<bool> {
    // In a pod, the cluster it runs in is the one to join: a virtual node that started
    // an API server of its own there would register nowhere anyone looks.
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|host| !host.is_empty());
    let target = match (&args.client.kubeconfig, &args.client.server) {
        (None, None) if in_cluster => {
            ApiServerTarget::Running(Target::Kubeconfig { path: None, context: args.client.context.clone() })
        }
        _ => args.client.target(args.listen),
    };
    let config = args.client.agent_config(&args.node_name, target, args.node.config(&args.node_name));
    let plugins = PluginRuntime::new(&args.plugin.runtime_config()).context("plugin runtime")?;
    let bytes = args.plugin.bytes()?;
    let image = plugins.load(&bytes).context("loading the plugin")?;
    let ran = RanPlugin::of(&bytes);
    let signals = Signals::default();
    simulate_command::install_signal_handlers(&signals, "shutting down: flushing pending statuses")?;
    let node = SimulatedNode::start(&config, plugins, image).context("starting the agent")?;
    let agent = node.agent();
    tracing::info!(node = %args.node_name, api_server = agent.api_url(), "agent running");
    eprintln!("podstatus agent: node {} on {}, {ran}", args.node_name, agent.api_url());
    let mut runner = PodRunner::start(agent.node_side(), Arc::clone(agent.pod_manager()), args.node.node_ip.clone());
    while !signals.stop.load(Ordering::SeqCst) {
        if signals.swap.swap(false, Ordering::SeqCst) {
            match &args.plugin.plugin {
                Some(path) => match agent.swap_to_file(path) {
                    // Said at every log level, as the start and the stop are: an operator
                    // who sent SIGHUP wants to know it took.
                    Ok(report) => eprintln!(
                        "podstatus agent: plugin swapped to {} from {} ({:?} paused)",
                        report.to, report.from, report.pause
                    ),
                    Err(e) => tracing::error!("swap to {} failed: {e}", path.display()),
                },
                None => tracing::warn!("swap signal ignored: no plugin file (--plugin) to re-read"),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // As the kubelet's graceful shutdown: no new work, what is pending written, then
    // the node reported as shutting down.
    runner.stop();
    let flushed = agent.flush(args.flush_timeout);
    if let Some(registration) = agent.registration()
        && let Err(e) = registration.mark_shutting_down(MARK_TIMEOUT)
    {
        tracing::error!("reporting the node as shutting down: {e}");
    }
    let left = node.shutdown(args.flush_timeout);
    eprintln!("podstatus agent: stopped ({left} sync requests left unwritten)");
    Ok(flushed && left == 0)
}
