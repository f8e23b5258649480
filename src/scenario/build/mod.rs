//! From raw types to a validated [`Scenario`]: defaults, required fields, cross-references,
//! topology construction and input limits.
//!
//! The builder never stops at the first problem: each check reports into the shared [`Cx`]
//! with the field's position and path and goes on with what it can, so `podnet validate`
//! lists every problem at once. Values that failed to decode are simply absent here (their
//! problem was already reported) and produce no second message.
//!
//! This file builds the scenario's own fields (name, network, workloads) and joins the
//! parts: `topology.rs` (zones, racks, nodes, the fabric), `events.rs` (one function per
//! event action, checked against the cluster as earlier events leave it) and `expect.rs`
//! (expectations and what they may name).

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use crate::model::action::{Action, AddNodes, DeletePods, ScheduledAction};
use crate::model::expect::{Check, Condition, Expectation, PodSet, RouteTable};
use crate::model::network::{
    Bfd, Network, Profile, WindowsHns, WindowsReservation, WindowsReserve,
};
use crate::model::prefixes::Prefixes;
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{
    Fabric, Latencies, NewNode, NodeBgp, Os, RackId, Topology, ZoneId, spine_name,
};
use crate::model::workload::{ContainerPort, PortProtocol, Workload, WorkloadKind};
use crate::model::{Labels, TextEnum};
use crate::scenario::decode::{Cx, LabelMap, Loc, StringMap};
use crate::scenario::diag::Pos;
use crate::scenario::overrides;
use crate::scenario::pod_names::PodNames;
use crate::scenario::raw::*;
use crate::scenario::resource::Resource;
use crate::scenario::{LIMITS, Scenario};

mod events;
mod expect;
mod nodes;
mod topology;

use expect::{Fields, declared_pools, possible_pools};
use nodes::{AddressCursor, automatic_labels, merge_calico_nodes, node_labels_message, nth_host};

/// Everything gathered from the scenario file and its includes, before building.
pub struct Gathered {
    pub raw: RawScenario,
    pub resources: Vec<Resource>,
    pub workloads: Vec<(String, Loc<RawWorkload>)>,
    pub events: Vec<(String, Loc<RawEvent>)>,
    pub expect: Vec<(String, Loc<RawExpectation>)>,
    /// The value written in the scenario (after `sweep --set`) at each field an expectation's
    /// `when:` names, by canonical path (`overrides::canonical_path`); absent: not written.
    pub when_values: BTreeMap<String, String>,
    /// `podnet sweep`: the swept fields (canonical paths), which alone `when:` may name.
    pub swept: Option<BTreeSet<String>>,
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
        crate::scenario::externals::build(raw, &topology, cx)
    });

    let mut resources = g.resources;
    crate::scenario::resource::check_unique(&resources, b.cx);
    // Workload manifests (Deployment, StatefulSet, DaemonSet, Pod) join the workloads list
    // after the scenario's own, in resource order.
    let mut raw_workloads = g.workloads;
    raw_workloads.extend(crate::scenario::workload_manifest::workloads(
        &resources, b.cx,
    ));
    let workloads = b.workloads(&raw_workloads, &topology);
    let mut applied = Vec::new();
    let actions = b.events(&g.events, &topology, &workloads, &resources, &mut applied);
    let all: Vec<&Resource> = resources.iter().chain(applied.iter()).collect();
    let mut specs =
        crate::scenario::kinds::decode_all(&all, &topology, &network, profile.calico, b.cx);
    let applied_specs = specs.split_off(resources.len());
    let policies = crate::scenario::policy_kinds::policy_set(
        profile.calico,
        &resources,
        &specs,
        &applied_specs,
        b.cx,
    );
    crate::scenario::service_kind::check_cluster_ips(
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
            Some(crate::scenario::kinds::ResourceSpec::Service(s)) => Some(s.key()),
            _ => None,
        })
        .collect();
    let expectations = b.expectations(
        &Fields {
            expect: &g.expect,
            values: &g.when_values,
            swept: g.swept.as_ref(),
        },
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
                                "port name `{}` is already used ({})",
                                name.value,
                                first.place()
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

/// The most addresses `windowsReservedAddresses` may reserve (a micro-pool's "few").
const MAX_WINDOWS_RESERVED_ADDRESSES: u32 = 16;

/// `network.windowsReservation` and `windowsReservedAddresses`. The micro-pool models need the
/// multi-subnet layout: Calico's own layouts make each block an HNS subnet whose gateway is its
/// reserved ordinal 1. A count is only meaningful for them; `per-host` needs at least one (the
/// host's gateway/tunnel address).
fn windows_reserve(cx: &mut Cx, r: &RawNetwork, hns: WindowsHns) -> WindowsReserve {
    let mut out = WindowsReserve::default();
    if let Some(model) = &r.windows_reservation {
        out.model = model.value;
        if model.value != WindowsReservation::PerBlock && hns != WindowsHns::MultiSubnet {
            cx.at_key("windowsReservation", |cx| {
                cx.error(
                    model.pos,
                    format!(
                        "`{}` needs windowsHns: multi-subnet (in `{hns}` every block is an HNS \
                         subnet whose gateway is its reserved second address)",
                        model.value
                    ),
                )
            });
        }
    }
    if let Some(n) = &r.windows_reserved_addresses {
        let least = u32::from(out.model == WindowsReservation::PerHost);
        cx.at_key("windowsReservedAddresses", |cx| {
            if out.model == WindowsReservation::PerBlock {
                cx.error(
                    n.pos,
                    "only with windowsReservation: per-host or per-pool (per-block reserves \
                     Calico's first three and last address of every block)",
                );
            } else if !(least..=MAX_WINDOWS_RESERVED_ADDRESSES).contains(&n.value) {
                cx.error(
                    n.pos,
                    format!(
                        "{} is outside {least}..={MAX_WINDOWS_RESERVED_ADDRESSES} for `{}`",
                        n.value, out.model
                    ),
                );
            } else {
                out.addresses = n.value;
            }
        });
    }
    out
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

/// Reports a name that is not a Kubernetes-style name.
fn check_dns(cx: &mut Cx, name: &str, pos: Pos) {
    if !is_dns_name(name) {
        cx.error(
            pos,
            format!(
                "`{name}` is not a valid name: use lowercase letters, digits, `-` and `.`, \
                 starting and ending with a letter or digit"
            ),
        );
    }
}

/// A duration that must be above zero (under `key`); `default` when absent or refused.
fn positive(
    cx: &mut Cx,
    field: &Option<Loc<SimDuration>>,
    key: &str,
    default: SimDuration,
) -> SimDuration {
    match field {
        Some(d) if d.value == SimDuration::ZERO => {
            cx.at_key(key, |cx| cx.error(d.pos, "must be more than 0"));
            default
        }
        Some(d) => d.value,
        None => default,
    }
}

impl Builder<'_> {
    fn scenario_name(&mut self, raw: &RawScenario) -> String {
        let Some(name) = self.cx.require(&raw.name, raw.pos, "name") else {
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
                    "{what} name `{name}` is already used ({}); zones, racks, \
                     nodes and devices share one namespace",
                    first.place()
                ),
            );
        } else {
            self.names.insert(name.to_string(), (pos, self.cx.path()));
        }
    }

    /// The names of nodes declared in racks that could not be built, and of their ToRs.
    fn unbuilt_nodes(&self) -> BTreeSet<String> {
        self.names
            .iter()
            .filter(|(_, (_, path))| path.ends_with(UNBUILT_NODES))
            .map(|(name, _)| name.clone())
            .collect()
    }

    fn network(&mut self, raw: Option<&Loc<RawNetwork>>) -> Network {
        let mut n = Network::default();
        let Some(raw) = raw else { return n };
        let r = &raw.value;
        self.cx.at_key("network", |cx| {
            n.cni = val(&r.cni).unwrap_or(n.cni);
            n.calico_backend = val(&r.calico_backend).unwrap_or(n.calico_backend);
            n.datastore_delay =
                positive(cx, &r.datastore_delay, "datastoreDelay", n.datastore_delay);
            n.windows_hns = windows_hns(cx, r);
            n.windows_reserve = windows_reserve(cx, r, n.windows_hns);
            n.policy = val(&r.policy);
            if let Some(range) = &r.service_cluster_ip_range {
                match range.value.0 {
                    // kube-apiserver refuses a range wider than /12 and one with no room.
                    ipnet::IpNet::V4(net) if (12..=30).contains(&net.prefix_len()) => {
                        n.service_cluster_ip_range = net;
                    }
                    other => cx.at_key("serviceClusterIPRange", |cx| {
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
                    cx.at_key("hostMtu", |cx| {
                        cx.error(mtu.pos, format!("{} is outside 576..=65535", mtu.value))
                    });
                }
            }
            if let Some(bgp) = &r.bgp {
                cx.at_key("bgp", |cx| {
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
                        }) => cx.at_key("bfd", |cx| {
                            let interval =
                                positive(cx, &t.interval, "interval", Bfd::DEFAULT.interval);
                            let multiplier = match &t.multiplier {
                                Some(m) if !(1..=255).contains(&m.value) => {
                                    cx.at_key("multiplier", |cx| {
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

    fn workloads(&mut self, raw: &[(String, Loc<RawWorkload>)], topo: &Topology) -> Vec<Workload> {
        let mut out = Vec::new();
        let mut seen: BTreeMap<(String, String), Pos> = BTreeMap::new();
        let mut total: u64 = 0;
        let node_count = topo.nodes.len() as u64;
        for (path, w) in raw {
            self.cx.with_path_prefix(path, |cx| {
                let r = &w.value;
                let Some(name) = cx.require(&r.name, r.pos, "name") else { return };
                cx.at_key("name", |cx| {
                    check_dns(cx, &name.value, name.pos);
                });
                let namespace = val(&r.namespace).unwrap_or_else(|| "default".to_string());
                let kind = val(&r.kind).unwrap_or(WorkloadKind::Deployment);
                let replicas = match (kind, &r.replicas) {
                    (WorkloadKind::DaemonSet, Some(rep)) => {
                        cx.at_key("replicas", |cx| {
                            cx.error(rep.pos, "a DaemonSet runs one pod on every eligible node; remove `replicas`")
                        });
                        0
                    }
                    (WorkloadKind::Pod, Some(rep)) if rep.value != 1 => {
                        cx.at_key("replicas", |cx| cx.error(rep.pos, "a Pod is one pod; remove `replicas`"));
                        1
                    }
                    (WorkloadKind::DaemonSet, None) => 0,
                    (_, Some(rep)) => rep.value,
                    (_, None) => 1,
                };
                total += if kind == WorkloadKind::DaemonSet { node_count } else { u64::from(replicas) };
                if total > LIMITS.max_pods {
                    let at = r.replicas.as_ref().map_or(r.pos, |l| l.pos);
                    cx.error(at, format!("the workloads would create more than {} pods", LIMITS.max_pods));
                }
                let key = (namespace.clone(), name.value.clone());
                if let Some(first) = seen.get(&key) {
                    cx.at_key("name", |cx| {
                        cx.error(
                            name.pos,
                            format!(
                                "workload `{namespace}/{}` is already defined ({})",
                                name.value, first.place()
                            ),
                        )
                    });
                    return;
                }
                seen.insert(key, name.pos);
                let ports = cx.at_key("ports", |cx| container_ports(r.ports.as_ref().map_or(&[][..], |l| &l.value[..]), cx));
                let service_account_name = match &r.service_account_name {
                    Some(sa) => {
                        cx.at_key("serviceAccountName", |cx| {
                            check_dns(cx, &sa.value, sa.pos);
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
}
