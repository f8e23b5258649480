//! Calico's own test vectors (REFERENCE §1.7 and `ipam_test.go`/`ipam_win_test.go`), the
//! behaviours around them, and property tests over random operation sequences.
//!
//! Each test builds a fresh [`CalicoIpam`] through the small helpers below and asserts exact
//! counts and messages. Test-only; nothing here is compiled into the library.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;
use proptest::prelude::*;

use super::*;
use crate::model::Labels;
use crate::model::network::{WindowsReservation, WindowsReserve};
use crate::model::selector::Selector;
use crate::model::time::{SimDuration, SimTime};

const T0: SimTime = SimTime::ZERO;

fn pool(name: &str, cidr: &str, block_size: u8) -> IpPool {
    let mut p = IpPool::with_defaults(name, cidr.parse().unwrap());
    p.block_size = block_size;
    p
}

fn node(name: &str, os: Os) -> IpamNode {
    IpamNode {
        name: name.into(),
        labels: Labels::new(),
        os,
    }
}

fn ipam(pools: Vec<IpPool>, config: IpamConfig, nodes: &[&str]) -> CalicoIpam {
    let mut ipam = CalicoIpam::new(CalicoProfile::V3_30, config);
    for p in pools {
        ipam.upsert_pool(p).unwrap();
    }
    for n in nodes {
        ipam.upsert_node(node(n, Os::Linux));
    }
    ipam
}

fn strict() -> IpamConfig {
    IpamConfig {
        strict_affinity: true,
        ..IpamConfig::default()
    }
}

fn ask(ipam: &mut CalicoIpam, handle: &str, node: &str, n: u32) -> AssignOutcome {
    let mut req = AssignRequest::pod(handle, node, "default");
    req.num_v4 = n;
    ipam.auto_assign(T0, &req)
}

fn net(s: &str) -> IpNet {
    s.parse().expect("prefix in fixture")
}

fn ips(o: &AssignOutcome) -> Vec<String> {
    o.allocations.iter().map(|a| a.ip.to_string()).collect()
}

#[test]
fn v1_requested_vs_returned_borrows_the_last_address() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/25", 26)],
        IpamConfig::default(),
        &["host-a", "host-b"],
    );
    let a = ask(&mut ipam, "a1", "host-a", 1);
    let b = ask(&mut ipam, "b1", "host-b", 1);
    assert_ne!(a.allocations[0].block, b.allocations[0].block);
    let big = ask(&mut ipam, "a2", "host-a", 64);
    assert_eq!(big.allocations.len(), 64);
    assert_eq!(big.error, None);
    let own = big
        .allocations
        .iter()
        .filter(|x| x.block == a.allocations[0].block)
        .count();
    let borrowed: Vec<&Allocation> = big.allocations.iter().filter(|x| x.borrowed).collect();
    assert_eq!(own, 63);
    assert_eq!(borrowed.len(), 1);
    assert_eq!(borrowed[0].block, b.allocations[0].block);
    assert_eq!(ipam.node_report("host-a").borrowed_ips.len(), 1);
    let changes = ipam.take_changes();
    assert!(
        changes
            .iter()
            .any(|c| matches!(c, IpamChange::Borrowed { node, .. } if node == "host-a"))
    );
}

fn v2_pools() -> Vec<IpPool> {
    vec![
        pool("v4", "192.168.1.0/24", 26),
        pool("v6", "fd80:24e2:f998:72d6::/120", 122),
    ]
}

#[test]
fn v2_whole_pool_then_one_too_many() {
    let mut full = ipam(v2_pools(), IpamConfig::default(), &["host-a"]);
    let o = ask(&mut full, "h", "host-a", 256);
    assert_eq!((o.allocations.len(), o.error), (256, None));
    let mut over = ipam(v2_pools(), IpamConfig::default(), &["host-a"]);
    let o = ask(&mut over, "h", "host-a", 257);
    assert_eq!(o.allocations.len(), 256);
    assert_eq!(
        o.error,
        Some(IpamError::PoolsExhausted {
            pools: vec![net("192.168.1.0/24")]
        })
    );
}

#[test]
fn v3_per_host_block_limit_stops_claiming_and_borrowing() {
    for (limit, expected) in [(1u32, 64usize), (2, 128)] {
        let mut ipam = ipam(v2_pools(), IpamConfig::default(), &["host-a"]);
        let mut req = AssignRequest::pod("h", "host-a", "default");
        req.num_v4 = 256;
        req.max_blocks_per_host = limit;
        let o = ipam.auto_assign(T0, &req);
        assert_eq!(o.allocations.len(), expected);
        assert_eq!(o.error, Some(IpamError::BlockLimit { limit }));
    }
}

#[test]
fn v4_strict_affinity_stops_at_the_named_pool() {
    let pools = vec![
        pool("a", "192.168.1.0/26", 26),
        pool("b", "192.168.1.64/26", 26),
    ];
    let mut ipam = ipam(pools, strict(), &["host-a"]);
    let mut req = AssignRequest::pod("h", "host-a", "default");
    req.num_v4 = 256;
    req.pools = Some(vec!["192.168.1.0/26".into()]);
    let o = ipam.auto_assign(T0, &req);
    assert_eq!(o.allocations.len(), 64);
    assert_eq!(o.error, Some(IpamError::StrictNoFreeBlocks));
}

#[test]
fn v5_max_blocks_per_host() {
    let config = IpamConfig {
        strict_affinity: true,
        max_blocks_per_host: 2,
        ..IpamConfig::default()
    };
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/28", 30)],
        config,
        &["host1", "host2"],
    );
    for i in 0..8 {
        let o = ask(&mut ipam, &format!("h{i}"), "host1", 1);
        assert_eq!(
            (o.allocations.len(), &o.error),
            (1, &None),
            "allocation {i}"
        );
    }
    let limit = IpamError::BlockLimit { limit: 2 };
    let o = ask(&mut ipam, "h9", "host1", 1);
    assert_eq!((o.allocations.len(), o.error.as_ref()), (0, Some(&limit)));
    let o = ask(&mut ipam, "x", "host2", 1);
    assert_eq!((o.allocations.len(), o.error), (1, None));
    let o = ask(&mut ipam, "h10", "host1", 1);
    assert_eq!((o.allocations.len(), o.error.as_ref()), (0, Some(&limit)));
}

#[test]
fn v6_single_block_borrowed_unless_strict() {
    let mut loose = ipam(
        vec![pool("p", "10.0.0.0/28", 28)],
        IpamConfig::default(),
        &["host1", "host2"],
    );
    assert_eq!(ask(&mut loose, "a", "host1", 1).allocations.len(), 1);
    let o = ask(&mut loose, "b", "host2", 1);
    assert_eq!(o.allocations.len(), 1);
    assert!(o.allocations[0].borrowed);
    let mut tight = ipam(
        vec![pool("p", "10.0.0.0/28", 28)],
        strict(),
        &["host1", "host2"],
    );
    assert_eq!(ask(&mut tight, "a", "host1", 1).allocations.len(), 1);
    let o = ask(&mut tight, "b", "host2", 1);
    assert_eq!(o.allocations.len(), 0);
    assert_eq!(o.error, Some(IpamError::StrictNoFreeBlocks));
}

#[test]
fn v7_node_selectors_choose_the_pool() {
    let mut yes = pool("a", "10.0.0.0/24", 26);
    yes.node_selector = Selector::parse("foo == \"bar\"").unwrap();
    let mut no = pool("b", "20.0.0.0/24", 26);
    no.node_selector = Selector::parse("foo != \"bar\"").unwrap();
    let mut ipam = ipam(vec![yes, no], IpamConfig::default(), &[]);
    let mut n = node("host", Os::Linux);
    n.labels.insert("foo".into(), "bar".into());
    ipam.upsert_node(n);
    let o = ask(&mut ipam, "h", "host", 300);
    assert_eq!(o.allocations.len(), 256);
    let pool_net = net("10.0.0.0/24");
    assert!(o.allocations.iter().all(|a| pool_net.contains(&a.ip)));
    assert_eq!(
        o.error,
        Some(IpamError::PoolsExhausted {
            pools: vec![net("10.0.0.0/24")]
        })
    );
}

fn windows_ipam(single_network: bool, hosts: &[&str]) -> CalicoIpam {
    let mut ipam = ipam(vec![pool("p", "100.0.0.0/24", 26)], strict(), &[]);
    ipam.set_windows_use_single_network(single_network);
    for h in hosts {
        ipam.upsert_node(node(h, Os::Windows));
    }
    ipam
}

#[test]
fn v8_windows_blocks_reserve_first_three_and_last() {
    let mut ipam = windows_ipam(false, &["win"]);
    let o = ask(&mut ipam, "h", "win", 256);
    assert_eq!(o.allocations.len(), 240);
    assert_eq!(o.error, Some(IpamError::StrictNoFreeBlocks));
    for a in &o.allocations {
        let IpAddr::V4(v4) = a.ip else {
            panic!("v4 pool")
        };
        assert!(![0, 1, 2, 63].contains(&(v4.octets()[3] % 64)), "{}", a.ip);
    }
    let reports = ipam.blocks();
    assert_eq!(reports.len(), 4);
    assert!(reports.iter().all(|b| b.reserved == 4 && b.allocated == 60));
}

#[test]
fn v9_four_windows_hosts_get_sixty_each_and_never_borrow() {
    let hosts = ["w1", "w2", "w3", "w4"];
    let mut ipam = windows_ipam(true, &hosts);
    for h in hosts {
        assert_eq!(ask(&mut ipam, &format!("{h}-0"), h, 1).allocations.len(), 1);
    }
    for h in hosts {
        let o = ask(&mut ipam, &format!("{h}-1"), h, 100);
        assert_eq!(o.allocations.len(), 59);
        assert!(o.allocations.iter().all(|a| !a.borrowed));
        assert_eq!(o.error, Some(IpamError::BlockLimit { limit: 1 }));
    }
}

#[test]
fn windows_without_strict_affinity_always_fails() {
    let mut ipam = ipam(
        vec![pool("p", "100.0.0.0/24", 26)],
        IpamConfig::default(),
        &[],
    );
    ipam.upsert_node(node("win", Os::Windows));
    let o = ask(&mut ipam, "h", "win", 1);
    assert_eq!(o.error, Some(IpamError::WindowsStrictAffinity));
    assert!(o.allocations.is_empty());
}

#[test]
fn windows_skips_pools_with_blocks_smaller_than_a_29() {
    let mut ipam = ipam(vec![pool("p", "100.0.0.0/24", 30)], strict(), &[]);
    ipam.upsert_node(node("win", Os::Windows));
    assert_eq!(
        ask(&mut ipam, "h", "win", 1).error,
        Some(IpamError::NoQualifiedPool)
    );
}

#[test]
fn linux_nodes_never_borrow_from_windows_blocks() {
    let mut ipam = windows_ipam(true, &["win"]);
    ipam.upsert_node(node("lin", Os::Linux));
    ipam.set_config(IpamConfig::default());
    // The Windows block was created under strict affinity; now strict is off for Linux.
    ipam.set_config(strict());
    assert_eq!(ask(&mut ipam, "w", "win", 1).allocations.len(), 1);
    ipam.set_config(IpamConfig::default());
    let o = ask(&mut ipam, "l", "lin", 200);
    assert_eq!(o.allocations.len(), 192);
    assert!(o.allocations.iter().all(|a| !a.borrowed));
}

#[test]
fn released_addresses_go_to_the_end_of_the_free_list() {
    // `ipam_test.go` "should wrap IP allocations correctly".
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/30", 30)],
        IpamConfig::default(),
        &["n"],
    );
    let mut got = Vec::new();
    for i in 0..5 {
        let o = ask(&mut ipam, &format!("h{i}"), "n", 1);
        got.push(ips(&o)[0].clone());
        ipam.release(T0, &format!("h{i}"));
    }
    assert_eq!(
        got,
        vec!["10.0.0.0", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.0"]
    );
}

#[test]
fn reservations_are_never_handed_out() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/26", 26)],
        IpamConfig::default(),
        &["n"],
    );
    let cidrs: Vec<IpNet> = ["10.0.0.1/32", "10.0.0.32/30", "10.0.0.17/32"]
        .iter()
        .map(|c| c.parse().unwrap())
        .collect();
    ipam.set_reservations(vec![IpReservation {
        name: "r".into(),
        reserved_cidrs: cidrs.clone(),
    }]);
    let o = ask(&mut ipam, "h", "n", 64);
    assert_eq!(o.allocations.len(), 58);
    assert!(
        o.allocations
            .iter()
            .all(|a| !cidrs.iter().any(|c| c.contains(&a.ip)))
    );
    assert_eq!(
        o.error,
        Some(IpamError::PoolsExhausted {
            pools: vec![net("10.0.0.0/26")]
        })
    );
}

#[test]
fn a_wholly_reserved_block_is_never_claimed() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/25", 26)],
        IpamConfig::default(),
        &["n"],
    );
    ipam.set_reservations(vec![IpReservation {
        name: "r".into(),
        reserved_cidrs: vec!["10.0.0.0/26".parse().unwrap()],
    }]);
    let o = ask(&mut ipam, "h", "n", 100);
    assert_eq!(o.allocations.len(), 64);
    assert!(
        o.allocations
            .iter()
            .all(|a| a.block.to_string() == "10.0.0.64/26")
    );
}

#[test]
fn cooldown_holds_released_addresses_on_v3_33() {
    let config = IpamConfig {
        ip_cooldown: SimDuration::from_secs(30),
        ..IpamConfig::default()
    };
    let mut ipam = CalicoIpam::new(CalicoProfile::V3_33, config);
    ipam.upsert_pool(pool("p", "10.0.0.0/30", 30)).unwrap();
    ipam.upsert_node(node("n", Os::Linux));
    let mut req = AssignRequest::pod("h", "n", "default");
    req.num_v4 = 4;
    assert_eq!(ipam.auto_assign(T0, &req).allocations.len(), 4);
    ipam.release(T0, "h");
    let b = &ipam.blocks()[0];
    assert_eq!((b.allocated, b.cooling, b.free), (0, 4, 0));
    // Still cooling at exactly 30 s: nothing to hand out, and the block is not empty.
    let t30 = T0 + SimDuration::from_secs(30);
    let o = ipam.auto_assign(t30, &AssignRequest::pod("x", "n", "default"));
    assert_eq!(o.allocations.len(), 0);
    ipam.gc(t30);
    assert_eq!(ipam.blocks().len(), 1);
    let o = ipam.auto_assign(
        t30 + SimDuration::from_secs(1),
        &AssignRequest::pod("y", "n", "default"),
    );
    assert_eq!(ips(&o), vec!["10.0.0.0"]);
}

#[test]
fn node_deletion_releases_affinities() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26)],
        IpamConfig::default(),
        &["a", "b"],
    );
    let o = ask(&mut ipam, "h1", "a", 70); // two blocks, the second holding 6
    assert_eq!(o.allocations.len(), 70);
    ipam.release(T0, "h1");
    ask(&mut ipam, "h2", "a", 1);
    ipam.take_changes();
    ipam.release_node(T0, "a");
    let changes = ipam.take_changes();
    let released = changes
        .iter()
        .filter(|c| matches!(c, IpamChange::BlockAffinityReleased { .. }))
        .count();
    let deleted = changes
        .iter()
        .filter(|c| matches!(c, IpamChange::BlockDeleted { .. }))
        .count();
    assert_eq!((released, deleted), (2, 1));
    let left = ipam.blocks();
    assert_eq!(left.len(), 1);
    assert_eq!((left[0].affinity.clone(), left[0].allocated), (None, 1));
    // Releasing the last address deletes the affinity-less block.
    ipam.release(T0, "h2");
    assert!(ipam.blocks().is_empty());
}

/// `clientv3/ippool.go` Update refuses a changed `cidr` or `blockSize`; the pool stays as it was.
#[test]
fn a_pool_keeps_its_cidr_and_block_size() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26)],
        IpamConfig::default(),
        &["a"],
    );
    assert_eq!(
        ipam.upsert_pool(pool("p", "10.0.1.0/24", 26)),
        Err(IpamError::PoolCidrImmutable)
    );
    assert_eq!(
        ipam.upsert_pool(pool("p", "10.0.0.0/24", 27)),
        Err(IpamError::PoolBlockSizeImmutable)
    );
    let kept = ipam.pool("p").unwrap();
    assert_eq!((kept.network(), kept.block_size), (net("10.0.0.0/24"), 26));
}

#[test]
fn disabled_pool_gives_nothing_new_and_selector_change_releases_empty_affinity() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26)],
        IpamConfig::default(),
        &["a"],
    );
    ask(&mut ipam, "h", "a", 1);
    let mut p = ipam.pool("p").unwrap().clone();
    p.disabled = true;
    ipam.upsert_pool(p.clone()).unwrap();
    assert_eq!(
        ask(&mut ipam, "x", "a", 1).error,
        Some(IpamError::NoQualifiedPool)
    );
    p.disabled = false;
    p.node_selector = Selector::parse("zone == 'b'").unwrap();
    ipam.upsert_pool(p).unwrap();
    assert_eq!(
        ipam.blocks().len(),
        1,
        "a non-empty block keeps its affinity"
    );
    ipam.release(T0, "h");
    assert!(
        ipam.blocks().is_empty(),
        "emptied, its pool no longer selects the node"
    );
    assert_eq!(
        ask(&mut ipam, "y", "a", 1).error,
        Some(IpamError::NoPoolsForNode { node: "a".into() })
    );
}

#[test]
fn named_pool_errors_and_allowed_uses() {
    let mut tunnel_only = pool("t", "10.1.0.0/24", 26);
    tunnel_only.allowed_uses = vec![AllowedUse::Tunnel];
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26), tunnel_only],
        IpamConfig::default(),
        &["n"],
    );
    let mut req = AssignRequest::pod("h", "n", "default");
    req.pools = Some(vec!["nope".into()]);
    assert_eq!(
        ipam.auto_assign(T0, &req).error,
        Some(IpamError::UnresolvablePool {
            name: "nope".into()
        })
    );
    req.pools = Some(vec!["10.9.0.0/24".into()]);
    assert_eq!(
        ipam.auto_assign(T0, &req).error,
        Some(IpamError::PoolNotEnabled {
            cidr: net("10.9.0.0/24")
        })
    );
    req.pools = Some(vec!["t".into()]);
    assert_eq!(
        ipam.auto_assign(T0, &req).error,
        Some(IpamError::NoPoolForUse {
            use_: AllowedUse::Workload
        })
    );
}

#[test]
fn assign_ip_claims_the_block_and_refuses_duplicates() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26)],
        IpamConfig::default(),
        &["a", "b"],
    );
    let ip: IpAddr = "10.0.0.70".parse().unwrap();
    let o = ipam.assign_ip(T0, "fixed", "a", ip);
    assert_eq!(o.error, None);
    assert_eq!(o.allocations[0].block.to_string(), "10.0.0.64/26");
    assert_eq!(ipam.owner(ip).unwrap().handle, "fixed");
    let o = ipam.assign_ip(T0, "other", "b", ip);
    assert_eq!(o.error, Some(IpamError::AlreadyAssigned { ip }));
    let o = ipam.assign_ip(T0, "x", "a", "192.168.0.1".parse().unwrap());
    assert_eq!(o.error, Some(IpamError::NotInPool));
    // Borrowed under non-strict affinity; refused under strict.
    let o = ipam.assign_ip(T0, "y", "b", "10.0.0.71".parse().unwrap());
    assert!(o.allocations[0].borrowed);
    ipam.set_config(strict());
    let o = ipam.assign_ip(T0, "z", "b", "10.0.0.72".parse().unwrap());
    assert_eq!(o.error, Some(IpamError::AffinityMismatch));
}

#[test]
fn tunnel_address_is_ordinal_zero_on_linux_and_one_on_windows() {
    let mut p = pool("p", "10.0.0.0/24", 26);
    p.ipip_mode = EncapMode::Always;
    let mut ipam = ipam(vec![p], strict(), &["lin"]);
    let t = ipam.assign_tunnel(T0, "lin");
    assert_eq!(t.len(), 1);
    assert_eq!(t[0].0, TunnelKind::Ipip);
    let tunnel_ip = t[0].1.allocations[0].ip;
    assert_eq!(
        tunnel_ip,
        t[0].1.allocations[0].block.network(),
        "ordinal 0"
    );
    let pod = ask(&mut ipam, "pod", "lin", 1);
    let IpAddr::V4(t4) = tunnel_ip else { panic!() };
    let IpAddr::V4(p4) = pod.allocations[0].ip else {
        panic!()
    };
    assert_eq!(u32::from(p4), u32::from(t4) + 1);
    // Idempotent.
    assert_eq!(
        ipam.assign_tunnel(T0, "lin")[0].1.allocations[0].ip,
        tunnel_ip
    );
    assert_eq!(ipam.allocations_of("ipip-tunnel-addr-lin").len(), 1);

    let mut vx = pool("v", "100.0.0.0/24", 26);
    vx.vxlan_mode = EncapMode::Always;
    let mut ipam = self::ipam(vec![vx], strict(), &[]);
    ipam.upsert_node(node("win", Os::Windows));
    let t = ipam.assign_tunnel(T0, "win");
    let a = &t[0].1.allocations[0];
    assert_eq!(t[0].0, TunnelKind::Vxlan);
    let IpAddr::V4(w) = a.ip else { panic!() };
    let IpAddr::V4(net) = a.block.network() else {
        panic!()
    };
    assert_eq!(u32::from(w), u32::from(net) + 1);
    assert_eq!(ipam.blocks()[0].allocated, 0);
    let pod = ask(&mut ipam, "pod", "win", 1);
    let IpAddr::V4(p4) = pod.allocations[0].ip else {
        panic!()
    };
    assert_eq!(u32::from(p4), u32::from(net) + 3);
}

#[test]
fn gc_releases_empty_blocks_after_two_checks_but_not_the_last() {
    let mut ipam = ipam(
        vec![pool("p", "10.0.0.0/24", 26)],
        IpamConfig::default(),
        &["n"],
    );
    ask(&mut ipam, "a", "n", 64);
    ask(&mut ipam, "b", "n", 1);
    ipam.release(T0, "a");
    ipam.release(T0, "b");
    assert_eq!(ipam.blocks().len(), 2);
    ipam.gc(T0);
    ipam.gc(T0 + SimDuration::from_secs(15 * 60));
    assert_eq!(
        ipam.blocks().len(),
        2,
        "exactly 15 minutes is not more than the grace period"
    );
    ipam.gc(T0 + SimDuration::from_secs(15 * 60 + 1));
    assert_eq!(
        ipam.blocks().len(),
        1,
        "one released, the node's last block kept"
    );
    ipam.gc(T0 + SimDuration::from_secs(3600));
    assert_eq!(ipam.blocks().len(), 1);
}

#[test]
fn v3_32_reclaims_another_nodes_block_empty_for_a_minute() {
    let build = |profile| {
        let mut ipam = CalicoIpam::new(profile, strict());
        ipam.upsert_pool(pool("p", "10.0.0.0/26", 26)).unwrap();
        ipam.upsert_node(node("a", Os::Linux));
        ipam.upsert_node(node("b", Os::Linux));
        ask(&mut ipam, "x", "a", 1);
        ipam.release(T0, "x");
        ipam
    };
    let later = T0 + SimDuration::from_secs(60);
    let mut old = build(CalicoProfile::V3_30);
    let o = old.auto_assign(later, &AssignRequest::pod("y", "b", "default"));
    assert_eq!(o.error, Some(IpamError::StrictNoFreeBlocks));
    let mut new = build(CalicoProfile::V3_32);
    let young = new.auto_assign(
        T0 + SimDuration::from_secs(59),
        &AssignRequest::pod("y", "b", "default"),
    );
    assert_eq!(young.allocations.len(), 0);
    let o = new.auto_assign(later, &AssignRequest::pod("y", "b", "default"));
    assert_eq!(o.allocations.len(), 1);
    assert!(!o.allocations[0].borrowed);
    assert_eq!(new.blocks()[0].affinity.as_deref(), Some("b"));
}

#[test]
fn pool_report_counts() {
    let mut ipam = windows_ipam(true, &["w"]);
    ask(&mut ipam, "h", "w", 5);
    let r = ipam.pool_report("p").unwrap();
    assert_eq!(
        (r.capacity, r.allocated, r.reserved, r.blocks, r.free),
        (256, 5, 4, 1, 247)
    );
}

// ----- properties ------------------------------------------------------------------------

#[derive(Clone, Debug)]
enum Op {
    Assign { node: usize, n: u32 },
    Release { handle: usize },
    Fixed { node: usize, offset: u32 },
    DeleteNode { node: usize },
    Tick { secs: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0usize..4, 1u32..40).prop_map(|(node, n)| Op::Assign { node, n }),
        3 => (0usize..64).prop_map(|handle| Op::Release { handle }),
        1 => (0usize..4, 0u32..256).prop_map(|(node, offset)| Op::Fixed { node, offset }),
        1 => (0usize..4).prop_map(|node| Op::DeleteNode { node }),
        1 => (1u64..1200).prop_map(|secs| Op::Tick { secs }),
    ]
}

const NODES: [(&str, Os); 4] = [
    ("l1", Os::Linux),
    ("l2", Os::Linux),
    ("l3", Os::Linux),
    ("w1", Os::Windows),
];

fn check_invariants(ipam: &CalicoIpam, reserved: &[IpNet]) -> Result<(), TestCaseError> {
    let blocks = ipam.blocks();
    // Blocks disjoint and inside their pool.
    for pair in blocks.windows(2) {
        prop_assert!(
            !pair[0].cidr.contains(&pair[1].cidr.network()),
            "overlap {:?}",
            pair
        );
    }
    for b in &blocks {
        if let Some(p) = ipam.pool(&b.pool) {
            prop_assert!(p.network().contains(&b.cidr));
            prop_assert_eq!(b.cidr.prefix_len(), p.block_size);
        }
    }
    // Every held address: one handle, inside its block and pool, never reserved.
    let mut seen = BTreeSet::new();
    for (i, _) in (0..64).enumerate() {
        for a in ipam.allocations_of(&format!("h{i}")) {
            prop_assert!(seen.insert(a.ip), "{} handed out twice", a.ip);
            prop_assert!(a.block.contains(&a.ip));
            if let Some(p) = ipam.pool(&a.pool) {
                prop_assert!(p.network().contains(&a.ip));
            }
            let owner = ipam.owner(a.ip).unwrap();
            prop_assert_eq!(owner.handle, format!("h{i}"));
            // Windows never borrow, nobody borrows from a Windows block.
            if owner.borrowed {
                prop_assert!(!owner.node.starts_with('w'));
                let b = ipam.block(&a.block).unwrap();
                prop_assert_eq!(b.reserved, 0, "borrowed from a Windows block");
            }
        }
    }
    let _ = reserved;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]
    #[test]
    fn random_operations_keep_the_invariants(
        ops in proptest::collection::vec(op(), 1..60),
        strict_affinity in any::<bool>(),
        cooldown in prop_oneof![Just(0u64), Just(30u64)],
    ) {
        let config = IpamConfig {
            strict_affinity,
            ip_cooldown: SimDuration::from_secs(cooldown),
            ..IpamConfig::default()
        };
        let mut ipam = CalicoIpam::new(CalicoProfile::V3_33, config);
        ipam.upsert_pool(pool("a", "10.0.0.0/24", 28)).unwrap();
        ipam.upsert_pool(pool("b", "10.0.1.0/26", 29)).unwrap();
        let reserved: Vec<IpNet> = vec!["10.0.0.5/32".parse().unwrap(), "10.0.0.32/28".parse().unwrap()];
        ipam.set_reservations(vec![IpReservation { name: "r".into(), reserved_cidrs: reserved.clone() }]);
        for (name, os) in NODES {
            ipam.upsert_node(node(name, os));
        }
        let mut now = T0;
        let mut next_handle = 0usize;
        let mut assigned_by_auto: BTreeMap<IpAddr, bool> = BTreeMap::new();
        for op in ops {
            match op {
                Op::Assign { node, n } => {
                    if next_handle >= 64 { continue; }
                    let mut req = AssignRequest::pod(&format!("h{next_handle}"), NODES[node].0, "default");
                    req.num_v4 = n;
                    next_handle += 1;
                    let o = ipam.auto_assign(now, &req);
                    prop_assert!(o.allocations.len() as u32 <= n);
                    if (o.allocations.len() as u32) < n { prop_assert!(o.error.is_some()); }
                    for a in &o.allocations {
                        prop_assert!(!reserved.iter().any(|r| r.contains(&a.ip)), "reserved {} handed out", a.ip);
                        if NODES[node].1 == Os::Windows { prop_assert!(!a.borrowed); }
                        assigned_by_auto.insert(a.ip, true);
                    }
                }
                Op::Release { handle } => { ipam.release(now, &format!("h{handle}")); }
                Op::Fixed { node, offset } => {
                    if next_handle >= 64 { continue; }
                    let ip = IpAddr::V4(std::net::Ipv4Addr::from(u32::from(std::net::Ipv4Addr::new(10, 0, 0, 0)) + offset));
                    ipam.assign_ip(now, &format!("h{next_handle}"), NODES[node].0, ip);
                    next_handle += 1;
                }
                Op::DeleteNode { node } => {
                    ipam.release_node(now, NODES[node].0);
                    ipam.upsert_node(node_of(node));
                }
                Op::Tick { secs } => {
                    now = now + SimDuration::from_secs(secs);
                    ipam.gc(now);
                }
            }
            check_invariants(&ipam, &reserved)?;
        }
        // Releasing everything empties the pools.
        for h in 0..64 { ipam.release(now, &format!("h{h}")); }
        let later = now + SimDuration::from_secs(3600);
        ipam.gc(later);
        for b in ipam.blocks() {
            prop_assert_eq!(b.allocated, 0);
            prop_assert!(b.affinity.is_some(), "block {} left without affinity", b.cidr);
        }
        for p in ["a", "b"] {
            prop_assert_eq!(ipam.pool_report(p).unwrap().allocated, 0);
        }
    }
}

fn node_of(i: usize) -> IpamNode {
    node(NODES[i].0, NODES[i].1)
}

/// Scale check (REFERENCE performance target): 150,000 pods on 1,000 nodes over a /12 pool
/// with /26 blocks. Ignored by default; run with `cargo test -- --ignored bulk` to time it.
#[test]
#[ignore]
fn bulk_150k_allocations() {
    let mut ipam = CalicoIpam::new(CalicoProfile::V3_33, IpamConfig::default());
    ipam.upsert_pool(pool("big", "10.0.0.0/12", 26)).unwrap();
    for n in 0..1000 {
        ipam.upsert_node(node(&format!("node-{n}"), Os::Linux));
    }
    let start = std::time::Instant::now();
    let mut got = 0;
    for i in 0..150_000u32 {
        let name = format!("node-{}", i % 1000);
        let o = ipam.auto_assign(T0, &AssignRequest::pod(&format!("ns/pod-{i}"), &name, "ns"));
        got += o.allocations.len();
    }
    let elapsed = start.elapsed();
    assert_eq!(got, 150_000);
    eprintln!(
        "150000 allocations in {elapsed:?}; {} blocks",
        ipam.blocks().len()
    );
    for i in (0..150_000u32).step_by(2) {
        ipam.release(T0, &format!("ns/pod-{i}"));
    }
    eprintln!("+ 75000 releases: {:?}", start.elapsed());
}

// ----- The micro-pool reservation models (network.windowsReservation) -----------------------

fn micro_ipam(
    model: WindowsReservation,
    addresses: u32,
    vxlan: bool,
    hosts: &[&str],
) -> CalicoIpam {
    let mut p = pool("p", "100.0.0.0/27", 29);
    if vxlan {
        p.vxlan_mode = EncapMode::Always;
    }
    let mut ipam = ipam(vec![p], strict(), &[]);
    ipam.set_windows_use_single_network(false);
    ipam.set_windows_reservation(WindowsReserve { model, addresses });
    for h in hosts {
        ipam.upsert_node(node(h, Os::Windows));
    }
    ipam
}

/// The last octet of every address handed out.
fn last_octets(o: &AssignOutcome) -> Vec<u8> {
    o.allocations
        .iter()
        .map(|a| match a.ip {
            IpAddr::V4(v4) => v4.octets()[3],
            IpAddr::V6(_) => panic!("v4 pool"),
        })
        .collect()
}

/// (reserved, allocated) per block, in address order.
fn block_counts(ipam: &CalicoIpam) -> Vec<(u32, u32)> {
    ipam.blocks()
        .iter()
        .map(|b| (b.reserved, b.allocated))
        .collect()
}

#[test]
fn per_host_reserves_once_in_the_hosts_first_block() {
    // 100.0.0.0/27 of /29s: 4 blocks × 8 = 32 addresses; 2 reserved once for the one host →
    // 30 pods (per-block would give 4 × 4 = 16).
    let mut ipam = micro_ipam(WindowsReservation::PerHost, 2, false, &["win"]);
    let o = ask(&mut ipam, "h", "win", 40);
    assert_eq!(o.allocations.len(), 30);
    assert_eq!(o.error, Some(IpamError::StrictNoFreeBlocks));
    // The first block claimed loses ordinals 0 and 1, the others nothing; last addresses too
    // are handed out (no broadcast reservation).
    let mut counts = block_counts(&ipam);
    counts.sort_unstable();
    assert_eq!(counts, [(0, 8), (0, 8), (0, 8), (2, 6)]);
    let first: IpNet = o.allocations[0].block;
    let in_first: Vec<u8> = last_octets(&o)
        .into_iter()
        .zip(&o.allocations)
        .filter(|(_, a)| a.block == first)
        .map(|(x, _)| x % 8)
        .collect();
    assert_eq!(in_first, [2, 3, 4, 5, 6, 7]);
}

#[test]
fn per_host_tunnel_is_the_first_reserved_address_and_each_host_reserves() {
    let mut ipam = micro_ipam(WindowsReservation::PerHost, 3, true, &["w1", "w2"]);
    let mut tunnels = Vec::new();
    for h in ["w1", "w2"] {
        let t = ipam.assign_tunnel(T0, h);
        assert_eq!(t[0].0, TunnelKind::Vxlan);
        let a = &t[0].1.allocations[0];
        // Ordinal 0 of the host's reserving block, not an allocation.
        assert_eq!(a.ip, a.block.network());
        tunnels.push(a.ip);
        let pod = ask(&mut ipam, &format!("{h}-pod"), h, 1);
        // Ordinals 0, 1, 2 reserved: the first pod gets ordinal 3.
        assert_eq!(last_octets(&pod)[0] % 8, 3);
        assert_eq!(pod.allocations[0].block, a.block);
    }
    assert_eq!(block_counts(&ipam), [(3, 1), (3, 1)]);
    // Idempotent: the same address again.
    let again = ipam.assign_tunnel(T0, "w1");
    assert_eq!(again[0].1.allocations[0].ip, tunnels[0]);
}

#[test]
fn per_host_reservation_moves_to_the_next_block_when_the_host_has_none() {
    let mut ipam = micro_ipam(WindowsReservation::PerHost, 2, false, &["win"]);
    assert_eq!(ask(&mut ipam, "a", "win", 1).allocations.len(), 1);
    ipam.release(T0, "a");
    // kube-controllers' node deletion releases the affinity; the empty block goes.
    ipam.release_node(T0, "win");
    assert!(ipam.blocks().is_empty());
    ipam.upsert_node(node("win", Os::Windows));
    let o = ask(&mut ipam, "b", "win", 1);
    assert_eq!(last_octets(&o)[0] % 8, 2);
    assert_eq!(block_counts(&ipam), [(2, 1)]);
}

#[test]
fn per_pool_reserves_once_and_tunnels_are_ordinary_allocations() {
    let mut ipam = micro_ipam(WindowsReservation::PerPool, 2, true, &["w1", "w2"]);
    // w1 claims the pool's first Windows block (ordinals 0, 1 reserved); its tunnel address
    // is a Tunnel-use allocation, the first free ordinal 2. w2's block reserves nothing: its
    // tunnel gets ordinal 0.
    let t1 = ipam.assign_tunnel(T0, "w1");
    let t2 = ipam.assign_tunnel(T0, "w2");
    let o1 = last_octets(&t1[0].1)[0] % 8;
    let o2 = last_octets(&t2[0].1)[0] % 8;
    assert_eq!((o1, o2), (2, 0));
    assert_eq!(ipam.allocations_of("vxlan-tunnel-addr-w1").len(), 1);
    let pod = ask(&mut ipam, "w2-pod", "w2", 1);
    assert_eq!(last_octets(&pod)[0] % 8, 1);
    // Reserved 2 once in the pool; both tunnels and the pod allocated.
    let report = ipam.pool_report("p").unwrap();
    assert_eq!(
        (report.reserved, report.allocated, report.blocks),
        (2, 3, 2)
    );
    // Whole pool: 32 − 2 reserved − 2 tunnels − 1 pod = 27 more.
    let a = ask(&mut ipam, "w1-all", "w1", 40).allocations.len();
    let b = ask(&mut ipam, "w2-all", "w2", 40).allocations.len();
    assert_eq!(a + b, 27);
}

#[test]
fn micro_pool_models_accept_blocks_of_four_addresses() {
    // Per-block needs /29 at most (windows_skips_pools_with_blocks_smaller_than_a_29); the
    // micro-pool models take /30s: one /30 reserving 2 for the host gives 2 pods.
    let mut ipam = ipam(vec![pool("p", "100.0.0.0/30", 30)], strict(), &[]);
    ipam.set_windows_reservation(WindowsReserve {
        model: WindowsReservation::PerHost,
        addresses: 2,
    });
    ipam.upsert_node(node("win", Os::Windows));
    let o = ask(&mut ipam, "h", "win", 4);
    assert_eq!(last_octets(&o), [2, 3]);
    // windowsUseSingleNetwork (the default): one block per host.
    assert_eq!(o.error, Some(IpamError::BlockLimit { limit: 1 }));
}

#[test]
fn per_host_tunnel_stays_in_the_hosts_reservation_whatever_pool_it_is_in() {
    // Two pools: `a` without VXLAN, `v` with. The host's first pod claims a block of `a`,
    // which carries its 2 reserved addresses; the VXLAN tunnel is then that block's ordinal 0,
    // not an address of a new `v` block (which would reserve nothing and hand it to a pod).
    let a = pool("a", "100.0.0.0/27", 29);
    let mut v = pool("v", "100.0.1.0/27", 29);
    v.vxlan_mode = EncapMode::Always;
    let mut ipam = ipam(vec![a, v], strict(), &[]);
    ipam.set_windows_use_single_network(false);
    ipam.set_windows_reservation(WindowsReserve {
        model: WindowsReservation::PerHost,
        addresses: 2,
    });
    ipam.upsert_node(node("win", Os::Windows));
    let mut req = AssignRequest::pod("p", "win", "default");
    req.pools = Some(vec!["a".into()]);
    let pod = ipam.auto_assign(T0, &req);
    let block = pod.allocations[0].block;
    let t = ipam.assign_tunnel(T0, "win");
    assert_eq!(t[0].1.allocations[0].ip, block.network());
    assert_eq!(ipam.blocks().len(), 1);
}

#[test]
fn per_host_reserves_at_least_one_address() {
    let mut ipam = micro_ipam(WindowsReservation::PerHost, 0, false, &["win"]);
    assert_eq!(ipam.windows_reservation().addresses, 1);
    let o = ask(&mut ipam, "h", "win", 1);
    assert_eq!(last_octets(&o)[0] % 8, 1);
}
