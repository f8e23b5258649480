//! Forwarding information bases: the entries a device forwards by, and longest-prefix match.
//!
//! A device's FIB is layered to keep memory close to linear in a Calico cluster, where every
//! node holds the same routes except its own (the route to node X's block is "via X" for
//! everyone): zero or more reference-counted [`SharedTable`]s, common to many devices, under a
//! small per-device overlay (connected subnets, the default route, local pods, blackholes for
//! its own blocks, routes it learned differently). For one prefix the overlay wins over the
//! shared tables, and an earlier shared table over a later one; an overlay `Withdrawn` marker
//! hides a shared prefix from this device (a route it did not learn, or could not resolve).
//!
//! Invariants: prefixes are stored canonical (host bits cleared); a lookup is a pure function
//! of the tables; `Withdrawn` only ever lives in an overlay and is never returned.
//! Learned routes are stored unresolved (`Learned { next_hop }`): resolving them to a directly
//! reachable device, and deciding encapsulation, is the dataplane's job (`dataplane.rs`),
//! because it depends on the device and on the destination's pool.
//! This module does not know the topology, pods or pools.

use std::net::IpAddr;
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use prefix_trie::PrefixMap;

use crate::model::topology::{DeviceId, RackId};

/// A pod, by the simulator's own id (the dataplane does not interpret it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodKey(pub u64);

/// The tunnel a Calico node puts a packet in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Encap {
    Ipip,
    Vxlan,
}

impl Encap {
    /// The word used in scenarios and reports (`ipip`, `vxlan`).
    pub fn as_str(self) -> &'static str {
        match self {
            Encap::Ipip => "ipip",
            Encap::Vxlan => "vxlan",
        }
    }
}

/// What a FIB entry does with a packet, as seen from one device (learned routes resolved).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum FibAction {
    /// A pod on this node.
    Local(PodKey),
    /// On-link: the rack segment; the packet goes to whichever device (or Spiderpool pod)
    /// owns the destination address on it.
    Connected(RackId),
    /// To a directly reachable device.
    Via {
        next_hop: IpAddr,
        device: DeviceId,
    },
    /// Encapsulated towards a Calico node (`remote` is its address); the outer packet is
    /// forwarded by the underlay.
    Tunnel {
        encap: Encap,
        remote: IpAddr,
        device: DeviceId,
    },
    Blackhole,
    /// Out of the fabric to an external place attached to this router (its index in
    /// `Topology::externals`).
    External(u32),
}

/// Where an entry comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Origin {
    /// A connected segment.
    Connected,
    /// A node's default route via its rack gateway.
    Default,
    /// A router's rack subnet routed over the fabric (shortest path).
    Fabric,
    /// A pod's /32 on its node.
    Local,
    /// A blackhole (a Calico node's own blocks).
    Blackhole,
    /// A learned route: a BGP best route, or a route Felix programs in VXLAN mode.
    Learned,
    /// A Spiderpool pod's own table (its segment, or its gateway); never in a device's FIB.
    PodTable,
    /// An external's CIDR (SPEC §7): out of the fabric at its attachment router, towards it
    /// along the shortest path on the other routers.
    External,
}

/// One FIB entry of one device, resolved; what `podnet routes --table fib` lists and what a
/// trace hop records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FibEntry {
    pub prefix: IpNet,
    pub action: FibAction,
    pub origin: Origin,
    /// For learned routes: the route's own next hop (a BGP NEXT_HOP), before resolution.
    pub learned_next_hop: Option<IpAddr>,
}

/// A stored entry: learned routes are kept unresolved.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Stored {
    /// The /32 (/128) of a pod on this node; which pod is the dataplane's to say (the pod
    /// holding the address), so that a FIB names no pod and is the same for any naming.
    Local,
    Connected(RackId),
    /// A static route already resolved to an adjacent device (default or fabric).
    Via {
        next_hop: IpAddr,
        device: DeviceId,
        origin: Origin,
    },
    Blackhole,
    /// An external's CIDR at its attachment router (index in `Topology::externals`).
    External(u32),
    Learned {
        next_hop: IpAddr,
    },
    /// Hides the shared tables' entry for this exact prefix.
    Withdrawn,
}

impl Stored {
    /// Which of two entries for the same prefix in one overlay is installed (lower wins),
    /// mirroring Linux/BIRD preferences: kernel connected and local routes, then statics and
    /// blackholes, then BGP.
    fn rank(&self) -> u8 {
        match self {
            Stored::Connected(_) => 0,
            Stored::Local => 1,
            Stored::Via { .. } => 2,
            Stored::Blackhole | Stored::External(_) => 3,
            Stored::Learned { .. } => 4,
            Stored::Withdrawn => 5,
        }
    }

    pub(crate) fn is_igp(&self) -> bool {
        matches!(self, Stored::Connected(_) | Stored::Via { .. })
    }
}

/// An IPv4 and an IPv6 prefix trie.
#[derive(Clone, Default)]
pub(crate) struct Table {
    v4: PrefixMap<Ipv4Net, Stored>,
    v6: PrefixMap<Ipv6Net, Stored>,
}

fn host_net(addr: IpAddr) -> IpNet {
    match addr {
        IpAddr::V4(a) => IpNet::V4(Ipv4Net::from(a)),
        IpAddr::V6(a) => IpNet::V6(Ipv6Net::from(a)),
    }
}

impl Table {
    pub(crate) fn len(&self) -> usize {
        self.v4.len() + self.v6.len()
    }

    pub(crate) fn v4_map(&self) -> &PrefixMap<Ipv4Net, Stored> {
        &self.v4
    }

    pub(crate) fn v6_map(&self) -> &PrefixMap<Ipv6Net, Stored> {
        &self.v6
    }

    /// Inserts, keeping the better-ranked entry when the prefix is already there.
    pub(crate) fn insert_ranked(&mut self, prefix: IpNet, entry: Stored) {
        let keep_old = self
            .get(prefix)
            .is_some_and(|old| old.rank() <= entry.rank());
        if !keep_old {
            self.insert(prefix, entry);
        }
    }

    pub(crate) fn insert(&mut self, prefix: IpNet, entry: Stored) {
        match prefix.trunc() {
            IpNet::V4(p) => {
                self.v4.insert(p, entry);
            }
            IpNet::V6(p) => {
                self.v6.insert(p, entry);
            }
        }
    }

    pub(crate) fn remove(&mut self, prefix: IpNet) {
        match prefix.trunc() {
            IpNet::V4(p) => {
                self.v4.remove(&p);
            }
            IpNet::V6(p) => {
                self.v6.remove(&p);
            }
        }
    }

    pub(crate) fn get(&self, prefix: IpNet) -> Option<&Stored> {
        match prefix.trunc() {
            IpNet::V4(p) => self.v4.get(&p),
            IpNet::V6(p) => self.v6.get(&p),
        }
    }

    /// Longest-prefix match for one address.
    #[inline]
    pub(crate) fn lpm(&self, addr: IpAddr) -> Option<(IpNet, &Stored)> {
        match addr {
            IpAddr::V4(a) => self
                .v4
                .get_lpm(&Ipv4Net::from(a))
                .map(|(p, e)| (IpNet::V4(p), e)),
            IpAddr::V6(a) => self
                .v6
                .get_lpm(&Ipv6Net::from(a))
                .map(|(p, e)| (IpNet::V6(p), e)),
        }
    }

    /// Every entry covering `addr`, shortest prefix first.
    pub(crate) fn cover(&self, addr: IpAddr) -> Vec<(IpNet, Stored)> {
        match host_net(addr) {
            IpNet::V4(p) => self.v4.cover(&p).map(|(p, e)| (IpNet::V4(p), *e)).collect(),
            IpNet::V6(p) => self.v6.cover(&p).map(|(p, e)| (IpNet::V6(p), *e)).collect(),
        }
    }

    /// Every entry, IPv4 first, each family in prefix order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (IpNet, &Stored)> {
        self.v4
            .iter()
            .map(|(p, e)| (IpNet::V4(p), e))
            .chain(self.v6.iter().map(|(p, e)| (IpNet::V6(p), e)))
    }
}

/// An IPv4 table compiled for lookups: the address space cut into disjoint ranges, each
/// with its longest match, searched by binary search (after a direct index on the top 16
/// bits for large tables). About 3× faster than walking the trie; built once, read-only.
#[derive(Clone, Default)]
pub(crate) struct Flat4 {
    /// Range starts, ascending; `starts[0] == 0`.
    starts: Vec<u32>,
    /// Per range, the index of its longest match in `entries`, or `NONE`.
    hits: Vec<u32>,
    entries: Vec<(Ipv4Net, Stored)>,
    /// Empty, or 65,537 offsets: the ranges starting in /16 number `t` are
    /// `top[t]..top[t + 1]`.
    top: Vec<u32>,
}

const NONE: u32 = u32::MAX;
/// Tables with more entries than this get the /16 index.
const TOP_INDEX_MIN: usize = 256;

impl Flat4 {
    pub(crate) fn compile(trie: &PrefixMap<Ipv4Net, Stored>) -> Flat4 {
        let entries: Vec<(Ipv4Net, Stored)> = trie.iter().map(|(p, e)| (p, *e)).collect();
        let mut bounds: Vec<u32> = vec![0];
        for (p, _) in &entries {
            bounds.push(u32::from(p.network()));
            if let Some(next) = u32::from(p.broadcast()).checked_add(1) {
                bounds.push(next);
            }
        }
        bounds.sort_unstable();
        bounds.dedup();
        let index_of = |p: Ipv4Net| -> u32 {
            entries
                .binary_search_by(|(q, _)| q.cmp(&p))
                .map_or(NONE, |i| i as u32)
        };
        let mut starts = Vec::with_capacity(bounds.len());
        let mut hits: Vec<u32> = Vec::with_capacity(bounds.len());
        for b in bounds {
            let hit = trie
                .get_lpm(&Ipv4Net::from(std::net::Ipv4Addr::from(b)))
                .map_or(NONE, |(p, _)| index_of(p));
            if hits.last() != Some(&hit) {
                starts.push(b);
                hits.push(hit);
            }
        }
        let top = if entries.len() > TOP_INDEX_MIN {
            (0..=65536u64)
                .map(|t| starts.partition_point(|s| u64::from(*s) < t << 16) as u32)
                .collect()
        } else {
            Vec::new()
        };
        Flat4 {
            starts,
            hits,
            entries,
            top,
        }
    }

    /// The compiled table's entries, in prefix order.
    pub(crate) fn entries(&self) -> &[(Ipv4Net, Stored)] {
        &self.entries
    }

    #[inline]
    pub(crate) fn lpm(&self, a: u32) -> Option<(Ipv4Net, Stored)> {
        let i = if self.top.is_empty() {
            self.starts.partition_point(|s| *s <= a)
        } else {
            let t = (a >> 16) as usize;
            let lo = *self.top.get(t)? as usize;
            let hi = *self.top.get(t + 1)? as usize;
            lo + self.starts.get(lo..hi)?.partition_point(|s| *s <= a)
        };
        let hit = *self.hits.get(i.checked_sub(1)?)?;
        self.entries.get(hit as usize).copied()
    }
}

/// A table of learned routes common to many devices (held behind an `Arc`).
#[derive(Clone, Default)]
pub(crate) struct SharedTable {
    pub(crate) table: Table,
    pub(crate) flat: Flat4,
    /// The prefixes of each next hop, so that a device can withdraw the routes whose next
    /// hop it cannot resolve without scanning the table.
    pub(crate) by_next_hop: std::collections::BTreeMap<IpAddr, Vec<IpNet>>,
}

impl SharedTable {
    pub(crate) fn from_routes(routes: impl IntoIterator<Item = (IpNet, IpAddr)>) -> SharedTable {
        let mut table = Table::default();
        for (prefix, next_hop) in routes {
            table.insert(prefix, Stored::Learned { next_hop });
        }
        let mut by_next_hop: std::collections::BTreeMap<IpAddr, Vec<IpNet>> = Default::default();
        for (prefix, e) in table.iter() {
            if let Stored::Learned { next_hop } = e {
                by_next_hop.entry(*next_hop).or_default().push(prefix);
            }
        }
        let flat = Flat4::compile(&table.v4);
        SharedTable {
            table,
            flat,
            by_next_hop,
        }
    }

    pub(crate) fn next_hop_of(&self, prefix: IpNet) -> Option<IpAddr> {
        match self.table.get(prefix) {
            Some(Stored::Learned { next_hop }) => Some(*next_hop),
            _ => None,
        }
    }
}

/// One device's FIB: shared tables under a private overlay.
#[derive(Clone, Default)]
pub(crate) struct DeviceFib {
    pub(crate) overlay: Table,
    pub(crate) shared: Vec<Arc<SharedTable>>,
    /// The overlay's IPv4 part compiled, once the overlay is final.
    pub(crate) flat: Option<Flat4>,
}

impl DeviceFib {
    /// Longest-prefix match over the layers. With `skip_local`, `Local` entries are ignored
    /// (the equivalence-class computation handles local delivery per pod).
    #[inline]
    pub(crate) fn lookup(&self, addr: IpAddr, skip_local: bool) -> Option<(IpNet, Stored)> {
        let best = match (addr, &self.flat) {
            (IpAddr::V4(a), Some(flat)) => {
                let a = u32::from(a);
                let mut best = flat.lpm(a);
                for t in &self.shared {
                    if let Some((p, e)) = t.flat.lpm(a)
                        && best.is_none_or(|(b, _)| p.prefix_len() > b.prefix_len())
                    {
                        best = Some((p, e));
                    }
                }
                best.map(|(p, e)| (IpNet::V4(p), e))
            }
            _ => {
                let mut best: Option<(IpNet, Stored)> =
                    self.overlay.lpm(addr).map(|(p, e)| (p, *e));
                for t in &self.shared {
                    if let Some((p, e)) = t.table.lpm(addr)
                        && best.is_none_or(|(b, _)| p.prefix_len() > b.prefix_len())
                    {
                        best = Some((p, *e));
                    }
                }
                best
            }
        };
        match best {
            Some((_, Stored::Withdrawn)) => self.lookup_slow(addr, skip_local),
            Some((_, Stored::Local)) if skip_local => self.lookup_slow(addr, skip_local),
            other => other,
        }
    }

    /// The general case: every covering prefix of every layer, longest first.
    fn lookup_slow(&self, addr: IpAddr, skip_local: bool) -> Option<(IpNet, Stored)> {
        let overlay = self.overlay.cover(addr);
        let shared: Vec<Vec<(IpNet, Stored)>> =
            self.shared.iter().map(|t| t.table.cover(addr)).collect();
        let max_len: u8 = match addr {
            IpAddr::V4(_) => 32,
            IpAddr::V6(_) => 128,
        };
        for len in (0..=max_len).rev() {
            if let Some((p, e)) = overlay.iter().find(|(p, _)| p.prefix_len() == len) {
                match e {
                    Stored::Withdrawn => continue,
                    Stored::Local if skip_local => {}
                    _ => return Some((*p, *e)),
                }
                // A skipped local entry still hides the shared tables' entry of its prefix.
                continue;
            }
            for t in &shared {
                if let Some(found) = t.iter().find(|(p, _)| p.prefix_len() == len) {
                    return Some(*found);
                }
            }
        }
        None
    }

    /// Compiles the overlay for fast IPv4 lookups; call again after changing it.
    pub(crate) fn compile(&mut self) {
        self.flat = Some(Flat4::compile(&self.overlay.v4));
    }

    /// The installed entries, unresolved, in prefix order (IPv4 first): overlay entries,
    /// then shared entries no earlier layer has the same prefix for.
    pub(crate) fn stored_entries(&self) -> Vec<(IpNet, Stored)> {
        let mut out: Vec<(IpNet, Stored)> = self
            .overlay
            .iter()
            .filter(|(_, e)| !matches!(e, Stored::Withdrawn))
            .map(|(p, e)| (p, *e))
            .collect();
        for (i, t) in self.shared.iter().enumerate() {
            for (p, e) in t.table.iter() {
                let hidden = self.overlay.get(p).is_some()
                    || self.shared[..i].iter().any(|s| s.table.get(p).is_some());
                if !hidden {
                    out.push((p, *e));
                }
            }
        }
        out.sort_by_key(|(p, _)| *p);
        out
    }

    /// How many entries [`DeviceFib::stored_entries`] returns, without listing the shared
    /// tables when the device uses one (the common case).
    pub(crate) fn len(&self) -> usize {
        let overlay_real = self
            .overlay
            .iter()
            .filter(|(_, e)| !matches!(e, Stored::Withdrawn))
            .count();
        match self.shared.as_slice() {
            [] => overlay_real,
            [t] => {
                let hidden = self
                    .overlay
                    .iter()
                    .filter(|(p, _)| t.table.get(*p).is_some())
                    .count();
                overlay_real + t.table.len() - hidden
            }
            _ => self.stored_entries().len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn net(s: &str) -> IpNet {
        s.parse().expect("test prefix")
    }

    fn via(n: u32) -> Stored {
        Stored::Learned {
            next_hop: IpAddr::from([10, 0, 0, n as u8]),
        }
    }

    /// The oracle: smoltcp's route lookup, a linear scan keeping the longest match.
    fn linear(entries: &[(IpNet, Stored)], addr: IpAddr) -> Option<(IpNet, Stored)> {
        let mut best: Option<(IpNet, Stored)> = None;
        for (p, e) in entries {
            if p.contains(&addr) && best.is_none_or(|(b, _)| p.prefix_len() > b.prefix_len()) {
                best = Some((*p, *e));
            }
        }
        best
    }

    /// The layered semantics written out flat: the overlay's prefixes (withdrawn ones
    /// removed), then shared prefixes no earlier layer has.
    fn flatten(fib: &DeviceFib, skip_local: bool) -> Vec<(IpNet, Stored)> {
        let mut hidden: Vec<IpNet> = Vec::new();
        let mut out = Vec::new();
        for (p, e) in fib.overlay.iter() {
            hidden.push(p);
            match e {
                Stored::Withdrawn => {}
                Stored::Local if skip_local => {}
                _ => out.push((p, *e)),
            }
        }
        for t in &fib.shared {
            for (p, e) in t.table.iter() {
                if !hidden.contains(&p) {
                    hidden.push(p);
                    out.push((p, *e));
                }
            }
        }
        out
    }

    #[test]
    fn overlay_wins_and_withdrawn_uncovers_the_shorter_prefix() {
        let shared = SharedTable::from_routes([
            (net("10.1.0.0/16"), IpAddr::from([10, 0, 0, 1])),
            (net("10.1.2.0/24"), IpAddr::from([10, 0, 0, 2])),
        ]);
        let mut fib = DeviceFib {
            shared: vec![Arc::new(shared)],
            ..DeviceFib::default()
        };
        fib.overlay.insert(net("10.1.2.0/24"), Stored::Blackhole);
        let a: IpAddr = "10.1.2.3".parse().expect("addr");
        assert_eq!(
            fib.lookup(a, false),
            Some((net("10.1.2.0/24"), Stored::Blackhole))
        );
        fib.overlay.insert(net("10.1.2.0/24"), Stored::Withdrawn);
        fib.compile();
        assert_eq!(fib.lookup(a, false), Some((net("10.1.0.0/16"), via(1))));
        assert_eq!(fib.len(), 1);
        assert_eq!(fib.stored_entries().len(), 1);
    }

    #[test]
    fn ranked_insert_keeps_connected_over_learned() {
        let mut t = Table::default();
        t.insert_ranked(net("10.0.0.0/24"), Stored::Connected(RackId(0)));
        t.insert_ranked(net("10.0.0.0/24"), via(3));
        assert_eq!(
            t.get(net("10.0.0.0/24")),
            Some(&Stored::Connected(RackId(0)))
        );
        t.insert_ranked(net("10.9.0.0/24"), Stored::Withdrawn);
        t.insert_ranked(net("10.9.0.0/24"), Stored::Blackhole);
        assert_eq!(t.get(net("10.9.0.0/24")), Some(&Stored::Blackhole));
    }

    fn arb_prefix() -> impl Strategy<Value = IpNet> {
        // Addresses in a small space so prefixes overlap often.
        (0u32..64, 0u8..=32, prop::bool::weighted(0.15)).prop_map(|(x, len, v6)| {
            if v6 {
                let a = std::net::Ipv6Addr::from(0xfd00_u128 << 112 | u128::from(x) << 100);
                IpNet::V6(Ipv6Net::new(a, len * 4).expect("len").trunc())
            } else {
                let a = std::net::Ipv4Addr::from(0x0a00_0000 | x << 20 | x << 3);
                IpNet::V4(Ipv4Net::new(a, len).expect("len").trunc())
            }
        })
    }

    fn arb_stored() -> impl Strategy<Value = Stored> {
        prop_oneof![
            (0u32..8).prop_map(via),
            Just(Stored::Blackhole),
            Just(Stored::Local),
            Just(Stored::Connected(RackId(1))),
            Just(Stored::Withdrawn),
        ]
    }

    fn arb_addr() -> impl Strategy<Value = IpAddr> {
        prop_oneof![
            (0u32..64, any::<u32>()).prop_map(|(x, low)| IpAddr::from(std::net::Ipv4Addr::from(
                0x0a00_0000 | x << 20 | (low & 0x000f_ffff)
            ))),
            any::<u32>().prop_map(|a| IpAddr::from(std::net::Ipv4Addr::from(a))),
            (0u32..64, any::<u64>()).prop_map(|(x, low)| IpAddr::from(std::net::Ipv6Addr::from(
                0xfd00_u128 << 112 | u128::from(x) << 100 | u128::from(low)
            ))),
        ]
    }

    proptest! {
        /// LPM over one trie equals a linear scan, for random tables and addresses.
        #[test]
        fn trie_lpm_equals_linear_scan(
            entries in prop::collection::vec((arb_prefix(), arb_stored()), 0..60),
            addrs in prop::collection::vec(arb_addr(), 1..40),
        ) {
            let mut t = Table::default();
            let mut flat: Vec<(IpNet, Stored)> = Vec::new();
            for (p, e) in entries {
                t.insert(p, e);
                flat.retain(|(q, _)| *q != p);
                flat.push((p, e));
            }
            let compiled = Flat4::compile(&t.v4);
            for a in addrs {
                prop_assert_eq!(t.lpm(a).map(|(p, e)| (p, *e)), linear(&flat, a));
                if let IpAddr::V4(v4) = a {
                    prop_assert_eq!(
                        compiled.lpm(u32::from(v4)).map(|(p, e)| (IpNet::V4(p), e)),
                        linear(&flat, a)
                    );
                }
            }
        }

        /// A large compiled table (with its /16 index) equals a linear scan.
        #[test]
        fn compiled_large_table_equals_linear_scan(
            entries in prop::collection::vec(
                (any::<u32>(), 8u8..=32, 0u32..8, prop::bool::ANY), 300..500),
            addrs in prop::collection::vec(any::<u32>(), 1..100),
        ) {
            let mut t = Table::default();
            let mut flat: Vec<(IpNet, Stored)> = Vec::new();
            let mut probes: Vec<u32> = addrs;
            for (a, len, n, near) in entries {
                // Half of the prefixes cluster in 10.64.0.0/12, like a pool's blocks.
                let a = if near { 0x0a40_0000 | (a & 0x000f_ffff) } else { a };
                let p = IpNet::V4(Ipv4Net::new(std::net::Ipv4Addr::from(a), len).expect("len").trunc());
                t.insert(p, via(n));
                flat.retain(|(q, _)| *q != p);
                flat.push((p, via(n)));
                probes.push(a);
                probes.push(a.wrapping_sub(1));
            }
            let compiled = Flat4::compile(&t.v4);
            prop_assert_eq!(compiled.top.is_empty(), t.len() <= TOP_INDEX_MIN);
            for a in probes {
                let addr = IpAddr::from(std::net::Ipv4Addr::from(a));
                prop_assert_eq!(
                    compiled.lpm(a).map(|(p, e)| (IpNet::V4(p), e)),
                    linear(&flat, addr)
                );
            }
        }

        /// The layered lookup equals a linear scan over the flattened layers, with and
        /// without local entries, and `len` counts the flattened entries.
        #[test]
        fn layered_lookup_equals_linear_scan_of_the_flattened_fib(
            overlay in prop::collection::vec((arb_prefix(), arb_stored()), 0..20),
            shared in prop::collection::vec(
                prop::collection::vec((arb_prefix(), 0u32..8), 0..40), 0..3),
            addrs in prop::collection::vec(arb_addr(), 1..40),
        ) {
            let mut fib = DeviceFib::default();
            for (p, e) in overlay {
                fib.overlay.insert(p, e);
            }
            for routes in shared {
                fib.shared.push(Arc::new(SharedTable::from_routes(
                    routes.into_iter().map(|(p, n)| (p, IpAddr::from([10, 0, 0, n as u8]))),
                )));
            }
            let uncompiled = fib.clone();
            fib.compile();
            let flat = flatten(&fib, false);
            let flat_no_local = flatten(&fib, true);
            prop_assert_eq!(fib.len(), flat.len());
            prop_assert_eq!(fib.stored_entries().len(), flat.len());
            for a in addrs {
                prop_assert_eq!(fib.lookup(a, false), linear(&flat, a));
                prop_assert_eq!(uncompiled.lookup(a, false), linear(&flat, a));
                prop_assert_eq!(fib.lookup(a, true), linear(&flat_no_local, a));
            }
        }
    }
}
