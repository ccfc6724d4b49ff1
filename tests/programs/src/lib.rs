//! Guest components for tests: faulty and adversarial plugins, one constant each.

include!(concat!(env!("OUT_DIR"), "/programs.rs"));
