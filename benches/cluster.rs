//! A scale event's bookkeeping (issue #20: each event's work proportional to what it
//! changed): a 150,000-replica Deployment scaled down by 500 pods and back up, as
//! `scripts/bench.sh`'s rr-5000-events does every 33 s of simulated time. Before podnet
//! b74ffc4 scaling down counted every wanted ordinal once per removed pod (500 × 150,000);
//! until session 34 each scaling counted them once, and growing walked them to find gaps
//! (810 µs for the pair on the development machine); now neither walks them (89 µs).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use podnet::model::workload::WorkloadId;
use podnet::sim::cluster::Cluster;

const REPLICAS: u32 = 150_000;
const CHANGE: u32 = 500;

fn scale(c: &mut Criterion) {
    let scenario = podnet::scenario::load_str(
        "bench.yaml",
        &format!(
            "name: bench\ntopology:\n  zones:\n  - name: z\n    racks:\n    - name: r\n      \
             subnet: 10.0.0.0/24\n      nodes: [{{namePrefix: n, count: 1}}]\n\
             workloads:\n- {{name: web, replicas: {REPLICAS}}}\n"
        ),
    )
    .expect("valid scenario");
    let w = WorkloadId(0);
    let mut cluster = Cluster::new(&scenario.workloads);
    cluster.scale_to(w, REPLICAS);
    let mut group = c.benchmark_group("cluster");
    group.sample_size(20);
    group.throughput(Throughput::Elements(2 * u64::from(CHANGE)));
    group.bench_function("scale 150,000 replicas down by 500 and back", |b| {
        b.iter(|| {
            black_box(cluster.scale_down_to(w, REPLICAS - CHANGE));
            black_box(cluster.scale_to(w, REPLICAS))
        })
    });
    group.finish();
}

criterion_group!(benches, scale);
criterion_main!(benches);
