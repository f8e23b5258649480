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
            all_packets = packet_classes(policing.engine.set(), policing.endpoints());
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
    let prep = Prepared::new(dp);
    for t in route(&prep, dp, &clean_from, &clean_to, || {
        ClassTally::new(&judge)
    }) {
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

/// Where blocked pairs are counted, deciders by index (cheap to hash).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum GroupKey {
    Dropped { reason: Reason, at: DeviceId },
    Denied { side: Side, at: DeviceId, by: u32 },
}

/// Counts and smallest examples; adding is commutative, so the order in which threads and
/// atoms are tallied does not change the result.
#[derive(Default)]
struct Tallied {
    all_packets: u64,
    some_packets: u64,
    partial_example: Option<(PodKey, PodKey)>,
    groups: FastMap<GroupKey, (u64, (PodKey, PodKey))>,
}

impl Tallied {
    fn add(&mut self, key: GroupKey, count: u64, example: (PodKey, PodKey)) {
        if count == 0 {
            return;
        }
        let g = self.groups.entry(key).or_insert((0, example));
        g.0 += count;
        g.1 = g.1.min(example);
    }

    /// `count` pairs of one fate with one routing verdict towards pods on `receiver_node`.
    /// Pairs the sender's egress denies entirely are counted apart (routing does not
    /// matter to them), and so are those denied at the sender's egress after routing (the
    /// sender's node names the group).
    fn settle(
        &mut self,
        judge: &Judge<'_>,
        fate: Fate,
        verdict: Verdict,
        receiver_node: DeviceId,
        count: u64,
        example: (PodKey, PodKey),
    ) {
        if fate.egress_all.is_some() || count == 0 {
            return;
        }
        match verdict {
            Verdict::Dropped { reason, at } => {
                self.add(GroupKey::Dropped { reason, at }, count, example);
            }
            Verdict::Delivered => {
                if fate.allowed == judge.packets {
                    self.all_packets += count;
                    self.some_packets += count;
                } else if fate.allowed > 0 {
                    self.some_packets += count;
                    self.partial_example = Some(
                        self.partial_example
                            .map_or(example, |e: (PodKey, PodKey)| e.min(example)),
                    );
                } else if let Some((Side::Ingress, by)) = judge.denied_after_routing(fate) {
                    let key = GroupKey::Denied {
                        side: Side::Ingress,
                        at: receiver_node,
                        by,
                    };
                    self.add(key, count, example);
                }
            }
        }
    }

    fn merge(&mut self, other: Tallied) {
        self.all_packets += other.all_packets;
        self.some_packets += other.some_packets;
        self.partial_example = match (self.partial_example, other.partial_example) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        for (key, (count, example)) in other.groups {
            self.add(key, count, example);
        }
    }
}

/// Pods of one class in a set: how many, and the two smallest.
#[derive(Clone, Copy, Debug, Default)]
struct Agg {
    count: u64,
    first: Option<PodKey>,
    second: Option<PodKey>,
}

impl Agg {
    fn push(&mut self, pod: PodKey) {
        self.count += 1;
        self.keep(pod);
    }

    fn keep(&mut self, pod: PodKey) {
        match self.first {
            Some(f) if pod >= f => {
                if self.second.is_none_or(|s| pod < s) {
                    self.second = Some(pod);
                }
            }
            _ => {
                self.second = self.first;
                self.first = Some(pod);
            }
        }
    }

    /// Adds a set of other pods.
    fn merge(&mut self, other: &Agg) {
        self.count += other.count;
        for pod in [other.first, other.second].into_iter().flatten() {
            self.keep(pod);
        }
    }

    /// The smallest pair of distinct pods of `self` × `to`.
    fn smallest_pair(&self, to: &Agg) -> Option<(PodKey, PodKey)> {
        let (s0, d0) = (self.first?, to.first?);
        if s0 != d0 {
            return Some((s0, d0));
        }
        match (to.second, self.second) {
            (Some(d1), _) => Some((s0, d1)),
            (None, Some(s1)) => Some((s1, d0)),
            (None, None) => None,
        }
    }
}

/// The senders of one destination class with one routing verdict, by class.
struct Acc {
    dest: usize,
    node: DeviceId,
    verdict: Verdict,
    /// By class index; `touched` lists the classes with a count.
    senders: Vec<Agg>,
    touched: Vec<u32>,
    /// The destination class's pods by class, sorted by class.
    receivers: Vec<(u32, Agg)>,
    /// Pods among both senders and receivers, by class.
    own: Vec<(u32, u64)>,
}

/// One thread's [`Sink`]: per destination class and routing verdict it sums the senders by
/// policy class, and settles every (sender class, receiver class) once all the sources of
/// the destination class are in (routing verdicts do not depend on policy, so routing runs
/// once for every class).
struct ClassTally<'j> {
    judge: &'j Judge<'j>,
    /// Each cohort's senders by class, once computed (its index is fixed per computation).
    cohorts: Vec<Option<Vec<(u32, Agg)>>>,
    live: Vec<Acc>,
    spare: Vec<Acc>,
    scratch: Vec<Agg>,
    out: Tallied,
}

impl<'j> ClassTally<'j> {
    fn new(judge: &'j Judge<'j>) -> ClassTally<'j> {
        ClassTally {
            judge,
            cohorts: Vec::new(),
            live: Vec::new(),
            spare: Vec::new(),
            scratch: vec![Agg::default(); judge.seen.len()],
            out: Tallied::default(),
        }
    }

    /// The pods by class, sorted by class.
    fn by_class(&mut self, pods: impl Iterator<Item = PodKey>) -> Vec<(u32, Agg)> {
        let mut touched: Vec<u32> = Vec::new();
        for p in pods {
            let c = self.judge.class_of(p);
            let Some(slot) = self.scratch.get_mut(c as usize) else {
                continue;
            };
            if slot.count == 0 {
                touched.push(c);
            }
            slot.push(p);
        }
        touched.sort_unstable();
        touched
            .into_iter()
            .map(|c| (c, std::mem::take(&mut self.scratch[c as usize])))
            .collect()
    }

    fn senders(&mut self, from: &Senders<'_>) -> Vec<(u32, Agg)> {
        match from.set {
            SenderSet::Pods { pods, .. } => self.by_class(pods.iter().copied()),
            SenderSet::Cohort {
                index,
                members,
                except: [],
            } => {
                if let Some(Some(h)) = self.cohorts.get(index) {
                    return h.clone();
                }
                let h = self.by_class(members.iter().flat_map(|(_, p)| p.iter().copied()));
                if self.cohorts.len() <= index {
                    self.cohorts.resize(index + 1, None);
                }
                self.cohorts[index] = Some(h.clone());
                h
            }
            SenderSet::Cohort {
                members, except, ..
            } => self.by_class(
                members
                    .iter()
                    .filter(|(d, _)| !except.contains(d))
                    .flat_map(|(_, p)| p.iter().copied()),
            ),
        }
    }

    /// Pairs delivered by routing and denied at the sender's egress: grouped by each
    /// sender's node.
    fn egress_after(&mut self, from: &Senders<'_>, to: &Receivers<'_>, senders: &[(u32, Agg)]) {
        let judge = self.judge;
        let nodes: Vec<(DeviceId, &[PodKey])> = match from.set {
            SenderSet::Pods { device, pods } => vec![(device, pods)],
            SenderSet::Cohort {
                members, except, ..
            } => members
                .iter()
                .filter(|(d, _)| !except.contains(d))
                .copied()
                .collect(),
        };
        let mut receivers: BTreeMap<u32, Vec<PodKey>> = BTreeMap::new();
        for p in to.pods {
            receivers.entry(judge.class_of(*p)).or_default().push(*p);
        }
        for &(a, _) in senders {
            if !judge.egress_after.get(a as usize).copied().unwrap_or(false) {
                continue;
            }
            for (b, rr) in &receivers {
                let fate = judge.fate(a, *b, judge.host_local(a, to.node));
                let Some((Side::Egress, by)) = judge.denied_after_routing(fate) else {
                    continue;
                };
                for (device, pods) in &nodes {
                    let ss: Vec<PodKey> = pods
                        .iter()
                        .copied()
                        .filter(|p| judge.class_of(*p) == a)
                        .collect();
                    let (Some(ex), count) = (smallest_pair(&ss, rr), pair_count(&ss, rr)) else {
                        continue;
                    };
                    let key = GroupKey::Denied {
                        side: Side::Egress,
                        at: *device,
                        by,
                    };
                    self.out.add(key, count, ex);
                }
            }
        }
    }
}

impl Sink for ClassTally<'_> {
    fn record(&mut self, verdict: Verdict, from: &Senders<'_>, to: &Receivers<'_>, own: u64) {
        let senders = self.senders(from);
        if verdict == Verdict::Delivered
            && senders
                .iter()
                .any(|(a, _)| self.judge.egress_after.get(*a as usize) == Some(&true))
        {
            self.egress_after(from, to, &senders);
        }
        let i = match self
            .live
            .iter()
            .position(|a| a.dest == to.index && a.verdict == verdict)
        {
            Some(i) => i,
            None => {
                let receivers = self.by_class(to.pods.iter().copied());
                let mut acc = self.spare.pop().unwrap_or_else(|| Acc {
                    dest: 0,
                    node: to.node,
                    verdict,
                    senders: vec![Agg::default(); self.judge.seen.len()],
                    touched: Vec::new(),
                    receivers: Vec::new(),
                    own: Vec::new(),
                });
                acc.dest = to.index;
                acc.node = to.node;
                acc.verdict = verdict;
                acc.receivers = receivers;
                self.live.push(acc);
                self.live.len() - 1
            }
        };
        let judge = self.judge;
        let acc = &mut self.live[i];
        for (c, agg) in &senders {
            let slot = &mut acc.senders[*c as usize];
            if slot.count == 0 {
                acc.touched.push(*c);
            }
            slot.merge(agg);
        }
        if own > 0 {
            // The senders on the receivers' node that are receivers too.
            let here: &[PodKey] = match from.set {
                SenderSet::Pods { pods, .. } => pods,
                SenderSet::Cohort {
                    members, except, ..
                } => members
                    .iter()
                    .find(|(d, _)| *d == to.node && !except.contains(d))
                    .map_or(&[][..], |(_, p)| *p),
            };
            for p in here.iter().filter(|p| to.pods.binary_search(p).is_ok()) {
                let c = judge.class_of(*p);
                match acc.own.iter_mut().find(|(x, _)| *x == c) {
                    Some((_, n)) => *n += 1,
                    None => acc.own.push((c, 1)),
                }
            }
        }
    }

    fn flush(&mut self) {
        let judge = self.judge;
        for mut acc in std::mem::take(&mut self.live) {
            for &a in &acc.touched {
                let sa = acc.senders[a as usize];
                let host_local = judge.host_local(a, acc.node);
                for (b, rb) in &acc.receivers {
                    let own = if a == *b {
                        acc.own.iter().find(|(c, _)| *c == a).map_or(0, |(_, n)| *n)
                    } else {
                        0
                    };
                    let count = sa.count * rb.count - own;
                    let Some(example) = sa.smallest_pair(rb) else {
                        continue;
                    };
                    let fate = judge.fate(a, *b, host_local);
                    self.out
                        .settle(judge, fate, acc.verdict, acc.node, count, example);
                }
                acc.senders[a as usize] = Agg::default();
            }
            acc.touched.clear();
            acc.own.clear();
            acc.receivers.clear();
            self.spare.push(acc);
        }
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

/// Ordered pairs of distinct pods from `a` × `b` (both sorted, without duplicates).
fn pair_count(a: &[PodKey], b: &[PodKey]) -> u64 {
    let common = a.iter().filter(|k| b.binary_search(k).is_ok()).count() as u64;
    (a.len() as u64) * (b.len() as u64) - common
}

fn smallest_pair(a: &[PodKey], b: &[PodKey]) -> Option<(PodKey, PodKey)> {
    let s0 = *a.first()?;
    let d0 = *b.first()?;
    if s0 != d0 {
        return Some((s0, d0));
    }
    match (b.get(1), a.get(1)) {
        (Some(d1), _) => Some((s0, *d1)),
        (None, Some(s1)) => Some((*s1, d0)),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::forwarding::connect::{PolicyInputs, connect};
    use crate::forwarding::reach::tests::{Gen, scenario};
    use crate::model::network::CalicoProfile;
    use crate::model::selector::Selector;
    use crate::policy::eval::NamedPort;
    use crate::policy::model::{
        Action, EntityRule, Policy, PolicyKind, PolicyResource, PolicySet, PolicyTypes, PortMatch,
        Protocol, Rule, Tier, TierAction,
    };

    fn sel(s: &str) -> Selector {
        Selector::parse(s).expect("selector in fixture")
    }

    /// A random entity: a selector, a namespace selector, nets over the pod ranges, ports.
    fn entity(g: &mut Gen, with_ports: bool) -> EntityRule {
        let mut e = EntityRule::default();
        if g.chance(40) {
            e.selector = Some(sel(g.pick(&[
                "app == 'x'",
                "app != 'y'",
                "has(app)",
                "all()",
            ])));
        }
        if g.chance(25) {
            e.namespace_selector = Some(sel(g.pick(&["team == 'red'", "all()"])));
        }
        if g.chance(20) {
            e.not_selector = Some(sel("app == 'z'"));
        }
        if g.chance(25) {
            e.nets = vec![
                g.pick(&["10.200.0.0/16", "10.200.1.0/24", "10.0.0.0/8"])
                    .parse()
                    .unwrap(),
            ];
        }
        if g.chance(15) {
            e.not_nets = vec![g.pick(&["10.200.0.0/24", "10.1.0.100/32"]).parse().unwrap()];
        }
        if with_ports && g.chance(50) {
            let choices = [
                PortMatch::single(80),
                PortMatch::Range {
                    first: 8000,
                    last: 8100,
                },
                PortMatch::Named("web".to_string()),
            ];
            e.ports = vec![choices[g.below(choices.len())].clone()];
        }
        e
    }

    fn random_policy(g: &mut Gen, i: usize) -> Policy {
        let kind = g.pick(&[
            PolicyKind::KubernetesNetworkPolicy,
            PolicyKind::CalicoNetworkPolicy,
            PolicyKind::GlobalNetworkPolicy,
        ]);
        let namespace = kind
            .is_namespaced()
            .then(|| g.pick(&["red", "blue"]).to_string());
        let rules = |g: &mut Gen| -> Vec<Rule> {
            (0..g.below(3))
                .map(|_| {
                    let action = if kind == PolicyKind::KubernetesNetworkPolicy {
                        Action::Allow
                    } else {
                        g.pick(&[Action::Allow, Action::Deny, Action::Pass, Action::Log])
                    };
                    let mut r = Rule::any(action);
                    let ports = g.chance(50);
                    if ports {
                        r.protocol = Some(g.pick(&[Protocol::TCP, Protocol::UDP]));
                    }
                    r.source = entity(g, false);
                    r.destination = entity(g, ports);
                    r
                })
                .collect()
        };
        let ingress = rules(g);
        let egress = rules(g);
        Policy {
            kind,
            staged: g.chance(10),
            namespace,
            name: format!("p{i}"),
            tier: if kind != PolicyKind::KubernetesNetworkPolicy && g.chance(30) {
                "guard".to_string()
            } else {
                "default".to_string()
            },
            order: g.chance(70).then(|| g.pick(&[100.0, 1000.0, 2000.0])),
            selector: sel(g.pick(&["all()", "app == 'x'", "app in {'y', 'z'}"])),
            service_account_selector: None,
            namespace_selector: None,
            types: PolicyTypes {
                ingress: g.chance(70),
                egress: g.chance(50),
            },
            ingress,
            egress,
        }
    }

    fn inputs(seed: u64, dp: &Dataplane) -> PolicyInputs {
        let mut g = Gen(seed ^ 0x5eed);
        let mut set = PolicySet::new(CalicoProfile::V3_30);
        set.apply(&PolicyResource::Namespace {
            name: "red".into(),
            labels: [("team".to_string(), "red".to_string())].into(),
        });
        set.apply(&PolicyResource::Tier(Tier {
            name: "guard".into(),
            order: Some(100.0),
            default_action: g.pick(&[TierAction::Deny, TierAction::Pass]),
        }));
        for i in 0..1 + g.below(4) {
            set.apply(&PolicyResource::Policy(Box::new(random_policy(&mut g, i))));
        }
        let mut endpoints = BTreeMap::new();
        // Host-network pods have no workload endpoint.
        for p in dp.pods().filter(|p| p.attachment != Attachment::Host) {
            let ns = g.pick(&["red", "blue"]);
            let app = g.pick(&["x", "y", "z"]);
            let labels = [("app".to_string(), app.to_string())].into();
            endpoints.insert(
                p.key,
                Endpoint {
                    ports: if g.chance(50) {
                        vec![NamedPort {
                            name: "web".into(),
                            port: 8080,
                            protocol: Protocol::TCP,
                        }]
                    } else {
                        Vec::new()
                    },
                    windows: g.chance(10),
                    ..Endpoint::pod(ns, &format!("pod-{}", p.key.0), p.ip, &labels)
                },
            );
        }
        PolicyInputs {
            set,
            endpoints,
            services: BTreeMap::new(),
        }
    }

    /// Every ordered pair, every packet, one connection at a time.
    fn brute(
        dp: &Dataplane,
        pol: &Policing<'_>,
        from: &[PodKey],
        to: &[PodKey],
        packets: &[Packet],
    ) -> PolicyReach {
        let mut out = PolicyReach::default();
        let mut groups: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
        for s in from {
            for d in to {
                if s == d {
                    continue;
                }
                let Some(ip) = dp.pod(*d).map(|p| p.ip) else {
                    continue;
                };
                out.pairs += 1;
                let cs: Vec<Connection> = packets
                    .iter()
                    .map(|p| {
                        connect(dp, Some(pol), Source::Pod(*s), ip, p, false)
                            .expect("in the dataplane")
                    })
                    .collect();
                let delivered = cs.iter().filter(|c| c.verdict.delivered()).count();
                if delivered == packets.len() {
                    out.all_packets += 1;
                }
                if delivered > 0 {
                    out.some_packets += 1;
                    if delivered < packets.len() {
                        out.partial_example = Some(
                            out.partial_example
                                .map_or((*s, *d), |e: (PodKey, PodKey)| e.min((*s, *d))),
                        );
                    }
                    continue;
                }
                let egress_denied = |c: &Connection| matches!(&c.verdict, ConnectionVerdict::PolicyDenied(x) if x.side == Side::Egress);
                let verdict = if cs.iter().all(egress_denied) {
                    cs[0].verdict.clone()
                } else {
                    match cs.iter().find(|c| !egress_denied(c)).map(|c| &c.verdict) {
                        Some(v @ ConnectionVerdict::Dropped { .. }) => v.clone(),
                        _ => cs[0].verdict.clone(),
                    }
                };
                let g = groups.entry(verdict).or_insert((0, (*s, *d)));
                g.0 += 1;
                g.1 = g.1.min((*s, *d));
            }
        }
        out.blocked = groups
            .into_iter()
            .map(|(verdict, (count, example))| BlockedGroup {
                verdict,
                count,
                example,
            })
            .collect();
        out
    }

    use crate::forwarding::connect::Connection;
    use crate::forwarding::walk::Source;

    /// A policy of `kind` in `tier` selecting `selector`, with its rules.
    fn policy(
        kind: PolicyKind,
        namespace: Option<&str>,
        name: &str,
        tier: &str,
        selector: &str,
        ingress: Option<Vec<Rule>>,
        egress: Option<Vec<Rule>>,
    ) -> PolicyResource {
        PolicyResource::Policy(Box::new(Policy {
            kind,
            staged: false,
            namespace: namespace.map(str::to_string),
            name: name.to_string(),
            tier: tier.to_string(),
            order: Some(100.0),
            selector: sel(selector),
            service_account_selector: None,
            namespace_selector: None,
            types: PolicyTypes {
                ingress: ingress.is_some(),
                egress: egress.is_some(),
            },
            ingress: ingress.unwrap_or_default(),
            egress: egress.unwrap_or_default(),
        }))
    }

    /// Three racks of six pods per node, every node holding all three apps of both
    /// namespaces, so that each cohort (rack) and each destination node mixes policy classes,
    /// and one node blackholes another's block (a routing drop for some pairs only). Policies
    /// that give every kind of fate between classes:
    /// - `x` senders: TCP denied at their egress (`egress-tcp` rule 0), the rest allowed out;
    /// - `z` senders: everything denied at their egress (tier `guard`, its end-of-tier Deny);
    /// - `red` receivers: ingress only from `y` on TCP 80.
    ///
    /// So x → red delivers nothing: the first packet (TCP) is denied at x's egress and the
    /// others at red's ingress — a denial after routing on the sender's side, grouped by the
    /// sender's node; y → red is partial (TCP 80); z → anything is denied at egress, whatever
    /// routing does; x, y → blue delivers UDP, SCTP and ICMP (x) or everything (y).
    fn mixed_classes() -> (Dataplane, PolicyInputs) {
        let zones: [&[u8]; 2] = [&[3, 2], &[2]];
        let t = crate::forwarding::testutil::topology(&zones);
        let mut b = crate::forwarding::testutil::calico(
            &t,
            crate::model::network::EncapMode::Always,
            crate::model::network::EncapMode::Never,
            6,
        );
        let n1 = crate::forwarding::testutil::dev(&t, "a0-n1");
        b.blackhole(n1, crate::forwarding::testutil::block(5));
        let dp = b.build();
        let mut set = PolicySet::new(CalicoProfile::V3_30);
        set.apply(&PolicyResource::Namespace {
            name: "red".into(),
            labels: [("team".to_string(), "red".to_string())].into(),
        });
        set.apply(&PolicyResource::Tier(Tier {
            name: "guard".into(),
            order: Some(100.0),
            default_action: TierAction::Deny,
        }));
        let mut deny_tcp = Rule::any(Action::Deny);
        deny_tcp.protocol = Some(Protocol::TCP);
        set.apply(&policy(
            PolicyKind::GlobalNetworkPolicy,
            None,
            "egress-tcp",
            "default",
            "app == 'x'",
            None,
            Some(vec![deny_tcp, Rule::any(Action::Allow)]),
        ));
        set.apply(&policy(
            PolicyKind::GlobalNetworkPolicy,
            None,
            "guard.z-out",
            "guard",
            "app == 'z'",
            None,
            Some(vec![]),
        ));
        let mut from_y = Rule::any(Action::Allow);
        from_y.protocol = Some(Protocol::TCP);
        from_y.source.selector = Some(sel("app == 'y'"));
        from_y.destination.ports = vec![PortMatch::single(80)];
        set.apply(&policy(
            PolicyKind::KubernetesNetworkPolicy,
            Some("red"),
            "from-y",
            "default",
            "all()",
            Some(vec![from_y]),
            None,
        ));
        let mut endpoints = BTreeMap::new();
        for p in dp.pods() {
            let ns = if p.key.0 % 2 == 0 { "red" } else { "blue" };
            let app = ["x", "y", "z"][(p.key.0 as usize / 2) % 3];
            let labels = [("app".to_string(), app.to_string())].into();
            endpoints.insert(
                p.key,
                Endpoint::pod(ns, &format!("pod-{}", p.key.0), p.ip, &labels),
            );
        }
        let inputs = PolicyInputs {
            set,
            endpoints,
            services: BTreeMap::new(),
        };
        (dp, inputs)
    }

    /// A DaemonSet of host-network pods on every node of two racks beside one pod-network
    /// pod per node, and a policy whose only rule admits rack a0's subnet (10.0.0.0/24) to
    /// every pod-network pod. Host traffic is one class per node (its exemption towards the
    /// node's own pods depends on the node), but policy sees only the node's address, and the
    /// only rule net splits the five nodes into two groups: a0's three and a1's two.
    #[test]
    fn host_traffic_of_nodes_every_rule_sees_alike_is_evaluated_once() {
        let zones: [&[u8]; 1] = [&[3, 2]];
        let t = crate::forwarding::testutil::topology(&zones);
        let mut b = crate::forwarding::testutil::calico(
            &t,
            crate::model::network::EncapMode::Always,
            crate::model::network::EncapMode::Never,
            1,
        );
        for (i, n) in t.nodes.iter().enumerate() {
            b.pod(
                PodKey(1000 + i as u64),
                n.ip,
                crate::model::topology::NodeId(i as u32),
                Attachment::Host,
            );
        }
        let dp = b.build();
        let mut set = PolicySet::new(CalicoProfile::V3_30);
        let mut from_a0 = Rule::any(Action::Allow);
        from_a0.source.nets = vec!["10.0.0.0/24".parse().expect("a net")];
        set.apply(&policy(
            PolicyKind::GlobalNetworkPolicy,
            None,
            "from-a0",
            "default",
            "all()",
            Some(vec![from_a0]),
            None,
        ));
        let mut endpoints = BTreeMap::new();
        for p in dp.pods().filter(|p| p.attachment != Attachment::Host) {
            let labels = [("app".to_string(), "x".to_string())].into();
            endpoints.insert(
                p.key,
                Endpoint::pod("red", &format!("pod-{}", p.key.0), p.ip, &labels),
            );
        }
        let inputs = PolicyInputs {
            set,
            endpoints,
            services: BTreeMap::new(),
        };
        let pol = Policing::new(&inputs);
        let pods: Vec<&PodInfo> = dp.pods().collect();
        let packets = packet_classes(&inputs.set, inputs.endpoints.values());
        let judge = Judge::new(&dp, &pol, &pods, &pods, &packets);
        let hosts = judge
            .seen
            .iter()
            .filter(|s| matches!(s, Seen::Host(_)))
            .count();
        assert_eq!(hosts, 5);
        // The pod-network pods (one endpoint class: their addresses are in no rule net) and
        // the two groups of nodes.
        assert_eq!(judge.views, 3);
        let all: Vec<PodKey> = pods.iter().map(|p| p.key).collect();
        let r = policy_reachability(&dp, &pol, &all, &all, None);
        assert_eq!(r, brute(&dp, &pol, &all, &all, &packets));
        // Rack a1's host traffic is denied at the pods of other nodes (end of tier), a0's is not.
        assert!(r.blocked.iter().any(|g| matches!(
            &g.verdict,
            ConnectionVerdict::PolicyDenied(d) if d.side == Side::Ingress
        )));
    }

    #[test]
    fn tallying_per_policy_class_equals_connecting_every_pair() {
        let (dp, inputs) = mixed_classes();
        let pol = Policing::new(&inputs);
        let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
        let packets = packet_classes(&inputs.set, inputs.endpoints.values());
        let r = policy_reachability(&dp, &pol, &all, &all, None);
        assert_eq!(r, brute(&dp, &pol, &all, &all, &packets));
        let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
        assert_eq!(
            policy_reachability(&dp, &pol, &all, &half, None),
            brute(&dp, &pol, &all, &half, &packets)
        );
        // Every kind of fate occurs: delivered for every packet, for some, routing drops,
        // denials at the egress before and after routing, at the ingress.
        let denied_by = |side: Side, name: &str| {
            r.blocked.iter().any(|g| match &g.verdict {
                ConnectionVerdict::PolicyDenied(d) => {
                    d.side == side && format!("{:?}", d.by).contains(name)
                }
                _ => false,
            })
        };
        assert!(r.all_packets > 0 && r.some_packets > r.all_packets);
        assert!(denied_by(Side::Egress, "egress-tcp"));
        assert!(denied_by(Side::Egress, "guard"));
        assert!(
            r.blocked
                .iter()
                .any(|g| matches!(g.verdict, ConnectionVerdict::Dropped { .. }))
        );
        // x → red after routing: one group per sender node (7 nodes hold x senders).
        let egress_after = r
            .blocked
            .iter()
            .filter(|g| match &g.verdict {
                ConnectionVerdict::PolicyDenied(d) => format!("{:?}", d.by).contains("egress-tcp"),
                _ => false,
            })
            .count();
        assert_eq!(egress_after, 7);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]
        /// Policy classes and packet classes give exactly what evaluating every connection
        /// of every pair and every packet gives.
        #[test]
        fn classes_equal_connecting_every_pair(seed in any::<u64>()) {
            let (_t, dp) = scenario(seed);
            let inputs = inputs(seed, &dp);
            let pol = Policing::new(&inputs);
            let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
            let packets = packet_classes(&inputs.set, inputs.endpoints.values());
            prop_assert_eq!(
                policy_reachability(&dp, &pol, &all, &all, None),
                brute(&dp, &pol, &all, &all, &packets)
            );
            let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
            let one = [Packet::tcp(8080)];
            prop_assert_eq!(
                policy_reachability(&dp, &pol, &half, &all, Some(&one)),
                brute(&dp, &pol, &half, &all, &one)
            );
        }

        /// The result does not depend on how many threads share the routing.
        #[test]
        fn policy_reachability_does_not_depend_on_the_number_of_threads(seed in any::<u64>()) {
            let (_t, dp) = scenario(seed);
            let inputs = inputs(seed, &dp);
            let pol = Policing::new(&inputs);
            let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
            let on = |threads: usize| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .expect("a thread pool")
                    .install(|| policy_reachability(&dp, &pol, &all, &all, None))
            };
            let one = on(1);
            prop_assert_eq!(&one, &on(3));
        }
    }
}
