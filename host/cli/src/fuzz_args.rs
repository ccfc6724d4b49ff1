//! The `podstatus fuzz` command.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use podstatus_fuzz::{
    CALL_FUEL, Campaign, Differential, FinalRules, Limit, Reference, ShrinkBudget, Summary, Target, UnreadClass,
    run_campaign, write_finding,
};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_upstream::{Oracle, Release};

use podstatus_plugins::LogicVersion;

use crate::plugin_args::Logic;

/// Traces per run when neither `--traces` nor `--duration` is given.
pub const DEFAULT_TRACES: u64 = 500;

/// Fuzz the status manager: random valid traces, invariants checked after every step.
///
/// Each trace is generated from a seed (trace i of a run from SEED + i), run in the
/// sandbox (or natively), its plugin cache read after every step, then made quiet
/// (armed faults removed, a `sync` and a `sync-batch`) and replayed a second time. A
/// violation is shrunk to a minimal trace, written to --out as a file `podstatus
/// replay` accepts, and its path printed.
///
/// With --against, the same traces run through two plugins and the first step where
/// their reports differ is the finding (with --final-state, a difference in what they
/// leave behind).
///
/// Exit 0: no violation. Exit 1: a violation was found (the shrunk trace is written).
/// Exit 2: the fuzzer could not run (a plugin that does not load, a bad argument).
#[derive(clap::Args, Debug)]
pub struct FuzzArgs {
    /// Seed of the first trace [default: from the clock; printed].
    #[arg(long)]
    pub seed: Option<u64>,
    /// How many traces to run [default: 500]; 1 to 100,000,000 (with --tally every
    /// broken trace is kept to be listed; for longer campaigns, --duration).
    #[arg(long, conflicts_with = "duration", value_parser = traces)]
    pub traces: Option<u64>,
    /// Run this long instead of a number of traces (`90s`, `5m`; a bare number is
    /// seconds; above zero).
    #[arg(long, value_name = "DURATION", value_parser = crate::input::duration)]
    pub duration: Option<Duration>,
    /// Steps per trace (four quiescence steps are added to each); 1 to 10,000 (a trace
    /// is generated whole before it runs, and a failing one is replayed again and again
    /// while it is shrunk: 10,000 steps are about 5 MiB of trace).
    #[arg(long, default_value_t = 40, value_parser = steps)]
    pub steps: usize,
    /// Run the logic natively instead of in the sandbox (same code, no boundary).
    #[arg(long, conflicts_with = "plugin")]
    pub native: bool,
    /// The plugin component to fuzz; defaults to the one built from this checkout.
    #[arg(long, value_name = "FILE.wasm")]
    pub plugin: Option<PathBuf>,
    /// Which built-in plugin to fuzz: a release and mode (`1.35`, `1.35-one-call`, ...)
    /// or `v1`; v2-v4 are aliases (see `replay --help`).
    #[arg(long, value_enum, default_value_t = Logic(LogicVersion::V1), conflicts_with = "plugin")]
    pub logic: Logic,
    /// Differential mode: compare with this component (a built-in plugin by its
    /// `--logic` name or alias, `native` for the native logic) instead of checking
    /// invariants. A one-call logic against a read-then-patch one (`--logic
    /// 1.27-one-call --against 1.27`) accepts exactly the GETs the first does not make
    /// (and its patches the API server refused, which it follows with the GET), and
    /// leaves out the injected faults the two cannot meet alike (on GETs, on any call,
    /// conflicts on writes).
    ///
    /// `upstream-1.27`, `upstream-1.35`, `upstream-1.36` or `upstream-1.37`: Kubernetes'
    /// own status manager of that release (the Go program of `upstream/`, built with Go
    /// on first use and cached under target/upstream/). Its calls of a sync step are
    /// compared in pod order (upstream leaves the order free); against a one-call logic
    /// its GETs are accepted as against a read-then-patch one.
    #[arg(long, value_name = "FILE.wasm|LOGIC|native|upstream-1.X")]
    pub against: Option<PathBuf>,
    /// With --against: compare only what the two plugins leave behind once the trace
    /// is quiet (the API server's pods without their resourceVersion, each plugin's
    /// cache), not the results and calls in between. A one-call logic against a
    /// read-then-patch one (`--logic v3 --against v2`) accepts exactly the documented
    /// differences no write without a GET can avoid, and a 1.35 or later one-call
    /// logic against 1.27 (`--logic v4 --against v2`) those and 1.35's refusal of
    /// statuses naming init containers the spec lacks (docs/replay-and-fuzzing.md).
    #[arg(long, requires = "against")]
    pub final_state: bool,
    /// Count the traces that break the check and go on instead of stopping at the
    /// first (nothing is shrunk or written): prints the share and each trace's seed and
    /// violation.
    #[arg(long)]
    pub tally: bool,
    /// Where shrunk failing traces are written.
    #[arg(long, value_name = "DIR", default_value = "fuzz-failures")]
    pub out: PathBuf,
    /// Where compiled plugins are cached [default: as for `replay`].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile plugins every time instead of using the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Fail on the known issues too (violations already recorded in
    /// tests/fixtures/fuzz-findings/, which are otherwise counted and reported).
    #[arg(long)]
    pub strict: bool,
    /// Fuzz the host instead of a plugin: a hostile guest (`--plugin`, by default the
    /// trespasser `cargo test` builds into target/guest-programs/) draws every plan,
    /// call, cursor and state document at random, and every write that reaches the API
    /// server is held against what the host handed; at each trace's end the guest is
    /// swapped for the honest `--logic` plugin, which must hold every status the host
    /// recorded accepted. Prints the figures; exit 1 on a write beyond the rule.
    #[arg(long, conflicts_with_all = ["native", "against", "tally"])]
    pub hostile: bool,
    /// The longest shrinking may take (`2m`; a bare number is seconds; above zero).
    #[arg(long, value_name = "DURATION", default_value = "120", value_parser = crate::input::duration)]
    pub shrink_time: Duration,
}

/// `--steps`: a trace is generated, held and shrunk whole.
fn steps(text: &str) -> Result<usize, String> {
    let why = "a trace is generated whole before it runs and replayed again and again while it is shrunk \
               (10,000 steps are about 5 MiB)";
    crate::input::count(text, 1, 10_000, why).map(|n| n as usize)
}

/// `--traces`: counted, not held, but for --tally's list of broken ones.
fn traces(text: &str) -> Result<u64, String> {
    crate::input::count(text, 1, 100_000_000, "with --tally every broken trace is kept; run longer with --duration")
}

/// Runs `podstatus fuzz`.
pub fn run(args: &FuzzArgs) -> ExitCode {
    match run_inner(args) {
        Ok(code) => code,
        Err(e) => crate::failure::fail("fuzz", &e),
    }
}

fn run_inner(args: &FuzzArgs) -> anyhow::Result<ExitCode> {
    let seed = args.seed.unwrap_or_else(|| {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
    });
    let limit = match (args.traces, args.duration) {
        (_, Some(duration)) => Limit::Duration(duration),
        (Some(n), None) => Limit::Traces(n),
        (None, None) => Limit::Traces(DEFAULT_TRACES),
    };

    let mut config = match (&args.cache_dir, args.no_cache) {
        (_, true) => RuntimeConfig::default(),
        (Some(dir), false) => RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() },
        (None, false) => RuntimeConfig::with_default_cache(),
    };
    config.limits.call_fuel = Some(CALL_FUEL);
    if args.hostile {
        let hostile =
            crate::fuzz_hostile::Hostile { guest: args.plugin.as_deref(), honest: *args.logic, steps: args.steps };
        return crate::fuzz_hostile::run(hostile, seed, limit, &config);
    }
    let mut runtime = None;
    let mut component = |path: Option<&PathBuf>, logic: Logic| -> anyhow::Result<Target> {
        if runtime.is_none() {
            runtime = Some(PluginRuntime::new(&config).context("plugin runtime")?);
        }
        let runtime = runtime.as_ref().expect("set above");
        // A file's error names it; a built-in plugin that does not load is this build's.
        let image = match path {
            Some(path) => runtime.load_file(path)?,
            None => runtime.load(logic.component()).with_context(|| format!("loading {}", logic.program()))?,
        };
        Ok(Target::Component(Box::new(image)))
    };

    let native_name = match *args.logic {
        LogicVersion::V1 => "native logic".to_string(),
        logic => format!("native logic {}", logic.name()),
    };
    let (target, target_name) = if args.native {
        (Target::Native(*args.logic), native_name.clone())
    } else {
        let name = args
            .plugin
            .as_ref()
            .map_or_else(|| format!("the built-in plugin (logic {})", args.logic.name()), |p| p.display().to_string());
        (component(args.plugin.as_ref(), args.logic)?, format!("{name} in the sandbox (fuel {CALL_FUEL} per call)"))
    };
    let builtin = |path: &PathBuf| path.to_str().and_then(LogicVersion::named).map(Logic);
    let mut differential =
        if args.final_state { Differential::FinalState(FinalRules::Equal) } else { Differential::Exact };
    let unread_logic = args.plugin.is_none() && args.logic.one_call();
    let upstream = args.against.as_ref().and_then(|p| p.to_str()).filter(|name| name.starts_with("upstream-"));
    let against = match &args.against {
        None => None,
        Some(_) if upstream.is_some() => {
            let name = upstream.unwrap_or_default();
            let release = Release::named(name).with_context(|| {
                format!("no upstream release {name}: the oracle builds {}", podstatus_upstream::release::names())
            })?;
            eprintln!("podstatus fuzz: building (or finding) the upstream oracle for {release} ...");
            let oracle = Oracle::new(release)?;
            if unread_logic {
                differential = match differential {
                    Differential::FinalState(_) => Differential::FinalState(FinalRules::UnreadWrites),
                    _ => Differential::UnreadWrites,
                };
            }
            Some((
                Reference::Upstream(std::sync::Arc::new(oracle)),
                format!("Kubernetes {} ({release})", release.version),
            ))
        }
        Some(path) if path.as_os_str() == "native" => {
            Some((Reference::Plugin(Target::Native(*args.logic)), native_name))
        }
        Some(path) => match builtin(path) {
            Some(logic) => {
                if unread_logic && !args.native && logic.reads_then_patches() {
                    let other_release = logic.release() == "1.27" && args.logic.release() != "1.27";
                    let rules = if other_release { FinalRules::Kubelet135 } else { FinalRules::UnreadWrites };
                    differential = match differential {
                        Differential::FinalState(_) => Differential::FinalState(rules),
                        _ => Differential::UnreadWrites,
                    };
                }
                Some((
                    Reference::Plugin(component(None, logic)?),
                    format!("the built-in plugin (logic {})", logic.name()),
                ))
            }
            None => {
                Some((Reference::Plugin(component(Some(path), Logic(LogicVersion::V1))?), path.display().to_string()))
            }
        },
    };

    let campaign = Campaign {
        seed,
        limit,
        steps: args.steps,
        target,
        against: against.as_ref().map(|(t, _)| t.clone()),
        differential,
        strict: args.strict,
        shrink: ShrinkBudget { max_time: args.shrink_time, ..ShrinkBudget::default() },
        tally: args.tally,
    };
    match &against {
        Some((_, other)) => {
            eprintln!("podstatus fuzz: seed {seed}, {target_name} against {other}, {} steps per trace", args.steps)
        }
        None => eprintln!("podstatus fuzz: seed {seed}, {target_name}, {} steps per trace", args.steps),
    }
    let summary = run_campaign(&campaign, &mut |s: &Summary| {
        eprintln!(
            "  ... {} traces, {} steps, {:.0} traces/s, {:.0} steps/s",
            s.traces,
            s.steps,
            s.traces_per_second(),
            s.steps_per_second()
        );
    })?;

    let mut out = std::io::stdout().lock();
    let print = |out: &mut dyn Write, text: String| writeln!(out, "{text}");
    print(
        &mut out,
        format!(
            "{} traces, {} steps in {:.2} s: {:.1} traces/s, {:.0} steps/s",
            summary.traces,
            summary.steps,
            summary.elapsed.as_secs_f64(),
            summary.traces_per_second(),
            summary.steps_per_second()
        ),
    )?;
    for (issue, traces) in &summary.known {
        print(
            &mut out,
            format!(
                "known issue {issue} in {traces} traces (not a failure; tests/fixtures/fuzz-findings/{})",
                issue.fixture()
            ),
        )?;
    }
    for (class, seeds) in explained_by_class(&summary.explained) {
        let shown: Vec<String> = seeds.iter().take(8).map(u64::to_string).collect();
        let more = if seeds.len() > shown.len() { ", ..." } else { "" };
        print(
            &mut out,
            format!(
                "explained by the documented class {class} in {} traces (seeds {}{more}; not a failure without \
                 --strict; docs/logic-versions.md, tests/fixtures/upstream/{})",
                seeds.len(),
                shown.join(", "),
                class.fixture()
            ),
        )?;
    }
    if args.tally {
        let share = 100.0 * summary.tallied.len() as f64 / summary.traces.max(1) as f64;
        print(
            &mut out,
            format!("{} of {} traces broke the check ({share:.1}%)", summary.tallied.len(), summary.traces),
        )?;
        for (seed, violation) in &summary.tallied {
            print(&mut out, format!("  seed {seed}: {violation}"))?;
        }
        return Ok(if summary.tallied.is_empty() { ExitCode::SUCCESS } else { ExitCode::from(1) });
    }
    let Some(finding) = &summary.finding else {
        let verdict = if against.is_some() { "no difference" } else { "no violation" };
        print(&mut out, verdict.into())?;
        return Ok(ExitCode::SUCCESS);
    };
    print(&mut out, format!("VIOLATION {} (trace seed {})", finding.original, finding.seed))?;
    let shrunk_steps = finding.shrunk.doc["steps"].as_array().map_or(0, Vec::len);
    print(
        &mut out,
        format!(
            "shrunk from {} to {shrunk_steps} steps in {} runs: {}",
            finding.original_steps, finding.shrunk.runs, finding.shrunk.violation
        ),
    )?;
    let mut plugins = vec![target_name];
    plugins.extend(against.map(|(_, name)| name));
    let plugins = if plugins.len() > 1 { plugins } else { Vec::new() };
    let path = write_finding(finding, &plugins, &args.out).context("writing the finding")?;
    print(&mut out, format!("wrote {}", path.display()))?;
    Ok(ExitCode::from(1))
}

/// The seeds each documented class explained (a trace meeting two counts under both).
fn explained_by_class(explained: &[(u64, BTreeSet<UnreadClass>)]) -> BTreeMap<UnreadClass, Vec<u64>> {
    let mut by_class: BTreeMap<UnreadClass, Vec<u64>> = BTreeMap::new();
    for (seed, classes) in explained {
        for class in classes {
            by_class.entry(*class).or_default().push(*seed);
        }
    }
    by_class
}
