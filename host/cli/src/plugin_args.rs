//! Which plugin a command runs: a file, or one built from this checkout, and where its
//! compiled artifacts are cached.

use std::path::PathBuf;

use anyhow::Context;
use podstatus_plugins::{PODSTATUS_V1, PODSTATUS_V2, PODSTATUS_V3, PODSTATUS_V4};
use podstatus_runtime::{LogicVersion, RuntimeConfig};

/// The options naming the plugin.
#[derive(clap::Args)]
pub struct PluginArgs {
    /// The plugin component; defaults to the one built from this checkout's guest/.
    #[arg(long, value_name = "FILE.wasm")]
    pub plugin: Option<PathBuf>,
    /// Which built-in plugin to run (v1-v3 on contract 0.2.0, v4 on 0.2.1; `--native`
    /// runs it with each sync's calls made at once, as a 0.1.x plugin does): v1 (the
    /// 2017 kubelet), v2 (Kubernetes 1.27), v3 (v2 writing each status version with one
    /// PATCH and no GET) or v4 (Kubernetes 1.35, written as v3 writes, with in-place
    /// resize).
    #[arg(long, value_enum, default_value_t = Logic::V1, conflicts_with = "plugin")]
    pub logic: Logic,
    /// Where compiled plugins are cached [default: $PODSTATUS_CACHE_DIR, else
    /// $XDG_CACHE_HOME/podstatus, else ~/.cache/podstatus].
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile the plugin every time instead of using the cache.
    #[arg(long)]
    pub no_cache: bool,
}

/// The plugins built from this checkout.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Logic {
    /// The 2017 kubelet.
    V1,
    /// Kubernetes 1.27.
    V2,
    /// v2 writing each status version with one PATCH, no GET.
    V3,
    /// Kubernetes 1.35, written as v3 writes, with in-place resize (contract 0.2.1).
    V4,
}

impl Logic {
    /// The built-in plugin of this logic version.
    pub fn component(self) -> &'static [u8] {
        match self {
            Logic::V1 => PODSTATUS_V1,
            Logic::V2 => PODSTATUS_V2,
            Logic::V3 => PODSTATUS_V3,
            Logic::V4 => PODSTATUS_V4,
        }
    }

    /// Its name in a fleet's `logic` metric label (the built plugin's file stem).
    pub fn label(self) -> &'static str {
        match self {
            Logic::V1 => "podstatus-v1",
            Logic::V2 => "podstatus-v2",
            Logic::V3 => "podstatus-v3",
            Logic::V4 => "podstatus-v4",
        }
    }

    /// The same logic version, linked natively (`--native`).
    pub fn native(self) -> LogicVersion {
        match self {
            Logic::V1 => LogicVersion::V1,
            Logic::V2 => LogicVersion::V2,
            Logic::V3 => LogicVersion::V3,
            Logic::V4 => LogicVersion::V4,
        }
    }
}

impl PluginArgs {
    pub fn bytes(&self) -> anyhow::Result<Vec<u8>> {
        match (&self.plugin, self.logic) {
            (Some(path), _) => std::fs::read(path).with_context(|| format!("reading plugin {}", path.display())),
            (None, logic) => Ok(logic.component().to_vec()),
        }
    }

    /// What the plugin is called in a fleet's `logic` metric label: the file's stem,
    /// or the built-in one's (`podstatus-v1`).
    pub fn logic_label(&self) -> String {
        match &self.plugin {
            Some(path) => podstatus_simulate::file_logic(path),
            None => self.logic.label().to_owned(),
        }
    }

    pub fn runtime_config(&self) -> RuntimeConfig {
        if self.no_cache {
            return RuntimeConfig { cache_dir: None, ..RuntimeConfig::default() };
        }
        match &self.cache_dir {
            Some(dir) => RuntimeConfig { cache_dir: Some(dir.clone()), ..RuntimeConfig::default() },
            None => RuntimeConfig::with_default_cache(),
        }
    }
}
