//! Building the forwarding state of an instant from the simulated world.
//!
//! The FIBs are derived, never stored in the world: at a snapshot the engine hands the
//! topology, the pods with addresses, each node's own blocks (blackholes) and the routes the
//! control plane installed (BGP's best routes, or Felix's routes with Calico's VXLAN backend)
//! to [`crate::forwarding::Dataplane::builder`]. Routes common to every node go into one
//! shared table, so a 5,000-node cluster does not hold 5,000 copies of it.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::World;
use super::addressing::Addressing;
use crate::forwarding::{Attachment, Dataplane, PodKey};
use crate::model::topology::DeviceId;

/// The routes a control plane installed, as (prefix, next-hop address).
pub enum Learned<'a> {
    /// No control plane (Spiderpool pods live on their segments).
    Nothing,
    /// The same routes on every node (Felix with the VXLAN backend): each node uses the
    /// shared table and withholds its own prefixes.
    SameEverywhere(&'a BTreeMap<IpNet, IpAddr>),
    /// Each speaker's own best routes; `common` is the table most nodes hold, stored once.
    PerDevice {
        common: Vec<(IpNet, IpAddr)>,
        routes: &'a dyn Fn(DeviceId) -> Vec<(IpNet, IpAddr)>,
        speakers: Vec<DeviceId>,
    },
}

/// The dataplane of the world as it is now.
pub fn build(world: &World, learned: Learned<'_>) -> Dataplane {
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
    match learned {
        Learned::Nothing => {}
        Learned::SameEverywhere(routes) => {
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
        Learned::PerDevice {
            common,
            routes,
            speakers,
        } => {
            let table = builder.shared_table(common);
            for device in speakers {
                builder.learned_routes(device, table, routes(device));
            }
        }
    }
    builder.build()
}
