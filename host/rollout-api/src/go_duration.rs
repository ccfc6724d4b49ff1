//! Durations as Kubernetes tools write them (Go's `time.ParseDuration`: `10s`, `1m30s`,
//! `250ms`, `1.5h`), and a bare number as seconds, as this command always took them.
//!
//! Hand-written rather than a crate's: humantime and friends accept forms Go refuses
//! (`1 min`, `2days`) and refuse fractions Go takes (`1.5h`); the kubelet's flags are Go's.

use std::num::ParseFloatError;
use std::time::{Duration, TryFromFloatSecsError};

/// Why a duration flag does not parse. Display is what clap prints after the flag: it
/// says what was expected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GoDurationError {
    /// A bare number that is no number of seconds: negative, not finite, or more than a
    /// `Duration` holds.
    #[error("{text:?} is not a number of seconds")]
    Seconds {
        /// The flag's text, trimmed.
        text: String,
        /// Why it is no `Duration`.
        #[source]
        source: TryFromFloatSecsError,
    },
    /// Not in Go's form: empty, a number without a unit, or a unit Go does not have.
    #[error("{text:?} is not a duration (e.g. 30s, 1m30s, 250ms, or seconds as a number)")]
    Form {
        /// The flag's text, trimmed.
        text: String,
    },
    /// A number before a unit that does not parse (none at all, as in `s`, or `1.2.3s`).
    #[error("{text:?} is not a duration (e.g. 30s, 1m30s, 250ms, or seconds as a number)")]
    Number {
        /// The flag's text, trimmed.
        text: String,
        /// Why the number does not parse.
        #[source]
        source: ParseFloatError,
    },
    /// Go's form, but more than a `Duration` holds.
    #[error("{text:?} is not a duration (e.g. 30s, 1m30s, 250ms, or seconds as a number)")]
    OutOfRange {
        /// The flag's text, trimmed.
        text: String,
        /// Why the total is no `Duration`.
        #[source]
        source: TryFromFloatSecsError,
    },
}

/// Parses a duration flag; the error says what was expected (clap prints it).
pub fn parse(text: &str) -> Result<Duration, GoDurationError> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds)
            .map_err(|source| GoDurationError::Seconds { text: text.to_owned(), source });
    }
    let form = || GoDurationError::Form { text: text.to_owned() };
    let mut rest = text;
    let mut total = 0.0_f64;
    if rest.is_empty() {
        return Err(form());
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(form)?;
        let (number, after) = rest.split_at(number_end);
        let value: f64 = number.parse().map_err(|source| GoDurationError::Number { text: text.to_owned(), source })?;
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(form()),
        };
        total += value * scale;
        rest = after;
    }
    Duration::try_from_secs_f64(total).map_err(|source| GoDurationError::OutOfRange { text: text.to_owned(), source })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_and_bare_seconds() {
        let cases = [
            ("10s", 10_000),
            ("1m30s", 90_000),
            ("250ms", 250),
            ("1.5h", 5_400_000),
            ("2h45m", 9_900_000),
            ("15", 15_000),
            ("2.5", 2_500),
            ("0", 0),
            ("1m0.5s", 60_500),
        ];
        for (text, ms) in cases {
            assert_eq!(parse(text), Ok(Duration::from_millis(ms)), "{text}");
        }
        assert_eq!(parse("1500us"), Ok(Duration::from_micros(1500)));
    }

    #[test]
    fn anything_else_is_refused_with_the_forms_it_takes() {
        for text in ["", "s", "10", "-1", "10x", "1 m", "m10", "1.2.3s", "NaN", "inf", "1e400"] {
            if text == "10" {
                continue;
            }
            let error = parse(text).expect_err(text).to_string();
            assert!(error.contains("not a"), "{text}: {error}");
        }
        let form = "is not a duration (e.g. 30s, 1m30s, 250ms, or seconds as a number)";
        assert_eq!(parse(" 10x ").map_err(|e| e.to_string()), Err(format!("\"10x\" {form}")));
        assert_eq!(parse("1.2.3s").map_err(|e| e.to_string()), Err(format!("\"1.2.3s\" {form}")));
        assert_eq!(parse("-1").map_err(|e| e.to_string()), Err("\"-1\" is not a number of seconds".to_owned()));
        let number = parse("s").expect_err("no number");
        assert!(matches!(number, GoDurationError::Number { .. }), "{number:?}");
        assert!(std::error::Error::source(&number).is_some(), "the cause is kept");
    }
}
