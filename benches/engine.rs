//! Engine throughput (issue target: ≥ 5 M events/s with 10^5 pending events): the event
//! queue under a steady load of 100,000 pending events, each pop scheduling one new event.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use podnet::model::time::{SimDuration, SimTime};
use podnet::sim::queue::EventQueue;

const PENDING: u64 = 100_000;
const EVENTS: u64 = 1_000_000;

fn queue(c: &mut Criterion) {
    let mut group = c.benchmark_group("engine");
    group.sample_size(10);
    group.throughput(Throughput::Elements(EVENTS));
    group.bench_function("pop+push with 1e5 pending", |b| {
        b.iter_batched(
            || {
                let mut q = EventQueue::new();
                for i in 0..PENDING {
                    q.push(SimTime::from_nanos(i * 7 % 1_000_003), i);
                }
                q
            },
            |mut q| {
                for i in 0..EVENTS {
                    let (t, e) = q.pop().expect("never empty");
                    q.push(t + SimDuration::from_nanos(1 + (e ^ i) % 1_000_003), e);
                }
                black_box(q)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

criterion_group!(benches, queue);
criterion_main!(benches);
