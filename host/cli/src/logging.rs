//! Logging flags as the kubelet's (`-v N`, `--logging-format json`) mapped onto
//! `tracing`. `RUST_LOG`, when set, wins over `-v`; a malformed one is an error, not a
//! filter silently replaced by the default.

use anyhow::Context;
use tracing_subscriber::EnvFilter;

/// kube-rs's target that logs every failed request.
const KUBE_CLIENT_REQUESTS: &str = "kube_client::client::builder";

/// The kubelet's logging flags.
#[derive(clap::Args, Debug)]
pub struct LoggingArgs {
    /// Log verbosity as klog counts it: 0 keeps the command's default (errors or
    /// warnings), 1-2 add info, 3-4 debug, 5 and more trace. `RUST_LOG` overrides it.
    #[arg(short = 'v', long = "v", global = true, value_name = "N", default_value_t = 0)]
    pub verbosity: u8,
    /// Log lines as text or as one JSON object per line (the kubelet's
    /// `--logging-format`).
    #[arg(long, global = true, value_enum, value_name = "FORMAT", default_value_t = LogFormat::Text)]
    pub logging_format: LogFormat,
}

/// How log lines are written to stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl LoggingArgs {
    /// The filter: `RUST_LOG` if set (refused when it does not parse), else the level
    /// `-v` asks for, else `default` (the command's own).
    pub fn filter(&self, default: &str, rust_log: Result<String, std::env::VarError>) -> anyhow::Result<EnvFilter> {
        match rust_log {
            Ok(spec) => EnvFilter::try_new(&spec).with_context(|| format!("RUST_LOG={spec:?} is not a log filter")),
            Err(std::env::VarError::NotUnicode(_)) => anyhow::bail!("RUST_LOG is not UTF-8"),
            Err(std::env::VarError::NotPresent) => {
                let level = match self.verbosity {
                    // kube-rs logs each failed request as an error of its own, beside the
                    // agent's warning that names the server and the cause: at the default
                    // level, only the agent's.
                    0 => format!("{default},{KUBE_CLIENT_REQUESTS}=off"),
                    1 | 2 => "info".into(),
                    3 | 4 => "debug".into(),
                    _ => "trace".into(),
                };
                Ok(EnvFilter::new(level))
            }
        }
    }

    /// Installs the subscriber on stderr, in colour only when stderr is a terminal (and
    /// `NO_COLOR` is not set): a log file or a pipe gets plain text.
    pub fn init(&self, default: &str) -> anyhow::Result<()> {
        use std::io::IsTerminal;
        let filter = self.filter(default, std::env::var("RUST_LOG"))?;
        let colour = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr).with_ansi(colour);
        match self.logging_format {
            LogFormat::Text => builder.try_init(),
            LogFormat::Json => builder.json().try_init(),
        }
        .map_err(|e| anyhow::anyhow!("installing the logger: {e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(verbosity: u8) -> LoggingArgs {
        LoggingArgs { verbosity, logging_format: LogFormat::Text }
    }

    #[test]
    fn verbosity_maps_onto_levels_unless_rust_log_says() {
        let unset = || Err(std::env::VarError::NotPresent);
        assert_eq!(args(0).filter("error", unset()).unwrap().to_string(), "kube_client::client::builder=off,error");
        assert_eq!(args(2).filter("error", unset()).unwrap().to_string(), "info");
        assert_eq!(args(4).filter("error", unset()).unwrap().to_string(), "debug");
        assert_eq!(args(9).filter("error", unset()).unwrap().to_string(), "trace");
        let set = args(9).filter("error", Ok("podstatus::plugin=debug".into())).unwrap();
        assert_eq!(set.to_string(), "podstatus::plugin=debug");
    }

    #[test]
    fn a_malformed_rust_log_is_an_error() {
        let error = args(0).filter("warn", Ok("podstatus=loud".into())).unwrap_err();
        assert!(format!("{error:#}").contains("RUST_LOG=\"podstatus=loud\" is not a log filter"), "{error:#}");
    }
}
