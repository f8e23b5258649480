//! A borrowed address whose node crashed (calico#3246 after a failure): until peers detect
//! the crash (hold time), traffic follows the /32 to the dead node (`node-down`); once the
//! /32 is withdrawn, the owner's /26 route wins and the owner's blackhole drops it.

use podnet::scenario;
use podnet::sim::Simulation;
use podnet::sim::expect::evaluate;

const SCENARIO: &str = "
name: borrowed-crash
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes: [{name: owner}, {name: borrower}, {name: client}]
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: one-block}
  spec: {cidr: 10.244.0.0/26, blockSize: 26}
workloads:
- {name: a, nodeSelector: {kubernetes.io/hostname: owner}}
- {name: b, nodeSelector: {kubernetes.io/hostname: borrower}}
- {name: c, nodeSelector: {kubernetes.io/hostname: client}}
events:
- {at: 30s, nodeDown: borrower}
expect:
- pod: {name: b-0, borrowed: true}
  at: 20s
- reachable: {from: c-0, to: b-0}
  at: 20s
- route: {node: client, prefix: 10.244.0.1/32, nextHop: borrower}
  at: 20s
- unreachable: {from: c-0, to: b-0, reason: node-down}
  at: 60s
- unreachable: {from: c-0, to: b-0, reason: blackhole}
  at: 280s
- route: {node: client, prefix: 10.244.0.1/32, present: false}
  at: 280s
- route: {node: owner, prefix: 10.244.0.0/26, nextHop: blackhole}
";

#[test]
fn node_down_until_the_hold_time_then_blackhole_at_the_owner() {
    let s = scenario::load_str("borrowed-crash.yaml", SCENARIO).unwrap_or_else(|d| panic!("{d}"));
    let outcome = Simulation::new(&s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    for r in &results {
        assert!(
            r.passed,
            "{}: expected {}, got {}",
            r.name, r.expected, r.actual
        );
    }
    // The node-down verdict stops at the crashed node, the blackhole at the owner.
    let at_60 = results
        .iter()
        .find(|r| r.at_us == 60_000_000)
        .expect("at 60s");
    assert!(
        at_60.actual.contains("node-down at borrower"),
        "{}",
        at_60.actual
    );
    let at_280 = results
        .iter()
        .find(|r| r.at_us == 280_000_000 && r.name.starts_with("unreachable"))
        .expect("at 280s");
    assert!(
        at_280.actual.contains("blackhole at owner"),
        "{}",
        at_280.actual
    );
}
