//! libFuzzer's bytes become the trace generator's choices (two bytes a choice, then a
//! PRNG seeded from the input), so the fuzzer's mutations are structured changes of a
//! valid trace; the native logic runs it under every invariant of `podstatus fuzz`,
//! and a violation panics with the shrunk trace.
//!
//! `cargo +nightly fuzz run manager` from the workspace root.

#![no_main]

use libfuzzer_sys::fuzz_target;
use podstatus::fuzz::rng::ByteEntropy;
use podstatus::fuzz::{GenConfig, ShrinkBudget, Target, check_trace, generate_with, shrink_violation, trace_to_json};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the length, so short and long traces both get explored.
    let (steps, choices) = match data.split_first() {
        Some((len, rest)) => (4 + usize::from(*len) % 60, rest),
        None => (4, data),
    };
    let trace = generate_with(&mut ByteEntropy::new(choices), &GenConfig { steps });
    let outcome = match check_trace(&trace, &Target::Native, false) {
        Ok(outcome) => outcome,
        Err(e) => panic!("the replay refused a generated trace: {e}\n{:#}", trace_to_json(&trace)),
    };
    if let Some(violation) = outcome.violation {
        let budget = ShrinkBudget { max_runs: 2000, ..ShrinkBudget::default() };
        let shrunk = shrink_violation(&trace, violation.clone(), &Target::Native, None, false, budget);
        panic!("{violation}\nshrunk to: {}\n{:#}", shrunk.violation, shrunk.doc);
    }
});
