//! BGP configuration changed by events (SPEC §2.5, §3.4), through the simulator: BGPPeer and
//! BGPConfiguration applied and deleted during a run, seen in the sessions of snapshots and
//! in the event log. The library scenarios `mesh-to-rr-migration` and `add-nodes-bgp` cover
//! the migration and nodes joining.

use podnet::scenario;
use podnet::sim::{LogEntry, Outcome, Simulation, Snapshot};

const SCENARIO: &str = r#"
name: bgp-changes
description: BGPPeer and BGPConfiguration changed during a run.
topology:
  zones:
  - name: z
    racks:
    - {name: r1, subnet: 10.10.1.0/24, nodes: [{namePrefix: a, count: 2}]}
    - {name: r2, subnet: 10.10.2.0/24, nodes: [{namePrefix: b, count: 2}]}
resources:
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec: {nodeToNodeMeshEnabled: false}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: everyone}
  spec: {peerSelector: all()}
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: pods}
  spec: {cidr: 10.244.0.0/16, ipipMode: CrossSubnet}
workloads:
- {name: web, kind: DaemonSet}
events:
- {at: 30s, delete: {kind: BGPPeer, name: everyone}}
- {at: 40s, delete: {kind: BGPConfiguration, name: default}}
- at: 50s
  apply:
    apiVersion: projectcalico.org/v3
    kind: BGPConfiguration
    metadata: {name: default}
    spec: {asNumber: 64600}
- at: 60s
  apply:
    apiVersion: projectcalico.org/v3
    kind: BGPPeer
    metadata: {name: nobody}
    spec: {node: a-1, peerIP: 10.10.1.200, asNumber: 64600}
expect:
- {bgp: {sessionsEstablished: 6}, at: 29s}
- {bgp: {sessionsEstablished: 0}, at: 35s}
- {bgp: {sessionsEstablished: 6}, at: 45s}
- {bgp: {sessionsEstablished: 6}, at: 55s}
- {bgp: {sessionsEstablished: 6}, at: 65s}
"#;

fn run() -> Outcome {
    let s = scenario::load_str("bgp-changes.yaml", SCENARIO)
        .unwrap_or_else(|d| panic!("does not load:\n{d}"));
    Simulation::new(&s).run()
}

fn at(outcome: &Outcome, secs: u64) -> &Snapshot {
    outcome
        .snapshots
        .iter()
        .find(|s| s.time_us == secs * 1_000_000)
        .unwrap_or_else(|| panic!("no snapshot at {secs}s"))
}

/// `subject: outcome` of the log lines of one kind in [from, to) seconds.
fn lines(log: &[LogEntry], kind: &str, from: u64, to: u64) -> Vec<String> {
    log.iter()
        .filter(|e| e.kind == kind && e.time_us >= from * 1_000_000 && e.time_us < to * 1_000_000)
        .map(|e| format!("{}: {}", e.subject, e.outcome))
        .collect()
}

#[test]
fn deleting_the_only_bgppeer_ends_its_sessions_and_the_pod_routes() {
    let outcome = run();
    let down = lines(&outcome.log, "sessionDown", 30, 31);
    assert_eq!(down.len(), 6);
    assert!(
        down.iter()
            .all(|l| l.ends_with(": removed from the configuration: BGPPeer everyone deleted")),
        "{down:?}"
    );
    let snap = at(&outcome, 35);
    let bgp = snap.bgp.as_ref().unwrap();
    assert_eq!(bgp.sessions_established, 0);
    assert!(bgp.sessions.is_empty(), "removed sessions are not reported");
    assert!(
        snap.nodes.iter().all(|n| n.rib_routes == Some(1)),
        "own block only"
    );
}

#[test]
fn deleting_the_bgpconfiguration_brings_back_calicos_default_mesh() {
    let outcome = run();
    assert_eq!(lines(&outcome.log, "sessionConnect", 40, 41).len(), 6);
    let bgp = at(&outcome, 45).bgp.as_ref().unwrap();
    assert_eq!(bgp.sessions_established, 6);
    assert!(bgp.sessions.iter().all(|s| s.session_type == "ibgp"));
    assert!(
        at(&outcome, 45)
            .nodes
            .iter()
            .all(|n| n.rib_routes == Some(4))
    );
}

#[test]
fn a_new_as_number_resets_every_session_once() {
    let outcome = run();
    let down = lines(&outcome.log, "sessionDown", 50, 51);
    assert_eq!(down.len(), 6);
    assert!(
        down[0].starts_with(
            "a-1 – a-2: configuration changed: BGPConfiguration default applied \
             (a-1 AS 64512 → 64600, a-2 AS 64512 → 64600)"
        ),
        "{down:?}"
    );
    assert_eq!(lines(&outcome.log, "sessionEstablished", 50, 55).len(), 6);
    assert!(
        at(&outcome, 55)
            .nodes
            .iter()
            .all(|n| n.rib_routes == Some(4))
    );
}

#[test]
fn a_bgppeer_to_nobody_applied_at_run_time_stays_idle_with_its_reason() {
    let outcome = run();
    let bgp = at(&outcome, 65).bgp.as_ref().unwrap();
    assert_eq!(bgp.sessions_established, 6, "the mesh runs on");
    let idle: Vec<_> = bgp.sessions.iter().filter(|s| s.state == "Idle").collect();
    assert_eq!(idle.len(), 1);
    assert_eq!(
        idle[0].reason.as_deref(),
        Some("BGPPeer nobody: peerIP 10.10.1.200 belongs to no BGP speaker")
    );
    assert!(lines(&outcome.log, "sessionDown", 60, 66).is_empty());
}
