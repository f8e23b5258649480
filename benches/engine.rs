//! Engine throughput (issue target: ≥ 5 M events/s with 10^5 pending events): the event
//! queue under a steady load of pending events, each pop scheduling one new event a random
//! delay later (up to 1 ms, in nanoseconds), as the simulation schedules them. Items are the
//! size of a `sim::Event` (40 bytes), which the queue moves around; with 5·10^5 pending it
//! is the load of the full mesh of 1,000 nodes (`benches/scenarios/mesh-1000.yaml`).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use podnet::model::time::{SimDuration, SimTime};
use podnet::sim::queue::EventQueue;

const EVENTS: u64 = 1_000_000;

/// An item the size of a `sim::Event`.
type Item = [u64; 5];

fn queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.throughput(Throughput::Elements(EVENTS));
    for (name, pending) in [
        ("pop+push with 1e5 pending", 100_000u64),
        ("pop+push with 5e5 pending", 500_000),
    ] {
        group.bench_function(name, |b| {
            b.iter_batched(
                || {
                    let mut q = EventQueue::new();
                    for i in 0..pending {
                        q.push(SimTime::from_nanos(i * 7 % 1_000_003), [i; 5] as Item);
                    }
                    q
                },
                |mut q| {
                    for i in 0..EVENTS {
                        let (t, e) = q.pop().expect("never empty");
                        let delay = 1 + (e[0] ^ i) % 1_000_003;
                        q.push(t + SimDuration::from_nanos(delay), [e[0], i, 0, 0, 0]);
                    }
                    black_box(q)
                },
                criterion::BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, queue);
criterion_main!(benches);
