//! From raw types to a validated [`Scenario`]: defaults, required fields, cross-references,
//! topology construction and input limits.
//!
//! The builder never stops at the first problem: each check reports into the shared [`Cx`]
//! with the field's position and path and goes on with what it can, so `podnet validate`
//! lists every problem at once. Values that failed to decode are simply absent here (their
//! problem was already reported) and produce no second message.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::decode::{Cx, LabelMap, Loc, StringMap};
use super::diag::Pos;
use super::raw::*;
use super::resource::Resource;
use super::{LIMITS, Scenario};
use crate::model::action::{Action, AddNodes, DeletePods, ScheduledAction};
use crate::model::expect::{Check, Expectation, PodSet, RouteTable};
use crate::model::network::{Bfd, Network, Profile, WindowsHns};
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{
    Fabric, Latencies, NewNode, NodeBgp, Os, RackId, Topology, ZoneId, spine_name,
};
use crate::model::workload::{ContainerPort, PortProtocol, Workload, WorkloadKind};
use crate::model::{Labels, TextEnum};

/// Everything gathered from the scenario file and its includes, before building.
pub struct Gathered {
    pub raw: RawScenario,
    pub resources: Vec<Resource>,
    pub workloads: Vec<(String, Loc<RawWorkload>)>,
    pub events: Vec<(String, Loc<RawEvent>)>,
    pub expect: Vec<(String, Loc<RawExpectation>)>,
}

/// Builds the scenario; `None` if any error was reported.
pub fn build(g: Gathered, cx: &mut Cx) -> Option<Scenario> {
    let raw = &g.raw;
    let mut b = Builder {
        cx,
        names: BTreeMap::new(),
    };

    let name = b.scenario_name(raw);
    let description = raw
        .description
        .as_ref()
        .map(|d| d.value.clone())
        .unwrap_or_default();
    let seed = raw.seed.as_ref().map_or(1, |s| s.value);
    let until = raw.until.as_ref().map(|u| SimTime::ZERO + u.value);
    let profile = Profile {
        calico: raw
            .profile
            .as_ref()
            .and_then(|p| p.value.calico.as_ref())
            .map(|c| c.value)
            .unwrap_or_default(),
        bgp_timers: raw
            .profile
            .as_ref()
            .and_then(|p| p.value.bgp_timers.as_ref())
            .map(|c| c.value)
            .unwrap_or_default(),
    };
    let network = b.network(raw.network.as_ref());
    let topology = match &raw.topology {
        Some(t) => b.cx.at_key("topology", |cx| {
            let mut tb = Builder {
                cx,
                names: BTreeMap::new(),
            };
            let topo = tb.topology(&t.value);
            b.names = tb.names;
            topo
        }),
        None => {
            b.cx.error(raw.pos, "missing required field `topology`");
            None
        }
    };
    let mut topology = topology.unwrap_or_default();
    topology.externals = b.cx.at_key("externals", |cx| {
        let raw = raw.externals.as_ref().map_or(&[][..], |l| &l.value[..]);
        super::externals::build(raw, &topology, cx)
    });

    let mut resources = g.resources;
    super::resource::check_unique(&resources, b.cx);
    // Workload manifests (Deployment, StatefulSet, DaemonSet, Pod) join the workloads list
    // after the scenario's own, in resource order.
    let mut raw_workloads = g.workloads;
    raw_workloads.extend(super::workload_manifest::workloads(&resources, b.cx));
    let workloads = b.workloads(&raw_workloads, &topology);
    let mut applied = Vec::new();
    let actions = b.events(
        &g.events,
        &topology,
        &workloads,
        &resources,
        &mut applied,
        &network,
    );
    let all: Vec<&Resource> = resources.iter().chain(applied.iter()).collect();
    let mut specs = super::kinds::decode_all(&all, &topology, &network, profile.calico, b.cx);
    let applied_specs = specs.split_off(resources.len());
    let policies =
        super::policy_kinds::policy_set(profile.calico, &resources, &specs, &applied_specs, b.cx);
    super::service_kind::check_cluster_ips(
        &resources,
        &specs,
        &applied,
        &applied_specs,
        network.service_cluster_ip_range,
        b.cx,
    );
    merge_calico_nodes(&mut topology, &resources, &specs, b.cx);
    let pool_names = possible_pools(&network, &specs, &applied_specs);
    for action in &actions {
        if let crate::model::action::Action::AddNodes(add) = &action.action {
            for node in &add.nodes {
                b.names
                    .entry(node.name.clone())
                    .or_insert((Pos::default(), String::new()));
            }
        }
    }
    let declared_pools = declared_pools(&resources, &applied);
    let services: BTreeSet<(String, String)> = specs
        .iter()
        .chain(&applied_specs)
        .filter_map(|s| match s {
            Some(super::kinds::ResourceSpec::Service(s)) => Some(s.key()),
            _ => None,
        })
        .collect();
    let expectations = b.expectations(
        &g.expect,
        &workloads,
        &pool_names,
        &declared_pools,
        &services,
        &topology.externals,
    );
    resources.shrink_to_fit();

    if b.cx.has_errors() {
        return None;
    }
    Some(Scenario {
        name,
        description,
        seed,
        until,
        profile,
        network,
        topology,
        resources,
        applied,
        specs,
        applied_specs,
        workloads,
        policies,
        actions,
        expectations,
        warnings: Vec::new(),
        sources: Default::default(),
    })
}

/// A workload's container ports with Kubernetes' checks (`validateContainerPorts`): the port
/// in 1..=65535, the name an IANA_SVC_NAME and unique within the pod.
fn container_ports(raw: &[Loc<RawContainerPort>], cx: &mut Cx) -> Vec<ContainerPort> {
    let mut out = Vec::new();
    let mut names: BTreeMap<String, Pos> = BTreeMap::new();
    for (i, p) in raw.iter().enumerate() {
        cx.at_index(i, |cx| {
            let r = &p.value;
            let Some(port) = &r.container_port else {
                cx.error(p.pos, "missing required field `containerPort`");
                return;
            };
            let Some(number) = u16::try_from(port.value).ok().filter(|n| *n > 0) else {
                cx.at_key("containerPort", |cx| {
                    cx.error(port.pos, format!("{} is outside 1..=65535", port.value))
                });
                return;
            };
            if let Some(name) = &r.name {
                if !ContainerPort::is_valid_name(&name.value) {
                    cx.at_key("name", |cx| {
                        cx.error(
                            name.pos,
                            format!(
                                "`{}` is not a port name: at most 15 lowercase letters, digits \
                                 and inner hyphens, with at least one letter",
                                name.value
                            ),
                        )
                    });
                    return;
                }
                if let Some(first) = names.insert(name.value.clone(), name.pos) {
                    cx.at_key("name", |cx| {
                        cx.error(
                            name.pos,
                            format!(
                                "port name `{}` is already used (line {}, column {})",
                                name.value, first.line, first.col
                            ),
                        )
                    });
                    return;
                }
            }
            out.push(ContainerPort {
                name: val(&r.name),
                container_port: number,
                protocol: val(&r.protocol).unwrap_or(PortProtocol::Tcp),
            });
        });
    }
    out
}

/// A router's AS number and where it was set (or would be set), for the default checks.
struct RouterAs {
    asn: u32,
    owner: String,
    defaulted: bool,
    pos: Pos,
    path: String,
}

/// The end of the path recorded for a node of a rack that could not be built.
const UNBUILT_NODES: &str = ".nodes";

struct Builder<'c> {
    cx: &'c mut Cx,
    /// Zones, racks, nodes and devices share one namespace: name → where it was defined.
    names: BTreeMap<String, (Pos, String)>,
}

/// Reads an optional field's value.
fn val<T: Clone>(field: &Option<Loc<T>>) -> Option<T> {
    field.as_ref().map(|l| l.value.clone())
}

/// `network.windowsHns`, or Calico's `windowsUseSingleNetwork` (true: one network, false: one
/// network per block) when it is not written; both written and disagreeing is an error.
fn windows_hns(cx: &mut Cx, r: &RawNetwork) -> WindowsHns {
    let single = val(&r.windows_use_single_network);
    match &r.windows_hns {
        Some(hns) => {
            if let Some(single) = single
                && (hns.value == WindowsHns::SingleNetwork) != single
            {
                cx.at_key("windowsHns", |cx| {
                    cx.error(
                        hns.pos,
                        format!(
                            "`{}` contradicts windowsUseSingleNetwork: {single} (write one of them)",
                            hns.value
                        ),
                    )
                });
            }
            hns.value
        }
        None if single == Some(false) => WindowsHns::NetworkPerBlock,
        None => WindowsHns::SingleNetwork,
    }
}

fn labels(field: &Option<Loc<LabelMap>>) -> Labels {
    field
        .as_ref()
        .map(|l| l.value.0.clone())
        .unwrap_or_default()
}

fn annotations(field: &Option<Loc<StringMap>>) -> Labels {
    field
        .as_ref()
        .map(|l| l.value.0.clone())
        .unwrap_or_default()
}

/// Kubernetes-style names: lowercase alphanumerics, `-` and `.`, starting and ending
/// alphanumeric, at most 253 characters.
fn is_dns_name(name: &str) -> bool {
    let b = name.as_bytes();
    !b.is_empty()
        && b.len() <= 253
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-' || *c == b'.')
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
}

impl Builder<'_> {
    fn require<'a, T>(
        &mut self,
        field: &'a Option<Loc<T>>,
        parent: Pos,
        key: &str,
    ) -> Option<&'a Loc<T>> {
        if field.is_none() && !self.cx.has_error_under(key) {
            self.cx
                .error(parent, format!("missing required field `{key}`"));
        }
        field.as_ref()
    }

    fn scenario_name(&mut self, raw: &RawScenario) -> String {
        let Some(name) = self.require(&raw.name, raw.pos, "name") else {
            return String::new();
        };
        let ok = !name.value.is_empty()
            && name.value.len() <= 63
            && name
                .value
                .bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
        if !ok {
            self.cx.at_key("name", |cx| {
                cx.error(
                    name.pos,
                    format!(
                        "`{}` must be 1-63 characters of lowercase letters, digits and `-`",
                        name.value
                    ),
                )
            });
        }
        name.value.clone()
    }

    /// Registers a name in the shared namespace of zones, racks, nodes and devices.
    /// The error is reported at `pos` under the current path, which callers set to the
    /// field holding the name.
    fn claim_name(&mut self, name: &str, pos: Pos, what: &str) {
        if let Some((first, _)) = self.names.get(name) {
            self.cx.error(
                pos,
                format!(
                    "{what} name `{name}` is already used (line {}, column {}); zones, racks, \
                     nodes and devices share one namespace",
                    first.line, first.col
                ),
            );
        } else {
            self.names.insert(name.to_string(), (pos, self.cx.path()));
        }
    }

    /// The names of nodes declared in racks that could not be built.
    fn unbuilt_nodes(&self) -> BTreeSet<String> {
        self.names
            .iter()
            .filter(|(_, (_, path))| path.ends_with(UNBUILT_NODES))
            .map(|(name, _)| name.clone())
            .collect()
    }

    /// Registers the names of the nodes of a rack that cannot be built (its subnet is
    /// missing or unusable), so that events and expectations naming them are not also
    /// refused as "no node named ...": one broken field gives one error, not knock-ons.
    /// Nothing else about these nodes is checked until the rack is fixed.
    fn claim_unbuilt_nodes(&mut self, r: &RawRack) {
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
    fn claim_router_name(&mut self, name: &str) {
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

    fn positive(
        &mut self,
        field: &Option<Loc<SimDuration>>,
        key: &str,
        default: SimDuration,
    ) -> SimDuration {
        match field {
            Some(d) if d.value == SimDuration::ZERO => {
                self.cx
                    .at_key(key, |cx| cx.error(d.pos, "must be more than 0"));
                default
            }
            Some(d) => d.value,
            None => default,
        }
    }

    fn network(&mut self, raw: Option<&Loc<RawNetwork>>) -> Network {
        let mut n = Network::default();
        let Some(raw) = raw else { return n };
        let r = &raw.value;
        self.cx.at_key("network", |cx| {
            let mut b = Builder {
                cx,
                names: BTreeMap::new(),
            };
            n.cni = val(&r.cni).unwrap_or(n.cni);
            n.calico_backend = val(&r.calico_backend).unwrap_or(n.calico_backend);
            n.datastore_delay = b.positive(&r.datastore_delay, "datastoreDelay", n.datastore_delay);
            n.windows_hns = windows_hns(b.cx, r);
            n.policy = val(&r.policy);
            if let Some(range) = &r.service_cluster_ip_range {
                match range.value.0 {
                    // kube-apiserver refuses a range wider than /12 and one with no room.
                    ipnet::IpNet::V4(net) if (12..=30).contains(&net.prefix_len()) => {
                        n.service_cluster_ip_range = net;
                    }
                    other => b.cx.at_key("serviceClusterIPRange", |cx| {
                        cx.error(
                            range.pos,
                            format!("`{other}` must be an IPv4 range from /12 to /30"),
                        )
                    }),
                }
            }
            if let Some(mtu) = &r.host_mtu {
                if (576..=65535).contains(&mtu.value) {
                    n.host_mtu = mtu.value;
                } else {
                    b.cx.at_key("hostMtu", |cx| {
                        cx.error(mtu.pos, format!("{} is outside 576..=65535", mtu.value))
                    });
                }
            }
            if let Some(bgp) = &r.bgp {
                b.cx.at_key("bgp", |cx| {
                    let b = Builder {
                        cx,
                        names: BTreeMap::new(),
                    };
                    let g = &bgp.value;
                    n.bgp.processing_delay =
                        val(&g.processing_delay).unwrap_or(n.bgp.processing_delay);
                    n.bgp.per_prefix_delay =
                        val(&g.per_prefix_delay).unwrap_or(n.bgp.per_prefix_delay);
                    n.bgp.bfd = match &g.bfd {
                        None
                        | Some(Loc {
                            value: RawBfd::Enabled(false),
                            ..
                        }) => None,
                        Some(Loc {
                            value: RawBfd::Enabled(true),
                            ..
                        }) => Some(Bfd::DEFAULT),
                        Some(Loc {
                            value: RawBfd::Timers(t),
                            pos,
                        }) => b.cx.at_key("bfd", |cx| {
                            let mut b = Builder {
                                cx,
                                names: BTreeMap::new(),
                            };
                            let interval =
                                b.positive(&t.interval, "interval", Bfd::DEFAULT.interval);
                            let multiplier = match &t.multiplier {
                                Some(m) if !(1..=255).contains(&m.value) => {
                                    b.cx.at_key("multiplier", |cx| {
                                        cx.error(m.pos, format!("{} is outside 1..=255", m.value))
                                    });
                                    Bfd::DEFAULT.multiplier
                                }
                                Some(m) => m.value,
                                None => Bfd::DEFAULT.multiplier,
                            };
                            let _ = pos;
                            Some(Bfd {
                                interval,
                                multiplier,
                            })
                        }),
                    };
                });
            }
        });
        n
    }

    fn topology(&mut self, raw: &RawTopology) -> Option<Topology> {
        let fabric = self.fabric(raw.fabric.as_ref());
        let mut topo = Topology::new(fabric);
        let zones = self.require(&raw.zones, raw.pos, "zones")?;
        if zones.value.is_empty() {
            self.cx.at_key("zones", |cx| {
                cx.error(zones.pos, "at least one zone is needed")
            });
        }
        if !self.node_total_within_limit(&zones.value) {
            return None;
        }
        let mut node_ips: BTreeMap<IpAddr, (String, Pos)> = BTreeMap::new();
        let mut subnets: Vec<(IpNet, String, Pos)> = Vec::new();
        let mut total_nodes: u64 = 0;
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
                        .require(&z.name, z.pos, "name")
                        .map(|n| n.value.clone())
                        .unwrap_or_default();
                    if let Some(n) = &z.name {
                        zb.cx.at_key("name", |cx| {
                            let mut nb = Builder {
                                cx,
                                names: std::mem::take(&mut zb.names),
                            };
                            nb.check_dns(&n.value, n.pos);
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
    fn node_total_within_limit(&mut self, zones: &[Loc<RawZone>]) -> bool {
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

    fn fabric(&mut self, raw: Option<&Loc<RawFabric>>) -> Fabric {
        let mut f = Fabric::default();
        let Some(raw) = raw else { return f };
        let r = &raw.value;
        self.cx.at_key("fabric", |cx| {
            let b = Builder {
                cx,
                names: BTreeMap::new(),
            };
            f.bgp = val(&r.bgp).unwrap_or(false);
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
                    let mut b = Builder {
                        cx,
                        names: BTreeMap::new(),
                    };
                    let d = Latencies::default();
                    f.latency = Latencies {
                        access: b.positive(&lat.value.access, "access", d.access),
                        fabric: b.positive(&lat.value.fabric, "fabric", d.fabric),
                        inter_zone: b.positive(&lat.value.inter_zone, "interZone", d.inter_zone),
                    };
                });
            }
        });
        f
    }

    fn check_dns(&mut self, name: &str, pos: Pos) {
        if !is_dns_name(name) {
            self.cx.error(
                pos,
                format!(
                    "`{name}` is not a valid name: use lowercase letters, digits, `-` and `.`, \
                     starting and ending with a letter or digit"
                ),
            );
        }
    }

    /// An explicit AS number, or the default (recorded for the range and collision checks).
    fn as_number(
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
    fn check_default_as(&mut self, router_as: &[RouterAs]) {
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
                        "the default AS {asn} of `{owner}` collides with `{}` (line {}, column {}); \
                         set `asNumber` here explicitly",
                        other.owner, other.pos.line, other.pos.col
                    ),
                );
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rack(
        &mut self,
        topo: &mut Topology,
        zone: ZoneId,
        zone_as: u32,
        ri: usize,
        r: &RawRack,
        subnets: &mut Vec<(IpNet, String, Pos)>,
        node_ips: &mut BTreeMap<IpAddr, (String, Pos)>,
        total_nodes: &mut u64,
        router_as: &mut Vec<RouterAs>,
        generated: &mut Vec<String>,
    ) {
        let name = self
            .require(&r.name, r.pos, "name")
            .map(|n| n.value.clone())
            .unwrap_or_default();
        if let Some(n) = &r.name {
            self.cx.at_key("name", |cx| {
                let mut b = Builder {
                    cx,
                    names: BTreeMap::new(),
                };
                b.check_dns(&n.value, n.pos);
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
        let Some(subnet) = self.require(&r.subnet, r.pos, "subnet") else {
            self.claim_unbuilt_nodes(r);
            return;
        };
        let net = subnet.value.0;
        for (other, other_name, other_pos) in subnets.iter() {
            if other.contains(&net.network()) || net.contains(&other.network()) {
                self.cx.at_key("subnet", |cx| {
                    cx.error(
                        subnet.pos,
                        format!(
                            "{net} overlaps {other} of rack `{other_name}` (line {}, column {})",
                            other_pos.line, other_pos.col
                        ),
                    )
                });
            }
        }
        subnets.push((net, name.clone(), subnet.pos));
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
                        generated,
                    );
                    b.names = nb.names;
                });
            }
            self.names = b.names;
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn node_entry(
        &mut self,
        topo: &mut Topology,
        rack: RackId,
        n: &RawNode,
        rack_bgp_as: Option<u32>,
        taken: &mut BTreeSet<IpAddr>,
        cursor: &mut AddressCursor,
        node_ips: &mut BTreeMap<IpAddr, (String, Pos)>,
        total_nodes: &mut u64,
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
        let rack_ref = topo.racks[rack.index()].clone();
        let zone_ref = topo.zones[rack_ref.zone.index()].clone();
        let net = rack_ref.subnet;
        let gateway = rack_ref.gateway;
        for (name, pos) in names {
            let key = if n.name.is_some() {
                "name"
            } else {
                "namePrefix"
            };
            self.cx.at_key(key, |cx| {
                let mut b = Builder {
                    cx,
                    names: BTreeMap::new(),
                };
                b.check_dns(&name, pos);
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
                    "address {ip} is already node `{other}`'s (line {}, column {})",
                    other_pos.line, other_pos.col
                );
                self.cx.at_key(field, |cx| cx.error(at, message));
            } else {
                node_ips.insert(ip, (name.clone(), pos));
            }
            let mut labels = zone_ref.labels.clone();
            labels.extend(rack_ref.labels.clone());
            labels.extend(own_labels.clone());
            labels.extend(automatic_labels(&name, os, &zone_ref.name, &rack_ref.name));
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

    fn workloads(&mut self, raw: &[(String, Loc<RawWorkload>)], topo: &Topology) -> Vec<Workload> {
        let mut out = Vec::new();
        let mut seen: BTreeMap<(String, String), Pos> = BTreeMap::new();
        let mut total: u64 = 0;
        let node_count = topo.nodes.len() as u64;
        for (path, w) in raw {
            self.cx.with_path_prefix(path, |cx| {
                let mut b = Builder { cx, names: BTreeMap::new() };
                let r = &w.value;
                let Some(name) = b.require(&r.name, r.pos, "name") else { return };
                b.cx.at_key("name", |cx| {
                    let mut b = Builder { cx, names: BTreeMap::new() };
                    b.check_dns(&name.value, name.pos);
                });
                let namespace = val(&r.namespace).unwrap_or_else(|| "default".to_string());
                let kind = val(&r.kind).unwrap_or(WorkloadKind::Deployment);
                let replicas = match (kind, &r.replicas) {
                    (WorkloadKind::DaemonSet, Some(rep)) => {
                        b.cx.at_key("replicas", |cx| {
                            cx.error(rep.pos, "a DaemonSet runs one pod on every eligible node; remove `replicas`")
                        });
                        0
                    }
                    (WorkloadKind::Pod, Some(rep)) if rep.value != 1 => {
                        b.cx.at_key("replicas", |cx| cx.error(rep.pos, "a Pod is one pod; remove `replicas`"));
                        1
                    }
                    (WorkloadKind::DaemonSet, None) => 0,
                    (_, Some(rep)) => rep.value,
                    (_, None) => 1,
                };
                total += if kind == WorkloadKind::DaemonSet { node_count } else { u64::from(replicas) };
                if total > LIMITS.max_pods {
                    let at = r.replicas.as_ref().map_or(r.pos, |l| l.pos);
                    b.cx.error(at, format!("the workloads would create more than {} pods", LIMITS.max_pods));
                }
                let key = (namespace.clone(), name.value.clone());
                if let Some(first) = seen.get(&key) {
                    b.cx.at_key("name", |cx| {
                        cx.error(
                            name.pos,
                            format!(
                                "workload `{namespace}/{}` is already defined (line {}, column {})",
                                name.value, first.line, first.col
                            ),
                        )
                    });
                    return;
                }
                seen.insert(key, name.pos);
                let ports = b.cx.at_key("ports", |cx| container_ports(r.ports.as_ref().map_or(&[][..], |l| &l.value[..]), cx));
                let service_account_name = match &r.service_account_name {
                    Some(sa) => {
                        b.cx.at_key("serviceAccountName", |cx| {
                            let mut b = Builder { cx, names: BTreeMap::new() };
                            b.check_dns(&sa.value, sa.pos);
                        });
                        sa.value.clone()
                    }
                    None => "default".to_string(),
                };
                out.push(Workload {
                    name: name.value.clone(),
                    namespace,
                    kind,
                    replicas,
                    labels: labels(&r.labels),
                    annotations: annotations(&r.annotations),
                    node_selector: labels(&r.node_selector),
                    ports,
                    service_account_name,
                    host_network: val(&r.host_network).unwrap_or(false),
                });
            });
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn events(
        &mut self,
        raw: &[(String, Loc<RawEvent>)],
        topo: &Topology,
        workloads: &[Workload],
        resources: &[Resource],
        applied: &mut Vec<Resource>,
        _network: &Network,
    ) -> Vec<ScheduledAction> {
        // Play the events in time order (stable: same time keeps file order) so references
        // to nodes added or deleted by earlier events resolve as they will at run time.
        let mut order: Vec<usize> = (0..raw.len()).collect();
        order.sort_by_key(|&i| {
            raw[i]
                .1
                .value
                .at
                .as_ref()
                .map_or(SimDuration::ZERO, |a| a.value)
        });
        let mut known: BTreeMap<String, bool> =
            topo.nodes.iter().map(|n| (n.name.clone(), true)).collect();
        let mut names: BTreeSet<String> = topo.devices.iter().map(|d| d.name.clone()).collect();
        names.extend(topo.zones.iter().map(|z| z.name.clone()));
        names.extend(topo.racks.iter().map(|r| r.name.clone()));
        let mut rack_state: Vec<(BTreeSet<IpAddr>, AddressCursor)> = topo
            .racks
            .iter()
            .map(|r| {
                let mut taken: BTreeSet<IpAddr> =
                    r.nodes.iter().map(|n| topo.node(*n).ip).collect();
                taken.insert(r.gateway);
                (taken, AddressCursor::new(r.subnet, r.gateway))
            })
            .collect();
        let mut replicas: BTreeMap<(String, String), u64> = workloads
            .iter()
            .map(|w| ((w.namespace.clone(), w.name.clone()), u64::from(w.replicas)))
            .collect();
        let mut resource_keys: BTreeSet<(String, String)> = resources
            .iter()
            .map(|r| (r.kind.clone(), r.name.clone()))
            .collect();
        let mut total_nodes = topo.nodes.len() as u64;
        let mut out = Vec::new();
        // Declared in a rack that could not be built: its error is reported there, once.
        let unbuilt = self.unbuilt_nodes();

        for i in order {
            let (path, ev) = &raw[i];
            self.cx.with_path_prefix(path, |cx| {
                let mut b = Builder { cx, names: BTreeMap::new() };
                let e = &ev.value;
                let Some(at) = b.require(&e.at, e.pos, "at") else { return };
                let at = SimTime::ZERO + at.value;
                let present: Vec<&str> = RawEvent::ACTIONS
                    .iter()
                    .copied()
                    .filter(|k| event_has(e, k))
                    .collect();
                if present.len() != 1 {
                    let msg = if present.is_empty() {
                        format!("an event needs exactly one action: {}", RawEvent::ACTIONS.join(", "))
                    } else {
                        format!("an event has exactly one action; this one has {}", present.join(", "))
                    };
                    b.cx.error(e.pos, msg);
                    return;
                }
                let node_ref = |b: &mut Builder, f: &Loc<String>, key: &str, known: &BTreeMap<String, bool>| -> Option<String> {
                    match known.get(&f.value) {
                        Some(true) => Some(f.value.clone()),
                        Some(false) => {
                            b.cx.at_key(key, |cx| cx.error(f.pos, format!("node `{}` was deleted by an earlier event", f.value)));
                            None
                        }
                        None if unbuilt.contains(&f.value) => None,
                        None => {
                            let hint = b.cx.suggest(&f.value, known.keys().map(String::as_str))
                                .map(|n| format!("; did you mean `{n}`?"))
                                .unwrap_or_default();
                            b.cx.at_key(key, |cx| cx.error(f.pos, format!("no node named `{}`{hint}", f.value)));
                            None
                        }
                    }
                };
                let action = if let Some(s) = &e.scale {
                    b.cx.at_key("scale", |cx| {
                        let mut b = Builder { cx, names: BTreeMap::new() };
                        let s = &s.value;
                        let w = b.require(&s.workload, s.pos, "workload")?;
                        let rep = b.require(&s.replicas, s.pos, "replicas")?;
                        let namespace = val(&s.namespace).unwrap_or_else(|| "default".to_string());
                        let Some(wl) = workloads.iter().find(|x| x.name == w.value && x.namespace == namespace) else {
                            b.cx.at_key("workload", |cx| cx.error(w.pos, format!("no workload `{namespace}/{}`", w.value)));
                            return None;
                        };
                        if matches!(wl.kind, WorkloadKind::DaemonSet | WorkloadKind::Pod) {
                            b.cx.at_key("workload", |cx| cx.error(w.pos, format!("a {} cannot be scaled", wl.kind)));
                            return None;
                        }
                        replicas.insert((namespace.clone(), w.value.clone()), u64::from(rep.value));
                        if replicas.values().sum::<u64>() > LIMITS.max_pods {
                            b.cx.at_key("replicas", |cx| cx.error(rep.pos, format!("the workloads would have more than {} pods", LIMITS.max_pods)));
                            return None;
                        }
                        Some(Action::Scale { workload: w.value.clone(), namespace, replicas: rep.value })
                    })
                } else if let Some(n) = &e.node_down {
                    node_ref(&mut b, n, "nodeDown", &known).map(Action::NodeDown)
                } else if let Some(n) = &e.node_up {
                    node_ref(&mut b, n, "nodeUp", &known).map(Action::NodeUp)
                } else if let Some(r) = &e.restart_bgp {
                    let r = &r.value;
                    let fields = b.cx.at_key("restartBgp", |cx| {
                        let mut b = Builder { cx, names: BTreeMap::new() };
                        let node = b.require(&r.node, r.pos, "node")?.clone();
                        let down_for = b.require(&r.down_for, r.pos, "downFor")?.clone();
                        if down_for.value == SimDuration::ZERO {
                            b.cx.at_key("downFor", |cx| cx.error(down_for.pos, "a restart takes some time: give a duration above 0"));
                            return None;
                        }
                        Some((node, down_for.value))
                    });
                    fields.and_then(|(node, down_for)| {
                        b.cx.at_key("restartBgp", |cx| {
                            let mut b = Builder { cx, names: BTreeMap::new() };
                            node_ref(&mut b, &node, "node", &known)
                        })
                        .map(|node| Action::RestartBgp { node, down_for })
                    })
                } else if let Some(n) = &e.delete_node {
                    let r = node_ref(&mut b, n, "deleteNode", &known);
                    if let Some(name) = &r {
                        known.insert(name.clone(), false);
                    }
                    r.map(Action::DeleteNode)
                } else if let Some(add) = &e.add_nodes {
                    b.cx.at_key("addNodes", |cx| {
                        let mut b = Builder { cx, names: BTreeMap::new() };
                        let a = &add.value;
                        let rack = b.require(&a.rack, a.pos, "rack")?;
                        let prefix = b.require(&a.name_prefix, a.pos, "namePrefix")?;
                        let count = b.require(&a.count, a.pos, "count")?;
                        let Some(ri) = topo.racks.iter().position(|r| r.name == rack.value) else {
                            b.cx.at_key("rack", |cx| cx.error(rack.pos, format!("no rack named `{}`", rack.value)));
                            return None;
                        };
                        total_nodes += u64::from(count.value);
                        if count.value == 0 || total_nodes > LIMITS.max_nodes {
                            b.cx.at_key("count", |cx| cx.error(count.pos, format!("{} is outside 1..={} (the cluster is limited to {} nodes)", count.value, LIMITS.max_nodes, LIMITS.max_nodes)));
                            return None;
                        }
                        let r = &topo.racks[ri];
                        let zone = &topo.zones[r.zone.index()];
                        let os = val(&a.os).unwrap_or(Os::Linux);
                        let bgp_as = a.bgp.as_ref().and_then(|x| val(&x.value.as_number));
                        let (taken, cursor) = &mut rack_state[ri];
                        let mut nodes = Vec::new();
                        for k in 1..=count.value {
                            let name = format!("{}-{k}", prefix.value);
                            if !names.insert(name.clone()) {
                                b.cx.at_key("namePrefix", |cx| cx.error(prefix.pos, format!("node `{name}` already exists")));
                                return None;
                            }
                            let Some(ip) = cursor.next_free(taken) else {
                                b.cx.at_key("count", |cx| cx.error(count.pos, format!("rack `{}` ({}) has no free address left for `{name}`", r.name, r.subnet)));
                                return None;
                            };
                            taken.insert(ip);
                            known.insert(name.clone(), true);
                            let mut lbl = zone.labels.clone();
                            lbl.extend(r.labels.clone());
                            lbl.extend(labels(&a.labels));
                            lbl.extend(automatic_labels(&name, os, &zone.name, &r.name));
                            nodes.push(NewNode {
                                name,
                                ip,
                                os,
                                max_pods: val(&a.max_pods).unwrap_or(110),
                                labels: lbl,
                                bgp: NodeBgp { as_number: bgp_as, ..NodeBgp::default() },
                            });
                        }
                        Some(Action::AddNodes(AddNodes { rack: RackId(ri as u32), nodes }))
                    })
                } else if let Some(l) = e.link_down.as_ref().or(e.link_up.as_ref()) {
                    let key = if e.link_down.is_some() { "linkDown" } else { "linkUp" };
                    b.cx.at_key(key, |cx| {
                        if l.value.len() != 2 {
                            cx.error(l.pos, format!("a link is named by its two devices, [a, b]; found {} names", l.value.len()));
                            return None;
                        }
                        let mut ids = Vec::new();
                        for (k, end) in l.value.iter().enumerate() {
                            match topo.device_by_name(&end.value) {
                                Some(d) => ids.push(d),
                                None if known.contains_key(&end.value) => {
                                    cx.at_index(k, |cx| cx.error(end.pos, format!("`{}` is added by an event; links of added nodes cannot be cut", end.value)));
                                }
                                None => {
                                    let hint = cx.suggest(&end.value, topo.devices.iter().map(|d| d.name.as_str()))
                                        .map(|n| format!("; did you mean `{n}`?"))
                                        .unwrap_or_default();
                                    cx.at_index(k, |cx| cx.error(end.pos, format!("no device named `{}`{hint}", end.value)));
                                }
                            }
                        }
                        if ids.len() != 2 {
                            return None;
                        }
                        if topo.link_between(ids[0], ids[1]).is_none() {
                            cx.error(l.pos, format!("there is no link between `{}` and `{}`", l.value[0].value, l.value[1].value));
                            return None;
                        }
                        let (a, z) = (l.value[0].value.clone(), l.value[1].value.clone());
                        Some(if key == "linkDown" { Action::LinkDown(a, z) } else { Action::LinkUp(a, z) })
                    })
                } else if let Some(d) = &e.delete_pods {
                    b.cx.at_key("deletePods", |cx| {
                        let d = &d.value;
                        let namespace = val(&d.namespace).unwrap_or_else(|| "default".to_string());
                        match (&d.workload, &d.pod) {
                            (Some(w), None) => {
                                if !workloads.iter().any(|x| x.name == w.value && x.namespace == namespace) {
                                    cx.at_key("workload", |cx| cx.error(w.pos, format!("no workload `{namespace}/{}`", w.value)));
                                    return None;
                                }
                                let count = d.count.as_ref().map_or(u32::MAX, |c| c.value);
                                Some(Action::DeletePods(DeletePods::Workload { workload: w.value.clone(), namespace, count }))
                            }
                            (None, Some(p)) => {
                                if d.count.is_some() {
                                    cx.error(d.pos, "`count` goes with `workload`, not with `pod`");
                                }
                                if !pod_could_exist(&p.value, workloads, &known) {
                                    cx.at_key("pod", |cx| cx.error(p.pos, format!("no workload creates a pod named `{}`", p.value)));
                                    return None;
                                }
                                Some(Action::DeletePods(DeletePods::Pod(p.value.clone())))
                            }
                            _ => {
                                cx.error(d.pos, "give `workload` (with an optional `count`) or `pod`");
                                None
                            }
                        }
                    })
                } else if let Some(a) = &e.apply {
                    let resource = b.cx.at_key("apply", |cx| Resource::from_node(&a.value.0, cx));
                    resource.map(|r| {
                        resource_keys.insert((r.kind.clone(), r.name.clone()));
                        applied.push(r);
                        Action::Apply { resource: applied.len() - 1 }
                    })
                } else if let Some(d) = &e.delete {
                    b.cx.at_key("delete", |cx| {
                        let mut b = Builder { cx, names: BTreeMap::new() };
                        let kind = b.require(&d.value.kind, d.value.pos, "kind")?;
                        let name = b.require(&d.value.name, d.value.pos, "name")?;
                        if !resource_keys.remove(&(kind.value.clone(), name.value.clone())) {
                            b.cx.error(d.pos, format!("no {} named `{}` is defined at this time", kind.value, name.value));
                            return None;
                        }
                        Some(Action::Delete { kind: kind.value.clone(), name: name.value.clone() })
                    })
                } else {
                    None
                };
                if let Some(action) = action {
                    out.push(ScheduledAction { at, action });
                }
            });
        }
        out
    }

    fn expectations(
        &mut self,
        raw: &[(String, Loc<RawExpectation>)],
        workloads: &[Workload],
        pool_names: &BTreeSet<String>,
        declared_pools: &BTreeMap<String, Pos>,
        services: &BTreeSet<(String, String)>,
        externals: &[crate::model::external::External],
    ) -> Vec<Expectation> {
        let mut out = Vec::new();
        // Every name a node or device can have (topology, routers, `addNodes`), built once.
        let known_nodes: BTreeMap<String, bool> =
            self.names.keys().map(|n| (n.clone(), true)).collect();
        let refs = References {
            workloads,
            pools: pool_names,
            declared_pools,
            devices: &known_nodes,
            services,
            externals,
        };
        // Default names already given, with how often: a name is the expectation's content
        // (kind, summary, time), not its position, so inserting another expectation renames
        // nothing (JUnit test names stay stable); identical ones are numbered in order.
        let mut given: BTreeMap<String, usize> = BTreeMap::new();
        for (path, ex) in raw {
            self.cx.with_path_prefix(path, |cx| {
                let mut b = Builder {
                    cx,
                    names: std::mem::take(&mut self.names),
                };
                if let Some(check) = b.check(&ex.value, &refs) {
                    let at = ex.value.at.as_ref().map(|a| SimTime::ZERO + a.value);
                    let name = match &ex.value.name {
                        Some(n) => n.value.clone(),
                        None => {
                            let mut name = format!("{} {}", check.kind(), check.summary())
                                .trim_end()
                                .to_string();
                            if let Some(at) = at {
                                name.push_str(&format!(" at {at}"));
                            }
                            let seen = given.entry(name.clone()).or_default();
                            *seen += 1;
                            if *seen > 1 {
                                name.push_str(&format!(" ({seen})"));
                            }
                            name
                        }
                    };
                    out.push(Expectation { name, at, check });
                }
                self.names = b.names;
            });
        }
        out
    }

    fn check(&mut self, e: &RawExpectation, refs: &References) -> Option<Check> {
        let present: Vec<&str> = RawExpectation::KINDS
            .iter()
            .copied()
            .filter(|k| expectation_has(e, k))
            .collect();
        if present.len() != 1 {
            let msg = if present.is_empty() {
                format!(
                    "an expectation needs exactly one kind: {}",
                    RawExpectation::KINDS.join(", ")
                )
            } else {
                format!(
                    "an expectation has exactly one kind; this one has {}",
                    present.join(", ")
                )
            };
            self.cx.error(e.pos, msg);
            return None;
        }
        let kind = present[0];
        self.cx.at_key(kind, |cx| {
            let mut b = Builder {
                cx,
                names: BTreeMap::new(),
            };
            b.check_kind(e, kind, refs)
        })
    }

    /// One expectation's check. SPEC §2.6: a name that can never exist in the run (no
    /// workload could create the pod; no node, device or pool of that name is declared or
    /// added by an event) is an input error here, located at the field; one that exists at
    /// some time only is the expectation's failure, found when it is evaluated.
    fn check_kind(&mut self, e: &RawExpectation, kind: &str, refs: &References) -> Option<Check> {
        let (workloads, pools, devices) = (refs.workloads, refs.pools, refs.devices);
        let pod_ref = |b: &mut Builder, key: &str, p: &Loc<String>| {
            if !pod_could_exist(&p.value, workloads, devices) {
                let candidates = possible_pod_prefixes(workloads);
                let hint =
                    b.cx.suggest(&p.value, candidates.iter().map(String::as_str))
                        .map(|n| format!("; did you mean a pod of `{n}`?"))
                        .unwrap_or_default();
                b.cx.at_key(key, |cx| {
                    cx.error(
                        p.pos,
                        format!(
                            "no workload can create a pod named `{}` at any time of the run{hint}",
                            p.value
                        ),
                    )
                });
            }
        };
        let device_ref = |b: &mut Builder, key: &str, d: &Loc<String>| {
            if !devices.contains_key(&d.value) {
                let hint =
                    b.cx.suggest(&d.value, devices.keys().map(String::as_str))
                        .map(|n| format!("; did you mean `{n}`?"))
                        .unwrap_or_default();
                b.cx.at_key(key, |cx| {
                    cx.error(
                        d.pos,
                        format!(
                            "no node or device named `{}` exists at any time of the run{hint}",
                            d.value
                        ),
                    )
                });
            }
        };
        let pool_ref = |b: &mut Builder, key: &str, p: &Loc<String>| {
            if !pools.contains(&p.value) {
                let why = match refs.declared_pools.get(&p.value) {
                    Some(at) => format!(
                        "; the pool declared at line {}, column {} is not read as one (see the \
                         warning or error there)",
                        at.line, at.col
                    ),
                    None => {
                        b.cx.suggest(&p.value, pools.iter().map(String::as_str))
                            .map(|n| format!("; did you mean `{n}`?"))
                            .unwrap_or_default()
                    }
                };
                b.cx.at_key(key, |cx| {
                    cx.error(
                        p.pos,
                        format!(
                            "no pool named `{}` is declared or applied by any event{why}",
                            p.value
                        ),
                    )
                });
            }
        };
        let pod_set = |b: &mut Builder, key: &str, s: &Loc<PodSet>| match &s.value {
            PodSet::Pod(p) => pod_ref(b, key, &Loc::new(p.clone(), s.pos)),
            PodSet::Workload { name, namespace } => {
                let ns = namespace.as_deref().unwrap_or("default");
                if !workloads
                    .iter()
                    .any(|w| &w.name == name && w.namespace == ns)
                {
                    b.cx.at_key(key, |cx| {
                        cx.error(s.pos, format!("no workload `{ns}/{name}`"))
                    });
                }
            }
            PodSet::Node(n) => device_ref(b, key, &Loc::new(n.clone(), s.pos)),
            PodSet::All | PodSet::Namespace(_) => {}
            PodSet::External(name) => {
                if key != "to" && key != "from" {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "an external ({name}) can only be the `from` or `to` of \
                                 reachable, unreachable or isolated"
                            ),
                        )
                    });
                } else if !refs.externals.iter().any(|x| &x.name == name) {
                    let known: Vec<&str> = refs.externals.iter().map(|x| x.name.as_str()).collect();
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "no external `{name}` in `externals:` ({})",
                                if known.is_empty() {
                                    "none declared".to_string()
                                } else {
                                    known.join(", ")
                                }
                            ),
                        )
                    });
                }
            }
            PodSet::Service { namespace, name } => {
                let what = format!("{namespace}/{name}");
                if key != "to" {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!(
                                "a Service ({what}) can only be a destination (`to` of \
                                 reachable, unreachable or isolated)"
                            ),
                        )
                    });
                } else if !refs.services.contains(&(namespace.clone(), name.clone())) {
                    b.cx.at_key(key, |cx| {
                        cx.error(
                            s.pos,
                            format!("no Service `{what}` is declared or applied by any event"),
                        )
                    });
                }
            }
        };
        Some(match kind {
            "pod" => {
                let p = &e.pod.as_ref()?.value;
                let name = self.require(&p.name, p.pos, "name")?;
                pod_ref(self, "name", name);
                if let Some(n) = &p.node {
                    device_ref(self, "node", n);
                }
                if let Some(pl) = &p.pool {
                    pool_ref(self, "pool", pl);
                }
                Check::Pod {
                    name: name.value.clone(),
                    ip: val(&p.ip),
                    in_cidr: val(&p.in_cidr).map(|c| c.0),
                    node: val(&p.node),
                    pool: val(&p.pool),
                    borrowed: val(&p.borrowed),
                    status: val(&p.status),
                }
            }
            "pods" => {
                let p = &e.pods.as_ref()?.value;
                let of = self.require(&p.of, p.pos, "of")?;
                pod_set(self, "of", of);
                Check::Pods {
                    of: of.value.clone(),
                    running: val(&p.running),
                    pending: val(&p.pending),
                    unknown: val(&p.unknown),
                }
            }
            "pool" => {
                let p = &e.pool.as_ref()?.value;
                let name = self.require(&p.name, p.pos, "name")?;
                pool_ref(self, "name", name);
                Check::Pool {
                    name: name.value.clone(),
                    allocated: val(&p.allocated),
                    blocks: val(&p.blocks),
                    free: val(&p.free),
                    reserved: val(&p.reserved),
                }
            }
            "node" => {
                let n = &e.node.as_ref()?.value;
                let name = self.require(&n.name, n.pos, "name")?;
                if name.value != "*" {
                    device_ref(self, "name", name);
                }
                Check::Node {
                    name: name.value.clone(),
                    blocks: val(&n.blocks),
                    borrowed_ips: val(&n.borrowed_ips),
                    rib_routes: val(&n.rib_routes),
                    fib_routes: val(&n.fib_routes),
                }
            }
            "block" => {
                let bl = &e.block.as_ref()?.value;
                let cidr = self.require(&bl.cidr, bl.pos, "cidr")?;
                if let Some(a) = &bl.affinity
                    && a.value != "none"
                {
                    device_ref(self, "affinity", a);
                }
                Check::Block {
                    cidr: cidr.value.0,
                    affinity: val(&bl.affinity),
                    allocated: val(&bl.allocated),
                }
            }
            "route" => {
                let r = &e.route.as_ref()?.value;
                let node = self.require(&r.node, r.pos, "node")?;
                let prefix = self.require(&r.prefix, r.pos, "prefix")?;
                device_ref(self, "node", node);
                if let Some(nh) = &r.next_hop
                    && !matches!(nh.value.as_str(), "blackhole" | "local")
                {
                    device_ref(self, "nextHop", nh);
                }
                Check::Route {
                    node: node.value.clone(),
                    prefix: prefix.value.0,
                    next_hop: val(&r.next_hop),
                    present: val(&r.present).unwrap_or(true),
                    table: val(&r.table).unwrap_or(RouteTable::Fib),
                }
            }
            "reachable" | "unreachable" | "isolated" => {
                let pair = match kind {
                    "reachable" => &e.reachable,
                    "unreachable" => &e.unreachable,
                    _ => &e.isolated,
                };
                let p = &pair.as_ref()?.value;
                let from = self.require(&p.from, p.pos, "from")?;
                let to = self.require(&p.to, p.pos, "to")?;
                pod_set(self, "from", from);
                pod_set(self, "to", to);
                if matches!(from.value, PodSet::External(_))
                    && matches!(to.value, PodSet::External(_) | PodSet::Service { .. })
                {
                    self.cx.at_key("to", |cx| {
                        cx.error(
                            to.pos,
                            "from an external, `to` must be pods (traffic between places \
                             outside the cluster never crosses it)",
                        )
                    });
                }
                let probe = probe_of(
                    self,
                    ProbeFields {
                        pos: p.pos,
                        port: &p.port,
                        protocol: &p.protocol,
                        icmp_type: &p.icmp_type,
                        icmp_code: &p.icmp_code,
                    },
                );
                if kind != "unreachable"
                    && let Some(r) = &p.reason
                {
                    self.cx.at_key("reason", |cx| {
                        cx.error(r.pos, "`reason` belongs to `unreachable`")
                    });
                }
                let (from, to) = (from.value.clone(), to.value.clone());
                match kind {
                    "reachable" => Check::Reachable { from, to, probe },
                    "unreachable" => Check::Unreachable {
                        from,
                        to,
                        reason: val(&p.reason),
                        probe,
                    },
                    _ => Check::Isolated { from, to, probe },
                }
            }
            "policy" => {
                let p = &e.policy.as_ref()?.value;
                let pod = self.require(&p.pod, p.pos, "pod")?;
                pod_ref(self, "pod", pod);
                let names = |l: &Option<Loc<Vec<Loc<String>>>>| {
                    l.as_ref()
                        .map(|v| v.value.iter().map(|n| n.value.clone()).collect())
                };
                Check::Policy {
                    pod: pod.value.clone(),
                    ingress: names(&p.ingress),
                    egress: names(&p.egress),
                }
            }
            "path" => {
                let p = &e.path.as_ref()?.value;
                let from = self.require(&p.from, p.pos, "from")?;
                let to = self.require(&p.to, p.pos, "to")?;
                pod_ref(self, "from", from);
                pod_ref(self, "to", to);
                if let Some(via) = &p.via {
                    self.cx.at_key("via", |cx| {
                        let b = Builder {
                            cx,
                            names: BTreeMap::new(),
                        };
                        for (k, hop) in via.value.iter().enumerate() {
                            b.cx.at_index(k, |cx| {
                                let mut b = Builder {
                                    cx,
                                    names: BTreeMap::new(),
                                };
                                device_ref(&mut b, "", hop)
                            });
                        }
                    });
                }
                Check::Path {
                    from: from.value.clone(),
                    to: to.value.clone(),
                    via: p
                        .via
                        .as_ref()
                        .map(|v| v.value.iter().map(|h| h.value.clone()).collect()),
                    encapsulation: val(&p.encapsulation),
                    probe: probe_of(
                        self,
                        ProbeFields {
                            pos: p.pos,
                            port: &p.port,
                            protocol: &p.protocol,
                            icmp_type: &p.icmp_type,
                            icmp_code: &p.icmp_code,
                        },
                    ),
                }
            }
            "bgp" => {
                let g = &e.bgp.as_ref()?.value;
                Check::Bgp {
                    sessions_established: val(&g.sessions_established),
                    converged_within: val(&g.converged_within),
                    updates: val(&g.updates),
                }
            }
            _ => Check::AllocationFailures(val(&e.allocation_failures)?),
        })
    }
}

/// The probe fields of an expectation (`reachable`, `unreachable`, `isolated`, `path`).
struct ProbeFields<'a> {
    pos: Pos,
    port: &'a Option<Loc<crate::model::expect::PortRef>>,
    protocol: &'a Option<Loc<crate::model::expect::ProbeProtocol>>,
    icmp_type: &'a Option<Loc<u8>>,
    icmp_code: &'a Option<Loc<u8>>,
}

/// The probe of an expectation: `None` when it names no port, protocol or ICMP type (every
/// port and protocol for `reachable`/`unreachable`/`isolated`, an ICMP echo request for
/// `path`). ICMP takes `icmpType`/`icmpCode` instead of `port`.
fn probe_of(b: &mut Builder, p: ProbeFields<'_>) -> Option<crate::model::expect::Probe> {
    use crate::model::expect::{Probe, ProbeProtocol};
    if p.port.is_none() && p.protocol.is_none() && p.icmp_type.is_none() && p.icmp_code.is_none() {
        return None;
    }
    let protocol = val(p.protocol).unwrap_or(ProbeProtocol::Tcp);
    if protocol == ProbeProtocol::Icmp {
        if let Some(port) = p.port {
            b.cx.at_key("port", |cx| {
                cx.error(
                    port.pos,
                    "ICMP has no ports; give `icmpType` (and `icmpCode`)",
                )
            });
        }
    } else {
        for (key, field) in [("icmpType", p.icmp_type), ("icmpCode", p.icmp_code)] {
            if let Some(f) = field {
                b.cx.at_key(key, |cx| {
                    cx.error(f.pos, format!("`{key}` needs `protocol: ICMP`"))
                });
            }
        }
    }
    if p.icmp_code.is_some() && p.icmp_type.is_none() {
        b.cx.at_key("icmpCode", |cx| {
            cx.error(p.pos, "`icmpCode` needs `icmpType`")
        });
    }
    Some(Probe {
        protocol,
        port: val(p.port),
        icmp_type: val(p.icmp_type),
        icmp_code: val(p.icmp_code),
    })
}

/// Calico `Node` resources (SPEC §2.3) merge into the topology node of the same name: their
/// labels (automatic labels still win), AS number, route-reflector cluster ID, and the prefix
/// of `ipv4Address`, which must hold the node's own address and decides `CrossSubnet`.
fn merge_calico_nodes(
    topology: &mut Topology,
    resources: &[Resource],
    specs: &[Option<super::kinds::ResourceSpec>],
    cx: &mut Cx,
) {
    for (resource, spec) in resources.iter().zip(specs) {
        let Some(super::kinds::ResourceSpec::CalicoNode(cn)) = spec else {
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

/// What expectations may name: everything that exists at some time of the run.
struct References<'a> {
    workloads: &'a [Workload],
    /// Pools the selected IPAM will hold at some time.
    pools: &'a BTreeSet<String>,
    /// Every resource of a pool kind by name, read as a pool or not (for the message).
    declared_pools: &'a BTreeMap<String, Pos>,
    devices: &'a BTreeMap<String, bool>,
    /// Every Service declared or applied by an event, by (namespace, name).
    services: &'a BTreeSet<(String, String)>,
    /// `externals:` (SPEC §7).
    externals: &'a [crate::model::external::External],
}

/// The pools that exist at some time of the run: those of the selected IPAM read from the
/// resources and the events' `apply`, plus Calico's default pool when no IPPool is there from
/// the start (SPEC §2.3). A pool resource podnet did not read (an unknown `apiVersion`, the
/// other CNI's kind) never exists.
fn possible_pools(
    network: &Network,
    specs: &[Option<super::kinds::ResourceSpec>],
    applied: &[Option<super::kinds::ResourceSpec>],
) -> BTreeSet<String> {
    use super::kinds::ResourceSpec;
    let calico = network.cni == crate::model::network::Cni::Calico;
    let name = |s: &Option<ResourceSpec>| match s {
        Some(ResourceSpec::IpPool(p)) if calico => Some(p.name.clone()),
        Some(ResourceSpec::SpiderIpPool(p)) if !calico => Some(p.name.clone()),
        _ => None,
    };
    let mut names: BTreeSet<String> = specs.iter().chain(applied).filter_map(name).collect();
    let calico_pool_at_start = specs
        .iter()
        .any(|s| matches!(s, Some(ResourceSpec::IpPool(_))));
    if calico && !calico_pool_at_start {
        names.insert("default-ipv4-ippool".to_string());
    }
    names
}

/// Every resource of a pool kind, by name, with where its name is written.
fn declared_pools(resources: &[Resource], applied: &[Resource]) -> BTreeMap<String, Pos> {
    resources
        .iter()
        .chain(applied)
        .filter(|r| r.kind == "IPPool" || r.kind == "SpiderIPPool")
        .map(|r| (r.name.clone(), r.locate(&["metadata", "name"])))
        .collect()
}

/// The name stems of the workloads' pods (`web` for web-0…), for "did you mean".
fn possible_pod_prefixes(workloads: &[Workload]) -> Vec<String> {
    workloads.iter().map(|w| w.name.clone()).collect()
}

/// Whether a pod of that name (`name` or `namespace/name`) can exist given the workloads.
fn pod_could_exist(pod: &str, workloads: &[Workload], nodes: &BTreeMap<String, bool>) -> bool {
    let (ns, name) = match pod.split_once('/') {
        Some((ns, name)) => (Some(ns), name),
        None => (None, pod),
    };
    let is_node = |n: &str| nodes.contains_key(n);
    workloads
        .iter()
        .filter(|w| ns.is_none_or(|ns| w.namespace == ns))
        .any(|w| w.could_own(name, &is_node))
}

fn event_has(e: &RawEvent, key: &str) -> bool {
    match key {
        "scale" => e.scale.is_some(),
        "nodeDown" => e.node_down.is_some(),
        "nodeUp" => e.node_up.is_some(),
        "restartBgp" => e.restart_bgp.is_some(),
        "deleteNode" => e.delete_node.is_some(),
        "addNodes" => e.add_nodes.is_some(),
        "linkDown" => e.link_down.is_some(),
        "linkUp" => e.link_up.is_some(),
        "deletePods" => e.delete_pods.is_some(),
        "apply" => e.apply.is_some(),
        "delete" => e.delete.is_some(),
        _ => false,
    }
}

fn expectation_has(e: &RawExpectation, key: &str) -> bool {
    match key {
        "pod" => e.pod.is_some(),
        "pods" => e.pods.is_some(),
        "pool" => e.pool.is_some(),
        "node" => e.node.is_some(),
        "block" => e.block.is_some(),
        "route" => e.route.is_some(),
        "reachable" => e.reachable.is_some(),
        "unreachable" => e.unreachable.is_some(),
        "isolated" => e.isolated.is_some(),
        "policy" => e.policy.is_some(),
        "path" => e.path.is_some(),
        "bgp" => e.bgp.is_some(),
        "allocationFailures" => e.allocation_failures.is_some(),
        _ => false,
    }
}

/// The labels Kubernetes and podnet put on every node; they win over inherited labels.
fn automatic_labels(name: &str, os: Os, zone: &str, rack: &str) -> Labels {
    Labels::from([
        ("kubernetes.io/hostname".to_string(), name.to_string()),
        ("kubernetes.io/os".to_string(), os.as_str().to_string()),
        ("topology.kubernetes.io/zone".to_string(), zone.to_string()),
        ("podnet.io/rack".to_string(), rack.to_string()),
    ])
}

/// The `n`-th host address of a subnet (0 = the first after the network address).
fn nth_host(net: IpNet, n: u128) -> Option<IpAddr> {
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
struct AddressCursor {
    net: IpNet,
    next: u128,
    /// Host index just after the gateway, where the walk began.
    start: u128,
    wrapped: bool,
}

impl AddressCursor {
    fn new(net: IpNet, gateway: IpAddr) -> AddressCursor {
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
    fn next_free(&mut self, taken: &BTreeSet<IpAddr>) -> Option<IpAddr> {
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
