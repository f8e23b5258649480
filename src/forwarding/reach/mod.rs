//! All-pairs pod reachability without tracing every pair (SPEC §3.5, REFERENCE §5).
//!
//! The address space is split into forwarding equivalence classes (atoms): the union of the
//! boundaries of every FIB prefix of every device, every pool and every device address.
//! Inside an atom every device takes the same action, with two exceptions that depend on the
//! destination pod itself and are settled per pod afterwards: a `Local` /32 (the pod's node
//! delivers it), and an on-link delivery (which pod owns the exact address on the segment).
//! So, per atom that holds a destination pod and per source, the packet's chain of devices is
//! walked once, and each destination class — pods of the atom on one node — reads its
//! verdict off the chain. Counts are products of class sizes, minus each pod's pair with
//! itself.
//!
//! Two things keep the walks few and short.
//!
//! *Memoised steps.* The forwarding graph of an atom is a function: what a device does with
//! a packet for the atom depends only on the device and on how the packet arrives (natively,
//! or in a tunnel to a given far end), not on where it came from. Each step is computed once
//! per atom and shared by every walk through that device, so walks share their tails (the
//! ToR, the spines and the far node towards a block are worked out once per atom).
//!
//! *Cohorts of source nodes.* The nodes of a rack hold nearly the same FIB: the same shared
//! tables and the same connected and static routes, plus a few routes of their own (local
//! pods, blackholes for their blocks, withheld and extra routes). Nodes with the same
//! [`Profile`] form a cohort. Take an atom that none of a member's own routes touches and that
//! does not hold the member's address. Then for every address of the atom, and for every
//! device address (a tunnel's far end, looked up for the outer packet), the member's FIB has
//! the same entries as any other such member, and a learned entry resolves the same way:
//! through the same static routes, and never to the member itself, because
//! [`DataplaneBuilder::build`](super::DataplaneBuilder::build) withdraws every learned route
//! whose next hop does not resolve on its device (its own address included). So the first
//! step is the same (same next device, same tunnel), the hand-over is checked on the same
//! segment with the same access links, and from the second device on the walk runs through
//! the same memoised steps with the same hop counts: the member's chain is the
//! representative's with the first device renamed. Per atom, a cohort is walked once, and
//! each member the atom is special to (usually the owner of the block) is walked alone.
//! A verdict that stops at the first device (a blackhole or no route at the source, a link
//! down from it, an on-link handoff there) names that device, so it is read per member.
//! A node joins no cohort (it is walked alone for every atom) when its own routes cover a
//! device address, when its address is not its own alone, or when it has a fabric link.
//!
//! Atoms are independent of each other: they are split among rayon's threads, each with its
//! own memo and tally, and the tallies are merged. A tally only adds counts and keeps the
//! smallest example, so the result is the same whatever the number of threads.
//!
//! Invariants: the result equals tracing every ordered pair of distinct pods with
//! `walk::trace` (a property test checks it); groups are sorted by (reason, device) and each
//! example is the smallest (source, destination) pair of its group by pod key.
//! This module does not resolve pod names or judge expectations.
//!
//! [`route`] is the walk itself: it hands every verdict, with the set of sources and the
//! destination class it holds for, to a [`Sink`] — the plain count here ([`Tally`]), or
//! all-pairs reachability with policy, which tallies each verdict per pair of policy classes
//! so that routing runs once whatever the number of classes.
//!
//! This file holds the entry points, the per-atom driver and the tally; `plan.rs` groups
//! sources into classes and cohorts and destinations into classes, `chain.rs` holds the atoms
//! and one walk's chain with its memo.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::IpNet;
use rayon::prelude::*;

use crate::forwarding::dataplane::{Attachment, Dataplane, PodInfo};
use crate::forwarding::fib::{Encap, PodKey, Stored};
use crate::forwarding::walk::{
    HOP_LIMIT, Mode, Reason, Step, Verdict, forward_check, pod_table_step, process,
};
use crate::model::hash::FastMap;
use crate::model::topology::{DeviceId, DeviceKind, RackId};

mod chain;
mod plan;

use chain::*;
use plan::*;

/// An atom: its address family (IPv6 or not) and its index among that family's atoms.
type AtomId = (bool, usize);

/// Pairs that did not deliver, for one reason at one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnreachableGroup {
    pub reason: Reason,
    pub stopped_at: DeviceId,
    pub count: u64,
    /// The smallest (source, destination) pair of the group.
    pub example: (PodKey, PodKey),
}

impl UnreachableGroup {
    /// The groups of pairs counted by (reason, stopping device) with their smallest pair, in
    /// that order; empty groups left out.
    pub(crate) fn listed(
        groups: BTreeMap<(Reason, DeviceId), (u64, (PodKey, PodKey))>,
    ) -> Vec<UnreachableGroup> {
        groups
            .into_iter()
            .filter(|(_, (count, _))| *count > 0)
            .map(
                |((reason, stopped_at), (count, example))| UnreachableGroup {
                    reason,
                    stopped_at,
                    count,
                    example,
                },
            )
            .collect()
    }
}

/// Reachability between two sets of pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reachability {
    /// Ordered pairs of distinct pods considered.
    pub pairs: u64,
    pub reachable: u64,
    /// Sorted by (reason, stopped_at).
    pub unreachable: Vec<UnreachableGroup>,
}

/// Reachability between every ordered pair of distinct pods the dataplane knows.
pub fn all_pairs(dp: &Dataplane) -> Reachability {
    let keys: Vec<PodKey> = dp.pods.keys().copied().collect();
    reachability(dp, &keys, &keys)
}

/// Reachability from every pod of `from` to every other pod of `to` (unknown keys are
/// ignored, duplicates count once).
pub fn reachability(dp: &Dataplane, from: &[PodKey], to: &[PodKey]) -> Reachability {
    reachability_in(&Prepared::new(dp), dp, from, to)
}

/// What every reachability computation over one dataplane shares: its atoms and each node's
/// routing profile. Many computations over subsets of the pods prepare it once.
pub struct Prepared {
    atoms: Atoms,
    /// Per device, its profile id and the atoms it is special to.
    shapes: Vec<Shape>,
}

impl Prepared {
    pub fn new(dp: &Dataplane) -> Prepared {
        let atoms = Atoms::new(dp);
        let shapes = Shape::all(dp, &atoms);
        Prepared { atoms, shapes }
    }
}

/// [`reachability`] with the dataplane's shared setup already done (`prep` must be
/// [`Prepared::new`] of `dp`).
pub fn reachability_in(
    prep: &Prepared,
    dp: &Dataplane,
    from: &[PodKey],
    to: &[PodKey],
) -> Reachability {
    let from = known(dp, from);
    let to = known(dp, to);
    if from.iter().chain(&to).any(|p| dp.is_duplicate(p)) {
        return with_duplicates(prep, dp, &from, &to);
    }
    let from_keys: Vec<PodKey> = from.iter().map(|p| p.key).collect();
    let self_total = to
        .iter()
        .filter(|p| from_keys.binary_search(&p.key).is_ok())
        .count() as u64;
    let mut tally = Tally::default();
    for t in route(prep, dp, &from, &to, Tally::default) {
        tally.merge(t);
    }
    tally.into_reachability((from.len() as u64) * (to.len() as u64) - self_total)
}

/// The source pods a verdict of [`route`] applies to: the pods of one node (or of one
/// Spiderpool class, all on one node), or the members of a cohort but those walked alone.
#[derive(Clone, Copy)]
pub enum SenderSet<'a> {
    Pods {
        device: DeviceId,
        pods: &'a [PodKey],
    },
    Cohort {
        /// The cohort's index in this computation (the same members for every record).
        index: usize,
        /// Member nodes and their pods, by smallest pod key.
        members: &'a [(DeviceId, &'a [PodKey])],
        /// Members not included.
        except: &'a [DeviceId],
    },
}

/// The sources of one record of [`route`]: their set and its size and two smallest pods.
#[derive(Clone, Copy)]
pub struct Senders<'a> {
    cell: Cell,
    pub set: SenderSet<'a>,
}

/// The destinations of one record of [`route`]: pods of one node, sorted; `index` names the
/// destination class (the same pods every time).
#[derive(Clone, Copy)]
pub struct Receivers<'a> {
    pub index: usize,
    pub node: DeviceId,
    pub pods: &'a [PodKey],
}

/// What consumes the verdicts of [`route`].
pub trait Sink: Send {
    /// `verdict` holds for every pair of `from` × `to` but the `own` pairs of a pod with
    /// itself (pods in both). Every ordered pair of distinct pods is in exactly one record.
    fn record(&mut self, verdict: Verdict, from: &Senders<'_>, to: &Receivers<'_>, own: u64);
    /// Every record of the destination classes recorded since the last flush is in.
    fn flush(&mut self) {}
}

/// Walks every source towards every destination (both known pods, sorted, without pods
/// that hold a device's address: their pairs stop at the source as `duplicate-address`
/// before any walk, and are the caller's) and hands each verdict to a sink made by `make`.
/// Atoms are split among rayon's threads, one sink per chunk of atoms (each flushed after
/// each atom) and one for the destinations off their segment; the sinks come back in a
/// fixed order, but a sink whose merge is commutative need not care.
pub fn route<S: Sink>(
    prep: &Prepared,
    dp: &Dataplane,
    from: &[&PodInfo],
    to: &[&PodInfo],
    make: impl Fn() -> S + Sync,
) -> Vec<S> {
    let atoms = &prep.atoms;
    let mut sources: BTreeMap<SrcClass, Vec<PodKey>> = BTreeMap::new();
    for p in from {
        sources.entry(SrcClass::of(p)).or_default().push(p.key);
    }
    let from_keys: Vec<PodKey> = from.iter().map(|p| p.key).collect();
    let mut dests: BTreeMap<DstClass, Vec<PodKey>> = BTreeMap::new();
    // Pods in both sets sit in one cell with themselves: that pair does not count.
    let mut self_pairs: FastMap<(SrcClass, DstClass), u64> = FastMap::default();
    for p in to {
        let class = DstClass::of(dp, atoms, p);
        dests.entry(class).or_default().push(p.key);
        if from_keys.binary_search(&p.key).is_ok() {
            *self_pairs.entry((SrcClass::of(p), class)).or_default() += 1;
        }
    }

    // Destination classes by atom; those of one atom are consecutive in `dests`.
    let mut off_segment: Vec<Dest> = Vec::new();
    let mut by_atom: Vec<(AtomId, Vec<Dest>)> = Vec::new();
    for (index, (class, members)) in dests.iter().enumerate() {
        let dest = Dest {
            class: *class,
            pods: members,
            index,
        };
        match class.atom() {
            None => off_segment.push(dest),
            Some(atom) => match by_atom.last_mut() {
                Some((last, list)) if *last == atom => list.push(dest),
                _ => by_atom.push((atom, vec![dest])),
            },
        }
    }
    let dest_atoms: Vec<AtomId> = by_atom.iter().map(|(a, _)| *a).collect();
    let plan = Plan::new(dp, &prep.shapes, &sources, &dest_atoms);
    let cx = Cx {
        dp,
        atoms,
        plan: &plan,
        self_pairs: &self_pairs,
    };

    let mut tally = make();
    // Destinations off their segment: the same verdict from every source.
    for (src, s_members) in &sources {
        let Some(from) = Senders::pods(*src, s_members) else {
            continue;
        };
        for d in &off_segment {
            let at = match (*src, d.class) {
                (SrcClass::WrongSubnet(x), _) | (_, DstClass::WrongSubnet(x)) => x,
                (_, DstClass::Atom { .. }) => continue,
            };
            let verdict = Verdict::Dropped {
                reason: Reason::WrongSubnet,
                at,
            };
            tally.record(verdict, &from, &d.receivers(), cx.own(*src, d.class));
        }
    }
    tally.flush();
    // The atoms, split among threads; each chunk in order with its own memo.
    let chunk = by_atom
        .len()
        .div_ceil(4 * rayon::current_num_threads())
        .max(1);
    let mut tallies: Vec<S> = by_atom
        .par_chunks(chunk)
        .enumerate()
        .map(|(c, atoms)| {
            let mut memo = Memo::new(dp.devices.len());
            let mut chain = Chain::default();
            let mut t = make();
            for (i, (atom, classes)) in atoms.iter().enumerate() {
                memo.clear();
                cx.atom(c * chunk + i, *atom, classes, &mut memo, &mut chain, &mut t);
                t.flush();
            }
            t
        })
        .collect();
    tallies.insert(0, tally);
    tallies
}

/// Reachability when some pods hold a node's or router's address. `trace`'s first check
/// stops every pair with such a pod at the source's node (`duplicate-address`), before any
/// walk; so those pairs are counted here, and the others by the walks of [`reachability`].
fn with_duplicates(
    prep: &Prepared,
    dp: &Dataplane,
    from: &[&PodInfo],
    to: &[&PodInfo],
) -> Reachability {
    let clean = |set: &[&PodInfo]| -> Vec<PodKey> {
        set.iter()
            .filter(|p| !dp.is_duplicate(p))
            .map(|p| p.key)
            .collect()
    };
    let rest = reachability_in(prep, dp, &clean(from), &clean(to));
    let mut tally = Tally {
        reachable: rest.reachable,
        groups: BTreeMap::new(),
    };
    for g in &rest.unreachable {
        tally.add(g.reason, g.stopped_at, g.count, g.example);
    }
    let mut pairs = rest.pairs;
    let dup_to: Vec<PodKey> = to
        .iter()
        .filter(|p| dp.is_duplicate(p))
        .map(|p| p.key)
        .collect();
    for s in from {
        // `to` is sorted by key: the smallest destination other than the source itself.
        let (targets, example) = if dp.is_duplicate(s) {
            let others = to.iter().filter(|t| t.key != s.key);
            (others.clone().count() as u64, others.map(|t| t.key).next())
        } else {
            (dup_to.len() as u64, dup_to.first().copied())
        };
        if let Some(t) = example {
            tally.add(Reason::DuplicateAddress, s.device, targets, (s.key, t));
            pairs += targets;
        }
    }
    tally.into_reachability(pairs)
}

/// The destination pods of one class.
#[derive(Clone, Copy)]
struct Dest<'a> {
    class: DstClass,
    pods: &'a [PodKey],
    /// Its index among the computation's destination classes.
    index: usize,
}

impl<'a> Dest<'a> {
    fn receivers(&self) -> Receivers<'a> {
        let node = match self.class {
            DstClass::WrongSubnet(d) | DstClass::Atom { node: d, .. } => d,
        };
        Receivers {
            index: self.index,
            node,
            pods: self.pods,
        }
    }
}

impl<'a> Senders<'a> {
    /// The pods of one source class (all on one node); `None` when empty.
    fn pods(src: SrcClass, pods: &'a [PodKey]) -> Option<Senders<'a>> {
        let device = match src {
            SrcClass::WrongSubnet(d) | SrcClass::Node(d) | SrcClass::Segment { device: d, .. } => d,
        };
        Some(Senders {
            cell: Cell::of(pods)?,
            set: SenderSet::Pods { device, pods },
        })
    }
}

/// What the computation of one atom reads.
struct Cx<'a> {
    dp: &'a Dataplane,
    atoms: &'a Atoms,
    plan: &'a Plan<'a>,
    self_pairs: &'a FastMap<(SrcClass, DstClass), u64>,
}

impl Cx<'_> {
    /// How many pods of `src` are also the destination pods of `dst` (pairs of a pod with
    /// itself).
    fn own(&self, src: SrcClass, dst: DstClass) -> u64 {
        self.self_pairs.get(&(src, dst)).copied().unwrap_or(0)
    }

    /// Every source towards the destination classes of one atom (the `index`-th atom that
    /// holds destinations).
    fn atom(
        &self,
        index: usize,
        atom: AtomId,
        classes: &[Dest],
        memo: &mut Memo,
        chain: &mut Chain,
        tally: &mut impl Sink,
    ) {
        let dp = self.dp;
        let rep = self.atoms.representative(atom);
        for &(src, pods) in &self.plan.others {
            let Some(from) = Senders::pods(src, pods) else {
                continue;
            };
            if let SrcClass::WrongSubnet(at) = src {
                let verdict = Verdict::Dropped {
                    reason: Reason::WrongSubnet,
                    at,
                };
                for d in classes {
                    tally.record(verdict, &from, &d.receivers(), self.own(src, d.class));
                }
                continue;
            }
            // A Spiderpool class: every pod has the same node, rack and gateway.
            let Some(pod) = pods.first().and_then(|k| dp.pod(*k)) else {
                continue;
            };
            chain.walk(dp, Start::Segment(pod), rep, memo);
            for d in classes {
                let verdict = chain.verdict_for(dp, pod.device, d.class);
                tally.record(verdict, &from, &d.receivers(), self.own(src, d.class));
            }
        }
        let special = self.plan.special(index);
        for (ci, cohort) in self.plan.cohorts.iter().enumerate() {
            // Members this atom is special to: walked alone.
            let lo = special.partition_point(|(c, _)| (*c as usize) < ci);
            let hi = special.partition_point(|(c, _)| (*c as usize) <= ci);
            let alone: Vec<DeviceId> = special[lo..hi].iter().map(|(_, d)| *d).collect();
            for &device in &alone {
                chain.walk(dp, Start::Node(device), rep, memo);
                self.per_member(chain, device, classes, tally);
            }
            let Some(&(first, _)) = cohort.members.iter().find(|(d, _)| !alone.contains(d)) else {
                continue;
            };
            chain.walk(dp, Start::Node(first), rep, memo);
            if chain.ends_at_start() {
                for &(device, _) in &cohort.members {
                    if !alone.contains(&device) {
                        self.per_member(chain, device, classes, tally);
                    }
                }
                continue;
            }
            let Some(cell) = cohort.cell(&alone) else {
                continue;
            };
            let from = Senders {
                cell,
                set: SenderSet::Cohort {
                    index: ci,
                    members: &cohort.members,
                    except: &alone,
                },
            };
            for d in classes {
                let verdict = chain.verdict_for(dp, first, d.class);
                // A pod's pair with itself: only a pod of a member node can be one.
                let own = match d.class {
                    DstClass::Atom { node, .. }
                        if self.plan.cohort_of(node) == Some(ci) && !alone.contains(&node) =>
                    {
                        self.own(SrcClass::Node(node), d.class)
                    }
                    _ => 0,
                };
                tally.record(verdict, &from, &d.receivers(), own);
            }
        }
    }

    /// Records the verdicts of the pods of one member node, its chain being `chain` with the
    /// first device renamed to it.
    fn per_member(&self, chain: &Chain, device: DeviceId, classes: &[Dest], tally: &mut impl Sink) {
        let src = SrcClass::Node(device);
        let Some(from) = Senders::pods(src, self.plan.pods_of(device)) else {
            return;
        };
        for d in classes {
            let verdict = chain.verdict_for(self.dp, device, d.class);
            tally.record(verdict, &from, &d.receivers(), self.own(src, d.class));
        }
    }
}

/// Counts of reachable pairs and of unreachable ones by (reason, device), with the
/// smallest example of each group. Adding is commutative, so the order in which atoms are
/// tallied does not change the result.
#[derive(Default)]
struct Tally {
    reachable: u64,
    groups: BTreeMap<(Reason, DeviceId), (u64, (PodKey, PodKey))>,
}

impl Sink for Tally {
    /// Records the pairs of a cell: `src` × `dst` minus `own` pairs of a pod with itself.
    fn record(&mut self, verdict: Verdict, from: &Senders<'_>, to: &Receivers<'_>, own: u64) {
        let (src, dst) = (from.cell, to.pods);
        let count = src.count * (dst.len() as u64) - own;
        if count == 0 {
            return;
        }
        let Some(example) = smallest_pair(src, dst) else {
            return;
        };
        match verdict {
            Verdict::Delivered => self.reachable += count,
            Verdict::Dropped { reason, at } => self.add(reason, at, count, example),
        }
    }
}

impl Tally {
    fn add(&mut self, reason: Reason, at: DeviceId, count: u64, example: (PodKey, PodKey)) {
        let g = self.groups.entry((reason, at)).or_insert((0, example));
        g.0 += count;
        g.1 = g.1.min(example);
    }

    /// The result, with `pairs` ordered pairs considered in all.
    fn into_reachability(self, pairs: u64) -> Reachability {
        let unreachable = UnreachableGroup::listed(self.groups);
        Reachability {
            pairs,
            reachable: self.reachable,
            unreachable,
        }
    }

    fn merge(&mut self, other: Tally) {
        self.reachable += other.reachable;
        for ((reason, at), (count, example)) in other.groups {
            self.add(reason, at, count, example);
        }
    }
}

fn known<'a>(dp: &'a Dataplane, keys: &[PodKey]) -> Vec<&'a PodInfo> {
    let mut out: Vec<&PodInfo> = keys.iter().filter_map(|k| dp.pod(*k)).collect();
    out.sort_by_key(|p| p.key);
    out.dedup_by_key(|p| p.key);
    out
}

/// The source pods of a cell: how many, and the two smallest keys.
#[derive(Clone, Copy, Debug)]
struct Cell {
    count: u64,
    first: PodKey,
    second: Option<PodKey>,
}

impl Cell {
    /// A sorted list of distinct pods; `None` when empty.
    fn of(pods: &[PodKey]) -> Option<Cell> {
        Some(Cell {
            count: pods.len() as u64,
            first: *pods.first()?,
            second: pods.get(1).copied(),
        })
    }
}

/// The smallest pair of distinct pods of a cell (the destinations sorted and without
/// duplicates); `None` when the cell is only a pod with itself.
fn smallest_pair(s: Cell, d: &[PodKey]) -> Option<(PodKey, PodKey)> {
    let (s0, d0) = (s.first, *d.first()?);
    if s0 != d0 {
        return Some((s0, d0));
    }
    match (d.get(1), s.second) {
        (Some(d1), _) => Some((s0, *d1)),
        (None, Some(s1)) => Some((s1, d0)),
        (None, None) => None,
    }
}

#[cfg(test)]
pub(crate) mod tests;
