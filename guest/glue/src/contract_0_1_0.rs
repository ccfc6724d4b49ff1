//! Contract `kubelet:status@0.1.0`: the 2017 surface, whose syncs call the API server
//! themselves (`api-server` import) and block until done.

use podstatus_logic::{Imports, Policy};

use crate::shared;

// The world is the contract's `status-manager`, included under a name of its own:
// the generated export macros are named after the world, and the three contracts'
// worlds share one name.
wit_bindgen::generate!({
    inline: "package podstatus:glue; world contract-0-1-0 { include kubelet:status/status-manager@0.1.0; }",
    path: "../../wit/status@0.1.0",
    generate_all,
    pub_export_macro: true,
    default_bindings_module: "podstatus_glue::contract_0_1_0",
});

use exports::kubelet::status::manager as wit;
use kubelet::status::api_server;

/// Traps here when the failpoint is armed (only in the `failpoints` build).
macro_rules! failpoint {
    ($id:ident) => {
        #[cfg(feature = "failpoints")]
        crate::failpoints::hit(crate::failpoints::$id, kubelet::status::clock::now().nanoseconds);
    };
}

shared::plugin_type!();
shared::outcome_conversions!();
shared::api_error_conversion!(api_server::ApiError);
shared::logging!();
shared::manager_error_without_syncs!();

impl<P: Policy<WitImports> + Default + 'static> wit::Guest for Plugin<P> {
    shared::common_exports!(failpoint);

    fn sync_pod(request: wit::SyncRequest) -> Result<wit::SyncOutcome, wit::ManagerError> {
        failpoint!(SYNC_POD);
        let request =
            podstatus_logic::SyncRequest { id: request.id, pod_uid: request.pod_uid, version: request.version };
        Self::with(|m| m.sync_pod(&request)).map(sync_outcome).map_err(manager_error)
    }

    fn sync_batch() -> wit::BatchReport {
        failpoint!(SYNC_BATCH);
        batch_report(Self::with(|m| m.sync_batch()))
    }
}

/// The imports of the `status-manager` world; stateless, the host holds the world.
pub struct WitImports;

impl Imports for WitImports {
    shared::api_server_imports!(before_write: {
        failpoint!(WRITE);
    });

    shared::forward_world_imports!(before_push: {
        failpoint!(PUSH);
    });
}
