//! A PodStatus written as JSON: the very bytes `serde_json::to_string` writes of
//! k8s-openapi's types, in about a third of the time.
//!
//! A changed status is written at least once (the sync's write, the supervisor's change
//! set, the host's record), and in the sandbox that was the biggest part of what a
//! supervised update costs beyond the update itself. Two things made it slow: every
//! `metav1.Time` goes through jiff's `strftime` (k8s-openapi formats with
//! `%Y-%m-%dT%H:%M:%SZ`, parsing the format each time), and serde_json escapes strings
//! a byte per turn (in the sandbox each turn also pays the CPU budget's epoch check).
//! Here the times are written from their civil fields and strings are scanned eight
//! bytes per turn; the types that hold neither many strings nor a time (resources,
//! volume mounts, claims, ...) are still written by serde_json.
//!
//! Every struct is destructured without `..`, in k8s-openapi's field order (its JSON
//! names, sorted), so a field added to k8s-openapi fails to compile here until it is
//! written; the tests hold the output to serde_json's, byte for byte.

use k8s_openapi::api::core::v1::{
    ContainerState, ContainerStateRunning, ContainerStateTerminated, ContainerStateWaiting, ContainerStatus, HostIP,
    PodCondition, PodIP, PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde::Serialize;

use crate::error::JsonError;

/// Writes `status` as compact JSON, byte for byte as `serde_json::to_string` does.
pub fn write_status(status: &PodStatus) -> Result<String, JsonError> {
    let mut out = Out { buf: Vec::with_capacity(4096) };
    out.pod_status(status)?;
    // Only whole strings and ASCII are written, so the bytes are UTF-8.
    String::from_utf8(out.buf).map_err(|e| JsonError(format!("cannot serialise status: {e}")))
}

/// The JSON being written.
struct Out {
    buf: Vec<u8>,
}

/// One JSON object being written: its fields, each after a comma but the first.
struct Object<'a> {
    out: &'a mut Out,
    first: bool,
}

type Written = Result<(), JsonError>;

impl Out {
    fn object(&mut self) -> Object<'_> {
        self.buf.push(b'{');
        Object { out: self, first: true }
    }

    /// A value serde_json writes (the plugin's serde_json has no `io`: written apart,
    /// then copied; these values are rare and small).
    fn serde<T: Serialize + ?Sized>(&mut self, value: &T) -> Written {
        let text = serde_json::to_vec(value).map_err(|e| JsonError(format!("cannot serialise status: {e}")))?;
        self.buf.extend_from_slice(&text);
        Ok(())
    }

    fn list<T>(&mut self, items: &[T], mut item: impl FnMut(&mut Out, &T) -> Written) -> Written {
        self.buf.push(b'[');
        for (i, value) in items.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            item(self, value)?;
        }
        self.buf.push(b']');
        Ok(())
    }

    fn bool(&mut self, value: bool) {
        self.buf.extend_from_slice(if value { b"true" } else { b"false" });
    }

    fn int(&mut self, value: i64) {
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let mut rest = value.unsigned_abs();
        loop {
            at -= 1;
            digits[at] = b'0' + (rest % 10) as u8;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        if value < 0 {
            self.buf.push(b'-');
        }
        self.buf.extend_from_slice(&digits[at..]);
    }

    /// A string, escaped as serde_json escapes it: `"` and `\`, and the control
    /// characters (`\b`, `\t`, `\n`, `\f`, `\r`, else `\u00xx`); nothing else.
    fn str(&mut self, text: &str) {
        let bytes = text.as_bytes();
        self.buf.reserve(bytes.len() + 2);
        self.buf.push(b'"');
        let mut start = 0;
        while let Some(at) = next_escape(bytes, start) {
            self.buf.extend_from_slice(&bytes[start..at]);
            self.escape(bytes[at]);
            start = at + 1;
        }
        self.buf.extend_from_slice(&bytes[start..]);
        self.buf.push(b'"');
    }

    fn escape(&mut self, byte: u8) {
        let short = match byte {
            b'"' => b'"',
            b'\\' => b'\\',
            0x08 => b'b',
            0x09 => b't',
            0x0a => b'n',
            0x0c => b'f',
            0x0d => b'r',
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                let hex = [HEX[usize::from(byte >> 4)], HEX[usize::from(byte & 0xf)]];
                self.buf.extend_from_slice(b"\\u00");
                self.buf.extend_from_slice(&hex);
                return;
            }
        };
        self.buf.extend_from_slice(&[b'\\', short]);
    }

    /// A `metav1.Time` as k8s-openapi writes it (`%Y-%m-%dT%H:%M:%SZ`, UTC); years
    /// outside 0 to 9999, which jiff writes its own way, are left to jiff.
    fn time(&mut self, time: &Time) -> Written {
        let civil = k8s_openapi::jiff::tz::Offset::UTC.to_datetime(time.0);
        let year = civil.year();
        if !(0..=9999).contains(&year) {
            let text = k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", time.0)
                .map_err(|e| JsonError(format!("cannot serialise status: {e}")))?;
            self.str(&text);
            return Ok(());
        }
        let two = |n: i8| [b'0' + (n / 10) as u8, b'0' + (n % 10) as u8];
        let year = year as u16;
        let (m, d, h, min, s) =
            (two(civil.month()), two(civil.day()), two(civil.hour()), two(civil.minute()), two(civil.second()));
        let digits = [(year / 1000) as u8, (year / 100 % 10) as u8, (year / 10 % 10) as u8, (year % 10) as u8];
        self.buf.extend_from_slice(&[
            b'"',
            b'0' + digits[0],
            b'0' + digits[1],
            b'0' + digits[2],
            b'0' + digits[3],
            b'-',
            m[0],
            m[1],
            b'-',
            d[0],
            d[1],
            b'T',
            h[0],
            h[1],
            b':',
            min[0],
            min[1],
            b':',
            s[0],
            s[1],
            b'Z',
            b'"',
        ]);
        Ok(())
    }

    fn pod_status(&mut self, status: &PodStatus) -> Written {
        let PodStatus {
            allocated_resources,
            conditions,
            container_statuses,
            ephemeral_container_statuses,
            extended_resource_claim_status,
            host_ip,
            host_ips,
            init_container_statuses,
            message,
            nominated_node_name,
            observed_generation,
            phase,
            pod_ip,
            pod_ips,
            qos_class,
            reason,
            resize,
            resource_claim_statuses,
            resources,
            start_time,
        } = status;
        let mut o = self.object();
        o.opt("allocatedResources", allocated_resources, Out::serde)?;
        o.opt("conditions", conditions, |out, list| out.list(list, Out::pod_condition))?;
        o.opt("containerStatuses", container_statuses, |out, list| out.list(list, Out::container_status))?;
        o.opt("ephemeralContainerStatuses", ephemeral_container_statuses, |out, list| {
            out.list(list, Out::container_status)
        })?;
        o.opt("extendedResourceClaimStatus", extended_resource_claim_status, Out::serde)?;
        o.opt_str("hostIP", host_ip);
        o.opt("hostIPs", host_ips, |out, list| out.list(list, Out::host_ip))?;
        o.opt("initContainerStatuses", init_container_statuses, |out, list| out.list(list, Out::container_status))?;
        o.opt_str("message", message);
        o.opt_str("nominatedNodeName", nominated_node_name);
        o.opt_int("observedGeneration", *observed_generation);
        o.opt_str("phase", phase);
        o.opt_str("podIP", pod_ip);
        o.opt("podIPs", pod_ips, |out, list| out.list(list, Out::pod_ip))?;
        o.opt_str("qosClass", qos_class);
        o.opt_str("reason", reason);
        o.opt_str("resize", resize);
        o.opt("resourceClaimStatuses", resource_claim_statuses, Out::serde)?;
        o.opt("resources", resources, Out::serde)?;
        o.opt("startTime", start_time, Out::time)?;
        o.end();
        Ok(())
    }

    fn pod_condition(&mut self, condition: &PodCondition) -> Written {
        let PodCondition { last_probe_time, last_transition_time, message, observed_generation, reason, status, type_ } =
            condition;
        let mut o = self.object();
        o.opt("lastProbeTime", last_probe_time, Out::time)?;
        o.opt("lastTransitionTime", last_transition_time, Out::time)?;
        o.opt_str("message", message);
        o.opt_int("observedGeneration", *observed_generation);
        o.opt_str("reason", reason);
        o.str("status", status);
        o.str("type", type_);
        o.end();
        Ok(())
    }

    fn host_ip(&mut self, ip: &HostIP) -> Written {
        let HostIP { ip } = ip;
        let mut o = self.object();
        o.str("ip", ip);
        o.end();
        Ok(())
    }

    fn pod_ip(&mut self, ip: &PodIP) -> Written {
        let PodIP { ip } = ip;
        let mut o = self.object();
        o.str("ip", ip);
        o.end();
        Ok(())
    }

    fn container_status(&mut self, status: &ContainerStatus) -> Written {
        let ContainerStatus {
            allocated_resources,
            allocated_resources_status,
            container_id,
            image,
            image_id,
            last_state,
            name,
            ready,
            resources,
            restart_count,
            started,
            state,
            stop_signal,
            user,
            volume_mounts,
        } = status;
        let mut o = self.object();
        o.opt("allocatedResources", allocated_resources, Out::serde)?;
        o.opt("allocatedResourcesStatus", allocated_resources_status, Out::serde)?;
        o.opt_str("containerID", container_id);
        o.str("image", image);
        o.str("imageID", image_id);
        o.opt("lastState", last_state, Out::container_state)?;
        o.str("name", name);
        o.key("ready");
        o.out.bool(*ready);
        o.opt("resources", resources, Out::serde)?;
        o.key("restartCount");
        o.out.int(i64::from(*restart_count));
        if let Some(started) = started {
            o.key("started");
            o.out.bool(*started);
        }
        o.opt("state", state, Out::container_state)?;
        o.opt_str("stopSignal", stop_signal);
        o.opt("user", user, Out::serde)?;
        o.opt("volumeMounts", volume_mounts, Out::serde)?;
        o.end();
        Ok(())
    }

    fn container_state(&mut self, state: &ContainerState) -> Written {
        let ContainerState { running, terminated, waiting } = state;
        let mut o = self.object();
        o.opt("running", running, Out::running)?;
        o.opt("terminated", terminated, Out::terminated)?;
        o.opt("waiting", waiting, Out::waiting)?;
        o.end();
        Ok(())
    }

    fn running(&mut self, running: &ContainerStateRunning) -> Written {
        let ContainerStateRunning { started_at } = running;
        let mut o = self.object();
        o.opt("startedAt", started_at, Out::time)?;
        o.end();
        Ok(())
    }

    fn terminated(&mut self, terminated: &ContainerStateTerminated) -> Written {
        let ContainerStateTerminated { container_id, exit_code, finished_at, message, reason, signal, started_at } =
            terminated;
        let mut o = self.object();
        o.opt_str("containerID", container_id);
        o.key("exitCode");
        o.out.int(i64::from(*exit_code));
        o.opt("finishedAt", finished_at, Out::time)?;
        o.opt_str("message", message);
        o.opt_str("reason", reason);
        o.opt_int("signal", signal.map(i64::from));
        o.opt("startedAt", started_at, Out::time)?;
        o.end();
        Ok(())
    }

    fn waiting(&mut self, waiting: &ContainerStateWaiting) -> Written {
        let ContainerStateWaiting { message, reason } = waiting;
        let mut o = self.object();
        o.opt_str("message", message);
        o.opt_str("reason", reason);
        o.end();
        Ok(())
    }
}

impl Object<'_> {
    /// `"name":` after a comma unless first; names are ASCII letters, written as they are.
    fn key(&mut self, name: &str) {
        if !std::mem::take(&mut self.first) {
            self.out.buf.push(b',');
        }
        self.out.buf.push(b'"');
        self.out.buf.extend_from_slice(name.as_bytes());
        self.out.buf.extend_from_slice(b"\":");
    }

    fn str(&mut self, name: &str, value: &str) {
        self.key(name);
        self.out.str(value);
    }

    fn opt_str(&mut self, name: &str, value: &Option<String>) {
        if let Some(value) = value {
            self.str(name, value);
        }
    }

    fn opt_int(&mut self, name: &str, value: Option<i64>) {
        if let Some(value) = value {
            self.key(name);
            self.out.int(value);
        }
    }

    /// A field k8s-openapi writes only when set.
    fn opt<T>(&mut self, name: &str, value: &Option<T>, write: impl FnOnce(&mut Out, &T) -> Written) -> Written {
        match value {
            Some(value) => {
                self.key(name);
                write(self.out, value)
            }
            None => Ok(()),
        }
    }

    fn end(self) {
        self.out.buf.push(b'}');
    }
}

/// The first byte at or after `from` that a JSON string must escape (a control
/// character, `"` or `\`), found a word at a time as serde_json's reader finds them.
fn next_escape(bytes: &[u8], from: usize) -> Option<usize> {
    const ONES: u64 = u64::MAX / 255;
    let mut at = from;
    while bytes.len() - at >= 8 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&bytes[at..at + 8]);
        let chars = u64::from_le_bytes(word);
        let control = chars.wrapping_sub(ONES * 0x20) & !chars;
        let quote = chars ^ (ONES * u64::from(b'"'));
        let quote = quote.wrapping_sub(ONES) & !quote;
        let backslash = chars ^ (ONES * u64::from(b'\\'));
        let backslash = backslash.wrapping_sub(ONES) & !backslash;
        // Only the lowest flagged byte is exact (a borrow can flag the ones above it).
        let flagged = (control | quote | backslash) & (ONES << 7);
        if flagged != 0 {
            return Some(at + (flagged.trailing_zeros() / 8) as usize);
        }
        at += 8;
    }
    bytes[at..].iter().position(|&b| b < 0x20 || b == b'"' || b == b'\\').map(|i| at + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn same_as_serde(status: &PodStatus) {
        assert_eq!(write_status(status).unwrap(), serde_json::to_string(status).unwrap());
    }

    /// Every field of every type the writer writes itself set, and those serde_json
    /// writes for it: the bytes are serde_json's.
    #[test]
    fn a_status_with_every_field_is_written_as_serde_json_writes_it() {
        let status: PodStatus = serde_json::from_value(serde_json::json!({
            "allocatedResources": {"cpu": "250m", "memory": "1Gi"},
            "conditions": [
                {"type": "Ready", "status": "True", "lastProbeTime": "2026-01-01T00:00:01Z",
                 "lastTransitionTime": "1999-12-31T23:59:59Z", "message": "m \"q\"", "observedGeneration": -4,
                 "reason": "R"},
                {"type": "Initialized", "status": "False"}
            ],
            "containerStatuses": [{
                "allocatedResources": {"cpu": "1"},
                "allocatedResourcesStatus": [{"name": "claim:x", "resources": [{"resourceID": "gpu-0", "health": "Healthy"}]}],
                "containerID": "containerd://abc", "image": "img:1", "imageID": "img@sha256:00", "name": "app",
                "ready": true, "restartCount": 2147483647, "started": false,
                "resources": {"limits": {"memory": "512Mi"}, "requests": {"cpu": "100m"}},
                "state": {"running": {"startedAt": "2026-11-30T09:12:44Z"}},
                "lastState": {"terminated": {"containerID": "containerd://old", "exitCode": -2147483648,
                    "finishedAt": "2026-11-30T09:12:40Z", "message": "line\nnext\ttab\u{1}\u{7f}é", "reason": "OOMKilled",
                    "signal": 9, "startedAt": "0001-01-01T00:00:00Z"},
                    "waiting": {"message": "w", "reason": "CrashLoopBackOff"}},
                "stopSignal": "SIGTERM",
                "user": {"linux": {"uid": 1000, "gid": 1000, "supplementalGroups": [1, 2]}},
                "volumeMounts": [{"name": "v", "mountPath": "/m", "readOnly": true, "recursiveReadOnly": "Enabled"}]
            }],
            "ephemeralContainerStatuses": [{"name": "debug", "image": "", "imageID": "", "ready": false, "restartCount": 0,
                "state": {"waiting": {}}}],
            "extendedResourceClaimStatus": {"resourceClaimName": "c", "requestMappings": [{"containerName": "app", "resourceName": "r", "requestName": "q"}]},
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
            "initContainerStatuses": [{"name": "init", "image": "i", "imageID": "i@x", "ready": true, "restartCount": 0,
                "state": {"terminated": {"exitCode": 0}}}],
            "message": "\\ back \"slash\"", "nominatedNodeName": "n", "observedGeneration": 9223372036854775807i64,
            "phase": "Running", "podIP": "10.244.0.1", "podIPs": [], "qosClass": "Burstable", "reason": "r",
            "resize": "InProgress",
            "resourceClaimStatuses": [{"name": "c", "resourceClaimName": "rc"}],
            "resources": {"limits": {"cpu": "2"}},
            "startTime": "9999-12-30T20:59:59Z"
        }))
        .unwrap();
        same_as_serde(&status);
        same_as_serde(&PodStatus::default());
        let empty_lists =
            PodStatus { conditions: Some(vec![]), container_statuses: Some(vec![]), ..PodStatus::default() };
        same_as_serde(&empty_lists);
    }

    /// Every byte a string can hold, at every place in a word, escaped as serde_json
    /// escapes it; and strings longer than a word, with and without escapes.
    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut texts: Vec<String> = (0u8..0x80).map(|b| char::from(b).to_string()).collect();
        texts
            .extend(["é", "日本", "😀", "", "plain text longer than a word", "\u{7f}\u{80}\u{ffff}"].map(String::from));
        for b in 0u8..0x80 {
            for at in 0..17 {
                let mut text = "x".repeat(17);
                text.replace_range(at..at + 1, &char::from(b).to_string());
                texts.push(text);
            }
        }
        texts.push("\"\\\u{0}\u{1f}".repeat(9));
        for text in texts {
            let mut out = Out { buf: Vec::new() };
            out.str(&text);
            assert_eq!(String::from_utf8(out.buf).unwrap(), serde_json::to_string(&text).unwrap(), "{text:?}");
        }
    }

    /// Times across jiff's whole range, the edges and the years jiff writes its own
    /// way (before year 0) included, as k8s-openapi writes them.
    #[test]
    fn times_are_written_as_k8s_openapi_writes_them() {
        use k8s_openapi::jiff::Timestamp;
        let (min, max) = (Timestamp::MIN.as_second(), Timestamp::MAX.as_second());
        let mut seconds = vec![min, max, 0, -1, 1, -62_167_219_200, -62_167_219_201, 253_402_300_799, 253_402_300_800];
        // A walk over the range with a step prime to days and leap cycles.
        let mut s = min;
        while s < max {
            seconds.push(s);
            s += 7_919_999_777;
        }
        for s in seconds {
            for nanos in [0, 999_999_999] {
                let Ok(ts) = Timestamp::new(s, if s == max { 0 } else { nanos }) else { continue };
                let time = Time(ts);
                let mut out = Out { buf: Vec::new() };
                out.time(&time).unwrap();
                assert_eq!(String::from_utf8(out.buf).unwrap(), serde_json::to_string(&time).unwrap(), "{ts}");
            }
        }
    }

    #[test]
    fn integers_are_written_as_serde_json_writes_them() {
        for n in [0, 1, -1, 9, 10, -10, 1234567890, i64::MAX, i64::MIN] {
            let mut out = Out { buf: Vec::new() };
            out.int(n);
            assert_eq!(String::from_utf8(out.buf).unwrap(), n.to_string());
        }
    }
}
