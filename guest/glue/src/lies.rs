//! Lies on demand, compiled in only with the `lies` feature (the host's tests of swaps
//! and recoveries build that variant; the plugin users run has none of this): the
//! state this plugin hands over (`save-state`, `save-state-changes`) disagrees with
//! what it accepted, while every other answer stays honest.
//!
//! The lie is picked by the name of the pod a status belongs to (the state entries
//! carry it): `omit-…` leaves the pod's status out, `alter-…` hands it over as
//! `Failed`, `invent-…` adds a status of a pod nobody handed over ([`INVENTED_UID`]).
//! A name with `-in-state-` lies only in `save-state`, one with `-in-changes-` only in
//! `save-state-changes`; any other lies in both. A change set lies about every lying
//! pod the plugin has seen, changed or not, so that every change set a host takes
//! carries the lie.

use std::cell::RefCell;
use std::collections::BTreeMap;

use serde_json::Value;

/// The UID of the status an `invent-…` pod makes up.
pub const INVENTED_UID: &str = "uid-invented-by-the-plugin";

thread_local! {
    /// Lying pods seen in an honest document: UID -> its last honest status entry.
    static SEEN: RefCell<BTreeMap<String, Value>> = const { RefCell::new(BTreeMap::new()) };
}

#[derive(Clone, Copy, PartialEq)]
enum Channel {
    State,
    Changes,
}

/// The lie a pod's name asks for, wherever it is told.
fn kind(name: &str) -> Option<&'static str> {
    ["omit-", "alter-", "invent-"].into_iter().find(|kind| name.starts_with(kind))
}

/// The lie a pod's name asks for in `channel`.
fn lie(name: &str, channel: Channel) -> Option<&'static str> {
    let kind = kind(name)?;
    let only = if name.contains("-in-state-") {
        Some(Channel::State)
    } else if name.contains("-in-changes-") {
        Some(Channel::Changes)
    } else {
        None
    };
    only.is_none_or(|only| only == channel).then_some(kind)
}

fn name_of(entry: &Value) -> &str {
    entry.get("podName").and_then(Value::as_str).unwrap_or_default()
}

/// Remembers the lying pods among `statuses` (null entries: removed).
fn learn(statuses: &serde_json::Map<String, Value>) {
    SEEN.with(|seen| {
        let mut seen = seen.borrow_mut();
        for (uid, entry) in statuses {
            if entry.is_null() {
                seen.remove(uid);
            } else if kind(name_of(entry)).is_some() {
                seen.insert(uid.clone(), entry.clone());
            }
        }
    });
}

/// Tells the lies of `channel` into `statuses`: a full document's statuses, or a
/// change set's (where a left-out status is a removed one).
fn tell(statuses: &mut serde_json::Map<String, Value>, channel: Channel) {
    let seen = SEEN.with(|seen| seen.borrow().clone());
    for (uid, honest) in seen {
        match lie(name_of(&honest), channel) {
            Some("omit-") if channel == Channel::State => {
                statuses.remove(&uid);
            }
            Some("omit-") => {
                statuses.insert(uid, Value::Null);
            }
            Some("alter-") => {
                let mut altered = honest;
                altered["status"]["phase"] = "Failed".into();
                statuses.insert(uid, altered);
            }
            Some(_) => {
                let invented = serde_json::json!({"version": 1, "podName": "invented", "podNamespace": "default",
                    "status": {"phase": "Running"}});
                statuses.insert(INVENTED_UID.into(), invented);
            }
            None => {}
        }
    }
}

/// `save-state`'s answer, with the lies told.
pub fn state(document: String) -> String {
    told(document, "/statuses", Channel::State)
}

/// `save-state-changes`' answer, with the lies told.
pub fn changes(document: String) -> String {
    told(document, "/patch/statuses", Channel::Changes)
}

/// `document` with the lies of `channel` told into its statuses at `pointer`; as it is
/// when it has none there.
fn told(document: String, pointer: &str, channel: Channel) -> String {
    let Ok(mut doc) = serde_json::from_str::<Value>(&document) else { return document };
    let Some(statuses) = doc.pointer_mut(pointer).and_then(Value::as_object_mut) else { return document };
    learn(statuses);
    tell(statuses, channel);
    doc.to_string()
}
