//! Which plugin a command runs: a file, or one built from this checkout, and where its
//! compiled artifacts are cached.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::Duration;

use anyhow::Context;
use podstatus_plugins::LogicVersion;
use podstatus_runtime::{PluginImage, PluginRuntime, RuntimeConfig};

use crate::failure::{BadInput, InputContext};

/// The options naming the plugin (under their own heading in `--help`).
#[derive(clap::Args)]
#[command(next_help_heading = "Plugin")]
pub struct PluginArgs {
    /// The plugin component; defaults to the one built from this checkout's guest/.
    #[arg(long, value_name = "FILE.wasm")]
    pub plugin: Option<PathBuf>,
    /// Which built-in plugin to run: a Kubernetes release's status manager as its
    /// kubelet writes (GET, merge over the status read, PATCH) or in the one-call write
    /// mode (one PATCH per status version, no GET), or the seed's 2017 kubelet (`v1`):
    /// the choices, each with what it follows and its alias in `--help`
    /// (docs/logic-versions.md).
    /// `--native` runs it with each sync's calls made at once, as a 0.1.x plugin does.
    #[arg(long, value_enum, default_value_t = Logic(LogicVersion::V1), conflicts_with = "plugin")]
    pub logic: Logic,
    /// Where compiled plugins are cached [default: $PODSTATUS_CACHE_DIR, else
    /// $XDG_CACHE_HOME/podstatus, else ~/.cache/podstatus].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile the plugin every time instead of using the cache.
    #[arg(long)]
    pub no_cache: bool,
    /// Time one plugin call may use, its imports' host work included, before it is
    /// faulted; enforced by checks compiled into every function and loop of the plugin.
    /// `off` removes the budget and its checks: JSON-heavy calls take about a third
    /// less time (docs/benchmarks.md), and a plugin that loops forever holds its node's
    /// calls forever. Only for a plugin you trust as you trust the host.
    #[arg(long, value_name = "DURATION|off", default_value = "5s", value_parser = parse_cpu_budget)]
    pub plugin_cpu_budget: CpuBudget,
    /// The largest plugin file read (`64Mi`; a Kubernetes quantity of bytes): the built
    /// plugins are about 3 MiB, and a wrong file is refused before it is read whole.
    #[arg(long, value_name = "BYTES", default_value = "64Mi", value_parser = crate::input::parse_size)]
    pub max_plugin_size: crate::input::Size,
}

/// A plugin's CPU budget per call, or none (`off`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuBudget(pub Option<Duration>);

/// Parses `--plugin-cpu-budget`: a duration above zero, or `off`.
fn parse_cpu_budget(text: &str) -> Result<CpuBudget, String> {
    if text.trim() == "off" {
        return Ok(CpuBudget(None));
    }
    let budget = podstatus_agent::parse_go_duration(text).map_err(|e| format!("{e}, or off"))?;
    if budget.is_zero() {
        return Err("a budget of zero would fault every call: give a duration above zero, or off".into());
    }
    Ok(CpuBudget(Some(budget)))
}

/// A logic version with a built-in plugin, as `--logic` takes it: its choices, their
/// names, aliases, order and help are `podstatus_plugins`' table
/// ([`LogicVersion::ALL`]), generated from `guest/plugins`' programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Logic(pub LogicVersion);

/// `--logic`'s choices, in the table's order.
static CHOICES: LazyLock<Vec<Logic>> = LazyLock::new(|| LogicVersion::ALL.iter().copied().map(Logic).collect());

impl clap::ValueEnum for Logic {
    fn value_variants<'a>() -> &'a [Self] {
        &CHOICES
    }

    fn to_possible_value(&self) -> Option<clap::builder::PossibleValue> {
        let help = match self.0.alias() {
            Some(alias) => format!("{} (alias {alias})", self.0.help()),
            None => self.0.help().to_string(),
        };
        let value = clap::builder::PossibleValue::new(self.0.name()).help(help);
        Some(match self.0.alias() {
            Some(alias) => value.alias(alias),
            None => value,
        })
    }
}

impl std::ops::Deref for Logic {
    type Target = LogicVersion;

    fn deref(&self) -> &LogicVersion {
        &self.0
    }
}

/// The logic version `podstatus agent` and `podstatus fleet` run unless told: the newest
/// release followed faithfully (they act for real nodes; `simulate` and `replay` keep
/// the seed, as the README's main job shows).
pub const NODE_DEFAULT_LOGIC: &str = "1.37";

/// What a summary says ran: the logic version and the plugin's digest.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct RanPlugin {
    /// The logic version as `--logic` names it (`1.37`), read from the plugin's
    /// `podstatus-logic` section; `unknown` for a plugin without one.
    pub logic: String,
    /// The SHA-256 of the plugin component, in lower-case hex.
    pub plugin_sha256: String,
}

impl RanPlugin {
    /// What the component in `bytes` is.
    pub fn of(bytes: &[u8]) -> Self {
        use sha2::Digest;
        let logic = LogicVersion::named_in(bytes).map_or_else(|| "unknown".to_owned(), |(name, _)| name.to_owned());
        let plugin_sha256 = sha2::Sha256::digest(bytes).iter().map(|byte| format!("{byte:02x}")).collect();
        RanPlugin { logic, plugin_sha256 }
    }
}

/// `logic 1.37, plugin sha256:0123456789ab` (the digest's first 12 digits, as
/// container image IDs are shortened).
impl std::fmt::Display for RanPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let short = self.plugin_sha256.get(..12).unwrap_or(&self.plugin_sha256);
        write!(f, "logic {}, plugin sha256:{short}", self.logic)
    }
}

impl PluginArgs {
    /// How the plugin is named in a message: `--plugin FILE` or `--logic NAME`.
    pub fn name(&self) -> String {
        match &self.plugin {
            Some(path) => format!("--plugin {}", path.display()),
            None => format!("--logic {}", self.logic.name()),
        }
    }

    /// The plugin's bytes: the file's (no more than --max-plugin-size of it), or the
    /// built-in plugin's.
    pub fn bytes(&self) -> anyhow::Result<Vec<u8>> {
        use std::io::Read;
        let Some(path) = &self.plugin else { return Ok(self.logic.component().to_vec()) };
        let limit = self.max_plugin_size.bytes();
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .and_then(|file| file.take(limit.saturating_add(1)).read_to_end(&mut bytes))
            .input(self.name())?;
        if bytes.len() as u64 > limit {
            return Err(BadInput::error(self.name(), format!("larger than {limit} bytes (--max-plugin-size)")));
        }
        Ok(bytes)
    }

    /// The plugin, compiled (or read from the cache) and checked against the worlds this
    /// host serves, with what it is (logic and digest) for the summaries; an error names
    /// the flag and the file.
    pub fn load(&self, runtime: &PluginRuntime) -> anyhow::Result<(PluginImage, RanPlugin)> {
        let bytes = self.bytes()?;
        let image = match &self.plugin {
            Some(_) => runtime.load(&bytes).input(self.name())?,
            None => {
                runtime.load(&bytes).with_context(|| format!("loading the built-in plugin {}", self.logic.program()))?
            }
        };
        Ok((image, RanPlugin::of(&bytes)))
    }

    /// What the plugin is called in a fleet's `logic` metric label: the file's stem,
    /// or the built-in one's (`podstatus-v1`).
    pub fn logic_label(&self) -> String {
        match &self.plugin {
            Some(path) => podstatus_simulate::file_logic(path),
            None => self.logic.program().to_owned(),
        }
    }

    pub fn runtime_config(&self) -> RuntimeConfig {
        let mut config = match &self.cache_dir {
            _ if self.no_cache => RuntimeConfig { cache_dir: None, ..RuntimeConfig::default() },
            Some(dir) => RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() },
            None => RuntimeConfig::with_default_cache(),
        };
        config.limits.call_cpu_time = self.plugin_cpu_budget.0;
        config.limits.max_component_bytes = self.max_plugin_size.bytes();
        config
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use podstatus_runtime::Limits;

    use super::*;

    #[derive(Parser)]
    struct Command {
        #[command(flatten)]
        plugin: PluginArgs,
    }

    fn parse(args: &[&str]) -> Result<PluginArgs, clap::Error> {
        Command::try_parse_from(std::iter::once("podstatus").chain(args.iter().copied())).map(|c| c.plugin)
    }

    #[test]
    fn the_cpu_budget_defaults_to_the_sandboxs_and_can_be_set_or_turned_off() {
        let default = parse(&[]).unwrap();
        assert_eq!(default.runtime_config().limits.call_cpu_time, Limits::default().call_cpu_time);
        let set = parse(&["--plugin-cpu-budget", "250ms"]).unwrap();
        assert_eq!(set.runtime_config().limits.call_cpu_time, Some(Duration::from_millis(250)));
        let off = parse(&["--plugin-cpu-budget", "off", "--no-cache"]).unwrap();
        let config = off.runtime_config();
        assert_eq!(config.limits.call_cpu_time, None);
        assert_eq!(config.cache_dir, None);
        // The rest of the sandbox stays as it is.
        assert_eq!(config.limits.memory_bytes, Limits::default().memory_bytes);
    }

    #[test]
    fn logic_takes_releases_and_modes_and_the_first_names() {
        for (arg, name) in [
            ("1.35", "1.35"),
            ("1.37-one-call", "1.37-one-call"),
            ("v2", "1.27"),
            ("v3", "1.27-one-call"),
            ("v4", "1.35-one-call"),
        ] {
            assert_eq!(parse(&["--logic", arg]).unwrap().logic.name(), name, "{arg}");
        }
        assert_eq!(parse(&[]).unwrap().logic.name(), "v1");
        assert!(parse(&["--logic", "1.36"]).is_err());
        assert!(LogicVersion::named(NODE_DEFAULT_LOGIC).is_some(), "the nodes' default is a choice");
    }

    #[test]
    fn a_plugin_is_named_by_its_logic_and_digest() {
        let ran = RanPlugin::of(LogicVersion::named("1.37").expect("a choice").component());
        assert_eq!(ran.logic, "1.37");
        assert_eq!(ran.plugin_sha256.len(), 64);
        assert_eq!(ran.to_string(), format!("logic 1.37, plugin sha256:{}", &ran.plugin_sha256[..12]));
        let v3 = RanPlugin::of(LogicVersion::named("v3").expect("an alias").component());
        assert_eq!(v3.logic, "1.27-one-call", "named by the table, not the alias");
        assert_eq!(RanPlugin::of(b"not a component").logic, "unknown");
    }

    #[test]
    fn a_cpu_budget_of_zero_or_of_nonsense_is_refused() {
        for bad in ["0s", "0", "soon", "-1s", ""] {
            let arg = format!("--plugin-cpu-budget={bad}");
            let error = parse(&[&arg]).err().unwrap_or_else(|| panic!("{bad:?} was taken"));
            assert_eq!(error.kind(), clap::error::ErrorKind::ValueValidation, "{bad:?}: {error}");
        }
    }
}
