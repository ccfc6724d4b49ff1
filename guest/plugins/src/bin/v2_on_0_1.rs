//! Logic v2 on contract 0.1.1 (its syncs call the API server themselves).
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_1_1::Plugin<podstatus_logic_v2::V2>;
podstatus_glue::contract_0_1_1::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
