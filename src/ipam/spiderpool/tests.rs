use super::*;
use crate::model::selector::LabelSelector;
use proptest::prelude::*;

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn pool(name: &str, subnet: &str, ips: &[&str]) -> SpiderIpPool {
    let mut p = SpiderIpPool::new(name, parse_subnet(subnet).unwrap_or_else(|e| panic!("{e}")));
    let items: Vec<String> = ips.iter().map(|s| s.to_string()).collect();
    p.ips = parse_ip_ranges(&items).unwrap_or_else(|(i, e)| panic!("{i}: {e}"));
    p
}

fn ipam(pools: Vec<SpiderIpPool>, reserved: Vec<SpiderReservedIp>) -> SpiderpoolIpam {
    SpiderpoolIpam::new(pools, reserved).unwrap_or_else(|e| panic!("{e:?}"))
}

/// A pod's surroundings, owned, so tests can build requests briefly.
#[derive(Default)]
struct World {
    pod_labels: Labels,
    pod_annotations: BTreeMap<String, String>,
    ns_labels: Labels,
    ns_annotations: BTreeMap<String, String>,
    node: String,
    node_labels: Labels,
    stateful: bool,
}

use crate::model::Labels;

impl World {
    fn on(node: &str) -> World {
        World {
            node: node.into(),
            ..World::default()
        }
    }
    fn pool_annotation(mut self, v4: &[&str]) -> World {
        let list: Vec<String> = v4.iter().map(|p| format!("\"{p}\"")).collect();
        self.pod_annotations.insert(
            ANNO_POD_IPPOOL.into(),
            format!("{{\"ipv4\": [{}]}}", list.join(",")),
        );
        self
    }
    fn allocate(
        &self,
        ipam: &mut SpiderpoolIpam,
        pod: &PodHandle,
    ) -> Result<SpiderAssignment, SpiderError> {
        ipam.allocate(&SpiderRequest {
            pod,
            pod_labels: &self.pod_labels,
            pod_annotations: &self.pod_annotations,
            namespace_labels: &self.ns_labels,
            namespace_annotations: &self.ns_annotations,
            node_name: &self.node,
            node_labels: &self.node_labels,
            stateful: self.stateful,
        })
    }
    /// Allocates and returns the single address, or the error.
    fn ip_of(&self, ipam: &mut SpiderpoolIpam, pod: &str) -> Result<String, SpiderError> {
        self.allocate(ipam, &PodHandle::new("default", pod))
            .map(|a| {
                a.allocations
                    .iter()
                    .map(|x| x.ip.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            })
    }
}

fn v4_shortfall(pools: &[&str]) -> Shortfall {
    Shortfall {
        family: IpFamily::V4,
        nic: "eth0".into(),
        pools: pools.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn lowest_free_address_skips_used_ones() {
    // REFERENCE §2: ips .1-.5 with .2 and .4 used → .1, .3, .5.
    let mut m = ipam(
        vec![pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.5"])],
        vec![],
    );
    let w = World::on("n1").pool_annotation(&["p"]);
    for i in 0..4 {
        assert_eq!(
            w.ip_of(&mut m, &format!("fill-{i}")),
            Ok(format!("10.0.0.{}", i + 1))
        );
    }
    m.forget(&PodHandle::new("default", "fill-0"));
    m.forget(&PodHandle::new("default", "fill-2"));
    assert_eq!(
        m.pool_usage("p"),
        Some(PoolUsage {
            capacity: 5,
            allocated: 2,
            free: 3
        })
    );
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.0.1".into()));
    assert_eq!(w.ip_of(&mut m, "b"), Ok("10.0.0.3".into()));
    assert_eq!(w.ip_of(&mut m, "c"), Ok("10.0.0.5".into()));
    assert_eq!(
        m.pool_usage("p"),
        Some(PoolUsage {
            capacity: 5,
            allocated: 5,
            free: 0
        })
    );
    assert_eq!(
        m.holder("p", ip("10.0.0.3")),
        Some(&PodHandle::new("default", "b"))
    );
}

#[test]
fn excluded_addresses_are_never_handed_out() {
    let mut p = pool("p", "10.0.0.0/24", &["10.0.0.40-10.0.0.41"]);
    p.exclude_ips = vec![IpRange::single(ip("10.0.0.40"))];
    let mut m = ipam(vec![p], vec![]);
    let w = World::on("n1").pool_annotation(&["p"]);
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.0.41".into()));
    assert_eq!(
        w.ip_of(&mut m, "b"),
        Err(SpiderError::UsedOut {
            shortfalls: vec![v4_shortfall(&["p"])]
        })
    );
}

#[test]
fn node_name_filters_and_reports_every_reason() {
    let mut p6 = pool("p6", "10.0.6.0/24", &["10.0.6.1-10.0.6.9"]);
    p6.node_name = vec!["n1".into()];
    let mut p7 = pool("p7", "10.0.7.0/24", &["10.0.7.1-10.0.7.9"]);
    p7.node_name = vec!["n2".into()];
    let mut m = ipam(vec![p6, p7], vec![]);
    let on_n2 = World::on("n2").pool_annotation(&["p6", "p7"]);
    let a = on_n2.allocate(&mut m, &PodHandle::new("default", "x"));
    assert_eq!(a.as_ref().map(|a| a.allocations[0].pool.as_str()), Ok("p7"));
    assert_eq!(a.map(|a| a.allocations[0].ip), Ok(ip("10.0.7.1")));
    let on_n3 = World::on("n3").pool_annotation(&["p6", "p7"]);
    assert_eq!(
        on_n3.ip_of(&mut m, "y"),
        Err(SpiderError::AllFilteredOut {
            family: IpFamily::V4,
            nic: "eth0".into(),
            pools: vec!["p6".into(), "p7".into()],
            reasons: vec![
                "unmatched Node name of IPPool p6".into(),
                "unmatched Node name of IPPool p7".into()
            ],
        })
    );
}

#[test]
fn request_errors_use_spiderpool_wording() {
    let mut m = ipam(vec![pool("a", "10.0.0.0/24", &["10.0.0.1"])], vec![]);
    let none = World::on("n1");
    assert_eq!(none.ip_of(&mut m, "p"), Err(SpiderError::NoSelectionRules));
    let missing = World::on("n1").pool_annotation(&["a", "ghost"]);
    assert_eq!(
        missing.ip_of(&mut m, "p"),
        Err(SpiderError::OriginalPoolNotFound {
            name: "ghost".into()
        })
    );
    let dup = World::on("n1").pool_annotation(&["a", "a"]);
    assert_eq!(
        dup.ip_of(&mut m, "p"),
        Err(SpiderError::DuplicatePool {
            name: "a".into(),
            nic: "eth0".into()
        })
    );
    let mut bad = World::on("n1");
    bad.pod_annotations
        .insert(ANNO_POD_IPPOOL.into(), "{\"ipv4\": [".into());
    assert!(matches!(
        bad.ip_of(&mut m, "p"),
        Err(SpiderError::PodAnnotation {
            key: ANNO_POD_IPPOOL,
            ..
        })
    ));
    // Nothing was allocated by the failures.
    assert_eq!(m.pool_usage("a").map(|u| u.allocated), Some(0));
}

#[test]
fn namespace_and_default_pools_are_sources() {
    let mut d = pool("d", "10.0.1.0/24", &["10.0.1.1"]);
    d.default = true;
    let mut m = ipam(vec![pool("n", "10.0.0.0/24", &["10.0.0.1"]), d], vec![]);
    let mut w = World::on("n1");
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.1.1".into()));
    w.ns_annotations
        .insert(ANNO_NS_DEFAULT_V4.into(), "[\"n\"]".into());
    assert_eq!(w.ip_of(&mut m, "b"), Ok("10.0.0.1".into()));
}

#[test]
fn affinity_sort_and_tie_warning() {
    let mut with_affinity = pool("zz", "10.0.2.0/24", &["10.0.2.1"]);
    with_affinity.node_affinity = Some(LabelSelector::default());
    let mut m = ipam(
        vec![
            pool("a", "10.0.0.0/24", &["10.0.0.1"]),
            pool("b", "10.0.1.0/24", &["10.0.1.1"]),
            with_affinity,
        ],
        vec![],
    );
    let w = World::on("n1").pool_annotation(&["b", "a", "zz"]);
    let first = w.allocate(&mut m, &PodHandle::new("default", "p1"));
    assert_eq!(
        first.as_ref().map(|a| a.allocations[0].pool.as_str()),
        Ok("zz")
    );
    let warnings = first.map(|a| a.warnings).unwrap_or_default();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0].starts_with("IPPools [b a] of eth0 have equal affinity priority"),
        "{warnings:?}"
    );
    // zz is exhausted: fall back to b (annotation order among the tie), then a.
    assert_eq!(w.ip_of(&mut m, "p2"), Ok("10.0.1.1".into()));
    assert_eq!(w.ip_of(&mut m, "p3"), Ok("10.0.0.1".into()));
    assert_eq!(
        w.ip_of(&mut m, "p4"),
        Err(SpiderError::UsedOut {
            shortfalls: vec![v4_shortfall(&["zz", "b", "a"])]
        })
    );
}

#[test]
fn reserved_addresses_are_never_handed_out() {
    let reserved = SpiderReservedIp {
        name: "r".into(),
        ips: vec![IpRange {
            first: ip("10.0.0.1"),
            last: ip("10.0.0.2"),
        }],
    };
    let mut m = ipam(
        vec![pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.4"])],
        vec![reserved],
    );
    let w = World::on("n1").pool_annotation(&["p"]);
    assert_eq!(m.pool_usage("p").map(|u| u.capacity), Some(2));
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.0.3".into()));
    m.set_reserved_ip(SpiderReservedIp {
        name: "r2".into(),
        ips: vec![IpRange::single(ip("10.0.0.4"))],
    });
    assert!(w.ip_of(&mut m, "b").is_err());
    assert!(m.delete_reserved_ip("r"));
    assert_eq!(w.ip_of(&mut m, "b"), Ok("10.0.0.1".into()));
}

#[test]
fn statefulset_pods_get_their_address_back() {
    let mut m = ipam(
        vec![pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.9"])],
        vec![],
    );
    let mut w = World::on("n1").pool_annotation(&["p"]);
    w.stateful = true;
    let web0 = PodHandle::new("default", "web-0");
    assert_eq!(w.ip_of(&mut m, "web-0"), Ok("10.0.0.1".into()));
    assert_eq!(m.release(&web0, true).len(), 1);
    assert!(m.allocation_of(&web0).is_none());
    assert_eq!(m.kept_allocation_of(&web0).map(|a| a.len()), Some(1));
    // The kept address is not handed to another pod.
    assert_eq!(w.ip_of(&mut m, "web-1"), Ok("10.0.0.2".into()));
    let back = w.allocate(&mut m, &web0);
    assert_eq!(
        back.as_ref().map(|a| (a.allocations[0].ip, a.reused)),
        Ok((ip("10.0.0.1"), true))
    );
    // Asking again while running is idempotent.
    assert_eq!(w.ip_of(&mut m, "web-0"), Ok("10.0.0.1".into()));
    m.release(&web0, true);
    m.forget(&web0);
    assert_eq!(w.ip_of(&mut m, "other"), Ok("10.0.0.1".into()));
    // A kept address whose pool is no longer a candidate is released.
    let mut m = ipam(
        vec![
            pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.9"]),
            pool("q", "10.0.1.0/24", &["10.0.1.1"]),
        ],
        vec![],
    );
    w.ip_of(&mut m, "web-0").unwrap_or_default();
    m.release(&web0, true);
    let mut moved = World::on("n1").pool_annotation(&["q"]);
    moved.stateful = true;
    assert_eq!(moved.ip_of(&mut m, "web-0"), Ok("10.0.1.1".into()));
    assert_eq!(m.pool_usage("p").map(|u| u.allocated), Some(0));
}

#[test]
fn pools_change_at_run_time() {
    let mut m = ipam(
        vec![pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.2"])],
        vec![],
    );
    let w = World::on("n1").pool_annotation(&["p"]);
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.0.1".into()));
    let mut disabled = pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.2"]);
    disabled.disable = true;
    assert_eq!(m.update_pool(disabled), Ok(()));
    assert_eq!(
        w.ip_of(&mut m, "b"),
        Err(SpiderError::AllFilteredOut {
            family: IpFamily::V4,
            nic: "eth0".into(),
            pools: vec!["p".into()],
            reasons: vec!["disabled IPPool p".into()],
        })
    );
    // Shrinking away a held address is refused; growing is fine.
    let shrunk = pool("p", "10.0.0.0/24", &["10.0.0.2"]);
    assert_eq!(
        m.update_pool(shrunk),
        Err(SpiderError::AddressInUse {
            ip: ip("10.0.0.1"),
            pod: PodHandle::new("default", "a"),
        })
    );
    assert_eq!(
        m.update_pool(pool("p", "10.0.1.0/24", &["10.0.1.1"])),
        Err(SpiderError::SubnetNotChangeable)
    );
    assert_eq!(
        m.update_pool(pool("p", "10.0.0.0/24", &["10.0.0.1-10.0.0.3"])),
        Ok(())
    );
    assert_eq!(w.ip_of(&mut m, "b"), Ok("10.0.0.2".into()));
    // Adding an overlapping pool is refused, a disjoint one accepted.
    assert!(
        m.add_pool(pool("q", "10.0.0.0/16", &["10.0.9.1"]))
            .is_err_and(|e| e.to_string().contains("overlap with IPPool p"))
    );
    assert_eq!(m.add_pool(pool("q", "10.1.0.0/24", &["10.1.0.1"])), Ok(()));
    assert!(m.add_pool(pool("q", "10.2.0.0/24", &["10.2.0.1"])).is_err());
    // Deleting a pool in use leaves it terminating until its last address goes.
    assert_eq!(
        m.delete_pool("p"),
        PoolRemoval::Terminating { allocated: 2 }
    );
    assert!(
        w.ip_of(&mut m, "c")
            .is_err_and(|e| e.to_string().ends_with("terminating IPPool p"))
    );
    m.forget(&PodHandle::new("default", "a"));
    assert!(m.pool("p").is_some());
    m.release(&PodHandle::new("default", "b"), false);
    assert!(m.pool("p").is_none());
    assert_eq!(m.delete_pool("q"), PoolRemoval::Removed);
    assert_eq!(m.delete_pool("q"), PoolRemoval::NotFound);
}

#[test]
fn large_pools_are_compact_and_fast() {
    // A /8 of addresses: allocation must not walk the pool.
    let mut m = ipam(
        vec![pool("big", "10.0.0.0/8", &["10.0.0.0-10.255.255.255"])],
        vec![],
    );
    let w = World::on("n1").pool_annotation(&["big"]);
    for i in 0..2_000 {
        w.ip_of(&mut m, &format!("p{i}")).unwrap_or_default();
    }
    assert_eq!(
        m.pool_usage("big"),
        Some(PoolUsage {
            capacity: 1 << 24,
            allocated: 2_000,
            free: (1 << 24) - 2_000
        })
    );
    assert_eq!(w.ip_of(&mut m, "last"), Ok("10.0.7.208".into()));
}

#[test]
fn dual_stack_is_all_or_nothing() {
    let mut m = ipam(
        vec![
            pool("v4", "10.0.0.0/24", &["10.0.0.1"]),
            pool("v6", "fd00::/120", &["fd00::5"]),
        ],
        vec![],
    );
    let mut w = World::on("n1");
    w.pod_annotations.insert(
        ANNO_POD_IPPOOL.into(),
        r#"{"ipv4":["v4"],"ipv6":["v6"]}"#.into(),
    );
    assert_eq!(w.ip_of(&mut m, "a"), Ok("10.0.0.1,fd00::5".into()));
    m.update_pool(pool("v4", "10.0.0.0/24", &["10.0.0.1-10.0.0.2"]))
        .unwrap_or_default();
    assert!(
        w.ip_of(&mut m, "b")
            .is_err_and(|e| matches!(&e, SpiderError::UsedOut { shortfalls }
                    if shortfalls.iter().any(|s| s.family == IpFamily::V6)))
    );
    assert_eq!(m.pool_usage("v4").map(|u| u.allocated), Some(1));
}

/// One step of the random workload: allocate, release, keep or forget pod `n`.
#[derive(Clone, Debug)]
enum Op {
    Allocate(u8),
    Release(u8),
    Keep(u8),
    Forget(u8),
}

fn arb_op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0u8..24).prop_map(Op::Allocate),
        1 => (0u8..24).prop_map(Op::Release),
        1 => (0u8..24).prop_map(Op::Keep),
        1 => (0u8..24).prop_map(Op::Forget),
    ]
}

proptest! {
    #[test]
    fn never_double_allocates_and_always_lowest_free(
        ops in prop::collection::vec(arb_op(), 1..120),
        exclude in prop::collection::btree_set(1u8..20, 0..5),
        reserved in prop::collection::btree_set(1u8..30, 0..4),
    ) {
        let mut p1 = pool("p1", "10.0.0.0/24", &["10.0.0.1-10.0.0.19"]);
        p1.exclude_ips = exclude.iter().map(|&x| IpRange::single(ip(&format!("10.0.0.{x}")))).collect();
        let p2 = pool("p2", "10.0.0.0/24", &["10.0.0.20-10.0.0.29"]);
        let r = SpiderReservedIp { name: "r".into(), ips: reserved.iter().map(|&x| IpRange::single(ip(&format!("10.0.0.{x}")))).collect() };
        let mut m = ipam(vec![p1, p2], vec![r]);
        let mut w = World::on("n1").pool_annotation(&["p1", "p2"]);
        w.stateful = true;
        // The oracle: which address each pod holds (kept or not).
        let mut held: BTreeMap<u8, u8> = BTreeMap::new();
        let allowed = |x: u8| (1..30).contains(&x) && !(x < 20 && exclude.contains(&x)) && !reserved.contains(&x);
        for op in ops {
            match op {
                Op::Allocate(n) => {
                    let pod = PodHandle::new("default", format!("web-{n}"));
                    let got = w.allocate(&mut m, &pod);
                    let expect_new = (1u8..20).chain(20..30).find(|&x| allowed(x) && !held.values().any(|&h| h == x));
                    match (held.get(&n), got) {
                        (Some(&h), Ok(a)) => prop_assert_eq!(a.allocations[0].ip, ip(&format!("10.0.0.{h}"))),
                        (None, Ok(a)) => {
                            let x = match a.allocations[0].ip { IpAddr::V4(v) => v.octets()[3], IpAddr::V6(_) => 0 };
                            prop_assert_eq!(Some(x), expect_new);
                            prop_assert!(allowed(x));
                            held.insert(n, x);
                        }
                        (None, Err(_)) => prop_assert_eq!(expect_new, None),
                        (Some(_), Err(e)) => prop_assert!(false, "held pod failed: {}", e),
                    }
                }
                Op::Release(n) | Op::Forget(n) => {
                    let pod = PodHandle::new("default", format!("web-{n}"));
                    if matches!(op, Op::Release(_)) { m.release(&pod, false); } else { m.forget(&pod); }
                    held.remove(&n);
                }
                Op::Keep(n) => { m.release(&PodHandle::new("default", format!("web-{n}")), true); }
            }
            let allocated: usize = ["p1", "p2"].iter().filter_map(|p| m.pool_usage(p)).map(|u| u.allocated).sum();
            prop_assert_eq!(allocated, held.len());
        }
        for n in 0..24 { m.forget(&PodHandle::new("default", format!("web-{n}"))); }
        for p in ["p1", "p2"] {
            let u = m.pool_usage(p);
            prop_assert_eq!(u.map(|u| (u.allocated, u.free)), u.map(|u| (0, u.capacity)));
        }
    }
}
