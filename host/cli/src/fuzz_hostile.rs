//! `podstatus fuzz --hostile`: the hostile-plugin fuzzer ([`podstatus_fuzz::hostile`]),
//! the host fuzzed instead of a plugin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use podstatus_fuzz::Limit;
use podstatus_fuzz::hostile::{HostileFigures, run_hostile};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};

use podstatus_plugins::LogicVersion;

/// Where `cargo test` (tests/programs' build script) leaves the hostile guest of this
/// checkout: a test program, never part of the `podstatus` binary.
fn default_guest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guest-programs/trespasser.wasm")
}

/// What `podstatus fuzz --hostile` was asked for.
pub struct Hostile<'a> {
    /// The hostile guest (`--plugin`); the trespasser `cargo test` built when `None`.
    pub guest: Option<&'a Path>,
    /// The honest plugin each trace ends with (`--logic`).
    pub honest: LogicVersion,
    /// Steps per trace.
    pub steps: usize,
}

/// Runs the hostile fuzzer from `seed` until `limit`.
pub fn run(args: Hostile<'_>, seed: u64, limit: Limit, config: &RuntimeConfig) -> anyhow::Result<ExitCode> {
    let guest = args.guest.map_or_else(default_guest, Path::to_path_buf);
    let runtime = PluginRuntime::new(config).context("plugin runtime")?;
    let hostile = runtime
        .load_file(&guest)
        .with_context(|| "the hostile guest (build it with `cargo test -p podstatus-tests --no-run`)".to_owned())?;
    let honest = runtime.load(args.honest.component()).context("the honest plugin")?;
    eprintln!(
        "podstatus fuzz --hostile: seed {seed}, guest {}, honest logic {}, {} steps per trace",
        guest.display(),
        args.honest.name(),
        args.steps
    );
    let started = std::time::Instant::now();
    let result = run_hostile(&hostile, &honest, seed, args.steps, limit, &mut |f: &HostileFigures| {
        if f.traces.is_multiple_of(100) {
            eprintln!("  ... {} traces, {} steps, {} refusals, {} writes", f.traces, f.steps, f.refusals(), f.writes);
        }
    });
    let mut out = std::io::stdout().lock();
    match result {
        Ok(figures) => {
            let faults: Vec<String> = figures.faults.iter().map(|(kind, n)| format!("{kind} {n}")).collect();
            writeln!(
                out,
                "{} traces, {} steps in {:.1} s: {} refusals as faults ({}), {} refused by the reach guard, {} writes \
                 reached the API server, {} beyond the rule",
                figures.traces,
                figures.steps,
                started.elapsed().as_secs_f64(),
                figures.refusals(),
                faults.join(", "),
                figures.guard_refusals,
                figures.writes,
                figures.beyond_rule
            )?;
            Ok(ExitCode::SUCCESS)
        }
        Err(trespass) => {
            writeln!(out, "a write beyond the rule, or an accepted status lost: {trespass}")?;
            Ok(ExitCode::from(1))
        }
    }
}
