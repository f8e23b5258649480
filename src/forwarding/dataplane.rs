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
//! a concrete action, and [`Dataplane::fib_len`] counts exactly those. The dataplane is
//! immutable once built; the simulator builds a new one after the state changes.
//! This module does not run BGP or IPAM, and does not forward packets (`walk.rs` does).

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::fib::{
    Action, DeviceFib, Encap, FibEntry, Flat4, Origin, PodKey, SharedTable, Stored, Table,
};
use crate::model::hash::FastMap;
use crate::model::network::EncapMode;
use crate::model::topology::{DeviceId, DeviceKind, LinkKind, NodeId, RackId, Topology};

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

#[derive(Clone, Debug)]
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

#[derive(Clone, Copy, Debug)]
pub(crate) struct RackInfo {
    pub(crate) subnet: IpNet,
    pub(crate) gateway: IpAddr,
}

/// Every device's FIB plus what forwarding needs to know about pods, pools and the underlay.
#[derive(Clone)]
pub struct Dataplane {
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
    pub(crate) pods: BTreeMap<PodKey, PodInfo>,
    pod_by_ip: FastMap<IpAddr, PodKey>,
    owners: FastMap<(RackId, IpAddr), Owner>,
    device_by_address: FastMap<IpAddr, DeviceId>,
    /// `Topology::externals`, in the same order.
    externals: Vec<ExternalInfo>,
}

/// Fills a [`Dataplane`]; see the module documentation for what it derives by itself.
pub struct DataplaneBuilder {
    dp: Dataplane,
    shared: Vec<Arc<SharedTable>>,
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

    /// Every pod, by key.
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
            Stored::Local(p) => (Action::Local(p), Origin::Local, None),
            Stored::Connected(r) => (Action::Connected(r), Origin::Connected, None),
            Stored::Via {
                next_hop,
                device,
                origin,
            } => (Action::Via { next_hop, device }, origin, None),
            Stored::Blackhole => (Action::Blackhole, Origin::Blackhole, None),
            Stored::External(i) => (Action::External(i), Origin::External, None),
            Stored::Withdrawn => return None,
            Stored::Learned { next_hop } => {
                let (gateway, via) = self.resolve_next_hop(device, next_hop)?;
                let pool = match pool {
                    PoolKey::Addr(a) => self.pools.iter().find(|p| p.cidr.contains(&a)),
                    PoolKey::Prefix => self.pools.iter().find(|p| p.cidr.contains(&prefix)),
                    PoolKey::Native => None,
                };
                let action = match pool.and_then(|p| self.encap_for(device, next_hop, p)) {
                    Some((encap, remote)) => Action::Tunnel {
                        encap,
                        remote: next_hop,
                        device: remote,
                    },
                    None => Action::Via {
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
                Some(Owner::Device(o)) if *o != device => Some((next_hop, *o)),
                _ => None,
            },
            Stored::Via {
                next_hop, device, ..
            } => Some((next_hop, device)),
            _ => None,
        }
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
        self.owners.get(&(rack, addr)).copied()
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

    pub(crate) fn address(&self, device: DeviceId) -> Option<IpAddr> {
        self.devices.get(device.index()).map(|d| d.address)
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
                    .filter(|(_, e)| !matches!(e, Stored::Local(_)))
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

#[derive(Clone, Copy)]
enum PoolKey {
    /// The pool containing this destination address.
    Addr(IpAddr),
    /// The pool containing the entry's prefix.
    Prefix,
    /// No encapsulation (the outer packet of a tunnel).
    Native,
}

impl DataplaneBuilder {
    fn new(topology: &Topology) -> DataplaneBuilder {
        let n = topology.devices.len();
        let mut access_up = vec![false; n];
        let mut links: FastMap<(DeviceId, DeviceId), bool> = FastMap::default();
        for link in &topology.links {
            match link.kind {
                LinkKind::Access => {
                    if let Some(slot) = access_up.get_mut(link.a.index()) {
                        *slot = link.up;
                    }
                }
                LinkKind::Fabric | LinkKind::InterZone => {
                    let key = if link.a < link.b {
                        (link.a, link.b)
                    } else {
                        (link.b, link.a)
                    };
                    let up = links.entry(key).or_insert(false);
                    *up |= link.up;
                }
            }
        }
        let racks: Vec<RackInfo> = topology
            .racks
            .iter()
            .map(|r| RackInfo {
                subnet: r.subnet,
                gateway: r.gateway,
            })
            .collect();
        let mut devices = Vec::with_capacity(n);
        let mut device_by_address = FastMap::default();
        let mut owners = FastMap::default();
        for (i, d) in topology.devices.iter().enumerate() {
            let id = DeviceId(i as u32);
            let (rack, present, down, node_subnet) = match d.kind {
                DeviceKind::Node(nid) => match topology.nodes.get(nid.index()) {
                    Some(node) => {
                        let rack_subnet = racks.get(node.rack.index()).map(|r| r.subnet);
                        (
                            Some(node.rack),
                            !node.deleted,
                            node.down,
                            node.bgp.ipv4_subnet.or(rack_subnet),
                        )
                    }
                    None => (None, false, false, None),
                },
                DeviceKind::Tor(r) => (Some(r), true, false, None),
                DeviceKind::Spine { .. } | DeviceKind::Core => (None, true, false, None),
            };
            if present {
                device_by_address.entry(d.address).or_insert(id);
                if let Some(r) = rack {
                    owners.entry((r, d.address)).or_insert(Owner::Device(id));
                }
            }
            devices.push(DeviceInfo {
                kind: d.kind,
                address: d.address,
                rack,
                present,
                down,
                node_subnet,
                access_up: access_up.get(i).copied().unwrap_or(false),
            });
        }
        let mut dp = Dataplane {
            devices,
            racks,
            fibs: vec![DeviceFib::default(); n],
            igp: vec![Table::default(); n],
            igp_flat: vec![None; n],
            lens: vec![0; n],
            links,
            pools: Vec::new(),
            pods: BTreeMap::new(),
            pod_by_ip: FastMap::default(),
            owners,
            device_by_address,
            externals: Vec::new(),
        };
        // Connected segments, nodes' default routes.
        for i in 0..n {
            let id = DeviceId(i as u32);
            let info = dp.devices[i].clone();
            if !info.present {
                continue;
            }
            let Some(rack) = info.rack else { continue };
            let Some(r) = dp.racks.get(rack.index()).copied() else {
                continue;
            };
            dp.add_igp(id, r.subnet, Stored::Connected(rack));
            if matches!(info.kind, DeviceKind::Node(_))
                && let Some(tor) = topology.racks.get(rack.index()).map(|r| r.tor)
            {
                dp.add_igp(
                    id,
                    default_route(r.gateway),
                    Stored::Via {
                        next_hop: r.gateway,
                        device: tor,
                        origin: Origin::Default,
                    },
                );
            }
        }
        add_fabric_routes(&mut dp, topology);
        add_external_routes(&mut dp, topology);
        let mut node_devices = vec![None; topology.nodes.len()];
        for (i, d) in dp.devices.iter().enumerate() {
            if let (DeviceKind::Node(node), true, Some(rack)) = (d.kind, d.present, d.rack)
                && let Some(slot @ None) = node_devices.get_mut(node.index())
            {
                *slot = Some((DeviceId(i as u32), rack));
            }
        }
        DataplaneBuilder {
            dp,
            shared: Vec::new(),
            node_devices,
        }
    }

    /// Declares an IP pool's encapsulation; traffic to addresses outside every pool is
    /// forwarded natively.
    pub fn pool(&mut self, cidr: IpNet, ipip: EncapMode, vxlan: EncapMode) -> &mut Self {
        self.dp.pools.push(PoolEncap {
            cidr: cidr.trunc(),
            ipip,
            vxlan,
            nat_outgoing: false,
        });
        self
    }

    /// Marks a declared pool `natOutgoing` (REFERENCE-policy §3.5).
    pub fn nat_outgoing(&mut self, cidr: IpNet) -> &mut Self {
        let cidr = cidr.trunc();
        for p in self.dp.pools.iter_mut().filter(|p| p.cidr == cidr) {
            p.nat_outgoing = true;
        }
        self
    }

    /// Adds a pod that has an address. A Calico pod gets a `Local` /32 on its node; a
    /// segment-attached pod becomes the owner of its address on its rack's segment when the
    /// address lies in the rack subnet; a host-network pod takes its node's address (`ip` is
    /// ignored) and adds no route: the node delivers its own address. Returns false (and adds
    /// nothing) when the node is unknown or deleted, or the key or address is already taken.
    pub fn pod(&mut self, key: PodKey, ip: IpAddr, node: NodeId, attachment: Attachment) -> bool {
        let dp = &mut self.dp;
        let Some((device, rack)) = self.node_devices.get(node.index()).copied().flatten() else {
            return false;
        };
        if attachment == Attachment::Host {
            let Some(info) = dp.devices.get(device.index()) else {
                return false;
            };
            let ip = info.address;
            if dp.pods.contains_key(&key) {
                return false;
            }
            dp.pods.insert(
                key,
                PodInfo {
                    key,
                    ip,
                    node,
                    device,
                    rack,
                    attachment,
                    wrong_subnet: false,
                },
            );
            return true;
        }
        if dp.pods.contains_key(&key) || dp.pod_by_ip.contains_key(&ip) {
            return false;
        }
        let subnet = dp.racks.get(rack.index()).map(|r| r.subnet);
        let wrong_subnet = match attachment {
            Attachment::Calico | Attachment::Host => false,
            Attachment::Segment { .. } => !subnet.is_some_and(|s| s.contains(&ip)),
        };
        match attachment {
            Attachment::Calico => {
                if let Some(fib) = dp.fibs.get_mut(device.index()) {
                    fib.overlay.insert_ranked(host(ip), Stored::Local(key));
                }
            }
            Attachment::Segment { .. } => {
                if !wrong_subnet {
                    dp.owners.entry((rack, ip)).or_insert(Owner::Pod(key));
                }
            }
            Attachment::Host => {}
        }
        dp.pods.insert(
            key,
            PodInfo {
                key,
                ip,
                node,
                device,
                rack,
                attachment,
                wrong_subnet,
            },
        );
        dp.pod_by_ip.insert(ip, key);
        true
    }

    /// A blackhole route on a device (a Calico node's own blocks).
    pub fn blackhole(&mut self, device: DeviceId, prefix: IpNet) -> &mut Self {
        self.overlay(device, prefix, Stored::Blackhole);
        self
    }

    /// A learned route of one device (a BGP best route, or a Felix VXLAN route); it wins over
    /// a shared table's route for the same prefix.
    pub fn learned(&mut self, device: DeviceId, prefix: IpNet, next_hop: IpAddr) -> &mut Self {
        self.overlay(device, prefix, Stored::Learned { next_hop });
        self
    }

    /// Hides a shared table's route for exactly this prefix from one device (a route the
    /// others have and this device did not learn).
    pub fn withhold(&mut self, device: DeviceId, prefix: IpNet) -> &mut Self {
        self.overlay(device, prefix, Stored::Withdrawn);
        self
    }

    /// A table of learned routes `(prefix, next hop)` common to several devices; stored
    /// once. A later duplicate prefix replaces an earlier one.
    pub fn shared_table(
        &mut self,
        routes: impl IntoIterator<Item = (IpNet, IpAddr)>,
    ) -> SharedTableId {
        self.shared.push(Arc::new(SharedTable::from_routes(routes)));
        SharedTableId(self.shared.len() - 1)
    }

    /// The device uses a shared table, under its own routes and under the tables it already
    /// uses.
    pub fn use_shared(&mut self, device: DeviceId, table: SharedTableId) -> &mut Self {
        if let (Some(t), Some(fib)) = (
            self.shared.get(table.0),
            self.dp.fibs.get_mut(device.index()),
        ) && !fib.shared.iter().any(|s| Arc::ptr_eq(s, t))
        {
            fib.shared.push(Arc::clone(t));
        }
        self
    }

    /// The device's complete set of learned routes, stored as a difference from a shared
    /// table: routes equal to the table's cost nothing, others become the device's own, and
    /// the table's prefixes missing from `routes` are withheld. Memory is proportional to the
    /// difference; time to the table when some of its prefixes are missing (cheapest when
    /// the device's blackholes are added first, since a blackhole already hides its prefix).
    pub fn learned_routes(
        &mut self,
        device: DeviceId,
        table: SharedTableId,
        routes: impl IntoIterator<Item = (IpNet, IpAddr)>,
    ) -> &mut Self {
        let Some(t) = self.shared.get(table.0).cloned() else {
            return self;
        };
        if device.index() >= self.dp.fibs.len() {
            return self;
        }
        self.use_shared(device, table);
        let mut matched: Vec<IpNet> = Vec::new();
        for (prefix, next_hop) in routes {
            let prefix = prefix.trunc();
            if t.next_hop_of(prefix) == Some(next_hop) {
                matched.push(prefix);
            } else {
                self.learned(device, prefix, next_hop);
            }
        }
        matched.sort();
        matched.dedup();
        let fib = &self.dp.fibs[device.index()];
        let covered = fib
            .overlay
            .iter()
            .filter(|(p, _)| t.table.get(*p).is_some() && matched.binary_search(p).is_err())
            .count();
        if matched.len() + covered < t.table.len() {
            let missing: Vec<IpNet> = t
                .table
                .iter()
                .map(|(p, _)| p)
                .filter(|p| matched.binary_search(p).is_err() && fib.overlay.get(*p).is_none())
                .collect();
            for p in missing {
                self.withhold(device, p);
            }
        }
        self
    }

    /// Like [`DataplaneBuilder::learned_routes`], for a caller that already knows how the
    /// device's routes differ from the shared table: `extra` are its routes the table does
    /// not have (or has with another next hop), `missing` the table's prefixes it lacks
    /// (withheld unless the device has its own entry for them, e.g. a blackhole).
    pub fn learned_difference(
        &mut self,
        device: DeviceId,
        table: SharedTableId,
        extra: impl IntoIterator<Item = (IpNet, IpAddr)>,
        missing: impl IntoIterator<Item = IpNet>,
    ) -> &mut Self {
        if device.index() >= self.dp.fibs.len() || table.0 >= self.shared.len() {
            return self;
        }
        self.use_shared(device, table);
        for (prefix, next_hop) in extra {
            self.learned(device, prefix.trunc(), next_hop);
        }
        for prefix in missing {
            let prefix = prefix.trunc();
            if self.dp.fibs[device.index()].overlay.get(prefix).is_none() {
                self.withhold(device, prefix);
            }
        }
        self
    }

    fn overlay(&mut self, device: DeviceId, prefix: IpNet, entry: Stored) {
        if let Some(fib) = self.dp.fibs.get_mut(device.index()) {
            fib.overlay.insert_ranked(prefix, entry);
        }
    }

    /// Resolves learned routes, withdraws those that do not resolve, and counts entries.
    pub fn build(self) -> Dataplane {
        let mut dp = self.dp;
        dp.igp_flat = dp
            .igp
            .iter()
            .map(|t| Some(Flat4::compile(t.v4_map())))
            .collect();
        for i in 0..dp.fibs.len() {
            let id = DeviceId(i as u32);
            // The device's own learned routes.
            let own: Vec<(IpNet, IpAddr)> = dp.fibs[i]
                .overlay
                .iter()
                .filter_map(|(p, e)| match e {
                    Stored::Learned { next_hop } => Some((p, *next_hop)),
                    _ => None,
                })
                .collect();
            for (prefix, next_hop) in own {
                if dp.resolve_next_hop(id, next_hop).is_none() {
                    let shadows = dp.fibs[i]
                        .shared
                        .iter()
                        .any(|t| t.table.get(prefix).is_some());
                    if shadows {
                        dp.fibs[i].overlay.insert(prefix, Stored::Withdrawn);
                    } else {
                        dp.fibs[i].overlay.remove(prefix);
                    }
                }
            }
            // Shared routes whose next hop this device cannot resolve.
            let unresolved = unresolvable_next_hops(&dp, id);
            for prefix in unresolved {
                if dp.fibs[i].overlay.get(prefix).is_none() {
                    dp.fibs[i].overlay.insert(prefix, Stored::Withdrawn);
                }
            }
            let fib = &mut dp.fibs[i];
            fib.compile();
            dp.lens[i] = fib.len();
        }
        dp
    }
}

impl Dataplane {
    fn add_igp(&mut self, device: DeviceId, prefix: IpNet, entry: Stored) {
        debug_assert!(entry.is_igp());
        if let (Some(fib), Some(igp)) = (
            self.fibs.get_mut(device.index()),
            self.igp.get_mut(device.index()),
        ) {
            fib.overlay.insert_ranked(prefix, entry);
            igp.insert_ranked(prefix, entry);
        }
    }
}

/// The prefixes of the device's shared tables whose next hop does not resolve on it. With a
/// default route only next hops inside its more specific static routes (or its own address)
/// can fail, so only those are checked; otherwise every distinct next hop is.
fn unresolvable_next_hops(dp: &Dataplane, device: DeviceId) -> Vec<IpNet> {
    let mut out = Vec::new();
    let Some(fib) = dp.fibs.get(device.index()) else {
        return out;
    };
    let Some(igp) = dp.igp.get(device.index()) else {
        return out;
    };
    let own = dp.address(device);
    let has_default = |v6: bool| {
        igp.iter()
            .any(|(p, _)| p.prefix_len() == 0 && matches!(p, IpNet::V6(_)) == v6)
    };
    for t in &fib.shared {
        let mut check = |nh: &IpAddr, prefixes: &Vec<IpNet>| {
            if dp.resolve_next_hop(device, *nh).is_none() {
                out.extend(prefixes.iter().copied());
            }
        };
        for (v6, family) in [
            (false, IpNet::V4(Ipv4Net::default())),
            (true, IpNet::V6(Ipv6Net::default())),
        ] {
            if has_default(v6) {
                let specific = igp
                    .iter()
                    .filter(|(p, _)| p.prefix_len() > 0 && family.contains(p))
                    .map(|(p, _)| p);
                for net in specific {
                    for (nh, ps) in t.by_next_hop.range(net.network()..=net.broadcast()) {
                        check(nh, ps);
                    }
                }
                if let Some(own) = own
                    && family.contains(&own)
                    && let Some(ps) = t.by_next_hop.get(&own)
                {
                    check(&own, ps);
                }
            } else {
                for (nh, ps) in t.by_next_hop.range(family.network()..=family.broadcast()) {
                    check(nh, ps);
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

/// On every router, each rack subnet it is not attached to, via the first hop of the
/// shortest path (fabric and inter-zone links that are up) to that rack's ToR, with
/// `Topology::shortest_path_tree`'s tie-breaking.
fn add_fabric_routes(dp: &mut Dataplane, topology: &Topology) {
    let routers = topology
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.is_router());
    for (src, _) in routers.map(|(i, d)| (DeviceId(i as u32), d)) {
        let tree = topology.shortest_path_tree(src, |l| l.kind != LinkKind::Access);
        let via = |dp: &mut Dataplane, dst: DeviceId, prefix: IpNet| {
            if let Some(hop) = tree.first_hop(dst) {
                let next_hop = topology.devices[hop.index()].address;
                dp.add_igp(
                    src,
                    prefix,
                    Stored::Via {
                        next_hop,
                        device: hop,
                        origin: Origin::Fabric,
                    },
                );
            }
        };
        for rack in &topology.racks {
            via(dp, rack.tor, rack.subnet);
        }
        // Spines' and the core's loopbacks (their router IDs and the next hops they announce
        // over eBGP) are reachable the same way, so learned routes through them resolve.
        for (i, device) in topology.devices.iter().enumerate() {
            if matches!(device.kind, DeviceKind::Spine { .. } | DeviceKind::Core) {
                via(dp, DeviceId(i as u32), host(device.address));
            }
        }
    }
}

/// Every external's CIDR (SPEC §7): at its attachment router, out of the fabric; on every
/// other router, via the first hop of the shortest path (fabric links that are up, the same
/// tie-breaking as the rack subnets' routes) to the attachment. These are static routes of
/// the FIB only, not of the tables learned next hops resolve through (a router does not
/// resolve BGP next hops through a route to the outside, as FRR does not through a default
/// route). Nodes reach externals by their default route.
fn add_external_routes(dp: &mut Dataplane, topology: &Topology) {
    dp.externals = topology
        .externals
        .iter()
        .map(|e| ExternalInfo {
            cidr: e.cidr,
            attach: e.attach,
        })
        .collect();
    if dp.externals.is_empty() {
        return;
    }
    for (r, device) in topology.devices.iter().enumerate() {
        if !device.is_router() {
            continue;
        }
        let r = DeviceId(r as u32);
        let tree = topology.shortest_path_tree(r, |l| l.kind != LinkKind::Access);
        for (i, e) in topology.externals.iter().enumerate() {
            let entry = if r == e.attach {
                Stored::External(i as u32)
            } else {
                let Some(hop) = tree.first_hop(e.attach) else {
                    continue;
                };
                Stored::Via {
                    next_hop: topology.devices[hop.index()].address,
                    device: hop,
                    origin: Origin::External,
                }
            };
            if let Some(fib) = dp.fibs.get_mut(r.index()) {
                fib.overlay.insert_ranked(e.cidr, entry);
            }
        }
    }
}
