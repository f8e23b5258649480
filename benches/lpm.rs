//! LPM lookups per second on a realistic node FIB: ~10^4 prefixes (the /26 blocks of a /12
//! pool, borrowed /32s, rack subnets and the default route), shared by every node under a
//! small overlay, as podnet builds it. Criterion reports the throughput in lookups.

use std::net::{IpAddr, Ipv4Addr};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ipnet::IpNet;

use podnet::forwarding::{Attachment, Dataplane, PodKey};
use podnet::ipam::calico::EncapMode;
use podnet::model::topology::{NodeId, Topology};

mod common;

const POOL_BASE: Ipv4Addr = Ipv4Addr::new(10, 64, 0, 0);
const RACKS: u32 = 25;
const NODES_PER_RACK: u32 = 40;
const BLOCKS_PER_NODE: u32 = 9;
const BORROWED: u32 = 1000;
const LOOKUPS: usize = 4096;

fn topology() -> Topology {
    common::cluster(1, RACKS, NODES_PER_RACK)
}

/// The i-th /26 block of the pool.
fn block(i: u32) -> IpNet {
    common::block(POOL_BASE, i)
}

fn dataplane(t: &Topology) -> Dataplane {
    let mut b = Dataplane::builder(t);
    b.pool(
        "10.64.0.0/12".parse().expect("pool"),
        EncapMode::CrossSubnet,
        EncapMode::Never,
    );
    let nodes = t.nodes.len() as u32;
    let mut routes: Vec<(IpNet, IpAddr)> = Vec::new();
    for n in 0..nodes {
        for k in 0..BLOCKS_PER_NODE {
            routes.push((block(n * BLOCKS_PER_NODE + k), t.nodes[n as usize].ip));
        }
    }
    for k in 0..BORROWED {
        let owner_block = block((k * 7919) % (nodes * BLOCKS_PER_NODE));
        let addr = match owner_block.network() {
            IpAddr::V4(a) => IpAddr::from(Ipv4Addr::from(u32::from(a) + 1 + k % 60)),
            other => other,
        };
        routes.push((IpNet::from(addr), t.nodes[((k * 31) % nodes) as usize].ip));
    }
    let shared = b.shared_table(routes);
    for n in 0..nodes {
        let d = t.nodes[n as usize].device;
        for k in 0..BLOCKS_PER_NODE {
            b.blackhole(d, block(n * BLOCKS_PER_NODE + k));
        }
        b.use_shared(d, shared);
        for j in 0..20u32 {
            let ip = match block(n * BLOCKS_PER_NODE).network() {
                IpAddr::V4(a) => IpAddr::from(Ipv4Addr::from(u32::from(a) + 1 + j)),
                other => other,
            };
            b.pod(
                PodKey(u64::from(n * 100 + j)),
                ip,
                NodeId(n),
                Attachment::Calico,
            );
        }
    }
    b.build()
}

fn addresses() -> Vec<IpAddr> {
    // A fixed pseudo-random spread over the pool and the racks.
    let mut x: u32 = 0x1234_5678;
    (0..LOOKUPS)
        .map(|i| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            if i % 8 == 0 {
                IpAddr::from(Ipv4Addr::from(0x0a00_0000 | (x & 0x0000_ffff)))
            } else {
                IpAddr::from(Ipv4Addr::from(0x0a40_0000 | (x & 0x000f_ffff)))
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let t = topology();
    let dp = dataplane(&t);
    let node = t.nodes[0].device;
    let addrs = addresses();
    let mut group = c.benchmark_group("lpm");
    group.throughput(Throughput::Elements(LOOKUPS as u64));
    group.bench_function("node_fib_lpm", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for a in &addrs {
                hits += usize::from(dp.lpm(node, std::hint::black_box(*a)).is_some());
            }
            hits
        })
    });
    group.bench_function("node_fib_lookup_resolved", |b| {
        b.iter(|| {
            let mut hits = 0usize;
            for a in &addrs {
                hits += usize::from(dp.lookup(node, std::hint::black_box(*a)).is_some());
            }
            hits
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
