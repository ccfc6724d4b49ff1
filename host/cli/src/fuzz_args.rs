//! The `podstatus fuzz` command.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;

use anyhow::Context;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use podstatus_agent::format_seconds;
use podstatus_fuzz::{
    CALL_FUEL, Campaign, Differential, FinalRules, Limit, Reference, ShrinkBudget, Summary, Target, UnreadClass,
    Violation, run_campaign, write_finding,
};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};
use podstatus_upstream::{Oracle, Release};

use podstatus_plugins::LogicVersion;

use crate::plugin_args::{Logic, RanPlugin};

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
    /// Which built-in plugin to fuzz: a release and write mode, or the seed's `v1` (the
    /// choices, each with what it follows and its alias in `--help`, as `replay
    /// --logic` takes them).
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
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::input::duration)]
    pub shrink_time: Duration,
    /// Print the result as one JSON document (`podstatus.fuzz/v1`,
    /// docs/json-output.md) instead of lines of text; progress stays on stderr.
    #[arg(long)]
    pub json: bool,
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
    let mut component = |path: Option<&PathBuf>, logic: Logic| -> anyhow::Result<(Target, RanPlugin)> {
        if runtime.is_none() {
            runtime = Some(PluginRuntime::new(&config).context("plugin runtime")?);
        }
        let runtime = runtime.as_ref().expect("set above");
        // A file's error names it; a built-in plugin that does not load is this build's.
        let (image, bytes) = match path {
            Some(path) => {
                let bytes = runtime.read_file(path)?;
                (runtime.load_read(path, &bytes)?, bytes)
            }
            None => (
                runtime.load(logic.component()).with_context(|| format!("loading {}", logic.program()))?,
                logic.component().to_vec(),
            ),
        };
        Ok((Target::Component(Box::new(image)), RanPlugin::of(&bytes)))
    };
    // Native logic has no component: its logic, and no digest.
    let native_ran = |logic: Logic| RanPlugin { logic: logic.name().to_owned(), plugin_sha256: String::new() };

    let native_name = match *args.logic {
        LogicVersion::V1 => "native logic".to_string(),
        logic => format!("native logic {}", logic.name()),
    };
    let (target, target_name, target_ran) = if args.native {
        (Target::Native(*args.logic), native_name.clone(), native_ran(args.logic))
    } else {
        let name = args
            .plugin
            .as_ref()
            .map_or_else(|| format!("the built-in plugin (logic {})", args.logic.name()), |p| p.display().to_string());
        let (target, ran) = component(args.plugin.as_ref(), args.logic)?;
        (target, format!("{name} in the sandbox (fuel {CALL_FUEL} per call)"), ran)
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
                None,
            ))
        }
        Some(path) if path.as_os_str() == "native" => {
            Some((Reference::Plugin(Target::Native(*args.logic)), native_name, Some(native_ran(args.logic))))
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
                let (target, ran) = component(None, logic)?;
                Some((Reference::Plugin(target), format!("the built-in plugin (logic {})", logic.name()), Some(ran)))
            }
            None => {
                let (target, ran) = component(Some(path), Logic(LogicVersion::V1))?;
                Some((Reference::Plugin(target), path.display().to_string(), Some(ran)))
            }
        },
    };

    let campaign = Campaign {
        seed,
        limit,
        steps: args.steps,
        target,
        against: against.as_ref().map(|(t, _, _)| t.clone()),
        differential,
        strict: args.strict,
        shrink: ShrinkBudget { max_time: args.shrink_time, ..ShrinkBudget::default() },
        tally: args.tally,
    };
    match &against {
        Some((_, other, _)) => eprintln!(
            "podstatus fuzz: seed {seed}, {target_name} ({target_ran}) against {other}, {} steps per trace",
            args.steps
        ),
        None => eprintln!("podstatus fuzz: seed {seed}, {target_name} ({target_ran}), {} steps per trace", args.steps),
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

    let written = match &summary.finding {
        Some(finding) if !args.tally => {
            let mut plugins = vec![target_name.clone()];
            plugins.extend(against.as_ref().map(|(_, name, _)| name.clone()));
            let plugins = if plugins.len() > 1 { plugins } else { Vec::new() };
            Some(write_finding(finding, &plugins, &args.out).context("writing the finding")?)
        }
        _ => None,
    };
    let report = FuzzReport::new(
        &summary,
        Side { name: target_name, ran: Some(target_ran) },
        against.map(|(_, name, ran)| Side { name, ran }),
        seed,
        args,
        written,
    );
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &report)?;
        writeln!(out)?;
    } else {
        write!(out, "{report}")?;
    }
    Ok(if report.passed { ExitCode::SUCCESS } else { ExitCode::from(1) })
}

/// The name and version of `--json`'s schema (docs/json-output.md): a field may be
/// added within a version, none removed or changed.
const REPORT_FORMAT: &str = "podstatus.fuzz/v1";

/// What a campaign found, as `podstatus fuzz` prints it (text, or JSON with `--json`).
#[derive(serde::Serialize)]
struct FuzzReport {
    /// [`REPORT_FORMAT`].
    format: &'static str,
    /// The first trace's seed.
    seed: u64,
    /// What was fuzzed.
    target: Side,
    /// What it was compared with (`--against`), if anything.
    against: Option<Side>,
    /// Steps per generated trace (before the quiescence steps).
    steps_per_trace: usize,
    traces: u64,
    /// Steps run, quiescence steps and every run of a trace included.
    steps: u64,
    elapsed_seconds: f64,
    traces_per_second: f64,
    steps_per_second: f64,
    /// `no violation`, `no difference`, `violation`, `difference` or, with `--tally`,
    /// `tallied`.
    verdict: &'static str,
    /// Known issues met (not failures without `--strict`): the issue, its traces, its
    /// fixture.
    known_issues: Vec<KnownIssueSeen>,
    /// Differences a documented class explains (not failures without `--strict`).
    explained: Vec<ExplainedClass>,
    /// With `--tally`: each trace that broke the check.
    tallied: Option<Vec<TalliedTrace>>,
    /// The violation that stopped the campaign, shrunk and written.
    finding: Option<FindingReport>,
    /// Whether the exit code is 0.
    passed: bool,
}

/// A plugin of the campaign: its description, logic and digest (a native logic has no
/// digest: empty; upstream has neither).
#[derive(serde::Serialize)]
struct Side {
    name: String,
    #[serde(flatten)]
    ran: Option<RanPlugin>,
}

#[derive(serde::Serialize)]
struct KnownIssueSeen {
    issue: String,
    traces: u64,
    fixture: String,
}

#[derive(serde::Serialize)]
struct ExplainedClass {
    class: String,
    seeds: Vec<u64>,
    fixture: String,
}

#[derive(serde::Serialize)]
struct TalliedTrace {
    seed: u64,
    violation: ViolationReport,
}

#[derive(serde::Serialize)]
struct ViolationReport {
    invariant: String,
    /// The step (0-based, quiescence steps included) where it broke.
    step: usize,
    message: String,
    /// The known issue it is an instance of (found with `--strict`).
    known_issue: Option<String>,
}

impl From<&Violation> for ViolationReport {
    fn from(violation: &Violation) -> Self {
        ViolationReport {
            invariant: violation.invariant.to_string(),
            step: violation.step,
            message: violation.message.clone(),
            known_issue: violation.known.map(|issue| issue.to_string()),
        }
    }
}

/// As [`Violation`]'s own text: `no-rollback at step 3: ... (known issue X)`.
impl std::fmt::Display for ViolationReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at step {}: {}", self.invariant, self.step, self.message)?;
        match &self.known_issue {
            Some(issue) => write!(f, " (known issue {issue})"),
            None => Ok(()),
        }
    }
}

#[derive(serde::Serialize)]
struct FindingReport {
    /// The failing trace's seed (`--seed` it with `--traces 1` to see it again).
    seed: u64,
    violation: ViolationReport,
    original_steps: usize,
    shrunk_steps: usize,
    shrink_runs: usize,
    shrunk_violation: ViolationReport,
    /// The trace written for `podstatus replay`.
    written: Option<PathBuf>,
}

impl FuzzReport {
    fn new(
        summary: &Summary,
        target: Side,
        against: Option<Side>,
        seed: u64,
        args: &FuzzArgs,
        written: Option<PathBuf>,
    ) -> Self {
        let known_issues = summary
            .known
            .iter()
            .map(|(issue, traces)| KnownIssueSeen {
                issue: issue.to_string(),
                traces: *traces,
                fixture: format!("tests/fixtures/fuzz-findings/{}", issue.fixture()),
            })
            .collect();
        let explained = explained_by_class(&summary.explained)
            .into_iter()
            .map(|(class, seeds)| ExplainedClass {
                class: class.to_string(),
                seeds,
                fixture: format!("tests/fixtures/upstream/{}", class.fixture()),
            })
            .collect();
        let tallied: Option<Vec<TalliedTrace>> = args.tally.then(|| {
            summary
                .tallied
                .iter()
                .map(|(seed, violation)| TalliedTrace { seed: *seed, violation: violation.into() })
                .collect()
        });
        let finding = summary.finding.as_ref().filter(|_| !args.tally).map(|finding| FindingReport {
            seed: finding.seed,
            violation: (&finding.original).into(),
            original_steps: finding.original_steps,
            shrunk_steps: finding.shrunk.doc["steps"].as_array().map_or(0, Vec::len),
            shrink_runs: finding.shrunk.runs,
            shrunk_violation: (&finding.shrunk.violation).into(),
            written,
        });
        let differential = against.is_some();
        let (verdict, passed) = match (&tallied, &finding) {
            (Some(tallied), _) => ("tallied", tallied.is_empty()),
            (None, Some(_)) => (if differential { "difference" } else { "violation" }, false),
            (None, None) => (if differential { "no difference" } else { "no violation" }, true),
        };
        FuzzReport {
            format: REPORT_FORMAT,
            seed,
            target,
            against,
            steps_per_trace: args.steps,
            traces: summary.traces,
            steps: summary.steps,
            elapsed_seconds: summary.elapsed.as_secs_f64(),
            traces_per_second: summary.traces_per_second(),
            steps_per_second: summary.steps_per_second(),
            verdict,
            known_issues,
            explained,
            tallied,
            finding,
            passed,
        }
    }
}

/// The text: the rates, what ran, what was met, the verdict (and the finding).
impl std::fmt::Display for FuzzReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} traces, {} steps in {}: {:.1} traces/s, {:.0} steps/s",
            self.traces,
            self.steps,
            format_seconds(self.elapsed_seconds),
            self.traces_per_second,
            self.steps_per_second
        )?;
        for side in std::iter::once(&self.target).chain(&self.against) {
            if let Some(ran) = &side.ran {
                let digest = match ran.plugin_sha256.get(..12) {
                    Some(short) => format!(", plugin sha256:{short}"),
                    None => " (native, no plugin)".to_owned(),
                };
                writeln!(f, "ran {}: logic {}{digest}", side.name, ran.logic)?;
            }
        }
        for known in &self.known_issues {
            writeln!(f, "known issue {} in {} traces (not a failure; {})", known.issue, known.traces, known.fixture)?;
        }
        for class in &self.explained {
            let shown: Vec<String> = class.seeds.iter().take(8).map(u64::to_string).collect();
            let more = if class.seeds.len() > shown.len() { ", ..." } else { "" };
            writeln!(
                f,
                "explained by the documented class {} in {} traces (seeds {}{more}; not a failure without \
                 --strict; docs/logic-versions.md, {})",
                class.class,
                class.seeds.len(),
                shown.join(", "),
                class.fixture
            )?;
        }
        if let Some(tallied) = &self.tallied {
            let share = 100.0 * tallied.len() as f64 / self.traces.max(1) as f64;
            writeln!(f, "{} of {} traces broke the check ({share:.1}%)", tallied.len(), self.traces)?;
            for trace in tallied {
                writeln!(f, "  seed {}: {}", trace.seed, trace.violation)?;
            }
            return Ok(());
        }
        let Some(finding) = &self.finding else {
            return writeln!(f, "{}", self.verdict);
        };
        writeln!(f, "VIOLATION {} (trace seed {})", finding.violation, finding.seed)?;
        writeln!(
            f,
            "shrunk from {} to {} steps in {} runs: {}",
            finding.original_steps, finding.shrunk_steps, finding.shrink_runs, finding.shrunk_violation
        )?;
        if let Some(path) = &finding.written {
            writeln!(f, "wrote {}", path.display())?;
        }
        Ok(())
    }
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
