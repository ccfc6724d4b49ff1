//! What a pod status says that a status write may carry only where the host said it
//! first, as *claims*: one field of one condition, of one container, or of the status
//! itself, with its value. The reach guard holds a write's claims to the claims of the
//! statuses the host handed for the pod ([`crate::HostView`]), and of the API server's
//! copy, which upstream's `mergePodStatus` keeps (docs/sandbox.md has the rule field by
//! field, with the upstream line that makes each value legal).
//!
//! A claim is what the honest logic copies from a status the host handed: a condition's
//! `status` (not its times, reason or message, which the logic generates; a patch's
//! entry without a status leaves it alone and claims nothing), and of each
//! container (`containerStatuses`, `initContainerStatuses`, `ephemeralContainerStatuses`)
//! its presence, `ready`, `started`, `restartCount`, `containerID`, `image`, `imageID`,
//! and the kind of its `state` and `lastState` (with a waiting state's reason, and a
//! terminated one's exit code and reason: a Job's pod failure policy reads them); and
//! the status's own `qosClass`, `reason` and `message`. Times are never claims: the
//! logic truncates them and sets transition times from the host's clock.
//!
//! The host's statuses and the plugin's writes are read by one reader, so a field reads
//! to the same claim on both sides whatever the JSON's order and spacing: an absent
//! `ready` and `restartCount` read as Go's zero values (`false`, `0`), as the API server
//! stores them. Entries a strategic merge patch deletes (`"$patch": "delete"`) write
//! nothing and claim nothing; other directives are not fields.

use std::borrow::Cow;
use std::fmt;

use serde::Deserialize;
use serde::de::IgnoredAny;
use xxhash_rust::xxh3::Xxh3;

/// A claim's digest, as the host view keeps the claims of what it handed.
pub type ClaimDigest = u64;

/// Characters of a claim's key or value shown in a refusal at most.
const SHOWN: usize = 64;

/// The state a container is left in by upstream's `TerminatePod` since 1.27 (exit code
/// 137, reason `ContainerStatusUnknown`), as [`Claim::value`] reads it.
pub const TERMINATED_UNKNOWN: &str = "terminated(137,ContainerStatusUnknown)";
/// The state the reference's `TerminatePod` leaves a container in
/// (`Terminated: &v1.ContainerStateTerminated{}`), as [`Claim::value`] reads it.
pub const TERMINATED_EMPTY: &str = "terminated(0,)";

/// The condition types whose status a readiness change or a terminal phase makes.
pub const READINESS_CONDITIONS: [&str; 2] = ["Ready", "ContainersReady"];

/// The container lists of a status, as their fields are named.
pub const CONTAINER_LISTS: [&str; 3] = ["containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"];

/// One field's value in a status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim<'a> {
    /// `conditions`, a container list ([`CONTAINER_LISTS`]), or a field of the status.
    pub field: &'static str,
    /// The condition's type or the container's name; empty for a field of the status.
    pub key: Cow<'a, str>,
    /// What of the condition or container: `status`, `ready`, ...; empty for the
    /// container's presence and for a field of the status.
    pub attribute: &'static str,
    /// The value, as text (`true`, `3`, `running`, ...).
    pub value: Cow<'a, str>,
    /// For a container's `ready` and `started`: the container's ID as the same entry
    /// gives it (the host's readiness and startup changes name a container by ID).
    /// Not part of the claim's digest.
    pub container_id: Cow<'a, str>,
}

impl Claim<'_> {
    /// Its digest: equal claims, and only they, digest alike (but for xxh3's collisions).
    pub fn digest(&self) -> ClaimDigest {
        let mut hasher = Xxh3::new();
        for part in [self.field, self.key.as_ref(), self.attribute, self.value.as_ref()] {
            hasher.update(&(part.len() as u64).to_le_bytes());
            hasher.update(part.as_bytes());
        }
        hasher.digest()
    }

    /// A condition's status.
    pub fn condition_status(type_: &str, status: &str) -> Claim<'static> {
        Claim {
            field: "conditions",
            key: Cow::Owned(type_.to_owned()),
            attribute: "status",
            value: Cow::Owned(status.to_owned()),
            container_id: Cow::Borrowed(""),
        }
    }

    /// A container's `ready` or `started` (`attribute`) as the host set it for the
    /// container of ID `container_id`, whatever its list and name.
    pub fn set_by_id(container_id: &str, attribute: &'static str, value: &str) -> Claim<'static> {
        Claim {
            field: "containerID",
            key: Cow::Owned(container_id.to_owned()),
            attribute,
            value: Cow::Owned(value.to_owned()),
            container_id: Cow::Borrowed(""),
        }
    }

    /// This claim (a container's `ready` or `started`) as the host's change of that
    /// container by ID would be: [`Claim::set_by_id`].
    pub fn as_set_by_id(&self) -> Option<Claim<'_>> {
        let settable = CONTAINER_LISTS.contains(&self.field) && matches!(self.attribute, "ready" | "started");
        (settable && !self.container_id.is_empty()).then(|| Claim {
            field: "containerID",
            key: Cow::Borrowed(&self.container_id),
            attribute: self.attribute,
            value: Cow::Borrowed(&self.value),
            container_id: Cow::Borrowed(""),
        })
    }

    /// Whether this is a container's state.
    pub fn is_container_state(&self) -> bool {
        CONTAINER_LISTS.contains(&self.field) && self.attribute == "state"
    }

    /// The claim that the container this claim is about is in its list.
    pub fn its_container(&self) -> Claim<'_> {
        Claim {
            field: self.field,
            key: Cow::Borrowed(&self.key),
            attribute: "",
            value: Cow::Borrowed(""),
            container_id: Cow::Borrowed(""),
        }
    }
}

impl fmt::Display for Claim<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (key, value) = (cut(&self.key), cut(&self.value));
        match (self.field, self.attribute) {
            ("conditions", attribute) => write!(f, "condition {key:?} with {attribute} {value:?}"),
            (list, "") if CONTAINER_LISTS.contains(&list) => write!(f, "an entry {key:?} in {list}"),
            (list, attribute) if CONTAINER_LISTS.contains(&list) => {
                write!(f, "{attribute} {value:?} of {key:?} in {list}")
            }
            (field, _) => write!(f, "{field} {value:?}"),
        }
    }
}

/// A plugin-chosen text as a refusal shows it: at most [`SHOWN`] characters.
fn cut(text: &str) -> Cow<'_, str> {
    match text.char_indices().nth(SHOWN) {
        Some((at, _)) => Cow::Owned(format!("{}...", &text[..at])),
        None => Cow::Borrowed(text),
    }
}

/// A status as far as it holds claims and IPs, borrowed from its JSON.
#[derive(Default, Deserialize)]
pub struct StatusClaims<'a> {
    #[serde(default, borrow)]
    phase: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    conditions: Option<Vec<ConditionText<'a>>>,
    #[serde(default, borrow, rename = "containerStatuses")]
    containers: Option<Vec<ContainerText<'a>>>,
    #[serde(default, borrow, rename = "initContainerStatuses")]
    init_containers: Option<Vec<ContainerText<'a>>>,
    #[serde(default, borrow, rename = "ephemeralContainerStatuses")]
    ephemeral_containers: Option<Vec<ContainerText<'a>>>,
    #[serde(default, borrow, rename = "qosClass")]
    qos_class: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    message: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "podIP")]
    pod_ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "hostIP")]
    host_ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "podIPs")]
    pod_ips: Option<Vec<IpEntry<'a>>>,
    #[serde(default, borrow, rename = "hostIPs")]
    host_ips: Option<Vec<IpEntry<'a>>>,
}

#[derive(Deserialize)]
struct ConditionText<'a> {
    #[serde(default, borrow, rename = "type")]
    type_: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    status: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "$patch")]
    directive: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct ContainerText<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default)]
    ready: Option<bool>,
    #[serde(default)]
    started: Option<bool>,
    #[serde(default, rename = "restartCount")]
    restart_count: Option<i64>,
    #[serde(default, borrow, rename = "containerID")]
    container_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    image: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "imageID")]
    image_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    state: Option<StateText<'a>>,
    #[serde(default, borrow, rename = "lastState")]
    last_state: Option<StateText<'a>>,
    #[serde(default, borrow, rename = "$patch")]
    directive: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct StateText<'a> {
    #[serde(default, borrow)]
    waiting: Option<WaitingText<'a>>,
    #[serde(default)]
    running: Option<IgnoredAny>,
    #[serde(default, borrow)]
    terminated: Option<TerminatedText<'a>>,
}

#[derive(Deserialize)]
struct WaitingText<'a> {
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct TerminatedText<'a> {
    #[serde(default, rename = "exitCode")]
    exit_code: Option<i64>,
    #[serde(default, borrow)]
    reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct IpEntry<'a> {
    #[serde(default, borrow)]
    ip: Option<Cow<'a, str>>,
    #[serde(default, borrow, rename = "$patch")]
    directive: Option<Cow<'a, str>>,
}

impl StateText<'_> {
    /// The state as a claim's value: each kind it holds, `+`-joined.
    fn value(&self) -> String {
        let mut kinds = Vec::new();
        if let Some(waiting) = &self.waiting {
            kinds.push(format!("waiting({})", waiting.reason.as_deref().unwrap_or("")));
        }
        if self.running.is_some() {
            kinds.push("running".to_owned());
        }
        if let Some(terminated) = &self.terminated {
            let reason = terminated.reason.as_deref().unwrap_or("");
            kinds.push(format!("terminated({},{reason})", terminated.exit_code.unwrap_or(0)));
        }
        kinds.join("+")
    }
}

/// Whether an entry of a patch deletes what it names.
fn deletes(directive: &Option<Cow<'_, str>>) -> bool {
    directive.as_deref() == Some("delete")
}

impl<'a> StatusClaims<'a> {
    /// Reads `json`, a status (or a patch's `status`); `Err` when it is not one JSON
    /// object a status could be (a field twice, a list where an object goes, ...).
    pub fn read(json: &'a str) -> Result<Self, String> {
        if !json.trim_start().starts_with('{') {
            return Err("a status is a JSON object".to_owned());
        }
        serde_json::from_str(json).map_err(|e| format!("it does not read as a pod status: {e}"))
    }

    /// The phase it has (`None`: none).
    pub fn phase(&self) -> Option<&str> {
        self.phase.as_deref()
    }

    /// The pod and host IPs it carries, non-empty, singles first.
    pub fn ips(&self) -> Vec<String> {
        let singles = [&self.pod_ip, &self.host_ip].into_iter().flatten();
        let lists = self.pod_ips.iter().flatten().chain(self.host_ips.iter().flatten());
        let listed = lists.filter(|entry| !deletes(&entry.directive)).filter_map(|entry| entry.ip.as_ref());
        singles.chain(listed).filter(|ip| !ip.is_empty()).map(|ip| ip.clone().into_owned()).collect()
    }

    /// Its claims, in the order of its fields.
    pub fn claims(&self) -> Vec<Claim<'_>> {
        let mut claims = Vec::new();
        // A patch's entry holds only what changed of its condition (the logic's two-way
        // merge of the entries): one without a status leaves the status alone.
        for condition in self.conditions.iter().flatten().filter(|c| !deletes(&c.directive)) {
            let Some(status) = condition.status.as_deref() else { continue };
            claims.push(Claim {
                field: "conditions",
                key: Cow::Borrowed(condition.type_.as_deref().unwrap_or("")),
                attribute: "status",
                value: Cow::Borrowed(status),
                container_id: Cow::Borrowed(""),
            });
        }
        let lists = [&self.containers, &self.init_containers, &self.ephemeral_containers];
        for (list, containers) in CONTAINER_LISTS.into_iter().zip(lists) {
            for container in containers.iter().flatten().filter(|c| !deletes(&c.directive)) {
                container.claims(list, &mut claims);
            }
        }
        let fields = [("qosClass", &self.qos_class), ("reason", &self.reason), ("message", &self.message)];
        for (field, value) in fields {
            if let Some(value) = value {
                let (key, container_id) = (Cow::Borrowed(""), Cow::Borrowed(""));
                claims.push(Claim { field, key, attribute: "", value: Cow::Borrowed(value), container_id });
            }
        }
        claims
    }
}

impl ContainerText<'_> {
    fn claims<'s>(&'s self, list: &'static str, claims: &mut Vec<Claim<'s>>) {
        let name = self.name.as_deref().unwrap_or("");
        let id = self.container_id.as_deref().unwrap_or("");
        let claim = |attribute: &'static str, value: Cow<'s, str>| Claim {
            field: list,
            key: Cow::Borrowed(name),
            attribute,
            value,
            container_id: Cow::Borrowed(if matches!(attribute, "ready" | "started") { id } else { "" }),
        };
        let text = |value: &'s Option<Cow<'s, str>>| Cow::Borrowed(value.as_deref().unwrap_or(""));
        claims.push(claim("", Cow::Borrowed("")));
        claims.push(claim("ready", Cow::Borrowed(bool_text(self.ready.unwrap_or(false)))));
        claims.push(claim("started", Cow::Borrowed(self.started.map_or("", bool_text))));
        claims.push(claim("restartCount", Cow::Owned(self.restart_count.unwrap_or(0).to_string())));
        claims.push(claim("containerID", text(&self.container_id)));
        claims.push(claim("image", text(&self.image)));
        claims.push(claim("imageID", text(&self.image_id)));
        claims.push(claim("state", Cow::Owned(self.state.as_ref().map(StateText::value).unwrap_or_default())));
        let last = self.last_state.as_ref().map(StateText::value).unwrap_or_default();
        claims.push(claim("lastState", Cow::Owned(last)));
    }
}

/// Whether `phase` is terminal: a pod does not leave it (`Succeeded`, `Failed`).
pub fn is_terminal(phase: &str) -> bool {
    matches!(phase, "Succeeded" | "Failed")
}

/// A boolean as a claim's value.
pub fn bool_text(value: bool) -> &'static str {
    if value { "true" } else { "false" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shown(json: &str) -> Vec<String> {
        StatusClaims::read(json).unwrap().claims().iter().map(ToString::to_string).collect()
    }

    #[test]
    fn a_status_reads_to_the_same_claims_whatever_its_order_and_spacing() {
        let a = r#"{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastTransitionTime":"x"}],
            "containerStatuses":[{"name":"app","ready":true,"restartCount":2,"image":"i","imageID":"d",
            "containerID":"c://1","started":true,"state":{"running":{"startedAt":"t"}},
            "lastState":{"terminated":{"exitCode":1,"reason":"Error"}}}],"qosClass":"Burstable"}"#;
        let b = r#"{ "qosClass" : "Burstable", "containerStatuses" : [ { "lastState": {"terminated": {"reason":
            "Error", "exitCode": 1, "finishedAt": "f"}}, "state": {"running": {}}, "started": true,
            "containerID": "c://1", "imageID": "d", "image": "i", "restartCount": 2, "ready": true,
            "name": "app" } ], "conditions": [ { "status": "True", "type": "Ready" } ], "phase": "Running" }"#;
        let (a, b) = (StatusClaims::read(a).unwrap(), StatusClaims::read(b).unwrap());
        let digests = |s: &StatusClaims<'_>| s.claims().iter().map(Claim::digest).collect::<Vec<_>>();
        assert_eq!(digests(&a), digests(&b));
        assert_eq!(a.phase(), Some("Running"));
        assert_eq!(
            shown(r#"{"containerStatuses":[{"name":"app","ready":true,"state":{"running":{}}}]}"#),
            [
                "an entry \"app\" in containerStatuses",
                "ready \"true\" of \"app\" in containerStatuses",
                "started \"\" of \"app\" in containerStatuses",
                "restartCount \"0\" of \"app\" in containerStatuses",
                "containerID \"\" of \"app\" in containerStatuses",
                "image \"\" of \"app\" in containerStatuses",
                "imageID \"\" of \"app\" in containerStatuses",
                "state \"running\" of \"app\" in containerStatuses",
                "lastState \"\" of \"app\" in containerStatuses",
            ]
        );
    }

    #[test]
    fn absent_fields_read_as_the_api_servers_zero_values() {
        let absent = StatusClaims::read(r#"{"containerStatuses":[{"name":"a"}]}"#).unwrap();
        let zero =
            StatusClaims::read(r#"{"containerStatuses":[{"name":"a","ready":false,"restartCount":0}]}"#).unwrap();
        assert_eq!(absent.claims(), zero.claims());
    }

    #[test]
    fn what_a_patch_deletes_claims_nothing_and_directives_are_no_fields() {
        let patch = r#"{"$setElementOrder/conditions":[{"type":"Ready"}],
            "conditions":[{"type":"Ready","status":"False"},{"type":"Gone","$patch":"delete"}],
            "podIPs":[{"ip":"10.0.0.9","$patch":"delete"}],"message":"m"}"#;
        assert_eq!(shown(patch), ["condition \"Ready\" with status \"False\"", "message \"m\""]);
        let times_only = r#"{"conditions":[{"type":"Ready","lastTransitionTime":"t"},{"type":"X","status":null}]}"#;
        assert!(shown(times_only).is_empty(), "an entry that leaves the status alone");
        assert!(StatusClaims::read(patch).unwrap().ips().is_empty());
    }

    #[test]
    fn what_does_not_read_as_one_status_is_refused() {
        assert!(StatusClaims::read("[]").is_err());
        assert!(StatusClaims::read(r#"{"reason":"a","reason":"b"}"#).is_err(), "a field twice");
        assert!(StatusClaims::read(r#"{"conditions":{"type":"Ready"}}"#).is_err());
        assert!(StatusClaims::read(r#"{"containerStatuses":[{"ready":"yes"}]}"#).is_err());
    }

    #[test]
    fn states_read_with_what_a_job_reads_of_them() {
        let state = |state: &str| {
            let json = format!(r#"{{"containerStatuses":[{{"name":"a","state":{state}}}]}}"#);
            StatusClaims::read(&json).unwrap().claims()[7].value.clone().into_owned()
        };
        assert_eq!(state(r#"{"waiting":{"reason":"CrashLoopBackOff"}}"#), "waiting(CrashLoopBackOff)");
        assert_eq!(state(r#"{"terminated":{"exitCode":137,"reason":"ContainerStatusUnknown"}}"#), TERMINATED_UNKNOWN);
        assert_eq!(state(r#"{"terminated":{}}"#), TERMINATED_EMPTY);
        assert_eq!(state(r#"{"running":null}"#), "");
        assert_eq!(state(r#"{"running":{},"terminated":{"exitCode":1}}"#), "running+terminated(1,)");
    }

    #[test]
    fn a_refusal_shows_at_most_64_characters_of_a_chosen_text() {
        let long = "x".repeat(1000);
        let json = format!(r#"{{"message":"{long}"}}"#);
        let shown = shown(&json);
        assert!(shown[0].len() < 100, "{}", shown[0]);
    }
}
