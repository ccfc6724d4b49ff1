//! Durations for people, in the form the duration flags take (Go's: `16.8s`, `350ms`,
//! `12.3µs`, `2m30s`): a summary's figure can be pasted back into a flag, and every
//! figure says its unit. Three significant digits: a propagation p99 is tens of
//! milliseconds, a plugin call tens of microseconds, a run minutes.

use std::time::Duration;

/// `duration` as Go would write it, to three significant digits below a minute
/// (`0s`, `850ns`, `12.3µs`, `2.53ms`, `350ms`, `1.5s`, `16.8s`) and to the second
/// above (`2m30s`, `1h5m0s`).
pub fn format_duration(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if duration >= Duration::from_secs(60) {
        // Go's form above a minute, to the second: `1h5m0s`.
        let seconds = duration.as_secs() + u64::from(duration.subsec_millis() >= 500);
        let (hours, minutes, seconds) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
        return if hours > 0 { format!("{hours}h{minutes}m{seconds}s") } else { format!("{minutes}m{seconds}s") };
    }
    let (value, unit) = match nanos {
        n if n < 1_000 => return format!("{n}ns"),
        n if n < 1_000_000 => (n as f64 / 1e3, "µs"),
        n if n < 1_000_000_000 => (n as f64 / 1e6, "ms"),
        n => (n as f64 / 1e9, "s"),
    };
    format!("{}{unit}", significant(value))
}

/// Seconds (a figure kept as `f64`, as summaries keep them) as [`format_duration`]
/// writes them; a negative or non-finite figure is written as it is, with `s`.
pub fn format_seconds(seconds: f64) -> String {
    match Duration::try_from_secs_f64(seconds) {
        Ok(duration) => format_duration(duration),
        Err(_) => format!("{seconds}s"),
    }
}

/// `value` (from 1 to below 1000) to three significant digits, without trailing zeros:
/// `16.77` is `16.8`, `1.50` is `1.5`, `350.2` is `350`.
fn significant(value: f64) -> String {
    let decimals = match value {
        v if v < 10.0 => 2,
        v if v < 100.0 => 1,
        _ => 0,
    };
    let text = format!("{value:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_go_writes_them_and_parse_back() {
        let cases = [
            (Duration::ZERO, "0s"),
            (Duration::from_nanos(850), "850ns"),
            (Duration::from_nanos(12_345), "12.3µs"),
            (Duration::from_micros(2_534), "2.53ms"),
            (Duration::from_micros(350_200), "350ms"),
            (Duration::from_millis(1_500), "1.5s"),
            (Duration::from_millis(16_768), "16.8s"),
            (Duration::from_millis(15_000), "15s"),
            (Duration::from_millis(59_999), "60s"),
            (Duration::from_secs(150), "2m30s"),
            (Duration::from_secs(3_900), "1h5m0s"),
        ];
        for (duration, text) in cases {
            assert_eq!(format_duration(duration), text, "{duration:?}");
            let back = crate::parse_go_duration(text).expect("the flags take it");
            let error = back.as_secs_f64() - duration.as_secs_f64();
            assert!(error.abs() <= duration.as_secs_f64() * 0.01, "{text} is {back:?}, not {duration:?}");
        }
        assert_eq!(format_seconds(16.7688), "16.8s");
        assert_eq!(format_seconds(0.0000123), "12.3µs");
        assert_eq!(format_seconds(-1.0), "-1s");
    }
}
