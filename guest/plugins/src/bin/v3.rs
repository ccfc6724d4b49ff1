//! Logic 1.27-one-call (first called v3): 1.27's behaviour, one UID-guarded PATCH per status
//! version, on contract 0.2.0.
//!
//! `--logic 1.27-one-call`: Kubernetes 1.27, one PATCH per status version and no GET (the mode as first shipped)
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_2_0::Plugin<podstatus_logic_v3::V3>;
podstatus_glue::contract_0_2_0::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
