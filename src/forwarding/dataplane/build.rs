//! Building a [`Dataplane`]: what the simulator passes in through [`DataplaneBuilder`] (pools,
//! pods, blackholes, learned routes per device or in shared tables), and what the builder
//! derives by itself at the end (connected and default routes, the fabric's routes along the
//! shortest paths, the routes towards externals), with recursive next-hop resolution.
//!
//! The builder derives what the topology alone gives when it is made (the base), writes down
//! everything else it is told (the recipe: each call, a pod as its place without its key)
//! and cooks the [`Routing`] from the two when built. So a [`DataplaneMemo`] can tell, before
//! cooking, that a build has the base and recipe of the routing it kept, and give that one:
//! the routing is a function of them (cooking reads nothing else).
//!
//! Invariants: those of the parent module; a learned route whose next hop does not resolve
//! is left out when the dataplane is built; the pods told one after another are cooked in
//! the order of their places, which gives what the order told would (each pod writes only
//! its own address's entries).

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::*;

impl DataplaneBuilder {
    pub(super) fn new(topology: &Topology) -> DataplaneBuilder {
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
                    owners.entry((r, d.address)).or_insert(Holder::Device(id));
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
        let mut dp = Routing {
            devices,
            racks,
            fibs: vec![DeviceFib::default(); n],
            igp: vec![Table::default(); n],
            igp_flat: vec![None; n],
            lens: vec![0; n],
            links,
            pools: Vec::new(),
            owners,
            device_by_address,
            externals: Vec::new(),
            equal_paths: BTreeMap::new(),
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
            base: dp,
            recipe: Vec::new(),
            shared_tables: 0,
            pods: BTreeMap::new(),
            pod_by_ip: FastMap::default(),
            node_devices,
        }
    }

    /// Declares an IP pool's encapsulation; traffic to addresses outside every pool is
    /// forwarded natively.
    pub fn pool(&mut self, cidr: IpNet, ipip: EncapMode, vxlan: EncapMode) -> &mut Self {
        self.recipe.push(Call::Pool(PoolEncap {
            cidr: cidr.trunc(),
            ipip,
            vxlan,
            nat_outgoing: false,
        }));
        self
    }

    /// Marks a declared pool `natOutgoing` (REFERENCE-policy §3.5).
    pub fn nat_outgoing(&mut self, cidr: IpNet) -> &mut Self {
        self.recipe.push(Call::NatOutgoing(cidr.trunc()));
        self
    }

    /// Adds a pod that has an address. A Calico pod gets a `Local` /32 on its node; a
    /// segment-attached pod becomes the owner of its address on its rack's segment when the
    /// address lies in the rack subnet; a host-network pod takes its node's address (`ip` is
    /// ignored) and adds no route: the node delivers its own address. Returns false (and adds
    /// nothing) when the node is unknown or deleted, or the key or address is already taken.
    pub fn pod(&mut self, key: PodKey, ip: IpAddr, node: NodeId, attachment: Attachment) -> bool {
        let Some((device, rack)) = self.node_devices.get(node.index()).copied().flatten() else {
            return false;
        };
        // A host-network pod is its node: the node's address, shared, so not in `pod_by_ip`.
        let host_network = attachment == Attachment::Host;
        let ip = if host_network {
            let Some(info) = self.base.devices.get(device.index()) else {
                return false;
            };
            info.address
        } else {
            ip
        };
        if self.pods.contains_key(&key) || (!host_network && self.pod_by_ip.contains_key(&ip)) {
            return false;
        }
        let subnet = self.base.racks.get(rack.index()).map(|r| r.subnet);
        let wrong_subnet = match attachment {
            Attachment::Calico | Attachment::Host => false,
            Attachment::Segment { .. } => !subnet.is_some_and(|s| s.contains(&ip)),
        };
        let place = Place {
            ip,
            node,
            device,
            rack,
            attachment,
            wrong_subnet,
        };
        match self.recipe.last_mut() {
            Some(Call::Pods(run)) => run.push(place),
            _ => self.recipe.push(Call::Pods(vec![place])),
        }
        self.pods.insert(key, place.of(key));
        if !host_network {
            self.pod_by_ip.insert(ip, key);
        }
        true
    }

    /// A blackhole route on a device (a Calico node's own blocks).
    pub fn blackhole(&mut self, device: DeviceId, prefix: IpNet) -> &mut Self {
        self.recipe
            .push(Call::Overlay(device, prefix, Stored::Blackhole));
        self
    }

    /// A learned route of one device (a BGP best route, or a Felix VXLAN route); it wins over
    /// a shared table's route for the same prefix.
    pub fn learned(&mut self, device: DeviceId, prefix: IpNet, next_hop: IpAddr) -> &mut Self {
        self.recipe
            .push(Call::Overlay(device, prefix, Stored::Learned { next_hop }));
        self
    }

    /// Hides a shared table's route for exactly this prefix from one device (a route the
    /// others have and this device did not learn).
    pub fn withhold(&mut self, device: DeviceId, prefix: IpNet) -> &mut Self {
        self.recipe
            .push(Call::Overlay(device, prefix, Stored::Withdrawn));
        self
    }

    /// A table of learned routes `(prefix, next hop)` common to several devices; stored
    /// once. A later duplicate prefix replaces an earlier one.
    pub fn shared_table(
        &mut self,
        routes: impl IntoIterator<Item = (IpNet, IpAddr)>,
    ) -> SharedTableId {
        self.recipe
            .push(Call::SharedTable(routes.into_iter().collect()));
        self.shared_tables += 1;
        SharedTableId(self.shared_tables - 1)
    }

    /// The device uses a shared table, under its own routes and under the tables it already
    /// uses.
    pub fn use_shared(&mut self, device: DeviceId, table: SharedTableId) -> &mut Self {
        self.recipe.push(Call::UseShared(device, table));
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
        let routes = routes.into_iter().collect();
        self.recipe.push(Call::LearnedRoutes(device, table, routes));
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
        let (extra, missing) = (extra.into_iter().collect(), missing.into_iter().collect());
        self.recipe
            .push(Call::LearnedDifference(device, table, extra, missing));
        self
    }

    /// The equal-cost next hops of a router's learned `prefix` (the best route's first), for
    /// a fabric that does ECMP (`forwarding::ecmp`).
    pub fn equal_paths(
        &mut self,
        device: DeviceId,
        prefix: IpNet,
        next_hops: Vec<IpAddr>,
    ) -> &mut Self {
        self.recipe
            .push(Call::EqualPaths(device, prefix, next_hops));
        self
    }

    /// Resolves learned routes, withdraws those that do not resolve, and counts entries.
    pub fn build(self) -> Dataplane {
        self.build_with(None)
    }

    /// [`DataplaneBuilder::build`], given `memo`'s routing when it was built from the same
    /// base and recipe (and keeping this one's there otherwise).
    pub fn build_with(mut self, memo: Option<&DataplaneMemo>) -> Dataplane {
        for call in &mut self.recipe {
            if let Call::Pods(run) = call {
                run.sort_unstable();
            }
        }
        let routing = match memo {
            Some(memo) => memo.routing(self.base, self.recipe),
            None => Arc::new(cook(self.base, &self.recipe)),
        };
        Dataplane {
            routing,
            pods: self.pods,
            pod_by_ip: self.pod_by_ip,
        }
    }
}

/// A pod as the routing knows it: its [`PodInfo`] but the key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) struct Place {
    ip: IpAddr,
    node: NodeId,
    device: DeviceId,
    rack: RackId,
    attachment: Attachment,
    wrong_subnet: bool,
}

impl Place {
    fn of(self, key: PodKey) -> PodInfo {
        PodInfo {
            key,
            ip: self.ip,
            node: self.node,
            device: self.device,
            rack: self.rack,
            attachment: self.attachment,
            wrong_subnet: self.wrong_subnet,
        }
    }
}

/// One thing a [`DataplaneBuilder`] was told, as the routing needs it.
#[derive(Clone, PartialEq)]
pub(super) enum Call {
    Pool(PoolEncap),
    NatOutgoing(IpNet),
    /// Pods told one after another, in the order of their places once built.
    Pods(Vec<Place>),
    /// A blackhole, a learned route or a withheld prefix of one device.
    Overlay(DeviceId, IpNet, Stored),
    SharedTable(Vec<(IpNet, IpAddr)>),
    UseShared(DeviceId, SharedTableId),
    LearnedRoutes(DeviceId, SharedTableId, Vec<(IpNet, IpAddr)>),
    LearnedDifference(DeviceId, SharedTableId, Vec<(IpNet, IpAddr)>, Vec<IpNet>),
    EqualPaths(DeviceId, IpNet, Vec<IpAddr>),
}

/// The routings of the last dataplanes built with it (`DataplaneBuilder::build_with`), with
/// the base and recipe each was cooked from. A build with the same base and recipe — the same
/// topology state, routes and pod places, whatever the pods' keys — is given that routing
/// instead of cooking its own: the variants of a sweep over seeds share their FIBs. It keeps
/// the last [`DataplaneMemo::KEPT`] distinct ones, so that runs taking snapshots at several
/// instants (a node down, then up again) find each instant's.
#[derive(Default)]
pub struct DataplaneMemo {
    kept: Mutex<Vec<Arc<Kept>>>,
    given: AtomicUsize,
}

struct Kept {
    base: Routing,
    recipe: Vec<Call>,
    routing: Arc<Routing>,
}

impl DataplaneMemo {
    /// How many routings it keeps at most, the latest.
    pub const KEPT: usize = 4;

    fn routing(&self, base: Routing, recipe: Vec<Call>) -> Arc<Routing> {
        // Compared outside the lock: another build may keep its routing meanwhile.
        let kept: Vec<Arc<Kept>> = self.kept.lock().map(|k| k.clone()).unwrap_or_default();
        if let Some(k) = kept
            .iter()
            .rev()
            .find(|k| k.recipe == recipe && k.base.same_as(&base))
        {
            self.given.fetch_add(1, Ordering::Relaxed);
            return Arc::clone(&k.routing);
        }
        let routing = Arc::new(cook(base.clone(), &recipe));
        if let Ok(mut kept) = self.kept.lock() {
            if kept.len() == Self::KEPT {
                kept.remove(0);
            }
            kept.push(Arc::new(Kept {
                base,
                recipe,
                routing: Arc::clone(&routing),
            }));
        }
        routing
    }

    /// How many builds were given a kept routing.
    pub fn given(&self) -> usize {
        self.given.load(Ordering::Relaxed)
    }
}

/// The routing the recipe makes of the base: every call applied in order, then learned
/// routes resolved and the FIBs compiled and counted.
fn cook(mut r: Routing, recipe: &[Call]) -> Routing {
    let mut shared: Vec<Arc<SharedTable>> = Vec::new();
    for call in recipe {
        match call {
            Call::Pool(pool) => r.pools.push(*pool),
            Call::NatOutgoing(cidr) => {
                for p in r.pools.iter_mut().filter(|p| p.cidr == *cidr) {
                    p.nat_outgoing = true;
                }
            }
            Call::Pods(run) => {
                for place in run {
                    r.place(place);
                }
            }
            Call::Overlay(device, prefix, entry) => r.overlay(*device, *prefix, *entry),
            Call::SharedTable(routes) => {
                shared.push(Arc::new(SharedTable::from_routes(routes.iter().copied())));
            }
            Call::UseShared(device, table) => {
                if let Some(t) = shared.get(table.0) {
                    r.use_shared(*device, t);
                }
            }
            Call::LearnedRoutes(device, table, routes) => {
                if let Some(t) = shared.get(table.0) {
                    r.learned_routes(*device, t, routes);
                }
            }
            Call::LearnedDifference(device, table, extra, missing) => {
                if let Some(t) = shared.get(table.0) {
                    r.learned_difference(*device, t, extra, missing);
                }
            }
            Call::EqualPaths(device, prefix, next_hops) => {
                r.equal_paths.insert((*device, *prefix), next_hops.clone());
            }
        }
    }
    r.finish();
    r
}

impl Routing {
    fn place(&mut self, p: &Place) {
        match p.attachment {
            Attachment::Calico => {
                if let Some(fib) = self.fibs.get_mut(p.device.index()) {
                    fib.overlay.insert_ranked(host(p.ip), Stored::Local);
                }
            }
            Attachment::Segment { .. } => {
                if !p.wrong_subnet {
                    self.owners.entry((p.rack, p.ip)).or_insert(Holder::Pod);
                }
            }
            Attachment::Host => {}
        }
    }

    fn overlay(&mut self, device: DeviceId, prefix: IpNet, entry: Stored) {
        if let Some(fib) = self.fibs.get_mut(device.index()) {
            fib.overlay.insert_ranked(prefix, entry);
        }
    }

    fn use_shared(&mut self, device: DeviceId, t: &Arc<SharedTable>) {
        if let Some(fib) = self.fibs.get_mut(device.index())
            && !fib.shared.iter().any(|s| Arc::ptr_eq(s, t))
        {
            fib.shared.push(Arc::clone(t));
        }
    }

    fn learned_routes(
        &mut self,
        device: DeviceId,
        t: &Arc<SharedTable>,
        routes: &[(IpNet, IpAddr)],
    ) {
        if device.index() >= self.fibs.len() {
            return;
        }
        self.use_shared(device, t);
        let mut matched: Vec<IpNet> = Vec::new();
        for &(prefix, next_hop) in routes {
            let prefix = prefix.trunc();
            if t.next_hop_of(prefix) == Some(next_hop) {
                matched.push(prefix);
            } else {
                self.overlay(device, prefix, Stored::Learned { next_hop });
            }
        }
        matched.sort();
        matched.dedup();
        let fib = &self.fibs[device.index()];
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
                self.overlay(device, p, Stored::Withdrawn);
            }
        }
    }

    fn learned_difference(
        &mut self,
        device: DeviceId,
        t: &Arc<SharedTable>,
        extra: &[(IpNet, IpAddr)],
        missing: &[IpNet],
    ) {
        if device.index() >= self.fibs.len() {
            return;
        }
        self.use_shared(device, t);
        for &(prefix, next_hop) in extra {
            self.overlay(device, prefix.trunc(), Stored::Learned { next_hop });
        }
        for prefix in missing {
            let prefix = prefix.trunc();
            if self.fibs[device.index()].overlay.get(prefix).is_none() {
                self.overlay(device, prefix, Stored::Withdrawn);
            }
        }
    }

    /// Resolves learned routes, withdraws those that do not resolve, and counts entries.
    fn finish(&mut self) {
        self.igp_flat = self
            .igp
            .iter()
            .map(|t| Some(Flat4::compile(t.v4_map())))
            .collect();
        for i in 0..self.fibs.len() {
            let id = DeviceId(i as u32);
            // The device's own learned routes.
            let own: Vec<(IpNet, IpAddr)> = self.fibs[i]
                .overlay
                .iter()
                .filter_map(|(p, e)| match e {
                    Stored::Learned { next_hop } => Some((p, *next_hop)),
                    _ => None,
                })
                .collect();
            for (prefix, next_hop) in own {
                if self.resolve_next_hop(id, next_hop).is_none() {
                    let shadows = self.fibs[i]
                        .shared
                        .iter()
                        .any(|t| t.table.get(prefix).is_some());
                    if shadows {
                        self.fibs[i].overlay.insert(prefix, Stored::Withdrawn);
                    } else {
                        self.fibs[i].overlay.remove(prefix);
                    }
                }
            }
            // Shared routes whose next hop this device cannot resolve.
            let unresolved = unresolvable_next_hops(self, id);
            for prefix in unresolved {
                if self.fibs[i].overlay.get(prefix).is_none() {
                    self.fibs[i].overlay.insert(prefix, Stored::Withdrawn);
                }
            }
            let fib = &mut self.fibs[i];
            fib.compile();
            self.lens[i] = fib.len();
        }
    }

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
fn unresolvable_next_hops(dp: &Routing, device: DeviceId) -> Vec<IpNet> {
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
fn add_fabric_routes(dp: &mut Routing, topology: &Topology) {
    let routers = topology
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.is_router());
    for (src, _) in routers.map(|(i, d)| (DeviceId(i as u32), d)) {
        let tree = topology.shortest_path_tree(src, |l| l.kind != LinkKind::Access);
        let via = |dp: &mut Routing, dst: DeviceId, prefix: IpNet| {
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
fn add_external_routes(dp: &mut Routing, topology: &Topology) {
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
