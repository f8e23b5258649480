//! The underlay as BGP sees it: which devices can reach each other (next-hop resolution,
//! liveness of multihop sessions) and the one-way latency between them (how long an UPDATE
//! travels, and the IGP cost of a next hop in the decision process).
//!
//! Distances come from `Topology::shortest_path_tree` (links that are up, hosts never
//! transit), all from one source at once; a host's are built from the searches of the routers
//! next to it, so the latencies of a full mesh of n nodes in r racks cost about r searches
//! and n merges rather than n²/2 point-to-point searches.
//! Ties between equal-cost paths do not matter here: only distances are used.
//!
//! A link event costs what it changes ([`Underlay::update`]): the underlay keeps its own copy
//! of the topology (made once) and copies over only the link states and node deletions that
//! differ; the directed edges those add or remove are read from the changed devices'
//! neighbours; each kept distance vector is repaired in place (`repaired`): only the devices
//! whose every shortest way in crossed a removed edge, and the devices an added edge brings
//! closer, are looked at, and a search relaxes onwards from them alone — a ToR–spine link
//! going down next to an equal-cost twin changes no vector of another rack, and a rack cut off
//! costs its own devices, not the fabric. The repair is its own small search rather than
//! [`Topology::shortest_path_tree`]: it starts from bounds on many devices, not from one
//! source, and keeps no tree. A vector is searched again from scratch only when its source
//! is gone.
//! The sessions' latencies are tracked ([`Underlay::track_sessions`]): after an update only
//! the sessions measured from a source whose distances changed are looked at again, and only
//! those whose latency changed are reported.
//!
//! Invariants: every kept distance vector, tracked latency and the components are what a new
//! [`Underlay`] over the current topology computes (a property test checks it after every
//! event of random sequences, with one or two spines a zone so that equal-cost ways exist).

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet, BinaryHeap};
use std::sync::Arc;

use super::SessionId;
use crate::model::time::SimDuration;
use crate::model::topology::{DeviceId, DeviceKind, LinkId, NodeId, Topology};

/// One-way latency in nanoseconds from one device to every device (`None`: unreachable).
pub type Distances = Arc<Vec<Option<u64>>>;

/// Single-source shortest one-way latencies over links that are up; hosts are endpoints,
/// never transit (a host does not route for others).
pub fn distances_from(topology: &Topology, from: DeviceId) -> Vec<Option<u64>> {
    topology.shortest_path_tree(from, |_| true).into_distances()
}

/// The one-way latency between each pair, computed with one single-source search per
/// distinct source (the end with more pairs is the source, so a reflector's many sessions
/// cost one search). A source that is a host (hosts never transit) starts from its
/// neighbours: its distance to a device is the smaller of the direct hop and, over each
/// router it reaches in one hop, that hop plus the router's own distance — each router's
/// search is done once and kept, so a full mesh of n nodes in r racks costs about r
/// searches and n merges instead of n searches.
pub fn pair_latencies(
    topology: &Topology,
    pairs: &[(DeviceId, DeviceId)],
) -> Vec<Option<SimDuration>> {
    let mut kept = Vec::new();
    let mut searches = Searches {
        topology,
        kept: &mut kept,
        run: 0,
    };
    let mut out = vec![None; pairs.len()];
    for (source, group) in by_source(pairs) {
        let dist = searches.from(source, false);
        for i in group {
            out[i] = nanos_to(&dist, other_end(pairs[i], source)).map(SimDuration::from_nanos);
        }
    }
    out
}

/// The pairs' indices grouped by source, sources in device order: of each pair, the end with
/// more pairs, then the smaller id.
fn by_source(pairs: &[(DeviceId, DeviceId)]) -> Vec<(DeviceId, Vec<usize>)> {
    let slots = pairs
        .iter()
        .map(|(a, b)| a.index().max(b.index()) + 1)
        .max()
        .unwrap_or(0);
    let mut degree = vec![0usize; slots];
    for &(a, b) in pairs {
        degree[a.index()] += 1;
        degree[b.index()] += 1;
    }
    let mut groups: Vec<Vec<usize>> = vec![Vec::new(); slots];
    for (i, &(a, b)) in pairs.iter().enumerate() {
        let source = if (degree[b.index()], Reverse(b)) > (degree[a.index()], Reverse(a)) {
            b
        } else {
            a
        };
        groups[source.index()].push(i);
    }
    groups
        .into_iter()
        .enumerate()
        .filter(|(_, group)| !group.is_empty())
        .map(|(s, group)| (DeviceId(s as u32), group))
        .collect()
}

fn other_end((a, b): (DeviceId, DeviceId), source: DeviceId) -> DeviceId {
    if a == source { b } else { a }
}

fn nanos_to(dist: &[Option<u64>], to: DeviceId) -> Option<u64> {
    dist.get(to.index()).copied().flatten()
}

/// Single-source distances as [`distances_from`] computes them, kept by source device: a
/// router's always (hosts' are built from them), a host's when asked.
struct Searches<'a> {
    topology: &'a Topology,
    kept: &'a mut Vec<Option<Distances>>,
    /// Shortest-path searches run.
    run: u64,
}

impl Searches<'_> {
    /// [`distances_from`] `from`. Shortest paths from a host leave it by one hop and then
    /// cross routers only (no host transits, and the source is never crossed again, as
    /// latencies are positive), so the host's distance to `x` is the minimum over its
    /// neighbours `v` at latency `l` of `l` when `v` is `x`, and `l` plus `v`'s distance
    /// to `x` when `v` is a router.
    fn from(&mut self, from: DeviceId, keep: bool) -> Distances {
        if let Some(Some(d)) = self.kept.get(from.index()) {
            return Arc::clone(d);
        }
        let topology = self.topology;
        let n = topology.devices.len();
        if from.index() >= n {
            return Arc::new(distances_from(topology, from));
        }
        let router = topology.device(from).is_router();
        let dist = if router {
            self.run += 1;
            distances_from(topology, from)
        } else {
            let mut dist: Vec<Option<u64>> = vec![None; n];
            dist[from.index()] = Some(0);
            fn closer(dist: &mut [Option<u64>], x: usize, d: u64) {
                if dist[x].is_none_or(|old| d < old) {
                    dist[x] = Some(d);
                }
            }
            for (v, latency) in topology.neighbours(from) {
                let l = latency.as_nanos();
                closer(&mut dist, v.index(), l);
                if topology.device(v).is_router() {
                    for (x, d) in self.from(v, true).iter().enumerate() {
                        if let Some(d) = d {
                            closer(&mut dist, x, l + d);
                        }
                    }
                }
            }
            dist
        };
        let dist = Arc::new(dist);
        if keep || router {
            if self.kept.len() < n {
                self.kept.resize(n, None);
            }
            self.kept[from.index()] = Some(Arc::clone(&dist));
        }
        dist
    }
}

/// A directed edge of the underlay: `from` reaches `to` in one hop of `latency` ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Edge {
    from: DeviceId,
    to: DeviceId,
    latency: u64,
}

/// The directed edges that `links` (their state or latency) and `deletions` (nodes) remove
/// from `old` and add in `new`, two topologies that differ in nothing else. An edge changes
/// only if one of its ends is an end of a changed link or a changed node, so only the edges
/// at those ends are read: each end's ways out (`Topology::neighbours`) and its ways in from
/// devices that are not ends themselves (`Topology::each_way_in`; an edge between two ends
/// is met once, leaving). A rack's nodes are read once each when its ToR's uplink changes,
/// not their whole segment each.
fn edge_changes(
    old: &Topology,
    new: &Topology,
    links: &[LinkId],
    deletions: &[NodeId],
) -> (Vec<Edge>, Vec<Edge>) {
    let mut ends = BTreeSet::new();
    for l in links {
        let link = &new.links[l.index()];
        ends.extend([link.a, link.b]);
    }
    ends.extend(deletions.iter().map(|n| new.nodes[n.index()].device));
    let (mut removed, mut added) = (Vec::new(), Vec::new());
    for &e in &ends {
        let out = |t: &Topology| {
            let mut hops: Vec<(DeviceId, DeviceId, SimDuration)> = t
                .neighbours(e)
                .into_iter()
                .map(|(v, l)| (e, v, l))
                .collect();
            hops.sort();
            hops
        };
        let into = |t: &Topology| {
            let mut hops = Vec::new();
            t.each_way_in(e, |u| !ends.contains(&u), |u, l| hops.push((u, e, l)));
            hops.sort();
            hops
        };
        for (before, after) in [(out(old), out(new)), (into(old), into(new))] {
            edge_differences(&before, &after, &mut removed, &mut added);
        }
    }
    (removed, added)
}

/// Appends to `removed` the edges of `before` that `after` lacks and to `added` those of
/// `after` that `before` lacks, both lists sorted (multisets: a latency counts as its own).
fn edge_differences(
    before: &[(DeviceId, DeviceId, SimDuration)],
    after: &[(DeviceId, DeviceId, SimDuration)],
    removed: &mut Vec<Edge>,
    added: &mut Vec<Edge>,
) {
    let edge = |&(from, to, latency): &(DeviceId, DeviceId, SimDuration)| Edge {
        from,
        to,
        latency: latency.as_nanos(),
    };
    let (mut i, mut j) = (0, 0);
    loop {
        match (before.get(i), after.get(j)) {
            (Some(b), Some(a)) if b == a => (i, j) = (i + 1, j + 1),
            (Some(b), Some(a)) if b < a => {
                removed.push(edge(b));
                i += 1;
            }
            (Some(b), None) => {
                removed.push(edge(b));
                i += 1;
            }
            (_, Some(a)) => {
                added.push(edge(a));
                j += 1;
            }
            (None, None) => break,
        }
    }
}

/// The distances from `from` that a change of the underlay alters, with their new values in
/// device order, given `dist`, the exact distances before it, `topology`, the underlay after
/// it, and the directed edges it `removed` and `added`; `None` when the source itself is gone
/// (search again). Only edges leaving the source or a router count: hosts never transit.
///
/// First the devices that may have lost their distance: the ends of removed edges that lay
/// on a shortest path (`d[u] + w = d[v]`), taken in order of distance; one that still has a
/// way in from a device that kept its distance (`d[x] + w = d[v]`, `w > 0`, so `x` was
/// decided before it) keeps its own, otherwise it is lost and the devices it was the way in
/// to are looked at in turn. Every other distance is still achieved. Then the lost devices
/// start from their best way in from a kept device, the ends of added edges that shorten a
/// way (`d[u] + w < d[v]`) from that shorter way, and a search relaxes onwards from those
/// alone: a device none of whose best ways changed is never reached. The result is exactly a
/// new search's (the property test compares them after every event): a kept device's
/// distance is achieved and, as no edge undercuts it, not beaten; every other is settled by
/// the search from bounds that are each achieved by some path.
fn repaired(
    topology: &Topology,
    from: DeviceId,
    dist: &[Option<u64>],
    removed: &[Edge],
    added: &[Edge],
) -> Option<Vec<(DeviceId, Option<u64>)>> {
    if !topology.present(from) {
        return None;
    }
    let leaves = |u: DeviceId| u == from || topology.device(u).is_router();
    let old = |x: DeviceId| nanos_to(dist, x);
    let mut lost: BTreeSet<DeviceId> = BTreeSet::new();
    let mut decided: BTreeSet<DeviceId> = BTreeSet::new();
    let mut heap: BinaryHeap<Reverse<(u64, DeviceId)>> = BinaryHeap::new();
    for e in removed {
        if let Some(d) = old(e.from)
            .filter(|_| leaves(e.from))
            .map(|d| d + e.latency)
            && old(e.to) == Some(d)
        {
            heap.push(Reverse((d, e.to)));
        }
    }
    while let Some(Reverse((d, v))) = heap.pop() {
        if v == from || !decided.insert(v) {
            continue;
        }
        let mut kept_way = false;
        topology.each_way_in(v, leaves, |x, w| {
            let w = w.as_nanos();
            kept_way |= w > 0 && !lost.contains(&x) && old(x).is_some_and(|dx| dx + w == d);
        });
        if kept_way {
            continue;
        }
        lost.insert(v);
        if leaves(v) {
            for (x, w) in topology.neighbours(v) {
                let next = d + w.as_nanos();
                if old(x) == Some(next) {
                    heap.push(Reverse((next, x)));
                }
            }
        }
    }
    // New distances where they differ from `dist` (`None`: unreachable now).
    let mut now: BTreeMap<DeviceId, Option<u64>> = BTreeMap::new();
    for &v in &lost {
        let mut best: Option<u64> = None;
        let kept = |x: DeviceId| leaves(x) && !lost.contains(&x);
        topology.each_way_in(v, kept, |x, w| {
            if let Some(d) = old(x).map(|dx| dx + w.as_nanos()) {
                best = Some(best.map_or(d, |b| b.min(d)));
            }
        });
        now.insert(v, best);
        if let Some(d) = best {
            heap.push(Reverse((d, v)));
        }
    }
    let current = |now: &BTreeMap<DeviceId, Option<u64>>, x: DeviceId| match now.get(&x) {
        Some(d) => *d,
        None => old(x),
    };
    for e in added {
        if !leaves(e.from) || lost.contains(&e.from) {
            continue;
        }
        if let Some(d) = old(e.from).map(|d| d + e.latency)
            && current(&now, e.to).is_none_or(|c| d < c)
        {
            now.insert(e.to, Some(d));
            heap.push(Reverse((d, e.to)));
        }
    }
    while let Some(Reverse((d, u))) = heap.pop() {
        if current(&now, u) != Some(d) || !leaves(u) {
            continue;
        }
        for (x, w) in topology.neighbours(u) {
            let next = d + w.as_nanos();
            if current(&now, x).is_none_or(|c| next < c) {
                now.insert(x, Some(next));
                heap.push(Reverse((next, x)));
            }
        }
    }
    Some(now.into_iter().filter(|&(x, d)| old(x) != d).collect())
}

/// How a session's latency is measured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionPath {
    /// A single-hop session over one link: its latency while the link is up.
    Link(LinkId),
    /// A multihop session between two devices, measured from the end with more sessions
    /// (see [`pair_latencies`]).
    Between(DeviceId, DeviceId),
}

/// A multihop session as tracked: the end away from its source and its latency in ns.
type Measured = (SessionId, DeviceId, Option<u64>);

/// The sessions whose latencies the underlay keeps up to date.
#[derive(Clone, Debug)]
struct Tracked {
    /// How many sessions the engine had (another count is another session list).
    count: usize,
    /// Single-hop sessions by link, sorted.
    over_link: Vec<(LinkId, SessionId)>,
    /// Multihop sessions by source: each with its other end and its latency in ns, sorted
    /// by other end.
    from: Vec<(DeviceId, Vec<Measured>)>,
    /// Latencies changed by updates and not yet taken.
    changed: Vec<(SessionId, Option<SimDuration>)>,
}

/// A snapshot of the underlay: connectivity (components) and kept distances, brought up to
/// date event by event.
#[derive(Clone, Debug)]
pub struct Underlay {
    /// The topology as of the last update: cloned once, then only link states and node
    /// deletions are copied over.
    topology: Topology,
    /// Component of each device; devices that are absent (deleted) get their own.
    component: Vec<u32>,
    /// Exact distances from each device searched so far, by device index.
    kept: Vec<Option<Distances>>,
    sessions: Option<Tracked>,
    /// Shortest-path searches run, and tracked sessions looked at again after an update
    /// (tests measure what an event costs).
    pub(crate) searches: u64,
    pub(crate) examined: u64,
    /// Kept distance vectors an update changed in place (`repaired`).
    pub(crate) repairs: u64,
}

impl Underlay {
    pub fn new(topology: &Topology) -> Underlay {
        Underlay {
            topology: topology.clone(),
            component: topology.components(),
            kept: Vec::new(),
            sessions: None,
            searches: 0,
            examined: 0,
            repairs: 0,
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Brings the underlay to `topology`: the same devices and links with some links' states
    /// (or latencies) and some nodes' deletions changed — anything more (nodes joined) builds
    /// it anew. Drops the kept distances the change can alter and notes the tracked sessions
    /// whose latency changed ([`Underlay::session_changes`]). Returns whether the partition
    /// into components changed.
    pub fn update(&mut self, topology: &Topology) -> bool {
        if !self.same_elements(topology) {
            let before = std::mem::take(&mut self.component);
            *self = Underlay {
                searches: self.searches,
                examined: self.examined,
                repairs: self.repairs,
                ..Underlay::new(topology)
            };
            return self.component != before;
        }
        let (links, deletions) = self.differences(topology);
        self.apply(topology, &links, &deletions)
    }

    /// [`Underlay::update`] told what changed: `links` are the only links whose state or
    /// latency may differ from what the underlay last saw and `removed` the only devices
    /// whose node may have been deleted since (both in any order, repeats allowed), so
    /// nothing else of `topology` is compared: a link event costs what it changes, not a
    /// walk over every link and node. If nodes joined, it is [`Underlay::update`] (built
    /// anew). Tests check the claim against [`Underlay::update`]'s comparison.
    pub fn update_told(
        &mut self,
        topology: &Topology,
        links: &[LinkId],
        removed: &[DeviceId],
    ) -> bool {
        if !self.same_elements(topology) {
            return self.update(topology);
        }
        let old = &self.topology;
        let mut changed: Vec<LinkId> = links
            .iter()
            .copied()
            .filter(|l| {
                let (was, is) = (&old.links[l.index()], &topology.links[l.index()]);
                was.up != is.up || was.latency != is.latency
            })
            .collect();
        changed.sort_unstable();
        changed.dedup();
        let mut deletions: Vec<NodeId> = removed
            .iter()
            .filter_map(|d| match old.devices[d.index()].kind {
                DeviceKind::Node(n)
                    if old.nodes[n.index()].deleted != topology.nodes[n.index()].deleted =>
                {
                    Some(n)
                }
                _ => None,
            })
            .collect();
        deletions.sort_unstable();
        deletions.dedup();
        #[cfg(test)]
        assert_eq!(
            self.differences(topology),
            (changed.clone(), deletions.clone()),
            "update_told was not told every change"
        );
        self.apply(topology, &changed, &deletions)
    }

    /// Whether `topology` has the devices, links and nodes of the underlay's copy (nothing
    /// joined), so that they can be compared one by one.
    fn same_elements(&self, topology: &Topology) -> bool {
        let old = &self.topology;
        old.devices.len() == topology.devices.len()
            && old.links.len() == topology.links.len()
            && old.nodes.len() == topology.nodes.len()
    }

    /// The links whose state or latency and the nodes whose deletion differ between the
    /// underlay's copy of the topology and `topology`, in order.
    fn differences(&self, topology: &Topology) -> (Vec<LinkId>, Vec<NodeId>) {
        let old = &self.topology;
        let links = old
            .links
            .iter()
            .zip(&topology.links)
            .enumerate()
            .filter(|(_, (was, is))| was.up != is.up || was.latency != is.latency)
            .map(|(i, _)| LinkId(i as u32))
            .collect();
        let deletions = old
            .nodes
            .iter()
            .zip(&topology.nodes)
            .enumerate()
            .filter(|(_, (was, is))| was.deleted != is.deleted)
            .map(|(i, _)| NodeId(i as u32))
            .collect();
        (links, deletions)
    }

    /// Brings the underlay's copy to `topology` where `links` and `deletions` (ascending)
    /// changed, repairs the kept distances and notes the tracked sessions' changes.
    fn apply(&mut self, topology: &Topology, links: &[LinkId], deletions: &[NodeId]) -> bool {
        if links.is_empty() && deletions.is_empty() {
            return false;
        }
        let (removed, added) = edge_changes(&self.topology, topology, links, deletions);
        for &l in links {
            let link = &mut self.topology.links[l.index()];
            link.up = topology.links[l.index()].up;
            link.latency = topology.links[l.index()].latency;
        }
        for &n in deletions {
            self.topology.nodes[n.index()].deleted = topology.nodes[n.index()].deleted;
        }
        let mut components_changed = false;
        let mut repaired_from = Vec::new();
        if !removed.is_empty() || !added.is_empty() {
            // Edges only added between devices of one component join nothing.
            let joins_nothing = removed.is_empty()
                && added.iter().all(|e| {
                    self.component.get(e.from.index()) == self.component.get(e.to.index())
                });
            if !joins_nothing {
                let component = self.topology.components();
                components_changed = component != self.component;
                self.component = component;
            }
            for (s, slot) in self.kept.iter_mut().enumerate() {
                let Some(dist) = slot else { continue };
                let source = DeviceId(s as u32);
                match repaired(&self.topology, source, dist, &removed, &added) {
                    Some(changed) if changed.is_empty() => {}
                    Some(changed) => {
                        let dist = Arc::make_mut(dist);
                        for &(x, d) in &changed {
                            dist[x.index()] = d;
                        }
                        self.repairs += 1;
                        repaired_from.push((source, changed.into_iter().map(|(x, _)| x).collect()));
                    }
                    None => *slot = None,
                }
            }
        }
        if let Some(mut tracked) = self.sessions.take() {
            self.follow(&mut tracked, links, &repaired_from);
            self.sessions = Some(tracked);
        }
        components_changed
    }

    /// Notes the tracked sessions whose latency the update changed: those over a changed
    /// link, those measured from a source whose distances were dropped (searched again) and
    /// whose latency differs now, and those measured from a source whose distances changed
    /// in place (`repaired_from`, in device order, with the devices whose distance changed,
    /// in order) to one of those devices: a session's latency is its source's distance to
    /// its other end, so only those can differ.
    fn follow(
        &mut self,
        tracked: &mut Tracked,
        links: &[LinkId],
        repaired_from: &[(DeviceId, Vec<DeviceId>)],
    ) {
        for &l in links {
            let start = tracked.over_link.partition_point(|(k, _)| *k < l);
            for &(k, x) in &tracked.over_link[start..] {
                if k != l {
                    break;
                }
                tracked.changed.push((x, self.link_latency(l)));
            }
        }
        let mut searches = Searches {
            topology: &self.topology,
            kept: &mut self.kept,
            run: 0,
        };
        for (source, members) in &mut tracked.from {
            let kept = searches
                .kept
                .get(source.index())
                .is_some_and(Option::is_some);
            let repaired = repaired_from
                .binary_search_by_key(source, |(s, _)| *s)
                .ok()
                .map(|i| &repaired_from[i].1);
            if kept && repaired.is_none() {
                continue;
            }
            let dist = searches.from(*source, true);
            // Members are sorted by their other end: those at a changed device, or all.
            let looked_at: Vec<std::ops::Range<usize>> = match repaired {
                Some(devices) if kept => devices
                    .iter()
                    .map(|d| {
                        let start = members.partition_point(|m| m.1 < *d);
                        start..start + members[start..].partition_point(|m| m.1 == *d)
                    })
                    .filter(|r| !r.is_empty())
                    .collect(),
                _ => std::iter::once(0..members.len()).collect(),
            };
            for range in looked_at {
                self.examined += range.len() as u64;
                for (x, other, latency) in &mut members[range] {
                    let now = nanos_to(&dist, *other);
                    if now != *latency {
                        *latency = now;
                        tracked.changed.push((*x, now.map(SimDuration::from_nanos)));
                    }
                }
            }
        }
        self.searches += searches.run;
    }

    fn link_latency(&self, l: LinkId) -> Option<SimDuration> {
        let link = &self.topology.links[l.index()];
        link.up.then_some(link.latency)
    }

    /// Measures every session of `paths` (the engine's `count` sessions, those with a peer
    /// speaker) and keeps their latencies up to date from now on.
    pub fn track_sessions(
        &mut self,
        count: usize,
        paths: &[(SessionId, SessionPath)],
    ) -> Vec<(SessionId, Option<SimDuration>)> {
        let mut out = Vec::with_capacity(paths.len());
        let mut over_link = Vec::new();
        let (mut pairs, mut which) = (Vec::new(), Vec::new());
        for &(x, path) in paths {
            match path {
                SessionPath::Link(l) => {
                    over_link.push((l, x));
                    out.push((x, self.link_latency(l)));
                }
                SessionPath::Between(a, b) => {
                    pairs.push((a, b));
                    which.push(x);
                }
            }
        }
        over_link.sort();
        let mut searches = Searches {
            topology: &self.topology,
            kept: &mut self.kept,
            run: 0,
        };
        let mut from = Vec::new();
        for (source, group) in by_source(&pairs) {
            let dist = searches.from(source, true);
            let mut members: Vec<Measured> = group
                .into_iter()
                .map(|i| {
                    let other = other_end(pairs[i], source);
                    let latency = nanos_to(&dist, other);
                    out.push((which[i], latency.map(SimDuration::from_nanos)));
                    (which[i], other, latency)
                })
                .collect();
            // By other end, so that `follow` finds a changed device's sessions.
            members.sort_unstable_by_key(|&(x, other, _)| (other, x));
            from.push((source, members));
        }
        self.searches += searches.run;
        self.sessions = Some(Tracked {
            count,
            over_link,
            from,
            changed: Vec::new(),
        });
        out
    }

    /// The tracked sessions whose latency changed since the last call, with the new latency;
    /// `None` when the engine's `count` sessions are not the ones tracked (never tracked, or
    /// forgotten).
    pub fn session_changes(
        &mut self,
        count: usize,
    ) -> Option<Vec<(SessionId, Option<SimDuration>)>> {
        match &mut self.sessions {
            Some(tracked) if tracked.count == count => Some(std::mem::take(&mut tracked.changed)),
            _ => None,
        }
    }

    /// Stops tracking sessions (the session list is about to change).
    pub fn forget_sessions(&mut self) {
        self.sessions = None;
    }

    /// Whether some path of links that are up joins `a` and `b`.
    pub fn connected(&self, a: DeviceId, b: DeviceId) -> bool {
        a == b
            || matches!(
                (self.component.get(a.index()), self.component.get(b.index())),
                (Some(x), Some(y)) if x == y
            )
    }

    /// One-way latency from `from` to `to` in nanoseconds (the IGP cost of a next hop).
    pub fn cost(&mut self, from: DeviceId, to: DeviceId) -> Option<u64> {
        if from == to {
            return Some(0);
        }
        if let Some(Some(dist)) = self.kept.get(from.index()) {
            return nanos_to(dist, to);
        }
        let mut searches = Searches {
            topology: &self.topology,
            kept: &mut self.kept,
            run: 0,
        };
        let dist = searches.from(from, true);
        self.searches += searches.run;
        nanos_to(&dist, to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarding::testutil::{topology, topology_with_spines};
    use crate::model::topology::LinkId;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, HashMap};

    /// The pair latencies as computed before the routers' searches were shared: one
    /// search from every source (the end with more pairs, then the smaller id).
    fn one_search_per_source(
        t: &Topology,
        pairs: &[(DeviceId, DeviceId)],
    ) -> Vec<Option<SimDuration>> {
        let mut degree: HashMap<DeviceId, usize> = HashMap::new();
        for &(a, b) in pairs {
            *degree.entry(a).or_default() += 1;
            *degree.entry(b).or_default() += 1;
        }
        let mut by_source: BTreeMap<DeviceId, Vec<usize>> = BTreeMap::new();
        for (i, &(a, b)) in pairs.iter().enumerate() {
            let source = if (degree[&b], Reverse(b)) > (degree[&a], Reverse(a)) {
                b
            } else {
                a
            };
            by_source.entry(source).or_default().push(i);
        }
        let mut out = vec![None; pairs.len()];
        for (source, indices) in by_source {
            let tree = t.shortest_path_tree(source, |_| true);
            for i in indices {
                let (a, b) = pairs[i];
                out[i] = tree.latency(if a == source { b } else { a });
            }
        }
        out
    }

    /// A random cluster of two zones (one to three racks of one to four nodes each) with one
    /// or two spines a zone (so that equal-cost ways exist), some links down, some access
    /// links slower (so a segment is not symmetric), some nodes deleted, and random pairs of
    /// devices (any kind, repeats and a device with itself included).
    fn case() -> impl Strategy<Value = (Topology, Vec<(DeviceId, DeviceId)>)> {
        let racks = proptest::collection::vec(1u8..5, 1..4);
        (racks.clone(), racks, 1u32..3, any::<u64>()).prop_map(|(a, b, spines, seed)| {
            let mut t = topology_with_spines(&[&a, &b], spines);
            let mut state = seed;
            let mut next =
                |n: usize| (crate::model::hash::splitmix64(&mut state) % n as u64) as usize;
            for i in 0..t.links.len() {
                match next(8) {
                    0 => t.set_link_up(LinkId(i as u32), false),
                    1 => t.links[i].latency = SimDuration::from_micros(1 + next(300) as u64),
                    _ => {}
                }
            }
            for n in 0..t.nodes.len() {
                if next(8) == 0 {
                    t.nodes[n].deleted = true;
                }
            }
            let d = t.devices.len();
            let pairs = (0..3 * d)
                .map(|_| (DeviceId(next(d) as u32), DeviceId(next(d) as u32)))
                .collect();
            (t, pairs)
        })
    }

    proptest! {
        /// A host's distances built from its routers' searches are its own search's.
        #[test]
        fn pair_latencies_are_one_search_per_source((t, pairs) in case()) {
            prop_assert_eq!(pair_latencies(&t, &pairs), one_search_per_source(&t, &pairs));
        }
    }

    #[test]
    fn a_mesh_of_one_rack_and_across_racks_has_access_and_fabric_latencies() {
        // Rack a0 has two nodes, a1 one: same rack one access hop (20 µs); across racks
        // node → ToR → spine → ToR → node (20 + 50 + 50 + 20 µs).
        let t = topology(&[&[2, 1]]);
        let dev = |n: &str| t.device_by_name(n).unwrap();
        let pairs = [
            (dev("a0-n0"), dev("a0-n1")),
            (dev("a0-n0"), dev("a1-n0")),
            (dev("a0-n1"), dev("a1-n0")),
        ];
        let us = |u| Some(SimDuration::from_micros(u));
        assert_eq!(pair_latencies(&t, &pairs), [us(20), us(140), us(140)]);
    }

    /// The partition `Underlay::new` made before segments were joined as one: a union of
    /// every device with each of its neighbours.
    fn components_by_neighbours(t: &Topology) -> Vec<u32> {
        let n = t.devices.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                x = parent[x];
            }
            x
        }
        for d in 0..n {
            for (o, _) in t.neighbours(DeviceId(d as u32)) {
                let (ra, rb) = (find(&mut parent, d), find(&mut parent, o.index()));
                parent[ra.max(rb)] = ra.min(rb);
            }
        }
        (0..n).map(|d| find(&mut parent, d) as u32).collect()
    }

    /// One event of [`events`]: a link toggled, two at once, or a node deleted.
    #[derive(Clone, Copy, Debug)]
    enum Change {
        Toggle(usize),
        /// Two links toggled in one update (one may go down as the other comes up).
        TogglePair(usize, usize),
        Delete(usize),
    }

    /// A topology, its sessions, the events and the IGP costs asked after each.
    type Events = (
        Topology,
        Vec<(SessionId, SessionPath)>,
        Vec<Change>,
        Vec<(DeviceId, DeviceId)>,
    );

    /// A random cluster as [`case`] makes it, sessions over it (single-hop over random links,
    /// multihop between random devices, a reflector-like device with many) and a sequence of
    /// link toggles (one or two an update) and node deletions.
    fn events() -> impl Strategy<Value = Events> {
        (case(), any::<u64>()).prop_map(|((t, pairs), seed)| {
            let mut state = seed;
            let mut next =
                |n: usize| (crate::model::hash::splitmix64(&mut state) % n as u64) as usize;
            let d = t.devices.len();
            let hub = DeviceId(next(d) as u32);
            let mut paths: Vec<SessionPath> = pairs
                .iter()
                .map(|&(a, b)| SessionPath::Between(a, b))
                .collect();
            paths.extend((0..d).map(|i| SessionPath::Between(hub, DeviceId(i as u32))));
            paths.extend((0..4).map(|_| SessionPath::Link(LinkId(next(t.links.len()) as u32))));
            let sessions = paths
                .into_iter()
                .enumerate()
                .map(|(i, p)| (SessionId(i as u32), p))
                .collect();
            let changes = (0..12)
                .map(|_| match next(10) {
                    0 => Change::Delete(next(t.nodes.len())),
                    1 | 2 => Change::TogglePair(next(t.links.len()), next(t.links.len())),
                    _ => Change::Toggle(next(t.links.len())),
                })
                .collect();
            let queries = (0..2 * d)
                .map(|_| (DeviceId(next(d) as u32), DeviceId(next(d) as u32)))
                .collect();
            (t, sessions, changes, queries)
        })
    }

    /// Every session's latency over `t`, computed from scratch.
    fn measured(t: &Topology, sessions: &[(SessionId, SessionPath)]) -> Vec<Option<SimDuration>> {
        let pairs: Vec<(DeviceId, DeviceId)> = sessions
            .iter()
            .filter_map(|(_, p)| match *p {
                SessionPath::Between(a, b) => Some((a, b)),
                SessionPath::Link(_) => None,
            })
            .collect();
        let mut multihop = pair_latencies(t, &pairs).into_iter();
        sessions
            .iter()
            .map(|(_, p)| match *p {
                SessionPath::Link(l) => {
                    let link = &t.links[l.index()];
                    link.up.then_some(link.latency)
                }
                SessionPath::Between(..) => multihop.next().flatten(),
            })
            .collect()
    }

    proptest! {
        /// Segments joined as one meeting point give the partition of the neighbours.
        #[test]
        fn components_are_those_of_the_neighbours((t, _) in case()) {
            prop_assert_eq!(t.components(), components_by_neighbours(&t));
        }

        /// `each_way_in` is `neighbours` read backwards, latencies included.
        #[test]
        fn the_ways_into_a_device_are_the_neighbours_reversed((t, _) in case()) {
            let n = t.devices.len();
            let mut forwards = Vec::new();
            for u in 0..n {
                let u = DeviceId(u as u32);
                forwards.extend(t.neighbours(u).into_iter().map(|(v, l)| (v, u, l)));
            }
            let mut backwards = Vec::new();
            for v in 0..n {
                let v = DeviceId(v as u32);
                t.each_way_in(v, |_| true, |u, l| backwards.push((v, u, l)));
            }
            forwards.sort();
            backwards.sort();
            prop_assert_eq!(forwards, backwards);
        }

        /// After every event the updated underlay is a new one over the topology: the same
        /// components (and "changed" exactly when they did), every kept distance vector a
        /// fresh search's, every IGP cost a fresh search's, and the tracked latencies, with
        /// the changes it reported applied, those measured from scratch; a multihop session
        /// is reported only when its latency changed. Every other event is told what changed
        /// (`update_told`), the others found by comparison (`update`).
        #[test]
        fn an_updated_underlay_is_a_new_one((mut t, sessions, changes, queries) in events()) {
            let mut u = Underlay::new(&t);
            let mut latencies = vec![None; sessions.len()];
            for (x, l) in u.track_sessions(sessions.len(), &sessions) {
                latencies[x.index()] = l;
            }
            prop_assert_eq!(&latencies, &measured(&t, &sessions));
            for &(a, b) in &queries[..queries.len() / 2] {
                u.cost(a, b);
            }
            for (i, change) in changes.into_iter().enumerate() {
                let (told, removed) = match change {
                    Change::Toggle(l) => (vec![LinkId(l as u32)], vec![]),
                    Change::TogglePair(a, b) => {
                        (vec![LinkId(a as u32), LinkId(b as u32)], vec![])
                    }
                    Change::Delete(n) => {
                        t.nodes[n].deleted = true;
                        (vec![], vec![t.nodes[n].device])
                    }
                };
                for &l in &told {
                    let up = t.links[l.index()].up;
                    t.set_link_up(l, !up);
                }
                let before = u.component.clone();
                let components_changed = if i % 2 == 0 {
                    u.update(&t)
                } else {
                    u.update_told(&t, &told, &removed)
                };
                let fresh = Underlay::new(&t);
                prop_assert_eq!(&u.component, &fresh.component);
                prop_assert_eq!(components_changed, before != fresh.component);
                for (s, kept) in u.kept.iter().enumerate() {
                    if let Some(dist) = kept {
                        prop_assert_eq!(&**dist, &distances_from(&t, DeviceId(s as u32)));
                    }
                }
                for (x, l) in u.session_changes(sessions.len()).expect("tracked") {
                    let multihop = matches!(sessions[x.index()].1, SessionPath::Between(..));
                    prop_assert!(!multihop || latencies[x.index()] != l, "{:?} reported unchanged", x);
                    latencies[x.index()] = l;
                }
                prop_assert_eq!(&latencies, &measured(&t, &sessions));
                for &(a, b) in &queries {
                    let cost = if a == b { Some(0) } else { distances_from(&t, a)[b.index()] };
                    prop_assert_eq!(u.cost(a, b), cost);
                }
            }
        }
    }

    #[test]
    fn a_link_event_changes_only_the_distances_it_alters_and_searches_nothing_again() {
        // Zone a: racks a0 (a0-n0, a0-n1) and a1 (a1-n0, a1-n1) under spine-a-1; zone b: rack
        // b0 (b0-n0, b0-n1) under spine-b-1; the core joins the two spines. Access hops are
        // 20 µs, ToR–spine 50 µs, spine–core 1 ms.
        let mut t = topology(&[&[2, 2], &[2]]);
        let dev = |n: &str| t.device_by_name(n).unwrap();
        let between = |a: &str, b: &str| SessionPath::Between(dev(a), dev(b));
        // a0-n0 reflects to three clients (three pairs: the source of all three); b0-n0 and
        // b0-n1 have one pair each, so the smaller id, b0-n0, is its source.
        let sessions: Vec<(SessionId, SessionPath)> = [
            between("a0-n1", "a0-n0"),
            between("a1-n0", "a0-n0"),
            between("a1-n1", "a0-n0"),
            between("b0-n1", "b0-n0"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, p)| (SessionId(i as u32), p))
        .collect();
        let link = |t: &Topology, a: &str, b: &str| {
            let (a, b) = (t.device_by_name(a).unwrap(), t.device_by_name(b).unwrap());
            t.link_between(a, b).unwrap()
        };
        let (core_b, tor_a1) = (
            link(&t, "spine-b-1", "core"),
            link(&t, "tor-a1", "spine-a-1"),
        );
        let us = |u| Some(SimDuration::from_micros(u));
        let mut u = Underlay::new(&t);
        u.track_sessions(sessions.len(), &sessions);
        // A host source is built from its ToR's search: tor-a0 and tor-b0, two searches.
        assert_eq!((u.searches, u.examined), (2, 0));

        // Zone b cut off: every kept vector (tor-a0, a0-n0, tor-b0, b0-n0) reached the other
        // zone over spine-b-1–core only, so the other zone's devices are lost to it (from
        // zone a: spine-b-1, then tor-b0 behind it, then b0-n0 and b0-n1) and are set
        // unreachable in place — no search. No pair is examined: every pair's other end is
        // in its source's zone, where no distance changed.
        t.set_link_up(core_b, false);
        assert!(u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 0, 4));
        assert_eq!(u.session_changes(4), Some(vec![]));

        // tor-a1–spine-a-1 down: tor-a0 (spine-a-1 at 50 µs, tor-a1 at 100) and a0-n0 (70,
        // 120) reached tor-a1 over it alone: tor-a1 has no other way in from a router, so it
        // and its nodes are lost and unreachable; of a0-n0's three pairs the two to those
        // nodes are examined, a1-n0 and a1-n1 now unreachable (a0-n1's distance did not
        // change). Zone b reaches neither end: its vectors are unchanged and its pair is not
        // looked at.
        t.set_link_up(tor_a1, false);
        assert!(u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 2, 6));
        assert_eq!(
            u.session_changes(4),
            Some(vec![(SessionId(1), None), (SessionId(2), None)])
        );

        // Up again: the link shortens tor-a0's way to tor-a1 (unreachable → 100 µs) and a0-n0's
        // (120), and the search goes on from tor-a1 alone; a1-n0 and a1-n1 are back at 20 + 50
        // + 50 + 20 µs: those two pairs are examined. Zone b reaches neither end of the link.
        t.set_link_up(tor_a1, true);
        assert!(u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 4, 8));
        assert_eq!(
            u.session_changes(4),
            Some(vec![(SessionId(1), us(140)), (SessionId(2), us(140))])
        );

        // A link that is already as the topology says changes nothing and costs nothing.
        assert!(!u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 4, 8));
        assert_eq!(u.session_changes(4), Some(vec![]));
    }

    #[test]
    fn a_link_with_an_equal_cost_twin_going_down_costs_only_the_vectors_it_lengthens() {
        // One zone: racks a0 (a0-n0, a0-n1) and a1 (a1-n0, a1-n1), each ToR linked to both
        // spine-a-1 and spine-a-2; access hops 20 µs, ToR–spine 50 µs, no core.
        let mut t = topology_with_spines(&[&[2, 2]], 2);
        let dev = |t: &Topology, n: &str| t.device_by_name(n).unwrap();
        let between = |a: &str, b: &str| SessionPath::Between(dev(&t, a), dev(&t, b));
        // a0-n0 reflects to the other three: it is their pairs' source, built from tor-a0's
        // search.
        let sessions: Vec<(SessionId, SessionPath)> = [
            between("a0-n1", "a0-n0"),
            between("a1-n0", "a0-n0"),
            between("a1-n1", "a0-n0"),
        ]
        .into_iter()
        .enumerate()
        .map(|(i, p)| (SessionId(i as u32), p))
        .collect();
        let us = |u| Some(SimDuration::from_micros(u));
        let ns = |u: u64| Some(u * 1_000);
        let mut u = Underlay::new(&t);
        u.track_sessions(sessions.len(), &sessions);
        // tor-a1's distances are kept too once asked: spine-a-1 one hop away.
        assert_eq!(u.cost(dev(&t, "tor-a1"), dev(&t, "spine-a-1")), ns(50));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 0, 0));

        // tor-a1–spine-a-1 down. From tor-a0 (and a0-n0) the removed spine-a-1 → tor-a1 was a
        // shortest way in (50 + 50 µs), but spine-a-2 → tor-a1 is another at the same 100 µs:
        // nothing changes, no pair is examined. From tor-a1, spine-a-1 has no way in at 50 µs
        // left (tor-a0 is 100 µs away, so 150): it is now 150 µs; tor-a0 behind it keeps its
        // 100 over spine-a-2. One vector changed in place, no search.
        let l = t
            .link_between(dev(&t, "tor-a1"), dev(&t, "spine-a-1"))
            .unwrap();
        t.set_link_up(l, false);
        assert!(!u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 0, 1));
        assert_eq!(u.session_changes(3), Some(vec![]));
        assert_eq!(u.cost(dev(&t, "tor-a1"), dev(&t, "spine-a-1")), ns(150));
        assert_eq!(u.searches, 2);

        // a1-n1's access link down: a1-n1, a host, loses its only way in; nothing goes on
        // through a host, so every vector (tor-a0, a0-n0, tor-a1) changes in that one place.
        // Of a0-n0's pairs only a1-n1's is examined, and it is now unreachable.
        let access = t.link_between(dev(&t, "a1-n1"), dev(&t, "tor-a1")).unwrap();
        t.set_link_up(access, false);
        assert!(u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 1, 4));
        assert_eq!(u.session_changes(3), Some(vec![(SessionId(2), None)]));

        // Up again: tor-a1 → a1-n1 shortens a way (unreachable → 120 µs from tor-a0); a1-n1 is
        // back at 20 + 50 + 50 + 20 µs from a0-n0, its pair examined again.
        t.set_link_up(access, true);
        assert!(u.update(&t));
        assert_eq!((u.searches, u.examined, u.repairs), (2, 2, 7));
        assert_eq!(u.session_changes(3), Some(vec![(SessionId(2), us(140))]));
    }
}
