//! `podnet diff`: the semantic difference between two runs of a layout (SPEC §1).
//!
//! Each side is simulated on its own and reduced to a [`Digest`] (pods, IPAM, BGP,
//! reachability per cell of pod groups, expectation verdicts) before the other runs, so the
//! memory is one run plus two digests, and [`compare`] merges the two ordered digests in
//! linear time. The result, [`Diff`], is typed data with the regressions it found; `render`
//! turns it into text or Markdown, serde into JSON.
//!
//! Invariants: pods are matched by `namespace/name`, nodes and pools by name, sessions by
//! their two ends, prefixes exactly, expectations by name; every list is in key order, so the
//! same two scenarios and seed give the same bytes. Reachability is compared per cell
//! (source group → destination group, [`Grouping`]): a cell with more undelivered pairs on the
//! new side has pairs that *became unreachable* (the count is the growth), with the failures
//! of the new side that grew as the reasons; the reverse is *became reachable*, with the
//! reasons of the base side. With policy enforced on either side, every packet class either
//! side's policy tells apart is compared per cell as well.
//! What this is not: no simulation of its own, no file or git access (`cli::diff`).

pub mod digest;
pub mod render;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use digest::{CellFacts, FailureFacts, PodFacts, SessionFacts};
pub use digest::{Digest, Grouping};

use crate::model::workload::PodStatus;
use crate::policy::eval::{Packet, packet_classes};

/// What can make a diff fail (`--fail-on`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum FailOn {
    /// Pod pairs (or a port/protocol between them) that delivered no longer do.
    Unreachable,
    /// Pods that were not Pending are Pending (or new pods are).
    Pending,
    /// Expectations that held (or did not exist) fail.
    Expectations,
    /// Pods refused an address by IPAM that were not.
    AllocationFailures,
    /// BGP sessions that were Established are not.
    Sessions,
    /// Never fail.
    None,
}

/// The default `--fail-on`: what issue #15 calls a regression.
pub const DEFAULT_FAIL_ON: [FailOn; 3] =
    [FailOn::Unreachable, FailOn::Pending, FailOn::Expectations];

/// A value on both sides.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Change<T> {
    pub base: T,
    pub new: T,
}

impl<T: PartialEq> Change<T> {
    pub fn changed(&self) -> bool {
        self.base != self.new
    }
}

fn change<T>(base: T, new: T) -> Change<T> {
    Change { base, new }
}

/// One side as the output names it.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SideInfo {
    /// The file, or `FILE@REV`, or `FILE --set ...`.
    pub source: String,
    pub scenario: String,
    pub seed: u64,
    pub end_time_us: u64,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldChange {
    pub field: &'static str,
    pub base: String,
    pub new: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodChange {
    pub pod: String,
    /// The fields that differ, in the order status, reason, node, ip, pool, block.
    pub fields: Vec<FieldChange>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodsDiff {
    pub count: Change<usize>,
    pub running: Change<usize>,
    pub pending: Change<usize>,
    pub allocation_failures: Change<usize>,
    /// Pods of one side only (`namespace/name`).
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<PodChange>,
    /// Pending on the new side and not on the base side (new pods included), with the reason.
    pub newly_pending: Vec<(String, String)>,
    pub allocation_failures_gained: Vec<String>,
    pub allocation_failures_lost: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeIpamChange {
    pub node: String,
    pub blocks: Change<usize>,
    pub borrowed: Change<usize>,
    pub block_limit_reached: Change<bool>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolChange {
    pub pool: String,
    pub blocks: Change<Option<u32>>,
    pub allocated: Change<Option<u64>>,
    pub capacity: Change<Option<u128>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IpamDiff {
    pub blocks: Change<usize>,
    pub borrowed: Change<usize>,
    pub nodes_at_block_limit: Change<usize>,
    pub nodes: Vec<NodeIpamChange>,
    pub pools: Vec<PoolChange>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionChange {
    pub a: String,
    pub b: String,
    /// `None` on the side without the session.
    pub state: Change<Option<&'static str>>,
    pub reason: Change<Option<String>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RouteCountChange {
    pub node: String,
    pub rib_routes: Change<Option<usize>>,
    pub fib_routes: Change<Option<usize>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PrefixChange {
    pub prefix: String,
    /// Speakers holding it as a learned best route.
    pub speakers: Change<u32>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BgpDiff {
    pub sessions: Change<usize>,
    pub established: Change<usize>,
    /// Sessions of one side only, and sessions whose state or reason changed.
    pub session_changes: Vec<SessionChange>,
    pub updates: Change<u64>,
    pub convergence_time_us: Change<u64>,
    pub nodes: Vec<RouteCountChange>,
    pub prefixes_appeared: Vec<PrefixChange>,
    pub prefixes_disappeared: Vec<PrefixChange>,
    /// Prefixes on both sides held by a different number of speakers.
    pub prefixes_spread_changed: Vec<PrefixChange>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CellChange {
    pub from: String,
    pub to: String,
    pub pairs: Change<u64>,
    pub delivered: Change<u64>,
    /// How many more (or fewer) pairs do not deliver.
    pub count: u64,
    /// The failures of the failing side that account for the change.
    pub failures: Vec<FailureFacts>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PacketChange {
    pub from: String,
    pub to: String,
    /// `5432/TCP`, `UDP`, `ICMP type 8 code 0`.
    pub packet: String,
    pub delivered: Change<u64>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReachDiff {
    pub grouping: Grouping,
    pub pairs: Change<u64>,
    pub delivered: Change<u64>,
    pub became_unreachable: Vec<CellChange>,
    pub became_reachable: Vec<CellChange>,
    /// With policy: per packet class and cell, where the delivered pairs changed.
    pub packets: Vec<PacketChange>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationChange {
    pub name: String,
    /// `None` on the side that does not have it.
    pub passed: Change<Option<bool>>,
    pub expected: String,
    pub actual: Change<Option<String>>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Regression {
    pub kind: FailOn,
    pub what: String,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diff {
    pub base: SideInfo,
    pub new: SideInfo,
    pub fail_on: Vec<FailOn>,
    /// Everything that got worse, of every kind; `regressed` counts only the `fail_on` kinds.
    pub regressions: Vec<Regression>,
    pub regressed: bool,
    pub pods: PodsDiff,
    pub ipam: IpamDiff,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp: Option<BgpDiff>,
    pub reachability: ReachDiff,
    pub expectations: Vec<ExpectationChange>,
}

impl Diff {
    /// Nothing differs at all.
    pub fn is_empty(&self) -> bool {
        self.pods.added.is_empty()
            && self.pods.removed.is_empty()
            && self.pods.changed.is_empty()
            && self.ipam.nodes.is_empty()
            && self.ipam.pools.is_empty()
            && self.bgp.as_ref().is_none_or(|b| {
                b.session_changes.is_empty()
                    && b.nodes.is_empty()
                    && b.prefixes_appeared.is_empty()
                    && b.prefixes_disappeared.is_empty()
                    && b.prefixes_spread_changed.is_empty()
                    && !b.updates.changed()
                    && !b.convergence_time_us.changed()
            })
            && self.reachability.became_unreachable.is_empty()
            && self.reachability.became_reachable.is_empty()
            && self.reachability.packets.is_empty()
            && self.expectations.is_empty()
    }
}

/// Keys of two ordered maps, merged: (key, base value, new value).
fn merged<'a, K: Ord + Clone, V>(
    base: &'a BTreeMap<K, V>,
    new: &'a BTreeMap<K, V>,
) -> impl Iterator<Item = (K, Option<&'a V>, Option<&'a V>)> + 'a {
    let keys: BTreeSet<&K> = base.keys().chain(new.keys()).collect();
    keys.into_iter()
        .map(move |k| (k.clone(), base.get(k), new.get(k)))
}

/// Compares two digests of runs with the same seed.
pub fn compare(base: &Digest, new: &Digest, sources: (String, String), fail_on: &[FailOn]) -> Diff {
    let side = |d: &Digest, source: String| SideInfo {
        source,
        scenario: d.scenario.clone(),
        seed: d.seed,
        end_time_us: d.end_us,
    };
    let pods = pods(base, new);
    let ipam = ipam(base, new);
    let bgp = bgp(base, new);
    let reachability = reachability(base, new);
    let expectations = expectations(base, new);
    let regressions = regressions(&pods, bgp.as_ref(), &reachability, &expectations);
    let regressed = regressions.iter().any(|r| fail_on.contains(&r.kind));
    Diff {
        base: side(base, sources.0),
        new: side(new, sources.1),
        fail_on: fail_on.to_vec(),
        regressions,
        regressed,
        pods,
        ipam,
        bgp,
        reachability,
        expectations,
    }
}

/// An optional value as a diff cell: its text, or `-`.
fn opt<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref()
        .map_or_else(|| "-".to_string(), ToString::to_string)
}

fn pods(base: &Digest, new: &Digest) -> PodsDiff {
    let mut d = PodsDiff {
        count: change(base.pods.len(), new.pods.len()),
        running: change(
            count(base, PodStatus::Running),
            count(new, PodStatus::Running),
        ),
        pending: change(
            count(base, PodStatus::Pending),
            count(new, PodStatus::Pending),
        ),
        allocation_failures: change(
            base.pods.values().filter(|p| p.allocation_failure).count(),
            new.pods.values().filter(|p| p.allocation_failure).count(),
        ),
        added: Vec::new(),
        removed: Vec::new(),
        changed: Vec::new(),
        newly_pending: Vec::new(),
        allocation_failures_gained: Vec::new(),
        allocation_failures_lost: Vec::new(),
    };
    for (name, b, n) in merged(&base.pods, &new.pods) {
        let was_pending = b.is_some_and(|b| b.status == PodStatus::Pending);
        let was_failing = b.is_some_and(|b| b.allocation_failure);
        if let Some(n) = n {
            if n.status == PodStatus::Pending && !was_pending {
                d.newly_pending.push((name.clone(), opt(&n.reason)));
            }
            if n.allocation_failure && !was_failing {
                d.allocation_failures_gained.push(name.clone());
            }
        }
        if was_failing && !n.is_some_and(|n| n.allocation_failure) {
            d.allocation_failures_lost.push(name.clone());
        }
        match (b, n) {
            (Some(b), Some(n)) => {
                let fields = pod_fields(b, n);
                if !fields.is_empty() {
                    d.changed.push(PodChange { pod: name, fields });
                }
            }
            (None, Some(_)) => d.added.push(name),
            (Some(_), None) => d.removed.push(name),
            (None, None) => {}
        }
    }
    d
}

fn count(d: &Digest, status: PodStatus) -> usize {
    d.pods.values().filter(|p| p.status == status).count()
}

fn pod_fields(b: &PodFacts, n: &PodFacts) -> Vec<FieldChange> {
    let mut out = Vec::new();
    let mut field = |field: &'static str, base: String, new: String| {
        if base != new {
            out.push(FieldChange { field, base, new });
        }
    };
    field("status", b.status.to_string(), n.status.to_string());
    field("reason", opt(&b.reason), opt(&n.reason));
    field("node", opt(&b.node), opt(&n.node));
    field("ip", opt(&b.ip), opt(&n.ip));
    field("pool", opt(&b.pool), opt(&n.pool));
    field("block", opt(&b.block), opt(&n.block));
    out
}

fn ipam(base: &Digest, new: &Digest) -> IpamDiff {
    let sum = |d: &Digest, f: fn(&digest::NodeFacts) -> usize| d.nodes.values().map(f).sum();
    let limited = |d: &Digest| d.nodes.values().filter(|n| n.block_limit_reached).count();
    let nodes = merged(&base.nodes, &new.nodes)
        .filter_map(|(node, b, n)| {
            let c = NodeIpamChange {
                node,
                blocks: change(b.map_or(0, |b| b.blocks), n.map_or(0, |n| n.blocks)),
                borrowed: change(b.map_or(0, |b| b.borrowed), n.map_or(0, |n| n.borrowed)),
                block_limit_reached: change(
                    b.is_some_and(|b| b.block_limit_reached),
                    n.is_some_and(|n| n.block_limit_reached),
                ),
            };
            (c.blocks.changed() || c.borrowed.changed() || c.block_limit_reached.changed())
                .then_some(c)
        })
        .collect();
    let pools = merged(&base.pools, &new.pools)
        .filter_map(|(pool, b, n)| {
            let c = PoolChange {
                pool,
                blocks: change(b.map(|b| b.blocks), n.map(|n| n.blocks)),
                allocated: change(b.map(|b| b.allocated), n.map(|n| n.allocated)),
                capacity: change(b.map(|b| b.capacity), n.map(|n| n.capacity)),
            };
            (c.blocks.changed() || c.allocated.changed() || c.capacity.changed()).then_some(c)
        })
        .collect();
    IpamDiff {
        blocks: change(sum(base, |n| n.blocks), sum(new, |n| n.blocks)),
        borrowed: change(sum(base, |n| n.borrowed), sum(new, |n| n.borrowed)),
        nodes_at_block_limit: change(limited(base), limited(new)),
        nodes,
        pools,
    }
}

fn bgp(base: &Digest, new: &Digest) -> Option<BgpDiff> {
    if base.bgp.is_none() && new.bgp.is_none() {
        return None;
    }
    let empty = digest::BgpFacts::default();
    let b = base.bgp.as_ref().unwrap_or(&empty);
    let n = new.bgp.as_ref().unwrap_or(&empty);
    let established = |f: &digest::BgpFacts| {
        f.sessions
            .values()
            .filter(|s| s.state == "Established")
            .count()
    };
    let session_changes = merged(&b.sessions, &n.sessions)
        .filter(|(_, x, y)| x != y)
        .map(|((a, b), x, y)| {
            let state = |s: Option<&SessionFacts>| s.map(|s| s.state);
            let reason = |s: Option<&SessionFacts>| s.and_then(|s| s.reason.clone());
            SessionChange {
                a,
                b,
                state: change(state(x), state(y)),
                reason: change(reason(x), reason(y)),
            }
        })
        .collect();
    let nodes = merged(&base.nodes, &new.nodes)
        .filter_map(|(node, x, y)| {
            let c = RouteCountChange {
                node,
                rib_routes: change(x.and_then(|x| x.rib_routes), y.and_then(|y| y.rib_routes)),
                fib_routes: change(x.map(|x| x.fib_routes), y.map(|y| y.fib_routes)),
            };
            (c.rib_routes.changed() || c.fib_routes.changed()).then_some(c)
        })
        .collect();
    let mut prefixes_appeared = Vec::new();
    let mut prefixes_disappeared = Vec::new();
    let mut prefixes_spread_changed = Vec::new();
    for (prefix, x, y) in merged(&b.prefixes, &n.prefixes) {
        let c = PrefixChange {
            prefix: prefix.to_string(),
            speakers: change(x.copied().unwrap_or(0), y.copied().unwrap_or(0)),
        };
        match (x, y) {
            (None, Some(_)) => prefixes_appeared.push(c),
            (Some(_), None) => prefixes_disappeared.push(c),
            _ if c.speakers.changed() => prefixes_spread_changed.push(c),
            _ => {}
        }
    }
    Some(BgpDiff {
        sessions: change(b.sessions.len(), n.sessions.len()),
        established: change(established(b), established(n)),
        session_changes,
        updates: change(b.updates, n.updates),
        convergence_time_us: change(b.convergence_us, n.convergence_us),
        nodes,
        prefixes_appeared,
        prefixes_disappeared,
        prefixes_spread_changed,
    })
}

/// The failures of `worse` that grew against `better` (by reason and place), with the growth
/// as their count.
fn grown_failures(worse: &CellFacts, better: Option<&CellFacts>) -> Vec<FailureFacts> {
    worse
        .failures
        .iter()
        .filter_map(|f| {
            let before = better
                .and_then(|b| {
                    b.failures
                        .iter()
                        .find(|g| g.reason == f.reason && g.stopped_at == f.stopped_at)
                })
                .map_or(0, |g| g.count);
            (f.count > before).then(|| FailureFacts {
                count: f.count - before,
                ..f.clone()
            })
        })
        .collect()
}

fn reachability(base: &Digest, new: &Digest) -> ReachDiff {
    let mut became_unreachable = Vec::new();
    let mut became_reachable = Vec::new();
    for ((from, to), b, n) in merged(&base.cells, &new.cells) {
        let lost = |c: Option<&CellFacts>| c.map_or(0, CellFacts::unreachable);
        let cell = |count: u64, failures: Vec<FailureFacts>| CellChange {
            from: from.clone(),
            to: to.clone(),
            pairs: change(b.map_or(0, |c| c.pairs), n.map_or(0, |c| c.pairs)),
            delivered: change(b.map_or(0, |c| c.reachable), n.map_or(0, |c| c.reachable)),
            count,
            failures,
        };
        let (x, y) = (lost(b), lost(n));
        if y > x
            && let Some(n) = n
        {
            became_unreachable.push(cell(y - x, grown_failures(n, b)));
        } else if x > y
            && let Some(b) = b
        {
            became_reachable.push(cell(x - y, grown_failures(b, n)));
        }
    }
    ReachDiff {
        grouping: base.grouping,
        pairs: change(base.pairs, new.pairs),
        delivered: change(base.reachable, new.reachable),
        became_unreachable,
        became_reachable,
        packets: packets(base, new),
    }
}

/// Per packet class and cell, when policy is enforced on either side: the packets either
/// side's policy tells apart, each judged on both sides (routing alone on a side without
/// policy, where every packet fares as the cell does).
fn packets(base: &Digest, new: &Digest) -> Vec<PacketChange> {
    if base.policy.is_none() && new.policy.is_none() {
        return Vec::new();
    }
    let mut classes: BTreeSet<Packet> = BTreeSet::new();
    for probe in [&base.policy, &new.policy].into_iter().flatten() {
        let policing = crate::forwarding::connect::Policing::new(&probe.inputs);
        classes.extend(packet_classes(&policing.engine, policing.endpoints()));
    }
    let delivered = |d: &Digest, from: &str, to: &str, packet: Packet| match &d.policy {
        Some(probe) => probe.delivered(from, to, packet),
        None => d
            .cells
            .get(&(from.to_string(), to.to_string()))
            .map_or(0, |c| c.reachable),
    };
    let cells: BTreeSet<&(String, String)> = base.cells.keys().chain(new.cells.keys()).collect();
    let mut out = Vec::new();
    for (from, to) in cells {
        for packet in &classes {
            let c = change(
                delivered(base, from, to, *packet),
                delivered(new, from, to, *packet),
            );
            if c.changed() {
                out.push(PacketChange {
                    from: from.clone(),
                    to: to.clone(),
                    packet: packet.to_string(),
                    delivered: c,
                });
            }
        }
    }
    out
}

fn expectations(base: &Digest, new: &Digest) -> Vec<ExpectationChange> {
    // One whose `when:` does not apply counts as absent: neither passed nor failed.
    let held = |e: Option<&crate::sim::expect::ExpectationResult>| {
        e.filter(|e| e.not_applicable.is_none()).map(|e| e.passed)
    };
    merged(&base.expectations, &new.expectations)
        .filter(|(_, b, n)| held(*b) != held(*n))
        .map(|(name, b, n)| ExpectationChange {
            name,
            passed: change(held(b), held(n)),
            expected: n.or(b).map(|e| e.expected.clone()).unwrap_or_default(),
            actual: change(b.map(|b| b.actual.clone()), n.map(|n| n.actual.clone())),
        })
        .collect()
}

fn regressions(
    pods: &PodsDiff,
    bgp: Option<&BgpDiff>,
    reach: &ReachDiff,
    expectations: &[ExpectationChange],
) -> Vec<Regression> {
    let mut out = Vec::new();
    let mut add = |kind: FailOn, n: usize, what: String| {
        if n > 0 {
            out.push(Regression { kind, what });
        }
    };
    let lost: u64 = reach.became_unreachable.iter().map(|c| c.count).sum();
    add(
        FailOn::Unreachable,
        reach.became_unreachable.len(),
        format!("{lost} pod pairs became unreachable"),
    );
    let fewer: Vec<&PacketChange> = reach
        .packets
        .iter()
        .filter(|p| p.delivered.new < p.delivered.base)
        .collect();
    add(
        FailOn::Unreachable,
        fewer.len(),
        format!(
            "{} (group pair, port/protocol) cell{} deliver fewer pairs",
            fewer.len(),
            if fewer.len() == 1 { "" } else { "s" }
        ),
    );
    let n = pods.newly_pending.len();
    add(FailOn::Pending, n, format!("{n} pods became Pending"));
    let n = pods.allocation_failures_gained.len();
    add(
        FailOn::AllocationFailures,
        n,
        format!("{n} pods were refused an address"),
    );
    let newly_failing = expectations
        .iter()
        .filter(|e| e.passed.new == Some(false))
        .count();
    add(
        FailOn::Expectations,
        newly_failing,
        format!("{newly_failing} expectations newly fail"),
    );
    if let Some(bgp) = bgp {
        let n = bgp
            .session_changes
            .iter()
            .filter(|s| s.state.base == Some("Established") && s.state.new != Some("Established"))
            .count();
        add(
            FailOn::Sessions,
            n,
            format!("{n} BGP sessions are no longer Established"),
        );
    }
    out
}
