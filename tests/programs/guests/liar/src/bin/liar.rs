//! Logic v1 on contract 0.1.0, lying in its state (`podstatus_glue::lies`), with faults
//! on demand (`podstatus_glue::failpoints`).
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_1_0::Plugin<podstatus_logic_v1::V1>;
podstatus_glue::contract_0_1_0::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
