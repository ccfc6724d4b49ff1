//! `podstatus fleet`: `podstatus agent` for N virtual nodes in one process (issue 28).
//! Each node registers its Node and renews its Lease, runs the pods scheduled to it
//! through the pod runner, every status through its own plugin instance; the nodes
//! share one engine, one connection and one pod watch (`podstatus_agent::Fleet`).
//! Groups of nodes run a plugin each, a canary moves a share of the nodes to another
//! one, and the control endpoint promotes it or rolls it back (the rollout also decides
//! by itself). On SIGTERM: no new work, flush, nodes reported as shutting down.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use podstatus_agent::fleet::{FleetGroup, FleetSpec, StartProgress, canary_nodes};
use podstatus_agent::metrics::MetricsServer;
use podstatus_agent::node::{PodRunner, WatchScope};
use podstatus_agent::rollout::{
    CanaryPlan, ControlLimits, ControlServer, Outcome, PluginCatalog, serve_commands, serve_shard_commands,
};
use podstatus_agent::{Fleet, Rollout};
use podstatus_agent::{Target, format_seconds};
use podstatus_apiserver::{EmbeddedApiServer, ServeOptions};
use podstatus_backends::MemoryApiServer;
use podstatus_plugins::LogicVersion;
use podstatus_runtime::{PluginImage, PluginRuntime, PoolSize};
use podstatus_simulate::{ApiServerTarget, Signals};

use podstatus_agent::node::Flushed;

use crate::client_args::ClientArgs;
use crate::control_args::ControlArgs;
use crate::failure::{BadInput, InputContext};
use crate::input::MAX_NODES;
use crate::node_args::NodeArgs;
use crate::plugin_args::{Logic, NODE_DEFAULT_LOGIC, PluginArgs, RanPlugin};
use crate::rollout_args::{RolloutArgs, canary_share};
use crate::simulate_command;
use crate::work_progress::WorkProgress;

/// Exit code when statuses were left unwritten at shutdown.
const UNFLUSHED: u8 = crate::failure::FAILURE;
/// How long reporting each node as shutting down may take.
const MARK_TIMEOUT: Duration = Duration::from_secs(10);
/// Nodes whose pods one runner thread runs: a thousand nodes take twenty threads.
const NODES_PER_RUNNER: usize = 50;
/// How often the fleet's loop runs the control commands and the rollout's tick.
const TICK: Duration = Duration::from_millis(100);
/// The longest the fleet waits for its Nodes to report Ready before it serves anyway.
const READY_TIMEOUT: Duration = Duration::from_secs(120);

/// `podstatus fleet`'s options. Its nodes act for real ones: they run the newest
/// release followed faithfully unless told otherwise (`--logic`).
#[derive(clap::Args)]
#[command(mut_arg("logic", |arg| arg.default_value(NODE_DEFAULT_LOGIC)))]
pub struct FleetArgs {
    /// Virtual nodes in this process, named NAME-0 .. NAME-(N-1) after --node-name
    /// (defaults to the sum of the --group counts); 1 to 10,000 (every node's plugin
    /// instance slots are reserved as address space when the fleet starts; the largest
    /// fleet measured is 2,000 nodes, docs/fleet.md).
    #[arg(long, value_parser = crate::input::nodes, required_unless_present = "groups")]
    nodes: Option<u32>,
    /// The prefix of the nodes' names (the kubelet's --hostname-override): with `-N`
    /// after it, a DNS-1123 subdomain.
    #[arg(long, visible_alias = "hostname-override", value_name = "NAME", default_value = "podstatus-fleet", value_parser = node_prefix)]
    node_name: String,
    /// A group of nodes: NAME=COUNT, running --plugin/--logic, or NAME=COUNT:vN (a
    /// built-in logic version) or NAME=COUNT:FILE.wasm. Repeatable; the nodes are
    /// numbered in the groups' order. Without it: one group `all` of every node.
    #[arg(long = "group", value_name = "NAME=COUNT[:PLUGIN]", value_parser = parse_group)]
    groups: Vec<GroupArg>,
    /// Where the embedded API server listens (without --kubeconfig or --server); not
    /// `serve`'s 8080 nor `agent`'s 8081, so that the three run side by side.
    #[arg(long, default_value = "127.0.0.1:8082", help_heading = "API server and client")]
    listen: SocketAddr,
    #[command(flatten)]
    control: ControlArgs,
    #[command(flatten)]
    shard: crate::fleet_shard::ShardArgs,
    /// How the nodes get their pods: `shared`, one watch of every pod of the cluster,
    /// each handed to its node (one connection; every pod crosses it), or `per-node`, a
    /// watch of each node's own pods as every kubelet has (a connection per node; only
    /// this process's nodes' pods cross them, but four shards of 250 nodes took 2.6
    /// times the CPU and twice the memory of the shared watch: docs/fleet.md).
    #[arg(long, value_enum, value_name = "SCOPE", default_value = "shared", help_heading = "API server and client")]
    pod_watch: PodWatchArg,
    /// Label every metric sample with its node too (`node`): a series per node and
    /// family, so off by default (samples carry `group` and `logic`).
    #[arg(long, help_heading = "Output")]
    per_node_metrics: bool,
    /// Start a canary at once: this share of the nodes (`10%`, `0.1`), spread over the
    /// fleet, moves to --canary-plugin or --canary-logic and is compared with the rest
    /// for --canary-watch.
    #[arg(long, value_name = "SHARE", value_parser = canary_share, help_heading = "Canary rollout")]
    canary: Option<f64>,
    /// The plugin a canary moves to (also one the control endpoint can start a canary
    /// on, by its file's stem).
    #[arg(long, value_name = "FILE.wasm", conflicts_with = "canary_logic", help_heading = "Canary rollout")]
    canary_plugin: Option<PathBuf>,
    /// The built-in logic version a canary moves to.
    #[arg(long, value_enum, value_name = "VERSION", help_heading = "Canary rollout")]
    canary_logic: Option<Logic>,
    /// How long a canary runs before the rollout decides by itself (it waits on while
    /// the canary has too few samples to judge).
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::input::duration, help_heading = "Canary rollout")]
    canary_watch: Duration,
    /// Never decide by itself: only POST /rollout/promote or /rollout/rollback do.
    #[arg(long, help_heading = "Canary rollout")]
    canary_manual: bool,
    #[command(flatten)]
    rollout: RolloutArgs,
    /// How long the flush at shutdown may take, at most, for the whole fleet (the nodes a
    /// few at a time; statuses still unwritten then are left, and the exit is 1).
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::input::duration)]
    flush_timeout: Duration,
    /// No progress on stderr while the nodes start.
    #[arg(long, help_heading = "Output")]
    quiet: bool,
    /// Print the summary at the end as one JSON document (`podstatus.fleet/v1`,
    /// docs/json-output.md) instead of the text.
    #[arg(long, help_heading = "Output")]
    json: bool,
    #[command(flatten)]
    client: ClientArgs,
    #[command(flatten)]
    node: NodeArgs,
    #[command(flatten)]
    plugin: PluginArgs,
}

/// `--pod-watch`: [`WatchScope`]'s choices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum PodWatchArg {
    PerNode,
    Shared,
}

/// `--group NAME=COUNT[:PLUGIN]`.
#[derive(Clone, Debug, PartialEq)]
struct GroupArg {
    name: String,
    nodes: usize,
    plugin: Option<PluginChoice>,
}

/// A plugin named on the command line.
#[derive(Clone, Debug, PartialEq)]
enum PluginChoice {
    Logic(Logic),
    File(PathBuf),
}

/// Group names are label values and appear in node counts and logs: short, plain.
const MAX_GROUP_NAME: usize = 63;

/// `--node-name` of a fleet: a prefix that, with `-N` after it, is a node's name.
fn node_prefix(text: &str) -> Result<String, String> {
    let last = format!("{text}-{}", MAX_NODES - 1);
    crate::input::node_name(&last).map_err(|e| format!("{text:?} with -N after it: {e}"))?;
    Ok(text.to_owned())
}

fn parse_group(text: &str) -> Result<GroupArg, String> {
    let (name, rest) = text.split_once('=').ok_or_else(|| format!("{text:?}: expected NAME=COUNT[:PLUGIN]"))?;
    let valid = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == '_';
    if name.is_empty() || name.len() > MAX_GROUP_NAME || !name.chars().all(valid) {
        return Err(format!("{name:?}: a group name is 1 to {MAX_GROUP_NAME} letters, digits, '-' or '_'"));
    }
    if name == podstatus_agent::fleet::CANARY_GROUP {
        return Err(format!("{name:?} is the canary's group: name the group otherwise"));
    }
    let (count, plugin) = match rest.split_once(':') {
        Some((count, plugin)) => (count, Some(plugin)),
        None => (rest, None),
    };
    let nodes = match count.parse::<usize>() {
        Ok(n) if n > 0 && n as u64 <= MAX_NODES => n,
        _ => return Err(format!("{count:?}: a group's count is a number of nodes from 1 to {MAX_NODES}")),
    };
    let plugin = plugin.map(|plugin| match <Logic as clap::ValueEnum>::from_str(plugin, true) {
        Ok(logic) => Ok(PluginChoice::Logic(logic)),
        Err(_) if plugin.is_empty() => Err(format!("{text:?}: an empty plugin after ':'")),
        Err(_) => Ok(PluginChoice::File(PathBuf::from(plugin))),
    });
    Ok(GroupArg { name: name.to_owned(), nodes, plugin: plugin.transpose()? })
}

pub fn run(args: &FleetArgs) -> ExitCode {
    match fleet(args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(UNFLUSHED),
        Err(e) => crate::failure::fail("fleet", &e),
    }
}

/// The groups the options describe, each with its plugin. What a plugin is (its
/// logic and digest) is recorded in `ran` by its label, for the summary.
fn groups(
    args: &FleetArgs,
    plugins: &PluginRuntime,
    ran: &mut BTreeMap<String, RanPlugin>,
) -> anyhow::Result<Vec<FleetGroup>> {
    let default_plugin = |ran: &mut BTreeMap<String, RanPlugin>| -> anyhow::Result<(PluginImage, String)> {
        let (image, plugin) = args.plugin.load(plugins)?;
        ran.insert(args.plugin.logic_label(), plugin);
        Ok((image, args.plugin.logic_label()))
    };
    if args.groups.is_empty() {
        let nodes = args.nodes.context("--nodes or --group is needed")? as usize;
        let (image, logic) = default_plugin(ran)?;
        return Ok(vec![FleetGroup::new("all", nodes, image, &logic)]);
    }
    let total: usize = args.groups.iter().map(|g| g.nodes).sum();
    if total as u64 > MAX_NODES {
        return Err(BadInput::error("--group", format!("the groups add up to {total} nodes, more than {MAX_NODES}")));
    }
    if let Some(nodes) = args.nodes
        && nodes as usize != total
    {
        return Err(BadInput::error(
            "--group",
            format!("the groups add up to {total} nodes, not the {nodes} of --nodes"),
        ));
    }
    // One image per distinct plugin: a plugin is compiled (or read from the cache) once.
    let mut images: BTreeMap<String, (PluginImage, String)> = BTreeMap::new();
    let mut out = Vec::with_capacity(args.groups.len());
    for group in &args.groups {
        let key = format!("{:?}", group.plugin);
        if !images.contains_key(&key) {
            let loaded = match &group.plugin {
                None => default_plugin(ran)?,
                Some(PluginChoice::Logic(logic)) => (
                    plugins.load(logic.component()).with_context(|| format!("loading {}", logic.program()))?,
                    logic.program().to_owned(),
                ),
                Some(PluginChoice::File(path)) => {
                    let flag = format!("--group {}", group.name);
                    let bytes = plugins.read_file(path).input(&flag)?;
                    let image = plugins.load_read(path, &bytes).input(&flag)?;
                    ran.insert(podstatus_simulate::file_logic(path), RanPlugin::of(&bytes));
                    (image, podstatus_simulate::file_logic(path))
                }
            };
            images.insert(key.clone(), loaded);
        }
        let (image, logic) = &images[&key];
        out.push(FleetGroup::new(&group.name, group.nodes, image.clone(), logic));
    }
    Ok(out)
}

/// The plugins a canary may move to: every built-in logic version, and the files the
/// options name. What each built-in is goes into `ran` by its label (a file's is
/// recorded when it is read).
fn catalog(args: &FleetArgs, plugins: &PluginRuntime, ran: &mut BTreeMap<String, RanPlugin>) -> PluginCatalog {
    let mut catalog = PluginCatalog::new(plugins.clone());
    for version in LogicVersion::ALL {
        for name in std::iter::once(version.name()).chain(version.alias()) {
            catalog.add_bytes(name, version.component(), version.program());
        }
        ran.entry(version.program().to_owned()).or_insert_with(|| RanPlugin::of(version.component()));
    }
    let files =
        args.canary_plugin.iter().chain(&args.plugin.plugin).chain(args.groups.iter().filter_map(
            |g| match &g.plugin {
                Some(PluginChoice::File(path)) => Some(path),
                _ => None,
            },
        ));
    for path in files {
        let logic = podstatus_simulate::file_logic(path);
        catalog.add_file(&logic, path.clone(), &logic);
    }
    catalog
}

fn fleet(args: &FleetArgs) -> anyhow::Result<bool> {
    if args.canary.is_some() && args.canary_plugin.is_none() && args.canary_logic.is_none() {
        return Err(BadInput::error("--canary", "needs --canary-plugin or --canary-logic"));
    }
    // Every node's instance comes from wasmtime's pooling allocator, sized for the fleet
    // and its swaps.
    let mut runtime = args.plugin.runtime_config();
    let planned = match args.nodes {
        Some(nodes) => nodes as usize,
        None => args.groups.iter().map(|g| g.nodes).sum(),
    };
    runtime.pool = Some(PoolSize::for_nodes(planned));
    let plugins = PluginRuntime::new(&runtime).context("plugin runtime")?;
    let mut ran = BTreeMap::new();
    let mut groups = groups(args, &plugins, &mut ran)?;
    let nodes: usize = groups.iter().map(|g| g.nodes).sum();
    let catalog = catalog(args, &plugins, &mut ran);
    // The canary's plugin is loaded before anything starts: a bad file is refused
    // before a thousand nodes register.
    let canary_plugin = match (&args.canary_plugin, args.canary_logic) {
        (Some(path), _) => Some(catalog.get(&podstatus_simulate::file_logic(path)).input("--canary-plugin")?),
        (None, Some(logic)) => Some(catalog.get(logic.name())?),
        (None, None) => None,
    };

    // As `podstatus agent`: in a pod, the cluster it runs in is the one to join.
    let in_cluster = std::env::var_os("KUBERNETES_SERVICE_HOST").is_some_and(|host| !host.is_empty());
    let target = match (&args.client.kubeconfig, &args.client.server) {
        (None, None) if in_cluster => {
            ApiServerTarget::Running(Target::Kubeconfig { path: None, context: args.client.context.clone() })
        }
        _ => args.client.target(args.listen),
    };
    let embedded_target = matches!(target, ApiServerTarget::Embedded(_));
    let control_access = args.control.plan(embedded_target)?;
    let shard_plan = args.shard.plan(&args.node_name, embedded_target)?;
    if shard_plan.is_some() && args.canary.is_some() {
        return Err(BadInput::error(
            "--canary",
            "a sharded fleet's canary spans every shard: create a PluginRollout object instead",
        ));
    }
    let watch = match args.pod_watch {
        PodWatchArg::PerNode => WatchScope::PerNode,
        PodWatchArg::Shared => WatchScope::Shared,
    };
    let (embedded, target) = resolve(target, nodes, watch)?;
    let config = args.client.agent_config(
        &args.node_name,
        ApiServerTarget::Running(Target::Url(String::new())),
        args.node.config(&args.node_name),
    );
    let signals = Signals::default();
    simulate_command::install_signal_handlers(
        &signals,
        "shutting down: flushing pending statuses",
        simulate_command::Second::Exits,
    )?;

    let connection = Arc::new(Fleet::connect(&target).context("connecting to the API server")?);
    // The metrics endpoint outlives each fleet a shard starts on its share.
    let metrics_server = match config.metrics_addr {
        Some(addr) => Some(
            MetricsServer::start(addr, Arc::clone(connection.metrics()), connection.runtime())
                .context("starting the metrics endpoint")?,
        ),
        None => None,
    };
    let mut config = config;
    config.metrics_addr = None;
    let shard = shard_plan.map(|planned| {
        let node_lease = config.register_node.as_ref().map_or(Duration::from_secs(40), |n| n.lease_duration);
        planned.start(&args.shard, &connection, &args.node_name, nodes, node_lease)
    });
    if let (Some(shard), Some(registration)) = (&shard, config.register_node.as_mut()) {
        registration.lease_holder = Some(shard.identity().to_owned());
        registration.extra_labels = shard.node_labels();
        eprintln!("podstatus fleet: shard {} of {nodes} nodes, as {}", shard.config().place.ordinal, shard.identity());
    }
    let membership = shard.as_ref().and_then(|shard| shard.keep_membership());
    let mut rollouts = shard.as_ref().map(|shard| crate::fleet_shard::ShardRollouts::new(shard, &connection));
    let stopping = || signals.stop.load(Ordering::SeqCst);
    let not_stopped = || !stopping();

    let mut control: Option<ControlServer> = None;
    let mut control_access = Some(control_access);
    let mut canary_plugin = canary_plugin;
    let started = Instant::now();
    let mut generation = 0usize;
    let ended = loop {
        // A shard runs the nodes of its share whose Leases it holds; a whole fleet, all.
        let mut claimed = match &shard {
            None => None,
            Some(shard) => {
                match crate::fleet_shard::claim_share(shard, membership.as_ref(), &stopping, generation == 0) {
                    Some(claimed) => Some(claimed),
                    None => break None,
                }
            }
        };
        let numbers = claimed.as_ref().map(|claimed| claimed.nodes.clone());
        generation += 1;
        let spec = FleetSpec {
            groups: share_of_groups(&groups, numbers.as_deref()),
            per_node_labels: args.per_node_metrics,
            numbers: numbers.clone(),
            watch,
        };
        let share_nodes = numbers.as_ref().map_or(nodes, Vec::len);
        let mut starting = WorkProgress::new("nodes started", share_nodes as u64, args.quiet || generation > 1);
        let fleet = Fleet::start_on(
            Arc::clone(&connection),
            &config,
            spec,
            &plugins,
            &|_, api| api,
            &mut |step| {
                if let StartProgress::NodeStarted { started, .. } = step {
                    starting.set(started as u64);
                }
            },
            &not_stopped,
        );
        starting.finish();
        let fleet = match (fleet, &shard, &numbers) {
            (Ok(fleet), _, _) => fleet,
            // A shard whose fleet could not start (its pods not listed in time: an API
            // server too busy) hands its nodes on and tries again, as a restarted pod
            // would, rather than leaving them to lapse with the process.
            (Err(error), Some(shard), Some(numbers)) if !stopping() => {
                eprintln!("podstatus fleet: starting the shard's fleet: {error}; trying again");
                shard.release_nodes(numbers);
                std::thread::sleep(shard.config().member_lease_duration / 4);
                continue;
            }
            // Stopped while a new share's fleet was starting (a SIGTERM during a
            // reshard): what the last one held was flushed and handed on already.
            (Err(_), Some(shard), Some(numbers)) => {
                shard.release_nodes(numbers);
                break None;
            }
            (Err(error), _, _) => return Err(anyhow::Error::new(error).context("starting the fleet")),
        };
        let names = fleet.names();
        eprintln!(
            "podstatus fleet: {} nodes {} .. {} on {}",
            fleet.len(),
            names[0],
            names[names.len() - 1],
            fleet.connection().api_url()
        );
        if generation == 1 {
            for (g, name) in fleet.group_names().iter().enumerate() {
                let label = fleet.group_plugin(g).1;
                let what = ran.get(&label).map_or_else(|| label.clone(), RanPlugin::to_string);
                eprintln!("podstatus fleet: group {name} runs {what} ({label})");
            }
        }
        let mut watch = match (&shard, claimed.take()) {
            (Some(shard), Some(claimed)) => {
                Some(crate::fleet_shard::ShardWatch::new(shard, membership.as_ref(), claimed))
            }
            _ => None,
        };
        wait_ready(&fleet, &signals, args.quiet || generation > 1, &mut || {
            watch.as_mut().and_then(|w| w.check(&fleet)).is_none()
        });
        if let Some(access) = control_access.take() {
            let access = access.finish(&connection, shard.as_ref().map(|shard| shard.config().namespace.as_str()));
            let scheme = if access.tls().is_some() { "https" } else { "http" };
            let guarded = if access.authenticates() { "" } else { " (open: loopback only)" };
            let server = ControlServer::start(
                args.control.control_addr,
                access,
                ControlLimits::default(),
                connection.runtime(),
            )?;
            eprintln!("podstatus fleet: control endpoint on {scheme}://{}/rollout{guarded}", server.local_addr());
            if let Some(server) = &metrics_server {
                eprintln!("podstatus fleet: metrics on http://{}/metrics", server.local_addr());
            }
            control = Some(server);
        }
        let mut part = match (&shard, &rollouts) {
            (Some(shard), Some(rollouts)) => Some(rollouts.part(shard, &plugins, &connection)),
            _ => None,
        };
        let sharded = match (watch.as_mut(), part.as_mut(), rollouts.as_mut()) {
            (Some(watch), Some(part), Some(rollouts)) => Some(Sharded { watch, part, rollouts }),
            _ => None,
        };
        let run = run_generation(args, &fleet, control.as_ref(), &catalog, canary_plugin.take(), sharded, &signals);
        // As the kubelet's graceful shutdown: no new work, what is pending written, then
        // (a whole fleet stopping) the nodes reported as shutting down. A shard hands its
        // nodes on instead: their Leases released for the next shard to take at once.
        let (end, mut runners) = match run {
            Ok(run) => run,
            Err(error) => {
                if let (Some(shard), Some(numbers)) = (&shard, &numbers) {
                    shard.release_nodes(numbers);
                }
                return Err(error);
            }
        };
        for runner in &mut runners {
            runner.stop();
        }
        let stopped = end.is_none();
        if stopped {
            drop(control.take());
        }
        // All within --flush-timeout, a hard limit (the report of the nodes at most a
        // second past it).
        let deadline = Instant::now() + args.flush_timeout;
        let flush = fleet.flush_until(deadline, &|| true);
        let left_time = deadline.saturating_duration_since(Instant::now());
        if stopped && shard.is_none() {
            fleet.mark_shutting_down(left_time.clamp(Duration::from_secs(1), MARK_TIMEOUT));
        }
        // A share started again starts on what its groups run now (a promoted
        // rollout's plugin), not on the options' plugins to be swapped again node by
        // node.
        for (g, group) in groups.iter_mut().enumerate() {
            (group.image, group.logic) = fleet.group_plugin(g);
        }
        let summaries = group_summaries(&fleet, &ran);
        let api_server = fleet.connection().api_url().to_owned();
        let ran_nodes = fleet.len();
        let left = fleet.shutdown(deadline.saturating_duration_since(Instant::now()));
        if let (Some(shard), Some(numbers)) = (&shard, &numbers) {
            let unreleased = shard.release_nodes(numbers);
            if unreleased > 0 {
                eprintln!("podstatus fleet: {unreleased} node leases not released: they expire by themselves");
            }
        }
        match end {
            Some(why) => {
                eprintln!(
                    "podstatus fleet: shard starts again: {why} (flush {flush}, {left} sync requests left unwritten)"
                );
            }
            None => break Some((summaries, api_server, ran_nodes, flush, left)),
        }
    };
    // A shard stopping cleanly lets go of the rollout leadership and of its membership:
    // the next leader and the others' new shares follow at once, not once the Leases
    // expire.
    if let Some(rollouts) = rollouts
        && let Err(error) = rollouts.leader.release()
    {
        eprintln!("podstatus fleet: the rollout leadership not released ({error}): it expires by itself");
    }
    if let Some(membership) = membership
        && let Err(error) = membership.release()
    {
        eprintln!("podstatus fleet: the shard's membership not released ({error}): it expires by itself");
    }
    drop(control);
    drop(metrics_server);
    drop(connection);
    drop(embedded);
    let Some((groups, api_server, nodes, flush, left)) = ended else {
        eprintln!("podstatus fleet: stopped with no fleet running (its nodes, if any, handed on)");
        return Ok(true);
    };
    let running = started.elapsed();
    eprintln!("podstatus fleet: stopped (flush {flush}, {left} sync requests left unwritten)");
    let flushed = flush == Flushed::Done;
    let summary = FleetSummary {
        format: SUMMARY_FORMAT,
        api_server,
        nodes,
        running_seconds: running.as_secs_f64(),
        groups,
        flushed,
        flush,
        sync_requests_left: left,
        passed: flushed && left == 0,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
    } else {
        print!("{summary}");
    }
    Ok(summary.passed)
}

/// What a shard's fleet runs beside its nodes: the watch over its share, its part in
/// the fleet's rollouts and its candidacy for their leadership.
struct Sharded<'a, 'b> {
    watch: &'a mut crate::fleet_shard::ShardWatch<'b>,
    part: &'a mut podstatus_agent::rollout::SharedRollout,
    rollouts: &'a mut crate::fleet_shard::ShardRollouts,
}

/// Runs one fleet until a signal stops it (`None`) or its shard's share changed (why):
/// the pod runners, the rollout (a canary at once when `canary` is given; a shard's,
/// by its fleet's rollout objects), the control commands and the shard's watch, every
/// [`TICK`]. Returns the runners, still running.
fn run_generation(
    args: &FleetArgs,
    fleet: &Fleet,
    control: Option<&ControlServer>,
    catalog: &PluginCatalog,
    canary: Option<(PluginImage, String)>,
    mut sharded: Option<Sharded<'_, '_>>,
    signals: &Signals,
) -> anyhow::Result<(Option<crate::fleet_shard::Reshard>, Vec<PodRunner>)> {
    let mut runners: Vec<PodRunner> = fleet
        .agents()
        .chunks(NODES_PER_RUNNER)
        .map(|agents| {
            let nodes = agents.iter().map(|a| (a.node_side(), Arc::clone(a.pod_manager()))).collect();
            PodRunner::start_many(nodes, args.node.node_ip.clone())
        })
        .collect();
    let mut rollout = Rollout::new(args.rollout.policy(args.canary_watch, !args.canary_manual));
    if let (Some(share), Some((image, logic))) = (args.canary, canary) {
        let plan = CanaryPlan { nodes: canary_nodes(fleet.len(), share), image, logic };
        match rollout.start(fleet, plan) {
            Ok(status) => eprintln!(
                "podstatus fleet: canary of {} nodes on {}",
                status.canary.as_ref().map_or(0, |c| c.nodes),
                status.canary.as_ref().map_or("", |c| c.to.as_str())
            ),
            Err(e) => eprintln!("podstatus fleet: the canary did not start: {e}"),
        }
    }
    while !signals.stop.load(Ordering::SeqCst) {
        // A registration the API server refused for good stops the fleet, as it stops
        // an agent: the nodes share their configuration, so the others fare no better.
        let refused = fleet.agents().iter().find_map(|a| a.registration().and_then(|r| r.refusal()));
        if let Some(refusal) = refused {
            let server = fleet.connection().api_url().to_owned();
            for runner in &mut runners {
                runner.stop();
            }
            return Err(anyhow::Error::new(refusal).context(server));
        }
        if signals.swap.swap(false, Ordering::SeqCst) {
            tracing::warn!("swap signal ignored: a fleet changes plugins through its control endpoint");
        }
        if let Some(sharded) = sharded.as_mut() {
            if let Some(control) = control {
                serve_shard_commands(control, fleet, &rollout, &sharded.rollouts.objects, &args.node_name);
            }
            for line in sharded.part.tick(fleet) {
                eprintln!("podstatus fleet: {line}");
            }
            for line in sharded.rollouts.leader.tick(sharded.watch.members()) {
                eprintln!("podstatus fleet: leader: {line}");
            }
            if let Some(reshard) = sharded.watch.check(fleet) {
                return Ok((Some(reshard), runners));
            }
        } else {
            if let Some(control) = control {
                serve_commands(control, fleet, &mut rollout, catalog);
            }
            if let Some(decision) = rollout.tick(fleet) {
                let outcome = match decision.outcome {
                    Outcome::Promoted => "promoted",
                    Outcome::RolledBack => "rolled back",
                };
                eprintln!("podstatus fleet: canary on {} {outcome}: {}", decision.to, decision.reason);
            }
        }
        std::thread::sleep(TICK);
    }
    Ok((None, runners))
}

/// The groups with their nodes among `numbers` (the whole fleet's numbering, in the
/// groups' order); all of them when `None`. A group none of whose nodes is in the share
/// stays, empty: its plugin is still the fleet's.
fn share_of_groups(groups: &[FleetGroup], numbers: Option<&[usize]>) -> Vec<FleetGroup> {
    let Some(numbers) = numbers else { return groups.to_vec() };
    let mut first = 0;
    groups
        .iter()
        .map(|group| {
            let range = first..first + group.nodes;
            first = range.end;
            FleetGroup { nodes: numbers.iter().filter(|n| range.contains(n)).count(), ..group.clone() }
        })
        .collect()
}

/// The name and version of `--json`'s schema (docs/json-output.md): a field may be
/// added within a version, none removed or changed.
const SUMMARY_FORMAT: &str = "podstatus.fleet/v1";

/// What `podstatus fleet` prints when it stops (text, or JSON with `--json`).
#[derive(serde::Serialize)]
struct FleetSummary {
    /// [`SUMMARY_FORMAT`].
    format: &'static str,
    /// The API server the nodes wrote to.
    api_server: String,
    /// Nodes in the fleet.
    nodes: usize,
    /// From the nodes' start to the stop, in seconds.
    running_seconds: f64,
    /// Each group: its nodes, the plugin it ran last and what its nodes did.
    groups: Vec<GroupSummary>,
    /// Whether the flush at shutdown wrote everything within `--flush-timeout`.
    flushed: bool,
    /// How the flush ended: `done`, `timed-out` (past `--flush-timeout`) or
    /// `interrupted` (a second signal).
    flush: Flushed,
    /// Sync requests left unwritten at the end.
    sync_requests_left: usize,
    /// `flushed` and nothing left: the exit code is 0.
    passed: bool,
}

/// One group of a fleet, as the summary gives it.
#[derive(serde::Serialize)]
struct GroupSummary {
    name: String,
    nodes: usize,
    /// The plugin's label in metrics (`podstatus-1-37`, or a file's stem).
    plugin: String,
    /// The logic version and the plugin's SHA-256.
    #[serde(flatten)]
    ran: Option<RanPlugin>,
    updates: u64,
    versions: u64,
    api_calls: u64,
    api_calls_per_version: f64,
    faults: u64,
    recoveries: u64,
    propagation_p99_seconds: f64,
    plugin_seconds_per_update: f64,
}

/// Each group's figures, from the fleet's metrics.
fn group_summaries(fleet: &Fleet, ran: &BTreeMap<String, RanPlugin>) -> Vec<GroupSummary> {
    fleet
        .group_names()
        .iter()
        .enumerate()
        .map(|(g, name)| {
            let nodes = (0..fleet.len()).filter(|&n| fleet.home_group(n) == g).count();
            let figures = podstatus_agent::rollout::Figures::of(&fleet.metrics().group_snapshot(name));
            let plugin = fleet.group_plugin(g).1;
            GroupSummary {
                name: name.clone(),
                nodes,
                ran: ran.get(&plugin).cloned(),
                plugin,
                updates: figures.updates,
                versions: figures.versions,
                api_calls: figures.api_calls,
                api_calls_per_version: figures.api_calls_per_version,
                faults: figures.faults,
                recoveries: figures.recoveries,
                propagation_p99_seconds: figures.propagation_p99_ms / 1e3,
                plugin_seconds_per_update: figures.plugin_us_per_update / 1e6,
            }
        })
        .collect()
}

/// The text summary: a line for the fleet, one per group, one for the flush.
impl std::fmt::Display for FleetSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "fleet: {} nodes on {} for {}",
            self.nodes,
            self.api_server,
            format_seconds(self.running_seconds.round())
        )?;
        for group in &self.groups {
            let ran = group.ran.as_ref().map_or_else(|| "logic unknown".to_owned(), RanPlugin::to_string);
            writeln!(
                f,
                "group {}: {} nodes on {} ({ran}): {} updates, {} versions, {} API calls ({:.2} per version), {} \
                 faults, {} recoveries, propagation p99 {}, plugin {} per update",
                group.name,
                group.nodes,
                group.plugin,
                group.updates,
                group.versions,
                group.api_calls,
                group.api_calls_per_version,
                group.faults,
                group.recoveries,
                format_seconds(group.propagation_p99_seconds),
                format_seconds(group.plugin_seconds_per_update),
            )?;
        }
        let flush = match self.flush {
            Flushed::Done => "flushed",
            Flushed::TimedOut => "flush cut short by --flush-timeout",
            Flushed::Interrupted => "flush interrupted",
        };
        writeln!(f, "stopped: {flush}, {} sync requests left unwritten", self.sync_requests_left)
    }
}

/// The fleet's target as the nodes reach it, and the embedded server started first
/// (admitting the connections the fleet opens) when that is the target.
fn resolve(
    target: ApiServerTarget,
    nodes: usize,
    watch: WatchScope,
) -> anyhow::Result<(Option<EmbeddedApiServer>, Target)> {
    Ok(match target {
        ApiServerTarget::Embedded(addr) => {
            let options = ServeOptions {
                max_connections: ServeOptions::default().max_connections + Fleet::connections(nodes, watch),
                ..ServeOptions::default()
            };
            let store = Arc::new(MemoryApiServer::with_graceful_deletion());
            let server =
                EmbeddedApiServer::start_with(store, addr, options).context("starting the embedded API server")?;
            let url = server.url();
            (Some(server), Target::Url(url))
        }
        ApiServerTarget::Running(target) => (None, target),
    })
}

/// Waits (with progress) until every node reports Ready, a signal, the timeout, or
/// `go_on` says no (a shard's watch, run while it waits).
fn wait_ready(fleet: &Fleet, signals: &Signals, quiet: bool, go_on: &mut dyn FnMut() -> bool) {
    let mut progress = WorkProgress::new("nodes Ready", fleet.len() as u64, quiet);
    let deadline = Instant::now() + READY_TIMEOUT;
    loop {
        let ready = fleet.ready_nodes();
        progress.set(ready as u64);
        if ready == fleet.len() || Instant::now() >= deadline || signals.stop.load(Ordering::SeqCst) || !go_on() {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    progress.finish();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_name_a_count_and_maybe_a_plugin() {
        let group = |name: &str, nodes, plugin| GroupArg { name: name.into(), nodes, plugin };
        assert_eq!(parse_group("web=6"), Ok(group("web", 6, None)));
        assert_eq!(parse_group("web=6:v3"), Ok(group("web", 6, Some(PluginChoice::Logic(Logic(LogicVersion::V3))))));
        let file = Some(PluginChoice::File(PathBuf::from("x/y.wasm")));
        assert_eq!(parse_group("batch_1=2:x/y.wasm"), Ok(group("batch_1", 2, file)));
        for (bad, says) in [
            ("web", "NAME=COUNT"),
            ("=3", "group name"),
            ("we b=3", "group name"),
            ("canary=3", "canary's group"),
            ("web=0", "from 1 to 10000"),
            ("web=x", "from 1 to 10000"),
            ("web=10001", "from 1 to 10000"),
            ("web=3:", "empty plugin"),
        ] {
            let error = parse_group(bad).expect_err(bad);
            assert!(error.contains(says), "{bad}: {error}");
        }
        assert!(parse_group(&format!("{}=1", "g".repeat(64))).is_err(), "a name over 63 characters");
    }
}
