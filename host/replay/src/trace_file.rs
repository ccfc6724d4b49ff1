//! Reading a trace document from a file or standard input, bounded: a trace is read
//! whole before it is parsed, so an endless or enormous input (`/dev/zero`, a wrong
//! file) must be refused at a size, not read until memory runs out.

use std::io::Read;
use std::path::{Path, PathBuf};

/// The largest trace document read: 64 MiB. The largest recorded trace is a few hundred
/// KiB; a fuzzer's trace of 10,000 steps is about 5 MiB.
pub const MAX_TRACE_BYTES: u64 = 64 * 1024 * 1024;

/// Why a trace document could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TraceFileError {
    /// The file (or standard input) could not be read.
    #[error("reading trace {source_name}: {error}")]
    Io {
        /// The file, or `standard input`.
        source_name: String,
        /// Why.
        #[source]
        error: std::io::Error,
    },
    /// More than the limit ([`MAX_TRACE_BYTES`] unless the caller sets one).
    #[error("trace {source_name} is larger than {}, the limit for a trace", bytes_text(*.limit))]
    TooLarge {
        /// The file, or `standard input`.
        source_name: String,
        /// The limit, in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("trace {source_name} is not UTF-8 text")]
    NotText {
        /// The file, or `standard input`.
        source_name: String,
    },
}

/// `bytes` as a person reads a size: in MiB when it is a whole number of them.
fn bytes_text(bytes: u64) -> String {
    const MIB: u64 = 1024 * 1024;
    if bytes >= MIB && bytes.is_multiple_of(MIB) { format!("{} MiB", bytes / MIB) } else { format!("{bytes} bytes") }
}

/// The text of the trace at `path` (`-`: standard input) and the folder its relative
/// paths start from (the file's, or the working directory for standard input), within
/// [`MAX_TRACE_BYTES`].
pub fn read_trace_file(path: &Path) -> Result<(String, PathBuf), TraceFileError> {
    read_trace_file_within(path, MAX_TRACE_BYTES)
}

/// [`read_trace_file`], refusing a trace of more than `limit` bytes (reading no more
/// than one byte past it).
pub fn read_trace_file_within(path: &Path, limit: u64) -> Result<(String, PathBuf), TraceFileError> {
    let stdin = path == Path::new("-");
    let source_name = if stdin { "from standard input".to_string() } else { path.display().to_string() };
    let io = |error| TraceFileError::Io { source_name: source_name.clone(), error };
    let reader: Box<dyn Read> =
        if stdin { Box::new(std::io::stdin()) } else { Box::new(std::fs::File::open(path).map_err(io)?) };
    let mut bytes = Vec::new();
    reader.take(limit.saturating_add(1)).read_to_end(&mut bytes).map_err(io)?;
    if bytes.len() as u64 > limit {
        return Err(TraceFileError::TooLarge { source_name, limit });
    }
    let text = String::from_utf8(bytes).map_err(|_| TraceFileError::NotText { source_name })?;
    let base = if stdin {
        std::env::current_dir().unwrap_or_default()
    } else {
        path.parent().map(Path::to_path_buf).unwrap_or_default()
    };
    Ok((text, base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_endless_input_is_refused_at_the_limit() {
        let error = read_trace_file(Path::new("/dev/zero")).expect_err("refused");
        assert!(matches!(error, TraceFileError::TooLarge { .. }), "{error}");
        assert_eq!(error.to_string(), "trace /dev/zero is larger than 64 MiB, the limit for a trace");
    }

    #[test]
    fn a_limit_of_the_callers_is_kept_and_said() {
        let error = read_trace_file_within(Path::new("/dev/zero"), 1000).expect_err("refused");
        assert_eq!(error.to_string(), "trace /dev/zero is larger than 1000 bytes, the limit for a trace");
    }

    #[test]
    fn a_missing_file_is_named() {
        let error = read_trace_file(Path::new("/nonexistent/trace.json")).expect_err("refused");
        assert!(error.to_string().starts_with("reading trace /nonexistent/trace.json: "), "{error}");
    }
}
