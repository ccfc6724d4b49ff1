//! Lists in pages (`limit` and `continue`), as kube-apiserver serves them.
//!
//! A client that asks for `limit=N` gets at most N pods and, when more are left, a
//! `metadata.continue` token; the next request with `continue=TOKEN` gets the next N of
//! the *same* list: every page is cut from the snapshot the first page was, at its
//! resourceVersion, as etcd serves a continued list from the first page's revision.
//! kube-rs' watcher lists in pages of 500 and kubectl in pages of 500, so a list of
//! 100,000 pods never has to be held, sent or parsed whole by a client.
//!
//! The token is shaped as kube-apiserver's: base64url (no padding) of
//! `{"v":"meta.k8s.io/v1","rv":N,"start":"NAMESPACE/NAME\u0000"}`, the key the next page
//! starts after (kube-apiserver's start key is relative to the list's etcd prefix; the
//! token is opaque to clients). A page says how many pods are left after it
//! (`remainingItemCount`) when the list has no selector, as kube-apiserver does.
//!
//! The snapshots continued lists are cut from are kept for a while, a few at most
//! ([`ListSnapshots`]): a snapshot holds its pods as they were, so a pod written since
//! is held twice until the snapshot goes. One goes when its last page is served, when
//! it is older than [`SNAPSHOT_TTL`], or when newer ones push it out; a token whose
//! snapshot is gone gets 410 `Expired`, as a token older than etcd's compaction does,
//! and the client lists again, or goes on with the token the 410 gives (resourceVersion
//! -1: the rest of the list as it is now, kube-apiserver's inconsistent continuation).

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use podstatus_backends::CompactPod;
use serde::{Deserialize, Serialize};

use crate::status_body::Failure;

/// Snapshots kept for continued lists at most; a newer one pushes out the oldest.
pub(crate) const SNAPSHOTS_KEPT: usize = 4;
/// How long a continued list's snapshot is kept after its last page was asked for
/// (kube-apiserver's etcd compacts every 5 minutes; a paging client asks for the next
/// page at once, so a minute is plenty and holds old pods far less long).
pub(crate) const SNAPSHOT_TTL: Duration = Duration::from_secs(60);
/// Longest `continue` parameter read (a real token is well under 1 KiB: a
/// resourceVersion and a namespace and a name of at most 253 bytes each).
const MAX_TOKEN_BYTES: usize = 2048;
/// The token's version, as kube-apiserver writes it.
const TOKEN_VERSION: &str = "meta.k8s.io/v1";

/// What a list request asks of paging.
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct PageRequest {
    /// Pods per page; None: all of them.
    pub limit: Option<usize>,
    /// Where a continued list goes on.
    pub after: Option<Continue>,
}

/// A continued list: the snapshot's resourceVersion (none: the list as it is now) and
/// the key the page starts after.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Continue {
    pub resource_version: Option<u64>,
    pub after: (String, String),
}

/// The token as kube-apiserver encodes it (`rv` -1: an inconsistent continuation).
#[derive(Serialize, Deserialize)]
struct Token {
    v: String,
    rv: i64,
    start: String,
}

impl PageRequest {
    /// Reads `limit`, `continue` and `resourceVersion` as kube-apiserver does: a limit
    /// of 0 or less means no limit; a `continue` with a `resourceVersion` is refused;
    /// a token that does not decode is 400.
    pub(crate) fn parse(
        limit: Option<&str>,
        token: Option<&str>,
        resource_version: Option<&str>,
    ) -> Result<Self, Failure> {
        let limit = match limit.filter(|l| !l.is_empty()) {
            None => None,
            Some(text) => match text.parse::<i64>() {
                Ok(n) if n > 0 => Some(usize::try_from(n).unwrap_or(usize::MAX)),
                Ok(_) => None,
                Err(_) => {
                    // Go's words, as kube-apiserver passes them on.
                    return Err(Failure::bad_request(format!(
                        "strconv.ParseInt: parsing {:?}: invalid syntax",
                        crate::excerpt::excerpt(text)
                    )));
                }
            },
        };
        let after = match token.filter(|t| !t.is_empty()) {
            None => None,
            Some(token) => {
                // The token is read first, as kube-apiserver reads it.
                let after = decode(token)?;
                if resource_version.is_some_and(|rv| !rv.is_empty()) {
                    return Err(Failure::bad_request("specifying resource version is not allowed when using continue"));
                }
                Some(after)
            }
        };
        Ok(PageRequest { limit, after })
    }
}

/// The token for a list at `resource_version` whose next page starts after `key`.
pub(crate) fn encode(resource_version: u64, key: (&str, &str)) -> String {
    encode_at(i64::try_from(resource_version).unwrap_or(i64::MAX), key)
}

/// The token a 410 gives for a continue whose snapshot is gone: the rest of the list
/// after the same key, as it is now (kube-apiserver's resourceVersion -1).
pub(crate) fn encode_inconsistent(key: (&str, &str)) -> String {
    encode_at(-1, key)
}

fn encode_at(rv: i64, key: (&str, &str)) -> String {
    let token = Token { v: TOKEN_VERSION.into(), rv, start: format!("{}/{}\u{0}", key.0, key.1) };
    URL_SAFE_NO_PAD.encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode(token: &str) -> Result<Continue, Failure> {
    let invalid = |why: &str| Failure::bad_request(format!("invalid continue token: continue key is not valid: {why}"));
    if token.len() > MAX_TOKEN_BYTES {
        return Err(invalid("too long"));
    }
    let bytes = URL_SAFE_NO_PAD.decode(token.trim_end_matches('=')).map_err(|_| invalid("not base64"))?;
    let token: Token =
        serde_json::from_slice(&bytes).map_err(|_| invalid("incorrect encoded start resourceVersion"))?;
    if token.v != TOKEN_VERSION {
        return Err(invalid("server does not recognize this encoded key"));
    }
    let key = token.start.strip_suffix('\u{0}').unwrap_or(&token.start);
    let (namespace, name) = key.split_once('/').ok_or_else(|| invalid("no namespace in the start key"))?;
    let resource_version = match token.rv {
        -1 => None,
        rv => Some(u64::try_from(rv).map_err(|_| invalid("incorrect encoded start resourceVersion"))?),
    };
    Ok(Continue { resource_version, after: (namespace.to_owned(), name.to_owned()) })
}

/// The snapshots of lists being continued. Thread-safe.
#[derive(Debug, Default)]
pub(crate) struct ListSnapshots {
    kept: Mutex<VecDeque<Snapshot>>,
}

#[derive(Debug)]
struct Snapshot {
    resource_version: u64,
    pods: Arc<Vec<Arc<CompactPod>>>,
    /// When a page was last cut from it.
    used: Instant,
}

impl ListSnapshots {
    /// Keeps `pods` (the store at `resource_version`) for the pages to come.
    pub(crate) fn keep(&self, resource_version: u64, pods: Arc<Vec<Arc<CompactPod>>>) {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        expire(&mut kept);
        if kept.iter().any(|s| s.resource_version == resource_version) {
            return;
        }
        if kept.len() == SNAPSHOTS_KEPT {
            kept.pop_front();
        }
        kept.push_back(Snapshot { resource_version, pods, used: Instant::now() });
    }

    /// The snapshot at `resource_version`, if it is still kept.
    pub(crate) fn find(&self, resource_version: u64) -> Option<Arc<Vec<Arc<CompactPod>>>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        expire(&mut kept);
        let snapshot = kept.iter_mut().find(|s| s.resource_version == resource_version)?;
        snapshot.used = Instant::now();
        Some(Arc::clone(&snapshot.pods))
    }

    /// Lets the snapshot at `resource_version` go: its last page was served.
    pub(crate) fn release(&self, resource_version: u64) {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).retain(|s| s.resource_version != resource_version);
    }

    /// How many snapshots are kept now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.kept.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

fn expire(kept: &mut VecDeque<Snapshot>) {
    kept.retain(|s| s.used.elapsed() < SNAPSHOT_TTL);
}

/// Where a page ends when more are left: the key of the last pod taken, and how many
/// pods the list still has after it.
pub(crate) type PageEnd<'a> = ((&'a str, &'a str), usize);

/// One page of `pods` (sorted by namespace, then name): the pods `keep` takes that
/// come after `after`, at most `limit`, and where it ends when more are left.
pub(crate) fn page<'a>(
    pods: &'a [Arc<CompactPod>],
    after: Option<&(String, String)>,
    limit: Option<usize>,
    keep: impl Fn(&CompactPod) -> bool,
) -> (Vec<Arc<CompactPod>>, Option<PageEnd<'a>>) {
    let start = match after {
        Some((namespace, name)) => pods.partition_point(|pod| key(pod) <= (namespace.as_str(), name.as_str())),
        None => 0,
    };
    let limit = limit.unwrap_or(usize::MAX);
    let mut taken = Vec::new();
    let mut last: Option<&'a CompactPod> = None;
    let mut rest = pods[start..].iter().filter(|pod| keep(pod));
    while let Some(pod) = rest.next() {
        if taken.len() == limit {
            // More are left: the next page starts after the last one taken.
            return (taken, last.map(|last| (key(last), 1 + rest.count())));
        }
        taken.push(Arc::clone(pod));
        last = Some(pod);
    }
    (taken, None)
}

/// A pod's place in a list: its namespace, then its name.
fn key(pod: &CompactPod) -> (&str, &str) {
    (pod.namespace().unwrap_or_default(), pod.name().unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use podstatus_backends::testing;

    fn pods(keys: &[(&str, &str)]) -> Vec<Arc<CompactPod>> {
        let pod = |ns: &str, name: &str| CompactPod::from_pod(&testing::pod(name, name).namespace(ns).build());
        keys.iter().map(|(ns, name)| Arc::new(pod(ns, name).expect("compact"))).collect()
    }

    fn names(page: &[Arc<CompactPod>]) -> Vec<&str> {
        page.iter().map(|p| p.name().unwrap_or_default()).collect()
    }

    #[test]
    fn a_token_round_trips_as_kube_apiserver_writes_it() {
        let token = encode(42, ("sim", "web-1"));
        let json = String::from_utf8(URL_SAFE_NO_PAD.decode(&token).unwrap()).unwrap();
        assert_eq!(json, r#"{"v":"meta.k8s.io/v1","rv":42,"start":"sim/web-1\u0000"}"#);
        let request = PageRequest::parse(Some("500"), Some(&token), None).unwrap();
        let after = Continue { resource_version: Some(42), after: ("sim".into(), "web-1".into()) };
        assert_eq!(request, PageRequest { limit: Some(500), after: Some(after) });
        let inconsistent = PageRequest::parse(None, Some(&encode_inconsistent(("sim", "web-1"))), None).unwrap();
        assert_eq!(inconsistent.after.map(|a| a.resource_version), Some(None), "-1: the list as it is now");
    }

    #[test]
    fn limits_read_as_kubernetes_reads_them() {
        assert_eq!(PageRequest::parse(None, None, None).unwrap(), PageRequest::default());
        assert_eq!(PageRequest::parse(Some("0"), None, None).unwrap().limit, None, "0: no limit");
        assert_eq!(PageRequest::parse(Some("-5"), None, None).unwrap().limit, None, "negative: no limit");
        assert_eq!(PageRequest::parse(Some("7"), None, Some("12")).unwrap().limit, Some(7));
        let refused = PageRequest::parse(Some("ten"), None, None).unwrap_err();
        assert_eq!(refused.to_status().code, Some(400));
    }

    #[test]
    fn hostile_tokens_are_refused_with_400() {
        let bad = |token: &str| PageRequest::parse(None, Some(token), None).unwrap_err().to_status();
        for token in ["%%%", "bm90IGpzb24", &"A".repeat(MAX_TOKEN_BYTES + 1)] {
            let status = bad(token);
            assert_eq!(status.code, Some(400), "{token}");
            assert!(
                status.message.unwrap_or_default().starts_with("invalid continue token: continue key is not valid")
            );
        }
        let other_version = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v0","rv":1,"start":"a/b"}"#);
        assert_eq!(bad(&other_version).code, Some(400));
        let no_namespace = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":1,"start":"b"}"#);
        assert_eq!(bad(&no_namespace).code, Some(400));
        let token = encode(1, ("a", "b"));
        let with_version = PageRequest::parse(None, Some(&token), Some("1")).unwrap_err().to_status();
        assert_eq!(
            with_version.message.as_deref(),
            Some("specifying resource version is not allowed when using continue")
        );
        assert_eq!(with_version.code, Some(400));
    }

    #[test]
    fn pages_follow_one_another_without_gaps_or_repeats() {
        let all = pods(&[("a", "x"), ("a", "y"), ("b", "x"), ("b", "z"), ("c", "w")]);
        let (first, next) = page(&all, None, Some(2), |_| true);
        assert_eq!((names(&first), next), (vec!["x", "y"], Some((("a", "y"), 3))));
        let after = next.map(|((ns, n), _)| (ns.to_owned(), n.to_owned())).unwrap();
        let (second, next) = page(&all, Some(&after), Some(2), |_| true);
        assert_eq!((names(&second), next), (vec!["x", "z"], Some((("b", "z"), 1))));
        let after = next.map(|((ns, n), _)| (ns.to_owned(), n.to_owned())).unwrap();
        let (third, next) = page(&all, Some(&after), Some(2), |_| true);
        assert_eq!((names(&third), next), (vec!["w"], None), "the last page has no token");
        let (exact, next) = page(&all[..4], None, Some(4), |_| true);
        assert_eq!((exact.len(), next), (4, None), "a page that ends the list exactly has no token");
    }

    #[test]
    fn a_filtered_page_counts_only_the_pods_kept() {
        let all = pods(&[("a", "x"), ("a", "y"), ("b", "x"), ("b", "y")]);
        let keep_x = |pod: &CompactPod| pod.name() == Some("x");
        let (first, next) = page(&all, None, Some(1), keep_x);
        assert_eq!((names(&first), next), (vec!["x"], Some((("a", "x"), 1))));
        let (second, next) = page(&all, Some(&("a".into(), "x".into())), Some(1), keep_x);
        assert_eq!((second.len(), next), (1, None), "nothing kept after it: no token");
    }

    #[test]
    fn snapshots_are_kept_a_few_at_most_and_let_go_after_their_last_page() {
        let snapshots = ListSnapshots::default();
        for rv in 1..=(SNAPSHOTS_KEPT as u64 + 2) {
            snapshots.keep(rv, Arc::new(pods(&[("a", "x")])));
        }
        assert_eq!(snapshots.len(), SNAPSHOTS_KEPT);
        assert!(snapshots.find(1).is_none(), "the oldest were pushed out");
        let newest = SNAPSHOTS_KEPT as u64 + 2;
        assert_eq!(snapshots.find(newest).map(|p| p.len()), Some(1));
        snapshots.release(newest);
        assert!(snapshots.find(newest).is_none());
    }
}
