//! What the benches share: a racked cluster shaped like the scale scenarios, and the /26
//! blocks of a pool.

use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use podnet::model::Labels;
use podnet::model::topology::{Fabric, NewNode, NodeBgp, Os, Topology};

/// `zones` × `racks_per_zone` racks of `nodes_per_rack` Linux nodes under one fabric: rack
/// `i` (counted across zones) is 10.0.i.0/24, its nodes 10.0.i.10 and up.
pub fn cluster(zones: u32, racks_per_zone: u32, nodes_per_rack: u32) -> Topology {
    let mut t = Topology::new(Fabric::default());
    for z in 0..zones {
        let zone = t.add_zone(&format!("z{z}"), Labels::new(), 65100 + z);
        for r in 0..racks_per_zone {
            let index = z * racks_per_zone + r;
            let rack = t.add_rack(
                zone,
                &format!("z{z}-r{r}"),
                IpNet::new(IpAddr::from([10, 0, index as u8, 0]), 24).expect("subnet"),
                IpAddr::from([10, 0, index as u8, 1]),
                Labels::new(),
                65200 + index,
            );
            for h in 0..nodes_per_rack {
                t.add_node(
                    rack,
                    NewNode {
                        name: format!("z{z}-r{r}-n{h}"),
                        ip: IpAddr::from([10, 0, index as u8, 10 + h as u8]),
                        os: Os::Linux,
                        max_pods: 110,
                        labels: Labels::new(),
                        bgp: NodeBgp::default(),
                    },
                );
            }
        }
    }
    t.add_fabric(&Default::default(), 65000);
    t
}

/// The i-th /26 block of the pool starting at `base`.
pub fn block(base: Ipv4Addr, i: u32) -> IpNet {
    IpNet::new(IpAddr::from(Ipv4Addr::from(u32::from(base) | (i << 6))), 26).expect("block")
}
