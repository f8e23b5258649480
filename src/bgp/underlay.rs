//! The underlay as BGP sees it: which devices can reach each other (next-hop resolution,
//! liveness of multihop sessions) and the one-way latency between them (how long an UPDATE
//! travels, and the IGP cost of a next hop in the decision process).
//!
//! Distances come from `Topology::shortest_path_tree` (links that are up, hosts never
//! transit), all from one source at once; a host's are built from the searches of the routers
//! next to it, so the latencies of a full mesh of n nodes in r racks cost about r searches
//! and n merges rather than n²/2 point-to-point searches.
//! Ties between equal-cost paths do not matter here: only distances are used.

use std::cmp::Reverse;
use std::collections::HashMap;
use std::sync::Arc;

use crate::model::time::SimDuration;
use crate::model::topology::{DeviceId, Topology};

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
    let source_of = |(a, b): (DeviceId, DeviceId)| {
        if (degree[b.index()], Reverse(b)) > (degree[a.index()], Reverse(a)) {
            b
        } else {
            a
        }
    };
    // The pairs grouped by source, sources in device order (a counting sort).
    let mut start = vec![0usize; slots + 1];
    for &pair in pairs {
        start[source_of(pair).index() + 1] += 1;
    }
    for i in 0..slots {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    let mut by_source = vec![0usize; pairs.len()];
    for (i, &pair) in pairs.iter().enumerate() {
        let s = source_of(pair).index();
        by_source[fill[s]] = i;
        fill[s] += 1;
    }
    let mut searches = Searches::new(topology);
    let mut out = vec![None; pairs.len()];
    for s in 0..slots {
        let group = &by_source[start[s]..start[s + 1]];
        if group.is_empty() {
            continue;
        }
        let source = DeviceId(s as u32);
        let dist = searches.from(source);
        for &i in group {
            let (a, b) = pairs[i];
            let other = if a == source { b } else { a };
            out[i] = dist
                .get(other.index())
                .copied()
                .flatten()
                .map(SimDuration::from_nanos);
        }
    }
    out
}

/// Single-source distances as [`distances_from`] computes them, with every router's kept:
/// a host source's distances are built from its neighbours' (see [`pair_latencies`]).
struct Searches<'t> {
    topology: &'t Topology,
    routers: HashMap<DeviceId, Vec<Option<u64>>>,
}

impl<'t> Searches<'t> {
    fn new(topology: &'t Topology) -> Searches<'t> {
        Searches {
            topology,
            routers: HashMap::new(),
        }
    }

    fn router(&mut self, r: DeviceId) -> &[Option<u64>] {
        let topology = self.topology;
        self.routers
            .entry(r)
            .or_insert_with(|| distances_from(topology, r))
    }

    /// [`distances_from`] `from`. Shortest paths from a host leave it by one hop and then
    /// cross routers only (no host transits, and the source is never crossed again, as
    /// latencies are positive), so the host's distance to `x` is the minimum over its
    /// neighbours `v` at latency `l` of `l` when `v` is `x`, and `l` plus `v`'s distance
    /// to `x` when `v` is a router.
    fn from(&mut self, from: DeviceId) -> Vec<Option<u64>> {
        let topology = self.topology;
        let n = topology.devices.len();
        if from.index() >= n || topology.device(from).is_router() {
            return distances_from(topology, from);
        }
        let mut dist: Vec<Option<u64>> = vec![None; n];
        dist[from.index()] = Some(0);
        let mut closer = |x: usize, d: u64| {
            if dist[x].is_none_or(|old| d < old) {
                dist[x] = Some(d);
            }
        };
        for (v, latency) in topology.neighbours(from) {
            let l = latency.as_nanos();
            closer(v.index(), l);
            if topology.device(v).is_router() {
                for (x, d) in self.router(v).iter().enumerate() {
                    if let Some(d) = d {
                        closer(x, l + d);
                    }
                }
            }
        }
        dist
    }
}

/// A snapshot of the underlay: connectivity (components) and cached distances.
#[derive(Clone, Debug)]
pub struct Underlay {
    topology: Topology,
    /// Component of each device; devices that are absent (deleted) get their own.
    component: Vec<u32>,
    cache: HashMap<DeviceId, Distances>,
}

impl Underlay {
    pub fn new(topology: &Topology) -> Underlay {
        let n = topology.devices.len();
        let mut parent: Vec<usize> = (0..n).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        for d in 0..n {
            let id = DeviceId(d as u32);
            for (o, _) in topology.neighbours(id) {
                let (ra, rb) = (find(&mut parent, d), find(&mut parent, o.index()));
                if ra != rb {
                    parent[ra.max(rb)] = ra.min(rb);
                }
            }
        }
        let component = (0..n).map(|d| find(&mut parent, d) as u32).collect();
        Underlay {
            topology: topology.clone(),
            component,
            cache: HashMap::new(),
        }
    }

    pub fn topology(&self) -> &Topology {
        &self.topology
    }

    /// Whether some path of links that are up joins `a` and `b`.
    pub fn connected(&self, a: DeviceId, b: DeviceId) -> bool {
        a == b
            || matches!(
                (self.component.get(a.index()), self.component.get(b.index())),
                (Some(x), Some(y)) if x == y
            )
    }

    /// Whether the partition into components differs from `other`'s.
    pub fn same_components(&self, other: &Underlay) -> bool {
        self.component == other.component
    }

    /// One-way latency from `from` to `to` in nanoseconds (the IGP cost of a next hop).
    pub fn cost(&mut self, from: DeviceId, to: DeviceId) -> Option<u64> {
        if from == to {
            return Some(0);
        }
        let topology = &self.topology;
        let dist = self
            .cache
            .entry(from)
            .or_insert_with(|| Arc::new(distances_from(topology, from)));
        dist.get(to.index()).copied().flatten()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarding::testutil::topology;
    use crate::model::topology::LinkId;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

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

    /// A random cluster of two zones (one to three racks of one to four nodes each), some
    /// links down, some access links slower (so a segment is not symmetric), some nodes
    /// deleted, and random pairs of devices (any kind, repeats and a device with itself
    /// included).
    fn case() -> impl Strategy<Value = (Topology, Vec<(DeviceId, DeviceId)>)> {
        let racks = proptest::collection::vec(1u8..5, 1..4);
        (racks.clone(), racks, any::<u64>()).prop_map(|(a, b, seed)| {
            let mut t = topology(&[&a, &b]);
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
}
