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
