//! A link event's underlay work (issue #20: each event's work proportional to what it
//! changed): on rr-5000's fabric (5 zones of 25 racks, 5,000 nodes), the three reflectors'
//! multihop sessions to every node tracked, a ToR–spine link goes down and comes back up, as
//! `scripts/bench.sh`'s rr-5000-events does every few seconds of simulated time. Before
//! podnet d268ac3 each kept distance vector the link lay on was searched again over the whole
//! fabric (5.5 ms for the two updates on the development machine); since then it is repaired
//! where it changed, the cut rack's devices (0.51 ms). Since podnet session 36 it reads only
//! the edges at the link's ends (not the whole segment of each), is told which link changed
//! rather than comparing every link and node, recomputes components only when the change
//! can split or join them, and looks again only at the sessions whose other end's distance
//! changed (0.48 → 0.18 ms).

use std::hint::black_box;
use std::path::Path;

use criterion::{Criterion, criterion_group, criterion_main};
use podnet::bgp::SessionId;
use podnet::bgp::underlay::{SessionPath, Underlay};

fn link_down_and_up(c: &mut Criterion) {
    let scenario = podnet::scenario::load(Path::new("benches/scenarios/rr-5000.yaml"))
        .expect("benches/scenarios/rr-5000.yaml (scripts/bench.sh --generate)");
    let mut topology = scenario.topology.clone();
    let device = |name: &str| topology.device_by_name(name).expect("device of rr-5000");
    let reflectors: Vec<_> = ["z0-rr", "z1-rr", "z2-rr"].map(device).to_vec();
    let mut paths = Vec::new();
    for (_, node) in topology.live_nodes() {
        for &rr in &reflectors {
            if rr != node.device {
                paths.push((
                    SessionId(paths.len() as u32),
                    SessionPath::Between(rr, node.device),
                ));
            }
        }
    }
    let link = topology
        .link_between(device("tor-z3-r7"), device("spine-z3-1"))
        .expect("ToR–spine link");
    let mut underlay = Underlay::new(&topology);
    underlay.track_sessions(paths.len(), &paths);
    let mut group = c.benchmark_group("underlay");
    group.sample_size(20);
    group.bench_function(
        "rr-5000: a ToR-spine link down and up, 3 reflectors tracked",
        |b| {
            b.iter(|| {
                for up in [false, true] {
                    topology.set_link_up(link, up);
                    black_box(underlay.update_told(&topology, &[link], &[]));
                    black_box(underlay.session_changes(paths.len()));
                }
            })
        },
    );
    group.finish();
}

criterion_group!(benches, link_down_and_up);
criterion_main!(benches);
