use super::*;
use crate::forwarding::testutil::*;
use crate::model::network::EncapMode::{Always, CrossSubnet, Never};
use crate::model::topology::{NodeId, Topology};

/// Traces and renders `path | verdict | encapsulation`, e.g.
/// `a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | ipip`.
fn render(t: &Topology, dp: &Dataplane, from: Source, to: IpAddr) -> String {
    let tr = trace(dp, from, to).expect("known source");
    let name = |d: DeviceId| t.device(d).name.clone();
    let path: Vec<String> = tr.path().into_iter().map(name).collect();
    let verdict = match tr.verdict {
        Verdict::Delivered => "delivered".to_string(),
        Verdict::Dropped { reason, at } => format!("{reason}@{}", name(at)),
    };
    let encap = tr.encapsulation().map_or("none", Encap::as_str);
    format!("{} | {verdict} | {encap}", path.join(" "))
}

fn check(t: &Topology, dp: &Dataplane, from: Source, to: IpAddr, expect: &str) {
    assert_eq!(render(t, dp, from, to), expect);
}

fn p(i: usize, j: usize) -> Source {
    Source::Pod(pod_key(i, j))
}

#[test]
fn host_network_pods_are_their_node_and_share_its_address() {
    let t = topology(&[&[2, 1]]);
    let mut b = calico(&t, Always, Never, 1);
    // Two host-network pods on a0-n0 and one on a1-n0: the builder gives them their
    // node's address (whatever address it is handed), and none is a duplicate.
    let (h1, h2, h3) = (PodKey(901), PodKey(902), PodKey(903));
    assert!(b.pod(h1, ip("10.99.0.1"), NodeId(0), Attachment::Host));
    assert!(b.pod(h2, ip("10.99.0.2"), NodeId(0), Attachment::Host));
    assert!(b.pod(h3, ip("10.99.0.3"), NodeId(2), Attachment::Host));
    let dp = b.build();
    let a0n0 = ip("10.0.0.10");
    for k in [h1, h2] {
        let info = dp.pod(k).expect("a host-network pod");
        assert_eq!(info.ip, a0n0);
        assert!(!dp.is_duplicate(info));
    }
    // The address is the node's: no pod holds it.
    assert!(dp.pod_by_ip(a0n0).is_none());
    // To a host-network pod: delivered to its node, natively (a node's address is routed
    // by the underlay, never tunnelled).
    check(&t, &dp, p(0, 0), a0n0, "a0-n0 | delivered | none");
    check(
        &t,
        &dp,
        p(2, 0),
        a0n0,
        "a1-n0 tor-a1 spine-a-1 tor-a0 a0-n0 | delivered | none",
    );
    // From one: exactly its node's walk, to pods (tunnelled by the node's routes) and to
    // another host-network pod.
    for to in [pod_ip(2, 0), pod_ip(1, 0), ip("10.1.0.10"), a0n0] {
        assert_eq!(
            render(&t, &dp, Source::Pod(h1), to),
            render(&t, &dp, Source::Device(dev(&t, "a0-n0")), to)
        );
    }
    check(
        &t,
        &dp,
        Source::Pod(h1),
        pod_ip(2, 0),
        "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | ipip",
    );
}

#[test]
fn same_rack_native_goes_over_the_segment_without_the_tor() {
    let t = topology(&[&[2, 1]]);
    let dp = calico(&t, Never, Never, 2).build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 1),
        "a0-n0 a0-n1 | delivered | none",
    );
    check(&t, &dp, p(0, 0), pod_ip(0, 1), "a0-n0 | delivered | none");
    // Natively across racks the fabric knows no pod route.
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(2, 0),
        "a0-n0 tor-a0 | no-route@tor-a0 | none",
    );
}

#[test]
fn ipip_always_tunnels_through_the_fabric_and_decapsulates_at_the_far_node() {
    let t = topology(&[&[2, 1], &[1]]);
    let dp = calico(&t, Always, Never, 1).build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(3, 0),
        "a0-n0 tor-a0 spine-a-1 core spine-b-1 tor-b0 b0-n0 | delivered | ipip",
    );
    let tr = trace(&dp, p(0, 0), pod_ip(3, 0)).expect("trace");
    let outer = tr.hops[2].outer.expect("encapsulated at the spine");
    assert_eq!((outer.src, outer.dst), (ip("10.0.0.10"), ip("10.2.0.10")));
    assert_eq!(tr.hops[6].outer, None);
    assert_eq!(
        tr.hops[6].entry.map(|e| e.action),
        Some(FibAction::Local(pod_key(3, 0)))
    );
    // Always also tunnels inside the rack, straight to the node.
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 0),
        "a0-n0 a0-n1 | delivered | ipip",
    );
}

#[test]
fn cross_subnet_tunnels_only_outside_the_node_subnet_and_a_slash_32_always_tunnels() {
    let mut t = topology(&[&[2, 1]]);
    let dp = calico(&t, Never, CrossSubnet, 1).build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 0),
        "a0-n0 a0-n1 | delivered | none",
    );
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(2, 0),
        "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | vxlan",
    );
    // node#563: an ipv4Address configured as /32 makes every peer "another subnet".
    t.node_mut(NodeId(0)).bgp.ipv4_subnet = Some(net("10.0.0.10/32"));
    let dp = calico(&t, Never, CrossSubnet, 1).build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 0),
        "a0-n0 a0-n1 | delivered | vxlan",
    );
}

#[test]
fn a_borrowed_address_whose_slash_32_is_missing_hits_the_owners_blackhole() {
    let t = topology(&[&[3]]);
    let mut b = calico(&t, Never, Never, 1);
    // a0-n1 borrowed 10.200.0.50 from a0-n0's block; only a0-n2 learned its /32.
    b.pod(
        PodKey(999),
        ip("10.200.0.50"),
        NodeId(1),
        Attachment::Calico,
    );
    b.learned(dev(&t, "a0-n2"), net("10.200.0.50/32"), ip("10.0.0.11"));
    let dp = b.build();
    check(
        &t,
        &dp,
        p(2, 0),
        ip("10.200.0.50"),
        "a0-n2 a0-n1 | delivered | none",
    );
    check(
        &t,
        &dp,
        p(1, 0),
        ip("10.200.0.50"),
        "a0-n1 | delivered | none",
    );
    check(
        &t,
        &dp,
        Source::Device(dev(&t, "a0-n2")),
        ip("10.200.1.1"),
        "a0-n2 a0-n1 | delivered | none",
    );
    // a0-n0's own blackhole for its block wins over nothing more specific.
    check(
        &t,
        &dp,
        p(0, 0),
        ip("10.200.0.50"),
        "a0-n0 | blackhole@a0-n0 | none",
    );
}

#[test]
fn down_nodes_down_links_loops_and_unallocated_addresses() {
    let mut t = topology(&[&[2, 1]]);
    t.node_mut(NodeId(1)).down = true;
    let tor = dev(&t, "tor-a1");
    let spine = dev(&t, "spine-a-1");
    let link = t.link_between(tor, spine).expect("fabric link");
    t.set_link_up(link, false);
    let mut b = calico(&t, Always, Never, 1);
    // A loop between two nodes of one rack for a prefix nobody owns.
    let (n0, n1) = (dev(&t, "a0-n0"), dev(&t, "a0-n1"));
    b.learned(n0, net("10.250.0.0/24"), ip("10.0.0.11"));
    let dp = b.build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 0),
        "a0-n0 a0-n1 | node-down@a0-n1 | ipip",
    );
    check(
        &t,
        &dp,
        p(1, 0),
        pod_ip(0, 0),
        "a0-n1 | node-down@a0-n1 | none",
    );
    // tor-a1 is cut off: the spine has no route to rack a1 any more; a0-n0's outer
    // packet reaches tor-a0, which has none either.
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(2, 0),
        "a0-n0 tor-a0 | no-route@tor-a0 | ipip",
    );
    check(
        &t,
        &dp,
        p(0, 0),
        ip("10.99.0.1"),
        "a0-n0 | unallocated@a0-n0 | none",
    );
    let _ = n1;
    // Two nodes pointing at each other for a pod on a third: the hop limit ends it.
    let t2 = topology(&[&[3]]);
    let mut b = calico(&t2, Never, Never, 1);
    let (m0, m1) = (dev(&t2, "a0-n0"), dev(&t2, "a0-n1"));
    b.pod(PodKey(7), ip("10.250.0.1"), NodeId(2), Attachment::Calico);
    b.learned(m0, net("10.250.0.0/24"), ip("10.0.0.11"));
    b.learned(m1, net("10.250.0.0/24"), ip("10.0.0.10"));
    let dp = b.build();
    let tr = trace(&dp, Source::Device(m0), ip("10.250.0.1")).expect("trace");
    assert_eq!(tr.hops.len(), HOP_LIMIT + 1);
    assert_eq!(
        tr.verdict,
        Verdict::Dropped {
            reason: Reason::Loop,
            at: m0
        }
    );
    // From the pod's own node's neighbour on the segment it is direct.
    let b = {
        let mut b = calico(&t2, Never, Never, 1);
        b.pod(PodKey(7), ip("10.250.0.1"), NodeId(2), Attachment::Calico);
        b.learned(m0, net("10.250.0.0/24"), ip("10.0.0.12"));
        b
    };
    let dp = b.build();
    check(
        &t2,
        &dp,
        Source::Device(m0),
        ip("10.250.0.1"),
        "a0-n0 a0-n2 | delivered | none",
    );
}

#[test]
fn a_link_down_on_the_way_stops_at_the_device_before_it() {
    let mut t = topology(&[&[1, 1]]);
    let link = t
        .link_between(dev(&t, "a1-n0"), dev(&t, "tor-a1"))
        .expect("access link");
    t.set_link_up(link, false);
    let dp = calico(&t, Always, Never, 1).build();
    check(
        &t,
        &dp,
        p(0, 0),
        pod_ip(1, 0),
        "a0-n0 tor-a0 spine-a-1 tor-a1 | link-down@tor-a1 | ipip",
    );
}

#[test]
fn spiderpool_pods_live_on_the_segment_and_leave_through_their_gateway() {
    let t = topology(&[&[2, 1]]);
    let mut b = Dataplane::builder(&t);
    let seg = |gateway| Attachment::Segment { gateway };
    b.pod(PodKey(1), ip("10.0.0.100"), NodeId(0), seg(None));
    b.pod(PodKey(2), ip("10.0.0.101"), NodeId(1), seg(None));
    b.pod(PodKey(3), ip("10.1.0.100"), NodeId(2), seg(None));
    b.pod(PodKey(4), ip("10.9.0.100"), NodeId(2), seg(None));
    b.pod(
        PodKey(5),
        ip("10.0.0.102"),
        NodeId(0),
        seg(Some(ip("10.0.0.254"))),
    );
    b.pod(
        PodKey(6),
        ip("10.0.0.103"),
        NodeId(1),
        seg(Some(ip("10.0.0.10"))),
    );
    let dp = b.build();
    let k = |n| Source::Pod(PodKey(n));
    check(
        &t,
        &dp,
        k(1),
        ip("10.0.0.101"),
        "a0-n0 a0-n1 | delivered | none",
    );
    check(
        &t,
        &dp,
        k(1),
        ip("10.1.0.100"),
        "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | none",
    );
    check(
        &t,
        &dp,
        k(1),
        ip("10.9.0.100"),
        "a0-n0 | wrong-subnet@a1-n0 | none",
    );
    check(
        &t,
        &dp,
        k(4),
        ip("10.0.0.100"),
        "a1-n0 | wrong-subnet@a1-n0 | none",
    );
    check(
        &t,
        &dp,
        k(5),
        ip("10.1.0.100"),
        "a0-n0 | no-route@a0-n0 | none",
    );
    check(
        &t,
        &dp,
        k(5),
        ip("10.0.0.103"),
        "a0-n0 a0-n1 | delivered | none",
    );
    // A gateway that is a node: the node routes it with its own FIB (default via ToR).
    check(
        &t,
        &dp,
        k(6),
        ip("10.1.0.100"),
        "a0-n1 a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | none",
    );
}

#[test]
fn fib_entries_show_tunnels_to_the_far_node_and_count_what_they_list() {
    let t = topology(&[&[2, 1]]);
    let dp = calico(&t, CrossSubnet, Never, 2).build();
    let n0 = dev(&t, "a0-n0");
    let entries = dp.entries(n0);
    assert_eq!(dp.fib_len(n0), entries.len());
    // Connected, default, own blackhole, 2 local pods, the two other blocks.
    assert_eq!(entries.len(), 7);
    let find = |p: IpNet| entries.iter().find(|e| e.prefix == p).map(|e| e.action);
    assert_eq!(find(block(0)), Some(FibAction::Blackhole));
    assert_eq!(
        find(block(1)),
        Some(FibAction::Via {
            next_hop: ip("10.0.0.11"),
            device: dev(&t, "a0-n1")
        })
    );
    assert_eq!(
        find(block(2)),
        Some(FibAction::Tunnel {
            encap: Encap::Ipip,
            remote: ip("10.1.0.10"),
            device: dev(&t, "a1-n0")
        })
    );
    let tor = dev(&t, "tor-a0");
    // Its own rack, the other rack over the fabric, and the spine's loopback.
    assert_eq!(dp.fib_len(tor), 3);
    let spine = dev(&t, "spine-a-1");
    assert_eq!(dp.entries(spine).len(), 2);
    for d in 0..t.devices.len() {
        let d = DeviceId(d as u32);
        assert_eq!(dp.fib_len(d), dp.entries(d).len());
    }
}
