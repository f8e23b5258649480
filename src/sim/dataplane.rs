//! Building the forwarding state of an instant from the simulated world.
//!
//! The FIBs are derived, never stored in the world: at a snapshot the engine hands the
//! topology, the pods with addresses, each node's own blocks (blackholes) and the routes the
//! control plane installed (BGP's best routes, or Felix's routes with Calico's VXLAN backend)
//! to [`crate::forwarding::Dataplane::builder`]. Routes common to every node go into one
//! shared table, so a 5,000-node cluster does not hold 5,000 copies of it.

use super::World;
use super::addressing::Addressing;
use crate::forwarding::{Attachment, Dataplane, PodKey};
use crate::model::topology::DeviceId;

/// The dataplane of the world as it is now: Felix's routes on every node (VXLAN backend),
/// and each BGP speaker's best routes (nodes with BIRD, routers when the fabric speaks BGP).
pub fn build(world: &World) -> Dataplane {
    let topology = &world.topology;
    let mut builder = Dataplane::builder(topology);
    // Pools decide encapsulation (Calico only).
    if let Addressing::Calico(ipam) = &world.addressing {
        for name in ipam.pool_names() {
            if let Some(pool) = ipam.pool(&name) {
                builder.pool(pool.network(), pool.ipip_mode, pool.vxlan_mode);
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
        let (Some(address), Some(node)) = (&pod.address, pod.node) else {
            continue;
        };
        let attachment = match &world.addressing {
            Addressing::Calico(_) => Attachment::Calico,
            Addressing::Spiderpool(_) => Attachment::Segment {
                gateway: address.gateway,
            },
        };
        builder.pod(PodKey(pod.id.0), address.ip, node, attachment);
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
        let learned = |device: DeviceId| bgp.learned_next_hops(device);
        let speakers: Vec<DeviceId> = bgp
            .speakers()
            .iter()
            .map(|s| s.device)
            .filter(|d| bgp.is_up(*d))
            .collect();
        // Most nodes hold the same table: store the first node speaker's once and keep only
        // the differences per device.
        let common_from = speakers
            .iter()
            .copied()
            .find(|d| !topology.device(*d).is_router())
            .or_else(|| speakers.first().copied());
        let common = common_from.map(learned).unwrap_or_default();
        let table = builder.shared_table(common);
        for device in speakers {
            builder.learned_routes(device, table, learned(device));
        }
    }
    builder.build()
}
