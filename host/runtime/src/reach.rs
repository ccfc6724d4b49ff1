//! The rule every API call a plugin asks for is held to before the host makes it, on
//! every path that runs a plugin (a 0.1.x plugin's `api-server` imports, a 0.2.0
//! plugin's sync steps), guarded world or not:
//!
//! - **reach**: the call names a pod whose status the host handed the plugin
//!   ([`HandedPods`]); a write or a delete is pinned to that pod's UID: a UID
//!   precondition must name it (or, for a static pod, its mirror pod: upstream writes a
//!   static pod's status to its mirror), and a call that carries none gets the pod's
//!   API UID from the host, so a pod recreated under the same name is never written by
//!   the old one's sync;
//! - **content**: the phase a status write sets is one the host handed for the pod, or
//!   `Failed` once the host terminated it, or the phase the API server's copy has
//!   already ([`check_phase`]; docs/sandbox.md has the rule field by field).
//!
//! A breach is the plugin's fault, not an answer it gets: nothing reaches the API
//! server, and the instance is not entered again (`FaultKind::ForeignUid` for reach,
//! `FaultKind::Content` for content: see [`Broken`]). An honest plugin never breaches
//! either: it calls only on the pods it caches, with the UID it read, and writes what
//! it cached. This module knows neither the imports nor the plugin, which both hold
//! their calls to it.

use std::borrow::Cow;

use podstatus_backends::{ApiServer, PodManager};
use serde::Deserialize;
use serde_json::value::RawValue;

use crate::handed::HandedPods;
use crate::shown::shown;

/// The UID precondition a write or delete of the handed pod `uid` goes out with:
/// `Ok(None)` keeps the plugin's (`given`, which names that pod), `Ok(Some(uid))` is
/// the one the host adds when the plugin gave none, `Err` says why `given` names
/// another pod.
pub(crate) fn pin(pods: &PodManager, uid: &str, given: Option<&str>) -> Result<Option<String>, String> {
    match given.filter(|given| !given.is_empty()) {
        None => Ok(Some(api_uid(pods, uid))),
        Some(given) if given == uid || pods.translate_pod_uid(given) == uid => Ok(None),
        Some(given) => Err(format!(
            "its UID precondition {:?} is not pod {:?} (nor its mirror pod), whose status the host handed it",
            shown(given),
            shown(uid)
        )),
    }
}

/// The UID of the API server's copy of the handed pod `uid`: its mirror pod's for a
/// static pod that has one, else its own.
pub(crate) fn api_uid(pods: &PodManager, uid: &str) -> String {
    pods.get_any(uid)
        .and_then(|pod| pods.get_mirror_of(&pod))
        .and_then(|mirror| mirror.uid().map(str::to_owned))
        .unwrap_or_else(|| uid.to_owned())
}

/// Checks the phase a status write of the handed pod `uid` (whose API copy is
/// `api_uid`) sets, `None` when it leaves it: a phase the host handed for the pod or
/// `Failed` once it terminated it ([`HandedPods::phase_allowed`]), or the phase the API
/// server's copy has now (upstream's `mergePodStatus` keeps it while a container may
/// still run): as the pod manager follows it, or as the call's own sync read it
/// (`read`, asked last). `of_request`: the write is the sync of a request the host
/// queued, which may write what was handed before the pod was last dropped.
pub(crate) fn check_phase(
    record: &HandedPods,
    pods: &PodManager,
    uid: &str,
    api_uid: &str,
    written: Option<&str>,
    of_request: bool,
    read: impl FnOnce() -> Option<String>,
) -> Result<(), String> {
    let Some(phase) = written else { return Ok(()) };
    if record.phase_allowed(uid, phase, of_request) {
        return Ok(());
    }
    let followed =
        pods.get_any(api_uid).map(|pod| pod.field(podstatus_backends::PodField::Phase).unwrap_or_default().to_owned());
    if followed.as_deref() == Some(phase) || read().as_deref() == Some(phase) {
        return Ok(());
    }
    Err(format!(
        "it sets phase {:?} on pod {:?}, which no status the host handed for it carries (nor a termination, nor the \
         API server's copy)",
        shown(phase),
        shown(uid)
    ))
}

/// The phase a status update sets (`""`: it has none, which clears it). The plugin's
/// JSON: read as serde reads it (escapes decoded), and a status that does not read as
/// an object with at most one `phase` is refused (the API server would take the last
/// of several).
pub(crate) fn update_phase(status: &str) -> Result<Cow<'_, str>, String> {
    #[derive(Deserialize)]
    struct Status<'a> {
        #[serde(default, borrow)]
        phase: Option<Cow<'a, str>>,
    }
    an_object(status).map_err(|e| format!("its status cannot be read: {e}"))?;
    let status: Status<'_> = serde_json::from_str(status).map_err(|e| format!("its status cannot be read: {e}"))?;
    Ok(status.phase.unwrap_or_default())
}

/// serde reads a struct from a JSON array too (its fields in order), where the API
/// server takes only an object: anything else is refused before it is read.
fn an_object(text: &str) -> Result<(), &'static str> {
    match text.trim_start().starts_with('{') {
        true => Ok(()),
        false => Err("not a JSON object"),
    }
}

/// The phase a status patch sets: `None` leaves it, `""` clears it (`"phase": null`, a
/// `status` of null, or a `$patch` or `$retainKeys` directive in `status`, each of
/// which may drop it). Read as [`update_phase`] reads a status.
pub(crate) fn patch_phase(patch: &str) -> Result<Option<Cow<'_, str>>, String> {
    // `present`: a field given as null is `Some("null")`, not the `None` of a field
    // left out (serde reads a null into an `Option` as `None`).
    #[derive(Deserialize)]
    struct Patch<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        status: Option<&'a RawValue>,
    }
    #[derive(Deserialize)]
    struct Status<'a> {
        #[serde(default, borrow, deserialize_with = "present")]
        phase: Option<&'a RawValue>,
        #[serde(default, borrow, rename = "$patch")]
        directive: Option<&'a RawValue>,
        #[serde(default, borrow, rename = "$retainKeys")]
        retain_keys: Option<&'a RawValue>,
    }
    let unreadable = |e: serde_json::Error| format!("its patch cannot be read: {e}");
    let not_an_object = |e: &str| format!("its patch cannot be read: {e}");
    an_object(patch).map_err(not_an_object)?;
    let patch: Patch<'_> = serde_json::from_str(patch).map_err(unreadable)?;
    let Some(status) = patch.status else { return Ok(None) };
    if status.get() == "null" {
        return Ok(Some(Cow::Borrowed("")));
    }
    an_object(status.get()).map_err(not_an_object)?;
    let status: Status<'_> = serde_json::from_str(status.get()).map_err(unreadable)?;
    match status.phase {
        Some(phase) if phase.get() == "null" => Ok(Some(Cow::Borrowed(""))),
        Some(phase) => serde_json::from_str::<Cow<'_, str>>(phase.get()).map(Some).map_err(unreadable),
        None if status.directive.is_some() || status.retain_keys.is_some() => Ok(Some(Cow::Borrowed(""))),
        None => Ok(None),
    }
}

/// Holds what a status write of `namespace/name` (UID `api_uid`) claims to what the
/// host handed for the pod, where the world's API server holds that rule (the reach
/// guard: [`ApiServer::judge_status_write`], which reads the claims: docs/sandbox.md):
/// `Err` names the first claim beyond it. `access` is the write: an update's status,
/// or a patch, whose `status` is what it writes (a patch without one claims nothing).
pub(crate) fn check_claims(
    api: &dyn ApiServer,
    namespace: &str,
    name: &str,
    api_uid: &str,
    of_request: bool,
    access: Access<'_>,
) -> Result<(), String> {
    #[derive(Deserialize)]
    struct Patch<'a> {
        #[serde(default, borrow)]
        status: Option<&'a RawValue>,
    }
    // Read only by a server that holds the rule.
    let status = || match access {
        Access::Update(status) => Some(status.to_owned()),
        Access::Patch(patch) => match serde_json::from_str::<Patch<'_>>(patch) {
            Ok(Patch { status: Some(status) }) if status.get().starts_with('{') => Some(status.get().to_owned()),
            // Read already by `patch_phase`, which refuses what does not read.
            _ => None,
        },
        Access::Read | Access::Delete => None,
    };
    api.judge_status_write(namespace, name, api_uid, of_request, &status).unwrap_or(Ok(()))
}

/// A field that is there, whatever its value (null included).
fn present<'de: 'a, 'a, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<&'a RawValue>, D::Error> {
    <&'a RawValue>::deserialize(deserializer).map(Some)
}

/// The phase of a pod the API server answered (JSON the host wrote), for
/// [`check_phase`]'s `read`.
pub(crate) fn reply_phase(pod: &str) -> Option<String> {
    Some(crate::handed::pod_phase(pod)).filter(|_| pod.trim_start().starts_with('{'))
}

/// What a 0.1.x plugin's `api-server` import asks to do with its pod.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Access<'a> {
    /// `get-pod`.
    Read,
    /// `update-pod-status` with this status.
    Update(&'a str),
    /// `patch-pod-status` with this patch.
    Patch(&'a str),
    /// `delete-pod`.
    Delete,
}

/// The handed pod an import's call reaches, and the UID precondition the host adds.
#[derive(Debug)]
pub(crate) struct Reached {
    /// The pod's UID, as the host handed it.
    pub uid: Box<str>,
    /// The UID precondition the call goes out with when it carries none.
    pub pinned: Option<String>,
}

/// Which rule a call broke, and how: the fault's message.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Broken {
    /// It reached a pod the host did not hand (`FaultKind::ForeignUid`).
    Reach(String),
    /// It wrote what the host did not hand (`FaultKind::Content`).
    Content(String),
}

/// Holds a 0.1.x plugin's call of `import` on `namespace/name` (UID precondition
/// `given`) to the rule: `handed` are the UIDs under that name the plugin may reach.
/// The pod it reaches, or the rule it breaks.
#[allow(clippy::too_many_arguments, reason = "one call's parts, each from another place")]
pub(crate) fn by_name(
    record: &HandedPods,
    pods: &PodManager,
    mut handed: Vec<Box<str>>,
    import: &str,
    namespace: &str,
    name: &str,
    given: Option<&str>,
    access: Access<'_>,
    of_request: bool,
) -> Result<Reached, Broken> {
    let pod = format_args!("pod {:?}/{:?}", shown(namespace), shown(name));
    if handed.is_empty() {
        return Err(Broken::Reach(format!("{import}: {pod} is not a pod whose status the host handed the plugin")));
    }
    if let Access::Read = access {
        return Ok(Reached { uid: handed.swap_remove(0), pinned: None });
    }
    let given = given.filter(|given| !given.is_empty());
    let chosen = match given {
        Some(given) => handed.iter().position(|uid| pin(pods, uid, Some(given)).is_ok()),
        None => (handed.len() == 1).then_some(0),
    };
    let Some(chosen) = chosen else {
        let why = match given {
            Some(given) => {
                format!("its UID precondition {:?} is not the pod the host handed under that name", shown(given))
            }
            None => "it carries no UID precondition, and the host handed several pods under that name".to_owned(),
        };
        return Err(Broken::Reach(format!("{import} of {pod}: {why}")));
    };
    let uid = handed.swap_remove(chosen);
    let pinned = pin(pods, &uid, given).unwrap_or(None);
    let written = match access {
        Access::Update(status) => update_phase(status).map(Some),
        Access::Patch(patch) => patch_phase(patch),
        Access::Read | Access::Delete => Ok(None),
    };
    let api_uid = pinned.as_deref().or(given).unwrap_or(&uid);
    written
        .and_then(|phase| check_phase(record, pods, &uid, api_uid, phase.as_deref(), of_request, || None))
        .map_err(|why| Broken::Content(format!("{import} of {pod}: {why}")))?;
    Ok(Reached { uid, pinned })
}

/// The handed pods under a name a read found `found` (a pod's UID) under, that the
/// read shows gone: not `found`, nor the static pod of the mirror pod `found` (what
/// upstream's `syncPod` calls recreated, `translatedUID != uid`).
pub(crate) fn recreated(pods: &PodManager, handed: &[Box<str>], found: &str) -> Vec<Box<str>> {
    let translated = pods.translate_pod_uid(found);
    if translated.is_empty() {
        return Vec::new();
    }
    handed.iter().filter(|uid| ***uid != *found && ***uid != *translated).cloned().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_phase_a_write_sets_is_read_as_the_api_server_reads_it() {
        assert_eq!(update_phase(r#"{"phase":"Failed"}"#).unwrap(), "Failed");
        assert_eq!(update_phase(r#"{"ph\u0061se":"Failed"}"#).unwrap(), "Failed", "escapes decoded");
        assert_eq!(update_phase(r#"{"podIP":"10.0.0.1"}"#).unwrap(), "");
        assert!(update_phase(r#"{"phase":"Running","phase":"Failed"}"#).is_err(), "two phases");
        assert!(update_phase("[]").is_err());

        let phase = |patch: &str| patch_phase(patch).map(|p| p.map(Cow::into_owned));
        assert_eq!(phase(r#"{"status":{"phase":"Failed"}}"#), Ok(Some("Failed".into())));
        assert_eq!(phase(r#"{"status":{"podIP":"10.0.0.1"}}"#), Ok(None));
        assert_eq!(phase(r#"{"metadata":{"uid":"u"}}"#), Ok(None));
        assert_eq!(phase(r#"{"status":{"phase":null}}"#), Ok(Some(String::new())));
        assert_eq!(phase(r#"{"status":null}"#), Ok(Some(String::new())));
        assert_eq!(phase(r#"{"status":{"$patch":"replace","podIP":"x"}}"#), Ok(Some(String::new())));
        assert_eq!(phase(r#"{"status":{"$retainKeys":["podIP"]}}"#), Ok(Some(String::new())));
        assert!(phase(r#"{"status":{"phase":"Running","phase":"Failed"}}"#).is_err());
        assert!(phase(r#"{"status":{"phase":7}}"#).is_err());
        assert!(phase(r#"[{"phase":"Failed"}]"#).is_err(), "a patch read as an array");
        assert!(phase(r#"{"status":["Failed"]}"#).is_err(), "a status read as an array");
    }

    #[test]
    fn a_write_is_pinned_to_the_handed_pod() {
        let pods = PodManager::new();
        let pod = |uid: &str, annotations: serde_json::Value| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"uid": uid, "name": "web", "namespace": "ns", "annotations": annotations},
                "spec": {"nodeName": "n"}
            }))
            .unwrap()
        };
        pods.add_pod(pod("s1", serde_json::json!({"kubernetes.io/config.source": "file"})));
        pods.add_pod(pod(
            "m1",
            serde_json::json!({"kubernetes.io/config.source": "file", "kubernetes.io/config.mirror": "h"}),
        ));
        assert_eq!(pin(&pods, "s1", None), Ok(Some("m1".into())), "a static pod's API copy is its mirror pod");
        assert_eq!(pin(&pods, "s1", Some("m1")), Ok(None));
        assert_eq!(pin(&pods, "s1", Some("s1")), Ok(None));
        assert_eq!(pin(&pods, "u1", Some("")), Ok(Some("u1".into())));
        let other = pin(&pods, "u1", Some("u2")).unwrap_err();
        assert!(other.contains("\"u2\" is not pod \"u1\""), "{other}");
    }
}
