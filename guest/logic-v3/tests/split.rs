//! Logic v3's syncs driven one API call at a time (contract 0.2.0): the first call is
//! the patch sent without reading, and a refused patch goes on with v2's read.

use podstatus_logic::StatusManager;
use podstatus_logic_testing::split::*;
use podstatus_logic_testing::*;
use podstatus_logic_v3::{ApiCall, ApiError, ApiReply, Level, Manager, SyncOutcome, SyncStep};

type M = Manager<FakeWorld>;

#[test]
fn immediate_answers_make_the_calls_and_imports_of_the_blocking_path() {
    // v3 reads only after a refused patch: garbage comes as the patch's answer.
    let scenario = |m: &mut M, sync_pod, sync_batch| pass_scenario(m, sync_pod, sync_batch, Verb::PatchPodStatus, "s");
    let blocking = blocking_and_split_agree(FakeWorld::v2, scenario);
    let seen = blocking.seen.join(" ");
    for outcome in ["Written", "InvalidPod", "Recreated", "reconciled: 1"] {
        assert!(seen.contains(outcome), "{outcome} missing from {seen}");
    }
    let logs = &blocking.logs;
    for line in ["sync of pod uid-s failed", "batch sync of pod", "fully terminated", "no mirror pod yet", "refused"] {
        assert!(logs.iter().any(|(_, l)| l.contains(line)), "{line} missing from {logs:?}");
    }
}

#[test]
fn the_first_call_is_the_patch_and_a_refused_one_goes_on_with_a_read() {
    let statuses = [("a", running("Running", true)), ("b", running("Running", true))];
    let (mut m, _): (M, _) = caching(FakeWorld::v2(), statuses);
    let [a_sync, b_sync] = <[_; 2]>::try_from(plan_next_request(&mut m)).unwrap();

    let patch = call_of(m.start_sync(a_sync.id), "v3 patches first");
    let ApiCall::PatchPodStatus(body) = &patch else { panic!("v3 patches without reading: {patch:?}") };
    assert_eq!(body.uid_precondition.as_deref(), Some("uid-a"));
    // While a's patch is out, b's sync runs to its end.
    assert_eq!(drive(&mut m, b_sync.id), Ok(SyncOutcome::Written));

    // The API server refuses a's patch: the sync reads, then patches what it read.
    let refused = ApiReply::Pod(Err(ApiError::Conflict("the object has been modified".into())));
    let get = call_of(m.resume_sync(a_sync.id, refused), "reads");
    assert_eq!(get, ApiCall::GetPod { namespace: "ns".into(), name: "a".into() });
    let patch = call_of(resume_answered(&mut m, a_sync.id, get), "patches");
    assert_eq!(resume_answered(&mut m, a_sync.id, patch), Ok(SyncStep::Done(SyncOutcome::Written)));
    assert_eq!(m.imports_mut().api_status("ns", "a")["phase"], "Running");
    use Verb::{GetPod as G, PatchPodStatus as P};
    assert_eq!(m.imports_mut().take_verbs(), [P, G, P]);
    assert_eq!(m.syncs_in_flight(), 0);
}

#[test]
fn a_reply_that_does_not_fit_the_patch_sent_without_reading_is_a_failed_write() {
    let (mut m, _): (M, _) = caching(FakeWorld::v2(), [("a", running("Running", true))]);
    let id = plan_next_request(&mut m)[0].id;
    let ApiCall::PatchPodStatus(_) = call_of(m.start_sync(id), "patches first") else { panic!("patches first") };
    assert_eq!(m.resume_sync(id, ApiReply::Deleted(Ok(()))), Ok(SyncStep::Done(SyncOutcome::WriteFailed)));
    let (level, line) = m.imports_mut().logs.last().cloned().unwrap();
    assert_eq!(level, Level::Warn);
    assert!(line.contains("reply does not fit the call"), "{line}");
    assert!(!m.drop_sync(id));
}
