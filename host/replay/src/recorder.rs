//! An [`ApiServer`] that records every call and fails calls on command (the trace's
//! `fail` steps), in front of the in-memory store (or, in a replay with `--node`, in
//! front of the reach guard in front of it: the calls recorded are the plugin's as it
//! made them, refusals included).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use k8s_openapi::api::core::v1::Pod;

use crate::report::Call;
use crate::trace::{FailError, FailVerb};
use podstatus_backends::{ApiError, ApiServer, DeleteOptions, Result, StatusPatch, StatusUpdate};

/// Records calls and injects failures.
pub struct RecordingApiServer {
    inner: Arc<dyn ApiServer>,
    step: AtomicUsize,
    /// The pod whose held sync makes the calls now (see [`Call::sync`]).
    sync: Mutex<Option<String>>,
    state: Mutex<RecorderState>,
}

#[derive(Default)]
struct RecorderState {
    /// Armed failure rules, earliest first.
    rules: VecDeque<Rule>,
    calls: Vec<Call>,
}

struct Rule {
    verb: FailVerb,
    error: FailError,
    remaining: u64,
}

impl RecordingApiServer {
    /// A recorder in front of `inner`.
    pub fn new(inner: Arc<dyn ApiServer>) -> Self {
        RecordingApiServer {
            inner,
            step: AtomicUsize::new(0),
            sync: Mutex::new(None),
            state: Mutex::new(RecorderState::default()),
        }
    }

    fn state(&self) -> MutexGuard<'_, RecorderState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls from now on belong to `step`.
    pub fn set_step(&self, step: usize) {
        self.step.store(step, Ordering::SeqCst);
    }

    /// Calls from now on are made by the held sync of pod `uid` (`None`: by no held
    /// sync).
    pub fn set_sync(&self, uid: Option<&str>) {
        *self.sync.lock().unwrap_or_else(|p| p.into_inner()) = uid.map(str::to_string);
    }

    /// Arms a rule: the next `times` calls of `verb` fail with `error`.
    pub fn arm(&self, verb: FailVerb, error: FailError, times: u64) {
        if times > 0 {
            self.state().rules.push_back(Rule { verb, error, remaining: times });
        }
    }

    /// Every call so far.
    pub fn take_calls(&self) -> Vec<Call> {
        std::mem::take(&mut self.state().calls)
    }

    /// Uses up the earliest rule matching `verb`, if any, returning its error.
    fn injected(&self, verb: FailVerb, namespace: &str, name: &str) -> Option<ApiError> {
        let mut state = self.state();
        let index = state.rules.iter().position(|r| r.verb == verb || r.verb == FailVerb::Any)?;
        let rule = &mut state.rules[index];
        rule.remaining -= 1;
        let error = rule.error;
        if rule.remaining == 0 {
            state.rules.remove(index);
        }
        Some(match error {
            FailError::NotFound => ApiError::NotFound { namespace: namespace.into(), name: name.into() },
            FailError::Conflict => ApiError::Conflict { message: "injected conflict".into() },
            FailError::Internal => ApiError::Internal { message: "injected internal error".into() },
            FailError::Unavailable => ApiError::Unavailable { message: "injected: service unavailable".into() },
        })
    }

    fn record<T>(&self, mut call: Call, result: &Result<T>) {
        if let Err(ApiError::Forbidden { message }) = result {
            call.refused = Some(message.clone());
        }
        self.state().calls.push(call);
    }

    /// Records a status write (`call`, noted before the write was handed on) once its
    /// result is known: its outcome and the UID of the object written.
    fn record_status_write(&self, mut call: Call, result: Result<Arc<Pod>>) -> Result<Arc<Pod>> {
        call.outcome = outcome(&result);
        call.subresource = Some("status");
        call.target_uid = Some(result.as_ref().ok().and_then(|pod| pod.metadata.uid.clone()));
        self.record(call, &result);
        result
    }

    fn call(&self, verb: &'static str, namespace: &str, name: &str, outcome: &'static str) -> Call {
        Call {
            step: self.step.load(Ordering::SeqCst),
            verb,
            subresource: None,
            namespace: namespace.into(),
            name: name.into(),
            target_uid: None,
            precondition_uid: None,
            grace_period_seconds: None,
            outcome,
            refused: None,
            sync: self.sync.lock().unwrap_or_else(|p| p.into_inner()).clone(),
        }
    }
}

fn outcome<T>(result: &Result<T>) -> &'static str {
    match result {
        Ok(_) => "ok",
        Err(ApiError::NotFound { .. }) => "not-found",
        Err(e) if e.code() == 409 => "conflict",
        // A refusal of the host's guard is no outcome the trace format knows apart.
        Err(ApiError::Forbidden { .. }) => "error",
        Err(_) => "error",
    }
}

impl ApiServer for RecordingApiServer {
    fn get_pod(&self, namespace: &str, name: &str) -> Result<Arc<Pod>> {
        let result = match self.injected(FailVerb::Get, namespace, name) {
            Some(e) => Err(e),
            None => self.inner.get_pod(namespace, name),
        };
        self.record(self.call("get", namespace, name, outcome(&result)), &result);
        result
    }

    fn judge_status_write(
        &self,
        namespace: &str,
        name: &str,
        uid: &str,
        of_request: bool,
        status: &dyn Fn() -> Option<String>,
    ) -> Option<Result<(), String>> {
        self.inner.judge_status_write(namespace, name, uid, of_request, status)
    }

    fn update_pod_status(&self, update: StatusUpdate) -> Result<Arc<Pod>> {
        // The call is noted before the update is handed on; its outcome once known.
        let call = self.call("update", &update.namespace, &update.name, "ok");
        let result = match self.injected(FailVerb::Write, &update.namespace, &update.name) {
            Some(e) => Err(e),
            None => self.inner.update_pod_status(update),
        };
        self.record_status_write(call, result)
    }

    fn patch_pod_status(&self, patch: StatusPatch) -> Result<Arc<Pod>> {
        let mut call = self.call("patch", &patch.namespace, &patch.name, "ok");
        // The UID precondition travels beside the patch or inside it (metadata.uid).
        let inside = patch.patch.pointer("/metadata/uid").and_then(serde_json::Value::as_str).map(str::to_string);
        call.precondition_uid = Some(patch.uid_precondition.clone().or(inside));
        let result = match self.injected(FailVerb::Write, &patch.namespace, &patch.name) {
            Some(e) => Err(e),
            None => self.inner.patch_pod_status(patch),
        };
        self.record_status_write(call, result)
    }

    fn delete_pod(&self, namespace: &str, name: &str, options: &DeleteOptions) -> Result<Arc<Pod>> {
        let result = match self.injected(FailVerb::Delete, namespace, name) {
            Some(e) => Err(e),
            None => self.inner.delete_pod(namespace, name, options),
        };
        let mut call = self.call("delete", namespace, name, outcome(&result));
        call.precondition_uid = Some(options.uid_precondition.clone());
        call.grace_period_seconds = Some(options.grace_period_seconds);
        self.record(call, &result);
        result
    }
}
