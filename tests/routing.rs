//! Routing and forwarding through the library (SPEC §3.4, §3.5): every verdict reason, with
//! the device where the packet stopped; BGP session counts (mesh, crash detection by hold
//! timer and by BFD); a Loc-RIB next hop; determinism of the report and the event log.
//!
//! Most tests run a scenario of the library (`scenarios/`) and trace packets on the
//! dataplane of the snapshot they need; a few use small inline scenarios.

use std::net::IpAddr;
use std::path::Path;

use podnet::forwarding::{Encap, PodKey, Reason, Source, Trace, Verdict, trace};
use podnet::model::topology::DeviceId;
use podnet::scenario::{self, Scenario};
use podnet::sim::expect::evaluate;
use podnet::sim::{Outcome, Simulation, Snapshot};

fn library(name: &str) -> Scenario {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scenarios")
        .join(name);
    scenario::load(&path).unwrap_or_else(|d| panic!("{name} does not load:\n{d}"))
}

fn inline(yaml: &str) -> Scenario {
    scenario::load_str("inline.yaml", yaml).unwrap_or_else(|d| panic!("does not load:\n{d}"))
}

fn run(s: &Scenario) -> Outcome {
    Simulation::new(s).run()
}

/// The snapshot taken at `at_s` seconds (an `at:` of one of the scenario's expectations).
fn at(outcome: &Outcome, at_s: f64) -> &Snapshot {
    let us = (at_s * 1e6).round() as u64;
    outcome
        .snapshots
        .iter()
        .find(|s| s.time_us == us)
        .unwrap_or_else(|| panic!("no snapshot at {at_s}s"))
}

fn device(snap: &Snapshot, name: &str) -> DeviceId {
    let i = snap
        .devices
        .iter()
        .position(|d| d == name)
        .unwrap_or_else(|| panic!("no device {name}"));
    DeviceId(i as u32)
}

fn name(snap: &Snapshot, d: DeviceId) -> String {
    snap.devices[d.index()].clone()
}

fn pod(snap: &Snapshot, reference: &str) -> (PodKey, IpAddr) {
    let (ns, n) = reference.split_once('/').unwrap_or(("default", reference));
    let p = snap
        .pods
        .iter()
        .find(|p| *p.namespace == *ns && p.name == n)
        .unwrap_or_else(|| panic!("no pod {reference}"));
    let ip = p.ip.unwrap_or_else(|| panic!("{reference} has no address"));
    (p.key, ip)
}

/// Traces a packet from pod `from` to pod `to` on the snapshot's dataplane.
fn trace_pods(snap: &Snapshot, from: &str, to: &str) -> Trace {
    let dp = &snap.dataplane;
    let (key, _) = pod(snap, from);
    let (_, ip) = pod(snap, to);
    trace(dp, Source::Pod(key), ip).expect("the source is in the dataplane")
}

fn path(snap: &Snapshot, t: &Trace) -> Vec<String> {
    t.path().into_iter().map(|d| name(snap, d)).collect()
}

/// The verdict as `delivered` or `<reason>@<device>`.
fn verdict(snap: &Snapshot, t: &Trace) -> String {
    match t.verdict {
        Verdict::Delivered => "delivered".to_string(),
        Verdict::Dropped { reason, at } => format!("{reason}@{}", name(snap, at)),
    }
}

fn assert_stopped(snap: &Snapshot, t: &Trace, reason: Reason, at: &str) {
    assert_eq!(
        t.verdict,
        Verdict::Dropped {
            reason,
            at: device(snap, at)
        },
        "got {} via {:?}",
        verdict(snap, t),
        path(snap, t)
    );
    // The device where it stopped is the last hop of the path.
    assert_eq!(path(snap, t).last().map(String::as_str), Some(at));
}

/// Every expectation of a library scenario holds (as tests/scenarios.rs checks), so the
/// traces below look at states the scenario itself describes.
fn assert_expectations_hold(s: &Scenario, o: &Outcome) {
    for r in evaluate(&s.expectations, &o.snapshots, &o.last) {
        assert!(
            r.passed,
            "{}: expected {}, got {}",
            r.name, r.expected, r.actual
        );
    }
}

// ---------------------------------------------------------------------------------------
// Verdicts

#[test]
fn delivered_across_racks_in_an_ipip_tunnel_and_natively_inside_a_rack() {
    let s = library("mesh-vs-route-reflectors.yaml");
    let o = run(&s);
    let snap = &o.last;
    let t = trace_pods(snap, "web-r1-n-1", "web-r2-n-3");
    assert_eq!(t.verdict, Verdict::Delivered);
    assert_eq!(
        path(snap, &t),
        [
            "r1-n-1",
            "tor-rack-1",
            "spine-zone-a-1",
            "tor-rack-2",
            "r2-n-3"
        ]
    );
    assert_eq!(t.encapsulation(), Some(Encap::Ipip));
    // The tunnel goes to the owner node's address, from the sender's.
    let outer = t.hops[0].outer.expect("encapsulated at the first hop");
    assert_eq!(outer.src, "10.10.1.2".parse::<IpAddr>().unwrap());
    assert_eq!(outer.dst, "10.10.2.4".parse::<IpAddr>().unwrap());

    let t = trace_pods(snap, "web-r1-n-1", "web-r1-n-2");
    assert_eq!(t.verdict, Verdict::Delivered);
    assert_eq!(path(snap, &t), ["r1-n-1", "r1-n-2"]);
    assert_eq!(t.encapsulation(), None);
}

#[test]
fn no_route_at_the_tor_for_a_never_pool_across_racks_without_a_bgp_fabric() {
    let s = library("crosssubnet-overlay.yaml");
    let o = run(&s);
    assert_expectations_hold(&s, &o);
    let snap = &o.last;
    let t = trace_pods(snap, "native/db-r1-n-1", "native/db-r2-n-1");
    assert_stopped(snap, &t, Reason::NoRoute, "tor-rack-1");
    assert_eq!(path(snap, &t), ["r1-n-1", "tor-rack-1"]);
    // The destination's pool decides: towards an overlay pod the same source tunnels.
    let t = trace_pods(snap, "native/db-r1-n-1", "web-r2-n-1");
    assert_eq!(verdict(snap, &t), "delivered");
    assert_eq!(t.encapsulation(), Some(Encap::Ipip));
}

#[test]
fn blackhole_at_the_owner_of_a_block_when_a_borrowed_address_has_no_route_there() {
    let s = library("borrowed-ip-blackhole.yaml");
    let o = run(&s);
    assert_expectations_hold(&s, &o);
    let snap = &o.last;
    // The scenario's derivation (BIRD's loop checks, REFERENCE §4.2): a-1 owns the block,
    // rr-1 keeps b-1's /32 but never passes it to its clients a-1 and a-2.
    // a-2 follows the block route to its owner a-1, whose blackhole drops it.
    let t = trace_pods(snap, "web-a-2", "web-b-1");
    assert_stopped(snap, &t, Reason::Blackhole, "a-1");
    assert_eq!(path(snap, &t), ["a-2", "a-1"]);
    // The owner's own pod is dropped at once.
    let t = trace_pods(snap, "web-a-1", "web-b-1");
    assert_stopped(snap, &t, Reason::Blackhole, "a-1");
    assert_eq!(t.hops.len(), 1);
    // The reflector that kept its partner's reflection delivers straight to b-1.
    let t = trace_pods(snap, "web-rr-1", "web-b-1");
    assert_eq!(verdict(snap, &t), "delivered");
    assert_eq!(path(snap, &t), ["rr-1", "b-1"]);
}

/// No scenario produced a forwarding loop: Calico nodes never rewrite a next hop, routers
/// route rack subnets along one shortest-path tree, and every route leads to the block's
/// owner or to a router that knows less. So the loop is built by hand: two nodes whose
/// routes for a third node's block point at each other.
#[test]
fn loop_when_two_nodes_route_a_block_to_each_other() {
    use podnet::forwarding::{Attachment, Dataplane};
    use podnet::ipam::calico::EncapMode;
    let s = inline(
        r#"
name: loop
description: three nodes of one rack
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.0.0.0/24
      nodes: [{namePrefix: n, count: 3}]
"#,
    );
    let t = &s.topology;
    let dev = |n: &str| t.device_by_name(n).expect("device");
    let node = |n: &str| t.node_by_name(n).expect("node");
    let block: ipnet::IpNet = "10.200.0.0/26".parse().unwrap();
    let mut b = Dataplane::builder(t);
    b.pool(
        "10.200.0.0/16".parse().unwrap(),
        EncapMode::Never,
        EncapMode::Never,
    );
    assert!(b.pod(
        PodKey(1),
        "10.200.0.1".parse().unwrap(),
        node("n-3"),
        Attachment::Calico
    ));
    assert!(b.pod(
        PodKey(2),
        "10.200.0.2".parse().unwrap(),
        node("n-1"),
        Attachment::Calico
    ));
    b.blackhole(dev("n-3"), block);
    b.learned(dev("n-1"), block, t.device(dev("n-2")).address);
    b.learned(dev("n-2"), block, t.device(dev("n-1")).address);
    let dp = b.build();
    let tr = trace(&dp, Source::Pod(PodKey(2)), "10.200.0.1".parse().unwrap()).expect("trace");
    let Verdict::Dropped { reason, at } = tr.verdict else {
        panic!("delivered through a loop?");
    };
    assert_eq!(reason, Reason::Loop);
    // 64 forwards, alternating n-1, n-2, ...: the 65th device is where the limit runs out.
    assert_eq!(tr.hops.len(), podnet::forwarding::HOP_LIMIT + 1);
    assert_eq!(t.device(at).name, "n-1");
    assert!(
        tr.path()
            .windows(2)
            .all(|w| { w[0] != w[1] && [dev("n-1"), dev("n-2")].contains(&w[0]) })
    );
}

#[test]
fn node_down_at_a_crashed_node_whose_block_is_still_routed() {
    let s = library("rr-failure-hold-vs-bfd.yaml");
    let o = run(&s);
    let snap = at(&o, 61.0);
    let t = trace_pods(snap, "web-0", "probe");
    assert_stopped(snap, &t, Reason::NodeDown, "r1-rr");
    // After the hold timer the block is withdrawn: the node's default route, then the ToR.
    // (Expiry between 181.5 s and about 242.1 s: see the scenario's timeline.)
    let snap = at(&o, 243.0);
    let t = trace_pods(snap, "web-0", "probe");
    let tor = if path(snap, &t)[0].starts_with("r1-") {
        "tor-rack-1"
    } else {
        "tor-rack-2"
    };
    assert_stopped(snap, &t, Reason::NoRoute, tor);
}

/// A node whose access link is cut; traffic to the other rack, and to its own rack.
const ACCESS_LINK: &str = r#"
name: access-link
description: a node loses its link to the ToR
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.1.0.0/24
      nodes: [{namePrefix: a, count: 2}]
    - name: r2
      subnet: 10.2.0.0/24
      nodes: [{namePrefix: b, count: 1}]
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: p}
  spec: {cidr: 10.100.0.0/16, ipipMode: CrossSubnet}
workloads:
- {name: w, kind: DaemonSet}
events:
- {at: 10s, linkDown: [a-1, tor-r1]}
expect:
- reachable: {from: all, to: all}
  at: 5s
- bgp: {sessionsEstablished: 3}
  at: 11s
- bgp: {sessionsEstablished: 1}
"#;

#[test]
fn link_down_at_the_node_whose_access_link_is_cut() {
    let s = inline(ACCESS_LINK);
    let o = run(&s);
    assert_expectations_hold(&s, &o);
    for snap in [at(&o, 11.0), &o.last] {
        let t = trace_pods(snap, "w-a-1", "w-b-1");
        assert_stopped(snap, &t, Reason::LinkDown, "a-1");
        assert_eq!(t.hops.len(), 1);
        // The ToR is the rack's switch: without its access link a-1 is off the segment,
        // so its rack neighbour is out of reach too.
        let t = trace_pods(snap, "w-a-1", "w-a-2");
        assert_stopped(snap, &t, Reason::LinkDown, "a-1");
        let t = trace_pods(snap, "w-a-2", "w-b-1");
        assert_eq!(verdict(snap, &t), "delivered");
    }
    // 240 s after the cut a-1's multihop sessions have expired (1 left, a-2 -- b-1), its
    // block is withdrawn, and b-1's packet follows its default route to its ToR.
    let t = trace_pods(&o.last, "w-b-1", "w-a-1");
    assert_eq!(verdict(&o.last, &t), "no-route@tor-r2");
}

#[test]
fn routes_via_a_cut_off_node_last_until_the_hold_timer() {
    let s = inline(ACCESS_LINK);
    let o = run(&s);
    let snap = at(&o, 11.0);
    let t = trace_pods(snap, "w-b-1", "w-a-1");
    assert_eq!(verdict(snap, &t), "link-down@tor-r1");
    assert_eq!(path(snap, &t), ["b-1", "tor-r2", "spine-z-1", "tor-r1"]);
}

#[test]
fn wrong_subnet_at_the_misplaced_pod_whichever_end_it_is() {
    let s = library("spiderpool-wrong-subnet.yaml");
    let o = run(&s);
    assert_expectations_hold(&s, &o);
    let snap = &o.last;
    // Destination misplaced: stopped at the destination's node, before any hop.
    let t = trace_pods(snap, "probe-a-w-1", "probe-b-w-1");
    assert_eq!(verdict(snap, &t), "wrong-subnet@b-w-1");
    assert_eq!(path(snap, &t), ["a-w-1"]);
    // Source misplaced: stopped at the source's node.
    let t = trace_pods(snap, "probe-b-w-2", "probe-a-w-1");
    assert_stopped(snap, &t, Reason::WrongSubnet, "b-w-2");
    // Both fine: delivered over the segment.
    let t = trace_pods(snap, "probe-a-w-1", "probe-a-w-2");
    assert_eq!(verdict(snap, &t), "delivered");
}

#[test]
fn unallocated_for_an_address_no_pod_holds() {
    let s = library("mesh-vs-route-reflectors.yaml");
    let o = run(&s);
    let snap = &o.last;
    let dp = &snap.dataplane;
    let (key, _) = pod(snap, "web-r1-n-1");
    // r2-n-3 holds 10.244.42.24/29 (full: its tunnel address and 7 pods) and
    // 10.244.42.32/29 (2 pods, .32 and .33): .39 is free.
    assert!(
        snap.pods
            .iter()
            .any(|p| p.ip == Some("10.244.42.33".parse().unwrap()))
    );
    let t = trace(dp, Source::Pod(key), "10.244.42.39".parse().unwrap()).expect("trace");
    assert_stopped(snap, &t, Reason::Unallocated, "r1-n-1");
    // From a device too, and outside every pool.
    let t = trace(
        dp,
        Source::Device(device(snap, "r2-n-1")),
        "10.99.0.1".parse().unwrap(),
    )
    .expect("trace");
    assert_stopped(snap, &t, Reason::Unallocated, "r2-n-1");
    // A node's own address is not "unallocated": it is a device.
    let t = trace(dp, Source::Pod(key), "10.10.2.4".parse().unwrap()).expect("trace");
    assert_eq!(verdict(snap, &t), "delivered");
}

// ---------------------------------------------------------------------------------------
// BGP

fn mesh(n: usize) -> Scenario {
    inline(&format!(
        r#"
name: mesh-{n}
description: full mesh
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.1.0.0/24
      nodes: [{{namePrefix: a, count: {a}}}]
    - name: r2
      subnet: 10.2.0.0/24
      nodes: [{{namePrefix: b, count: {b}}}]
"#,
        a = n.div_ceil(2),
        b = n / 2,
    ))
}

#[test]
fn a_mesh_of_n_nodes_has_n_n_minus_1_over_2_established_sessions() {
    for n in [2usize, 3, 5, 8, 13] {
        let o = run(&mesh(n));
        let bgp = o.last.bgp.as_ref().expect("BGP is simulated");
        assert_eq!(bgp.sessions.len(), n * (n - 1) / 2, "n = {n}");
        assert_eq!(bgp.sessions_established, n * (n - 1) / 2, "n = {n}");
        assert!(bgp.sessions.iter().all(|s| s.session_type == "ibgp"));
    }
}

#[test]
fn route_reflectors_need_fewer_sessions_than_the_mesh() {
    let mesh = run(&library("mesh-vs-route-reflectors.yaml"));
    let rr = run(&library("route-reflectors.yaml"));
    let (m, r) = (mesh.last.bgp.unwrap(), rr.last.bgp.unwrap());
    assert_eq!((m.sessions_established, r.sessions_established), (28, 13));
    let clients = r.sessions.iter().filter(|s| s.reflector_client).count();
    assert_eq!(clients, 12);
}

/// Sessions with the crashed reflector r1-rr (5 of 9) stay Established until its peers
/// detect the crash: hold time 240 s with calico-bird, 1.5 s with BFD.
#[test]
fn a_crash_is_detected_after_the_hold_time_or_after_bfd() {
    let hold = run(&library("rr-failure-hold-vs-bfd.yaml"));
    let established = |o: &Outcome, t: f64| at(o, t).bgp.as_ref().unwrap().sessions_established;
    assert_eq!(established(&hold, 59.0), 9);
    assert_eq!(established(&hold, 61.0), 9);
    // The scenario's timeline: the hold timers run 180-240 s (BIRD's jitter) from r1-rr's last
    // message, sent 1.5-2.1 s after the start (its first KEEPALIVE was due after the crash).
    assert_eq!(established(&hold, 181.0), 9);
    assert_eq!(established(&hold, 243.0), 4);
    assert_eq!(hold.last.bgp.as_ref().unwrap().sessions_established, 9);
    let down_at = |o: &Outcome| {
        o.log
            .iter()
            .filter(|e| e.kind == "sessionDown")
            .map(|e| e.time_us)
            .min()
    };
    let first = down_at(&hold).unwrap();
    assert!(
        (181_500_000..=242_100_000).contains(&first),
        "first hold expiry at {first}us"
    );

    let bfd = run(&library("rr-failure-bfd.yaml"));
    assert_eq!(established(&bfd, 61.0), 9);
    assert_eq!(established(&bfd, 62.0), 4);
    assert_eq!(down_at(&bfd), Some(61_500_000));
}

/// A reflected route keeps the originator as next hop: in r1-n-1's Loc-RIB, r2-n-3's block
/// is via r2-n-3 although it was learned from a reflector.
#[test]
fn a_reflected_route_keeps_the_owner_as_next_hop_in_the_rib() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/route-reflectors.yaml"),
    )
    .expect("scenario");
    // Naming the node in a `table: rib` expectation makes the snapshot keep its Loc-RIB.
    let s = inline(&format!(
        "{text}- route: {{node: r1-n-1, prefix: 10.244.42.24/29, nextHop: r2-n-3, table: rib}}\n"
    ));
    let o = run(&s);
    let ribs = &o.last.bgp.as_ref().expect("BGP").ribs;
    let rib = ribs.get("r1-n-1").expect("r1-n-1's Loc-RIB is kept");
    let find = |p: &str| {
        let prefix: ipnet::IpNet = p.parse().unwrap();
        rib.iter()
            .find(|r| r.prefix == prefix)
            .map(|r| r.next_hop.clone())
    };
    assert_eq!(find("10.244.42.24/29").as_deref(), Some("r2-n-3"));
    // Its own blocks are in its Loc-RIB as blackholes.
    assert_eq!(find("10.244.48.128/29").as_deref(), Some("blackhole"));
    assert_eq!(rib.len(), 16);
}

#[test]
fn the_rib_route_expectation_is_evaluated() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/route-reflectors.yaml"),
    )
    .expect("scenario");
    let s = inline(&format!(
        "{text}- route: {{node: r1-n-1, prefix: 10.244.42.24/29, nextHop: r2-n-3, table: rib}}\n\
         - node: {{name: \"*\", ribRoutes: 16, fibRoutes: 27}}\n"
    ));
    let o = run(&s);
    assert_expectations_hold(&s, &o);
}

#[test]
fn as_per_rack_fabric_routes_pods_across_racks_through_a_spine() {
    let s = library("as-per-rack-fabric.yaml");
    let o = run(&s);
    let snap = at(&o, 60.0);
    let t = trace_pods(snap, "web-r1-2", "web-r2-1");
    assert_eq!(verdict(snap, &t), "delivered");
    assert_eq!(
        path(snap, &t),
        [
            "r1-n-1",
            "tor-rack-1",
            "spine-zone-a-1",
            "tor-rack-2",
            "r2-n-1"
        ]
    );
    assert_eq!(t.encapsulation(), None);
    // After the ToR-spine link is cut, through the second spine.
    let snap = &o.last;
    let t = trace_pods(snap, "web-r1-2", "web-r2-1");
    assert_eq!(
        path(snap, &t),
        [
            "r1-n-1",
            "tor-rack-1",
            "spine-zone-a-2",
            "tor-rack-2",
            "r2-n-1"
        ]
    );
}

#[test]
fn a_daemonset_runs_only_on_the_nodes_its_selector_matches() {
    let s = inline(
        r#"
name: ds-selector
description: a DaemonSet for rack r1 only
topology:
  zones:
  - name: z
    racks:
    - name: r1
      subnet: 10.1.0.0/24
      nodes: [{namePrefix: a, count: 2}]
    - name: r2
      subnet: 10.2.0.0/24
      nodes: [{namePrefix: b, count: 2}]
workloads:
- {name: agent, kind: DaemonSet, nodeSelector: {podnet.io/rack: r1}}
"#,
    );
    let o = run(&s);
    let names: Vec<&str> = o.last.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["agent-a-1", "agent-a-2"]);
}

// ---------------------------------------------------------------------------------------
// Determinism

#[test]
fn two_runs_give_identical_reports_and_event_logs() {
    for file in ["borrowed-ip-blackhole.yaml", "rr-failure-bfd.yaml"] {
        let s = library(file);
        let render = || {
            let o = run(&s);
            let results = evaluate(&s.expectations, &o.snapshots, &o.last);
            let report = podnet::report::Report::new(&s, &o, results).to_json();
            (report, podnet::report::events_jsonl(&o.log), o.log)
        };
        let (report_a, events_a, log_a) = render();
        let (report_b, events_b, log_b) = render();
        assert!(!log_a.is_empty());
        assert_eq!(log_a, log_b, "{file}: event logs differ");
        assert!(events_a == events_b, "{file}: events.jsonl differs");
        assert!(report_a == report_b, "{file}: report.json differs");
    }
}

/// A snapshot computes all-pairs reachability once, on the first request, and it is what
/// `forwarding::all_pairs` gives on the snapshot's dataplane; the report reads the same value.
#[test]
fn a_snapshot_computes_all_pairs_reachability_once() {
    let s = library("mesh-vs-route-reflectors.yaml");
    let o = run(&s);
    let snap = &o.last;
    let first = snap.reachability();
    assert_eq!(
        *first,
        podnet::sim::policy::all_pairs(&snap.dataplane, snap.policy.as_deref())
    );
    let routing = podnet::forwarding::all_pairs(&snap.dataplane);
    assert_eq!(
        (first.pairs, first.reachable),
        (routing.pairs, routing.reachable)
    );
    assert!(std::ptr::eq(first, snap.reachability()));
    let report = podnet::report::Report::new(&s, &o, Vec::new());
    assert_eq!(report.summary.pod_pairs, first.pairs);
    assert_eq!(report.summary.reachable_pairs, first.reachable);
}

/// Issue #12 item 5: a pool overlapping a rack subnet is accepted (Calico accepts it) with a
/// warning naming both, and a pod given a node's or the gateway's address is not delivered,
/// either way, with `duplicate-address` at the source's node (ARCHITECTURE.md, choices).
///
/// The /29 pool is one block, 10.9.0.0–.7 (ipipMode Never: no tunnel addresses); the first
/// pod's node claims it and the other borrows from it, so web-0..web-3 get .0, .1, .2, .3 in
/// creation order. .1 is the gateway (the ToR), .2 is w-1: web-1 and web-2 hold duplicate
/// addresses. Of the 12 ordered pairs, only web-0 <-> web-3 (2 pairs) avoid them.
#[test]
fn a_pod_holding_a_node_or_gateway_address_is_not_delivered() {
    use podnet::forwarding::all_pairs;
    let s = inline(
        "
name: t
topology:
  zones:
  - name: z
    racks:
    - name: r
      subnet: 10.9.0.0/24
      gateway: 10.9.0.1
      nodes:
      - {name: w-1, ip: 10.9.0.2}
      - {name: w-2, ip: 10.9.0.20}
resources:
- apiVersion: projectcalico.org/v3
  kind: IPPool
  metadata: {name: overlapping}
  spec: {cidr: 10.9.0.0/29, blockSize: 29, ipipMode: Never}
workloads:
- {name: web, replicas: 4}
expect:
- pod: {name: web-1, ip: 10.9.0.1}
- pod: {name: web-2, ip: 10.9.0.2}
- unreachable: {from: web-1, to: web-0, reason: duplicate-address}
- unreachable: {from: web-0, to: web-2, reason: duplicate-address}
- reachable: {from: web-0, to: web-3}
- reachable: {from: web-3, to: web-0}
",
    );
    let warnings = s.warning_lines();
    assert!(
        warnings.iter().any(
            |w| w.starts_with("inline.yaml:17:16: resources[0].spec.cidr")
                && w.contains(
                    "IPPool `overlapping` 10.9.0.0/29 overlaps rack `r` subnet 10.9.0.0/24"
                )
                && w.contains("gateway 10.9.0.1")
        ),
        "{warnings:?}"
    );
    let o = run(&s);
    assert_expectations_hold(&s, &o);
    let snap = &o.last;
    let dp = &snap.dataplane;
    // To w-1's address, which web-2 also holds: stopped where it starts.
    let (web0, _) = pod(snap, "web-0");
    let t = trace(dp, Source::Pod(web0), "10.9.0.2".parse().unwrap()).expect("trace");
    let web0_node = snap
        .pods
        .iter()
        .find(|p| p.name == "web-0")
        .and_then(|p| p.node.clone())
        .expect("web-0 is placed");
    assert_stopped(snap, &t, Reason::DuplicateAddress, &web0_node);
    // All pairs: exactly what tracing every pair gives (same groups, counts, examples).
    let r = all_pairs(dp);
    assert_eq!((r.pairs, r.reachable), (12, 2));
    let mut traced: std::collections::BTreeMap<(Reason, DeviceId), (u64, (PodKey, PodKey))> =
        std::collections::BTreeMap::new();
    let mut delivered = 0;
    for a in &snap.pods {
        for b in &snap.pods {
            if a.key == b.key {
                continue;
            }
            let ip: IpAddr = b.ip.expect("addressed");
            match trace(dp, Source::Pod(a.key), ip).expect("trace").verdict {
                Verdict::Delivered => delivered += 1,
                Verdict::Dropped { reason, at } => {
                    let g = traced.entry((reason, at)).or_insert((0, (a.key, b.key)));
                    g.0 += 1;
                    g.1 = g.1.min((a.key, b.key));
                }
            }
        }
    }
    assert_eq!(delivered, r.reachable);
    let groups: Vec<_> = r
        .unreachable
        .iter()
        .map(|g| ((g.reason, g.stopped_at), (g.count, g.example)))
        .collect();
    assert_eq!(groups, traced.into_iter().collect::<Vec<_>>());
    assert!(
        r.unreachable
            .iter()
            .all(|g| g.reason == Reason::DuplicateAddress)
    );
}
