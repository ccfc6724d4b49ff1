//! The binary runs on jemalloc with the options `src/allocator.rs` gives it (its own
//! statistics, printed at exit, name the options in effect), and the environment's
//! `_RJEM_MALLOC_CONF` overrides them.

#![cfg(feature = "jemalloc")]

mod common;

use common::podstatus;

/// jemalloc's statistics at the exit of `podstatus --version`, with `more` options.
fn statistics(more: &str) -> String {
    let out = podstatus(&["--version"])
        .env("_RJEM_MALLOC_CONF", format!("stats_print:true{more}"))
        .output()
        .expect("podstatus runs");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn the_binary_runs_on_jemalloc_with_its_own_options() {
    let stats = statistics("");
    for option in ["opt.narenas: 2", "opt.tcache_max: 1024", "opt.dirty_decay_ms: 2000", "opt.muzzy_decay_ms: 0"] {
        assert!(stats.contains(option), "{option} in jemalloc's statistics:\n{stats}");
    }
}

#[test]
fn the_environment_overrides_the_options() {
    let stats = statistics(",narenas:3");
    assert!(stats.contains("opt.narenas: 3"), "{stats}");
    assert!(stats.contains("opt.tcache_max: 1024"), "the others kept:\n{stats}");
}
