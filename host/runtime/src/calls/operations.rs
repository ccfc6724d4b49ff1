//! The status manager's operations, listed once: every other place that needs them
//! (the [`Call`](crate::Call) enum and its names, the typed methods of plugins and
//! handles) is generated from this list, so a new operation is one more line here.

/// Calls the macro `$callback` with the list of the `kubelet:status/manager` exports
/// the host calls, in three groups: `manager`, the Manager operations a node's callers
/// make (what [`ManagerHandle`](crate::ManagerHandle) offers); `sync`, the syncs the
/// scheduler drives; `state`, the state document moved by a swap or a recovery.
///
/// Each operation reads
/// `Variant method "wit-name" Effect (argument: Type, ...) -> ReplyVariant(AnswerType);`:
/// the [`Call`](crate::Call) variant; the typed method (and the operation's metric
/// label, `set_pod_status`); the WIT export it calls (as errors, logs and recovery
/// counts name it, `set-pod-status`; a 0.2.0 plugin plans its syncs in exports named
/// as 0.1.x's blocking ones); its [`Effect`](crate::Effect) on the plugin's state; its
/// arguments, borrowed for `'a`; and the [`Reply`](crate::Reply) variant it answers
/// with. Arguments named `pod` are a pod's JSON and `pod_uid` a pod's UID: the layers
/// that follow a pod's status (the host's record, the propagation clock) find them by
/// those names.
///
/// The callbacks ignore what they do not use: `$crate::__manager_methods` the `sync`
/// and `state` groups, for one.
#[doc(hidden)]
#[macro_export]
macro_rules! for_each_operation {
    ($($callback:tt)*) => {
        $($callback)*! {
            manager {
                /// The cached status of a pod (mirror UIDs find their static pod's status).
                GetPodStatus get_pod_status "get-pod-status" Reads
                    (uid: &'a str) -> Status(Option<$crate::bindings::CachedStatus>);
                /// Caches a pod's status and queues its write when it changed.
                SetPodStatus set_pod_status "set-pod-status" Updates
                    (pod: &'a str, status: &'a str) -> Update($crate::bindings::UpdateOutcome);
                /// Sets a container's readiness and regenerates the Ready condition.
                SetContainerReadiness set_container_readiness "set-container-readiness" Updates
                    (pod_uid: &'a str, container_id: &'a str, ready: bool) -> Update($crate::bindings::UpdateOutcome);
                /// Sets whether a container passed its startup probe (contract 0.1.1 and
                /// later; older plugins answer `unsupported`).
                SetContainerStartup set_container_startup "set-container-startup" Updates
                    (pod_uid: &'a str, container_id: &'a str, started: bool) -> Update($crate::bindings::UpdateOutcome);
                /// Caches an in-place resize condition of a pod beside its status (contract
                /// 0.2.1; older plugins, and 0.2.1 plugins whose logic has no in-place
                /// resize, answer `unsupported`).
                /// Queues no write and makes no status version: the kubelet puts the
                /// conditions into the next status it sets.
                SetPodResizeCondition set_pod_resize_condition "set-pod-resize-condition" Writes
                    (
                        pod_uid: &'a str,
                        condition: $crate::ResizeCondition,
                        reason: &'a str,
                        message: &'a str,
                        observed_generation: i64
                    ) -> Done(());
                /// Forgets an in-place resize condition of a pod; true when it was set
                /// (contract 0.2.1, as `set-pod-resize-condition`).
                ClearPodResizeCondition clear_pod_resize_condition "clear-pod-resize-condition" Writes
                    (pod_uid: &'a str, condition: $crate::ResizeCondition) -> Flag(bool);
                /// The in-place resize conditions cached for a pod, each a core/v1
                /// PodCondition as JSON, PodResizePending first (contract 0.2.1, as
                /// `set-pod-resize-condition`): what the kubelet puts into every status it
                /// sets for the pod. Upstream's `IsPodResizeDeferred` and
                /// `IsPodResizeInfeasible` are this and a look at the pending condition's
                /// reason.
                GetPodResizeConditions get_pod_resize_conditions "get-pod-resize-conditions" Reads
                    (pod_uid: &'a str) -> Conditions(Vec<String>);
                /// Marks every container of the pod terminated and forces an update.
                TerminatePod terminate_pod "terminate-pod" Writes
                    (pod: &'a str) -> Update($crate::bindings::UpdateOutcome);
                /// Drops the statuses of pods not in `keep`; returns how many.
                RemoveOrphanedStatuses remove_orphaned_statuses "remove-orphaned-statuses" Writes
                    (keep: &'a [String]) -> Count(u32);
            }
            sync {
                /// Handles one request taken off the sync queue, start to end: a 0.1.x
                /// plugin calls the API server inside; a 0.2.0 plugin's planned syncs are
                /// run one after the other, each call answered at once (`split_sync::sync_pod_now`).
                SyncPod sync_pod "sync-pod" Writes
                    (request: &'a $crate::bindings::SyncRequest) -> Synced($crate::bindings::SyncOutcome);
                /// One periodic batch sync, start to end (as `sync-pod`).
                SyncBatch sync_batch "sync-batch" Writes
                    () -> Batch($crate::bindings::BatchReport);
                /// Plans the syncs of one request taken off the sync queue (contract 0.2.0;
                /// older plugins answer `unsupported`: they sync inside `sync-pod`).
                PlanSyncPod plan_sync_pod "sync-pod" Writes
                    (request: &'a $crate::bindings::SyncRequest) -> Plan(Vec<$crate::bindings::PodSync>);
                /// Plans one slice of a periodic batch sync (contract 0.2.0; see
                /// `split_sync::plan_whole_batch` for all of it at once).
                PlanSyncBatch plan_sync_batch "sync-batch" Writes
                    (slice: &'a $crate::bindings::BatchSlice) -> BatchPlan($crate::bindings::BatchPlan);
                /// Starts a planned sync (contract 0.2.0).
                StartSync start_sync "start-sync" Writes
                    (id: u64) -> Step($crate::bindings::SyncStep);
                /// Answers the API call a suspended sync asked for (contract 0.2.0).
                ResumeSync resume_sync "resume-sync" Writes
                    (id: u64, reply: &'a $crate::bindings::ApiReply) -> Step($crate::bindings::SyncStep);
                /// Forgets a planned or suspended sync (contract 0.2.0); false when unknown.
                /// Syncs in flight are not state: the state document stays as it was.
                DropSync drop_sync "drop-sync" Reads
                    (id: u64) -> Flag(bool);
            }
            state {
                /// The plugin's whole state as a versioned document.
                SaveState save_state "save-state" Reads
                    () -> Document(String);
                /// Replaces the plugin's state.
                LoadState load_state "load-state" Writes
                    (state: &'a str) -> Done(());
                /// What changed since the last save, as a change set.
                SaveStateChanges save_state_changes "save-state-changes" Reads
                    () -> Document(String);
                /// Applies another instance's change set.
                ApplyStateChanges apply_state_changes "apply-state-changes" Writes
                    (changes: &'a str) -> Done(());
            }
        }
    };
}
