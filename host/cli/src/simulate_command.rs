//! The binary's edge of `podstatus simulate` and `podstatus serve` (and the option
//! and signal handling `podstatus agent` shares with them): options to
//! configuration, signals to flags, the summary to stdout, and exit codes.

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use std::path::Path;

use anyhow::Context;

use crate::failure::{self, InputContext};
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::InjectedFaults;
use podstatus_backends::MemoryApiServer;
use podstatus_runtime::{PluginRuntime, PoolSize};
use podstatus_simulate::{CanaryConfig, CanaryShare, PlannedSwap, Signals, SimulateConfig};

use crate::work_progress::RunProgress;

/// Pods a second a fleet creates its first pods at, without --create-rate: what two
/// cores carry with every pod's status work behind it (1,000 nodes, 100,000 pods:
/// propagation p99 0.33 to 0.35 s at 1,050 a second, 10 to 40 s at 2,000, where the
/// backlog grows for as long as the creation lasts; docs/fleet.md).
const FLEET_CREATE_RATE: f64 = 1_050.0;

/// `podstatus simulate`'s options.
#[derive(clap::Args)]
pub struct SimulateArgs {
    #[arg(help_heading = "Workload")]
    /// Pods alive at once on the node (a deleted pod is replaced); at most 1,000,000
    /// (each pod's life, cached status and API object are held in this process, about
    /// 80 KiB together).
    #[arg(long, default_value_t = 50, value_parser = pods)]
    pub pods: usize,
    #[arg(help_heading = "Workload")]
    /// Virtual nodes in this one process (a fleet), named NODE-0 .. NODE-(N-1) after
    /// --node-name, each with its own plugin instance, queue, client budget, Node and
    /// Lease; the pods and the churn are shared out among them (static pods are per
    /// node). One connection and one pod watch serve them all. At most 10,000 (see
    /// `podstatus fleet --help`).
    #[arg(long, default_value_t = 1, value_parser = crate::input::nodes)]
    pub nodes: u32,
    #[arg(help_heading = "Plugin")]
    /// Allocate each plugin instance on demand, instead of from wasmtime's pooling
    /// allocator sized for the fleet (a fleet's default; for comparisons).
    #[arg(long)]
    pub on_demand_instances: bool,
    #[arg(help_heading = "Workload")]
    /// Create the first pods at this many a second over all nodes, one after another (as
    /// a workload scaled up at once), instead of at the churn's rate. A fleet (--nodes
    /// above 1) creates them at 1,050 a second unless told otherwise (what two cores carry).
    #[arg(long, value_name = "PODS_PER_SECOND", value_parser = crate::input::positive_rate)]
    pub create_rate: Option<f64>,
    #[arg(help_heading = "Canary rollout")]
    /// Roll --canary-plugin out to this share of the fleet's nodes first (`10%`, or
    /// `0.1`): at --canary-at they swap to it, and after --canary-watch the rest follow
    /// (promoted) or the canary swaps back (rolled back), by propagation p99, API calls
    /// per status version, faults and plugin time per update against the other nodes'
    /// (the --canary-max-* thresholds).
    #[arg(long, value_name = "SHARE", requires = "canary_plugin", value_parser = crate::rollout_args::canary_share)]
    pub canary: Option<f64>,
    #[arg(help_heading = "Canary rollout")]
    /// The plugin a canary rollout moves to.
    #[arg(long, value_name = "FILE.wasm", requires = "canary")]
    pub canary_plugin: Option<PathBuf>,
    #[arg(help_heading = "Canary rollout")]
    /// How far into the churn the canary moves.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::input::duration)]
    pub canary_at: Duration,
    #[arg(help_heading = "Canary rollout")]
    /// How long the canary is compared with the other nodes before the decision (it
    /// waits on while the canary has too few samples to judge).
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::input::duration)]
    pub canary_watch: Duration,
    #[command(flatten)]
    pub rollout: crate::rollout_args::RolloutArgs,
    #[arg(help_heading = "Workload")]
    /// Static pods, written to a temporary manifest folder (ignored with
    /// --pod-manifest-path); at most 1,000 (a node's system pods are a few).
    #[arg(long, default_value_t = 2, value_parser = static_pods)]
    pub static_pods: usize,
    #[arg(help_heading = "Workload")]
    /// Lifecycle events per second over all pods (above zero).
    #[arg(long, default_value_t = 20.0, value_parser = crate::input::positive_rate)]
    pub churn: f64,
    #[arg(help_heading = "Workload")]
    /// How long the churn lasts (`15s`, `1m30s`; a bare number is seconds), or `off`: until
    /// SIGINT or SIGTERM (or --cycles). A signal before the end cuts the run short: the
    /// summary says so and the exit is 130.
    #[arg(long, value_name = "DURATION|off", default_value = "15s", value_parser = crate::input::duration_or_off)]
    pub duration: crate::input::OrOff,
    #[arg(help_heading = "Workload")]
    /// Stop once this many pods have lived whole lives (created, run, terminated and
    /// deleted by the status manager), if that comes before --duration.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub cycles: Option<u64>,
    #[arg(help_heading = "Workload")]
    /// How often each pod is synced again with nothing new, its last status sent to the
    /// status manager once more, as the kubelet's pod workers do (`1m` by default, as
    /// the kubelet's; up to half as long again, jittered; at least 100ms), or `off`: never.
    #[arg(long, visible_alias = "sync-frequency", value_name = "DURATION|off", default_value = "1m", value_parser = crate::input::period_or_off)]
    pub resync: crate::input::OrOff,
    #[arg(help_heading = "Workload")]
    /// The generator's seed: the same seed gives the same pod lives.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    #[arg(help_heading = "Node")]
    /// The node the pods are bound to (the kubelet's --hostname-override): a DNS-1123
    /// subdomain.
    #[arg(long, visible_alias = "hostname-override", default_value = "sim-node", value_parser = crate::input::node_name)]
    pub node_name: String,
    #[arg(help_heading = "API server and client")]
    /// Where the embedded API server listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    pub listen: std::net::SocketAddr,
    #[command(flatten)]
    pub client: crate::client_args::ClientArgs,
    #[arg(help_heading = "Hot swap")]
    /// Hot-swap to this plugin during the run (with --swap-at), and on SIGHUP; loaded
    /// and checked at start.
    #[arg(long, value_name = "FILE.wasm")]
    pub swap_to: Option<PathBuf>,
    #[arg(help_heading = "Hot swap")]
    /// How far into the run to swap to --swap-to (`40s`; a bare number is seconds).
    #[arg(long, value_name = "DURATION", requires = "swap_to", value_parser = crate::input::duration)]
    pub swap_at: Option<Duration>,
    #[arg(help_heading = "Workload")]
    /// How long the final flush, quiet sync and shutdown may take, at most: past it the
    /// run ends, its summary saying the flush timed out, and the exit is 1.
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::input::duration)]
    pub flush_timeout: Duration,
    #[arg(help_heading = "Faults and latency")]
    /// Have the embedded API server answer the agent's status client (the plugin's GET
    /// of a pod, status writes, DELETE) this much later, as a cluster across a network
    /// would (`20ms`; a bare number is seconds). The pod watch, the pods' owners, node
    /// and lease calls and the final check are not delayed. Only with the embedded
    /// server: a real one's latency is its own.
    #[arg(
        long,
        value_name = "DURATION",
        value_parser = crate::input::duration,
        conflicts_with_all = ["kubeconfig", "server"],
    )]
    pub api_latency: Option<Duration>,
    #[arg(help_heading = "Faults and latency")]
    /// Fail this fraction of the plugin's API calls on purpose (half refused before
    /// sending, half sent with the answer lost): the final check shows nothing is lost.
    /// From 0 to 1.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.0, value_parser = crate::input::fraction)]
    pub api_fault_rate: f64,
    #[arg(help_heading = "Output")]
    /// Print the summary as JSON instead of a table (as `-o json`).
    #[arg(long)]
    pub json: bool,
    #[arg(help_heading = "Output")]
    /// The summary's format, as kubectl's `-o`: `json`, or `text` (the table).
    #[arg(short = 'o', long, value_enum, value_name = "FORMAT")]
    pub output: Option<OutputFormat>,
    #[arg(help_heading = "Output")]
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
    #[command(flatten)]
    pub node: crate::node_args::NodeArgs,
    #[command(flatten)]
    pub plugin: crate::plugin_args::PluginArgs,
}

/// `--pods`: what one process holds.
fn pods(text: &str) -> Result<usize, String> {
    let why = "every pod's life, cached status and API object are held in this process (about 80 KiB each)";
    crate::input::count(text, 0, 1_000_000, why).map(|n| n as usize)
}

/// `--static-pods`: a node's few system pods.
fn static_pods(text: &str) -> Result<usize, String> {
    let why = "static pods are a node's few system pods, each a manifest file";
    crate::input::count(text, 0, 1_000, why).map(|n| n as usize)
}

/// How `simulate` prints its summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum OutputFormat {
    /// The summary table.
    Text,
    /// One JSON document.
    Json,
}

impl SimulateArgs {
    /// Whether the summary is printed as JSON (`--json` or `-o json`).
    pub fn json(&self) -> bool {
        self.json || self.output == Some(OutputFormat::Json)
    }
}

pub fn run(args: &SimulateArgs) -> ExitCode {
    match simulate(args) {
        Ok(summary) if summary.ended.by_signal() => ExitCode::from(failure::INTERRUPTED),
        Ok(summary) if summary.passed() && !summary.ended.cut_short() => ExitCode::SUCCESS,
        Ok(_) => ExitCode::from(failure::FAILURE),
        Err(e) => failure::fail("simulate", &e),
    }
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<podstatus_simulate::Summary> {
    let mut agent =
        args.client.agent_config(&args.node_name, args.client.target(args.listen), args.node.config(&args.node_name));
    agent.target.injected_faults =
        (args.api_fault_rate > 0.0).then_some(InjectedFaults { rate: args.api_fault_rate, seed: args.seed });
    agent.target.api_latency = args.api_latency;
    let mut runtime = args.plugin.runtime_config();
    if args.nodes > 1 && !args.on_demand_instances {
        runtime.pool = Some(PoolSize::for_nodes(args.nodes as usize));
    }
    let plugins = PluginRuntime::new(&runtime).context("plugin runtime")?;
    let (image, ran) = args.plugin.load(&plugins)?;
    // Compiled now, with or without --swap-at: a bad file is refused before the run,
    // and the swap at its time (or at SIGHUP) is only the swap.
    let swap_to = match &args.swap_to {
        Some(path) => Some(plugins.load_file(path).input("--swap-to")?),
        None => None,
    };
    let swap_at = match (swap_to, args.swap_at) {
        (Some(image), Some(at)) => Some(PlannedSwap {
            image,
            logic: podstatus_simulate::file_logic(args.swap_to.as_deref().unwrap_or(Path::new(""))),
            at,
        }),
        _ => None,
    };
    let config = SimulateConfig {
        agent,
        pods: args.pods,
        static_pods: args.static_pods,
        churn: args.churn,
        duration: args.duration.0,
        seed: args.seed,
        cycles: args.cycles,
        swap_at,
        swap_on_signal: args.swap_to.clone().or_else(|| args.plugin.plugin.clone()),
        flush_timeout: args.flush_timeout,
        resync: args.resync.0,
        nodes: args.nodes as usize,
        arrival_rate: args.create_rate.or((args.nodes > 1).then_some(FLEET_CREATE_RATE)),
        canary: match (args.canary, &args.canary_plugin) {
            (Some(share), Some(plugin)) => Some(CanaryShare {
                share,
                rollout: CanaryConfig {
                    group: podstatus_agent::fleet::CANARY_GROUP.into(),
                    plugin: plugin.clone(),
                    at: args.canary_at,
                    policy: args.rollout.policy(args.canary_watch, true),
                },
            }),
            _ => None,
        },
        logic: args.plugin.logic_label(),
    };
    let signals = Signals::default();
    install_signal_handlers(&signals, "stopping; flushing pending statuses", Second::CutsTheFlush)?;
    let duration = config.duration;
    let mut shown = RunProgress::new("simulate", duration, args.quiet || args.json());
    // Said once, as soon as the API server is reached, at every output but --quiet:
    // what runs, and where to point kubectl while the run goes on. Not before: a run
    // that cannot start says only why (one line).
    let mut said = args.quiet;
    let mut summary = podstatus_simulate::run_with_progress(config, plugins, image, &signals, &mut |progress| {
        if let Some(url) = progress.api_server.as_deref().filter(|_| !said) {
            let line = format!("podstatus simulate: {ran}; API server {url} (kubectl --server {url} get pods -A)");
            if args.json() {
                eprintln!("{line}")
            } else {
                shown.say(&line)
            }
            said = true;
        }
        shown.set(progress.elapsed, progress.duration, &progress.message);
    })?;
    shown.finish();
    summary.logic = ran.logic;
    summary.plugin_sha256 = ran.plugin_sha256;
    if args.json() {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{summary}");
    }
    Ok(summary)
}

pub fn serve(listen: std::net::SocketAddr, max_connections: usize) -> ExitCode {
    let store = MemoryApiServer::with_graceful_deletion().skipping_unchanged_writes();
    let options = podstatus_apiserver::ServeOptions { max_connections, ..Default::default() };
    let server = match EmbeddedApiServer::start_with(std::sync::Arc::new(store), listen, options) {
        Ok(server) => server,
        Err(e) => return failure::fail("serve", &e.into()),
    };
    println!("serving the Kubernetes API for pods at {}", server.url());
    println!("try: kubectl --server {} get pods -A -o wide", server.url());
    let signals = Signals::default();
    if let Err(e) = install_signal_handlers(&signals, "stopping the server", Second::Exits) {
        return failure::fail("serve", &e);
    }
    while !signals.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    server.shutdown();
    ExitCode::SUCCESS
}

/// What a second SIGINT or SIGTERM does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Second {
    /// Exit at once (130), nothing more written.
    Exits,
    /// Cut the flush short ([`Signals::cut`]): the run ends within a second, its summary
    /// saying so; a third signal exits at once.
    CutsTheFlush,
}

/// SIGINT or SIGTERM: stop taking work and flush; a second one does what `second`
/// says. SIGHUP: swap the plugin. The handlers run on a thread of their own.
pub(crate) fn install_signal_handlers(signals: &Signals, stopping: &'static str, second: Second) -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (mut interrupt, mut terminate, mut hangup) = {
        let _entered = runtime.enter();
        (signal(SignalKind::interrupt())?, signal(SignalKind::terminate())?, signal(SignalKind::hangup())?)
    };
    let signals = signals.clone();
    std::thread::Builder::new().name("podstatus-signals".into()).spawn(move || {
        runtime.block_on(async move {
            loop {
                tokio::select! {
                    _ = interrupt.recv() => {}
                    _ = terminate.recv() => {}
                    _ = hangup.recv() => {
                        signals.swap.store(true, Ordering::SeqCst);
                        continue;
                    }
                }
                // A first signal during the flush (the run ended by itself) cuts it, as a
                // second one does.
                let flushing = second == Second::CutsTheFlush && signals.flushing.load(Ordering::SeqCst);
                if !signals.stop.swap(true, Ordering::SeqCst) && !flushing {
                    match second {
                        Second::Exits => eprintln!("podstatus: {stopping} (signal again to exit at once)"),
                        Second::CutsTheFlush => {
                            eprintln!("podstatus: {stopping} (signal again to cut the flush short)")
                        }
                    }
                    continue;
                }
                if second == Second::CutsTheFlush && !signals.cut.swap(true, Ordering::SeqCst) {
                    eprintln!("podstatus: cutting the flush short (signal again to exit at once)");
                    continue;
                }
                eprintln!("podstatus: signal again, exiting without flushing");
                std::process::exit(i32::from(failure::INTERRUPTED));
            }
        });
    })?;
    Ok(())
}
