//! What `podnet diff` keeps of one run: the facts it compares, copied out of the outcome so the
//! world (tens of millions of routes in a large cluster) can be dropped before the other side
//! runs.
//!
//! Invariants: every collection is ordered by its key (pod `namespace/name`, node, pool,
//! session ends, prefix, reachability cell), so two digests compare by merging; everything is
//! linear in the size of the run (pods, nodes, sessions, prefixes, cells). The dataplane and
//! policy inputs are kept only when network policy is enforced, for the per-packet comparison
//! (policy scenarios are small).
//! What this is not: no comparison (`diff::compare`), no rendering.

use crate::sim::cluster::PendingReason;
use std::collections::BTreeMap;
use std::sync::Arc;

use ipnet::IpNet;

use crate::bgp::rib::PrefixId;
use crate::forwarding::connect::PolicyInputs;
use crate::forwarding::{Dataplane, PodKey};
use crate::model::topology::DeviceId;
use crate::model::workload::PodStatus;
use crate::scenario::Scenario;
use crate::sim::expect::ExpectationResult;
use crate::sim::policy::{PairGroup, Pairs, pairs_between};
use crate::sim::{Outcome, Snapshot};

/// How pods are grouped into reachability cells: by workload while the cells stay few, else
/// by namespace, else all together (the comparison is per cell, so cells² reachability runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Grouping {
    Workload,
    Namespace,
    All,
}

/// At most this many cells (source group × destination group) are compared.
pub const MAX_CELLS: usize = 256;

impl Grouping {
    /// The finest grouping whose cells stay within [`MAX_CELLS`] for the workloads of both
    /// scenarios.
    pub fn choose(scenarios: &[&Scenario]) -> Grouping {
        let mut workloads = std::collections::BTreeSet::new();
        let mut namespaces = std::collections::BTreeSet::new();
        for s in scenarios {
            for w in &s.workloads {
                workloads.insert((w.namespace.clone(), w.name.clone()));
                namespaces.insert(w.namespace.clone());
            }
        }
        if workloads.len() * workloads.len() <= MAX_CELLS {
            Grouping::Workload
        } else if namespaces.len() * namespaces.len() <= MAX_CELLS {
            Grouping::Namespace
        } else {
            Grouping::All
        }
    }

    fn group_of(self, namespace: &str, workload: &str) -> String {
        match self {
            Grouping::Workload => format!("{namespace}/{workload}"),
            Grouping::Namespace => namespace.to_string(),
            Grouping::All => "all pods".to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodFacts {
    pub workload: String,
    pub status: PodStatus,
    pub reason: Option<String>,
    pub node: Option<String>,
    pub ip: Option<std::net::IpAddr>,
    pub pool: Option<String>,
    pub block: Option<IpNet>,
    pub allocation_failure: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFacts {
    pub rack: String,
    pub zone: String,
    pub blocks: usize,
    pub borrowed: usize,
    pub rib_routes: Option<usize>,
    pub fib_routes: usize,
    /// A pod on the node was refused an address because the node holds its block limit.
    pub block_limit_reached: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolFacts {
    pub blocks: u32,
    pub allocated: u64,
    pub capacity: u128,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionFacts {
    pub session_type: &'static str,
    pub state: &'static str,
    pub reason: Option<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BgpFacts {
    /// By (a, b) as the report names the two ends.
    pub sessions: BTreeMap<(String, String), SessionFacts>,
    /// Every prefix learned over BGP, with the number of speakers whose Loc-RIB holds it as a
    /// learned best route.
    pub prefixes: BTreeMap<IpNet, u32>,
    pub updates: u64,
    pub convergence_us: u64,
}

/// Pairs that did not deliver for one reason at one place, named.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FailureFacts {
    /// The routing reason, or `policy-denied (ingress, tier default, policy shop/x, rule 0)`.
    pub reason: String,
    pub stopped_at: String,
    pub count: u64,
    /// The smallest pair: pods as `namespace/name (rack, zone)`.
    pub example: (String, String),
}

/// The pairs of one cell (source group → destination group).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CellFacts {
    pub pairs: u64,
    pub reachable: u64,
    pub failures: Vec<FailureFacts>,
}

impl CellFacts {
    pub fn unreachable(&self) -> u64 {
        self.pairs - self.reachable
    }
}

/// What the per-packet comparison needs when policy is enforced.
pub struct PolicyProbe {
    pub dataplane: Arc<Dataplane>,
    pub inputs: Arc<PolicyInputs>,
    /// The pods of each group that have an address.
    pub members: BTreeMap<String, Vec<PodKey>>,
}

impl PolicyProbe {
    /// Pairs of `from` → `to` delivered for `packet`.
    pub fn delivered(&self, from: &str, to: &str, packet: crate::policy::eval::Packet) -> u64 {
        let empty = Vec::new();
        let f = self.members.get(from).unwrap_or(&empty);
        let t = self.members.get(to).unwrap_or(&empty);
        pairs_between(&self.dataplane, Some(&self.inputs), f, t, Some(packet)).reachable
    }
}

pub struct Digest {
    pub scenario: String,
    pub seed: u64,
    pub end_us: u64,
    /// By `namespace/name`.
    pub pods: BTreeMap<String, PodFacts>,
    pub nodes: BTreeMap<String, NodeFacts>,
    pub pools: BTreeMap<String, PoolFacts>,
    pub bgp: Option<BgpFacts>,
    pub grouping: Grouping,
    /// By (source group, destination group); groups with no addressed pod have no cell.
    pub cells: BTreeMap<(String, String), CellFacts>,
    pub pairs: u64,
    pub reachable: u64,
    pub expectations: BTreeMap<String, ExpectationResult>,
    pub policy: Option<PolicyProbe>,
}

impl Digest {
    pub fn new(
        scenario: &Scenario,
        outcome: &Outcome,
        results: Vec<ExpectationResult>,
        grouping: Grouping,
    ) -> Digest {
        let last = &outcome.last;
        let pods: BTreeMap<String, PodFacts> = last
            .pods
            .iter()
            .map(|p| {
                (
                    format!("{}/{}", p.namespace, p.name),
                    PodFacts {
                        workload: p.workload.to_string(),
                        status: p.status,
                        reason: p.reason.as_ref().map(ToString::to_string),
                        node: p.node.as_deref().map(str::to_string),
                        ip: p.ip,
                        pool: p.pool.as_deref().map(str::to_string),
                        block: p.block,
                        allocation_failure: p.pending_for_ipam(),
                    },
                )
            })
            .collect();
        let mut nodes: BTreeMap<String, NodeFacts> = last
            .nodes
            .iter()
            .map(|n| {
                (
                    n.name.clone(),
                    NodeFacts {
                        rack: n.rack.clone(),
                        zone: n.zone.clone(),
                        blocks: n.blocks.len(),
                        borrowed: n.borrowed_ips,
                        rib_routes: n.rib_routes,
                        fib_routes: n.fib_routes,
                        block_limit_reached: false,
                    },
                )
            })
            .collect();
        for p in &last.pods {
            let limited = p
                .reason
                .as_ref()
                .is_some_and(PendingReason::reaches_block_limit);
            if let (true, Some(node)) = (limited, &p.node)
                && let Some(n) = nodes.get_mut(&**node)
            {
                n.block_limit_reached = true;
            }
        }
        let pools = last
            .pools
            .iter()
            .map(|p| {
                (
                    p.name.clone(),
                    PoolFacts {
                        blocks: p.blocks,
                        allocated: p.allocated,
                        capacity: p.capacity,
                    },
                )
            })
            .collect();
        let bgp = last.bgp.as_ref().map(|b| BgpFacts {
            sessions: b
                .sessions
                .iter()
                .map(|s| {
                    (
                        (s.a.to_string(), s.b.to_string()),
                        SessionFacts {
                            session_type: s.session_type,
                            state: s.state,
                            reason: s.reason.clone(),
                        },
                    )
                })
                .collect(),
            prefixes: learned_prefixes(outcome),
            updates: b.updates,
            convergence_us: b.converged_within_us,
        });
        let (cells, policy) = reachability_cells(last, &nodes, grouping);
        // The cells partition the pods with an address: their sums are the run's.
        let pairs = cells.values().map(|c| c.pairs).sum();
        let reachable = cells.values().map(|c| c.reachable).sum();
        Digest {
            scenario: scenario.name.clone(),
            seed: scenario.seed,
            end_us: outcome.end.as_micros(),
            pods,
            nodes,
            pools,
            bgp,
            grouping,
            cells,
            pairs,
            reachable,
            expectations: results.into_iter().map(|r| (r.name.clone(), r)).collect(),
            policy,
        }
    }
}

/// Prefix → how many speakers hold it as a learned best route, counted by prefix id (ids
/// are shared by all speakers) from the engine's spread (`BgpEngine::learned_spread`):
/// every speaker whose list is its states holds the reference list but where its state
/// differs, so each reference entry counts them all and only the differing prefixes are
/// looked up per speaker; a speaker forwarding with its kernel's routes is read whole.
fn learned_prefixes(outcome: &Outcome) -> BTreeMap<IpNet, u32> {
    let Some(engine) = outcome.world.control.bgp.as_deref() else {
        return BTreeMap::new();
    };
    let devices: Vec<DeviceId> = engine.speakers().iter().map(|s| s.device).collect();
    let spread = engine.learned_spread(&devices);
    let mut counts: Vec<Option<(IpNet, i64)>> = Vec::new();
    let mut add = |id: PrefixId, net: IpNet, n: i64| {
        if counts.len() <= id.index() {
            counts.resize(id.index() + 1, None);
        }
        counts[id.index()].get_or_insert((net, 0)).1 += n;
    };
    let in_reference = |id: PrefixId| {
        spread
            .reference
            .binary_search_by_key(&id, |e| e.0)
            .ok()
            .map(|i| spread.reference[i].1)
    };
    let following = spread.differing.iter().flatten().count() as i64;
    for &(id, net, _) in &spread.reference {
        add(id, net, following);
    }
    for (&device, differing) in devices.iter().zip(&spread.differing) {
        let Some(differing) = differing else {
            for (id, net, _) in engine.learned_next_hops(device) {
                add(id, net, 1);
            }
            continue;
        };
        for &id in differing {
            if let Some(net) = in_reference(id) {
                add(id, net, -1);
            }
            if let Some((net, _)) = engine.learned_next_hop(device, id) {
                add(id, net, 1);
            }
        }
    }
    counts
        .into_iter()
        .flatten()
        .filter(|(_, n)| *n > 0)
        .map(|(net, n)| (net, n as u32))
        .collect()
}

/// [`learned_prefixes`] the plain way, every speaker's list read whole: the oracle of its
/// test.
#[cfg(test)]
fn learned_prefixes_read_whole(outcome: &Outcome) -> BTreeMap<IpNet, u32> {
    let Some(engine) = outcome.world.control.bgp.as_deref() else {
        return BTreeMap::new();
    };
    let mut counts: BTreeMap<IpNet, u32> = BTreeMap::new();
    for speaker in engine.speakers() {
        for (_, net, _) in engine.learned_next_hops(speaker.device) {
            *counts.entry(net).or_default() += 1;
        }
    }
    counts
}

/// Reachability per cell of `grouping`, and the probe for per-packet questions when policy
/// is enforced.
fn reachability_cells(
    last: &Snapshot,
    nodes: &BTreeMap<String, NodeFacts>,
    grouping: Grouping,
) -> (BTreeMap<(String, String), CellFacts>, Option<PolicyProbe>) {
    let mut members: BTreeMap<String, Vec<PodKey>> = BTreeMap::new();
    let mut names: BTreeMap<PodKey, String> = BTreeMap::new();
    for p in &last.pods {
        if last.dataplane.pod(p.key).is_none() {
            continue;
        }
        members
            .entry(grouping.group_of(&p.namespace, &p.workload))
            .or_default()
            .push(p.key);
        let place = p
            .node
            .as_ref()
            .and_then(|n| nodes.get(&**n))
            .map(|n| format!(" ({}, {})", n.rack, n.zone))
            .unwrap_or_default();
        names.insert(p.key, format!("{}/{}{place}", p.namespace, p.name));
    }
    let name = |k: PodKey| names.get(&k).cloned().unwrap_or_else(|| "?".to_string());
    let device = |d: crate::model::topology::DeviceId| {
        last.devices.get(d.index()).cloned().unwrap_or_default()
    };
    let mut cells = BTreeMap::new();
    for (from, f) in &members {
        for (to, t) in &members {
            let pairs: Pairs = pairs_between(&last.dataplane, last.policy.as_deref(), f, t, None);
            if pairs.pairs == 0 {
                continue;
            }
            let failures = pairs
                .groups
                .iter()
                .map(|g: &PairGroup| FailureFacts {
                    reason: match &g.denial {
                        Some(d) => {
                            let by = [
                                Some(d.side.as_str().to_string()),
                                d.by.tier().map(|t| format!("tier {t}")),
                                d.by.policy().map(|p| format!("policy {p}")),
                                Some(format!("rule {}", d.by.rule_text())),
                            ];
                            let by: Vec<String> = by.into_iter().flatten().collect();
                            format!("policy-denied ({})", by.join(", "))
                        }
                        None => g.reason.to_string(),
                    },
                    stopped_at: device(g.stopped_at),
                    count: g.count,
                    example: (name(g.example.0), name(g.example.1)),
                })
                .collect();
            cells.insert(
                (from.clone(), to.clone()),
                CellFacts {
                    pairs: pairs.pairs,
                    reachable: pairs.reachable,
                    failures,
                },
            );
        }
    }
    let policy = last.policy.as_ref().map(|inputs| PolicyProbe {
        dataplane: Arc::clone(&last.dataplane),
        inputs: Arc::clone(inputs),
        members,
    });
    (cells, policy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::{SimDuration, SimTime};
    use crate::sim::Simulation;

    /// Counting from the spread gives what reading every speaker's list whole gives: on
    /// reflector clusters, a full mesh, an eBGP fabric and a run that ends while a node's
    /// daemon restarts (its node forwards with its kernel's routes, read whole).
    #[test]
    fn learned_prefixes_from_the_spread_are_every_list_counted() {
        let cases = [
            ("quickstart", None),
            ("route-reflectors", None),
            ("mesh-to-rr-migration", None),
            ("as-per-rack-fabric", None),
            // n-3's daemon is down from 1m for 30 s: at 1m10s it is restarting.
            (
                "restart-bgp",
                Some(SimTime::ZERO + SimDuration::from_secs(70)),
            ),
        ];
        for (name, until) in cases {
            let path = format!("{}/scenarios/{name}.yaml", env!("CARGO_MANIFEST_DIR"));
            let yaml = std::fs::read_to_string(&path).expect("library scenario");
            let mut s = crate::scenario::load_str(&path, &yaml).expect("valid scenario");
            if until.is_some() {
                s.until = until;
            }
            let outcome = Simulation::new(&s).run();
            let whole = learned_prefixes_read_whole(&outcome);
            assert!(!whole.is_empty(), "{name}: learned routes");
            assert_eq!(learned_prefixes(&outcome), whole, "{name}");
        }
    }
}
