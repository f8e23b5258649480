//! The physical cluster: zones, racks, nodes, routers, the links between them, and the
//! underlay's shortest paths (SPEC §2.1).
//!
//! Every device (a Kubernetes node or a router) has an adjacency list of the links it ends.
//! A rack is one L2 segment: its nodes and its ToR each have an access link to it, and any two
//! members of the segment are one hop apart (one access latency). Routers are joined by fabric
//! links (ToR–spine) and inter-zone links (spine–core).
//!
//! [`Topology::shortest_path_tree`] is the one shortest-path computation of podnet: the
//! underlay paths, BGP's latencies and IGP costs, and the fabric routes of the forwarding
//! tables all come from it (see ARCHITECTURE.md for why it is not petgraph's).
//!
//! Invariants: ids index the vectors they name and are never reused (a deleted node keeps its
//! id and is marked deleted); every iteration order is defined (vectors in creation order);
//! equal-cost underlay paths are broken by device name, so paths are deterministic.
//! This module does not validate input (that is `scenario::build`) and knows nothing of pods,
//! addresses handed to pods or routes.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::time::SimDuration;
use super::{Labels, text_enum};

macro_rules! id_type {
    ($($(#[$m:meta])* $name:ident),*) => {$(
        $(#[$m])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(pub u32);
        impl $name {
            pub fn index(self) -> usize { self.0 as usize }
        }
    )*};
}
id_type!(
    /// A zone, by position in [`Topology::zones`].
    ZoneId,
    /// A rack, by position in [`Topology::racks`].
    RackId,
    /// A Kubernetes node, by position in [`Topology::nodes`].
    NodeId,
    /// A device (node or router), by position in [`Topology::devices`].
    DeviceId,
    /// A link, by position in [`Topology::links`].
    LinkId
);

fn id_from(len: usize) -> u32 {
    u32::try_from(len).expect("topology sizes are bounded by the input limits")
}

text_enum! {
    /// A node's operating system; Windows nodes follow HNS rules in IPAM.
    pub enum Os {
        Linux = "linux",
        Windows = "windows",
    }
}

/// One-way latency per kind of link.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Latencies {
    pub access: SimDuration,
    pub fabric: SimDuration,
    pub inter_zone: SimDuration,
}

impl Default for Latencies {
    fn default() -> Latencies {
        Latencies {
            access: SimDuration::from_micros(20),
            fabric: SimDuration::from_micros(50),
            inter_zone: SimDuration::from_millis(1),
        }
    }
}

/// How the routers behave.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fabric {
    /// Every router is a BGP speaker (RFC 7938); otherwise routers route node subnets only.
    pub bgp: bool,
    pub spines_per_zone: u32,
    pub latency: Latencies,
    /// Fabric routers forward over every equal-cost BGP path (BIRD's kernel protocol with
    /// `merge paths on`), not only the best; see `forwarding::ecmp`.
    pub ecmp: bool,
}

impl Default for Fabric {
    fn default() -> Fabric {
        Fabric {
            bgp: false,
            spines_per_zone: 1,
            latency: Latencies::default(),
            ecmp: false,
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct Zone {
    pub name: String,
    pub labels: Labels,
    /// AS of the zone's spines when the fabric speaks BGP.
    pub as_number: u32,
    pub racks: Vec<RackId>,
    pub spines: Vec<DeviceId>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Rack {
    pub name: String,
    pub zone: ZoneId,
    pub subnet: IpNet,
    pub gateway: IpAddr,
    pub labels: Labels,
    /// The ToR's device.
    pub tor: DeviceId,
    /// Nodes on this rack, in file order (then added order).
    pub nodes: Vec<NodeId>,
}

/// Calico's per-node BGP settings (the Calico `Node` resource's `spec.bgp`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeBgp {
    pub as_number: Option<u32>,
    pub route_reflector_cluster_id: Option<Ipv4Addr>,
    /// The node's subnet for `CrossSubnet` decisions, from `ipv4Address` when given.
    pub ipv4_subnet: Option<IpNet>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub rack: RackId,
    pub zone: ZoneId,
    pub ip: IpAddr,
    pub os: Os,
    pub max_pods: u32,
    /// Inherited, own and automatic labels, merged (see `scenario::build`).
    pub labels: Labels,
    pub bgp: NodeBgp,
    pub device: DeviceId,
    /// Crashed (`nodeDown`) and not yet back.
    pub down: bool,
    /// Removed from the cluster (`deleteNode`); the id stays, the node is gone.
    pub deleted: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum DeviceKind {
    Node(NodeId),
    Tor(RackId),
    Spine { zone: ZoneId, index: u32 },
    Core,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Device {
    pub name: String,
    pub kind: DeviceKind,
    /// The node's address, the ToR's gateway, or a spine's or the core's loopback; it is the
    /// device's BGP router ID.
    pub address: IpAddr,
    /// AS number of a router when the fabric speaks BGP.
    pub as_number: Option<u32>,
}

impl Device {
    pub fn is_router(&self) -> bool {
        !matches!(self.kind, DeviceKind::Node(_))
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum LinkKind {
    /// A device's attachment to its rack segment (nodes and the ToR).
    Access,
    /// ToR to spine.
    Fabric,
    /// Spine to core.
    InterZone,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Link {
    pub a: DeviceId,
    pub b: DeviceId,
    pub kind: LinkKind,
    pub latency: SimDuration,
    pub up: bool,
}

/// A path through the underlay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnderlayPath {
    /// Every device visited, both ends included.
    pub hops: Vec<DeviceId>,
    /// One-way latency along the path.
    pub latency: SimDuration,
}

/// The whole physical cluster.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    pub fabric: Fabric,
    pub zones: Vec<Zone>,
    pub racks: Vec<Rack>,
    pub nodes: Vec<Node>,
    pub devices: Vec<Device>,
    pub links: Vec<Link>,
    /// Places outside the cluster, attached to routers (SPEC §7 `externals:`).
    pub externals: Vec<super::external::External>,
    by_name: BTreeMap<String, DeviceId>,
    /// The fabric and inter-zone links of each device, by device index.
    routed: Vec<Vec<LinkId>>,
    /// The access link of each device attached to a segment (nodes and ToRs); a rack's
    /// segment is reached through it, so a rack of n nodes needs n links rather than n²/2.
    access: BTreeMap<DeviceId, LinkId>,
}

/// What a new node looks like; defaults are resolved by the caller.
#[derive(Clone, Debug, PartialEq)]
pub struct NewNode {
    pub name: String,
    pub ip: IpAddr,
    pub os: Os,
    pub max_pods: u32,
    pub labels: Labels,
    pub bgp: NodeBgp,
}

impl Topology {
    pub fn new(fabric: Fabric) -> Topology {
        Topology {
            fabric,
            ..Topology::default()
        }
    }

    pub fn add_zone(&mut self, name: &str, labels: Labels, as_number: u32) -> ZoneId {
        let id = ZoneId(id_from(self.zones.len()));
        self.zones.push(Zone {
            name: name.to_string(),
            labels,
            as_number,
            racks: Vec::new(),
            spines: Vec::new(),
        });
        id
    }

    /// Adds a rack and its ToR (`tor-<rack>`, addressed by the gateway).
    pub fn add_rack(
        &mut self,
        zone: ZoneId,
        name: &str,
        subnet: IpNet,
        gateway: IpAddr,
        labels: Labels,
        tor_as: u32,
    ) -> RackId {
        let id = RackId(id_from(self.racks.len()));
        let tor = self.add_device(
            format!("tor-{name}"),
            DeviceKind::Tor(id),
            gateway,
            Some(tor_as),
        );
        self.racks.push(Rack {
            name: name.to_string(),
            zone,
            subnet,
            gateway,
            labels,
            tor,
            nodes: Vec::new(),
        });
        self.zones[zone.index()].racks.push(id);
        self.attach(tor, id);
        id
    }

    /// Adds a node to a rack's segment.
    pub fn add_node(&mut self, rack: RackId, new: NewNode) -> NodeId {
        let id = NodeId(id_from(self.nodes.len()));
        let device = self.add_device(new.name.clone(), DeviceKind::Node(id), new.ip, None);
        let zone = self.racks[rack.index()].zone;
        self.nodes.push(Node {
            name: new.name,
            rack,
            zone,
            ip: new.ip,
            os: new.os,
            max_pods: new.max_pods,
            labels: new.labels,
            bgp: new.bgp,
            device,
            down: false,
            deleted: false,
        });
        self.racks[rack.index()].nodes.push(id);
        self.attach(device, rack);
        id
    }

    /// Adds the spines of every zone, the core (with two or more zones) and their links.
    /// `loopbacks` gives each router's loopback address by name; `core_as` the core's AS.
    pub fn add_fabric(&mut self, loopbacks: &BTreeMap<String, IpAddr>, core_as: u32) {
        let lat = self.fabric.latency;
        let core = (self.zones.len() >= 2).then(|| {
            let address = loopbacks
                .get("core")
                .copied()
                .unwrap_or(IpAddr::from([0, 0, 0, 0]));
            self.add_device("core".to_string(), DeviceKind::Core, address, Some(core_as))
        });
        for z in 0..self.zones.len() {
            let zone = ZoneId(id_from(z));
            for i in 1..=self.fabric.spines_per_zone {
                let name = spine_name(&self.zones[z].name, i);
                let address = loopbacks
                    .get(&name)
                    .copied()
                    .unwrap_or(IpAddr::from([0, 0, 0, 0]));
                let spine_as = self.zones[z].as_number;
                let spine = self.add_device(
                    name,
                    DeviceKind::Spine { zone, index: i },
                    address,
                    Some(spine_as),
                );
                self.zones[z].spines.push(spine);
                for r in self.zones[z].racks.clone() {
                    let tor = self.racks[r.index()].tor;
                    self.add_link(tor, spine, LinkKind::Fabric, lat.fabric);
                }
                if let Some(core) = core {
                    self.add_link(spine, core, LinkKind::InterZone, lat.inter_zone);
                }
            }
        }
    }

    fn add_device(
        &mut self,
        name: String,
        kind: DeviceKind,
        address: IpAddr,
        as_number: Option<u32>,
    ) -> DeviceId {
        let id = DeviceId(id_from(self.devices.len()));
        self.by_name.insert(name.clone(), id);
        self.devices.push(Device {
            name,
            kind,
            address,
            as_number,
        });
        self.routed.push(Vec::new());
        id
    }

    fn attach(&mut self, device: DeviceId, rack: RackId) {
        let tor = self
            .racks
            .get(rack.index())
            .map(|r| r.tor)
            .unwrap_or(device);
        let link = LinkId(id_from(self.links.len()));
        // An access link is named by its two ends: the device and the rack's ToR.
        let (a, b) = if device == tor {
            (device, device)
        } else {
            (device, tor)
        };
        self.links.push(Link {
            a,
            b,
            kind: LinkKind::Access,
            latency: self.fabric.latency.access,
            up: true,
        });
        self.access.insert(device, link);
    }

    fn add_link(&mut self, a: DeviceId, b: DeviceId, kind: LinkKind, latency: SimDuration) {
        let link = LinkId(id_from(self.links.len()));
        self.links.push(Link {
            a,
            b,
            kind,
            latency,
            up: true,
        });
        self.routed[a.index()].push(link);
        self.routed[b.index()].push(link);
    }

    pub fn device(&self, id: DeviceId) -> &Device {
        &self.devices[id.index()]
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }

    pub fn node_mut(&mut self, id: NodeId) -> &mut Node {
        &mut self.nodes[id.index()]
    }

    pub fn device_by_name(&self, name: &str) -> Option<DeviceId> {
        self.by_name.get(name).copied()
    }

    pub fn node_by_name(&self, name: &str) -> Option<NodeId> {
        match self.device(self.device_by_name(name)?).kind {
            DeviceKind::Node(n) => Some(n),
            _ => None,
        }
    }

    /// The nodes still in the cluster, in creation order.
    pub fn live_nodes(&self) -> impl Iterator<Item = (NodeId, &Node)> {
        self.nodes
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.deleted)
            .map(|(i, n)| (NodeId(id_from(i)), n))
    }

    /// The link joining two devices named in an event (`linkDown: [a, b]`): a fabric or
    /// inter-zone link, or a device's access link when the other end is its rack's ToR.
    pub fn link_between(&self, a: DeviceId, b: DeviceId) -> Option<LinkId> {
        for (x, y) in [(a, b), (b, a)] {
            if let Some(&l) = self.access.get(&x)
                && self.links[l.index()].b == y
                && x != y
            {
                return Some(l);
            }
        }
        let joins = |l: &Link| (l.a, l.b) == (a, b) || (l.a, l.b) == (b, a);
        self.routed
            .get(a.index())?
            .iter()
            .copied()
            .find(|l| joins(&self.links[l.index()]))
    }

    pub fn set_link_up(&mut self, link: LinkId, up: bool) {
        self.links[link.index()].up = up;
    }

    /// Whether a device takes part in the underlay: deleted nodes do not; crashed nodes still
    /// have their links up (SPEC §2.5) but do not forward.
    pub(crate) fn present(&self, d: DeviceId) -> bool {
        match self.devices[d.index()].kind {
            DeviceKind::Node(n) => !self.nodes[n.index()].deleted,
            _ => true,
        }
    }

    /// Devices one hop from `d` over links that are up, with the one-way latency to each.
    /// Members of a rack segment are one access latency apart.
    pub fn neighbours(&self, d: DeviceId) -> Vec<(DeviceId, SimDuration)> {
        let mut out = Vec::new();
        self.each_neighbour(d, &|_| true, |o, latency| out.push((o, latency)));
        out
    }

    /// The devices on the segment `d` (a node or a ToR, which alone have access links) is
    /// attached to: its rack's ToR, then the rack's nodes, `d` among them.
    fn segment_members(&self, d: DeviceId) -> impl Iterator<Item = DeviceId> + '_ {
        let rack = match self.devices[d.index()].kind {
            DeviceKind::Node(n) => self.nodes[n.index()].rack,
            DeviceKind::Tor(r) => r,
            _ => unreachable!("only nodes and ToRs are attached to a segment"),
        };
        let rack = &self.racks[rack.index()];
        std::iter::once(rack.tor).chain(rack.nodes.iter().map(|n| self.nodes[n.index()].device))
    }

    /// Calls `f` with each device one hop from `d` over links that are up and that `links`
    /// accepts, and the one-way latency to it; a segment peer is reached over both access
    /// links, its own and `d`'s.
    fn each_neighbour(
        &self,
        d: DeviceId,
        links: &impl Fn(&Link) -> bool,
        mut f: impl FnMut(DeviceId, SimDuration),
    ) {
        if !self.present(d) {
            return;
        }
        let usable = |l: LinkId| {
            let link = &self.links[l.index()];
            (link.up && links(link)).then_some(link)
        };
        if let Some(link) = self.access.get(&d).and_then(|&l| usable(l)) {
            for p in self.segment_members(d) {
                let peer_up = self.access.get(&p).is_some_and(|&l| usable(l).is_some());
                if p != d && peer_up && self.present(p) {
                    f(p, link.latency);
                }
            }
        }
        for &l in &self.routed[d.index()] {
            if let Some(link) = usable(l) {
                f(if link.a == d { link.b } else { link.a }, link.latency);
            }
        }
    }

    /// Calls `f` with each device that `tails` accepts and that `d` is one hop from (the
    /// reverse of [`Topology::neighbours`]: `(u, l)` comes here exactly when `(d, l)` is
    /// among `u`'s neighbours), and the one-way latency from it. A segment peer reaches `d`
    /// at the latency of its own access link, so the two differ in latencies where a
    /// segment's access links do; a deleted device is still reached over its routed links
    /// that are up (it has no neighbours of its own). `tails` is asked before anything else
    /// of a device, so a host's ways in from routers cost one look at each segment peer.
    pub fn each_way_in(
        &self,
        d: DeviceId,
        tails: impl Fn(DeviceId) -> bool,
        mut f: impl FnMut(DeviceId, SimDuration),
    ) {
        let usable = |l: LinkId| {
            let link = &self.links[l.index()];
            link.up.then_some(link)
        };
        if self.present(d) && self.access.get(&d).and_then(|&l| usable(l)).is_some() {
            for p in self.segment_members(d) {
                if p == d || !tails(p) || !self.present(p) {
                    continue;
                }
                if let Some(link) = self.access.get(&p).and_then(|&l| usable(l)) {
                    f(p, link.latency);
                }
            }
        }
        for &l in &self.routed[d.index()] {
            if let Some(link) = usable(l) {
                let other = if link.a == d { link.b } else { link.a };
                if tails(other) && self.present(other) {
                    f(other, link.latency);
                }
            }
        }
    }

    /// The connected components of the one-hop relation [`Topology::neighbours`] gives
    /// (links that are up, deleted nodes apart): each device's component is named by its
    /// smallest member's index. A rack segment is one meeting point for every present member
    /// whose access link is up (a device's access link starts at the device), so a rack of n
    /// nodes costs n unions rather than n².
    pub fn components(&self) -> Vec<u32> {
        let mut parent: Vec<usize> = (0..self.devices.len()).collect();
        fn find(parent: &mut [usize], mut x: usize) -> usize {
            while parent[x] != x {
                parent[x] = parent[parent[x]];
                x = parent[x];
            }
            x
        }
        let mut join = |a: DeviceId, b: DeviceId| {
            let (ra, rb) = (find(&mut parent, a.index()), find(&mut parent, b.index()));
            parent[ra.max(rb)] = ra.min(rb);
        };
        // The first attached member met of each rack stands for its segment.
        let mut segment: Vec<Option<DeviceId>> = vec![None; self.racks.len()];
        for link in &self.links {
            let d = link.a;
            if link.kind != LinkKind::Access || !link.up || !self.present(d) {
                continue;
            }
            let rack = match self.devices[d.index()].kind {
                DeviceKind::Node(n) => self.nodes[n.index()].rack,
                DeviceKind::Tor(r) => r,
                _ => continue,
            };
            match segment[rack.index()] {
                None => segment[rack.index()] = Some(d),
                Some(first) => join(first, d),
            }
        }
        for (d, links) in self.routed.iter().enumerate() {
            let d = DeviceId(id_from(d));
            for l in links {
                let link = &self.links[l.index()];
                let other = if link.a == d { link.b } else { link.a };
                if link.up && (self.present(d) || self.present(other)) {
                    join(d, other);
                }
            }
        }
        (0..parent.len())
            .map(|d| find(&mut parent, d) as u32)
            .collect()
    }

    /// The shortest underlay path from `from` to `to` over links that are up (see
    /// [`Topology::shortest_path_tree`]).
    pub fn shortest_path(&self, from: DeviceId, to: DeviceId) -> Option<UnderlayPath> {
        if !self.present(from) || !self.present(to) {
            return None;
        }
        self.shortest_path_tree(from, |_| true).path(to)
    }

    /// The shortest paths from `from` to every device over links that are up and that `links`
    /// accepts (Dijkstra's algorithm). Equal-cost paths are broken by preferring, at each
    /// device, the predecessor with the smallest name. Nodes are endpoints, never transit: a
    /// host does not route for others. Latencies are positive (validation), so a device's
    /// predecessor is the smallest-named of the devices that reach it at its distance.
    pub fn shortest_path_tree(&self, from: DeviceId, links: impl Fn(&Link) -> bool) -> PathTree {
        let n = self.devices.len();
        let mut tree = PathTree {
            from,
            dist: vec![None; n],
            prev: vec![None; n],
        };
        if from.index() >= n {
            return tree;
        }
        let PathTree { dist, prev, .. } = &mut tree;
        let name = |d: DeviceId| self.devices[d.index()].name.as_str();
        let mut done = vec![false; n];
        let mut heap = BinaryHeap::new();
        dist[from.index()] = Some(0);
        heap.push(Reverse((0u64, name(from), from)));
        while let Some(Reverse((d, _, u))) = heap.pop() {
            if done[u.index()] {
                continue;
            }
            done[u.index()] = true;
            if u != from && !self.devices[u.index()].is_router() {
                continue;
            }
            self.each_neighbour(u, &links, |v, latency| {
                let nd = d + latency.as_nanos();
                let better = match dist[v.index()] {
                    None => true,
                    Some(old) if nd < old => true,
                    Some(old) if nd == old => prev[v.index()].is_some_and(|p| name(u) < name(p)),
                    _ => false,
                };
                if better && !done[v.index()] {
                    dist[v.index()] = Some(nd);
                    prev[v.index()] = Some(u);
                    heap.push(Reverse((nd, name(v), v)));
                }
            });
        }
        tree
    }
}

/// Shortest paths from one device, as [`Topology::shortest_path_tree`] computes them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathTree {
    from: DeviceId,
    /// One-way latency in nanoseconds to each device, by index (`None`: unreachable).
    dist: Vec<Option<u64>>,
    /// Each reached device's predecessor on its path (`None` for the source).
    prev: Vec<Option<DeviceId>>,
}

impl PathTree {
    /// The one-way latency to `to`, `None` when it is unreachable.
    pub fn latency(&self, to: DeviceId) -> Option<SimDuration> {
        self.nanos(to).map(SimDuration::from_nanos)
    }

    fn nanos(&self, to: DeviceId) -> Option<u64> {
        self.dist.get(to.index()).copied().flatten()
    }

    /// One-way latency in nanoseconds to every device, by index (`None`: unreachable).
    pub fn into_distances(self) -> Vec<Option<u64>> {
        self.dist
    }

    /// The device right after the source on the path to `to` (`to` itself when adjacent);
    /// `None` when `to` is the source or unreachable.
    pub fn first_hop(&self, to: DeviceId) -> Option<DeviceId> {
        let mut hop = to;
        loop {
            let p = self.prev.get(hop.index()).copied().flatten()?;
            if p == self.from {
                return Some(hop);
            }
            hop = p;
        }
    }

    /// The path to `to`, `None` when it is unreachable.
    pub fn path(&self, to: DeviceId) -> Option<UnderlayPath> {
        let total = self.nanos(to)?;
        let mut hops = vec![to];
        let mut cur = to;
        while cur != self.from {
            cur = self.prev[cur.index()]?;
            hops.push(cur);
        }
        hops.reverse();
        Some(UnderlayPath {
            hops,
            latency: SimDuration::from_nanos(total),
        })
    }
}

/// The name podnet gives a zone's i-th spine (from 1).
pub fn spine_name(zone: &str, index: u32) -> String {
    format!("spine-{zone}-{index}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, ip: [u8; 4]) -> NewNode {
        NewNode {
            name: name.to_string(),
            ip: IpAddr::from(ip),
            os: Os::Linux,
            max_pods: 110,
            labels: Labels::new(),
            bgp: NodeBgp::default(),
        }
    }

    /// Two zones, two racks each, two nodes per rack, two spines per zone.
    fn two_zones() -> Topology {
        let mut t = Topology::new(Fabric {
            spines_per_zone: 2,
            ..Fabric::default()
        });
        let mut loopbacks = BTreeMap::new();
        for (z, zone) in ["a", "b"].iter().enumerate() {
            let zid = t.add_zone(zone, Labels::new(), 65100 + 100 * z as u32);
            for r in 0..2u8 {
                let third = (z as u8) * 2 + r;
                let rack = t.add_rack(
                    zid,
                    &format!("{zone}{r}"),
                    format!("10.{third}.0.0/24").parse().unwrap(),
                    IpAddr::from([10, third, 0, 1]),
                    Labels::new(),
                    65101 + 100 * z as u32 + u32::from(r),
                );
                for h in 0..2u8 {
                    t.add_node(
                        rack,
                        node(&format!("{zone}{r}-n{h}"), [10, third, 0, 10 + h]),
                    );
                }
            }
        }
        for (i, name) in ["core", "spine-a-1", "spine-a-2", "spine-b-1", "spine-b-2"]
            .iter()
            .enumerate()
        {
            loopbacks.insert(name.to_string(), IpAddr::from([100, 127, 0, 1 + i as u8]));
        }
        t.add_fabric(&loopbacks, 65000);
        t
    }

    fn names(t: &Topology, p: &UnderlayPath) -> Vec<String> {
        p.hops.iter().map(|d| t.device(*d).name.clone()).collect()
    }

    #[test]
    fn same_rack_nodes_are_one_access_hop_apart() {
        let t = two_zones();
        let a = t.device_by_name("a0-n0").unwrap();
        let b = t.device_by_name("a0-n1").unwrap();
        let p = t.shortest_path(a, b).unwrap();
        assert_eq!(names(&t, &p), ["a0-n0", "a0-n1"]);
        assert_eq!(p.latency, SimDuration::from_micros(20));
    }

    #[test]
    fn cross_rack_paths_go_through_the_spine_with_the_smallest_name() {
        let t = two_zones();
        let a = t.device_by_name("a0-n0").unwrap();
        let b = t.device_by_name("a1-n0").unwrap();
        let p = t.shortest_path(a, b).unwrap();
        assert_eq!(
            names(&t, &p),
            ["a0-n0", "tor-a0", "spine-a-1", "tor-a1", "a1-n0"]
        );
        assert_eq!(p.latency, SimDuration::from_micros(20 + 50 + 50 + 20));
    }

    #[test]
    fn cross_zone_paths_cross_the_core_and_avoid_down_links() {
        let mut t = two_zones();
        let a = t.device_by_name("a0-n0").unwrap();
        let b = t.device_by_name("b1-n1").unwrap();
        let p = t.shortest_path(a, b).unwrap();
        assert_eq!(
            names(&t, &p),
            [
                "a0-n0",
                "tor-a0",
                "spine-a-1",
                "core",
                "spine-b-1",
                "tor-b1",
                "b1-n1"
            ]
        );
        let tor = t.device_by_name("tor-a0").unwrap();
        let spine = t.device_by_name("spine-a-1").unwrap();
        let link = t.link_between(tor, spine).unwrap();
        t.set_link_up(link, false);
        let p = t.shortest_path(a, b).unwrap();
        assert_eq!(names(&t, &p)[2], "spine-a-2");
    }

    #[test]
    fn hosts_are_not_transit_and_a_cut_access_link_isolates_a_node() {
        let mut t = two_zones();
        let a = t.device_by_name("a0-n0").unwrap();
        let tor = t.device_by_name("tor-a0").unwrap();
        let link = t.link_between(a, tor).unwrap();
        t.set_link_up(link, false);
        let b = t.device_by_name("a0-n1").unwrap();
        assert!(t.shortest_path(a, b).is_none());
        assert!(t.shortest_path(b, tor).is_some());
    }

    #[test]
    fn a_link_filter_keeps_a_tree_off_the_segments() {
        let t = two_zones();
        let spine = t.device_by_name("spine-a-1").unwrap();
        let routed = t.shortest_path_tree(spine, |l| l.kind != LinkKind::Access);
        // Over fabric links alone, tor-b0 is spine-a-1 → core → spine-b-1 → tor-b0: two
        // inter-zone links (1 ms each) and one fabric link (50 µs); spine-b-2 offers the same
        // cost and loses to spine-b-1 by name.
        let tor_b0 = t.device_by_name("tor-b0").unwrap();
        let core = t.device_by_name("core").unwrap();
        assert_eq!(routed.first_hop(tor_b0), Some(core));
        assert_eq!(
            routed.latency(tor_b0),
            Some(SimDuration::from_micros(1000 + 1000 + 50))
        );
        let path = routed.path(tor_b0).unwrap();
        assert_eq!(
            names(&t, &path),
            ["spine-a-1", "core", "spine-b-1", "tor-b0"]
        );
        // Nodes are only reached over access links, so the filtered tree never reaches them;
        // the unfiltered one does, through the ToR.
        let node = t.device_by_name("a0-n0").unwrap();
        assert_eq!(routed.latency(node), None);
        assert_eq!(routed.first_hop(node), None);
        let all = t.shortest_path_tree(spine, |_| true);
        assert_eq!(all.latency(node), Some(SimDuration::from_micros(50 + 20)));
        assert_eq!(all.first_hop(node), t.device_by_name("tor-a0"));
        assert_eq!(all.first_hop(spine), None);
    }

    #[test]
    fn devices_and_links_are_counted_as_specified() {
        let t = two_zones();
        // 8 nodes + 4 ToRs + 4 spines + core.
        assert_eq!(t.devices.len(), 17);
        // 8 + 4 access, 4 racks × 2 spines fabric, 4 spines × core.
        assert_eq!(t.links.len(), 12 + 8 + 4);
    }
}
