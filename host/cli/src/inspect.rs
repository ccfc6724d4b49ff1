//! What a plugin file is: its WIT world and the version of the contract it implements.

use wit_component::{DecodedWasm, WitPrinter};

/// Why a file cannot be inspected.
#[derive(Debug, thiserror::Error)]
pub enum InspectError {
    /// Not a component (or not one whose types can be read).
    #[error("not a WebAssembly component: {0:#}")]
    Decode(#[source] anyhow::Error),
    /// A core module or a WIT package rather than a component.
    #[error("a WIT package, not a component")]
    NotAComponent,
    /// The printer failed.
    #[error("printing the world: {0:#}")]
    Print(#[source] anyhow::Error),
}

/// A plugin's world, as text, and the `kubelet:status` packages it uses.
#[derive(Debug)]
pub struct Inspection {
    /// The component's world in WIT syntax, imports and exports with their packages.
    pub wit: String,
    /// Every `kubelet:status@X` package the component imports or exports.
    pub contract_versions: Vec<String>,
    /// Interfaces the plugin imports, as `package/interface@version`.
    pub imports: Vec<String>,
    /// Interfaces the plugin exports.
    pub exports: Vec<String>,
}

/// Reads the world of the component in `bytes`.
pub fn inspect(bytes: &[u8]) -> Result<Inspection, InspectError> {
    let decoded = wit_component::decode(bytes).map_err(InspectError::Decode)?;
    let DecodedWasm::Component(resolve, world_id) = &decoded else {
        return Err(InspectError::NotAComponent);
    };
    let world = &resolve.worlds[*world_id];
    let name_of = |key: &wit_parser::WorldKey| resolve.name_world_key(key);
    let imports: Vec<String> = world.imports.keys().map(name_of).collect();
    let exports: Vec<String> = world.exports.keys().map(name_of).collect();
    let mut contract_versions: Vec<String> = resolve
        .packages
        .iter()
        .filter(|(_, p)| p.name.namespace == "kubelet" && p.name.name == "status")
        .map(|(_, p)| p.name.to_string())
        .collect();
    contract_versions.sort();
    contract_versions.dedup();

    let mut printer = WitPrinter::default();
    let nested: Vec<_> = resolve.packages.iter().map(|(id, _)| id).filter(|id| *id != decoded.package()).collect();
    printer.print(resolve, decoded.package(), &nested).map_err(InspectError::Print)?;
    Ok(Inspection { wit: printer.output.to_string(), contract_versions, imports, exports })
}

/// The name and version of `inspect --json`'s schema (docs/json-output.md): a field may
/// be added within a version, none removed or changed.
const REPORT_FORMAT: &str = "podstatus.inspect/v1";

/// `podstatus inspect --json`.
#[derive(Debug, serde::Serialize)]
pub struct InspectReport<'a> {
    /// [`REPORT_FORMAT`].
    format: &'static str,
    /// What the plugin's `podstatus-logic` section names, if it has one.
    logic: Option<LogicReport>,
    /// The component's SHA-256, in lower-case hex.
    plugin_sha256: &'a str,
    /// Every `kubelet:status@X` package it uses.
    contract_versions: &'a [String],
    imports: &'a [String],
    exports: &'a [String],
    /// Whether this host loads it (its world is one the host serves).
    loadable: bool,
    /// Why not, when it does not.
    load_error: Option<String>,
    /// The world in WIT syntax.
    wit: &'a str,
}

/// A built-in plugin's logic version, as its section and this checkout's table say.
#[derive(Debug, serde::Serialize)]
struct LogicReport {
    /// As `--logic` takes it (`1.27-one-call`).
    name: String,
    /// Its first name, if it has one (`v3`).
    alias: Option<String>,
    /// The release and write mode it follows, if this checkout knows the name.
    follows: Option<String>,
}

impl<'a> InspectReport<'a> {
    /// The report of the component `bytes`, inspected and loaded (or not).
    pub fn new(
        bytes: &[u8],
        inspection: &'a Inspection,
        ran: &'a crate::plugin_args::RanPlugin,
        load_error: Option<String>,
    ) -> Self {
        use podstatus_plugins::LogicVersion;
        let logic = LogicVersion::named_in(bytes).map(|(name, alias)| LogicReport {
            name: name.to_owned(),
            alias: alias.map(str::to_owned),
            follows: LogicVersion::named(name).map(LogicVersion::follows),
        });
        InspectReport {
            format: REPORT_FORMAT,
            logic,
            plugin_sha256: &ran.plugin_sha256,
            contract_versions: &inspection.contract_versions,
            imports: &inspection.imports,
            exports: &inspection.exports,
            loadable: load_error.is_none(),
            load_error,
            wit: &inspection.wit,
        }
    }
}
