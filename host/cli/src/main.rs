//! `podstatus`: run, replay and inspect the kubelet pod status manager plugin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use crate::inspect::inspect;
use anyhow::Context;
use clap::{Parser, Subcommand};
use podstatus_plugins::NativePlugin;
use podstatus_replay as replay;
use podstatus_replay::Trace;
use podstatus_runtime::{Plugin, PluginRuntime};

use crate::failure::InputContext;
use crate::plugin_args::PluginArgs;
use crate::simulate_command::SimulateArgs;

/// What every command with durations says after its options: the one rule for 0, and
/// the exit codes (README, "Exit codes").
const DURATIONS_AND_EXIT_CODES: &str = "Durations are Go's (30s, 1m30s, 250ms) or seconds as a number. No \
duration takes 0: a flag that can be off (no limit, never) takes `off`.\n\nExit codes: 0 done, 1 a failure at run \
time, 2 bad input (one line on stderr naming the flag or file), 130 cut short by a signal.";

/// The kubelet's pod status manager as a sandboxed WebAssembly plugin.
#[derive(Parser)]
#[command(name = "podstatus", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    logging: logging::LoggingArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run a plugin against a scripted world and print what happened as JSON.
    ///
    /// Exit 0: the trace ran to its end. Exit 1: the plugin faulted (the report is still
    /// printed, with `fault` set). Exit 2: the trace is unusable (one line on stderr).
    Replay {
        /// The trace (`-` reads standard input).
        trace: PathBuf,
        /// The largest trace read (`64Mi`; a Kubernetes quantity of bytes): a trace is
        /// read whole before it runs, so an endless input (`/dev/zero`) is refused here.
        #[arg(long, value_name = "BYTES", default_value = "64Mi", value_parser = crate::input::parse_size)]
        max_trace_size: crate::input::Size,
        #[command(flatten)]
        plugin: PluginArgs,
        /// Run the logic natively instead of in the sandbox (same code, no boundary).
        #[arg(long, conflicts_with = "plugin")]
        native: bool,
        /// Replay with the agent's reach guard for node NAME in front of the API server
        /// and the pod manager: refused calls are reported with `outcome: "error"` and
        /// the reason in `refused`. Without it, the seed's unguarded world.
        #[arg(long, value_name = "NAME")]
        node: Option<String>,
        /// Replay through Kubernetes' own status manager of this release instead of a
        /// plugin (`upstream-1.27`, `upstream-1.35`, `upstream-1.36`, `upstream-1.37`):
        /// the Go program of upstream/, built with Go on first use. Its times are the
        /// trace's clock; its report is Go's JSON.
        #[arg(long, value_name = "RELEASE", conflicts_with_all = ["plugin", "native", "node"])]
        upstream: Option<String>,
    },
    /// Print a plugin's WIT world, the version of the contract it implements and, for a
    /// built-in plugin, the Kubernetes release and the write mode it follows.
    Inspect {
        #[command(flatten)]
        plugin: PluginArgs,
        /// Print one JSON document (`podstatus.inspect/v1`, docs/json-output.md)
        /// instead of the text.
        #[arg(long)]
        json: bool,
    },
    /// Fuzz the plugin: random valid traces, invariants checked after every step; a
    /// violation is shrunk and written as a trace `replay` runs.
    #[command(after_help = DURATIONS_AND_EXIT_CODES)]
    Fuzz(crate::fuzz_args::FuzzArgs),
    /// The main job: a node agent running the plugin against an API server over HTTP
    /// (the embedded one, or a cluster), driven through realistic pod lives.
    ///
    /// Prints a summary; exits 1 naming the pods whose API server status is not the
    /// plugin's cached one after the final quiet sync, or when the flush timed out
    /// (--flush-timeout). SIGINT/SIGTERM stop the churn and flush (a second one cuts the
    /// flush short, a third exits at once): a run a signal cut short says so in its
    /// summary and exits 130. SIGHUP hot-swaps to --swap-to (or --plugin).
    #[command(after_help = DURATIONS_AND_EXIT_CODES)]
    Simulate(Box<SimulateArgs>),
    /// A long-running virtual node with the kubelet's status logic (as KWOK or
    /// virtual-kubelet provide): registers its Node and renews its Lease, runs the pods
    /// scheduled to it through the simulated runtime, every status through the plugin.
    ///
    /// Against the embedded API server by default, or a cluster (--kubeconfig,
    /// in-cluster). In a pod (KUBERNETES_SERVICE_HOST set) without --kubeconfig or
    /// --server, the in-cluster service account is used. An API server that does not
    /// answer is waited for (retried with backoff, each failure a warning naming it); one
    /// that refuses the Node for good (a 4xx other than 409 and 429) stops the agent with
    /// its message, exit 1. SIGINT/SIGTERM, in every state: stop taking work, flush
    /// (within --flush-timeout), report the node as shutting down (a second one exits at
    /// once); SIGHUP re-reads --plugin.
    #[command(after_help = DURATIONS_AND_EXIT_CODES)]
    Agent(Box<agent_command::AgentArgs>),
    /// `agent` for N virtual nodes in one process (NAME-0 .. NAME-(N-1)), each with its
    /// own plugin instance, queue, client budget, Node and Lease, sharing one engine,
    /// one connection and one pod watch; groups of nodes on a plugin each, and canary
    /// rollouts between plugins by hot swap.
    ///
    /// A canary (--canary, or POST /rollout/canary on the control endpoint) moves a
    /// share of the nodes to another plugin; it is compared with the rest (propagation
    /// p99, API calls per status version, faults and plugin time per update) and
    /// promoted or rolled back, by POST /rollout/promote or /rollout/rollback or by
    /// itself after --canary-watch. GET /rollout shows where it stands. Metrics carry
    /// `group` and `logic` labels. SIGINT/SIGTERM: stop taking work, flush, report the
    /// nodes as shutting down (a second one exits at once). Exit 0 when everything was
    /// written, 1 when statuses were left unwritten, 2 when the fleet could not start.
    #[command(after_help = DURATIONS_AND_EXIT_CODES)]
    Fleet(Box<fleet_command::FleetArgs>),
    /// Serve the embedded API server (an empty in-memory store) until SIGINT, for
    /// kubectl and other clients.
    Serve {
        /// Where to listen.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Connections open at once (kube-apiserver's --max-requests-inflight plays this
        /// part). At the cap an idle connection is closed to admit a new one, and when
        /// every connection is busy the new one gets 429. A fleet of N nodes in another
        /// process keeps about 3N + 544 open (`podstatus fleet --nodes 1000`: 3,544).
        #[arg(long, default_value_t = 512, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        max_connections: u32,
    },
    /// Run a real Kubernetes control plane (etcd and kube-apiserver of a release, with
    /// certificates, `Node,RBAC` authorization and `NodeRestriction`) on loopback, for
    /// the agent or a fleet to join with the kubeconfigs it writes; prints one JSON line
    /// naming them once ready. Needs Go (the program is built on first use).
    KubeApiserver(Box<kube_apiserver_command::KubeApiserverArgs>),
}

mod agent_command;
#[cfg(feature = "jemalloc")]
mod allocator;
mod client_args;
mod control_args;
mod failure;
mod fleet_command;
mod fleet_shard;
mod fuzz_args;
mod fuzz_hostile;
mod input;
mod inspect;
mod kube_apiserver_command;
mod logging;
mod node_args;
mod plugin_args;
mod rollout_args;
mod simulate_command;
mod work_progress;

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                e.exit();
            }
            eprintln!("podstatus: {}", failure::clap_line(&e));
            return ExitCode::from(failure::BAD_INPUT);
        }
    };
    // Fuzzing injects API failures by the thousand: the plugin's warnings about them
    // are noise there unless asked for.
    // A simulation's churn makes expected warnings by the hundred (a sync of a pod
    // deleted meanwhile, ...): they would bury the progress bar and the summary.
    let default_filter = match cli.command {
        Command::Fuzz(_) => "off",
        Command::Simulate(_) => "error",
        _ => "warn",
    };
    if let Err(e) = cli.logging.init(default_filter) {
        eprintln!("podstatus: {}", failure::one_line(&e));
        return ExitCode::from(failure::BAD_INPUT);
    }
    match cli.command {
        Command::Fuzz(args) => crate::fuzz_args::run(&args),
        Command::Replay { trace, upstream: Some(release), max_trace_size, .. } => {
            upstream_replay_command(&trace, &release, max_trace_size.bytes())
        }
        Command::Replay { trace, plugin, native, node, upstream: None, max_trace_size } => {
            replay_command(&trace, &plugin, native, node, max_trace_size.bytes())
        }
        Command::Simulate(args) => simulate_command::run(&args),
        Command::Agent(args) => agent_command::run(&args),
        Command::Fleet(args) => fleet_command::run(&args),
        Command::KubeApiserver(args) => kube_apiserver_command::run(&args),
        Command::Serve { listen, max_connections } => simulate_command::serve(listen, max_connections as usize),
        Command::Inspect { plugin, json } => match inspect_command(&plugin, json) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => failure::fail("inspect", &e),
        },
    }
}

/// Exit codes of `replay`, as the replay contract fixes them (and as every command
/// uses them: [`failure`]).
const REPLAY_FAULT: u8 = failure::FAILURE;
const REPLAY_UNUSABLE: u8 = failure::BAD_INPUT;

/// How a trace is named in a message: its file, or standard input.
fn trace_name(path: &Path) -> String {
    if path == Path::new("-") { "standard input".to_owned() } else { path.display().to_string() }
}

/// An unusable trace: one line naming the trace and the problem, exit 2.
fn unusable(trace: &Path, error: &anyhow::Error) -> ExitCode {
    let line = failure::one_line(error);
    let name = trace_name(trace);
    // A message about the file itself names it already.
    if line.contains(&name) {
        eprintln!("podstatus replay: {line}");
    } else {
        eprintln!("podstatus replay: {name}: {line}");
    }
    ExitCode::from(REPLAY_UNUSABLE)
}

fn replay_command(
    trace_path: &Path,
    plugin: &PluginArgs,
    native: bool,
    node: Option<String>,
    max_trace_bytes: u64,
) -> ExitCode {
    let (text, base_dir) = match podstatus_replay::read_trace_file_within(trace_path, max_trace_bytes) {
        Ok(read) => read,
        Err(e) => return unusable(trace_path, &e.into()),
    };
    let trace = match Trace::parse(&text, base_dir) {
        Ok(trace) => Trace { guard_node: node, ..trace },
        Err(e) => return unusable(trace_path, &e.into()),
    };

    let runtime = match PluginRuntime::new(&plugin.runtime_config()) {
        Ok(runtime) => runtime,
        Err(e) => return failure::fail("replay", &anyhow::Error::from(e).context("plugin runtime")),
    };
    // `swap` steps load their plugin files with the same runtime (and cache).
    let swap_loader = |path: &Path, world| {
        let image = runtime.load_file(path)?;
        image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>)
    };
    let outcome = if native {
        let version = *plugin.logic;
        replay::run_with_swaps(
            &trace,
            &|world| Ok(Box::new(NativePlugin::new(world, version)) as Box<dyn Plugin>),
            &swap_loader,
        )
    } else {
        let image = match plugin.load(&runtime) {
            Ok((image, _)) => image,
            Err(e) => return failure::fail("replay", &e),
        };
        replay::run_with_swaps(
            &trace,
            &|world| image.instantiate(world).map(|p| Box::new(p) as Box<dyn Plugin>),
            &swap_loader,
        )
    };
    let outcome = match outcome {
        Ok(outcome) => outcome,
        Err(e) => return unusable(trace_path, &e.into()),
    };
    let mut out = std::io::stdout().lock();
    let printed = serde_json::to_writer_pretty(&mut out, &outcome.report)
        .map_err(anyhow::Error::from)
        .and_then(|()| Ok(writeln!(out)?));
    if let Err(e) = printed {
        return failure::fail("replay", &e.context("writing the report"));
    }
    if outcome.faulted() { ExitCode::from(REPLAY_FAULT) } else { ExitCode::SUCCESS }
}

/// `replay --upstream RELEASE`: the trace through Kubernetes' own status manager.
fn upstream_replay_command(trace_path: &Path, release: &str, max_trace_bytes: u64) -> ExitCode {
    let trace = match podstatus_replay::read_trace_file_within(trace_path, max_trace_bytes)
        .map_err(anyhow::Error::from)
        .and_then(|(text, base)| Ok(Trace::parse(&text, base)?))
    {
        Ok(trace) => trace,
        Err(e) => return unusable(trace_path, &e),
    };
    let Some(release) = podstatus_upstream::Release::named(release) else {
        let why = format!("the oracle builds {}", podstatus_upstream::release::names());
        return failure::fail("replay", &failure::BadInput::error(format!("--upstream {release}"), why));
    };
    let report = podstatus_upstream::Oracle::new(release).and_then(|oracle| oracle.replay_json(&trace, None));
    match report {
        Ok(report) => match serde_json::to_string_pretty(&report) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(e) => failure::fail("replay", &anyhow::Error::from(e).context("writing the report")),
        },
        Err(e @ podstatus_upstream::OracleError::Refused { .. }) => unusable(trace_path, &e.into()),
        Err(e) => failure::fail("replay", &e.into()),
    }
}

/// What `inspect` says a plugin follows: the `--logic` name its custom section gives,
/// and what this checkout's table knows of it.
fn logic_line(component: &[u8]) -> String {
    use podstatus_plugins::LogicVersion;
    let Some((name, alias)) = LogicVersion::named_in(component) else {
        return "unknown (not a built-in plugin: no podstatus-logic section)".into();
    };
    let called = match alias {
        Some(alias) => format!("{name} (alias {alias})"),
        None => name.to_string(),
    };
    match LogicVersion::named(name) {
        Some(version) => format!("{called}: {}", version.follows()),
        None => format!("{called} (not a logic version of this checkout)"),
    }
}

fn inspect_command(plugin: &PluginArgs, json: bool) -> anyhow::Result<()> {
    use podstatus_runtime::LoadError;
    let bytes = plugin.bytes()?;
    // Loading it proves the world is one this host can serve, not just well-formed; a
    // file that is no component at all is refused before its world is read.
    let runtime = PluginRuntime::new(&plugin.runtime_config()).context("plugin runtime")?;
    let loaded = runtime.load(&bytes);
    if let Err(e @ (LoadError::NotWasm | LoadError::CoreModule | LoadError::TooLarge { .. })) = loaded {
        return Err(e).input(plugin.name());
    }
    let inspection = inspect(&bytes).input(plugin.name())?;
    let load_error = loaded.err().map(|e| podstatus_agent::client::error_line(&e));
    let ran = plugin_args::RanPlugin::of(&bytes);
    let mut out = std::io::stdout().lock();
    if json {
        let report = inspect::InspectReport::new(&bytes, &inspection, &ran, load_error);
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
        return Ok(());
    }
    let verdict = match load_error {
        None => "yes".to_string(),
        Some(e) => format!("no ({e})"),
    };
    writeln!(out, "logic: {}", logic_line(&bytes))?;
    writeln!(out, "plugin: sha256:{}", ran.plugin_sha256)?;
    writeln!(out, "contract: {}", inspection.contract_versions.join(", "))?;
    writeln!(out, "imports: {}", inspection.imports.join(", "))?;
    writeln!(out, "exports: {}", inspection.exports.join(", "))?;
    writeln!(out, "loadable by this host: {verdict}")?;
    writeln!(out)?;
    write!(out, "{}", inspection.wit)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    use super::Cli;

    /// The first line of `podstatus --help` is the one a newcomer reads: it names
    /// every command.
    #[test]
    fn the_first_line_of_help_names_every_command() {
        let command = Cli::command();
        let about = command.get_about().map(ToString::to_string).unwrap_or_default();
        let names: Vec<&str> =
            command.get_subcommands().map(clap::Command::get_name).filter(|n| *n != "help").collect();
        assert_eq!(names.len(), 8, "{names:?}");
        for name in names {
            assert!(about.contains(name), "{name} is not in {about:?}");
        }
    }

    #[test]
    fn agent_and_fleet_run_the_newest_release_and_simulate_and_replay_the_seed() {
        let command = Cli::command();
        let default_logic = |sub: &str| {
            let sub = command.find_subcommand(sub).expect("a command");
            let logic = sub.get_arguments().find(|a| a.get_id() == "logic").expect("--logic");
            logic.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect::<Vec<_>>()
        };
        assert_eq!(default_logic("agent"), [crate::plugin_args::NODE_DEFAULT_LOGIC]);
        assert_eq!(default_logic("fleet"), [crate::plugin_args::NODE_DEFAULT_LOGIC]);
        assert_eq!(default_logic("simulate"), ["v1"]);
        assert_eq!(default_logic("replay"), ["v1"]);
    }

    /// The embedded servers of `serve`, `agent` and `fleet` listen on ports of their
    /// own: the README's commands, run side by side, do not collide.
    #[test]
    fn serve_agent_and_fleet_listen_on_different_ports() {
        let command = Cli::command();
        let listen = |sub: &str| {
            let sub = command.find_subcommand(sub).expect("a command");
            let arg = sub.get_arguments().find(|a| a.get_id() == "listen").expect("--listen");
            arg.get_default_values()[0].to_string_lossy().into_owned()
        };
        let ports = [listen("serve"), listen("agent"), listen("fleet")];
        assert_eq!(ports, ["127.0.0.1:8080", "127.0.0.1:8081", "127.0.0.1:8082"]);
    }

    #[test]
    fn the_cli_is_well_formed() {
        Cli::command().debug_assert();
    }
}
