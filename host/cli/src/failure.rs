//! How a command ends when it cannot do its work: one line on stderr naming what was at
//! fault (the flag, file, step or URL) and why, and one exit code per class of failure,
//! the same in every command (README, "Exit codes"):
//!
//! - 1: a failure at run time (a port taken, an API server that refused or never
//!   answered, statuses left unwritten, a check or a flush that failed);
//! - 2: bad input (a flag's value, a file that is not what it should be), found before
//!   the work starts;
//! - 130: interrupted by a signal before the run's end (the summary says so).

use std::process::ExitCode;

/// A failure at run time.
pub const FAILURE: u8 = 1;
/// Bad input: a flag or a file.
pub const BAD_INPUT: u8 = 2;
/// Interrupted by SIGINT or SIGTERM before the run's end (128 + SIGINT, as shells say).
pub const INTERRUPTED: u8 = 130;

/// Something the user gave that cannot be used (exit [`BAD_INPUT`]): what it is (a flag
/// and its value, a file) and why.
#[derive(Debug, thiserror::Error)]
#[error("{what}: {why}")]
pub struct BadInput {
    /// The flag or file, as the user wrote it (`--node-cpu "lots"`).
    pub what: String,
    /// Why it cannot be used.
    pub why: String,
}

impl BadInput {
    /// `what` cannot be used because `why`.
    pub fn error(what: impl Into<String>, why: impl std::fmt::Display) -> anyhow::Error {
        anyhow::Error::new(BadInput { what: what.into(), why: why.to_string() })
    }
}

/// Marks an error as bad input (exit [`BAD_INPUT`]), naming what was at fault.
pub trait InputContext<T> {
    /// The error, as a problem with `what` (a flag and its value, a file).
    fn input(self, what: impl std::fmt::Display) -> anyhow::Result<T>;
}

impl<T, E: Into<anyhow::Error>> InputContext<T> for Result<T, E> {
    fn input(self, what: impl std::fmt::Display) -> anyhow::Result<T> {
        self.map_err(|error| BadInput::error(what.to_string(), one_line(&error.into())))
    }
}

/// The exit code of `error`: [`BAD_INPUT`] when the user's input is at fault (a
/// [`BadInput`], or a library error that says so), else [`FAILURE`].
pub fn exit_code(error: &anyhow::Error) -> u8 {
    if error.chain().any(is_bad_input) { BAD_INPUT } else { FAILURE }
}

/// Whether one error of a chain says the input is at fault.
fn is_bad_input(error: &(dyn std::error::Error + 'static)) -> bool {
    use podstatus_agent::client::ConnectError;
    use podstatus_runtime::LoadError;
    if error.is::<BadInput>()
        || error.is::<ConnectError>()
        || error.is::<podstatus_replay::TraceError>()
        || error.is::<podstatus_replay::TraceFileError>()
        || matches!(error.downcast_ref(), Some(podstatus_agent::node::StaticPodsError::ReadDir { .. }))
    {
        return true;
    }
    // Options that do not go together, found when the simulation starts.
    use podstatus_simulate::{SimulateError, SimulatedNodeError};
    if matches!(
        error.downcast_ref(),
        Some(
            SimulateError::CanaryNeedsAFleet
                | SimulateError::NoNodes
                | SimulateError::UnknownCanaryGroup(_)
                | SimulateError::CanaryPlugin(_)
                | SimulateError::Agent(SimulatedNodeError::LatencyNeedsEmbeddedServer)
        )
    ) || matches!(error.downcast_ref(), Some(SimulatedNodeError::LatencyNeedsEmbeddedServer))
    {
        return true;
    }
    // A plugin that is not one is bad input; one that cannot be instantiated, or an
    // engine that cannot start, is this machine's failure.
    matches!(
        error.downcast_ref::<LoadError>(),
        Some(
            LoadError::Compile(_)
                | LoadError::WrongWorld(_)
                | LoadError::Read { .. }
                | LoadError::NotWasm
                | LoadError::CoreModule
                | LoadError::TooLarge { .. }
                | LoadError::File { .. }
        )
    )
}

/// Prints `error` as one line (`podstatus COMMAND: ...`) and returns its exit code.
pub fn fail(command: &str, error: &anyhow::Error) -> ExitCode {
    eprintln!("podstatus {command}: {}", one_line(error));
    ExitCode::from(exit_code(error))
}

/// `error` and its causes as one line ([`podstatus_agent::client::error_line`]): each
/// cause's first line, a cause already said left out, a long line cut.
pub fn one_line(error: &anyhow::Error) -> String {
    podstatus_agent::client::error_line(error.as_ref())
}

/// A clap error (other than `--help` and `--version`, which print as clap prints them)
/// as one line: its message and tip, without the usage block and the pointer to
/// `--help`.
pub fn clap_line(error: &clap::Error) -> String {
    let rendered = error.render().to_string();
    let mut parts: Vec<&str> = Vec::new();
    for line in rendered.lines().map(str::trim) {
        if line.is_empty() || line.starts_with("For more information") {
            continue;
        }
        if line.starts_with("Usage:") {
            break;
        }
        parts.push(line.strip_prefix("error: ").unwrap_or(line));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("cannot listen on {addr}: {source}")]
    struct Listen {
        addr: &'static str,
        #[source]
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_says_is_not_said_again() {
        let io = std::io::Error::new(std::io::ErrorKind::AddrInUse, "Address already in use (os error 98)");
        let error = anyhow::Error::new(Listen { addr: "127.0.0.1:8080", source: io })
            .context("starting the embedded API server");
        assert_eq!(
            one_line(&error),
            "starting the embedded API server: cannot listen on 127.0.0.1:8080: Address already in use (os error 98)"
        );
    }

    #[test]
    fn a_message_of_many_lines_gives_its_first() {
        let error = anyhow::anyhow!("failed to parse YAML: line 1 column 6\n --> <input>:1:6\n  |\n1 | not: [")
            .context("kubeconfig k");
        assert_eq!(one_line(&error), "kubeconfig k: failed to parse YAML: line 1 column 6");
    }

    #[test]
    fn a_long_message_is_cut() {
        let error = anyhow::anyhow!("{}", "x".repeat(5_000));
        assert_eq!(one_line(&error).chars().count(), podstatus_agent::client::MAX_ERROR_LINE + 4);
    }

    #[test]
    fn bad_input_is_exit_2_wherever_it_is_in_the_chain() {
        let error = BadInput::error("--node-cpu \"lots\"", "not a quantity").context("starting");
        assert_eq!(exit_code(&error), BAD_INPUT);
        assert_eq!(one_line(&error), "starting: --node-cpu \"lots\": not a quantity");
        assert_eq!(exit_code(&anyhow::anyhow!("the API server refused")), FAILURE);
        let load: anyhow::Error = podstatus_runtime::LoadError::NotWasm.into();
        assert_eq!(exit_code(&load.context("--plugin x.wasm")), BAD_INPUT);
    }
}
