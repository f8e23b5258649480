//! Building the topology: zones, racks and their nodes, the fabric's routers and AS numbers,
//! default node addresses, and Calico `Node` resources merged into their nodes.

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

    #[allow(clippy::too_many_arguments)]
    pub(super) fn node_entry(
        &mut self,
        topo: &mut Topology,
        rack: RackId,
        n: &RawNode,
        rack_bgp_as: Option<u32>,
        taken: &mut BTreeSet<IpAddr>,
        cursor: &mut AddressCursor,
        node_ips: &mut BTreeMap<IpAddr, (String, Pos)>,
        total_nodes: &mut u64,
        node_labels: &mut u64,
        generated: &mut Vec<String>,
    ) {
        let names: Vec<(String, Pos)> = match (&n.name, &n.name_prefix, &n.count) {
            (Some(name), None, None) => vec![(name.value.clone(), name.pos)],
            (None, Some(prefix), Some(count)) => {
                if count.value == 0 || u64::from(count.value) > LIMITS.max_nodes {
                    self.cx.at_key("count", |cx| {
                        cx.error(
                            count.pos,
                            format!("{} is outside 1..={}", count.value, LIMITS.max_nodes),
                        )
                    });
                    return;
                }
                if let Some(ip) = &n.ip {
                    self.cx.at_key("ip", |cx| {
                        cx.error(ip.pos, "a generator gives each node the next free address; remove `ip` or list the nodes by name")
                    });
                }
                if *total_nodes + u64::from(count.value) > LIMITS.max_nodes {
                    self.cx.at_key("count", |cx| {
                        cx.error(
                            count.pos,
                            format!(
                                "the topology would have more than {} nodes",
                                LIMITS.max_nodes
                            ),
                        )
                    });
                    return;
                }
                (1..=count.value)
                    .map(|i| (format!("{}-{i}", prefix.value), prefix.pos))
                    .collect()
            }
            (Some(_), Some(p), _) => {
                self.cx.error(
                    p.pos,
                    "give either `name` or `namePrefix` with `count`, not both",
                );
                return;
            }
            (None, Some(p), None) => {
                if !self.cx.has_error_under("count") {
                    self.cx
                        .error(p.pos, "a generator needs `count` with `namePrefix`");
                }
                return;
            }
            (_, None, Some(c)) => {
                if !self.cx.has_error_near("namePrefix") {
                    self.cx.error(c.pos, "`count` needs `namePrefix` (nodes `<namePrefix>-1` ... `<namePrefix>-<count>`)");
                }
                return;
            }
            (None, None, None) => {
                if !self.cx.has_error_under("name") && !self.cx.has_error_near("name") {
                    self.cx.error(
                        n.pos,
                        "missing required field `name` (or `namePrefix` with `count`)",
                    );
                }
                return;
            }
        };
        *total_nodes += names.len() as u64;
        if *total_nodes > LIMITS.max_nodes {
            self.cx.error(
                n.pos,
                format!(
                    "the topology would have more than {} nodes",
                    LIMITS.max_nodes
                ),
            );
            return;
        }
        let os = val(&n.os).unwrap_or(Os::Linux);
        let max_pods = match &n.max_pods {
            Some(m) if m.value > LIMITS.max_pods_per_node => {
                self.cx.at_key("maxPods", |cx| {
                    cx.error(
                        m.pos,
                        format!("{} is outside 0..={}", m.value, LIMITS.max_pods_per_node),
                    )
                });
                110
            }
            Some(m) => m.value,
            None => 110,
        };
        let own_labels = labels(&n.labels);
        let bgp_as = n
            .bgp
            .as_ref()
            .and_then(|b| val(&b.value.as_number))
            .or(rack_bgp_as);
        if let Some(bgp) = &n.bgp
            && let Some(a) = &bgp.value.as_number
            && a.value == 0
        {
            self.cx.at_key("bgp", |cx| {
                cx.at_key("asNumber", |cx| cx.error(a.pos, "AS number 0 is reserved"))
            });
        }
        let cluster_id = match n
            .bgp
            .as_ref()
            .and_then(|b| b.value.route_reflector_cluster_id.clone())
        {
            Some(Loc {
                value: IpAddr::V4(v4),
                ..
            }) => Some(v4),
            Some(Loc {
                value: IpAddr::V6(_),
                pos,
            }) => {
                self.cx.at_key("bgp", |cx| {
                    cx.at_key("routeReflectorClusterID", |cx| {
                        cx.error(
                            pos,
                            "a cluster ID is written as an IPv4 address, such as 244.0.0.1",
                        )
                    })
                });
                None
            }
            None => None,
        };
        // What the nodes inherit, copied once per entry: never the rack's or zone's lists of
        // nodes and racks, which grow with the file (a copy per entry was quadratic).
        let (rack_name, rack_labels, net, gateway, zone) = {
            let r = &topo.racks[rack.index()];
            (
                r.name.clone(),
                r.labels.clone(),
                r.subnet,
                r.gateway,
                r.zone,
            )
        };
        let (zone_name, zone_labels) = {
            let z = &topo.zones[zone.index()];
            (z.name.clone(), z.labels.clone())
        };
        for (name, pos) in names {
            let key = if n.name.is_some() {
                "name"
            } else {
                "namePrefix"
            };
            self.cx.at_key(key, |cx| {
                check_dns(cx, &name, pos);
            });
            self.cx.at_key(key, |cx| {
                let mut b = Builder {
                    cx,
                    names: std::mem::take(&mut self.names),
                };
                b.claim_name(&name, pos, "node");
                self.names = b.names;
            });
            let ip = match &n.ip {
                Some(ip) if n.name.is_some() => {
                    if !net.contains(&ip.value) {
                        self.cx.at_key("ip", |cx| {
                            cx.error(
                                ip.pos,
                                format!("{} is outside the rack subnet {net}", ip.value),
                            )
                        });
                    } else if ip.value == gateway {
                        self.cx.at_key("ip", |cx| {
                            cx.error(
                                ip.pos,
                                format!("{} is the rack's gateway (the ToR's address)", ip.value),
                            )
                        });
                    } else if ip.value == net.network()
                        || (net.prefix_len() < net.max_prefix_len() - 1
                            && ip.value == net.broadcast())
                    {
                        self.cx.at_key("ip", |cx| {
                            cx.error(
                                ip.pos,
                                format!("{} is not a host address of {net}", ip.value),
                            )
                        });
                    }
                    ip.value
                }
                _ => {
                    match cursor.next_free(taken) {
                        Some(ip) => ip,
                        None => {
                            self.cx.error(pos, format!("the rack subnet {net} has no free address left for node `{name}`"));
                            return;
                        }
                    }
                }
            };
            taken.insert(ip);
            if let Some((other, other_pos)) = node_ips.get(&ip) {
                let (at, field) = match &n.ip {
                    Some(l) => (l.pos, "ip"),
                    None => (pos, key),
                };
                let message = format!(
                    "address {ip} is already node `{other}`'s ({})",
                    other_pos.place()
                );
                self.cx.at_key(field, |cx| cx.error(at, message));
            } else {
                node_ips.insert(ip, (name.clone(), pos));
            }
            let mut labels = zone_labels.clone();
            labels.extend(rack_labels.clone());
            labels.extend(own_labels.clone());
            labels.extend(automatic_labels(&name, os, &zone_name, &rack_name));
            // Every node keeps its own copy of its zone's and rack's labels: bounded in total,
            // as a rack of 400,000 labels over 100,000 nodes would be 4·10^10 copies.
            *node_labels += labels.len() as u64;
            if *node_labels > LIMITS.max_node_labels {
                self.cx.error(pos, node_labels_message());
                return;
            }
            generated.push(name.clone());
            let new = NewNode {
                name,
                ip,
                os,
                max_pods,
                labels,
                bgp: NodeBgp {
                    as_number: bgp_as,
                    route_reflector_cluster_id: cluster_id,
                    ipv4_subnet: None,
                },
            };
            topo.add_node(rack, new);
        }
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

/// Calico `Node` resources (SPEC §2.3) merge into the topology node of the same name: their
/// labels (automatic labels still win), AS number, route-reflector cluster ID, and the prefix
/// of `ipv4Address`, which must hold the node's own address and decides `CrossSubnet`.
pub(super) fn merge_calico_nodes(
    topology: &mut Topology,
    resources: &[Resource],
    specs: &[Option<crate::scenario::kinds::ResourceSpec>],
    cx: &mut Cx,
) {
    for (resource, spec) in resources.iter().zip(specs) {
        let Some(crate::scenario::kinds::ResourceSpec::CalicoNode(cn)) = spec else {
            continue;
        };
        // A Node naming no topology node was already reported as a warning.
        let Some(id) = topology.node_by_name(&cn.name) else {
            continue;
        };
        let node = topology.node_mut(id);
        if let Some(address) = cn.ipv4_address {
            if address.addr() != node.ip {
                let pos = resource.locate(&["spec", "bgp", "ipv4Address"]);
                let path = if resource.path.is_empty() {
                    "spec.bgp.ipv4Address".to_string()
                } else {
                    format!("{}.spec.bgp.ipv4Address", resource.path)
                };
                cx.error_at(
                    pos,
                    &path,
                    format!(
                        "{address} does not hold node `{}`'s address {}",
                        cn.name, node.ip
                    ),
                );
                continue;
            }
            node.bgp.ipv4_subnet = Some(address.trunc());
        }
        let automatic: Vec<(String, String)> = [
            "kubernetes.io/hostname",
            "kubernetes.io/os",
            "topology.kubernetes.io/zone",
            "podnet.io/rack",
        ]
        .iter()
        .filter_map(|k| node.labels.get(*k).map(|v| (k.to_string(), v.clone())))
        .collect();
        node.labels.extend(cn.labels.clone());
        node.labels.extend(automatic);
        if cn.as_number.is_some() {
            node.bgp.as_number = cn.as_number;
        }
        if cn.route_reflector_cluster_id.is_some() {
            node.bgp.route_reflector_cluster_id = cn.route_reflector_cluster_id;
        }
    }
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

/// The error of a topology whose nodes' labels add up past `LIMITS.max_node_labels`.
pub(super) fn node_labels_message() -> String {
    format!(
        "the nodes' labels add up to more than {} (each node counts its zone's and rack's \
         labels and its 4 automatic ones)",
        LIMITS.max_node_labels
    )
}

/// The labels Kubernetes and podnet put on every node; they win over inherited labels.
pub(super) fn automatic_labels(name: &str, os: Os, zone: &str, rack: &str) -> Labels {
    Labels::from([
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        ("kubernetes.io/os".to_string(), os.as_str().to_string()),
        ("topology.kubernetes.io/zone".to_string(), zone.to_string()),
        ("podnet.io/rack".to_string(), rack.to_string()),
    ])
}

/// The `n`-th host address of a subnet (0 = the first after the network address).
pub(super) fn nth_host(net: IpNet, n: u128) -> Option<IpAddr> {
    let (base, max) = match net {
        IpNet::V4(v4) => (
            u128::from(u32::from(v4.network())),
            u128::from(u32::from(v4.broadcast())),
        ),
        IpNet::V6(v6) => (u128::from(v6.network()), u128::from(v6.broadcast())),
    };
    let candidate = base.checked_add(1)?.checked_add(n)?;
    // The broadcast address (IPv4) is not a host address except on /31 and /32.
    let last = if matches!(net, IpNet::V4(_)) && net.prefix_len() < 31 {
        max - 1
    } else {
        max
    };
    if candidate > last {
        return None;
    }
    Some(match net {
        IpNet::V4(_) => IpAddr::V4(Ipv4Addr::from(u32::try_from(candidate).ok()?)),
        IpNet::V6(_) => IpAddr::V6(std::net::Ipv6Addr::from(candidate)),
    })
}

/// Hands out a rack's default node addresses: the next free host after the gateway.
#[derive(Clone, Debug)]
pub(super) struct AddressCursor {
    net: IpNet,
    next: u128,
    /// Host index just after the gateway, where the walk began.
    start: u128,
    wrapped: bool,
}

impl AddressCursor {
    pub(super) fn new(net: IpNet, gateway: IpAddr) -> AddressCursor {
        let base = match net {
            IpNet::V4(v4) => u128::from(u32::from(v4.network())),
            IpNet::V6(v6) => u128::from(v6.network()),
        };
        let gw = match gateway {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        };
        // Host index of the gateway (index 0 is the first host); start just after it.
        let start = gw.saturating_sub(base);
        AddressCursor {
            net,
            next: start,
            start,
            wrapped: false,
        }
    }

    /// The next free host address after the gateway, wrapping to the start of the subnet
    /// once the end is reached (a gateway at the top of the subnet is common).
    pub(super) fn next_free(&mut self, taken: &BTreeSet<IpAddr>) -> Option<IpAddr> {
        loop {
            if self.wrapped && self.next >= self.start {
                return None;
            }
            let Some(ip) = nth_host(self.net, self.next) else {
                if self.wrapped {
                    return None;
                }
                self.wrapped = true;
                self.next = 0;
                continue;
            };
            self.next += 1;
            if !taken.contains(&ip) {
                return Some(ip);
            }
        }
    }
}
