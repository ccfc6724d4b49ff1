//! Contract `kubelet:status@0.2.0`: the plugin never calls the API server. `sync-pod`
//! and `sync-batch` plan syncs, and the host runs each with `start-sync` and
//! `resume-sync`, making the calls it asks for.

use podstatus_logic::{
    ApiCall, ApiError, ApiReply, DeleteOptions, Imports, ManagerError, PodSync, Policy, StatusPatch, StatusUpdate,
    SyncOrigin, SyncStep,
};

use crate::{shared, split_shared};

shared::contract!(
    world: "package podstatus:glue; world contract-0-2-0 { include kubelet:status/status-manager@0.2.0; }",
    path: "../../wit/status@0.2.0",
    module: "podstatus_glue::contract_0_2_0",
    api_error: api::ApiError,
);

use exports::kubelet::status::manager as wit;
use kubelet::status::{api, deletion_safety};

use shared::failpoint;

use shared::no_failpoint;

impl<P: Policy<WitImports> + Default + 'static> wit::Guest for Plugin<P> {
    shared::common_exports!(no_failpoint);

    shared::startup_export!();

    split_shared::split_sync_exports!();
}

split_shared::split_sync_glue!("0.2.0");
