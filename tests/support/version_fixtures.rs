//! The replay fixtures that the logic-version comparisons (`tests/all/v1_vs_v2.rs`,
//! `v2_vs_v3.rs`) run through two plugins: read once, replayed to JSON reports.

use std::fs;
use std::path::PathBuf;

use podstatus_runtime::PluginImage;
use serde_json::Value;

use crate::{fixtures_dir, replay_component_with};

/// A replay fixture, named as the comparison tables name it.
pub struct Fixture {
    /// The file name for `replay/`, `<folder>/<file name>` for the other folders.
    pub key: String,
    /// Where the trace is.
    pub path: PathBuf,
    /// The trace.
    pub text: String,
}

/// A replay's report as JSON, or why the trace is unusable with that plugin.
pub type Outcome = Result<Value, String>;

/// Every trace of `folders` (each a fixtures folder and the prefix of its keys), in
/// key order.
pub fn trace_fixtures(folders: &[(&str, &str)]) -> Vec<Fixture> {
    let mut fixtures = Vec::new();
    for (folder, prefix) in folders {
        let dir = fixtures_dir().join(folder);
        for entry in fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.expect("readable dir entry").path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name.ends_with(".trace.json") {
                let text = fs::read_to_string(&path).unwrap();
                fixtures.push(Fixture { key: format!("{prefix}{name}"), path, text });
            }
        }
    }
    fixtures.sort_by(|a, b| a.key.cmp(&b.key));
    fixtures
}

/// `fixture` replayed through `image`: its report as JSON.
pub fn replay_report(image: &PluginImage, fixture: &Fixture) -> Outcome {
    replay_component_with(image, &fixture.text, fixture.path.parent().unwrap())
        .map(|outcome| serde_json::to_value(&outcome.report).expect("the report serialises"))
        .map_err(|e| e.to_string())
}
