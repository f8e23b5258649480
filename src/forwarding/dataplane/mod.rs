//! The dataplane at one instant: every device's FIB, the pods and pools that forwarding needs,
//! and a snapshot of the underlay's state (links up or down, nodes down), built by the
//! simulator through [`DataplaneBuilder`].
//!
//! What the builder derives from the topology by itself (SPEC §3.5): each node's connected
//! rack subnet and its default route via the rack gateway (the ToR); each ToR's connected
//! rack subnet; on every router, every other rack subnet routed over the fabric along the
//! shortest path of links that are up (`Topology::shortest_path_tree`, equal costs broken by
//! device name). What the simulator passes: pools (for encapsulation),
//! pods, blackholes, and learned routes (BGP best routes, or Felix's VXLAN routes) as plain
//! `(prefix, next hop address)` data, per device or in shared tables.
//!
//! Invariants: a learned route is installed only if its next hop resolves, through the
//! device's connected and static routes, to another device that is directly reachable
//! (recursive resolution, as BIRD does); so every entry listed by [`Dataplane::entries`] has
//! a concrete action, and [`Dataplane::fib_len`] counts exactly those. A dataplane is its
//! [`Routing`] and its pods: the routing names no pod — a `Local` entry is the /32 of the pod
//! holding that address, a segment's pod owner likewise, both found through the pods — so
//! dataplanes whose pods sit at the same places under other names can share one. The dataplane
//! is immutable once built; the simulator builds a new one after the state changes.
//! This module does not run BGP or IPAM, and does not forward packets (`walk.rs` does).
//!
//! Layout: the types, the queries and next-hop resolution are here; `build` fills it (and
//! [`DataplaneMemo`] shares routings between builds); `same` says whether two dataplanes
//! differ only in the names of their pods.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::fib::{
    DeviceFib, Encap, FibAction, FibEntry, Flat4, Origin, PodKey, SharedTable, Stored, Table,
};
use crate::model::hash::FastMap;
use crate::model::network::EncapMode;
use crate::model::topology::{DeviceId, DeviceKind, LinkKind, NodeId, RackId, Topology};

mod build;
mod same;

pub use build::DataplaneMemo;

/// How a pod is attached to the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Attachment {
    /// Calico: routed by its node (a `Local` /32 in the node's FIB).
    Calico,
    /// Spiderpool (macvlan): on its node's rack segment; it leaves the segment through its
    /// pool's gateway, or the rack gateway when the pool has none.
    Segment { gateway: Option<IpAddr> },
    /// `hostNetwork: true`: the pod is its node's host namespace. Its address is the node's
    /// (shared by every host-network pod of the node, never a duplicate); a packet for it is
    /// delivered to the node, and one from it leaves from the node as host traffic.
    Host,
}

/// A pod the dataplane knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodInfo {
    pub key: PodKey,
    pub ip: IpAddr,
    pub node: NodeId,
    /// The node's device.
    pub device: DeviceId,
    pub rack: RackId,
    pub attachment: Attachment,
    /// A segment-attached pod whose address lies outside its rack's subnet (SPEC §3.3).
    pub wrong_subnet: bool,
}

/// An IP pool's encapsulation settings (Calico `ipipMode`, `vxlanMode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PoolEncap {
    pub cidr: IpNet,
    pub ipip: EncapMode,
    pub vxlan: EncapMode,
    /// `natOutgoing`: traffic from its pods leaving every pool is masqueraded to the node's
    /// address (REFERENCE-policy §3.5).
    pub nat_outgoing: bool,
}

/// An external place as forwarding sees it (SPEC §7).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExternalInfo {
    pub cidr: IpNet,
    pub attach: DeviceId,
}

/// A set of learned routes shared by several devices, made by
/// [`DataplaneBuilder::shared_table`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SharedTableId(usize);

/// Who owns an address on a rack segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Owner {
    Device(DeviceId),
    Pod(PodKey),
}

/// An [`Owner`] as the dataplane stores it: a pod is the one holding the address
/// (`pod_by_ip`), so that the segments name no pod, as the FIBs do not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Holder {
    Device(DeviceId),
    Pod,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct DeviceInfo {
    pub(crate) kind: DeviceKind,
    pub(crate) address: IpAddr,
    /// The rack segment it is attached to (nodes and ToRs).
    pub(crate) rack: Option<RackId>,
    /// Not deleted.
    pub(crate) present: bool,
    /// A node that is down (`nodeDown`).
    pub(crate) down: bool,
    /// A node's subnet for `CrossSubnet`: `bgp.ipv4_subnet`, else its rack's subnet.
    pub(crate) node_subnet: Option<IpNet>,
    /// Its access link is up (devices on a segment).
    pub(crate) access_up: bool,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct RackInfo {
    pub(crate) subnet: IpNet,
    pub(crate) gateway: IpAddr,
}

/// Every device's FIB plus what forwarding needs to know about pods, pools and the underlay:
/// its [`Routing`], which names no pod, and the pods. Reads of the routing's fields go
/// through `Deref`.
#[derive(Clone)]
pub struct Dataplane {
    /// Shared by the dataplanes of one forwarding state whose pods are named differently
    /// (a sweep's seed variants, [`DataplaneMemo`]); all of them hold pods at the same places.
    routing: Arc<Routing>,
    pub(crate) pods: BTreeMap<PodKey, PodInfo>,
    pod_by_ip: FastMap<IpAddr, PodKey>,
}

impl std::ops::Deref for Dataplane {
    type Target = Routing;

    fn deref(&self) -> &Routing {
        &self.routing
    }
}

/// The part of a [`Dataplane`] that is the same however its pods are named: the FIBs (a
/// `Local` entry says "the pod at this address"), the segments' owners (likewise), pools,
/// the underlay's state.
#[derive(Clone)]
pub struct Routing {
    pub(crate) devices: Vec<DeviceInfo>,
    pub(crate) racks: Vec<RackInfo>,
    pub(crate) fibs: Vec<DeviceFib>,
    /// Per device, its connected and static routes: what learned next hops resolve through.
    igp: Vec<Table>,
    /// The same, compiled for IPv4 once built.
    igp_flat: Vec<Option<Flat4>>,
    lens: Vec<usize>,
    /// Fabric and inter-zone links by their ends (smaller id first): up or not.
    links: FastMap<(DeviceId, DeviceId), bool>,
    pools: Vec<PoolEncap>,
    owners: FastMap<(RackId, IpAddr), Holder>,
    device_by_address: FastMap<IpAddr, DeviceId>,
    /// `Topology::externals`, in the same order.
    externals: Vec<ExternalInfo>,
    /// Per (router, learned prefix), its equal-cost next hops when the fabric does ECMP
    /// (`forwarding::ecmp`); empty otherwise.
    pub(crate) equal_paths: BTreeMap<(DeviceId, IpNet), Vec<IpAddr>>,
}

/// Fills a [`Dataplane`]; see the module documentation for what it derives by itself.
pub struct DataplaneBuilder {
    /// What the topology alone gives (connected, default, fabric and external routes).
    base: Routing,
    /// Everything told since, in order.
    recipe: Vec<build::Call>,
    shared_tables: usize,
    pods: BTreeMap<PodKey, PodInfo>,
    pod_by_ip: FastMap<IpAddr, PodKey>,
    /// Per node (by id), its device and rack while the node is present.
    node_devices: Vec<Option<(DeviceId, RackId)>>,
}

fn host(addr: IpAddr) -> IpNet {
    match addr {
        IpAddr::V4(a) => IpNet::V4(Ipv4Net::from(a)),
        IpAddr::V6(a) => IpNet::V6(Ipv6Net::from(a)),
    }
}

fn default_route(addr: IpAddr) -> IpNet {
    match addr {
        IpAddr::V4(_) => IpNet::V4(Ipv4Net::default()),
        IpAddr::V6(_) => IpNet::V6(Ipv6Net::default()),
    }
}

impl std::fmt::Debug for Dataplane {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dataplane")
            .field("devices", &self.devices.len())
            .field("pods", &self.pods.len())
            .finish_non_exhaustive()
    }
}

impl Dataplane {
    /// Starts a dataplane for the topology as it is now (links, nodes down, nodes deleted).
    pub fn builder(topology: &Topology) -> DataplaneBuilder {
        DataplaneBuilder::new(topology)
    }

    /// The entry a device forwards `addr` by, resolved (encapsulation decided by `addr`'s
    /// pool); `None` when nothing matches (or the device is unknown).
    pub fn lookup(&self, device: DeviceId, addr: IpAddr) -> Option<FibEntry> {
        self.lookup_with(device, addr, Some(addr), false)
    }

    /// Longest-prefix match only: the prefix of the entry `addr` matches on `device`,
    /// without resolving it (what the LPM benchmark measures).
    pub fn lpm(&self, device: DeviceId, addr: IpAddr) -> Option<IpNet> {
        self.fibs
            .get(device.index())?
            .lookup(addr, false)
            .map(|(prefix, _)| prefix)
    }

    /// The device's FIB in prefix order (IPv4 first), as `ip route` would list it.
    pub fn entries(&self, device: DeviceId) -> Vec<FibEntry> {
        let Some(fib) = self.fibs.get(device.index()) else {
            return Vec::new();
        };
        fib.stored_entries()
            .into_iter()
            .filter_map(|(prefix, stored)| self.resolve(device, prefix, stored, PoolKey::Prefix))
            .collect()
    }

    /// How many entries the device's FIB holds (`fibRoutes`), without listing them.
    pub fn fib_len(&self, device: DeviceId) -> usize {
        self.lens.get(device.index()).copied().unwrap_or(0)
    }

    /// Every pod, in key order.
    pub fn pods(&self) -> impl Iterator<Item = &PodInfo> {
        self.pods.values()
    }

    pub fn pod(&self, key: PodKey) -> Option<&PodInfo> {
        self.pods.get(&key)
    }

    /// The pod-network pod holding `ip` (host-network pods share their node's address and
    /// are not found by it: the address is the node's).
    pub fn pod_by_ip(&self, ip: IpAddr) -> Option<&PodInfo> {
        self.pod_by_ip.get(&ip).and_then(|k| self.pods.get(k))
    }

    /// The device whose own address (node address, gateway, loopback) this is.
    pub fn device_by_address(&self, ip: IpAddr) -> Option<DeviceId> {
        self.device_by_address.get(&ip).copied()
    }

    /// The externals, in `Topology::externals` order.
    pub fn externals(&self) -> &[ExternalInfo] {
        &self.externals
    }

    /// The pool an address belongs to, if any.
    pub fn pool_of(&self, ip: IpAddr) -> Option<&PoolEncap> {
        self.pools.iter().find(|p| p.cidr.contains(&ip))
    }

    /// Whether a packet for `ip` leaving the fabric at an external's attachment router is
    /// delivered there: some external's CIDR covers it and it is no pod's, device's or Calico
    /// pool's address (an address of the cluster never lies outside it, whatever an external
    /// claims, e.g. `0.0.0.0/0`).
    pub fn is_external_destination(&self, ip: IpAddr) -> bool {
        self.externals.iter().any(|e| e.cidr.contains(&ip))
            && !self.pod_by_ip.contains_key(&ip)
            && !self.device_by_address.contains_key(&ip)
            && self.pool_of(ip).is_none()
    }

    /// Whether a pod's address is also a node's, a router's or a rack gateway's address: a
    /// pool overlapping a rack subnet can hand those out, and then two hosts claim it.
    pub fn is_duplicate(&self, pod: &PodInfo) -> bool {
        pod.attachment != Attachment::Host && self.device_by_address.contains_key(&pod.ip)
            || self.racks.iter().any(|r| r.gateway == pod.ip)
    }

    pub(crate) fn lookup_with(
        &self,
        device: DeviceId,
        addr: IpAddr,
        pool_addr: Option<IpAddr>,
        skip_local: bool,
    ) -> Option<FibEntry> {
        let fib = self.fibs.get(device.index())?;
        let (prefix, stored) = fib.lookup(addr, skip_local)?;
        let key = match pool_addr {
            Some(a) => PoolKey::Addr(a),
            None => PoolKey::Native,
        };
        self.resolve(device, prefix, stored, key)
    }

    /// Turns a stored entry into what the device does; learned routes are resolved to an
    /// adjacent device and possibly a tunnel. `None` only for withdrawn or unresolvable ones.
    fn resolve(
        &self,
        device: DeviceId,
        prefix: IpNet,
        stored: Stored,
        pool: PoolKey,
    ) -> Option<FibEntry> {
        let (action, origin, learned_next_hop) = match stored {
            Stored::Local => {
                let pod = *self.pod_by_ip.get(&prefix.addr())?;
                (FibAction::Local(pod), Origin::Local, None)
            }
            Stored::Connected(r) => (FibAction::Connected(r), Origin::Connected, None),
            Stored::Via {
                next_hop,
                device,
                origin,
            } => (FibAction::Via { next_hop, device }, origin, None),
            Stored::Blackhole => (FibAction::Blackhole, Origin::Blackhole, None),
            Stored::External(i) => (FibAction::External(i), Origin::External, None),
            Stored::Withdrawn => return None,
            Stored::Learned { next_hop } => {
                let (gateway, via) = self.resolve_next_hop(device, next_hop)?;
                let pool = match pool {
                    PoolKey::Addr(a) => self.pools.iter().find(|p| p.cidr.contains(&a)),
                    PoolKey::Prefix => self.pools.iter().find(|p| p.cidr.contains(&prefix)),
                    PoolKey::Native => None,
                };
                let action = match pool.and_then(|p| self.encap_for(device, next_hop, p)) {
                    Some((encap, remote)) => FibAction::Tunnel {
                        encap,
                        remote: next_hop,
                        device: remote,
                    },
                    None => FibAction::Via {
                        next_hop: gateway,
                        device: via,
                    },
                };
                (action, Origin::Learned, Some(next_hop))
            }
        };
        Some(FibEntry {
            prefix,
            action,
            origin,
            learned_next_hop,
        })
    }

    /// Calico's encapsulation decision on a node (REFERENCE §5): tunnels go only to Calico
    /// nodes; `Always` tunnels, `CrossSubnet` tunnels when the next hop lies outside the
    /// sender's subnet, `Never` does not. Returns the tunnel and the far-end node's device.
    fn encap_for(
        &self,
        sender: DeviceId,
        next_hop: IpAddr,
        pool: &PoolEncap,
    ) -> Option<(Encap, DeviceId)> {
        let info = self.devices.get(sender.index())?;
        if !matches!(info.kind, DeviceKind::Node(_)) {
            return None;
        }
        let remote = self.device_by_address(next_hop)?;
        let remote_info = self.devices.get(remote.index())?;
        if !matches!(remote_info.kind, DeviceKind::Node(_)) || !remote_info.present {
            return None;
        }
        let (encap, mode) = if pool.ipip != EncapMode::Never {
            (Encap::Ipip, pool.ipip)
        } else {
            (Encap::Vxlan, pool.vxlan)
        };
        let tunnel = match mode {
            EncapMode::Never => false,
            EncapMode::Always => true,
            EncapMode::CrossSubnet => !info.node_subnet.is_some_and(|s| s.contains(&next_hop)),
        };
        tunnel.then_some((encap, remote))
    }

    /// Who owns `addr` on a rack's segment.
    pub(crate) fn owner(&self, rack: RackId, addr: IpAddr) -> Option<Owner> {
        match self.owners.get(&(rack, addr))? {
            Holder::Device(d) => Some(Owner::Device(*d)),
            Holder::Pod => self.pod_by_ip.get(&addr).map(|k| Owner::Pod(*k)),
        }
    }

    /// Whether the link from `a` to the adjacent `b` is up; `None` when they are not adjacent.
    /// Two members of one segment are adjacent; both access links must be up.
    pub(crate) fn link_up(&self, a: DeviceId, b: DeviceId) -> Option<bool> {
        let key = if a < b { (a, b) } else { (b, a) };
        if let Some(up) = self.links.get(&key) {
            return Some(*up);
        }
        let da = self.devices.get(a.index())?;
        let db = self.devices.get(b.index())?;
        match (da.rack, db.rack) {
            (Some(x), Some(y)) if x == y => Some(da.access_up && db.access_up),
            _ => None,
        }
    }

    /// The device's connected and static routes (what its learned next hops resolve
    /// through).
    pub(crate) fn igp(&self, device: DeviceId) -> Option<&Table> {
        self.igp.get(device.index())
    }

    /// The devices at either end of a fabric or inter-zone link.
    pub(crate) fn fabric_link_ends(&self) -> impl Iterator<Item = DeviceId> + '_ {
        self.links.keys().flat_map(|(a, b)| [*a, *b])
    }

    pub(crate) fn is_down(&self, device: DeviceId) -> bool {
        self.devices.get(device.index()).is_none_or(|d| d.down)
    }

    /// Every prefix that splits the address space for forwarding, except pods' local /32s:
    /// FIB prefixes of every device (withdrawn ones included), pools, and each device
    /// address as a single-address prefix.
    pub(crate) fn boundary_prefixes(&self) -> Vec<IpNet> {
        let mut out: Vec<IpNet> = Vec::new();
        let mut seen_shared: Vec<*const SharedTable> = Vec::new();
        for fib in &self.fibs {
            out.extend(
                fib.overlay
                    .iter()
                    .filter(|(_, e)| !matches!(e, Stored::Local))
                    .map(|(p, _)| p),
            );
            for t in &fib.shared {
                let ptr = Arc::as_ptr(t);
                if !seen_shared.contains(&ptr) {
                    seen_shared.push(ptr);
                    out.extend(t.table.iter().map(|(p, _)| p));
                }
            }
        }
        out.extend(self.pools.iter().map(|p| p.cidr));
        out.extend(self.devices.iter().map(|d| host(d.address)));
        out
    }
}

impl Routing {
    /// Recursive next-hop resolution through the device's connected and static routes: the
    /// adjacent device (and its address) a packet for `next_hop` is handed to.
    pub(crate) fn resolve_next_hop(
        &self,
        device: DeviceId,
        next_hop: IpAddr,
    ) -> Option<(IpAddr, DeviceId)> {
        let info = self.devices.get(device.index())?;
        if info.address == next_hop {
            return None;
        }
        let stored = match (next_hop, self.igp_flat.get(device.index())) {
            (IpAddr::V4(a), Some(Some(flat))) => flat.lpm(u32::from(a))?.1,
            _ => *self.igp.get(device.index())?.lpm(next_hop)?.1,
        };
        match stored {
            Stored::Connected(rack) => match self.owners.get(&(rack, next_hop)) {
                Some(Holder::Device(o)) if *o != device => Some((next_hop, *o)),
                _ => None,
            },
            Stored::Via {
                next_hop, device, ..
            } => Some((next_hop, device)),
            _ => None,
        }
    }

    pub(crate) fn address(&self, device: DeviceId) -> Option<IpAddr> {
        self.devices.get(device.index()).map(|d| d.address)
    }
}

#[derive(Clone, Copy)]
enum PoolKey {
    /// The pool containing this destination address.
    Addr(IpAddr),
    /// The pool containing the entry's prefix.
    Prefix,
    /// No encapsulation (the outer packet of a tunnel).
    Native,
}
