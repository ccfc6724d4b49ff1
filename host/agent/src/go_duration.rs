//! Durations as Kubernetes tools write them (Go's `time.ParseDuration`: `10s`, `1m30s`,
//! `250ms`, `1.5h`), and a bare number as seconds, as this command always took them.
//!
//! Hand-written rather than a crate's: humantime and friends accept forms Go refuses
//! (`1 min`, `2days`) and refuse fractions Go takes (`1.5h`); the kubelet's flags are Go's.

use std::time::Duration;

/// Parses a duration flag; the error says what was expected (clap prints it).
pub fn parse(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?} is not a number of seconds"));
    }
    let invalid = || format!("{text:?} is not a duration (e.g. 30s, 1m30s, 250ms, or seconds as a number)");
    let mut rest = text;
    let mut total = 0.0_f64;
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(invalid)?;
        let (number, after) = rest.split_at(number_end);
        let value: f64 = number.parse().map_err(|_| invalid())?;
        let unit_end = after.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(after.len());
        let (unit, after) = after.split_at(unit_end);
        let scale = match unit {
            "ns" => 1e-9,
            "us" | "µs" | "μs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return Err(invalid()),
        };
        total += value * scale;
        rest = after;
    }
    Duration::try_from_secs_f64(total).map_err(|_| invalid())
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
            let error = parse(text).expect_err(text);
            assert!(error.contains("not a"), "{text}: {error}");
        }
    }
}
