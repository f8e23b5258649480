//! Building the topology: zones, racks and their nodes, the fabric's routers and AS numbers.
//! The nodes themselves (addresses, labels, Calico `Node` resources) are built in `nodes.rs`.

use super::*;

impl Builder<'_> {
    /// Registers the names of the nodes of a rack that cannot be built (its subnet is
    /// missing or unusable), so that events and expectations naming them are not also
    /// refused as "no node named ...": one broken field gives one error, not knock-ons.
    /// Nothing else about these nodes is checked until the rack is fixed.
    /// The rack's ToR is not built either, and is marked the same way.
    pub(super) fn claim_unbuilt_nodes(&mut self, r: &RawRack) {
        if let Some(rack) = &r.name {
            // The ToR's name was claimed at the rack's `name`; only that claim is re-marked
            // (a name first taken elsewhere keeps its owner).
            let claimed_here = format!("{}.name", self.cx.path());
            let unbuilt = format!("{}{UNBUILT_NODES}", self.cx.path());
            if let Some((_, path)) = self.names.get_mut(&format!("tor-{}", rack.value))
                && *path == claimed_here
            {
                *path = unbuilt;
            }
        }
        let Some(nodes) = &r.nodes else { return };
        for n in &nodes.value {
            let n = &n.value;
            let names: Vec<(String, Pos)> = match (&n.name, &n.name_prefix, &n.count) {
                (Some(name), _, _) => vec![(name.value.clone(), name.pos)],
                (None, Some(prefix), Some(count)) if u64::from(count.value) <= LIMITS.max_nodes => {
                    (1..=count.value)
                        .map(|i| (format!("{}-{i}", prefix.value), prefix.pos))
                        .collect()
                }
                _ => Vec::new(),
            };
            for (name, pos) in names {
                let path = format!("{}{UNBUILT_NODES}", self.cx.path());
                self.names.entry(name).or_insert((pos, path));
            }
        }
    }

    /// Registers the name of a router podnet creates (a spine or the core); a zone, rack or
    /// node that already took it is told to choose another name.
    pub(super) fn claim_router_name(&mut self, name: &str) {
        if let Some((pos, path)) = self.names.get(name).cloned() {
            self.cx.error_at(
                pos,
                &path,
                format!("`{name}` is the name of a router podnet creates; choose another name"),
            );
        } else {
            self.names
                .insert(name.to_string(), (Pos::default(), String::new()));
        }
    }

    pub(super) fn topology(&mut self, raw: &RawTopology) -> Option<Topology> {
        let fabric = self.fabric(raw.fabric.as_ref());
        let mut topo = Topology::new(fabric);
        let zones = self.cx.require(&raw.zones, raw.pos, "zones")?;
        if zones.value.is_empty() {
            self.cx.at_key("zones", |cx| {
                cx.error(zones.pos, "at least one zone is needed")
            });
        }
        if !self.node_total_within_limit(&zones.value) {
            return None;
        }
        let mut node_ips: BTreeMap<IpAddr, (String, Pos)> = BTreeMap::new();
        let mut subnets = RackSubnets::default();
        let mut total_nodes: u64 = 0;
        let mut node_labels: u64 = 0;
        let mut router_as: Vec<RouterAs> = Vec::new();
        let mut generated = Vec::new();

        self.cx.at_key("zones", |cx| {
            let mut b = Builder {
                cx,
                names: std::mem::take(&mut self.names),
            };
            for (zi, zone) in zones.value.iter().enumerate() {
                b.cx.at_index(zi, |cx| {
                    let mut zb = Builder {
                        cx,
                        names: std::mem::take(&mut b.names),
                    };
                    let z = &zone.value;
                    let name = zb
                        .cx
                        .require(&z.name, z.pos, "name")
                        .map(|n| n.value.clone())
                        .unwrap_or_default();
                    if let Some(n) = &z.name {
                        zb.cx.at_key("name", |cx| {
                            let mut nb = Builder {
                                cx,
                                names: std::mem::take(&mut zb.names),
                            };
                            check_dns(nb.cx, &n.value, n.pos);
                            nb.claim_name(&n.value, n.pos, "zone");
                            zb.names = nb.names;
                        });
                    }
                    let default_as = 65000 + 100 * (zi as u64 + 1);
                    let zone_as =
                        zb.as_number(&z.as_number, default_as, &name, &mut router_as, z.pos);
                    let zid = topo.add_zone(&name, labels(&z.labels), zone_as);
                    if let Some(racks) = &z.racks {
                        zb.cx.at_key("racks", |cx| {
                            let mut rb = Builder {
                                cx,
                                names: std::mem::take(&mut zb.names),
                            };
                            for (ri, rack) in racks.value.iter().enumerate() {
                                rb.cx.at_index(ri, |cx| {
                                    let mut b = Builder {
                                        cx,
                                        names: std::mem::take(&mut rb.names),
                                    };
                                    b.rack(
                                        &mut topo,
                                        zid,
                                        zone_as,
                                        ri,
                                        &rack.value,
                                        &mut subnets,
                                        &mut node_ips,
                                        &mut total_nodes,
                                        &mut node_labels,
                                        &mut router_as,
                                        &mut generated,
                                    );
                                    rb.names = b.names;
                                });
                            }
                            zb.names = rb.names;
                        });
                    }
                    b.names = zb.names;
                });
            }
            self.names = b.names;
        });

        // Routers' loopbacks: core first, then spines in name order, from 100.127.0.1.
        let mut routers: Vec<String> = Vec::new();
        for z in &topo.zones {
            for i in 1..=fabric.spines_per_zone {
                routers.push(spine_name(&z.name, i));
            }
        }
        routers.sort();
        // Zones with the same name (already reported) would give the same spine names twice.
        routers.dedup();
        if topo.zones.len() >= 2 {
            routers.insert(0, "core".to_string());
        }
        let mut loopbacks = BTreeMap::new();
        for (i, name) in routers.iter().enumerate() {
            let Ok(offset) = u32::try_from(i + 1) else {
                break;
            };
            if offset >= 65535 {
                self.cx.error(
                    raw.pos,
                    "more routers than 100.127.0.0/16 has loopback addresses",
                );
                break;
            }
            let base = u32::from(Ipv4Addr::new(100, 127, 0, 0));
            loopbacks.insert(name.clone(), IpAddr::V4(Ipv4Addr::from(base + offset)));
            self.claim_router_name(name);
        }
        let core_as = 65000;
        if topo.zones.len() >= 2 {
            let path = self.cx.path();
            router_as.push(RouterAs {
                asn: core_as,
                owner: "core".to_string(),
                defaulted: true,
                pos: raw.pos,
                path,
            });
        }
        if fabric.bgp {
            self.check_default_as(&router_as);
        }
        topo.add_fabric(&loopbacks, core_as);
        let _ = generated;
        Some(topo)
    }

    /// Adds up every generator before building anything, so a topology over the node limit
    /// is refused without first building the nodes that fit.
    pub(super) fn node_total_within_limit(&mut self, zones: &[Loc<RawZone>]) -> bool {
        let mut total: u64 = 0;
        for (zi, zone) in zones.iter().enumerate() {
            for (ri, rack) in zone
                .value
                .racks
                .iter()
                .flat_map(|r| r.value.iter())
                .enumerate()
            {
                for (ni, node) in rack
                    .value
                    .nodes
                    .iter()
                    .flat_map(|n| n.value.iter())
                    .enumerate()
                {
                    let count = node.value.count.as_ref().map_or(1, |c| u64::from(c.value));
                    total += count;
                    if total > LIMITS.max_nodes {
                        let pos = node.value.count.as_ref().map_or(node.pos, |c| c.pos);
                        let message = if count > LIMITS.max_nodes {
                            format!("{count} is outside 1..={}", LIMITS.max_nodes)
                        } else {
                            format!(
                                "the topology would have more than {} nodes",
                                LIMITS.max_nodes
                            )
                        };
                        self.cx.error_at(
                            pos,
                            &format!("topology.zones[{zi}].racks[{ri}].nodes[{ni}].count"),
                            message,
                        );
                        return false;
                    }
                }
            }
        }
        true
    }

    pub(super) fn fabric(&mut self, raw: Option<&Loc<RawFabric>>) -> Fabric {
        let mut f = Fabric::default();
        let Some(raw) = raw else { return f };
        let r = &raw.value;
        self.cx.at_key("fabric", |cx| {
            let b = Builder {
                cx,
                names: BTreeMap::new(),
            };
            f.bgp = val(&r.bgp).unwrap_or(false);
            f.ecmp = val(&r.ecmp).unwrap_or(false);
            if let Some(s) = &r.spines_per_zone {
                if (1..=64).contains(&s.value) {
                    f.spines_per_zone = s.value;
                } else {
                    b.cx.at_key("spinesPerZone", |cx| {
                        cx.error(s.pos, format!("{} is outside 1..=64", s.value))
                    });
                }
            }
            if let Some(lat) = &r.latency {
                b.cx.at_key("latency", |cx| {
                    let d = Latencies::default();
                    f.latency = Latencies {
                        access: positive(cx, &lat.value.access, "access", d.access),
                        fabric: positive(cx, &lat.value.fabric, "fabric", d.fabric),
                        inter_zone: positive(cx, &lat.value.inter_zone, "interZone", d.inter_zone),
                    };
                });
            }
        });
        f
    }

    /// An explicit AS number, or the default (recorded for the range and collision checks).
    pub(super) fn as_number(
        &mut self,
        field: &Option<Loc<u32>>,
        default: u64,
        owner: &str,
        router_as: &mut Vec<RouterAs>,
        parent: Pos,
    ) -> u32 {
        match field {
            Some(a) => {
                if a.value == 0 {
                    self.cx
                        .at_key("asNumber", |cx| cx.error(a.pos, "AS number 0 is reserved"));
                }
                let path = self.cx.path();
                router_as.push(RouterAs {
                    asn: a.value,
                    owner: owner.to_string(),
                    defaulted: false,
                    pos: a.pos,
                    path,
                });
                a.value
            }
            None => {
                let v = u32::try_from(default).unwrap_or(u32::MAX);
                let path = self.cx.path();
                router_as.push(RouterAs {
                    asn: v,
                    owner: owner.to_string(),
                    defaulted: true,
                    pos: parent,
                    path,
                });
                v
            }
        }
    }

    /// SPEC §2.1: a default AS outside 64512–65534, or colliding with another router's AS,
    /// needs an explicit `asNumber`.
    pub(super) fn check_default_as(&mut self, router_as: &[RouterAs]) {
        for (i, r) in router_as.iter().enumerate() {
            if !r.defaulted {
                continue;
            }
            let (asn, owner) = (r.asn, &r.owner);
            if !(64512..=65534).contains(&asn) {
                self.cx.error_at(
                    r.pos,
                    &r.path,
                    format!(
                        "the default AS {asn} of `{owner}` is outside the private range \
                         64512-65534; set `asNumber` here explicitly"
                    ),
                );
            } else if let Some(other) = router_as
                .iter()
                .enumerate()
                .find(|(j, o)| *j != i && o.asn == asn)
                .map(|(_, o)| o)
            {
                self.cx.error_at(
                    r.pos,
                    &r.path,
                    format!(
                        "the default AS {asn} of `{owner}` collides with `{}` ({}); \
                         set `asNumber` here explicitly",
                        other.owner,
                        other.pos.place()
                    ),
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn rack(
        &mut self,
        topo: &mut Topology,
        zone: ZoneId,
        zone_as: u32,
        ri: usize,
        r: &RawRack,
        subnets: &mut RackSubnets,
        node_ips: &mut BTreeMap<IpAddr, (String, Pos)>,
        total_nodes: &mut u64,
        node_labels: &mut u64,
        router_as: &mut Vec<RouterAs>,
        generated: &mut Vec<String>,
    ) {
        let name = self
            .cx
            .require(&r.name, r.pos, "name")
            .map(|n| n.value.clone())
            .unwrap_or_default();
        if let Some(n) = &r.name {
            self.cx.at_key("name", |cx| {
                check_dns(cx, &n.value, n.pos);
            });
            self.cx.at_key("name", |cx| {
                let mut b = Builder {
                    cx,
                    names: std::mem::take(&mut self.names),
                };
                b.claim_name(&n.value, n.pos, "rack");
                b.claim_name(&format!("tor-{}", n.value), n.pos, "device");
                self.names = b.names;
            });
        }
        let Some(subnet) = self.cx.require(&r.subnet, r.pos, "subnet") else {
            self.claim_unbuilt_nodes(r);
            return;
        };
        let net = subnet.value.0;
        let found = subnets.index.overlapping(net, None, MAX_OVERLAPS_NAMED);
        for &j in &found.first {
            let (other, other_name, other_pos) = &subnets.racks[j];
            self.cx.at_key("subnet", |cx| {
                cx.error(
                    subnet.pos,
                    format!(
                        "{net} overlaps {other} of rack `{other_name}` ({})",
                        other_pos.place()
                    ),
                )
            });
        }
        if found.total > found.first.len() {
            let more = found.total - found.first.len();
            self.cx.at_key("subnet", |cx| {
                cx.error(
                    subnet.pos,
                    format!("{net} overlaps {more} more racks' subnets"),
                )
            });
        }
        subnets.index.insert(net, subnets.racks.len());
        subnets.racks.push((net, name.clone(), subnet.pos));
        let gateway = match &r.gateway {
            Some(g) => {
                if !net.contains(&g.value) {
                    self.cx.at_key("gateway", |cx| {
                        cx.error(
                            g.pos,
                            format!("{} is outside the rack subnet {net}", g.value),
                        )
                    });
                }
                g.value
            }
            None => match nth_host(net, 0) {
                Some(ip) => ip,
                None => {
                    self.cx.at_key("subnet", |cx| {
                        cx.error(
                            subnet.pos,
                            format!("{net} has no host address for the gateway"),
                        )
                    });
                    self.claim_unbuilt_nodes(r);
                    return;
                }
            },
        };
        let tor_default = u64::from(zone_as) + 1 + ri as u64;
        let tor_as = self.as_number(
            &r.as_number,
            tor_default,
            &format!("tor-{name}"),
            router_as,
            r.pos,
        );
        let rack_labels = labels(&r.labels);
        let rack_bgp_as = r.bgp.as_ref().and_then(|b| val(&b.value.as_number));
        if let Some(bgp) = &r.bgp
            && let Some(cid) = &bgp.value.route_reflector_cluster_id
        {
            self.cx.at_key("bgp", |cx| {
                cx.at_key("routeReflectorClusterID", |cx| {
                    cx.error(
                        cid.pos,
                        "set `routeReflectorClusterID` on the route reflector nodes, not on a rack",
                    )
                })
            });
        }
        let rack = topo.add_rack(zone, &name, net, gateway, rack_labels.clone(), tor_as);
        let Some(nodes) = &r.nodes else { return };

        // Explicit addresses first, so generated ones skip them.
        let mut taken: BTreeSet<IpAddr> = BTreeSet::from([gateway]);
        for n in &nodes.value {
            if let Some(ip) = &n.value.ip {
                taken.insert(ip.value);
            }
        }
        let mut cursor = AddressCursor::new(net, gateway);
        self.cx.at_key("nodes", |cx| {
            let mut b = Builder {
                cx,
                names: std::mem::take(&mut self.names),
            };
            for (ni, entry) in nodes.value.iter().enumerate() {
                b.cx.at_index(ni, |cx| {
                    let mut nb = Builder {
                        cx,
                        names: std::mem::take(&mut b.names),
                    };
                    nb.node_entry(
                        topo,
                        rack,
                        &entry.value,
                        rack_bgp_as,
                        &mut taken,
                        &mut cursor,
                        node_ips,
                        total_nodes,
                        node_labels,
                        generated,
                    );
                    b.names = nb.names;
                });
            }
            self.names = b.names;
        });
    }
}

/// A router's AS number and where it was set (or would be set), for the default checks.
pub(super) struct RouterAs {
    asn: u32,
    owner: String,
    defaulted: bool,
    pos: Pos,
    path: String,
}

/// Overlapping subnets named in one rack's errors; the rest are counted in one more.
const MAX_OVERLAPS_NAMED: usize = 10;

/// The subnets of the racks built so far, indexed so each new rack is checked against all of
/// them without comparing every pair (`model::prefixes`).
#[derive(Default)]
pub(super) struct RackSubnets {
    racks: Vec<(IpNet, String, Pos)>,
    index: Prefixes,
}
