//! The status manager's calls as the host passes them: one [`Call`] (and its
//! [`Reply`]) whatever the operation, so that the layers over a plugin (supervision,
//! metering, timing, the handle) are each written once, as tower stacks its
//! middleware over one `call`. The operations are listed once
//! ([`for_each_operation!`](crate::for_each_operation), in `operations.rs`); the enum,
//! its names and the typed methods are generated from that list.

mod call;
mod operations;
mod reply;

pub use call::{Call, Effect, ManagerCall};
pub use reply::Reply;
