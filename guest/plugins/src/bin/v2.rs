//! Logic 1.27 (first called v2): Kubernetes 1.27's status manager, as its kubelet writes, on
//! contract 0.2.0.
//!
//! `--logic 1.27`: Kubernetes 1.27, read then patch (its kubelet's GET, merge and PATCH)
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_2_0::Plugin<podstatus_logic_v2::V2>;
podstatus_glue::contract_0_2_0::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
