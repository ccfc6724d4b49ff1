//! Logic 1.35-one-call (first called v4): Kubernetes 1.35's behaviour, one UID-guarded PATCH
//! per status version, the in-place resize conditions, on contract 0.2.1.
//!
//! `--logic 1.35-one-call`: Kubernetes 1.35, one PATCH per status version and no GET, with in-place resize
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_2_1::Plugin<podstatus_logic_v4::V4>;
podstatus_glue::contract_0_2_1::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
