//! IPAM allocation throughput (issue target: ≥ 1,000,000 allocations/s for a
//! 150,000-address workload): 150,000 pods on 5,000 nodes over a /12 pool of /26 blocks.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use podnet::ipam::calico::{
    AssignRequest, CalicoIpam, CalicoProfile, IpPool, IpamConfig, IpamNode, Os,
};
use podnet::model::Labels;
use podnet::model::time::SimTime;

const NODES: usize = 5_000;
const PODS: usize = 150_000;

fn fresh() -> (CalicoIpam, Vec<String>) {
    let mut ipam = CalicoIpam::new(CalicoProfile::V3_30, IpamConfig::default());
    let pool = IpPool::with_defaults("pods", "10.0.0.0/12".parse().expect("cidr"));
    ipam.upsert_pool(pool).expect("pool");
    let names: Vec<String> = (0..NODES).map(|i| format!("node-{i}")).collect();
    for name in &names {
        ipam.upsert_node(IpamNode {
            name: name.clone(),
            labels: Labels::new(),
            os: Os::Linux,
        });
    }
    (ipam, names)
}

fn allocations(c: &mut Criterion) {
    let mut group = c.benchmark_group("calico-ipam");
    group.sample_size(10);
    group.throughput(Throughput::Elements(PODS as u64));
    let handles: Vec<String> = (0..PODS).map(|i| format!("default/pod-{i}")).collect();
    group.bench_function("150k pods on 5k nodes, /12 pool, /26 blocks", |b| {
        b.iter_batched(
            fresh,
            |(mut ipam, names)| {
                for (i, handle) in handles.iter().enumerate() {
                    let req = AssignRequest::pod(handle, &names[i % NODES], "default");
                    black_box(ipam.auto_assign(SimTime::ZERO, &req));
                }
                ipam
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, allocations);
criterion_main!(benches);
