//! A run's plugin swaps (at a planned time, or on a signal) and what each tells the
//! summary.

use std::time::Duration;

use crate::summary::SwapSummary;
use podstatus_runtime::PluginImage;

/// Swaps `agent` to the plugin in the file at `path`, `at` into the run.
pub(crate) fn do_swap(agent: &podstatus_agent::NodeAgent, path: &std::path::Path, at: Duration) -> SwapSummary {
    swap_summary(agent.swap_to_file(path), &path.display(), at)
}

/// Swaps `agent` to a plugin compiled before (a [`crate::PlannedSwap`]), `at` into the run.
pub(crate) fn swap_to_image(agent: &podstatus_agent::NodeAgent, image: &PluginImage, at: Duration) -> SwapSummary {
    swap_summary(agent.swap_to_image(image), &image.contract(), at)
}

/// What a swap to `to` (a file, a contract) that ended in `swapped` tells the summary.
fn swap_summary(
    swapped: Result<podstatus_runtime::SwapReport, podstatus_agent::AgentError>,
    to: &dyn std::fmt::Display,
    at: Duration,
) -> SwapSummary {
    let at_seconds = at.as_secs_f64();
    match swapped {
        Ok(report) => SwapSummary {
            at_seconds,
            from: report.from.to_string(),
            to: report.to.to_string(),
            pause_ms: report.pause.as_secs_f64() * 1000.0,
            total_ms: report.total.as_secs_f64() * 1000.0,
            error: None,
        },
        Err(e) => {
            tracing::error!("swap to {to} failed: {e}");
            SwapSummary { at_seconds, error: Some(e.to_string()), ..SwapSummary::default() }
        }
    }
}

/// The `logic` label of the plugin in `path`: the file's stem (`podstatus-v3` for
/// `target/guest/podstatus-v3.wasm`).
pub fn file_logic(path: &std::path::Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}
