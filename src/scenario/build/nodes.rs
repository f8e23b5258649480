//! Building the nodes: each node entry with its defaulted address, automatic labels and
//! the address cursor that hands out default addresses, and Calico `Node` resources merged
//! into their nodes.

use super::*;

impl Builder<'_> {
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
