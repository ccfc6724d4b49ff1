//! What contracts 0.2.0 and 0.2.1 export and import alike (the split syncs, the API
//! calls a sync hands the host, the imports without an API server), written once as
//! macros that each of the two modules expands over its own bindings.

/// The split-sync `Guest` methods (`sync-pod`, `sync-batch`, `start-sync`,
/// `resume-sync`, `drop-sync`), for the `impl Guest for Plugin<P>` block they are
/// expanded in.
macro_rules! split_sync_exports {
    () => {
        fn sync_pod(request: wit::SyncRequest) -> Result<Vec<wit::PodSync>, wit::ManagerError> {
            let request =
                podstatus_logic::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
            let syncs = Self::with(|m| m.plan_sync_pod(&request)).map_err(manager_error)?;
            Ok(syncs.into_iter().map(pod_sync).collect())
        }

        fn sync_batch(slice: wit::BatchSlice) -> wit::BatchPlan {
            let slice = podstatus_logic::BatchSlice { after: slice.after, max_pods: slice.max_pods as usize };
            let plan = Self::with(|m| m.plan_sync_batch(&slice));
            wit::BatchPlan {
                report: batch_report(plan.report),
                syncs: plan.syncs.into_iter().map(pod_sync).collect(),
                next: plan.next,
            }
        }

        fn start_sync(sync: u64) -> Result<wit::SyncStep, wit::ManagerError> {
            failpoint!(START_SYNC);
            Self::with(|m| m.start_sync(sync)).map(sync_step).map_err(manager_error)
        }

        fn resume_sync(sync: u64, reply: wit::ApiReply) -> Result<wit::SyncStep, wit::ManagerError> {
            failpoint!(RESUME_SYNC);
            let reply = api_reply(reply);
            Self::with(|m| m.resume_sync(sync, reply)).map(sync_step).map_err(manager_error)
        }

        fn drop_sync(sync: u64) -> bool {
            Self::with(|m| m.drop_sync(sync))
        }
    };
}
pub(crate) use split_sync_exports;

/// The conversions between the logic's split-sync types and the contract's, the
/// contract's `manager-error`, and the `WitImports` of a world without an API server,
/// for the module they are expanded in (which names its package version in `$contract`
/// for the message of an API call the logic should never make).
macro_rules! split_sync_glue {
    ($contract:literal) => {
        fn pod_sync(sync: PodSync) -> wit::PodSync {
            let origin = match sync.origin {
                SyncOrigin::Request => wit::SyncOrigin::Request,
                SyncOrigin::Pass => wit::SyncOrigin::Pass,
                SyncOrigin::Batch => wit::SyncOrigin::Batch,
            };
            wit::PodSync { id: sync.id, pod_uid: sync.pod_uid, origin }
        }

        fn sync_step(step: SyncStep) -> wit::SyncStep {
            match step {
                SyncStep::Call(call) => wit::SyncStep::Call(api_call(call)),
                SyncStep::Done(outcome) => wit::SyncStep::Done(sync_outcome(outcome)),
            }
        }

        fn manager_error(e: ManagerError) -> wit::ManagerError {
            match e {
                ManagerError::InvalidPod(m) => wit::ManagerError::InvalidPod(m),
                ManagerError::InvalidStatus(m) => wit::ManagerError::InvalidStatus(m),
                ManagerError::UnknownRequest(id) => wit::ManagerError::UnknownRequest(id),
                ManagerError::UnknownSync(id) => wit::ManagerError::UnknownSync(id),
                ManagerError::InvalidState(m) => wit::ManagerError::InvalidState(m),
                ManagerError::Unsupported(m) => wit::ManagerError::Unsupported(m),
            }
        }

        /// A call the logic asks for, as the host receives it.
        fn api_call(call: ApiCall) -> api::ApiCall {
            match call {
                ApiCall::GetPod { namespace, name } => api::ApiCall::GetPod(api::PodName { namespace, name }),
                ApiCall::UpdatePodStatus(update) => api::ApiCall::UpdatePodStatus(api::StatusUpdate {
                    namespace: update.namespace,
                    name: update.name,
                    uid_precondition: update.uid_precondition,
                    resource_version_precondition: update.resource_version_precondition,
                    status: update.status,
                }),
                ApiCall::PatchPodStatus(patch) => api::ApiCall::PatchPodStatus(api::StatusPatch {
                    namespace: patch.namespace,
                    name: patch.name,
                    uid_precondition: patch.uid_precondition,
                    patch: patch.patch,
                }),
                ApiCall::DeletePod { namespace, name, options } => api::ApiCall::DeletePod(api::PodDeletion {
                    namespace,
                    name,
                    options: api::DeleteOptions {
                        uid_precondition: options.uid_precondition,
                        grace_period_seconds: options.grace_period_seconds,
                    },
                }),
            }
        }

        /// The host's answer, as the logic takes it (whether its shape fits the call is the
        /// logic's to check).
        fn api_reply(reply: api::ApiReply) -> ApiReply {
            match reply {
                api::ApiReply::Pod(pod) => ApiReply::Pod(pod.map_err(api_error)),
                api::ApiReply::Deleted(deleted) => ApiReply::Deleted(deleted.map_err(api_error)),
            }
        }

        /// Why an API-server method of the logic's imports fails in this contract: the host
        /// makes the calls (`sync-step.call`), so the logic never reaches these; if it ever
        /// did, the sync fails as a failed call would, rather than trapping the instance.
        fn no_api_server(call: &str) -> ApiError {
            ApiError::Other(format!(
                "{call}: contract {} has no api-server import; a sync asks the host to make its calls",
                $contract
            ))
        }

        /// The imports of the `status-manager` world; stateless, the host holds the world.
        pub struct WitImports;

        impl Imports for WitImports {
            fn get_pod(&mut self, _: &str, _: &str) -> Result<String, ApiError> {
                Err(no_api_server("get-pod"))
            }

            fn update_pod_status(&mut self, _: StatusUpdate) -> Result<String, ApiError> {
                Err(no_api_server("update-pod-status"))
            }

            fn patch_pod_status(&mut self, _: StatusPatch) -> Result<String, ApiError> {
                Err(no_api_server("patch-pod-status"))
            }

            fn pod_could_have_running_containers(&mut self, pod_json: &str) -> bool {
                deletion_safety::pod_could_have_running_containers(pod_json)
            }

            fn delete_pod(&mut self, _: &str, _: &str, _: DeleteOptions) -> Result<(), ApiError> {
                Err(no_api_server("delete-pod"))
            }

            shared::forward_world_imports!();
        }
    };
}
pub(crate) use split_sync_glue;
