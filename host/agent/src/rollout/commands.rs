//! What a fleet does with the commands its control endpoint takes: each one run by the
//! fleet's own loop against its [`Rollout`], one at a time ([`serve_commands`]), and
//! the plugins a canary may be started on, by name ([`PluginCatalog`]): only those the
//! fleet was given when it started, never a path a client sends.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use super::canary::{CanaryPlan, Rollout};
use super::control_server::{ControlAnswer, ControlCommand, ControlError, ControlServer, StartCanary};
use crate::fleet::{Fleet, canary_nodes};
use podstatus_runtime::{PluginImage, PluginRuntime};

/// Where a catalog's plugin comes from.
enum Source {
    /// A component in memory (one built into the binary).
    Bytes(&'static [u8]),
    /// A component file.
    File(PathBuf),
}

/// The plugins a canary may move to, by name, each with its `logic` label; loaded (and
/// compiled, or read from the artifact cache) the first time a canary asks for it.
pub struct PluginCatalog {
    plugins: PluginRuntime,
    entries: BTreeMap<String, (Source, String)>,
    loaded: Mutex<BTreeMap<String, PluginImage>>,
}

impl PluginCatalog {
    /// An empty catalog loading with `plugins`.
    pub fn new(plugins: PluginRuntime) -> Self {
        PluginCatalog { plugins, entries: BTreeMap::new(), loaded: Mutex::new(BTreeMap::new()) }
    }

    /// Adds the component `bytes` as `name`, labelled `logic`.
    pub fn add_bytes(&mut self, name: &str, bytes: &'static [u8], logic: &str) {
        self.entries.insert(name.to_owned(), (Source::Bytes(bytes), logic.to_owned()));
    }

    /// Adds the component file `path` as `name`, labelled `logic`.
    pub fn add_file(&mut self, name: &str, path: PathBuf, logic: &str) {
        self.entries.insert(name.to_owned(), (Source::File(path), logic.to_owned()));
    }

    /// The names it knows, sorted.
    pub fn names(&self) -> Vec<String> {
        self.entries.keys().cloned().collect()
    }

    /// The plugin named `name` and its `logic` label.
    pub fn get(&self, name: &str) -> Result<(PluginImage, String), ControlError> {
        let Some((source, logic)) = self.entries.get(name) else {
            return Err(ControlError::UnknownPlugin {
                name: name.chars().take(64).collect(),
                known: self.names().join(", "),
            });
        };
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(image) = loaded.get(name) {
            return Ok((image.clone(), logic.clone()));
        }
        let image = match source {
            Source::Bytes(bytes) => self.plugins.load(bytes),
            Source::File(path) => self.plugins.load_file(path),
        }
        .map_err(|e| ControlError::PluginLoad { name: name.to_owned(), message: e.to_string() })?;
        loaded.insert(name.to_owned(), image.clone());
        Ok((image, logic.clone()))
    }
}

/// Runs every command waiting at `control` against `fleet`'s `rollout`, answering each.
pub fn serve_commands(control: &ControlServer, fleet: &Fleet, rollout: &mut Rollout, catalog: &PluginCatalog) {
    while let Some(request) = control.next_request() {
        let answer = run(&request.command, fleet, rollout, catalog);
        if let Err(error) = &answer {
            tracing::warn!(command = ?request.command, user = %request.identity.user, "control: {error}");
        }
        request.answer(answer);
    }
}

/// Runs every command waiting at `control` for a shard of a sharded fleet: where its
/// part stands (`GET /rollout`, of this shard's nodes), and an operator's decision on
/// the fleet's rollout being watched, written into its `spec.decision` for the leader
/// to carry out over every shard; a canary is started by creating the object.
pub fn serve_shard_commands(
    control: &ControlServer,
    fleet: &Fleet,
    rollout: &Rollout,
    objects: &super::objects::RolloutObjects,
    fleet_name: &str,
) {
    while let Some(request) = control.next_request() {
        let decision = match request.command {
            ControlCommand::Status => None,
            ControlCommand::Start(_) => {
                request.answer(Err(ControlError::Sharded));
                continue;
            }
            ControlCommand::Promote => Some("Promote"),
            ControlCommand::RollBack => Some("RollBack"),
        };
        let answer = match decision {
            None => Ok(rollout.status(fleet)),
            Some(decision) => decide(objects, fleet_name, decision).map(|()| rollout.status(fleet)),
        };
        if let Err(error) = &answer {
            tracing::warn!(command = ?request.command, user = %request.identity.user, "control: {error}");
        } else if decision.is_some() {
            tracing::info!(user = %request.identity.user, ?decision, "control: the rollout's decision written");
        }
        request.answer(answer);
    }
}

/// Writes `decision` into the fleet's rollout being watched.
fn decide(objects: &super::objects::RolloutObjects, fleet: &str, decision: &str) -> Result<(), ControlError> {
    let rollouts = objects.list(fleet).map_err(|e| ControlError::Objects(e.to_string()))?;
    let watched = rollouts
        .iter()
        .find(|r| !r.status.as_ref().and_then(|s| s.phase).is_some_and(|p| p.is_final()))
        .ok_or(ControlError::Rollout(super::canary::RolloutError::NotWatching))?;
    let name = watched.metadata.name.clone().unwrap_or_default();
    objects.decide(&name, decision).map_err(|e| ControlError::Objects(e.to_string()))?;
    Ok(())
}

/// Runs one command.
pub fn run(command: &ControlCommand, fleet: &Fleet, rollout: &mut Rollout, catalog: &PluginCatalog) -> ControlAnswer {
    match command {
        ControlCommand::Status => Ok(rollout.status(fleet)),
        ControlCommand::Promote => Ok(rollout.promote(fleet)?),
        ControlCommand::RollBack => Ok(rollout.roll_back(fleet)?),
        ControlCommand::Start(StartCanary { share, to }) => {
            let (image, logic) = catalog.get(to)?;
            let nodes = canary_nodes(fleet.len(), *share);
            Ok(rollout.start(fleet, CanaryPlan { nodes, image, logic })?)
        }
    }
}
