//! `podstatus fuzz --hostile`: the hostile-plugin fuzzer ([`podstatus_fuzz::hostile`]),
//! the host fuzzed instead of a plugin.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use podstatus_fuzz::Limit;
use podstatus_fuzz::hostile::{HostileFigures, run_hostile};
use podstatus_runtime::{PluginRuntime, RuntimeConfig};

use crate::fuzz_args::FuzzArgs;

/// Where `cargo test` (tests/programs' build script) leaves the hostile guest of this
/// checkout: a test program, never part of the `podstatus` binary.
fn default_guest() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/guest-programs/trespasser.wasm")
}

/// Runs the hostile fuzzer from `seed` until `limit`: the guest `--plugin` (or the
/// trespasser built by `cargo test`), the honest plugin at each trace's end `--logic`'s.
pub fn run(args: &FuzzArgs, seed: u64, limit: Limit, config: &RuntimeConfig) -> anyhow::Result<ExitCode> {
    let guest = args.plugin.clone().unwrap_or_else(default_guest);
    let bytes = std::fs::read(&guest).with_context(|| {
        format!("reading the hostile guest {} (build it with `cargo test -p podstatus-tests --no-run`)", guest.display())
    })?;
    let runtime = PluginRuntime::new(config)?;
    let hostile = runtime.load(&bytes).context("the hostile guest")?;
    let honest = runtime.load(args.logic.component()).context("the honest plugin")?;
    eprintln!(
        "podstatus fuzz --hostile: seed {seed}, guest {}, honest logic {}, {} steps per trace",
        guest.display(),
        args.logic.name(),
        args.steps
    );
    let started = std::time::Instant::now();
    let result = run_hostile(&hostile, &honest, seed, args.steps, limit, &mut |f: &HostileFigures| {
        if f.traces % 100 == 0 {
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
