//! Small clusters for the forwarding tests: zones of racks of nodes, with Calico blocks.

use std::collections::BTreeMap;
use std::net::IpAddr;

use ipnet::IpNet;

use super::{Attachment, Dataplane, DataplaneBuilder, PodKey};
use crate::model::Labels;
use crate::model::network::EncapMode;
use crate::model::topology::{DeviceId, Fabric, NewNode, NodeBgp, NodeId, Os, Topology};

/// Zones named a, b, …; `zones[z][r]` nodes in rack `<zone><r>` (subnet 10.<rack>.0.0/24,
/// gateway .1, nodes .10, .11, …, named `<rack>-n<h>`), one spine per zone, a core for two.
pub fn topology(zones: &[&[u8]]) -> Topology {
    topology_with_spines(zones, 1)
}

/// [`topology`] with `spines` spines a zone (`spine-<zone>-<i>`, loopback 100.127.<i − 1>.<2 +
/// zone>), every ToR of the zone linked to each.
pub fn topology_with_spines(zones: &[&[u8]], spines: u32) -> Topology {
    let mut t = Topology::new(Fabric {
        spines_per_zone: spines,
        ..Fabric::default()
    });
    let mut rack_index = 0u8;
    let mut loopbacks = BTreeMap::new();
    loopbacks.insert("core".to_string(), IpAddr::from([100, 127, 0, 1]));
    for (z, racks) in zones.iter().enumerate() {
        let zname = ((b'a' + z as u8) as char).to_string();
        for i in 1..=spines {
            loopbacks.insert(
                format!("spine-{zname}-{i}"),
                IpAddr::from([100, 127, (i - 1) as u8, 2 + z as u8]),
            );
        }
        let zid = t.add_zone(&zname, Labels::new(), 65100 + 100 * z as u32);
        for (r, count) in racks.iter().enumerate() {
            let rname = format!("{zname}{r}");
            let rack = t.add_rack(
                zid,
                &rname,
                IpNet::new(IpAddr::from([10, rack_index, 0, 0]), 24).expect("subnet"),
                IpAddr::from([10, rack_index, 0, 1]),
                Labels::new(),
                65101 + rack_index as u32,
            );
            for h in 0..*count {
                t.add_node(
                    rack,
                    NewNode {
                        name: format!("{rname}-n{h}"),
                        ip: IpAddr::from([10, rack_index, 0, 10 + h]),
                        os: Os::Linux,
                        max_pods: 110,
                        labels: Labels::new(),
                        bgp: NodeBgp::default(),
                    },
                );
            }
            rack_index += 1;
        }
    }
    t.add_fabric(&loopbacks, 65000);
    t
}

pub fn dev(t: &Topology, name: &str) -> DeviceId {
    t.device_by_name(name).expect("device in fixture")
}

pub fn net(s: &str) -> IpNet {
    s.parse().expect("prefix in fixture")
}

pub fn ip(s: &str) -> IpAddr {
    s.parse().expect("address in fixture")
}

/// Node i's block: 10.200.i.0/26.
pub fn block(i: usize) -> IpNet {
    IpNet::new(IpAddr::from([10, 200, i as u8, 0]), 26).expect("block")
}

/// Pod j on node i: 10.200.i.(j+1), key i*100+j.
pub fn pod_ip(i: usize, j: usize) -> IpAddr {
    IpAddr::from([10, 200, i as u8, (j + 1) as u8])
}

pub fn pod_key(i: usize, j: usize) -> PodKey {
    PodKey((i * 100 + j) as u64)
}

/// A Calico cluster: pool 10.200.0.0/16 with the given modes, each node owning its block
/// (blackhole) and `pods` pods in it, and one shared table "block via owner" used by every
/// node.
pub fn calico(t: &Topology, ipip: EncapMode, vxlan: EncapMode, pods: usize) -> DataplaneBuilder {
    let mut b = Dataplane::builder(t);
    b.pool(net("10.200.0.0/16"), ipip, vxlan);
    let routes: Vec<(IpNet, IpAddr)> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (block(i), n.ip))
        .collect();
    let shared = b.shared_table(routes);
    for (i, n) in t.nodes.iter().enumerate() {
        b.blackhole(n.device, block(i));
        b.use_shared(n.device, shared);
        for j in 0..pods {
            b.pod(
                pod_key(i, j),
                pod_ip(i, j),
                NodeId(i as u32),
                Attachment::Calico,
            );
        }
    }
    b
}
