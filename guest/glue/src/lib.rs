//! The glue between each contract version and the logic: one module per contract, each
//! with its one `wit_bindgen::generate!`, exporting any logic version's
//! [`podstatus_logic::Policy`] through [`podstatus_logic::StatusManager`].
//!
//! A plugin is one tiny program that picks a contract and a policy (see
//! `guest/plugins/src/bin/`):
//!
//! ```ignore
//! #![no_main]
//! type Plugin = podstatus_glue::contract_0_2_0::Plugin<podstatus_logic_v2::V2>;
//! podstatus_glue::contract_0_2_0::export!(Plugin);
//! ```
//!
//! Contract 0.2.1 is 0.2.0 plus the in-place resize calls: its module expands 0.2.0's
//! split-sync glue (`split_shared`) and adds them.
//!
//! The glue knows nothing of what the logic decides, and the logic nothing of the glue.

pub mod contract_0_1_0;
pub mod contract_0_1_1;
pub mod contract_0_2_0;
pub mod contract_0_2_1;
#[cfg(feature = "failpoints")]
pub mod failpoints;
#[cfg(feature = "lies")]
pub mod lies;
mod mem;
mod shared;
mod split_shared;
