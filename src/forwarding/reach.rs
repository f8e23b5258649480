//! All-pairs pod reachability without tracing every pair (SPEC §3.5, REFERENCE §5).
//!
//! The address space is split into forwarding equivalence classes (atoms): the union of the
//! boundaries of every FIB prefix of every device, every pool and every device address.
//! Inside an atom every device takes the same action, with two exceptions that depend on the
//! destination pod itself and are settled per pod afterwards: a `Local` /32 (the pod's node
//! delivers it), and an on-link delivery (which pod owns the exact address on the segment).
//! So, per atom that holds a destination pod and per source class (the node of the Calico
//! pods on it, or a Spiderpool pod's node and gateway), the packet's chain of devices is
//! walked once (the per-device step is memoised per atom, since the forwarding graph of an
//! atom is a function), and each destination class — pods of the atom on one node — reads
//! its verdict off the chain. Counts are products of class sizes, minus each pod's pair with
//! itself.
//!
//! Invariants: the result equals tracing every ordered pair of distinct pods with
//! `walk::trace` (a property test checks it); groups are sorted by (reason, device) and each
//! example is the smallest (source, destination) pair of its group by pod key.
//! This module does not resolve pod names or judge expectations.

use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;

use ipnet::IpNet;

use super::dataplane::{Attachment, Dataplane, PodInfo};
use super::fib::{Encap, PodKey, Stored};
use super::walk::{
    HOP_LIMIT, Mode, Processed, Reason, Step, Verdict, forward_check, pod_table_step, process,
};
use crate::model::topology::{DeviceId, RackId};

/// An atom: its address family (IPv6 or not) and its index among that family's atoms.
type AtomId = (bool, usize);

/// The per-device steps of one atom: native ones by device index (the common case, no
/// hashing), tunnelled ones by device and tunnel (kind and outer destination).
struct Memo {
    native: Vec<Option<Processed>>,
    outer: HashMap<(DeviceId, Encap, IpAddr), Processed>,
}

impl Memo {
    fn new(devices: usize) -> Memo {
        Memo {
            native: vec![None; devices],
            outer: HashMap::new(),
        }
    }

    /// Forgets everything, keeping the allocations (one atom after another).
    fn clear(&mut self) {
        self.native.iter_mut().for_each(|slot| *slot = None);
        self.outer.clear();
    }
}

/// Pairs that did not deliver, for one reason at one device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnreachableGroup {
    pub reason: Reason,
    pub stopped_at: DeviceId,
    pub count: u64,
    /// The smallest (source, destination) pair of the group.
    pub example: (PodKey, PodKey),
}

/// Reachability between two sets of pods.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Reachability {
    /// Ordered pairs of distinct pods considered.
    pub pairs: u64,
    pub reachable: u64,
    /// Sorted by (reason, stopped_at).
    pub unreachable: Vec<UnreachableGroup>,
}

/// Reachability between every ordered pair of distinct pods the dataplane knows.
pub fn all_pairs(dp: &Dataplane) -> Reachability {
    let keys: Vec<PodKey> = dp.pods.keys().copied().collect();
    reachability(dp, &keys, &keys)
}

/// Reachability from every pod of `from` to every other pod of `to` (unknown keys are
/// ignored, duplicates count once).
pub fn reachability(dp: &Dataplane, from: &[PodKey], to: &[PodKey]) -> Reachability {
    let from = known(dp, from);
    let to = known(dp, to);
    let atoms = Atoms::new(dp);

    let mut sources: BTreeMap<SrcClass, Vec<PodKey>> = BTreeMap::new();
    for p in &from {
        sources.entry(SrcClass::of(p)).or_default().push(p.key);
    }
    let mut dests: BTreeMap<DstClass, Vec<PodKey>> = BTreeMap::new();
    for p in &to {
        dests
            .entry(DstClass::of(dp, &atoms, p))
            .or_default()
            .push(p.key);
    }
    // Pods in both sets sit in one cell with themselves: that pair does not count.
    let from_keys: Vec<PodKey> = from.iter().map(|p| p.key).collect();
    let mut self_pairs: HashMap<(SrcClass, DstClass), u64> = HashMap::new();
    for p in &to {
        if from_keys.binary_search(&p.key).is_ok() {
            *self_pairs
                .entry((SrcClass::of(p), DstClass::of(dp, &atoms, p)))
                .or_default() += 1;
        }
    }
    let self_total: u64 = self_pairs.values().sum();
    let mut groups: BTreeMap<(Reason, DeviceId), (u64, (PodKey, PodKey))> = BTreeMap::new();
    let mut reachable = 0u64;
    let mut record =
        |verdict: Verdict, src: &SrcClass, dst: &DstClass, s: &[PodKey], d: &[PodKey]| {
            let own = self_pairs.get(&(*src, *dst)).copied().unwrap_or(0);
            let count = (s.len() as u64) * (d.len() as u64) - own;
            let Some(example) = smallest_pair(s, d) else {
                return;
            };
            if count == 0 {
                return;
            }
            match verdict {
                Verdict::Delivered => reachable += count,
                Verdict::Dropped { reason, at } => {
                    let g = groups.entry((reason, at)).or_insert((0, example));
                    g.0 += count;
                    g.1 = g.1.min(example);
                }
            }
        };

    // Atoms in order; destination classes of one atom are consecutive in `dests`.
    let mut by_atom: BTreeMap<Option<AtomId>, Vec<(&DstClass, &Vec<PodKey>)>> = BTreeMap::new();
    for (class, members) in &dests {
        by_atom
            .entry(class.atom())
            .or_default()
            .push((class, members));
    }
    let mut memo = Memo::new(dp.devices.len());
    for (atom, classes) in &by_atom {
        memo.clear();
        for (src, s_members) in &sources {
            let chain = match (src, atom) {
                (SrcClass::WrongSubnet(d), _) => {
                    for (class, d_members) in classes {
                        record(
                            Verdict::Dropped {
                                reason: Reason::WrongSubnet,
                                at: *d,
                            },
                            src,
                            class,
                            s_members,
                            d_members,
                        );
                    }
                    continue;
                }
                (_, None) => None,
                (_, Some((v6, index))) => {
                    let rep = atoms.representative(*v6, *index);
                    Some(walk_chain(dp, src, s_members, rep, &mut memo))
                }
            };
            for (class, d_members) in classes {
                let verdict = match (class, &chain) {
                    (DstClass::WrongSubnet(x), _) => Verdict::Dropped {
                        reason: Reason::WrongSubnet,
                        at: *x,
                    },
                    (DstClass::Atom { node, kind, .. }, Some(chain)) => {
                        chain.verdict_for(dp, *node, *kind)
                    }
                    (DstClass::Atom { .. }, None) => continue,
                };
                record(verdict, src, class, s_members, d_members);
            }
        }
    }
    let unreachable = groups
        .into_iter()
        .filter(|(_, (count, _))| *count > 0)
        .map(
            |((reason, stopped_at), (count, example))| UnreachableGroup {
                reason,
                stopped_at,
                count,
                example,
            },
        )
        .collect();
    let pairs = (from.len() as u64) * (to.len() as u64) - self_total;
    Reachability {
        pairs,
        reachable,
        unreachable,
    }
}

fn known<'a>(dp: &'a Dataplane, keys: &[PodKey]) -> Vec<&'a PodInfo> {
    let mut out: Vec<&PodInfo> = keys.iter().filter_map(|k| dp.pod(*k)).collect();
    out.sort_by_key(|p| p.key);
    out.dedup_by_key(|p| p.key);
    out
}

/// The smallest pair of distinct pods of a cell (both lists sorted and without
/// duplicates); `None` when the cell is only a pod with itself.
fn smallest_pair(s: &[PodKey], d: &[PodKey]) -> Option<(PodKey, PodKey)> {
    let (s0, d0) = (*s.first()?, *d.first()?);
    if s0 != d0 {
        return Some((s0, d0));
    }
    match (d.get(1), s.get(1)) {
        (Some(d1), _) => Some((s0, *d1)),
        (None, Some(s1)) => Some((*s1, d0)),
        (None, None) => None,
    }
}

/// Sources that behave alike for every destination.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum SrcClass {
    /// Spiderpool pods outside their segment: every pair stops at their node.
    WrongSubnet(DeviceId),
    /// Calico pods: their node's FIB decides.
    Node(DeviceId),
    /// Spiderpool pods: their own table (segment, gateway) decides first.
    Segment {
        device: DeviceId,
        gateway: Option<IpAddr>,
    },
}

impl SrcClass {
    fn of(p: &PodInfo) -> SrcClass {
        match p.attachment {
            _ if p.wrong_subnet => SrcClass::WrongSubnet(p.device),
            Attachment::Calico => SrcClass::Node(p.device),
            Attachment::Segment { gateway } => SrcClass::Segment {
                device: p.device,
                gateway,
            },
        }
    }
}

/// How a destination pod is reached once the packet is near it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum DstKind {
    /// Delivered by a `Local` entry on its node.
    Local,
    /// Owner of its address on this rack's segment.
    Segment(RackId),
    /// Neither (a Calico pod whose node lacks its local route).
    Unreachable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum DstClass {
    WrongSubnet(DeviceId),
    Atom {
        v6: bool,
        atom: usize,
        node: DeviceId,
        kind: DstKind,
    },
}

impl DstClass {
    fn of(dp: &Dataplane, atoms: &Atoms, p: &PodInfo) -> DstClass {
        if p.wrong_subnet {
            return DstClass::WrongSubnet(p.device);
        }
        let (v6, atom) = atoms.atom_of(p.ip);
        let host = IpNet::from(p.ip);
        let kind = match p.attachment {
            Attachment::Calico => {
                let local = dp
                    .fibs
                    .get(p.device.index())
                    .and_then(|f| f.overlay.get(host).copied());
                if local == Some(Stored::Local(p.key)) {
                    DstKind::Local
                } else {
                    DstKind::Unreachable
                }
            }
            Attachment::Segment { .. } => {
                if dp.owner(p.rack, p.ip) == Some(super::dataplane::Owner::Pod(p.key)) {
                    DstKind::Segment(p.rack)
                } else {
                    DstKind::Unreachable
                }
            }
        };
        DstClass::Atom {
            v6,
            atom,
            node: p.device,
            kind,
        }
    }

    fn atom(&self) -> Option<(bool, usize)> {
        match self {
            DstClass::WrongSubnet(_) => None,
            DstClass::Atom { v6, atom, .. } => Some((*v6, *atom)),
        }
    }
}

/// The sorted starts of the atoms of each family.
struct Atoms {
    v4: Vec<u128>,
    v6: Vec<u128>,
}

fn key(addr: IpAddr) -> (bool, u128) {
    match addr {
        IpAddr::V4(a) => (false, u128::from(u32::from(a))),
        IpAddr::V6(a) => (true, u128::from(a)),
    }
}

impl Atoms {
    fn new(dp: &Dataplane) -> Atoms {
        let mut v4 = vec![0u128];
        let mut v6 = vec![0u128];
        for p in dp.boundary_prefixes() {
            let (is_v6, start) = key(p.network());
            let (_, end) = key(p.broadcast());
            let list = if is_v6 { &mut v6 } else { &mut v4 };
            list.push(start);
            let max = if is_v6 {
                u128::MAX
            } else {
                u128::from(u32::MAX)
            };
            if end < max {
                list.push(end + 1);
            }
        }
        for list in [&mut v4, &mut v6] {
            list.sort_unstable();
            list.dedup();
        }
        Atoms { v4, v6 }
    }

    fn atom_of(&self, addr: IpAddr) -> (bool, usize) {
        let (v6, k) = key(addr);
        let list = if v6 { &self.v6 } else { &self.v4 };
        let i = list.partition_point(|s| *s <= k).saturating_sub(1);
        (v6, i)
    }

    fn representative(&self, v6: bool, atom: usize) -> IpAddr {
        if v6 {
            IpAddr::from(std::net::Ipv6Addr::from(
                self.v6.get(atom).copied().unwrap_or(0),
            ))
        } else {
            let v = self.v4.get(atom).copied().unwrap_or(0);
            IpAddr::from(std::net::Ipv4Addr::from(u32::try_from(v).unwrap_or(0)))
        }
    }
}

/// How the chain of one source class towards one atom ends.
#[derive(Clone, Copy, Debug)]
enum End {
    Delivered,
    Stop(Reason, DeviceId),
    /// On-link delivery at `at` on `rack`'s segment after `forwards` forwards.
    Handoff {
        at: DeviceId,
        rack: RackId,
        forwards: usize,
    },
}

struct Chain {
    /// Devices where the inner destination was looked up (a local pod would match there).
    natives: Vec<DeviceId>,
    end: End,
}

impl Chain {
    fn verdict_for(&self, dp: &Dataplane, node: DeviceId, kind: DstKind) -> Verdict {
        if kind == DstKind::Local && self.natives.contains(&node) {
            return Verdict::Delivered;
        }
        let dropped = |reason, at| Verdict::Dropped { reason, at };
        match self.end {
            End::Delivered => Verdict::Delivered,
            End::Stop(reason, at) => dropped(reason, at),
            End::Handoff { at, rack, forwards } => {
                if kind != DstKind::Segment(rack) {
                    return dropped(Reason::NoRoute, at);
                }
                if node == at {
                    return Verdict::Delivered;
                }
                match forward_check(dp, at, node, forwards) {
                    Some(Reason::NodeDown) => dropped(Reason::NodeDown, node),
                    Some(reason) => dropped(reason, at),
                    None => Verdict::Delivered,
                }
            }
        }
    }
}

/// Walks the chain of a source class for an atom, exactly as `walk::trace` would for any
/// destination of the atom, recording where local delivery could happen.
fn walk_chain(
    dp: &Dataplane,
    src: &SrcClass,
    members: &[PodKey],
    rep: IpAddr,
    memo: &mut Memo,
) -> Chain {
    let start = match src {
        SrcClass::WrongSubnet(d) | SrcClass::Node(d) | SrcClass::Segment { device: d, .. } => *d,
    };
    let mut natives = Vec::new();
    if dp.is_down(start) {
        return Chain {
            natives,
            end: End::Stop(Reason::NodeDown, start),
        };
    }
    let mut processed = match src {
        SrcClass::Segment { .. } => match members.first().and_then(|k| dp.pod(*k)) {
            Some(pod) => pod_table_step(dp, pod, rep, true),
            None => {
                return Chain {
                    natives,
                    end: End::Stop(Reason::NoRoute, start),
                };
            }
        },
        _ => cached(dp, memo, start, Mode::Native, rep),
    };
    let mut cur = start;
    let mut forwards = 0usize;
    loop {
        if processed.native_lookup {
            natives.push(cur);
        }
        let (next, mode, to_pod) = match processed.step {
            Step::Delivered => {
                return Chain {
                    natives,
                    end: End::Delivered,
                };
            }
            Step::Stop(reason) => {
                return Chain {
                    natives,
                    end: End::Stop(reason, cur),
                };
            }
            Step::Handoff(rack) => {
                return Chain {
                    natives,
                    end: End::Handoff {
                        at: cur,
                        rack,
                        forwards,
                    },
                };
            }
            Step::Forward { next, mode } => (next, mode, false),
            Step::ToSegmentPod { node } => (node, Mode::Native, true),
        };
        if let Some(reason) = forward_check(dp, cur, next, forwards) {
            let at = if reason == Reason::NodeDown {
                next
            } else {
                cur
            };
            return Chain {
                natives,
                end: End::Stop(reason, at),
            };
        }
        forwards += 1;
        if to_pod {
            return Chain {
                natives,
                end: End::Delivered,
            };
        }
        cur = next;
        processed = cached(dp, memo, cur, mode, rep);
        if forwards > HOP_LIMIT {
            // Unreachable: forward_check stops at the limit.
            return Chain {
                natives,
                end: End::Stop(Reason::Loop, cur),
            };
        }
    }
}

/// The per-device step for the atom, memoised: it does not depend on the tunnel's source.
fn cached(dp: &Dataplane, memo: &mut Memo, device: DeviceId, mode: Mode, rep: IpAddr) -> Processed {
    match mode {
        Mode::Native => match memo.native.get_mut(device.index()) {
            Some(Some(p)) => *p,
            Some(slot) => *slot.insert(process(dp, device, mode, rep, true)),
            None => process(dp, device, mode, rep, true),
        },
        Mode::Outer(o) => *memo
            .outer
            .entry((device, o.encap, o.dst))
            .or_insert_with(|| process(dp, device, mode, rep, true)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarding::testutil::*;
    use crate::forwarding::walk::{Source, trace};
    use crate::forwarding::{Attachment, Dataplane};
    use crate::ipam::calico::EncapMode;
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
        out.unreachable = groups
            .into_iter()
            .map(
                |((reason, stopped_at), (count, example))| UnreachableGroup {
                    reason,
                    stopped_at,
                    count,
                    example,
                },
            )
            .collect();
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

    fn keys(dp: &Dataplane) -> Vec<PodKey> {
        dp.pods().map(|p| p.key).collect()
    }

    /// A small deterministic generator (SplitMix64) driven by proptest's seed.
    struct Gen(u64);
    impl Gen {
        fn next(&mut self) -> u64 {
            self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n.max(1) as u64) as usize
        }
        fn chance(&mut self, percent: u64) -> bool {
            self.next() % 100 < percent
        }
        fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
            xs[self.below(xs.len())]
        }
    }

    /// A random small cluster: 1–3 racks, random pods (Calico, borrowed, Spiderpool, some in
    /// the wrong subnet), missing and extra routes, blackholes, down nodes and links, and
    /// random encapsulation modes.
    fn scenario(seed: u64) -> (Topology, Dataplane) {
        let mut g = Gen(seed);
        let racks = 1 + g.below(3);
        let shape: Vec<u8> = (0..racks).map(|_| 1 + g.below(3) as u8).collect();
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
                t.node_mut(NodeId(i as u32)).bgp.ipv4_subnet =
                    Some(IpNet::new(ip, 32).expect("host"));
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
        for (k, addr, node, att) in &pods {
            b.pod(*k, *addr, NodeId(*node as u32), *att);
        }
        let shared = b.shared_table(shared_routes.clone());
        let hops: Vec<IpAddr> = t.devices.iter().map(|d| d.address).collect();
        let prefixes = [
            net("10.200.0.0/16"),
            net("10.200.1.0/24"),
            net("10.201.0.0/16"),
            net("0.0.0.0/0"),
        ];
        for i in 0..nodes {
            let d = t.nodes[i].device;
            if g.chance(85) {
                b.blackhole(d, block(i));
            }
            let mine: Vec<(IpNet, IpAddr)> = shared_routes
                .iter()
                .copied()
                .filter(|(p, nh)| *nh != t.nodes[i].ip && *p != block(i))
                .filter(|_| g.chance(85))
                .collect();
            b.learned_routes(d, shared, mine);
        }
        // Extra routes anywhere (routers too), some making loops.
        for _ in 0..g.below(5) {
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
        (t, b.build())
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
                    if let crate::forwarding::Action::Via { device, .. } = e.action {
                        prop_assert!(device != d);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod scale {
    use super::*;
    use crate::forwarding::testutil::topology;
    use crate::forwarding::{Attachment, Dataplane};
    use crate::ipam::calico::EncapMode;
    use crate::model::topology::NodeId;

    /// A rough timing on 1,000 nodes and 30,000 pods (run with `--release --ignored`).
    #[test]
    #[ignore = "timing, not a check"]
    fn thousand_nodes_thirty_thousand_pods() {
        let shape = [40u8; 25];
        let t = topology(&[&shape[..12], &shape[12..]]);
        let started = std::time::Instant::now();
        let mut b = Dataplane::builder(&t);
        b.pool(
            "10.64.0.0/12".parse().expect("pool"),
            EncapMode::CrossSubnet,
            EncapMode::Never,
        );
        let block = |i: usize| {
            IpNet::new(
                IpAddr::from(std::net::Ipv4Addr::from(0x0a40_0000u32 | ((i as u32) << 6))),
                26,
            )
            .expect("block")
        };
        let routes: Vec<(IpNet, IpAddr)> = t
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (block(i), n.ip))
            .collect();
        let shared = b.shared_table(routes);
        for (i, n) in t.nodes.iter().enumerate() {
            b.blackhole(n.device, block(i));
            b.use_shared(n.device, shared);
            for j in 0..30u32 {
                let ip = match block(i).network() {
                    IpAddr::V4(a) => IpAddr::from(std::net::Ipv4Addr::from(u32::from(a) + 1 + j)),
                    other => other,
                };
                b.pod(
                    PodKey((i * 100) as u64 + u64::from(j)),
                    ip,
                    NodeId(i as u32),
                    Attachment::Calico,
                );
            }
        }
        let dp = b.build();
        let built = started.elapsed();
        let r = all_pairs(&dp);
        eprintln!(
            "build {built:?}, all pairs {:?}: {} of {} reachable, {} groups",
            started.elapsed() - built,
            r.reachable,
            r.pairs,
            r.unreachable.len()
        );
        assert_eq!(r.reachable, r.pairs);
    }
}
