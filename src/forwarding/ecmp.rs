//! Equal-cost multipath on the fabric's routers, where the scenario asks for it
//! (`topology.fabric.ecmp: true`).
//!
//! A router that holds several BGP paths for a prefix which tie through the IGP cost (they
//! lose to the best only at the router ID, the CLUSTER_LIST length or the peer address, as
//! BIRD's `bgp_rte_mergable` decides) installs them all as one multipath route, as BIRD's
//! kernel protocol does with `merge paths on` (Calico's own template sets it on every node;
//! on the fabric's routers it is the operator's choice, hence the scenario field), and the
//! kernel spreads flows over them by a hash of the flow. [`branches`] lists the next hops a
//! router may send a packet to; [`pick`] is the flow hash's choice among them, a pure
//! function of the scenario seed, the flow and the router, so the same seed picks the same
//! branch.
//!
//! Invariants: without ECMP or with one path, [`branches`] is the FIB entry's own next hop,
//! so nothing changes; the best route's next hop is always the first branch.
//! What this is not: only the walk from an external to a Service address forks
//! (`service_entry`); other walks follow the best path, and node FIBs never hold multipath
//! routes (nodes keep learned Service routes out of their kernel anyway).

use std::net::IpAddr;

use super::dataplane::Dataplane;
use super::fib::{FibAction, FibEntry, Origin};
use crate::model::hash::{hash_of, splitmix64};
use crate::model::topology::DeviceId;

/// The devices `device` may forward a packet to by `entry`: every equal-cost next hop that
/// resolves to a neighbour, the entry's own first; empty for an entry that does not forward
/// to a neighbour (local, blackhole, out of the fabric, a tunnel).
pub fn branches(dp: &Dataplane, device: DeviceId, entry: &FibEntry) -> Vec<DeviceId> {
    let FibAction::Via { device: first, .. } = entry.action else {
        return Vec::new();
    };
    let mut out = vec![first];
    if entry.origin != Origin::Learned {
        return out;
    }
    for nh in dp
        .equal_paths
        .get(&(device, entry.prefix))
        .map_or(&[][..], Vec::as_slice)
    {
        if let Some((_, via)) = dp.resolve_next_hop(device, *nh)
            && !out.contains(&via)
        {
            out.push(via);
        }
    }
    out
}

/// The flow hash's choice among `n` branches at `device` for the flow `key` (any hashable
/// description of the flow: client, destination, port, protocol), seeded by `seed`.
pub fn pick(seed: u64, key: u64, device: DeviceId, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    let mut state = seed ^ hash_of(&(key, device.0));
    (splitmix64(&mut state) % n as u64) as usize
}

/// The flow key [`pick`] hashes: a connection's 5-tuple without the source port.
pub fn flow_key(client: IpAddr, address: IpAddr, port: u16, protocol: u8) -> u64 {
    hash_of(&(client, address, port, protocol))
}
