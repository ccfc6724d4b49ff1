//! `podstatus fleet --shard`: this process runs one shard of a larger fleet (issue 51).
//! The options ([`ShardArgs`]), the wait for the shard's membership and its nodes'
//! Leases before a fleet of its share starts ([`claim_share`]), and the watch over a
//! running share ([`ShardWatch`]) that says when it changed: a member came or went, a
//! node the share lacked is free now, or a node's Lease was taken. The fleet then
//! stops (its statuses flushed, its nodes' Leases released) and starts again on the
//! new share.

use std::time::{Duration, Instant};

use podstatus_agent::Fleet;
use podstatus_agent::client::Connection;
use podstatus_agent::rollout::{RolloutLeader, RolloutObjects, ShardRolloutConfig, SharedRollout};
use podstatus_agent::shard::{HeldLease, LeaseClaims, LeaseState, Shard, ShardConfig, ShardPlace};
use podstatus_runtime::PluginRuntime;

use crate::failure::InputContext;

/// The options of a shard.
#[derive(clap::Args, Clone, Debug)]
#[command(next_help_heading = "Shards")]
pub struct ShardArgs {
    /// Run one shard of a larger fleet, --nodes being the whole fleet's: ORDINAL/COUNT
    /// (shards 0 .. COUNT-1), ORDINAL (the live shards' membership Leases say how
    /// many), or `pod` (`pod/COUNT`): the ordinal that ends the pod's name ($POD_NAME,
    /// else $HOSTNAME), as a StatefulSet names its pods. Node N is the shard's at
    /// position N mod M among the M live shards.
    #[arg(long, value_name = "ORDINAL[/COUNT]")]
    pub shard: Option<String>,
    /// How long a shard's membership holds without renewal (renewed every quarter of
    /// it): how long the others wait for a shard that stopped before they share out its
    /// nodes (whole seconds, at least 1s).
    #[arg(long, value_name = "DURATION", default_value = "15s", value_parser = crate::input::lease_duration)]
    pub shard_lease_duration: Duration,
    /// The namespace of the shards' membership Leases (by default the pod's, or the
    /// kubeconfig context's).
    #[arg(long, value_name = "NAMESPACE")]
    pub shard_namespace: Option<String>,
}

/// A shard to be: its place, read from the options before anything starts.
pub struct PlannedShard {
    place: ShardPlace,
    name: String,
}

impl ShardArgs {
    /// The shard these options name, if any (bad input when they cannot be read).
    /// `embedded`: the fleet would start its own API server, which no other shard
    /// could reach.
    pub fn plan(&self, prefix: &str, embedded: bool) -> anyhow::Result<Option<PlannedShard>> {
        let Some(text) = &self.shard else { return Ok(None) };
        if embedded {
            return Err(crate::failure::BadInput::error(
                "--shard",
                "needs an API server every shard reaches (--server, --kubeconfig, or in a pod)",
            ));
        }
        let pod_name =
            ["POD_NAME", "HOSTNAME"].iter().find_map(|var| std::env::var(var).ok().filter(|v| !v.is_empty()));
        let place = ShardPlace::parse(text, pod_name.as_deref()).input(format!("--shard {text}"))?;
        let name = match (text.starts_with("pod"), pod_name) {
            (true, Some(pod)) => pod,
            _ => format!("{prefix}-shard-{}", place.ordinal),
        };
        Ok(Some(PlannedShard { place, name }))
    }
}

impl PlannedShard {
    /// The shard, on the fleet's `connection`, of a fleet of `total` nodes named
    /// `prefix-N`, whose nodes' Leases hold for `node_lease_duration`.
    pub fn start(
        self,
        args: &ShardArgs,
        connection: &podstatus_agent::client::Connection,
        prefix: &str,
        total: usize,
        node_lease_duration: Duration,
    ) -> Shard {
        let namespace =
            args.shard_namespace.clone().unwrap_or_else(|| connection.client().default_namespace().to_owned());
        Shard::new(
            connection,
            ShardConfig {
                fleet: prefix.to_owned(),
                place: self.place,
                total_nodes: total,
                name: self.name,
                namespace,
                member_lease_duration: args.shard_lease_duration,
                node_lease_duration,
            },
        )
    }
}

/// How often a shard looks again while it waits: for its membership, its nodes.
const WAIT_STEP: Duration = Duration::from_millis(500);

/// The nodes a shard holds, and the members its share was computed from.
pub struct ClaimedShare {
    /// The share's nodes whose Leases it holds, by number.
    pub nodes: Vec<usize>,
    /// The live shards' ordinals then.
    pub members: Vec<u32>,
}

/// Becomes a member and takes the Leases of the share's nodes, waiting while another
/// holder has them: until every one is held, or the nodes' Lease duration passed and
/// some are (the rest are taken when they come free: [`ShardWatch`]). `None` when
/// `stop` says so first. `settle`: a shard just started first waits two membership
/// renewals for the shards starting beside it (a StatefulSet starts its pods
/// together), instead of taking every node and handing most of them on at once. A look
/// the API server fails (a closed connection, a timeout) is tried again, never the end
/// of the shard.
pub fn claim_share(
    shard: &Shard,
    membership: Option<&HeldLease>,
    stop: &dyn Fn() -> bool,
    settle: bool,
) -> Option<ClaimedShare> {
    let began = Instant::now();
    let mut settled = !settle;
    let patience = shard.config().node_lease_duration + shard.config().member_lease_duration;
    let mut said = String::new();
    loop {
        if stop() {
            return None;
        }
        let state = membership.map_or(LeaseState::Held, HeldLease::state);
        let say = match state {
            LeaseState::Pending => "joining".to_owned(),
            LeaseState::HeldBy { holder, expires } => format!("ordinal held by {holder} until {expires}"),
            LeaseState::Failing(why) => format!("membership not renewed: {why}"),
            LeaseState::Held if !settled => {
                settled = true;
                let until = Instant::now() + shard.config().member_lease_duration / 2;
                while Instant::now() < until && !stop() {
                    std::thread::sleep(WAIT_STEP.min(until.saturating_duration_since(Instant::now())));
                }
                continue;
            }
            LeaseState::Held => {
                let looked = shard.members().and_then(|members| {
                    let share = shard.share(&members);
                    let claims = shard.claim_nodes(&share)?;
                    Ok((members, share, claims))
                });
                match looked {
                    Err(error) => format!("the API server failed a look ({error}); trying again"),
                    Ok((members, share, claims)) => {
                        let whole = claims.elsewhere.is_empty();
                        if !claims.held.is_empty() && (whole || began.elapsed() >= patience) {
                            return Some(ClaimedShare { nodes: claims.held, members });
                        }
                        let holders: std::collections::BTreeSet<&str> =
                            claims.elsewhere.iter().map(|(_, holder, _)| holder.as_str()).collect();
                        format!(
                            "{} of its {} nodes held elsewhere ({})",
                            claims.elsewhere.len(),
                            share.len(),
                            holders.into_iter().collect::<Vec<_>>().join(", ")
                        )
                    }
                }
            }
        };
        if say != said {
            eprintln!("podstatus fleet: shard {} waits: {say}", shard.config().place.ordinal);
            said = say;
        }
        std::thread::sleep(WAIT_STEP.min(shard.config().member_lease_duration / 4));
    }
}

/// Why a shard's fleet must start again on another share.
#[derive(Clone, Debug, PartialEq)]
pub enum Reshard {
    /// The live members changed: the share with them.
    Members(Vec<u32>),
    /// Nodes of the share the fleet lacked came free and are held now.
    Claimed(usize),
    /// A node's Lease was taken by another holder.
    Lost(String),
    /// Another holder has the shard's membership.
    Membership(String),
}

impl std::fmt::Display for Reshard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reshard::Members(members) => write!(f, "the live shards are now {members:?}"),
            Reshard::Claimed(n) => write!(f, "{n} more nodes of its share came free"),
            Reshard::Lost(why) => write!(f, "{why}"),
            Reshard::Membership(holder) => write!(f, "its membership is held by {holder}"),
        }
    }
}

/// Watches a running share; see the module documentation.
pub struct ShardWatch<'a> {
    shard: &'a Shard,
    membership: Option<&'a HeldLease>,
    /// The nodes the fleet runs.
    running: Vec<usize>,
    /// The members its share was computed from.
    members: Vec<u32>,
    /// Other members seen at the last round, if they differed.
    changed: Option<Vec<u32>>,
    next: Instant,
}

impl<'a> ShardWatch<'a> {
    /// Watches `shard` (its `membership` held) whose fleet runs the nodes of `claimed`.
    pub fn new(shard: &'a Shard, membership: Option<&'a HeldLease>, claimed: ClaimedShare) -> ShardWatch<'a> {
        let next = Instant::now() + Self::interval(shard);
        let ClaimedShare { nodes: running, members } = claimed;
        ShardWatch { shard, membership, running, members, changed: None, next }
    }

    /// The live shards' ordinals its share was computed from.
    pub fn members(&self) -> &[u32] {
        &self.members
    }

    fn interval(shard: &Shard) -> Duration {
        shard.config().member_lease_duration / 4
    }

    /// Looks at the members when due and says whether the fleet must start again (an
    /// API server that fails a round is tried again at the next; the membership is
    /// renewed by its own task meanwhile).
    pub fn check(&mut self, fleet: &Fleet) -> Option<Reshard> {
        let lost = fleet.agents().iter().zip(fleet.names()).find_map(|(agent, name)| {
            let holder = agent.registration()?.lease_lost()?;
            Some(format!("node {name}'s Lease was taken by {holder}"))
        });
        if let Some(lost) = lost {
            return Some(Reshard::Lost(lost));
        }
        if Instant::now() < self.next {
            return None;
        }
        self.next = Instant::now() + Self::interval(self.shard);
        match self.round() {
            Ok(reshard) => reshard,
            Err(error) => {
                tracing::warn!("shard: {error:#}; trying again in {:?}", Self::interval(self.shard));
                None
            }
        }
    }

    fn round(&mut self) -> anyhow::Result<Option<Reshard>> {
        match self.membership.map_or(LeaseState::Held, HeldLease::state) {
            LeaseState::HeldBy { holder, .. } => return Ok(Some(Reshard::Membership(holder))),
            // Its own renewals failing say the API server is slow or out of reach: the
            // others' Leases lapse for the same reason, and a share computed from them
            // would hand nodes around (a relist each) while the server is least able to
            // take it. It looks again once its own membership holds.
            LeaseState::Failing(_) | LeaseState::Pending => {
                self.changed = None;
                return Ok(None);
            }
            LeaseState::Held => {}
        }
        let members = self.shard.members()?;
        if members != self.members {
            // The same change seen twice, a renewal interval apart: a member whose one
            // renewal came late is not shared out.
            if self.changed.as_ref() == Some(&members) {
                return Ok(Some(Reshard::Members(members)));
            }
            self.changed = Some(members);
            return Ok(None);
        }
        self.changed = None;
        let missing: Vec<usize> =
            self.shard.share(&members).into_iter().filter(|n| self.running.binary_search(n).is_err()).collect();
        if missing.is_empty() {
            return Ok(None);
        }
        let claims = self.shard.claim_nodes(&missing)?;
        Ok((!claims.held.is_empty()).then_some(Reshard::Claimed(claims.held.len())))
    }
}

/// How often a shard looks at its fleet's rollouts and reports into the one watched.
const ROLLOUT_POLL: Duration = Duration::from_secs(1);

/// A shard's hand on its fleet's `PluginRollout`s: the objects, and its candidacy for
/// the leadership that decides them (kept from one share to the next).
pub struct ShardRollouts {
    /// The rollouts of the fleet's namespace.
    pub objects: RolloutObjects,
    /// The shard as a candidate leader.
    pub leader: RolloutLeader,
}

impl ShardRollouts {
    /// `shard`'s, through `connection`; the leadership held for the membership's
    /// duration.
    pub fn new(shard: &Shard, connection: &Connection) -> ShardRollouts {
        let config = shard.config();
        let (client, runtime) = (connection.client().clone(), connection.runtime().clone());
        let objects = RolloutObjects::new(client.clone(), &config.namespace, runtime.clone());
        let claims = LeaseClaims::new(client, &config.namespace, shard.identity(), config.member_lease_duration);
        let leader = RolloutLeader::new(claims, objects.clone(), &config.fleet, config.total_nodes, runtime);
        ShardRollouts { objects, leader }
    }

    /// The shard's part in the rollouts, for one fleet of its share.
    pub fn part(&self, shard: &Shard, plugins: &PluginRuntime, connection: &Connection) -> SharedRollout {
        let config = shard.config();
        SharedRollout::new(
            self.objects.clone(),
            ShardRolloutConfig {
                fleet: config.fleet.clone(),
                ordinal: config.place.ordinal,
                identity: shard.identity().to_owned(),
                poll: ROLLOUT_POLL,
            },
            plugins.clone(),
            connection.runtime().clone(),
        )
    }
}
