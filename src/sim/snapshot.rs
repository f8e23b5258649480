//! The state of the simulated cluster at one instant, as expectations and reports read it.
//!
//! A snapshot is plain data copied out of the world (pods in creation order, pools and
//! blocks in name/address order, nodes in topology order), so it can be kept while the
//! simulation goes on and serialized into `report.json` as it is.

use std::sync::Arc;

use serde::Serialize;

use super::dataplane::{self, Learned};
use super::{ControlPlane, World};
use crate::forwarding::{Dataplane, PodKey};
use crate::model::TextEnum;
use crate::model::network::Network;
use crate::model::time::SimTime;
use crate::model::workload::{PodStatus, Workload};

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRow {
    pub name: String,
    pub namespace: String,
    pub workload: String,
    pub node: Option<String>,
    pub ip: Option<String>,
    pub pool: Option<String>,
    pub block: Option<String>,
    pub borrowed: bool,
    pub status: PodStatus,
    pub reason: Option<String>,
    #[serde(skip)]
    pub ipam_failure: bool,
    /// The pod's key in the dataplane.
    #[serde(skip)]
    pub key: PodKey,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PoolRow {
    pub name: String,
    pub kind: &'static str,
    pub cidr: String,
    pub block_size: Option<u8>,
    pub capacity: u128,
    pub allocated: u64,
    pub reserved: u64,
    pub blocks: u32,
    pub free: u128,
    pub mtu: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BlockRow {
    pub cidr: String,
    pub pool: String,
    /// The node the block is affine to; `None` for a block without affinity.
    pub affinity: Option<String>,
    pub allocated: u32,
    pub reserved: u32,
    pub capacity: u32,
    pub free: u32,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRow {
    pub name: String,
    pub zone: String,
    pub rack: String,
    pub ip: String,
    pub os: &'static str,
    pub up: bool,
    pub max_pods: u32,
    pub pods: usize,
    pub blocks: Vec<String>,
    pub borrowed_ips: usize,
    /// Entries in its FIB, when forwarding is simulated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fib_routes: Option<usize>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Snapshot {
    pub time_us: u64,
    pub pods: Vec<PodRow>,
    pub pools: Vec<PoolRow>,
    pub blocks: Vec<BlockRow>,
    pub nodes: Vec<NodeRow>,
    /// The forwarding state, when the control plane in use is simulated.
    #[serde(skip)]
    pub dataplane: Option<Arc<Dataplane>>,
    /// Device names by id (nodes and routers), to name hops and next hops.
    #[serde(skip)]
    pub devices: Vec<String>,
}

impl Snapshot {
    pub fn capture(
        now: SimTime,
        world: &World,
        network: &Network,
        workloads: &[Workload],
    ) -> Snapshot {
        let topo = &world.topology;
        let dataplane = match &world.control {
            ControlPlane::None => Some(dataplane::build(world, Learned::Nothing)),
            ControlPlane::Felix { routes } => {
                Some(dataplane::build(world, Learned::SameEverywhere(routes)))
            }
            ControlPlane::Bird => None,
        };
        let pods = world
            .cluster
            .pods()
            .map(|p| {
                let a = p.address.as_ref();
                PodRow {
                    name: p.name.clone(),
                    namespace: p.namespace.clone(),
                    workload: workloads
                        .get(p.workload)
                        .map(|w| w.name.clone())
                        .unwrap_or_default(),
                    node: p.node.map(|n| topo.node(n).name.clone()),
                    ip: a.map(|a| a.ip.to_string()),
                    pool: a.map(|a| a.pool.clone()),
                    block: a.and_then(|a| a.block).map(|b| b.to_string()),
                    borrowed: a.is_some_and(|a| a.borrowed),
                    status: p.status,
                    reason: p.reason.clone(),
                    ipam_failure: p.pending_for_ipam(),
                    key: PodKey(p.id.0),
                }
            })
            .collect();
        let pools = world
            .addressing
            .pools(network)
            .into_iter()
            .map(|p| PoolRow {
                name: p.name,
                kind: p.kind,
                cidr: p.cidr.to_string(),
                block_size: p.block_size,
                capacity: p.capacity,
                allocated: p.allocated,
                reserved: p.reserved,
                blocks: p.blocks,
                free: p.free,
                mtu: p.mtu,
            })
            .collect();
        let calico = world.addressing.calico();
        let blocks = calico
            .map(|ipam| {
                ipam.blocks()
                    .into_iter()
                    .map(|b| BlockRow {
                        cidr: b.cidr.to_string(),
                        pool: b.pool,
                        affinity: b.affinity,
                        allocated: b.allocated,
                        reserved: b.reserved,
                        capacity: b.capacity,
                        free: b.free,
                    })
                    .collect()
            })
            .unwrap_or_default();
        let nodes = topo
            .live_nodes()
            .map(|(id, n)| {
                let ipam = calico.map(|c| c.node_report(&n.name));
                NodeRow {
                    name: n.name.clone(),
                    zone: topo.zones[n.zone.index()].name.clone(),
                    rack: topo.racks[n.rack.index()].name.clone(),
                    ip: n.ip.to_string(),
                    os: n.os.as_str(),
                    up: !n.down,
                    max_pods: n.max_pods,
                    pods: world.cluster.pods_on(id),
                    blocks: ipam
                        .as_ref()
                        .map(|r| r.affine_blocks.iter().map(ToString::to_string).collect())
                        .unwrap_or_default(),
                    borrowed_ips: ipam.as_ref().map_or(0, |r| r.borrowed_ips.len()),
                    fib_routes: dataplane.as_ref().map(|dp| dp.fib_len(n.device)),
                }
            })
            .collect();
        Snapshot {
            time_us: now.as_micros(),
            pods,
            pools,
            blocks,
            nodes,
            dataplane: dataplane.map(Arc::new),
            devices: topo.devices.iter().map(|d| d.name.clone()).collect(),
        }
    }

    pub fn count(&self, status: PodStatus) -> usize {
        self.pods.iter().filter(|p| p.status == status).count()
    }

    /// Pods Pending because IPAM could not give them an address.
    pub fn allocation_failures(&self) -> usize {
        self.pods.iter().filter(|p| p.ipam_failure).count()
    }
}
