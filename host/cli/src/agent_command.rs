//! `podstatus agent`: a long-running virtual node with the kubelet's status logic. It
//! registers its Node and renews its Lease, runs the pods scheduled to it through the
//! simulated runtime, reports every status through the plugin, and on SIGTERM stops
//! taking work, flushes and reports the node as shutting down.

use crate::client_args::ClientArgs;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use podstatus_agent::Target;
use podstatus_agent::client::error_line;
use podstatus_agent::node::{Flushed, PodRunner};
use podstatus_runtime::PluginRuntime;
use podstatus_simulate::{ApiServerTarget, Signals, SimulatedNode};

use crate::failure;
use crate::node_args::NodeArgs;
use crate::plugin_args::{NODE_DEFAULT_LOGIC, PluginArgs};
use crate::simulate_command::{self, Second};

/// How long reporting the node as shutting down may take.
const MARK_TIMEOUT: Duration = Duration::from_secs(10);

/// `podstatus agent`'s options. The agent acts for a real node: it runs the newest
/// release followed faithfully unless told otherwise (`--logic`).
#[derive(clap::Args)]
#[command(mut_arg("logic", |arg| arg.default_value(NODE_DEFAULT_LOGIC)))]
pub struct AgentArgs {
    /// The node's name (the kubelet's --hostname-override): a DNS-1123 subdomain, as
    /// the API server requires; in a pod, pass the pod's name (`--node-name $(POD_NAME)`).
    #[arg(long, visible_alias = "hostname-override", value_name = "NAME", value_parser = crate::input::node_name)]
    node_name: String,
    /// Where the embedded API server listens (without --kubeconfig or --server); not
    /// `serve`'s 8080 nor `fleet`'s 8082, so that the three run side by side.
    #[arg(long, default_value = "127.0.0.1:8081", help_heading = "API server and client")]
    listen: std::net::SocketAddr,
    /// How long the flush at shutdown may take, at most (statuses still unwritten then
    /// are left, and the exit is 1).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::input::duration)]
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
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => failure::fail("agent", &e),
    }
}

/// Statuses left unwritten at shutdown (exit 1).
#[derive(Debug, thiserror::Error)]
#[error("stopped with statuses unwritten: the flush {flush}, {left} sync requests left")]
struct Unflushed {
    flush: Flushed,
    left: usize,
}

fn agent(args: &AgentArgs) -> anyhow::Result<()> {
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
    let (image, ran) = args.plugin.load(&plugins)?;
    // Signals are honoured from here on, in every state: while the API server is
    // waited for, while the node registers and runs, during the flush.
    let signals = Signals::default();
    simulate_command::install_signal_handlers(&signals, "shutting down: flushing pending statuses", Second::Exits)?;
    let not_stopped = || !signals.stop.load(Ordering::SeqCst);
    // As the kubelet waits for its API server: until it answers (the pod watch retries
    // with backoff, each failure a warning naming the server), or until a signal.
    let node = SimulatedNode::start_until(&config, plugins, image, None, &not_stopped).context("starting the agent")?;
    let agent = node.agent();
    tracing::info!(node = %args.node_name, api_server = agent.api_url(), "agent running");
    eprintln!("podstatus agent: node {} on {}, {ran}", args.node_name, agent.api_url());
    let mut runner = PodRunner::start(agent.node_side(), Arc::clone(agent.pod_manager()), args.node.node_ip.clone());
    while !signals.stop.load(Ordering::SeqCst) {
        // A registration the API server refused for good: nothing this agent does can
        // make the node appear, so it stops, saying what the server said.
        if let Some(refusal) = agent.registration().and_then(|registration| registration.refusal()) {
            runner.stop();
            let server = agent.api_url().to_owned();
            drop(node);
            return Err(anyhow::Error::new(refusal).context(server));
        }
        if signals.swap.swap(false, Ordering::SeqCst) {
            match &args.plugin.plugin {
                Some(path) => match agent.swap_to_file(path) {
                    // Said at every log level, as the start and the stop are: an operator
                    // who sent SIGHUP wants to know it took.
                    Ok(report) => eprintln!(
                        "podstatus agent: plugin swapped to {} from {} ({:?} paused)",
                        report.to, report.from, report.pause
                    ),
                    Err(e) => tracing::error!("swap to {} failed: {}", path.display(), error_line(&e)),
                },
                None => tracing::warn!("swap signal ignored: no plugin file (--plugin) to re-read"),
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    // As the kubelet's graceful shutdown: no new work, what is pending written, then
    // the node reported as shutting down; all within --flush-timeout (the report of the
    // node at most a second past it).
    runner.stop();
    let deadline = Instant::now() + args.flush_timeout;
    let flush = agent.flush_until(deadline, &|| true);
    if let Some(registration) = agent.registration() {
        let left = deadline.saturating_duration_since(Instant::now());
        if let Err(e) = registration.mark_shutting_down(left.clamp(Duration::from_secs(1), MARK_TIMEOUT)) {
            tracing::error!("reporting the node as shutting down: {}", error_line(&e));
        }
    }
    let left = node.shutdown(deadline.saturating_duration_since(Instant::now()));
    eprintln!("podstatus agent: stopped (flush {flush}, {left} sync requests left unwritten)");
    if flush != Flushed::Done || left > 0 {
        return Err(Unflushed { flush, left }.into());
    }
    Ok(())
}
