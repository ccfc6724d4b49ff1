//! Logic v1 (the 2017 status manager) on contract 0.2.0.
//!
//! `--logic v1`: The 2017 kubelet
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_2_0::Plugin<podstatus_logic_v1::V1>;
podstatus_glue::contract_0_2_0::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
