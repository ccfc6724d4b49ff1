//! The JSON of the statuses cached last, serialised once for everything that asks.
//!
//! A changed status is asked for as JSON two or three times right after the update
//! that cached it: the supervisor's change set, the host's record of accepted statuses
//! (`get-pod-status`), and a sync soon after. Each used to serialise it again (and the
//! change set deep-copied it first). The memo keeps the text of the few statuses cached
//! last, each held against its cached version by a weak reference to that very
//! allocation: any later update of the pod replaces the allocation, so a stale text is
//! never served. Bounded, so it costs a few statuses' text, not a second copy of the
//! cache.

use std::collections::VecDeque;
use std::sync::{Arc, Weak};

use serde_json::value::RawValue;

use crate::error::{ManagerError, Result};
use crate::status::VersionedStatus;

/// How many statuses' text the memo keeps: the update, its change set and its record
/// ask within one call or two; a pass or batch asks of many, each once.
const KEPT: usize = 16;

/// The text of the statuses cached last.
#[derive(Debug, Default)]
pub(crate) struct StatusJson {
    kept: VecDeque<(Weak<VersionedStatus>, Arc<RawValue>)>,
}

impl StatusJson {
    /// The JSON of `status`'s PodStatus, serialised now unless kept.
    pub(crate) fn of(&mut self, status: &Arc<VersionedStatus>) -> Result<Arc<RawValue>> {
        if let Some((_, text)) = self.kept.iter().find(|(held, _)| std::ptr::eq(held.as_ptr(), Arc::as_ptr(status))) {
            return Ok(Arc::clone(text));
        }
        let text =
            podstatus_core::write_status(&status.status).map_err(|e| ManagerError::InvalidStatus(e.to_string()))?;
        // SAFETY: the writer writes one JSON value, serde_json's own bytes for it (its
        // tests hold it to them), without whitespace around it. Checked in debug builds.
        let text: Arc<RawValue> = unsafe { RawValue::from_string_unchecked(text) }.into();
        // Entries whose status is gone (replaced or dropped) go first, then the oldest.
        self.kept.retain(|(held, _)| held.strong_count() > 0);
        if self.kept.len() >= KEPT {
            self.kept.pop_front();
        }
        self.kept.push_back((Arc::downgrade(status), Arc::clone(&text)));
        Ok(text)
    }

    /// The text of `status` if it is kept, found by its allocation (a sync holds the
    /// status it writes, the very one an update cached and its change set wrote).
    pub(crate) fn kept(&self, status: &VersionedStatus) -> Option<Arc<RawValue>> {
        let wanted: *const VersionedStatus = status;
        self.kept.iter().find(|(held, _)| std::ptr::eq(held.as_ptr(), wanted)).map(|(_, text)| Arc::clone(text))
    }

    /// Forgets every text (the state was replaced).
    pub(crate) fn clear(&mut self) {
        self.kept.clear();
    }
}

#[cfg(test)]
mod tests {
    use k8s_openapi::api::core::v1::PodStatus;

    use super::*;

    fn status(phase: &str) -> Arc<VersionedStatus> {
        VersionedStatus::for_tests(PodStatus { phase: Some(phase.into()), ..PodStatus::default() }, 1)
    }

    #[test]
    fn the_text_is_the_serialised_status_and_follows_the_allocation() {
        let mut memo = StatusJson::default();
        let running = status("Running");
        let first = memo.of(&running).unwrap();
        assert_eq!(first.get(), serde_json::to_string(&running.status).unwrap());
        assert!(Arc::ptr_eq(&first, &memo.of(&running).unwrap()), "kept, not serialised again");
        // An equal-looking status of another allocation is another version.
        let failed = status("Failed");
        assert_eq!(memo.of(&failed).unwrap().get(), r#"{"phase":"Failed"}"#);
    }

    /// A sync finds the text by the status it holds: that allocation's, never an
    /// equal-looking one's, and nothing before the text was written.
    #[test]
    fn a_kept_text_is_found_by_its_status() {
        let mut memo = StatusJson::default();
        let running = status("Running");
        assert!(memo.kept(&running).is_none(), "not written yet");
        let text = memo.of(&running).unwrap();
        assert!(Arc::ptr_eq(&memo.kept(&running).unwrap(), &text));
        assert!(memo.kept(&status("Running")).is_none(), "another allocation");
    }

    #[test]
    fn it_keeps_a_few_and_drops_the_gone_first() {
        let mut memo = StatusJson::default();
        let statuses: Vec<_> = (0..KEPT + 4).map(|i| status(&format!("P{i}"))).collect();
        for s in &statuses {
            memo.of(s).unwrap();
        }
        assert_eq!(memo.kept.len(), KEPT);
        drop(statuses);
        memo.of(&status("New")).unwrap();
        assert_eq!(memo.kept.len(), 1, "the texts of statuses gone were dropped");
    }
}
