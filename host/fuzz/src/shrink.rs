//! Shrinking a failing trace to a small one that still fails the same way: delta
//! debugging over the steps, then dropping pods and containers nothing needs, then
//! simplifying statuses and pods field by field.
//!
//! Shrinking works on the trace document (JSON): every candidate is read back with the
//! replay's own parser, so an invalid candidate (a step naming a UID whose introduction
//! was removed) is simply rejected, and the result is always a file `podstatus replay`
//! accepts.

use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use crate::invariants::Violation;
use podstatus_replay::Trace;

/// How much work shrinking may do.
#[derive(Clone, Copy, Debug)]
pub struct ShrinkBudget {
    /// Candidate traces to run at most.
    pub max_runs: usize,
    /// Wall time at most.
    pub max_time: Duration,
}

impl Default for ShrinkBudget {
    fn default() -> Self {
        ShrinkBudget { max_runs: 5000, max_time: Duration::from_secs(120) }
    }
}

/// A shrunk trace.
#[derive(Debug)]
pub struct Shrunk {
    /// The trace document.
    pub doc: Value,
    /// The violation the shrunk trace gives.
    pub violation: Violation,
    /// Candidates tried.
    pub runs: usize,
}

/// Shrinks `doc`, which fails with `violation` under `check`, to a trace that still
/// fails `check` with the same invariant.
pub fn shrink(
    doc: &Value,
    violation: Violation,
    check: &mut dyn FnMut(&Trace) -> Option<Violation>,
    budget: ShrinkBudget,
) -> Shrunk {
    let mut s = Shrinker { best: doc.clone(), violation, check, runs: 0, budget, started: Instant::now() };
    loop {
        let before = s.best.clone();
        s.steps();
        s.pods();
        s.containers();
        s.simplify_steps();
        s.simplify_values();
        if s.best == before || s.exhausted() {
            break;
        }
    }
    Shrunk { doc: s.best, violation: s.violation, runs: s.runs }
}

struct Shrinker<'c> {
    best: Value,
    violation: Violation,
    check: &'c mut dyn FnMut(&Trace) -> Option<Violation>,
    runs: usize,
    budget: ShrinkBudget,
    started: Instant,
}

impl Shrinker<'_> {
    fn exhausted(&self) -> bool {
        self.runs >= self.budget.max_runs || self.started.elapsed() >= self.budget.max_time
    }

    /// Keeps `candidate` if it is valid and fails the same way.
    fn try_doc(&mut self, candidate: Value) -> bool {
        if self.exhausted() || candidate == self.best {
            return false;
        }
        let Ok(trace) = Trace::from_value(candidate.clone()) else { return false };
        self.runs += 1;
        match (self.check)(&trace) {
            Some(v) if v.same_kind(&self.violation) => {
                self.best = candidate;
                self.violation = v;
                true
            }
            _ => false,
        }
    }

    fn list(&self, key: &str) -> Vec<Value> {
        self.best.get(key).and_then(Value::as_array).cloned().unwrap_or_default()
    }

    fn with_list(&self, key: &str, list: Vec<Value>) -> Value {
        let mut doc = self.best.clone();
        doc[key] = Value::Array(list);
        doc
    }

    /// Delta debugging (ddmin) over the steps: remove chunks, halving their size until
    /// single steps.
    fn steps(&mut self) {
        let mut chunks = 2;
        loop {
            let steps = self.list("steps");
            if steps.is_empty() || self.exhausted() {
                return;
            }
            let n = chunks.min(steps.len());
            let size = steps.len().div_ceil(n);
            let mut removed = false;
            for start in (0..steps.len()).step_by(size) {
                let mut candidate = steps.clone();
                candidate.drain(start..(start + size).min(steps.len()));
                if self.try_doc(self.with_list("steps", candidate)) {
                    removed = true;
                    break;
                }
            }
            if removed {
                chunks = (chunks - 1).max(2);
            } else if size == 1 {
                return;
            } else {
                chunks = (chunks * 2).min(steps.len());
            }
        }
    }

    /// Drops pods of the starting world one at a time.
    fn pods(&mut self) {
        for key in ["apiserver", "pod_manager"] {
            let mut i = 0;
            while i < self.list(key).len() && !self.exhausted() {
                let mut pods = self.list(key);
                pods.remove(i);
                if !self.try_doc(self.with_list(key, pods)) {
                    i += 1;
                }
            }
        }
    }

    /// Drops a container from every copy of a pod (and from the statuses set for it).
    fn containers(&mut self) {
        let mut candidates = Vec::new();
        visit_pods(&self.best, &mut |pod| {
            let uid = pod.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or_default().to_string();
            for list in ["initContainers", "containers"] {
                for c in pod.pointer(&format!("/spec/{list}")).and_then(Value::as_array).into_iter().flatten() {
                    if let Some(name) = c.get("name").and_then(Value::as_str) {
                        let entry = (uid.clone(), list, name.to_string());
                        if !candidates.contains(&entry) {
                            candidates.push(entry);
                        }
                    }
                }
            }
        });
        for (uid, list, name) in candidates {
            let mut doc = self.best.clone();
            let mut emptied = false;
            visit_pods_mut(&mut doc, &mut |pod| {
                if pod.pointer("/metadata/uid").and_then(Value::as_str) != Some(uid.as_str()) {
                    return;
                }
                if let Some(Value::Array(containers)) = pod.pointer_mut(&format!("/spec/{list}")) {
                    containers.retain(|c| c.get("name").and_then(Value::as_str) != Some(name.as_str()));
                    emptied |= list == "containers" && containers.is_empty();
                }
            });
            if emptied {
                continue;
            }
            let status_list = if list == "containers" { "containerStatuses" } else { "initContainerStatuses" };
            for step in doc.get_mut("steps").and_then(Value::as_array_mut).into_iter().flatten() {
                if step.get("op").and_then(Value::as_str) != Some("set-pod-status")
                    || step_uid(step) != Some(uid.clone())
                {
                    continue;
                }
                if let Some(Value::Array(statuses)) = step.pointer_mut(&format!("/status/{status_list}")) {
                    statuses.retain(|c| c.get("name").and_then(Value::as_str) != Some(name.as_str()));
                }
            }
            self.try_doc(doc);
        }
    }

    /// Simpler steps: a pod named by UID instead of a whole object, faults that fire
    /// once, round clock steps.
    fn simplify_steps(&mut self) {
        for i in 0..self.list("steps").len() {
            let step = self.list("steps")[i].clone();
            let mut simpler = Vec::new();
            if let Some(pod) = step.get("pod").filter(|p| p.is_object())
                && matches!(step.get("op").and_then(Value::as_str), Some("set-pod-status" | "terminate-pod"))
                && let Some(uid) = pod.pointer("/metadata/uid")
            {
                let mut s = step.clone();
                s["pod"] = uid.clone();
                simpler.push(s);
            }
            if step.get("times").and_then(Value::as_u64).is_some_and(|t| t > 1) {
                let mut s = step.clone();
                s["times"] = 1.into();
                simpler.push(s);
            }
            if let Some(ms) = step.get("ms").and_then(Value::as_u64)
                && ms % 1000 != 0
            {
                let mut s = step.clone();
                s["ms"] = (ms / 1000 * 1000).into();
                simpler.push(s);
            }
            for s in simpler {
                let mut steps = self.list("steps");
                steps[i] = s;
                self.try_doc(self.with_list("steps", steps));
            }
        }
    }

    /// Removes, one at a time, every field and list element of the statuses and pods
    /// that the failure does not need, and shortens long strings.
    fn simplify_values(&mut self) {
        let mut roots: Vec<Vec<Seg>> = Vec::new();
        for key in ["apiserver", "pod_manager"] {
            for i in 0..self.list(key).len() {
                roots.push(vec![Seg::Key(key.into()), Seg::Index(i)]);
            }
        }
        for (i, step) in self.list("steps").iter().enumerate() {
            for field in ["status", "pod", "keep"] {
                if step.get(field).is_some_and(|v| v.is_object() || v.is_array()) {
                    roots.push(vec![Seg::Key("steps".into()), Seg::Index(i), Seg::Key(field.into())]);
                }
            }
        }
        for root in roots {
            let mut index = 0;
            loop {
                if self.exhausted() {
                    return;
                }
                let Some(value) = get(&self.best, &root) else { break };
                let paths = paths(value);
                let Some(path) = paths.get(index) else { break };
                let full: Vec<Seg> = root.iter().cloned().chain(path.iter().cloned()).collect();
                if is_protected(&self.best, &full) {
                    index += 1;
                    continue;
                }
                let mut candidate = self.best.clone();
                remove(&mut candidate, &full);
                if self.try_doc(candidate) {
                    continue;
                }
                // A long string that cannot go may still be shortened.
                if let Some(Value::String(text)) = get(&self.best, &full)
                    && text.chars().count() > 16
                {
                    let mut candidate = self.best.clone();
                    if let Some(slot) = get_mut(&mut candidate, &full) {
                        *slot = Value::String(text.chars().take(8).collect());
                    }
                    self.try_doc(candidate);
                }
                index += 1;
            }
        }
    }
}

/// The UID of the pod a step names (by UID or object).
fn step_uid(step: &Value) -> Option<String> {
    match step.get("pod")? {
        Value::String(uid) => Some(uid.clone()),
        pod => pod.pointer("/metadata/uid").and_then(Value::as_str).map(str::to_string),
    }
}

fn visit_pods(doc: &Value, f: &mut dyn FnMut(&Value)) {
    for key in ["apiserver", "pod_manager"] {
        doc.get(key).and_then(Value::as_array).into_iter().flatten().for_each(&mut *f);
    }
    for step in doc.get("steps").and_then(Value::as_array).into_iter().flatten() {
        if let Some(pod) = step.get("pod").filter(|p| p.is_object()) {
            f(pod);
        }
    }
}

fn visit_pods_mut(doc: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    for key in ["apiserver", "pod_manager"] {
        doc.get_mut(key).and_then(Value::as_array_mut).into_iter().flatten().for_each(&mut *f);
    }
    for step in doc.get_mut("steps").and_then(Value::as_array_mut).into_iter().flatten() {
        if let Some(pod) = step.get_mut("pod").filter(|p| p.is_object()) {
            f(pod);
        }
    }
}

/// A step of a path into a JSON value.
#[derive(Clone, Debug, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

/// What shrinking keeps so that the result still reads as Kubernetes objects: a pod's
/// identity (which ties the trace together), its spec with at least one container,
/// the names of containers and container statuses, and the type and status of
/// conditions.
fn is_protected(doc: &Value, path: &[Seg]) -> bool {
    let key = |seg: &Seg, names: &[&str]| matches!(seg, Seg::Key(k) if names.contains(&k.as_str()));
    match path {
        [.., m, f] if key(m, &["metadata"]) && key(f, &["uid", "name", "namespace"]) => true,
        [.., list, Seg::Index(_), f]
            if key(list, &["containers", "initContainers", "containerStatuses", "initContainerStatuses"])
                && key(f, &["name"]) =>
        {
            true
        }
        [.., c, Seg::Index(_), f] if key(c, &["conditions"]) && key(f, &["type", "status"]) => true,
        [.., s] if key(s, &["spec"]) => true,
        [.., s, c] if key(s, &["spec"]) && key(c, &["containers"]) => true,
        [parent @ .., s, c, Seg::Index(_)] if key(s, &["spec"]) && key(c, &["containers"]) => {
            let list: Vec<Seg> = parent.iter().cloned().chain([s.clone(), c.clone()]).collect();
            get(doc, &list).and_then(Value::as_array).is_none_or(|containers| containers.len() <= 1)
        }
        _ => false,
    }
}

/// Every path inside `value`, parents before children.
fn paths(value: &Value) -> Vec<Vec<Seg>> {
    fn walk(value: &Value, prefix: &mut Vec<Seg>, out: &mut Vec<Vec<Seg>>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    prefix.push(Seg::Key(k.clone()));
                    out.push(prefix.clone());
                    walk(v, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    prefix.push(Seg::Index(i));
                    out.push(prefix.clone());
                    walk(v, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

fn get<'v>(value: &'v Value, path: &[Seg]) -> Option<&'v Value> {
    path.iter().try_fold(value, |v, seg| match seg {
        Seg::Key(k) => v.get(k),
        Seg::Index(i) => v.get(i),
    })
}

fn get_mut<'v>(value: &'v mut Value, path: &[Seg]) -> Option<&'v mut Value> {
    path.iter().try_fold(value, |v, seg| match seg {
        Seg::Key(k) => v.get_mut(k),
        Seg::Index(i) => v.get_mut(i),
    })
}

fn remove(value: &mut Value, path: &[Seg]) {
    let Some((last, parent)) = path.split_last() else { return };
    match (get_mut(value, parent), last) {
        (Some(Value::Object(map)), Seg::Key(k)) => {
            map.shift_remove(k);
        }
        (Some(Value::Array(items)), Seg::Index(i)) if *i < items.len() => {
            items.remove(*i);
        }
        _ => {}
    }
}

/// Writes the shrunk trace document for a violation, with the keys the fuzzer adds
/// (`violation`, `seed`, ...; `podstatus replay` ignores them) in front.
pub fn finding_document(doc: &Value, violation: &Violation, seed: Option<u64>, extra: Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert(
        "violation".into(),
        match violation.known {
            None => serde_json::json!({
                "invariant": violation.invariant.name(),
                "step": violation.step,
                "message": violation.message,
            }),
            Some(issue) => serde_json::json!({
                "invariant": violation.invariant.name(),
                "step": violation.step,
                "message": violation.message,
                "known_issue": issue.name(),
            }),
        },
    );
    if let Some(seed) = seed {
        out.insert("seed".into(), seed.into());
    }
    out.extend(extra);
    if let Value::Object(map) = doc {
        for (k, v) in map {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::invariants::Invariant;
    use serde_json::json;

    #[test]
    fn paths_and_removal() {
        let mut v = json!({"a": [1, {"b": 2}], "c": 3});
        let p = paths(&v);
        assert_eq!(p.len(), 5);
        remove(&mut v, &[Seg::Key("a".into()), Seg::Index(1), Seg::Key("b".into())]);
        assert_eq!(v, json!({"a": [1, {}], "c": 3}));
        remove(&mut v, &[Seg::Key("a".into()), Seg::Index(0)]);
        assert_eq!(v, json!({"a": [{}], "c": 3}));
    }

    #[test]
    fn ddmin_finds_the_two_steps_that_matter() {
        // Fails when a get-pod-status of u1 follows an advance-clock of 7 ms.
        let steps: Vec<Value> = (0..30)
            .map(|i| match i {
                11 => json!({"op": "advance-clock", "ms": 7}),
                23 => json!({"op": "get-pod-status", "uid": "u1"}),
                i if i % 3 == 0 => json!({"op": "sync"}),
                i => json!({"op": "advance-clock", "ms": i}),
            })
            .collect();
        let doc = json!({
            "apiserver": [{"metadata": {"uid": "u1", "name": "a", "namespace": "n"}, "spec": {"containers": [{"name": "c"}]}}],
            "steps": steps,
        });
        let mut check = |t: &Trace| {
            let pos = |f: &dyn Fn(&podstatus_replay::Step) -> bool| t.steps.iter().position(f);
            let clock = pos(&|s| matches!(s, podstatus_replay::Step::AdvanceClock { ms: 7 }))?;
            let get = pos(&|s| matches!(s, podstatus_replay::Step::GetPodStatus { .. }))?;
            (clock < get).then(|| Violation::new(Invariant::NoFault, get, "planted"))
        };
        let v = Violation::new(Invariant::NoFault, 23, "planted");
        let shrunk = shrink(&doc, v, &mut check, ShrinkBudget::default());
        assert_eq!(
            shrunk.doc["steps"],
            json!([{"op": "advance-clock", "ms": 7}, {"op": "get-pod-status", "uid": "u1"}])
        );
        // The pod's UID is needed (the get names it), its container is not removable
        // (a pod keeps one container), but the pod object loses nothing else it need not have.
        assert_eq!(shrunk.doc["apiserver"][0]["metadata"]["uid"], "u1");
    }
}
