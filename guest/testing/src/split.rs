//! Helpers every logic version's split-sync tests share: driving a `Manager` over the
//! [`crate::FakeWorld`] the way a host drives contract 0.2.0 (plan, then start and resume
//! each sync with the world's answers), and what the world observed.
//!
//! The logic versions' `Manager`s are distinct types with the same surface, so the
//! helpers are a macro the test file expands for its own manager type.

/// Defines, in the calling test file, for `$manager` (a logic version's
/// `Manager<FakeWorld>`): `type M`, `set` (a status, which must be accepted),
/// `running`, `drive` (one sync to its end, each call answered at once), `split_sync_pod`
/// and `split_sync_batch` (a host's `sync-pod` and `sync-batch` over the split API),
/// their function types `SyncPod` and `SyncBatch`, and `Observed`/`observed` (what
/// the world saw and the manager's state).
#[macro_export]
macro_rules! split_sync_drivers {
    ($manager:ty) => {
        type M = $manager;
        #[allow(unused_imports)]
        use $crate::__private::podstatus_logic::StatusManager as _;

        #[allow(dead_code)]
        fn set(m: &mut M, pod: &$crate::__private::serde_json::Value, status: $crate::__private::serde_json::Value) {
            m.set_pod_status(&pod.to_string(), &status.to_string()).unwrap_or_else(|e| panic!("set_pod_status: {e}"));
        }

        #[allow(dead_code)]
        fn running(phase: &str, ready: bool) -> $crate::__private::serde_json::Value {
            $crate::__private::serde_json::json!({"phase": phase, "containerStatuses": [$crate::container("c", ready)]})
        }

        /// Runs sync `id` to its end, answering each call at once from the world.
        #[allow(dead_code)]
        fn drive(
            m: &mut M,
            id: u64,
        ) -> Result<$crate::__private::podstatus_logic::SyncOutcome, $crate::__private::podstatus_logic::ManagerError> {
            use $crate::__private::podstatus_logic::SyncStep;
            let mut step = m.start_sync(id)?;
            loop {
                match step {
                    SyncStep::Done(outcome) => return Ok(outcome),
                    SyncStep::Call(call) => {
                        let reply = m.imports_mut().answer(call);
                        step = m.resume_sync(id, reply)?;
                    }
                }
            }
        }

        /// A host's `sync-pod`: plans, then runs every planned sync; the request's outcome.
        #[allow(dead_code)]
        fn split_sync_pod(
            m: &mut M,
            request: &$crate::__private::podstatus_logic::SyncRequest,
        ) -> Result<$crate::__private::podstatus_logic::SyncOutcome, $crate::__private::podstatus_logic::ManagerError> {
            let mut outcome = Ok($crate::__private::podstatus_logic::SyncOutcome::UpToDate);
            for sync in m.plan_sync_pod(request)? {
                let result = drive(m, sync.id);
                if sync.origin == $crate::__private::podstatus_logic::SyncOrigin::Request {
                    outcome = result;
                }
            }
            outcome
        }

        /// A host's `sync-batch`: plans it in slices of one pod (as a host serving calls
        /// in between asks for it), runs every planned sync, counts the failed ones.
        #[allow(dead_code)]
        fn split_sync_batch(m: &mut M) -> $crate::__private::podstatus_logic::BatchReport {
            use $crate::__private::podstatus_logic::BatchSlice;
            let mut report = $crate::__private::podstatus_logic::BatchReport::default();
            let mut syncs = Vec::new();
            let mut slice = BatchSlice::first(1);
            loop {
                let plan = m.plan_sync_batch(&slice);
                report.synced += plan.report.synced;
                report.reconciled += plan.report.reconciled;
                report.failed += plan.report.failed;
                syncs.extend(plan.syncs);
                match plan.next {
                    Some(next) => {
                        assert!(slice.after.as_ref().is_none_or(|after| *after < next), "a slice moves forward");
                        slice.after = Some(next);
                    }
                    None => break,
                }
            }
            for sync in syncs {
                assert_eq!(sync.origin, $crate::__private::podstatus_logic::SyncOrigin::Batch);
                if drive(m, sync.id).is_err() {
                    report.failed += 1;
                }
            }
            report
        }

        #[allow(dead_code)]
        type SyncPod = fn(
            &mut M,
            &$crate::__private::podstatus_logic::SyncRequest,
        )
            -> Result<$crate::__private::podstatus_logic::SyncOutcome, $crate::__private::podstatus_logic::ManagerError>;
        #[allow(dead_code)]
        type SyncBatch = fn(&mut M) -> $crate::__private::podstatus_logic::BatchReport;

        /// Everything the world saw, and the manager's state.
        #[derive(Debug, PartialEq)]
        #[allow(dead_code)]
        struct Observed {
            /// What each sync returned.
            seen: Vec<String>,
            calls: Vec<$crate::Call>,
            logs: Vec<($crate::__private::podstatus_logic::Level, String)>,
            state: String,
            /// How often deletion safety was asked: whether resources are reclaimed,
            /// whether containers may run.
            queries: (u32, u32),
        }

        #[allow(dead_code)]
        fn observed(m: &mut M, seen: Vec<String>) -> Observed {
            let state = m.save_state().expect("save_state");
            let world = m.imports_mut();
            Observed {
                seen,
                calls: world.calls.clone(),
                logs: world.logs.clone(),
                state,
                queries: (world.reclaimed_queries, world.running_queries),
            }
        }
    };
}
