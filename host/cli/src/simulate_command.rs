//! The binary's edge of `podstatus simulate` and `podstatus serve` (and the option
//! and signal handling `podstatus agent` shares with them): options to
//! configuration, signals to flags, the summary to stdout, and exit codes.

use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::Duration;

use anyhow::Context;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use podstatus_apiserver::EmbeddedApiServer;
use podstatus_backends::InjectedFaults;
use podstatus_backends::MemoryApiServer;
use podstatus_runtime::PluginRuntime;
use podstatus_simulate::{AgentConfig, Signals, SimulateConfig};

use crate::SimulateArgs;

/// Exit code when the final check finds pods whose API status is not the cached one.
const CHECK_FAILED: u8 = 1;
/// Exit code when the simulation could not run.
const UNUSABLE: u8 = 2;
/// Exit code after a second SIGINT/SIGTERM cut the flush short (128 + SIGINT).
const INTERRUPTED: i32 = 130;

pub fn run(args: &SimulateArgs) -> ExitCode {
    match simulate(args) {
        Ok(passed) => {
            if passed {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(CHECK_FAILED)
            }
        }
        Err(e) => {
            eprintln!("podstatus simulate: {e:#}");
            ExitCode::from(UNUSABLE)
        }
    }
}

fn simulate(args: &SimulateArgs) -> anyhow::Result<bool> {
    let duration = args.duration;
    let agent = AgentConfig {
        injected_faults: (args.api_fault_rate > 0.0)
            .then_some(InjectedFaults { rate: args.api_fault_rate, seed: args.seed }),
        api_latency: args.api_latency,
        ..args.client.agent_config(&args.node_name, args.client.target(args.listen), args.node.config(&args.node_name))
    };
    let swap_at = match (&args.swap_to, args.swap_at) {
        (Some(path), Some(at)) => Some((path.clone(), at)),
        _ => None,
    };
    let config = SimulateConfig {
        agent,
        pods: args.pods,
        static_pods: args.static_pods,
        churn: args.churn,
        duration: (!duration.is_zero()).then_some(duration),
        seed: args.seed,
        cycles: args.cycles,
        swap_at,
        swap_on_signal: args.swap_to.clone().or_else(|| args.plugin.plugin.clone()),
        flush_timeout: args.flush_timeout,
    };
    let plugins = PluginRuntime::new(&args.plugin.runtime_config()).context("plugin runtime")?;
    let image = plugins.load(&args.plugin.bytes()?).context("loading the plugin")?;
    let signals = Signals::default();
    install_signal_handlers(&signals, "stopping; flushing pending statuses")?;
    let duration = config.duration;
    let bar = progress_bar(!args.quiet && !args.json(), duration);
    let summary = podstatus_simulate::run_with_progress(config, plugins, image, &signals, &mut |progress| {
        bar.set_position(progress.elapsed.as_millis() as u64);
        bar.set_message(progress.message.clone());
    })?;
    bar.finish_and_clear();
    if args.json() {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{summary}");
    }
    Ok(summary.passed())
}

/// A bar on stderr (hidden when stderr is not a terminal, or when not `enabled`).
fn progress_bar(enabled: bool, duration: Option<Duration>) -> ProgressBar {
    if !enabled {
        return ProgressBar::hidden();
    }
    let length = duration.map(|d| d.as_millis() as u64);
    let bar = ProgressBar::with_draw_target(length, ProgressDrawTarget::stderr());
    if let Ok(style) = ProgressStyle::with_template("{spinner} [{elapsed_precise}] {wide_bar} {msg}") {
        bar.set_style(style);
    }
    bar
}

pub fn serve(listen: std::net::SocketAddr) -> ExitCode {
    let server = match EmbeddedApiServer::start(std::sync::Arc::new(MemoryApiServer::with_graceful_deletion()), listen)
    {
        Ok(server) => server,
        Err(e) => {
            eprintln!("podstatus serve: {e}");
            return ExitCode::from(UNUSABLE);
        }
    };
    println!("serving the Kubernetes API for pods at {}", server.url());
    println!("try: kubectl --server {} get pods -A -o wide", server.url());
    let signals = Signals::default();
    if let Err(e) = install_signal_handlers(&signals, "stopping the server") {
        eprintln!("podstatus serve: {e:#}");
        return ExitCode::from(UNUSABLE);
    }
    while !signals.stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    server.shutdown();
    ExitCode::SUCCESS
}

/// SIGINT or SIGTERM: stop taking work and flush; a second one exits at once. SIGHUP:
/// swap the plugin. The handlers run on a thread of their own.
pub(crate) fn install_signal_handlers(signals: &Signals, stopping: &'static str) -> anyhow::Result<()> {
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
                if signals.stop.swap(true, Ordering::SeqCst) {
                    eprintln!("podstatus: second signal, exiting without flushing");
                    std::process::exit(INTERRUPTED);
                }
                eprintln!("podstatus: {stopping} (signal again to exit at once)");
            }
        });
    })?;
    Ok(())
}
