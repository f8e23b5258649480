//! The underlay as BGP sees it: which devices can reach each other (next-hop resolution,
//! liveness of multihop sessions) and the one-way latency between them (how long an UPDATE
//! travels, and the IGP cost of a next hop in the decision process).
//!
//! Distances come from `Topology::shortest_path_tree` (links that are up, hosts never
//! transit), all from one source at once, so the latencies of a full mesh of n nodes cost n
//! single-source searches rather than n²/2 point-to-point ones.
//! Ties between equal-cost paths do not matter here: only distances are used.

use std::cmp::Reverse;
use std::collections::{BTreeMap, HashMap};
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
/// cost one search).
pub fn pair_latencies(
    topology: &Topology,
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
        let dist = distances_from(topology, source);
        for i in indices {
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
