//! Flag values checked at the edge, as kube-apiserver and the kubelet check theirs: a
//! value that cannot work is refused when the command line is read (exit 2, one line
//! naming the flag), never written into a Node or left to spin a core.
//!
//! Durations follow one rule: no duration flag takes 0 (it meant "run until stopped",
//! "nothing", "never" or "spin" by flag). Where "no limit" or "never" is wanted, the
//! flag takes `off` ([`duration_or_off`]), as `--plugin-cpu-budget` always did.

use std::time::Duration;

/// The shortest period a loop of the agent may run at (`--sync-period`, the node's
/// status updates): below it a loop does little but wake, and at 0 it spun a core.
pub const MIN_PERIOD: Duration = Duration::from_millis(100);

/// What `--duration 0` and its kind are told.
const NO_ZERO: &str = "no duration flag takes 0";

/// A duration above zero (`30s`, `1m30s`, `250ms`, or seconds as a number).
pub fn duration(text: &str) -> Result<Duration, String> {
    let duration = podstatus_agent::parse_go_duration(text).map_err(|e| e.to_string())?;
    if duration.is_zero() {
        return Err(format!("{text:?}: {NO_ZERO}; give a duration above zero"));
    }
    Ok(duration)
}

/// A duration, or `off` (no limit, never): `None`. (A type of its own: clap reads a
/// field of `Option<T>` as a flag that may be absent.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OrOff(pub Option<Duration>);

/// A duration above zero, or `off` (no limit, never).
pub fn duration_or_off(text: &str) -> Result<OrOff, String> {
    if text.trim() == "off" {
        return Ok(OrOff(None));
    }
    let duration = podstatus_agent::parse_go_duration(text).map_err(|e| format!("{e}, or off"))?;
    if duration.is_zero() {
        return Err(format!("{text:?}: {NO_ZERO}; give a duration above zero, or off"));
    }
    Ok(OrOff(Some(duration)))
}

/// A period of a loop: a duration of at least [`MIN_PERIOD`].
pub fn period(text: &str) -> Result<Duration, String> {
    let period = duration(text)?;
    if period < MIN_PERIOD {
        return Err(format!("{text:?} is shorter than {MIN_PERIOD:?}, the shortest period a loop runs at"));
    }
    Ok(period)
}

/// A period, or `off` (never).
pub fn period_or_off(text: &str) -> Result<OrOff, String> {
    match duration_or_off(text)? {
        OrOff(Some(period)) if period < MIN_PERIOD => {
            Err(format!("{text:?} is shorter than {MIN_PERIOD:?}, the shortest period a loop runs at, or off"))
        }
        other => Ok(other),
    }
}

/// A Lease's duration: whole seconds as the Lease holds them
/// (`spec.leaseDurationSeconds`), at least one.
pub fn lease_duration(text: &str) -> Result<Duration, String> {
    let duration = duration(text)?;
    if duration < Duration::from_secs(1) || duration.subsec_nanos() != 0 {
        return Err(format!("{text:?}: a Lease holds whole seconds, at least 1s"));
    }
    Ok(duration)
}

/// A node's name, as kube-apiserver validates a Node's `metadata.name`: a DNS-1123
/// subdomain (lower case letters, digits, '-' and '.', at most 253 characters).
pub fn node_name(text: &str) -> Result<String, String> {
    if text.is_empty() {
        return Err("a node needs a name (a DNS-1123 subdomain, such as node-1)".into());
    }
    match podstatus_apiserver::subdomain_problems(text).first() {
        Some(problem) => Err(format!("{text:?} is not a node name: {problem}")),
        None => Ok(text.to_owned()),
    }
}

/// A node's capacity: a quantity of Kubernetes' grammar (`8`, `500m`, `32Gi`), not
/// below zero.
pub fn capacity(text: &str) -> Result<String, String> {
    match podstatus_core::parse_quantity(text) {
        None => Err(format!(
            "{text:?} is not a Kubernetes quantity (a number and a suffix: 8, 500m, 32Gi, 64G, 1e3; not GB or MiB)"
        )),
        Some(quantity) if quantity.negative => Err(format!("{text:?}: a capacity is not below zero")),
        Some(_) => Ok(text.to_owned()),
    }
}

/// An IP address, IPv4 or IPv6 (`10.0.0.10`, `fd00::10`).
pub fn ip(text: &str) -> Result<String, String> {
    text.parse::<std::net::IpAddr>().map(|ip| ip.to_string()).map_err(|_| format!("{text:?} is not an IP address"))
}

/// An API server's URL: `http://` or `https://`, then a host.
pub fn url(text: &str) -> Result<String, String> {
    let rest = text.strip_prefix("http://").or_else(|| text.strip_prefix("https://"));
    match rest.map(|rest| rest.split(['/', '?', '#']).next().unwrap_or_default()) {
        Some(host) if !host.is_empty() => Ok(text.to_owned()),
        _ => Err(format!("{text:?} is not an API server URL (http://HOST:PORT or https://HOST:PORT)")),
    }
}

/// A fraction from 0 to 1 (`0.05`).
pub fn fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(fraction) if (0.0..=1.0).contains(&fraction) => Ok(fraction),
        _ => Err(format!("{text:?} is not a fraction from 0 to 1")),
    }
}

/// A rate above zero (a finite number).
pub fn positive_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{text:?} is not a rate above zero")),
    }
}

/// A rate above zero, as the API client takes it (an `f32`).
pub fn qps(text: &str) -> Result<f32, String> {
    positive_rate(text).map(|rate| rate as f32)
}

/// A number of bytes, as a Kubernetes quantity (`64Mi`, `1Gi`, `1000000`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Size(u64);

impl Size {
    /// The bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }
}

/// A size above zero: a quantity of bytes (`64Mi`).
pub fn parse_size(text: &str) -> Result<Size, String> {
    let quantity = podstatus_core::parse_quantity(text)
        .ok_or_else(|| format!("{text:?} is not a size (a Kubernetes quantity of bytes: 64Mi, 1Gi, 500000)"))?;
    match quantity.whole.map(u64::try_from) {
        _ if quantity.negative => Err(format!("{text:?}: a size is not below zero")),
        Some(Ok(0)) => Err(format!("{text:?}: a size is above zero")),
        Some(Ok(bytes)) => Ok(Size(bytes)),
        _ => Err(format!("{text:?} is more bytes than this machine can address")),
    }
}

/// The most nodes one process runs (`--nodes`, `simulate --nodes`, the sum of the groups).
pub const MAX_NODES: u64 = 10_000;

/// `--nodes`: 1 to [`MAX_NODES`], the bound's reason said.
pub fn nodes(text: &str) -> Result<u32, String> {
    let why = "every node's plugin instance slots are reserved as address space when the fleet starts \
               (the largest fleet measured is 2,000 nodes)";
    count(text, 1, MAX_NODES, why).map(|n| n as u32)
}

/// A count from `min` to `max`, the bound's reason said when it is passed (`--steps`:
/// "a trace is generated whole before it runs").
pub fn count(text: &str, min: u64, max: u64, why: &str) -> Result<u64, String> {
    let n: u64 = text.trim().parse().map_err(|_| format!("{text:?} is not a whole number"))?;
    if n < min {
        return Err(format!("{n} is below {min}"));
    }
    if n > max {
        return Err(format!("{n} is above {max}: {why}"));
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_duration_takes_zero_and_off_says_never() {
        for zero in ["0", "0s", "0ms", "0.0"] {
            let error = duration(zero).unwrap_err();
            assert!(error.contains("no duration flag takes 0"), "{zero}: {error}");
            assert!(duration_or_off(zero).unwrap_err().contains("or off"), "{zero}");
        }
        assert_eq!(duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(duration_or_off("off"), Ok(OrOff(None)));
        assert_eq!(duration_or_off("2s"), Ok(OrOff(Some(Duration::from_secs(2)))));
        assert!(duration("soon").unwrap_err().contains("not a duration"));
    }

    #[test]
    fn periods_do_not_spin() {
        assert!(period("1ns").unwrap_err().contains("shortest period"));
        assert!(period("0").unwrap_err().contains("no duration flag takes 0"));
        assert_eq!(period("100ms"), Ok(MIN_PERIOD));
        assert_eq!(period_or_off("off"), Ok(OrOff(None)));
        assert!(period_or_off("1ms").is_err());
        assert!(lease_duration("1500ms").unwrap_err().contains("whole seconds"));
        assert_eq!(lease_duration("40s"), Ok(Duration::from_secs(40)));
    }

    #[test]
    fn node_names_are_dns_1123_subdomains() {
        assert_eq!(node_name("node-1.example"), Ok("node-1.example".into()));
        for bad in ["Bad_Name", "", "-x", "x-", "a..b", &"a".repeat(254)] {
            assert!(node_name(bad).is_err(), "{bad:?}");
        }
        assert!(node_name("Bad_Name").unwrap_err().contains("RFC 1123 subdomain"));
    }

    #[test]
    fn capacities_are_quantities() {
        for good in ["8", "500m", "32Gi", "64G", "1e3", "0"] {
            assert_eq!(capacity(good), Ok(good.into()), "{good}");
        }
        for bad in ["lots", "32GB", "1MiB", "-1", " 8"] {
            assert!(capacity(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn addresses_rates_fractions_sizes_counts() {
        assert!(ip("999.1.1.1").is_err());
        assert!(url("127.0.0.1:8080").is_err() && url("http://").is_err() && url("ftp://h").is_err());
        assert_eq!(url("http://127.0.0.1:1"), Ok("http://127.0.0.1:1".into()));
        assert_eq!(ip("fd00::10"), Ok("fd00::10".into()));
        assert!(fraction("2").is_err() && fraction("-0.1").is_err() && fraction("NaN").is_err());
        assert_eq!(fraction("1"), Ok(1.0));
        assert!(positive_rate("0").is_err() && positive_rate("inf").is_err());
        assert_eq!(parse_size("64Mi").map(Size::bytes), Ok(64 << 20));
        assert!(parse_size("0").is_err() && parse_size("64MB").is_err() && parse_size("1e30").is_err());
        assert_eq!(count("40", 1, 10, "why"), Err("40 is above 10: why".into()));
        assert_eq!(count("4", 1, 10, "why"), Ok(4));
        assert!(count("4294967295", 1, 10_000, "a trace is whole").unwrap_err().contains("a trace is whole"));
    }
}
