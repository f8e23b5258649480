//! Time for the hostile input shapes of issue #19 (`tests/hostile.rs` measures their memory):
//! each was quadratic or worse before and is now linear in its size, so each run here takes
//! milliseconds. Sizes are kept small so the bench stays quick.

use criterion::{Criterion, criterion_group, criterion_main};
use podnet::scenario::load_str;

const HEAD: &str = "name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n    - name: r\n      subnet: 10.0.0.0/24\n      nodes: [{name: n1}]\n";

fn shapes() -> Vec<(&'static str, String)> {
    let keys: String = (0..50_000).map(|i| format!("  k{i}: 1\n")).collect();
    let anchors: Vec<String> = (0..40_000).map(|i| format!("&a{i} 1")).collect();
    let aliases: Vec<String> = (0..40_000).map(|i| format!("*a{i}")).collect();
    vec![
        (
            "50k duplicate-checked keys",
            format!("{HEAD}extra:\n{keys}"),
        ),
        (
            "40k anchors and aliases",
            format!(
                "{HEAD}x: [{}]\ny: [{}]\n",
                anchors.join(", "),
                aliases.join(", ")
            ),
        ),
        (
            "400k-character misspelt key",
            format!("{HEAD}? {}\n: 1\n", "k".repeat(400_000)),
        ),
        (
            "top-level flow sequence of 1M items",
            format!("[{}]\n", vec!["1"; 1_000_000].join(",")),
        ),
    ]
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("hostile");
    group.sample_size(10);
    for (name, text) in shapes() {
        group.bench_function(name, |b| b.iter(|| load_str("s.yaml", &text).is_err()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
