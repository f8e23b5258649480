//! How much memory a scenario's simulation will need, estimated before it runs (issue #19).
//!
//! The input limits bound reading and validating; they do not bound simulating: 100,000 nodes
//! in a full node-to-node mesh imply 5 × 10^9 BGP sessions. The dominant state is BGP's, and
//! it follows from the scenario alone:
//!
//! - sessions: n(n−1)/2 with the mesh on (Calico's default); with it off, every node peers
//!   with each of the r route reflectors (the usual BGPPeer design) and the reflectors with
//!   each other: (n − r)·r + r(r−1)/2;
//! - routes: every node originates at least one block (P ≥ n prefixes). With the mesh, a node
//!   holds each prefix once in its Adj-RIB-In and once in its Loc-RIB: 2·n·P; with r
//!   reflectors a client hears each prefix from every reflector: (r + 1)·n·P.
//!
//! The costs per item are measured, not guessed: the performance table of podnet 3bcd134
//! (`docs/performance-history.md`, "Earlier table") fits `64 MiB + 2 KiB per session +
//! 32 B per route` within 20% on all six bench scenarios (mesh-1000: 499,500 sessions and
//! 2·10^6 routes, 0.97 GiB measured, 1.1 GiB estimated; rr-5000: 14,994 sessions and 10^8
//! routes, 2.74 GiB measured, 3.0 GiB estimated). The estimate errs high; a scenario is refused only when it exceeds the
//! machine's memory, where running it would end with the process killed.
//!
//! This module reads the validated scenario only; it is not a model of the BGP engine.

use super::Scenario;
use super::kinds::ResourceSpec;
use crate::model::action::Action;
use crate::model::network::CalicoBackend;

/// Bytes the process needs whatever the scenario (code, tables, buffers).
const BASE_BYTES: u64 = 64 << 20;
/// Bytes per BGP session (both ends' state, timers, Adj-RIB-Out bookkeeping).
const SESSION_BYTES: u64 = 2 << 10;
/// Bytes per route held in an Adj-RIB-In or Loc-RIB.
const ROUTE_BYTES: u64 = 32;

/// The estimate and what it is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footprint {
    pub nodes: u64,
    pub sessions: u64,
    pub routes: u64,
    pub bytes: u64,
}

/// Estimates the memory simulating `scenario` takes (see the module doc for the formula).
pub fn estimate(scenario: &Scenario) -> Footprint {
    let added: u64 = scenario
        .actions
        .iter()
        .map(|a| match &a.action {
            Action::AddNodes(add) => add.nodes.len() as u64,
            _ => 0,
        })
        .sum();
    let n = scenario.topology.nodes.len() as u64 + added;
    let (sessions, routes) = if scenario.network.calico_backend == CalicoBackend::Vxlan {
        (0, 0)
    } else {
        // Calico's default is the mesh; a BGPConfiguration present from the start can turn
        // it off.
        let mesh = !scenario.specs.iter().any(|s| {
            matches!(s, Some(ResourceSpec::BgpConfiguration(c))
                if c.node_to_node_mesh_enabled == Some(false))
        });
        let r = scenario
            .topology
            .nodes
            .iter()
            .filter(|node| node.bgp.route_reflector_cluster_id.is_some())
            .count() as u64;
        let prefixes = n;
        if mesh || r == 0 {
            (
                n.saturating_mul(n.saturating_sub(1)) / 2,
                n.saturating_mul(prefixes).saturating_mul(2),
            )
        } else {
            (
                (n - r.min(n)).saturating_mul(r) + r * r.saturating_sub(1) / 2,
                n.saturating_mul(prefixes).saturating_mul(r + 1),
            )
        }
    };
    let bytes = BASE_BYTES
        .saturating_add(sessions.saturating_mul(SESSION_BYTES))
        .saturating_add(routes.saturating_mul(ROUTE_BYTES));
    Footprint {
        nodes: n,
        sessions,
        routes,
        bytes,
    }
}

/// The memory this machine has for podnet: the cgroup's limit if one is set, else the
/// physical memory (`MemTotal`); `None` where neither can be read.
pub fn machine_memory() -> Option<u64> {
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("MemTotal:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    match (cgroup, total) {
        (Some(c), Some(t)) => Some(c.min(t)),
        (c, t) => c.or(t),
    }
}

/// Why `footprint` cannot be simulated within `available` bytes, with the remedy; `None` when
/// it fits.
pub fn refusal(footprint: &Footprint, available: u64) -> Option<String> {
    if footprint.bytes <= available {
        return None;
    }
    Some(format!(
        "simulating this scenario needs about {} ({} nodes, {} BGP sessions, {} RIB \
         routes), more than this machine's {}; a full node-to-node mesh grows with the \
         square of the node count: use route reflectors (BGPConfiguration \
         nodeToNodeMeshEnabled: false and BGPPeers to a few reflector nodes) or fewer nodes",
        human_bytes(footprint.bytes),
        footprint.nodes,
        footprint.sessions,
        footprint.routes,
        human_bytes(available)
    ))
}

/// An estimate in the unit a person reads: `96 MiB`, `1.1 GiB`.
pub fn human_bytes(bytes: u64) -> String {
    if bytes < 1 << 30 {
        format!("{} MiB", bytes.div_ceil(1 << 20))
    } else {
        format!("{:.1} GiB", bytes as f64 / f64::from(1u32 << 30))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Scenario {
        super::super::load_str("s.yaml", text).unwrap_or_else(|d| panic!("{d}"))
    }

    fn cluster(nodes: u32, extra: &str) -> String {
        format!(
            "name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n    - name: r\n      subnet: 10.0.0.0/16\n      nodes: [{{namePrefix: n, count: {nodes}}}]\n{extra}"
        )
    }

    #[test]
    fn a_mesh_is_quadratic_and_reflectors_are_not() {
        // Mesh of 1,000: 1000·999/2 sessions, 2·1000·1000 routes.
        let mesh = estimate(&load(&cluster(1_000, "")));
        assert_eq!((mesh.sessions, mesh.routes), (499_500, 2_000_000));
        assert_eq!(mesh.bytes, (64 << 20) + 499_500 * 2048 + 2_000_000 * 32);
        // VXLAN: no BGP at all.
        let vxlan = estimate(&load(&cluster(1_000, "network: {calicoBackend: vxlan}\n")));
        assert_eq!((vxlan.sessions, vxlan.routes), (0, 0));
    }

    #[test]
    fn a_mesh_of_100000_nodes_is_refused_with_the_remedy() {
        let f = estimate(&load(&cluster(60_000, "")));
        // 60000·59999/2 = 1,799,970,000 sessions: ~3.4 TiB.
        assert_eq!(f.sessions, 1_799_970_000);
        let why = refusal(&f, 24 << 30).expect("refused");
        assert!(why.contains("route reflectors"), "{why}");
        assert!(refusal(&estimate(&load(&cluster(100, ""))), 24 << 30).is_none());
    }

    #[test]
    fn sizes_read_in_mebibytes_then_gibibytes() {
        assert_eq!(human_bytes(64 << 20), "64 MiB");
        assert_eq!(human_bytes((64 << 20) + 1), "65 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
    }
}
