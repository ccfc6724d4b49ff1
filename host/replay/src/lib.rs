//! `podstatus replay`: a plugin against a scripted world, reported as one JSON document
//! (the contract is `shared/spec/replay-traces.md`).

mod held_calls;
mod recorder;
mod report;
mod runner;
mod swap_record;
mod trace;
mod trace_file;

pub use recorder::RecordingApiServer;
pub use report::{Call, Fault, Report};
pub use runner::{PluginFactory, ReplayOutcome, Stepper, SwapLoader, run, run_with_swaps};
pub use swap_record::swap as swap_held;
pub use trace::{DEFAULT_CLOCK, FailError, FailVerb, PodRef, Problem, Step, Trace, TraceError};
pub use trace_file::{MAX_TRACE_BYTES, TraceFileError, read_trace_file, read_trace_file_within};
