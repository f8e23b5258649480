//! IPAM and scheduling through whole scenarios: Pending reasons, retries, lifecycle events,
//! workload manifests and Calico `Node` resources. Each test writes a scenario, runs it and
//! reads the snapshot, as a user reading `report.json` would.

use std::path::{Path, PathBuf};

use podnet::ipam::calico::IpamError;
use podnet::ipam::spiderpool::SpiderError;
use podnet::model::workload::PodStatus;
use podnet::scenario::{self, Scenario};
use podnet::sim::cluster::PendingReason;
use podnet::sim::expect::evaluate;
use podnet::sim::{Outcome, Simulation};

fn write(name: &str, yaml: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ipam-scenarios");
    std::fs::create_dir_all(&dir).expect("scratch folder");
    let path = dir.join(name);
    std::fs::write(&path, yaml).expect("write scenario");
    path
}

fn run(yaml: &str) -> (Scenario, Outcome) {
    let s = scenario::load_str("inline.yaml", yaml).unwrap_or_else(|d| panic!("invalid:\n{d}"));
    let outcome = Simulation::new(&s).run();
    (s, outcome)
}

/// Every expectation of the scenario holds.
fn holds(yaml: &str) {
    let (s, outcome) = run(yaml);
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    for r in results {
        assert!(
            r.passed,
            "{}: expected {}, got {}",
            r.name, r.expected, r.actual
        );
    }
}

const ONE_RACK: &str = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes:
      - {name: w-1, maxPods: 3}
      - {name: w-2, maxPods: 3, labels: {disk: ssd}}
";

#[test]
fn a_pod_no_node_can_take_is_unschedulable_and_retried_when_a_node_joins() {
    holds(&format!(
        "{ONE_RACK}
workloads:
- {{name: big, replicas: 8}}
- {{name: picky, nodeSelector: {{gpu: \"true\"}}}}
events:
- {{at: 1m, addNodes: {{rack: r, namePrefix: extra, count: 1, maxPods: 5, labels: {{gpu: \"true\"}}}}}}
expect:
- pods: {{of: {{workload: big}}, running: 6, pending: 2}}
  at: 30s
- pod: {{name: picky-0, status: Pending}}
  at: 30s
- allocationFailures: 0
  at: 30s
- pods: {{of: {{workload: big}}, running: 8, pending: 0}}
- pod: {{name: picky-0, status: Running, node: extra-1}}
"
    ));
    let (_, outcome) = run(&format!(
        "{ONE_RACK}\nworkloads:\n- {{name: picky, nodeSelector: {{gpu: \"true\"}}}}\n"
    ));
    let pod = &outcome.last.pods[0];
    assert_eq!(pod.status, PodStatus::Pending);
    assert_eq!(pod.reason, Some(PendingReason::Unschedulable));
}

#[test]
fn an_exhausted_pool_leaves_pods_pending_with_calicos_words_until_addresses_free_up() {
    let yaml = format!(
        "{ONE_RACK}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: tiny}}
  spec: {{cidr: 10.244.0.0/30, blockSize: 30}}
workloads:
- {{name: a, replicas: 4}}
- {{name: b, replicas: 1}}
events:
- {{at: 1m, scale: {{workload: a, replicas: 2}}}}
expect:
- allocationFailures: 1
  at: 30s
- pods: {{of: {{workload: b}}, pending: 1}}
  at: 30s
- pods: {{of: {{workload: b}}, running: 1}}
- pool: {{name: tiny, allocated: 3}}
"
    );
    holds(&yaml);
    let (_, outcome) = run(&yaml.replace("- {at: 1m, scale: {workload: a, replicas: 2}}", ""));
    let pending = outcome
        .last
        .pods
        .iter()
        .find(|p| p.status == PodStatus::Pending)
        .expect("a pending pod");
    assert_eq!(
        pending.reason,
        Some(PendingReason::CalicoIpam(IpamError::PoolsExhausted {
            pools: vec!["10.244.0.0/30".parse().unwrap()]
        }))
    );
}

#[test]
fn scaling_down_removes_the_highest_ordinals_and_replacements_take_the_lowest_free() {
    let (_, outcome) = run(&format!(
        "{ONE_RACK}
workloads:
- {{name: web, replicas: 5}}
events:
- {{at: 1m, scale: {{workload: web, replicas: 3}}}}
- {{at: 2m, deletePods: {{pod: web-0}}}}
"
    ));
    let mut names: Vec<&str> = outcome.last.pods.iter().map(|p| p.name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["web-0", "web-1", "web-2"]);
    assert!(
        outcome
            .log
            .iter()
            .any(|e| e.kind == "podDeleted" && e.subject == "default/web-4")
    );
    assert!(
        outcome
            .log
            .iter()
            .any(|e| e.kind == "podDeleted" && e.subject == "default/web-0")
    );
}

#[test]
fn deleting_a_node_moves_its_pods_and_releases_its_blocks() {
    holds(&format!(
        "{ONE_RACK}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: p}}
  spec: {{cidr: 10.244.0.0/24, blockSize: 28}}
workloads:
- {{name: web, replicas: 2}}
events:
- {{at: 1m, deleteNode: w-1}}
expect:
- node: {{name: w-1, blocks: 1}}
  at: 30s
- pods: {{of: {{workload: web}}, running: 2}}
- pods: {{of: {{node: w-2}}, running: 2}}
- pool: {{name: p, blocks: 1, allocated: 2}}
"
    ));
}

#[test]
fn a_node_crash_makes_its_pods_unknown_and_they_run_again_with_the_same_address() {
    let (_, outcome) = run(&format!(
        "{ONE_RACK}
workloads:
- {{name: web, replicas: 2}}
events:
- {{at: 1m, nodeDown: w-1}}
- {{at: 2m, nodeUp: w-1}}
expect:
- pods: {{of: {{node: w-1}}, unknown: 1}}
  at: 90s
"
    ));
    let before = outcome.snapshots[0]
        .pods
        .iter()
        .find(|p| p.node.as_deref() == Some("w-1"))
        .expect("pod on w-1");
    assert_eq!(before.status, PodStatus::Unknown);
    let after = outcome
        .last
        .pods
        .iter()
        .find(|p| p.name == before.name)
        .expect("same pod");
    assert_eq!(after.status, PodStatus::Running);
    assert_eq!(after.ip, before.ip);
}

#[test]
fn an_empty_block_loses_its_affinity_fifteen_minutes_after_its_last_release() {
    // /31 blocks hold two pods each: three pods on w-2 need two blocks; scaling down to one
    // pod empties the second, which kube-controllers releases once it has stayed empty for
    // more than 15 minutes (a node's last block is kept).
    holds(&format!(
        "{ONE_RACK}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: p}}
  spec: {{cidr: 10.244.0.0/24, blockSize: 31}}
workloads:
- {{name: web, replicas: 3, nodeSelector: {{disk: ssd}}}}
events:
- {{at: 1m, scale: {{workload: web, replicas: 1}}}}
expect:
- node: {{name: w-2, blocks: 2}}
  at: 30s
- node: {{name: w-2, blocks: 2}}
  at: 16m
- node: {{name: w-2, blocks: 1}}
  at: 17m
- pool: {{name: p, blocks: 1, allocated: 1}}
"
    ));
}

#[test]
fn spiderpool_statefulset_pods_come_back_with_their_address() {
    holds(
        "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes: [{namePrefix: w, count: 2}]
network: {cni: spiderpool}
resources:
- apiVersion: spiderpool.spidernet.io/v2beta1
  kind: SpiderIPPool
  metadata: {name: p}
  spec: {subnet: 10.9.0.0/24, ips: [10.9.0.100-10.9.0.110], default: true}
workloads:
- {name: db, kind: StatefulSet, replicas: 3}
- {name: web, replicas: 1}
events:
- {at: 1m, deletePods: {pod: db-0}}
- {at: 1m, scale: {workload: web, replicas: 2}}
expect:
- pod: {name: db-0, ip: 10.9.0.100}
  at: 30s
- pod: {name: db-0, ip: 10.9.0.100, status: Running}
- pod: {name: web-1, ip: 10.9.0.104}
",
    );
}

#[test]
fn spiderpool_errors_are_spiderpools_words() {
    let (_, outcome) = run("
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes: [{namePrefix: w, count: 1}]
network: {cni: spiderpool}
workloads:
- {name: web}
");
    let pod = &outcome.last.pods[0];
    assert_eq!(pod.status, PodStatus::Pending);
    // No pool annotation, no namespace default and no `default: true` pool.
    assert_eq!(
        pod.reason,
        Some(PendingReason::Spiderpool(SpiderError::NoSelectionRules))
    );
}

#[test]
fn manifests_bring_workloads_calico_nodes_and_fixed_addresses() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/manifests");
    let yaml = format!(
        "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes: [{{name: w-1, ip: 10.9.0.2}}, {{name: w-2}}]
manifests: [{:?}]
expect:
- pod: {{name: web/nginx-test-0, ip: 10.42.210.135, node: w-1}}
- pods: {{of: {{workload: nginx-test, namespace: web}}, running: 1, pending: 1}}
",
        fixtures.display().to_string()
    );
    let path = write("manifests.yaml", &yaml);
    let s = scenario::load(&path).unwrap_or_else(|d| panic!("{d}"));
    let w1 = s
        .topology
        .node(s.topology.node_by_name("w-1").expect("w-1"));
    assert_eq!(w1.labels.get("tier").map(String::as_str), Some("edge"));
    assert_eq!(w1.bgp.as_number, Some(64601));
    assert_eq!(
        w1.bgp.ipv4_subnet,
        Some("10.9.0.2/32".parse().expect("net"))
    );
    let outcome = Simulation::new(&s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    for r in results {
        assert!(
            r.passed,
            "{}: expected {}, got {}",
            r.name, r.expected, r.actual
        );
    }
    // The second replica asks for the same fixed address and cannot have it.
    let second = outcome
        .last
        .pods
        .iter()
        .find(|p| p.name == "nginx-test-1")
        .expect("second pod");
    assert!(second.reason.is_some(), "{second:?}");
}

#[test]
fn a_calico_node_whose_address_is_not_the_nodes_is_refused_where_it_is_written() {
    let yaml = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes: [{name: w-1}]
resources:
- apiVersion: projectcalico.org/v3
  kind: Node
  metadata: {name: w-1}
  spec:
    bgp: {ipv4Address: 10.9.0.77/24}
";
    let d = scenario::load_str("n.yaml", yaml).expect_err("refused");
    let lines: Vec<String> = d
        .items
        .iter()
        .map(|x| x.display(&d.sources).to_string())
        .collect();
    assert_eq!(
        lines,
        [
            "n.yaml:15:24: resources[0].spec.bgp.ipv4Address: 10.9.0.77/24 does not hold node `w-1`'s address 10.9.0.2"
        ]
    );
}

#[test]
fn default_node_addresses_wrap_past_a_gateway_at_the_top_of_the_subnet() {
    let s = scenario::load_str(
        "g.yaml",
        "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/29
      gateway: 10.9.0.5
      nodes: [{namePrefix: w, count: 5}]
",
    )
    .unwrap_or_else(|d| panic!("{d}"));
    let ips: Vec<String> = s.topology.nodes.iter().map(|n| n.ip.to_string()).collect();
    assert_eq!(
        ips,
        ["10.9.0.6", "10.9.0.1", "10.9.0.2", "10.9.0.3", "10.9.0.4"]
    );
    let err = scenario::load_str(
        "g.yaml",
        "name: t\ntopology:\n  zones:\n  - name: z\n    racks:\n    - {name: r, subnet: 10.9.0.0/29, nodes: [{namePrefix: w, count: 6}]}\n",
    )
    .expect_err("a /29 has six host addresses, one of them the gateway");
    assert!(
        err.to_string()
            .contains("no free address left for node `w-6`"),
        "{err}"
    );
}

/// When the event log says `subject` got its address (the first `podAddressed` line).
fn addressed_at(outcome: &Outcome, subject: &str) -> Option<u64> {
    outcome
        .log
        .iter()
        .find(|e| e.kind == "podAddressed" && e.subject == subject)
        .map(|e| e.time_us)
}

/// Two nodes pinned by label, so each workload lands where the test says.
const PINNED: &str = "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      nodes:
      - {name: w-1, maxPods: 40, labels: {role: a}}
      - {name: w-2, maxPods: 5, labels: {role: b}}
";

/// SPEC §2.4 and REFERENCE §1.4 (v3.33): a released address waits `ipCooldownSeconds`
/// before reuse, and the Pending pod must get it the moment the cooldown ends.
/// The /30 pool has 4 addresses (no tunnel addresses: ipipMode Never); a-0..a-3 take them at
/// 0..30 ms, b-0 (created at 40 ms) is Pending. At 60 s two of a's pods are deleted: their
/// addresses cool until 60 s + 60 s = 120 s and are free strictly after (Calico frees those
/// released before now − cooldown). So b-0 is addressed at 120 s + 1 ns = 120 000 000 µs
/// in events.jsonl; before the fix nothing happened then and b-0 stayed Pending forever.
#[test]
fn a_pending_pod_gets_an_address_the_moment_the_release_cooldown_ends() {
    let yaml = format!(
        "{ONE_RACK}
profile: {{calico: v3.33}}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: tiny}}
  spec: {{cidr: 10.244.0.0/30, blockSize: 30, ipipMode: Never}}
- apiVersion: projectcalico.org/v3
  kind: IPAMConfiguration
  metadata: {{name: default}}
  spec: {{ipCooldownSeconds: 60}}
workloads:
- {{name: a, replicas: 4}}
- {{name: b, replicas: 1}}
events:
- {{at: 1m, scale: {{workload: a, replicas: 2}}}}
expect:
- pods: {{of: {{workload: b}}, pending: 1}}
  at: 1m
- pods: {{of: {{workload: b}}, pending: 1}}
  at: 2m
- pods: {{of: {{workload: b}}, running: 1}}
"
    );
    holds(&yaml);
    let (_, outcome) = run(&yaml);
    assert_eq!(addressed_at(&outcome, "default/b-0"), Some(120_000_000));
}

/// REFERENCE §1.5: kube-controllers releases an affine block found empty on two checks 15
/// minutes apart (never a node's last block). The /27 pool has two /28 blocks (16 addresses
/// each, no tunnel addresses); a's 17 pods on w-1 fill the first block and take one address of
/// the second; w-2's pod b-0 (strictAffinity: no borrowing) is Pending. At 1 m a-16, the only
/// pod of the second block, is deleted: the block is empty, checked at 1 m and again 15 min
/// later (podnet checks at 1 m + 15 min + 1 ns, strictly more than 15 min), when w-1 loses
/// its affinity. b-0 must claim it then: 16 min + 1 ns = 960 000 000 µs in events.jsonl.
#[test]
fn a_pending_pod_gets_the_block_garbage_collection_releases_when_it_does() {
    let yaml = format!(
        "{PINNED}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: p}}
  spec: {{cidr: 10.244.0.0/27, blockSize: 28, ipipMode: Never}}
- apiVersion: projectcalico.org/v3
  kind: IPAMConfiguration
  metadata: {{name: default}}
  spec: {{strictAffinity: true}}
workloads:
- {{name: a, replicas: 17, nodeSelector: {{role: a}}}}
- {{name: b, replicas: 1, nodeSelector: {{role: b}}}}
events:
- {{at: 1m, scale: {{workload: a, replicas: 16}}}}
expect:
- pods: {{of: {{workload: b}}, pending: 1}}
  at: 16m
- pods: {{of: {{workload: b}}, running: 1}}
- node: {{name: w-2, blocks: 1}}
- node: {{name: w-1, blocks: 1}}
"
    );
    holds(&yaml);
    let (_, outcome) = run(&yaml);
    assert_eq!(addressed_at(&outcome, "default/b-0"), Some(960_000_000));
}

/// REFERENCE §1.5 (v3.32+): a node with no free block may take over another node's block that
/// has been empty for at least one minute since it was claimed. The /28 pool is one block;
/// a-0 (created at 0) claims it for w-1 at 0 s; b-0 on w-2 (10 ms) is Pending. a is scaled to
/// 0 at 10 s: the block is empty but only 10 s old, so the retry then fails; it may be
/// reclaimed from 0 s + 60 s on, and b-0 must get it at exactly 60 000 000 µs.
#[test]
fn a_pending_pod_reclaims_an_empty_block_the_moment_it_is_old_enough() {
    let yaml = format!(
        "{PINNED}
profile: {{calico: v3.32}}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {{name: p}}
  spec: {{cidr: 10.244.0.0/28, blockSize: 28, ipipMode: Never}}
- apiVersion: projectcalico.org/v3
  kind: IPAMConfiguration
  metadata: {{name: default}}
  spec: {{strictAffinity: true}}
workloads:
- {{name: a, replicas: 1, nodeSelector: {{role: a}}}}
- {{name: b, replicas: 1, nodeSelector: {{role: b}}}}
events:
- {{at: 10s, scale: {{workload: a, replicas: 0}}}}
expect:
- pods: {{of: {{workload: b}}, pending: 1}}
  at: 59s
- pods: {{of: {{workload: b}}, running: 1}}
- node: {{name: w-2, blocks: 1}}
"
    );
    holds(&yaml);
    let (_, outcome) = run(&yaml);
    assert_eq!(addressed_at(&outcome, "default/b-0"), Some(60_000_000));
}
