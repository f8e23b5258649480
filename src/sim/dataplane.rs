//! Building the forwarding state of an instant from the simulated world.
//!
//! The FIBs are derived, never stored in the world: at a snapshot the engine hands the
//! topology, the pods with addresses (a host-network pod attached as its node), each node's own blocks (blackholes) and the routes the
//! control plane installed (BGP's best routes, or Felix's routes with Calico's VXLAN backend)
//! to [`crate::forwarding::Dataplane::builder`]. Routes common to every node go into one
//! shared table, so a 5,000-node cluster does not hold 5,000 copies of it; what differs per
//! node is found from the engine's shared RIB states, without listing every node's routes.

use std::net::IpAddr;

use ipnet::IpNet;

use super::World;
use super::addressing::Addressing;
use crate::bgp::PrefixId;
use crate::bgp::rib::either;
use crate::forwarding::{Attachment, Dataplane, DataplaneMemo, PodKey};
use crate::model::topology::DeviceId;

/// The dataplane of the world as it is now: Felix's routes on every node (VXLAN backend),
/// and each BGP speaker's best routes (nodes with BIRD, routers when the fabric speaks BGP).
/// With `memo`, the routing of an earlier dataplane built from the same is shared
/// ([`DataplaneMemo`]).
pub fn build(world: &World, memo: Option<&DataplaneMemo>) -> Dataplane {
    let topology = &world.topology;
    let mut builder = Dataplane::builder(topology);
    // Pools decide encapsulation (Calico only).
    if let Addressing::Calico(ipam) = &world.addressing {
        for name in ipam.pool_names() {
            if let Some(pool) = ipam.pool(&name) {
                builder.pool(pool.network(), pool.ipip_mode, pool.vxlan_mode);
                if pool.nat_outgoing {
                    builder.nat_outgoing(pool.network());
                }
            }
        }
        // Every node blackholes its own blocks (not /32 blocks): BIRD's `blackhole` routes.
        for (_, node) in topology.live_nodes() {
            for block in ipam.node_report(&node.name).affine_blocks {
                if block.prefix_len() < block.max_prefix_len() {
                    builder.blackhole(node.device, block);
                }
            }
        }
    }
    for pod in world.cluster.pods() {
        let (Some(ip), Some(node)) = (pod.ip(topology), pod.node) else {
            continue;
        };
        let attachment = match (&world.addressing, &pod.address) {
            _ if pod.host_network => Attachment::Host,
            (Addressing::Calico(_), _) => Attachment::Calico,
            (Addressing::Spiderpool(_), a) => Attachment::Segment {
                gateway: a.as_ref().and_then(|a| a.gateway),
            },
        };
        builder.pod(PodKey(pod.id.0), ip, node, attachment);
    }
    if let Some(routes) = &world.control.felix {
        let table = builder.shared_table(routes.iter().map(|(p, nh)| (*p, *nh)));
        for (_, node) in topology.live_nodes() {
            builder.use_shared(node.device, table);
            for (prefix, next_hop) in routes {
                if *next_hop == node.ip {
                    builder.withhold(node.device, *prefix);
                }
            }
        }
    }
    if let Some(bgp) = &world.control.bgp {
        // Calico keeps learned Service routes out of a node's kernel (`/rejectcidrs`): only
        // routers forward by them (`forwarding::advertise`).
        let reject: Vec<IpNet> = world.control.bgp_inputs.services.all().collect();
        let filtered =
            |device: DeviceId| !reject.is_empty() && !topology.device(device).is_router();
        let keeps = |device: DeviceId, p: &IpNet| {
            !filtered(device) || !reject.iter().any(|r| r.contains(p))
        };
        let learned = |device: DeviceId| {
            let mut routes = bgp.learned_next_hops(device);
            routes.retain(|(_, p, _)| keeps(device, p));
            routes
        };
        let speakers: Vec<DeviceId> = bgp
            .speakers()
            .iter()
            .map(|s| s.device)
            .filter(|d| bgp.forwards(*d))
            .collect();
        // Most nodes hold the same table: store the first node speaker's once and keep only
        // the differences per device.
        let common_from = speakers
            .iter()
            .copied()
            .find(|d| !topology.device(*d).is_router())
            .or_else(|| speakers.first().copied());
        let common = common_from.map(learned).unwrap_or_default();
        let table = builder.shared_table(common.iter().map(|(_, p, nh)| (*p, *nh)));
        // Where a device's list may differ from the common one, found without listing it
        // (`BgpEngine::learned_spread`): where the engine's reference list differs from the
        // common one, and where the device's differs from the reference — as long as the
        // device keeps the same Service routes out as the common one's.
        let mut spread = bgp.learned_spread(&speakers);
        let common_filtered = common_from.is_some_and(filtered);
        if let Some(c) = common_from {
            spread.reference.retain(|(_, p, _)| keeps(c, p));
        }
        let off_reference = differing_ids(&common, &spread.reference);
        for (&device, differing) in speakers.iter().zip(spread.differing) {
            let (extra, missing) = match (common_from, differing) {
                (Some(c), Some(differing)) if filtered(device) == common_filtered => {
                    // The two lists agree outside these prefixes: comparing them cut down
                    // to these gives what comparing them whole would.
                    let prefixes = either(&off_reference, &differing);
                    let only = |d: DeviceId| -> Vec<Learned> {
                        prefixes
                            .iter()
                            .filter_map(|&p| {
                                let (net, hop) = bgp.learned_next_hop(d, p)?;
                                keeps(d, &net).then_some((p, net, hop))
                            })
                            .collect()
                    };
                    difference(&only(c), &only(device))
                }
                _ => difference(&common, &learned(device)),
            };
            builder.learned_difference(device, table, extra, missing);
        }
        // Fabric ECMP (`forwarding::ecmp`): the routers' equal-cost paths.
        if topology.fabric.ecmp {
            for device in speakers
                .into_iter()
                .filter(|d| topology.device(*d).is_router())
            {
                for (prefix, next_hops) in bgp.equal_cost_next_hops(device) {
                    builder.equal_paths(device, prefix, next_hops);
                }
            }
        }
    }
    builder.build_with(memo)
}

/// How `mine` differs from `common`, both in prefix-id order: the routes of `mine` that
/// `common` lacks or has with another next hop, and the prefixes of `common` that `mine`
/// lacks. One merge, no lookups: 5,000 nodes of 5,000 routes each are compared in
/// milliseconds.
fn difference(common: &[Learned], mine: &[Learned]) -> (Vec<(IpNet, IpAddr)>, Vec<IpNet>) {
    let (mut extra, mut missing) = (Vec::new(), Vec::new());
    merge(common, mine, |c, m| match (c, m) {
        (Some(c), Some(m)) if c.2 != m.2 => extra.push((m.1, m.2)),
        (Some(_), Some(_)) => {}
        (Some(c), None) => missing.push(c.1),
        (None, Some(m)) => extra.push((m.1, m.2)),
        (None, None) => unreachable!("`merge` calls with a route"),
    });
    (extra, missing)
}

/// The prefix ids where two lists in prefix-id order differ: one has a route the other
/// lacks, or both have one with different next hops. Ascending.
fn differing_ids(a: &[Learned], b: &[Learned]) -> Vec<PrefixId> {
    let mut out = Vec::new();
    merge(a, b, |x, y| {
        let x_or_y = x.or(y).expect("`merge` calls with a route");
        if x.map(|r| r.2) != y.map(|r| r.2) {
            out.push(x_or_y.0);
        }
    });
    out
}

/// Walks two lists in prefix-id order together, calling `f` once per prefix either has,
/// in id order, with each list's route for it.
fn merge(a: &[Learned], b: &[Learned], mut f: impl FnMut(Option<&Learned>, Option<&Learned>)) {
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) if x.0 == y.0 => {
                f(Some(x), Some(y));
                i += 1;
                j += 1;
            }
            (Some(x), Some(y)) if x.0 < y.0 => {
                f(Some(x), None);
                i += 1;
            }
            (Some(x), None) => {
                f(Some(x), None);
                i += 1;
            }
            (_, Some(y)) => {
                f(None, Some(y));
                j += 1;
            }
            (None, None) => unreachable!("the loop condition"),
        }
    }
}

/// A learned route as the BGP engine lists it: prefix id, prefix, next hop.
type Learned = (PrefixId, IpNet, IpAddr);

#[cfg(test)]
mod tests {
    use super::*;

    fn route(id: u32, next_hop: u8) -> Learned {
        let prefix = format!("10.{id}.0.0/16").parse().unwrap();
        (PrefixId(id), prefix, IpAddr::from([192, 168, 0, next_hop]))
    }

    #[test]
    fn difference_lists_changed_and_extra_routes_and_the_missing_prefixes() {
        let common = [route(1, 1), route(2, 1), route(4, 1), route(6, 1)];
        let mine = [route(0, 9), route(2, 1), route(4, 2), route(5, 1)];
        let (extra, missing) = difference(&common, &mine);
        let nets = |ids: &[u32]| -> Vec<IpNet> { ids.iter().map(|i| route(*i, 0).1).collect() };
        assert_eq!(
            extra,
            vec![
                (route(0, 9).1, route(0, 9).2),
                (route(4, 2).1, route(4, 2).2),
                (route(5, 1).1, route(5, 1).2)
            ]
        );
        assert_eq!(missing, nets(&[1, 6]));
        assert_eq!(difference(&common, &common), (Vec::new(), Vec::new()));
    }

    #[test]
    fn differing_ids_are_the_prefixes_either_list_has_otherwise() {
        let a = [route(1, 1), route(2, 1), route(4, 1), route(6, 1)];
        let b = [route(0, 9), route(2, 1), route(4, 2), route(5, 1)];
        let ids = |ids: &[u32]| -> Vec<PrefixId> { ids.iter().map(|i| PrefixId(*i)).collect() };
        assert_eq!(differing_ids(&a, &b), ids(&[0, 1, 4, 5, 6]));
        assert_eq!(differing_ids(&b, &a), ids(&[0, 1, 4, 5, 6]));
        assert_eq!(differing_ids(&a, &a), ids(&[]));
        assert_eq!(differing_ids(&[], &a), ids(&[1, 2, 4, 6]));
    }
}
