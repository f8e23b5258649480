use super::*;
use crate::forwarding::testutil::*;
use crate::forwarding::walk::{Source, trace};
use crate::forwarding::{Attachment, Dataplane};
use crate::model::network::EncapMode;
use crate::model::topology::{NodeId, Topology};
use proptest::prelude::*;

/// The oracle: trace every ordered pair of distinct pods.
fn brute(dp: &Dataplane, from: &[PodKey], to: &[PodKey]) -> Reachability {
    let from = known(dp, from);
    let to = known(dp, to);
    let mut out = Reachability::default();
    let mut groups: BTreeMap<(Reason, DeviceId), (u64, (PodKey, PodKey))> = BTreeMap::new();
    for s in &from {
        for d in &to {
            if s.key == d.key {
                continue;
            }
            out.pairs += 1;
            let tr = trace(dp, Source::Pod(s.key), d.ip).expect("known pod");
            match tr.verdict {
                Verdict::Delivered => out.reachable += 1,
                Verdict::Dropped { reason, at } => {
                    let g = groups.entry((reason, at)).or_insert((0, (s.key, d.key)));
                    g.0 += 1;
                    g.1 = g.1.min((s.key, d.key));
                }
            }
        }
    }
    out.unreachable = UnreachableGroup::listed(groups);
    out
}

#[test]
fn native_routing_reaches_inside_a_rack_only() {
    let t = topology(&[&[2, 1]]);
    let dp = calico(&t, EncapMode::Never, EncapMode::Never, 2).build();
    let r = all_pairs(&dp);
    assert_eq!(r.pairs, 6 * 5);
    // Inside rack a0: 4 pods, 12 pairs; a1-n0's 2 pods reach each other: 2.
    assert_eq!(r.reachable, 14);
    let tor = t.device_by_name("tor-a0").expect("tor");
    let tor1 = t.device_by_name("tor-a1").expect("tor");
    assert_eq!(
        r.unreachable,
        vec![
            UnreachableGroup {
                reason: Reason::NoRoute,
                stopped_at: tor,
                count: 8,
                example: (pod_key(0, 0), pod_key(2, 0)),
            },
            UnreachableGroup {
                reason: Reason::NoRoute,
                stopped_at: tor1,
                count: 8,
                example: (pod_key(2, 0), pod_key(0, 0)),
            },
        ]
    );
    assert_eq!(r, brute(&dp, &keys(&dp), &keys(&dp)));
}

#[test]
fn the_nodes_of_a_rack_form_a_cohort_and_own_routes_make_atoms_special() {
    let t = topology(&[&[4, 3]]);
    let mut b = calico(&t, EncapMode::Never, EncapMode::CrossSubnet, 2);
    // a0-n1 alone reaches a1-n0's block through a0-n2.
    let (n1, n2) = (dev(&t, "a0-n1"), dev(&t, "a0-n2"));
    b.learned(n1, block(4), ip("10.0.0.12"));
    let dp = b.build();
    let pods: Vec<&PodInfo> = dp.pods().collect();
    let mut sources: BTreeMap<SrcClass, Vec<PodKey>> = BTreeMap::new();
    for p in &pods {
        sources.entry(SrcClass::of(p)).or_default().push(p.key);
    }
    let atoms = Atoms::new(&dp);
    let mut dest_atoms: Vec<AtomId> = pods
        .iter()
        .filter_map(|p| DstClass::of(&dp, &atoms, p).atom())
        .collect();
    dest_atoms.sort_unstable();
    dest_atoms.dedup();
    let prep = Prepared::new(&dp);
    let plan = Plan::new(&dp, &prep.shapes, &sources, &dest_atoms);
    let sizes: Vec<usize> = plan.cohorts.iter().map(|c| c.members.len()).collect();
    assert_eq!(sizes, vec![4, 3]);
    let rack_a0 = plan.cohort_of(n1).expect("a cohort");
    assert_eq!(plan.cohort_of(n2), Some(rack_a0));
    // Towards a1-n0's block: its owner, and a0-n1 for its own route.
    let owner = dev(&t, "a1-n0");
    let i = dest_atoms
        .binary_search(&atoms.atom_of(pod_ip(4, 0)))
        .expect("a destination atom");
    let mut expect = vec![
        (rack_a0 as u32, n1),
        (plan.cohort_of(owner).expect("a cohort") as u32, owner),
    ];
    expect.sort_unstable();
    assert_eq!(plan.special(i), expect.as_slice());
    // Towards a0-n0's block: only its owner.
    let i = dest_atoms
        .binary_search(&atoms.atom_of(pod_ip(0, 0)))
        .expect("a destination atom");
    assert_eq!(plan.special(i), &[(rack_a0 as u32, dev(&t, "a0-n0"))]);
    let r = all_pairs(&dp);
    assert_eq!(r.reachable, r.pairs);
    assert_eq!(r, brute(&dp, &keys(&dp), &keys(&dp)));
}

#[test]
fn a_node_whose_own_route_covers_a_node_address_is_walked_alone() {
    let t = topology(&[&[3, 2]]);
    let mut b = calico(&t, EncapMode::Never, EncapMode::CrossSubnet, 2);
    // a0-n1 blackholes a1-n0's address: its tunnels there die at once, whatever the
    // atom of the inner destination.
    let n1 = dev(&t, "a0-n1");
    b.blackhole(n1, IpNet::from(ip("10.1.0.10")));
    let dp = b.build();
    let r = all_pairs(&dp);
    assert_eq!(r, brute(&dp, &keys(&dp), &keys(&dp)));
    // a0-n1's 2 pods towards a1-n0's 2 pods.
    assert_eq!(
        r.unreachable,
        vec![UnreachableGroup {
            reason: Reason::Blackhole,
            stopped_at: n1,
            count: 4,
            example: (pod_key(1, 0), pod_key(3, 0)),
        }]
    );
}

fn keys(dp: &Dataplane) -> Vec<PodKey> {
    dp.pods().map(|p| p.key).collect()
}

/// A small deterministic generator (SplitMix64) driven by proptest's seed.
pub(crate) struct Gen(pub(crate) u64);
impl Gen {
    pub(crate) fn next(&mut self) -> u64 {
        crate::model::hash::splitmix64(&mut self.0)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
    pub(crate) fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len())]
    }
}

/// A random small cluster: 1–3 racks, random pods (Calico, borrowed, Spiderpool, some in
/// the wrong subnet, host-network), missing and extra routes, blackholes, down nodes and links, and
/// random encapsulation modes.
pub(crate) fn scenario(seed: u64) -> (Topology, Dataplane) {
    scenario_renamed(seed, |key| key)
}

/// [`scenario`] with every pod's key replaced by `rename(key)` (a one-to-one map): the same
/// pods in the same places under other names.
fn scenario_renamed(seed: u64, rename: impl Fn(PodKey) -> PodKey) -> (Topology, Dataplane) {
    scenario_built(seed, rename, false, None)
}

/// [`scenario_renamed`], the pods told to the builder in the opposite order when `reverse`,
/// built with `memo`.
fn scenario_built(
    seed: u64,
    rename: impl Fn(PodKey) -> PodKey,
    reverse: bool,
    memo: Option<&crate::forwarding::DataplaneMemo>,
) -> (Topology, Dataplane) {
    let mut g = Gen(seed);
    let racks = 1 + g.below(3);
    let shape: Vec<u8> = (0..racks).map(|_| 1 + g.below(4) as u8).collect();
    let zones: Vec<&[u8]> = if racks > 1 && g.chance(50) {
        vec![&shape[..1], &shape[1..]]
    } else {
        vec![&shape[..]]
    };
    let mut t = topology(&zones);
    let nodes = t.nodes.len();
    for i in 0..nodes {
        if g.chance(15) {
            t.node_mut(NodeId(i as u32)).down = true;
        }
        if g.chance(15) {
            let ip = t.nodes[i].ip;
            t.node_mut(NodeId(i as u32)).bgp.ipv4_subnet = Some(IpNet::new(ip, 32).expect("host"));
        }
    }
    for l in 0..t.links.len() {
        if g.chance(8) {
            t.set_link_up(crate::model::topology::LinkId(l as u32), false);
        }
    }
    use EncapMode::{Always, CrossSubnet, Never};
    let ipip = g.pick(&[Never, Always, CrossSubnet]);
    let vxlan = if ipip == Never {
        g.pick(&[Never, Always, CrossSubnet])
    } else {
        Never
    };
    let mut b = Dataplane::builder(&t);
    b.pool(net("10.200.0.0/16"), ipip, vxlan);
    b.pool(
        net("10.201.0.0/16"),
        Never,
        g.pick(&[Never, Always, CrossSubnet]),
    );
    let mut shared_routes: Vec<(IpNet, IpAddr)> = Vec::new();
    let mut key = 0u64;
    let mut pods: Vec<(PodKey, IpAddr, usize, Attachment)> = Vec::new();
    for i in 0..nodes {
        shared_routes.push((block(i), t.nodes[i].ip));
        for j in 0..g.below(3) {
            pods.push((PodKey(key), pod_ip(i, j), i, Attachment::Calico));
            key += 1;
        }
    }
    // Borrowed addresses: in another node's block, routed by a /32 via the borrower.
    for n in 0..g.below(3) {
        let owner = g.below(nodes);
        let borrower = g.below(nodes);
        let addr = IpAddr::from([10, 200, owner as u8, 40 + n as u8]);
        pods.push((PodKey(key), addr, borrower, Attachment::Calico));
        key += 1;
        if g.chance(70) {
            shared_routes.push((IpNet::from(addr), t.nodes[borrower].ip));
        }
    }
    // Spiderpool pods: in their rack subnet, or not; with various gateways.
    for n in 0..g.below(4) {
        let node = g.below(nodes);
        let rack = if g.chance(80) {
            t.nodes[node].rack.index()
        } else {
            g.below(racks)
        };
        let addr = IpAddr::from([10, rack as u8, 0, 100 + n as u8]);
        let gateway = match g.below(4) {
            0 => None,
            1 => Some(IpAddr::from([10, rack as u8, 0, 1])),
            2 => Some(t.nodes[g.below(nodes)].ip),
            _ => Some(IpAddr::from([10, rack as u8, 0, 254])),
        };
        pods.push((PodKey(key), addr, node, Attachment::Segment { gateway }));
        key += 1;
    }
    // Host-network pods: their node's address, some nodes with several.
    for _ in 0..g.below(4) {
        let node = g.below(nodes);
        pods.push((PodKey(key), t.nodes[node].ip, node, Attachment::Host));
        key += 1;
    }
    // A pod in the second pool.
    if g.chance(50) {
        let node = g.below(nodes);
        pods.push((PodKey(key), ip("10.201.0.5"), node, Attachment::Calico));
        shared_routes.push((net("10.201.0.0/26"), t.nodes[node].ip));
        if g.chance(50) {
            let d = t.nodes[node].device;
            b.blackhole(d, net("10.201.0.0/26"));
        }
    }
    if reverse {
        pods.reverse();
    }
    for (k, addr, node, att) in &pods {
        b.pod(rename(*k), *addr, NodeId(*node as u32), *att);
    }
    let shared = b.shared_table(shared_routes.clone());
    let hops: Vec<IpAddr> = t.devices.iter().map(|d| d.address).collect();
    // Some cover device addresses (a node's, a rack's), which keeps a node out of
    // every cohort when it is its own route.
    let prefixes = [
        net("10.200.0.0/16"),
        net("10.200.1.0/24"),
        net("10.201.0.0/16"),
        net("0.0.0.0/0"),
        net("10.0.0.0/8"),
        net("10.1.0.0/24"),
        IpNet::from(t.nodes[g.below(nodes)].ip),
    ];
    // Often every node learns every route, so that the nodes of a rack look alike and
    // form cohorts whose members differ only by their own blocks and extra routes.
    let learn_all = g.chance(50);
    for i in 0..nodes {
        let d = t.nodes[i].device;
        if g.chance(85) {
            b.blackhole(d, block(i));
        }
        let mine: Vec<(IpNet, IpAddr)> = shared_routes
            .iter()
            .copied()
            .filter(|(p, nh)| *nh != t.nodes[i].ip && *p != block(i))
            .filter(|_| learn_all || g.chance(85))
            .collect();
        b.learned_routes(d, shared, mine);
    }
    // Extra routes anywhere (routers too), some making loops.
    for _ in 0..g.below(7) {
        let d = crate::model::topology::DeviceId(g.below(t.devices.len()) as u32);
        let prefix = if g.chance(50) {
            g.pick(&prefixes)
        } else {
            block(g.below(nodes))
        };
        match g.below(3) {
            0 => {
                b.blackhole(d, prefix);
            }
            1 => {
                b.withhold(d, prefix);
            }
            _ => {
                b.learned(d, prefix, g.pick(&hops));
            }
        }
    }
    // Routers that learned the blocks (native routing across the fabric).
    if g.chance(40) {
        for r in 0..t.racks.len() {
            let tor = t.racks[r].tor;
            b.use_shared(tor, shared);
        }
    }
    (t, b.build_with(memo))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]
    /// Equivalence classes give exactly what tracing every pair gives.
    #[test]
    fn equivalence_classes_equal_tracing_every_pair(seed in any::<u64>()) {
        let (_t, dp) = scenario(seed);
        let all = keys(&dp);
        prop_assert_eq!(all_pairs(&dp), brute(&dp, &all, &all));
        let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
        prop_assert_eq!(reachability(&dp, &half, &all), brute(&dp, &half, &all));
        prop_assert_eq!(reachability(&dp, &all, &half), brute(&dp, &all, &half));
    }

    /// Renaming the pods keeps the forwarding state (`Dataplane::same_but_pod_keys`) and
    /// every count of all-pairs reachability: the pairs, the reachable ones and the size of
    /// each unreachable group (its smallest example may name other pods). This is what lets
    /// `sim::snapshot::ReachabilityMemo` give one run's all-pairs result to another.
    #[test]
    fn renamed_pods_forward_the_same_and_count_the_same(seed in any::<u64>(), shift in 0u64..100) {
        let (_t, dp) = scenario(seed);
        // Reverses the keys' order, so that the pods sort differently by key.
        let (_t, renamed) = scenario_renamed(seed, |k| PodKey(1_000 - 3 * k.0 - shift));
        prop_assert!(dp.same_but_pod_keys(&renamed));
        prop_assert!(renamed.same_but_pod_keys(&dp));
        let counts = |r: Reachability| {
            let groups: Vec<(Reason, DeviceId, u64)> = r
                .unreachable
                .iter()
                .map(|g| (g.reason, g.stopped_at, g.count))
                .collect();
            (r.pairs, r.reachable, groups)
        };
        prop_assert_eq!(counts(all_pairs(&dp)), counts(all_pairs(&renamed)));
    }

    /// A dataplane given the routing a memo kept for the same pods under other names, told in
    /// the opposite order, is the one building it alone gives: every FIB entry (a local one
    /// naming its pod), every pod and the all-pairs result. This is what lets a sweep's seed
    /// variants share their FIBs (`sim::dataplane::build`).
    #[test]
    fn a_routing_given_by_a_memo_is_the_one_built_alone(seed in any::<u64>(), shift in 0u64..100) {
        let memo = crate::forwarding::DataplaneMemo::default();
        let rename = |k: PodKey| PodKey(1_000 - 3 * k.0 - shift);
        scenario_built(seed, |k| k, false, Some(&memo));
        let (t, given) = scenario_built(seed, rename, true, Some(&memo));
        prop_assert_eq!(memo.given(), 1);
        let (_t, alone) = scenario_built(seed, rename, true, None);
        for d in 0..t.devices.len() {
            let d = DeviceId(d as u32);
            prop_assert_eq!(given.entries(d), alone.entries(d));
            prop_assert_eq!(given.fib_len(d), alone.fib_len(d));
        }
        let pods = |dp: &Dataplane| dp.pods().copied().collect::<Vec<_>>();
        prop_assert_eq!(pods(&given), pods(&alone));
        prop_assert_eq!(all_pairs(&given), all_pairs(&alone));
    }

    /// The result does not depend on how many threads share the atoms.
    #[test]
    fn the_result_does_not_depend_on_the_number_of_threads(seed in any::<u64>()) {
        let (_t, dp) = scenario(seed);
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(|| all_pairs(&dp))
        };
        let one = on(1);
        prop_assert_eq!(&one, &on(3));
        prop_assert_eq!(&one, &on(8));
    }

    /// Every FIB counts what it lists, whatever was withheld or left unresolved.
    #[test]
    fn fib_len_counts_the_listed_entries(seed in any::<u64>()) {
        let (t, dp) = scenario(seed);
        for d in 0..t.devices.len() {
            let d = DeviceId(d as u32);
            let entries = dp.entries(d);
            prop_assert_eq!(dp.fib_len(d), entries.len());
            // Every listed learned entry resolved to an adjacent device.
            for e in entries {
                if let crate::forwarding::FibAction::Via { device, .. } = e.action {
                    prop_assert!(device != d);
                }
            }
        }
    }
}
