//! All-pairs reachability at production size (the scale issue): 5 zones × 25 racks × 40
//! nodes, 150,000 Calico pods in /26 blocks of a VXLAN `CrossSubnet` pool, routes from IPAM
//! state (one shared table, each node withholding its own blocks and blackholing them), as
//! `sim::dataplane` builds it for `calicoBackend: vxlan`. One iteration is one
//! `all_pairs` over 22.5 billion ordered pod pairs.

use std::net::{IpAddr, Ipv4Addr};

use criterion::{Criterion, criterion_group, criterion_main};
use ipnet::IpNet;

use podnet::forwarding::{Attachment, Dataplane, PodKey, all_pairs};
use podnet::ipam::calico::EncapMode;
use podnet::model::topology::{NodeId, Topology};

mod common;

const POOL_BASE: Ipv4Addr = Ipv4Addr::new(100, 64, 0, 0);
const ZONES: u32 = 5;
const RACKS_PER_ZONE: u32 = 25;
const NODES_PER_RACK: u32 = 40;
const PODS_PER_NODE: u32 = 30;

fn topology() -> Topology {
    common::cluster(ZONES, RACKS_PER_ZONE, NODES_PER_RACK)
}

/// The i-th /26 block of the pool.
fn block(i: u32) -> IpNet {
    common::block(POOL_BASE, i)
}

fn dataplane(t: &Topology) -> Dataplane {
    let mut b = Dataplane::builder(t);
    b.pool(
        "100.64.0.0/12".parse().expect("pool"),
        EncapMode::Never,
        EncapMode::CrossSubnet,
    );
    let routes: Vec<(IpNet, IpAddr)> = t
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (block(i as u32), n.ip))
        .collect();
    for (i, n) in t.nodes.iter().enumerate() {
        b.blackhole(n.device, block(i as u32));
        for j in 0..PODS_PER_NODE {
            let ip = match block(i as u32).network() {
                IpAddr::V4(a) => IpAddr::from(Ipv4Addr::from(u32::from(a) + 1 + j)),
                other => other,
            };
            b.pod(
                PodKey(u64::from(i as u32 * 100 + j)),
                ip,
                NodeId(i as u32),
                Attachment::Calico,
            );
        }
    }
    let shared = b.shared_table(routes.iter().copied());
    for (i, n) in t.nodes.iter().enumerate() {
        b.use_shared(n.device, shared);
        b.withhold(n.device, block(i as u32));
    }
    b.build()
}

fn bench(c: &mut Criterion) {
    let t = topology();
    let dp = dataplane(&t);
    let mut group = c.benchmark_group("reach");
    group.sample_size(10);
    group.bench_function("all_pairs 5000 nodes 150000 pods", |b| {
        b.iter(|| {
            let r = all_pairs(&dp);
            assert_eq!(r.reachable, r.pairs);
            r.pairs
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
