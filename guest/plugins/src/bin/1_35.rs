//! Logic 1.35: Kubernetes 1.35's status manager as its kubelet writes (GET, merge over the
//! status read, PATCH under the pod's UID), with in-place resize, on contract 0.2.1.
//!
//! `--logic 1.35`: Kubernetes 1.35, read then patch (its kubelet's GET, merge and PATCH), with in-place resize
#![cfg_attr(target_family = "wasm", no_main)]

type Plugin = podstatus_glue::contract_0_2_1::Plugin<podstatus_logic_v4::Kubelet135>;
podstatus_glue::contract_0_2_1::export!(Plugin);

#[cfg(not(target_family = "wasm"))]
fn main() {}
