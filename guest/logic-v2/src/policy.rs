//! Logic v2 as a policy over the one engine; what it decides is in `updates`
//! (each update) and `sync` (each pod's sync).

/// Logic v2's decisions: [`podstatus_logic::Policy`] (the 1.27 updates) and
/// [`podstatus_logic::SyncPolicy`] (the 1.27 sync). Public so that a later version can
/// keep them and change only what differs.
#[derive(Clone, Copy, Debug, Default)]
pub struct V2;

/// Logic v2's status manager over `I`.
pub type Manager<I> = podstatus_logic::Manager<I, V2>;
