//! `kubelet:status/logging`: the plugin's messages as `tracing` events.

use crate::bindings::kubelet::status::logging::{self as wit, Level};
use crate::imports::{HostState, TARGET};

/// A plugin may not flood the log: longer messages are cut (at a character boundary),
/// and lines beyond the plugin's rate (`Limits::log_burst`, `Limits::log_per_second`)
/// are dropped and counted.
pub const MAX_MESSAGE_BYTES: usize = 16 * 1024;

impl wit::Host for HostState {
    fn log(&mut self, level: Level, message: String) -> wasmtime::Result<()> {
        self.admit("log", &[("message", message.len())])?;
        // Only lines that would be written spend the plugin's log budget.
        if enabled(level) && self.log.take(message.len().min(MAX_MESSAGE_BYTES)) {
            log(level, &message);
        }
        Ok(())
    }

    fn enabled(&mut self, level: Level) -> wasmtime::Result<bool> {
        self.charge("enabled", 0)?;
        Ok(enabled(level))
    }
}

/// Contract 0.1.1 names the same import (and its `level`) under its own version.
impl crate::bindings::v0_1_1::kubelet::status::logging::Host for HostState {
    fn log(&mut self, level: OldLevel, message: String) -> wasmtime::Result<()> {
        wit::Host::log(self, level.into(), message)
    }

    fn enabled(&mut self, level: OldLevel) -> wasmtime::Result<bool> {
        wit::Host::enabled(self, level.into())
    }
}

use crate::bindings::v0_1_1::kubelet::status::logging::Level as OldLevel;

impl From<OldLevel> for Level {
    fn from(level: OldLevel) -> Self {
        match level {
            OldLevel::Error => Level::Error,
            OldLevel::Warn => Level::Warn,
            OldLevel::Info => Level::Info,
            OldLevel::Debug => Level::Debug,
            OldLevel::Trace => Level::Trace,
        }
    }
}

pub(crate) fn log(level: Level, message: &str) {
    let mut cut = message.len().min(MAX_MESSAGE_BYTES);
    while !message.is_char_boundary(cut) {
        cut -= 1;
    }
    let message = &message[..cut];
    match level {
        Level::Error => tracing::error!(target: TARGET, "{message}"),
        Level::Warn => tracing::warn!(target: TARGET, "{message}"),
        Level::Info => tracing::info!(target: TARGET, "{message}"),
        Level::Debug => tracing::debug!(target: TARGET, "{message}"),
        Level::Trace => tracing::trace!(target: TARGET, "{message}"),
    }
}

pub(crate) fn enabled(level: Level) -> bool {
    match level {
        Level::Error => tracing::enabled!(target: TARGET, tracing::Level::ERROR),
        Level::Warn => tracing::enabled!(target: TARGET, tracing::Level::WARN),
        Level::Info => tracing::enabled!(target: TARGET, tracing::Level::INFO),
        Level::Debug => tracing::enabled!(target: TARGET, tracing::Level::DEBUG),
        Level::Trace => tracing::enabled!(target: TARGET, tracing::Level::TRACE),
    }
}
