//! Reachability between sets of pods when network policy is enforced: routing by forwarding
//! equivalence classes (`reach.rs`), policy by endpoint classes and packet classes.
//!
//! Pods are grouped into policy classes ([`ClassKey`]: everything any selector, net or named
//! port can see of them), so policy is evaluated once per (sender class, receiver class,
//! packet) rather than per pair. A host-network pod has no endpoint: it is its node's host
//! traffic (one class per node, seen by the node's address), never policed towards a pod of
//! its own node (REFERENCE-policy §3.2). The packets are the classes policy tells apart
//! ([`packet_classes`]) or the one packet a question names.
//!
//! Routing does not depend on policy, so it runs once for all classes: [`route`] walks each
//! (source cohort, destination atom) once and hands every verdict, with its sender set and
//! destination class (pods of one node), to a [`Sink`]. Per destination class and verdict the
//! sink sums the senders by policy class (a cohort's classes are counted once per thread),
//! and when the destination class is complete settles each (sender class, receiver class)
//! cell: its pair count, its smallest pair, and the fate of the class pair — worked out once
//! before routing (`Judge`). Work per cell, not per pair and not per class pair × routing.
//!
//! A pair's fate over the packets: egress denies every packet → denied at the sender's egress
//! (the packet never leaves, whatever routing says); otherwise routing decides whether it is
//! delivered; a delivered pair is allowed for the packets both checks allow. A pair that
//! delivers no packet is grouped by its routing reason, or by the policy denial of the first
//! packet.
//!
//! Invariants: the counts equal evaluating [`connect`](super::connect::connect) for every
//! ordered pair of distinct pods and every packet (a property test checks it); groups are
//! sorted and each example is the smallest pair of its group by pod key.
//! This module does not translate Services or judge expectations.

use std::collections::BTreeMap;

use super::connect::{ConnectionVerdict, Denial, Policing, Side};
use super::dataplane::{Attachment, Dataplane, PodInfo};
use super::fib::PodKey;
use super::reach::{Prepared, Receivers, SenderSet, Senders, Sink, route};
use super::walk::{Reason, Verdict};
use crate::model::hash::FastMap;
use crate::model::topology::DeviceId;
use crate::policy::eval::{
    AddressKey, ClassKey, DecidedBy, Endpoint, Packet, Party, packet_classes,
};
use crate::policy::model::Direction;

mod tally;
use tally::{Agg, ClassTally, GroupKey, Tallied};

/// Pairs that deliver no packet for the same reason at the same place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedGroup {
    /// `Dropped` (routing) or `PolicyDenied`.
    pub verdict: ConnectionVerdict,
    pub count: u64,
    pub example: (PodKey, PodKey),
}

/// Reachability of ordered pairs of distinct pods over a list of packets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyReach {
    pub pairs: u64,
    /// Pairs delivered for every packet.
    pub all_packets: u64,
    /// Pairs delivered for at least one packet (`all_packets` included).
    pub some_packets: u64,
    /// Pairs delivered for no packet, sorted by verdict.
    pub blocked: Vec<BlockedGroup>,
    /// The smallest pair delivered for some packets but not all, if any.
    pub partial_example: Option<(PodKey, PodKey)>,
}

/// What policy sees of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Seen {
    /// A workload endpoint of this policy class.
    Endpoint(usize),
    /// A host-network pod: host traffic of this node, from and to the node's address.
    Host(DeviceId),
    /// A pod without an endpoint (none in practice): never checked.
    Unseen,
}

/// What policy evaluates for a class: an endpoint class, an address without an endpoint by
/// what rules see of it, or nothing.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum View {
    Endpoint(usize),
    Address(AddressKey),
    Unseen,
}

/// What policy does to the packets between a sender class and a receiver class.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Summary {
    allowed: usize,
    /// Every packet is denied at the sender's egress: by what, for the first one.
    egress_denies_all: Option<DecidedBy>,
    /// The first packet's denial, when it is denied.
    first_denial: Option<(Side, DecidedBy)>,
}

/// Evaluates `packets` (every packet class when `None`) from every pod of `from` to every other
/// pod of `to`.
pub fn policy_reachability(
    dp: &Dataplane,
    policing: &Policing<'_>,
    from: &[PodKey],
    to: &[PodKey],
    packets: Option<&[Packet]>,
) -> PolicyReach {
    policy_reachability_in(&Prepared::new(dp), dp, policing, from, to, packets)
}

/// [`policy_reachability`] with the dataplane's shared routing setup already done (`prep`
/// must be [`Prepared::new`] of `dp`), for many computations over subsets of the pods.
pub fn policy_reachability_in(
    prep: &Prepared,
    dp: &Dataplane,
    policing: &Policing<'_>,
    from: &[PodKey],
    to: &[PodKey],
    packets: Option<&[Packet]>,
) -> PolicyReach {
    let known = |keys: &[PodKey]| {
        let mut v: Vec<&PodInfo> = keys.iter().filter_map(|k| dp.pod(*k)).collect();
        v.sort_by_key(|p| p.key);
        v.dedup_by_key(|p| p.key);
        v
    };
    let (from, to) = (known(from), known(to));
    let all_packets: Vec<Packet>;
    let packets = match packets {
        Some(p) => p,
        None => {
            all_packets = packet_classes(&policing.engine, policing.endpoints());
            &all_packets
        }
    };
    let judge = Judge::new(dp, policing, &from, &to, packets);
    let to_keys: Vec<PodKey> = to.iter().map(|p| p.key).collect();
    let common = from
        .iter()
        .filter(|p| to_keys.binary_search(&p.key).is_ok())
        .count() as u64;
    let mut out = Tallied::default();

    // Pairs whose every packet the sender's egress denies: denied on its node, whatever
    // routing would do.
    let mut receivers: Vec<Agg> = vec![Agg::default(); judge.seen.len()];
    for p in &to {
        receivers[judge.class_of(p.key) as usize].push(p.key);
    }
    let mut egress_all: FastMap<u32, Vec<(u32, Agg, bool)>> = FastMap::default();
    for p in &from {
        let a = judge.class_of(p.key);
        let groups = egress_all.entry(a).or_insert_with(|| {
            let mut by_denial: BTreeMap<u32, (Agg, bool)> = BTreeMap::new();
            for (b, agg) in receivers.iter().enumerate() {
                if agg.count == 0 {
                    continue;
                }
                if let Some(by) = judge.fate(a, b as u32, false).egress_all {
                    let g = by_denial.entry(by).or_default();
                    g.0.merge(agg);
                    g.1 |= b as u32 == a;
                }
            }
            by_denial
                .into_iter()
                .map(|(by, (agg, own))| (by, agg, own))
                .collect()
        });
        for (by, agg, own) in groups.iter() {
            let itself = *own && to_keys.binary_search(&p.key).is_ok();
            let example = if agg.first == Some(p.key) {
                agg.second
            } else {
                agg.first
            };
            if let Some(d) = example {
                let key = GroupKey::Denied {
                    side: Side::Egress,
                    at: p.device,
                    by: *by,
                };
                out.add(key, agg.count - u64::from(itself), (p.key, d));
            }
        }
    }

    // Pairs with a pod that holds a device's address: `trace` stops them at the sender's
    // node (`duplicate-address`) before any walk.
    let mut clean_from = from.clone();
    clean_from.retain(|p| !dp.is_duplicate(p));
    let mut clean_to = to.clone();
    clean_to.retain(|p| !dp.is_duplicate(p));
    if clean_from.len() < from.len() || clean_to.len() < to.len() {
        for s in &from {
            let s_dup = dp.is_duplicate(s);
            for t in &to {
                if t.key == s.key || !(s_dup || dp.is_duplicate(t)) {
                    continue;
                }
                let verdict = Verdict::Dropped {
                    reason: Reason::DuplicateAddress,
                    at: s.device,
                };
                let a = judge.class_of(s.key);
                let b = judge.class_of(t.key);
                let fate = judge.fate(a, b, judge.host_local(a, t.device));
                out.settle(&judge, fate, verdict, t.device, 1, (s.key, t.key));
            }
        }
    }

    // Every other pair: routing once per (source cohort, destination class), tallied per
    // pair of policy classes.
    for t in route(prep, dp, &clean_from, &clean_to, || ClassTally::new(&judge)) {
        out.merge(t.out);
    }

    let mut blocked: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
    for (key, (count, example)) in out.groups {
        let verdict = match key {
            GroupKey::Dropped { reason, at } => ConnectionVerdict::Dropped { reason, at },
            GroupKey::Denied { side, at, by } => ConnectionVerdict::PolicyDenied(Denial {
                side,
                at,
                by: judge.bys[by as usize].clone(),
            }),
        };
        let g = blocked.entry(verdict).or_insert((0, example));
        g.0 += count;
        g.1 = g.1.min(example);
    }
    PolicyReach {
        pairs: (from.len() as u64) * (to.len() as u64) - common,
        all_packets: out.all_packets,
        some_packets: out.some_packets,
        blocked: blocked
            .into_iter()
            .filter(|(_, (count, _))| *count > 0)
            .map(|(verdict, (count, example))| BlockedGroup {
                verdict,
                count,
                example,
            })
            .collect(),
        partial_example: out.partial_example,
    }
}

/// What policy does to the packets between two classes, with its deciders as indices into
/// [`Judge::bys`].
#[derive(Clone, Copy, Debug)]
struct Fate {
    allowed: usize,
    /// Every packet is denied at the sender's egress: by what, for the first one.
    egress_all: Option<u32>,
    /// The first packet's denial, when it is denied.
    first_denial: Option<(Side, u32)>,
}

/// The policy classes of the pods and what policy does between any two of them, worked out
/// once before routing (it is read from every thread).
struct Judge<'a> {
    packets: usize,
    /// What policy sees of each class, by class index.
    seen: Vec<Seen>,
    /// Each class's view: classes policy cannot tell apart share one (host traffic of nodes
    /// whose addresses every rule sees alike).
    view: Vec<u32>,
    views: usize,
    /// Each pod's class index.
    class: FastMap<PodKey, u32>,
    fates: Vec<Fate>,
    /// The fate of (sender view, receiver view) at `a * views + b` (`u32::MAX` for a pair
    /// that does not occur).
    table: Vec<u32>,
    /// The fates of host traffic towards a receiver on its own node, by (sender view,
    /// receiver view).
    local: FastMap<(u32, u32), u32>,
    bys: Vec<DecidedBy>,
    /// Per class: as a sender, some receiver class's traffic is delivered by routing and then
    /// denied at the sender's egress (so the node of each sender matters).
    egress_after: Vec<bool>,
    _dp: std::marker::PhantomData<&'a Dataplane>,
}

impl<'a> Judge<'a> {
    fn new(
        dp: &'a Dataplane,
        policing: &Policing<'_>,
        from: &[&PodInfo],
        to: &[&PodInfo],
        packets: &[Packet],
    ) -> Judge<'a> {
        let nets = policing.engine.rule_nets();
        // Policy classes; a host-network pod is its node's host traffic (one class per node),
        // and pods with neither (none in practice) share one class that no policy checks.
        // Ids in order of first appearance (pods in key order, senders first): deterministic.
        let mut keys: FastMap<ClassKey, usize> = FastMap::default();
        let mut reps: Vec<&Endpoint> = Vec::new();
        let mut index: FastMap<Seen, u32> = FastMap::default();
        let mut seen: Vec<Seen> = Vec::new();
        let mut class: FastMap<PodKey, u32> = FastMap::default();
        let mut from_classes: Vec<u32> = Vec::new();
        let mut to_classes: Vec<u32> = Vec::new();
        for (set, classes) in [(from, &mut from_classes), (to, &mut to_classes)] {
            for p in set {
                let s = if p.attachment == Attachment::Host {
                    Seen::Host(p.device)
                } else if let Some(e) = policing.endpoint(p.key) {
                    let key = policing.engine.class_key(e, &nets);
                    let next = keys.len();
                    let id = *keys.entry(key).or_insert(next);
                    if id == reps.len() {
                        reps.push(e);
                    }
                    Seen::Endpoint(id)
                } else {
                    Seen::Unseen
                };
                let next = seen.len() as u32;
                let c = *index.entry(s).or_insert(next);
                if c == next {
                    seen.push(s);
                }
                class.insert(p.key, c);
                classes.push(c);
            }
            classes.sort_unstable();
            classes.dedup();
        }
        // What policy evaluates: each endpoint class, each group of node addresses every rule
        // sees alike (so host traffic of thousands of nodes is evaluated a few times, not
        // once per node), and nothing for a pod policy never sees. Ids in class order.
        let mut view_ids: FastMap<View, u32> = FastMap::default();
        let mut parties: Vec<Option<Party<'_>>> = Vec::new();
        let mut view: Vec<u32> = Vec::with_capacity(seen.len());
        for s in &seen {
            let (key, party) = match *s {
                Seen::Endpoint(i) => (View::Endpoint(i), Some(Party::endpoint(reps[i]))),
                Seen::Host(d) => match dp.address(d) {
                    Some(ip) => (
                        View::Address(policing.engine.address_key(ip, &nets)),
                        Some(Party::address(ip)),
                    ),
                    None => (View::Unseen, None),
                },
                Seen::Unseen => (View::Unseen, None),
            };
            let next = parties.len() as u32;
            let v = *view_ids.entry(key).or_insert(next);
            if v == next {
                parties.push(party);
            }
            view.push(v);
        }
        let views_of = |classes: &[u32]| {
            let mut v: Vec<u32> = classes.iter().map(|c| view[*c as usize]).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (from_views, to_views) = (views_of(&from_classes), views_of(&to_classes));
        let k = parties.len();
        let mut fates: Vec<Fate> = Vec::new();
        let mut fate_ids: BTreeMap<Summary, u32> = BTreeMap::new();
        let mut by_ids: BTreeMap<DecidedBy, u32> = BTreeMap::new();
        let mut fate_of = |summary: Summary| -> u32 {
            if let Some(id) = fate_ids.get(&summary) {
                return *id;
            }
            let mut by = |b: &DecidedBy| -> u32 {
                let next = by_ids.len() as u32;
                *by_ids.entry(b.clone()).or_insert(next)
            };
            let fate = Fate {
                allowed: summary.allowed,
                egress_all: summary.egress_denies_all.as_ref().map(&mut by),
                first_denial: summary.first_denial.as_ref().map(|(s, b)| (*s, by(b))),
            };
            let id = fates.len() as u32;
            fates.push(fate);
            fate_ids.insert(summary, id);
            id
        };
        let mut table = vec![u32::MAX; k * k];
        for &a in &from_views {
            for &b in &to_views {
                let (src, dst) = (parties[a as usize], parties[b as usize]);
                let s = summarize(policing, src, dst, false, packets);
                table[a as usize * k + b as usize] = fate_of(s);
            }
        }
        // Host → local pod: not policed (REFERENCE-policy §1.6, §3.2).
        let mut local: FastMap<(u32, u32), u32> = FastMap::default();
        let host_nodes: std::collections::BTreeSet<DeviceId> = from_classes
            .iter()
            .filter_map(|a| match seen[*a as usize] {
                Seen::Host(d) => Some(d),
                _ => None,
            })
            .collect();
        for p in to.iter().filter(|p| host_nodes.contains(&p.device)) {
            let (a, b) = (
                view[index[&Seen::Host(p.device)] as usize],
                view[class[&p.key] as usize],
            );
            if let std::collections::hash_map::Entry::Vacant(slot) = local.entry((a, b)) {
                let (src, dst) = (parties[a as usize], parties[b as usize]);
                slot.insert(fate_of(summarize(policing, src, dst, true, packets)));
            }
        }
        let mut bys: Vec<(u32, DecidedBy)> = by_ids.into_iter().map(|(b, i)| (i, b)).collect();
        bys.sort_by_key(|(i, _)| *i);
        let egress_after = vec![false; seen.len()];
        let mut judge = Judge {
            packets: packets.len(),
            seen,
            view,
            views: k,
            class,
            fates,
            table,
            local,
            bys: bys.into_iter().map(|(_, b)| b).collect(),
            egress_after,
            _dp: std::marker::PhantomData,
        };
        let after = |f: Fate| matches!(judge.denied_after_routing(f), Some((Side::Egress, _)));
        let by_view: Vec<bool> = (0..k as u32)
            .map(|a| {
                to_views.iter().any(|&b| {
                    let ids = [
                        judge.table.get(a as usize * k + b as usize).copied(),
                        judge.local.get(&(a, b)).copied(),
                    ];
                    ids.into_iter()
                        .flatten()
                        .any(|i| judge.fates.get(i as usize).is_some_and(|f| after(*f)))
                })
            })
            .collect();
        for (c, v) in judge.view.iter().enumerate() {
            judge.egress_after[c] = by_view[*v as usize];
        }
        judge
    }

    fn class_of(&self, pod: PodKey) -> u32 {
        self.class.get(&pod).copied().unwrap_or(u32::MAX)
    }

    /// Whether traffic from sender class `a` to a pod on `node` is a node's host traffic to
    /// one of its own pods.
    fn host_local(&self, a: u32, node: DeviceId) -> bool {
        matches!(self.seen.get(a as usize), Some(Seen::Host(d)) if *d == node)
    }

    fn fate(&self, a: u32, b: u32, host_local: bool) -> Fate {
        let view = |c: u32| self.view.get(c as usize).copied().unwrap_or(u32::MAX);
        let (a, b) = (view(a), view(b));
        let id = if host_local {
            self.local.get(&(a, b)).copied()
        } else {
            let k = self.views;
            self.table.get(a as usize * k + b as usize).copied()
        };
        match id.and_then(|i| self.fates.get(i as usize)) {
            Some(f) => *f,
            // Unreachable: every pair that occurs has a fate.
            None => Fate {
                allowed: self.packets,
                egress_all: None,
                first_denial: None,
            },
        }
    }

    /// The denial of a pair routing delivers when policy allows none of its packets (and
    /// the sender's egress does not deny them all).
    fn denied_after_routing(&self, f: Fate) -> Option<(Side, u32)> {
        if f.egress_all.is_some() || f.allowed > 0 || self.packets == 0 {
            return None;
        }
        f.first_denial
    }
}

/// What policy does to `packets` from `src` to `dst`: the sender's egress when it is a
/// workload endpoint, then the receiver's ingress when it is one and the traffic is not its
/// own node's host traffic (`host_local`). A party that is no endpoint (a host-network pod:
/// its node's address) is seen by its address alone; `None` is a pod policy never sees.
fn summarize(
    policing: &Policing<'_>,
    src: Option<Party<'_>>,
    dst: Option<Party<'_>>,
    host_local: bool,
    packets: &[Packet],
) -> Summary {
    let engine = &policing.engine;
    let mut allowed = 0;
    let mut egress_denials = 0;
    let mut first_egress: Option<DecidedBy> = None;
    let mut first_denial = None;
    for (i, p) in packets.iter().enumerate() {
        let out = match (src, dst) {
            (Some(s), Some(d)) => s
                .endpoint
                .map(|e| engine.check(e, Direction::Egress, d, p, &mut ())),
            _ => None,
        };
        if let Some(o) = &out
            && !o.allowed
        {
            egress_denials += 1;
            if first_egress.is_none() {
                first_egress = Some(o.by.clone());
            }
            if i == 0 {
                first_denial = Some((Side::Egress, o.by.clone()));
            }
            continue;
        }
        let inn = match (src, dst) {
            (Some(s), Some(d)) if !host_local => d
                .endpoint
                .map(|e| engine.check(e, Direction::Ingress, s, p, &mut ())),
            _ => None,
        };
        match inn {
            Some(o) if !o.allowed => {
                if i == 0 {
                    first_denial = Some((Side::Ingress, o.by));
                }
            }
            _ => allowed += 1,
        }
    }
    Summary {
        allowed,
        egress_denies_all: (egress_denials == packets.len() && !packets.is_empty())
            .then_some(first_egress)
            .flatten(),
        first_denial,
    }
}

#[cfg(test)]
pub(crate) mod tests;
