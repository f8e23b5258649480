//! Time for the hostile input shapes of issue #19 (`tests/hostile.rs` measures their memory):
//! each was quadratic or worse before and is now linear (or n log n) in its size. The README
//! promises `validate` within 2 s on the development machine for any input under the limits:
//! the second group loads the worst shapes at the limits, and the per-item shapes (one lookup
//! per event or expectation over every workload, rack or pool) at 50,000 items.

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

/// Shapes at the limits, and per-item lookups over 50,000 items.
fn at_limits() -> Vec<(&'static str, String)> {
    const N: usize = 50_000;
    let head = "name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n    - name: r\n      subnet: 10.0.0.0/8\n";
    let workloads: String = (0..N).map(|i| format!("- {{name: w{i}}}\n")).collect();
    let config_map = |data: String| {
        format!(
            "{HEAD}resources:\n- apiVersion: v1\n  kind: ConfigMap\n  metadata: {{name: c}}\n  data:\n{data}"
        )
    };
    let spider =
        |resources: String| format!("{HEAD}network: {{cni: spiderpool}}\nresources:\n{resources}");
    vec![
        (
            "10,000 addresses listed in one SpiderIPPool",
            spider(format!(
                "- apiVersion: spiderpool.spidernet.io/v2beta1\n  kind: SpiderIPPool\n  metadata: {{name: p}}\n  spec:\n    subnet: 10.0.0.0/8\n    ips:\n{}",
                (1..=10_000)
                    .map(|i| format!("    - 10.1.{}.{}\n", i / 256, i % 256))
                    .collect::<String>()
            )),
        ),
        (
            "1,000 SpiderIPPools sharing a subnet",
            spider(
                (0..1_000)
                    .map(|i| format!(
                        "- {{apiVersion: spiderpool.spidernet.io/v2beta1, kind: SpiderIPPool, metadata: {{name: p{i}}}, spec: {{subnet: 10.0.0.0/8, ips: [10.1.{}.{}]}}}}\n",
                        i / 256,
                        i % 256
                    ))
                    .collect(),
            ),
        ),
        (
            "450k keys in a resource (900k nodes)",
            config_map((0..450_000).map(|i| format!("    k{i}: v\n")).collect()),
        ),
        (
            "62 MB of aliased text in a resource",
            config_map(format!(
                "    a: &a \"{}\"\n    b: [{}]\n",
                "x".repeat(480 * 1024),
                vec!["*a"; 126].join(", ")
            )),
        ),
        (
            "99,000 nodes listed one by one in one rack",
            format!(
                "{head}      nodes:\n{}",
                (0..99_000)
                    .map(|i| format!("      - {{name: n{i}}}\n"))
                    .collect::<String>()
            ),
        ),
        (
            "50k racks, each adding a node by event",
            format!(
                "name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n{}events:\n{}",
                (0..N)
                    .map(|i| format!(
                        "    - {{name: r{i}, subnet: 10.{}.{}.0/24}}\n",
                        i / 256,
                        i % 256
                    ))
                    .collect::<String>(),
                (0..N)
                    .map(|i| format!(
                        "- {{at: 1s, addNodes: {{rack: r{i}, namePrefix: a{i}, count: 1}}}}\n"
                    ))
                    .collect::<String>()
            ),
        ),
        (
            "50k workloads and 50k pod expectations",
            format!(
                "{HEAD}workloads:\n{workloads}expect:\n{}",
                (0..N)
                    .map(|i| format!("- pod: {{name: w{i}-0}}\n"))
                    .collect::<String>()
            ),
        ),
        (
            "50k workloads and 50k expectations naming no pod",
            format!(
                "{HEAD}workloads:\n{workloads}expect:\n{}",
                (0..N)
                    .map(|i| format!("- pod: {{name: x{i}}}\n"))
                    .collect::<String>()
            ),
        ),
        (
            "50k workloads and 50k scale events",
            format!(
                "{HEAD}workloads:\n{workloads}events:\n{}",
                (0..N)
                    .map(|i| format!("- {{at: 1s, scale: {{workload: w{i}, replicas: 2}}}}\n"))
                    .collect::<String>()
            ),
        ),
        (
            "50k IPPools, all overlapping one",
            format!(
                "{HEAD}resources:\n- {{apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {{name: big}}, spec: {{cidr: 10.0.0.0/8}}}}\n{}",
                (0..N)
                    .map(|i| format!(
                        "- {{apiVersion: projectcalico.org/v3, kind: IPPool, metadata: {{name: p{i}}}, spec: {{cidr: 10.{}.{}.0/24}}}}\n",
                        i / 256,
                        i % 256
                    ))
                    .collect::<String>()
            ),
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
    let mut group = c.benchmark_group("at the limits");
    group.sample_size(10);
    for (name, text) in at_limits() {
        group.bench_function(name, |b| b.iter(|| load_str("s.yaml", &text).is_err()));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
