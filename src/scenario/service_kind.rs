//! The `v1` Service kind (SPEC §7): its field table for the strict field check and its
//! decoding into [`crate::model::service::Service`] with the API server's validation
//! (`kubernetes/kubernetes` `pkg/apis/core/validation/validation.go` `ValidateService`,
//! `validateServicePort`; defaults from `pkg/apis/core/v1/defaults.go` `SetDefaults_Service`).
//!
//! Validated: ports required unless headless or ExternalName; each port 1..=65535 with a
//! protocol TCP/UDP/SCTP (default TCP); names required when there are several ports, DNS
//! labels, unique; (port, protocol) unique; `targetPort` a port number or an IANA_SVC_NAME
//! (default: `port`); `nodePort` only for NodePort and LoadBalancer; `clusterIP` `None`, empty
//! or an IPv4 address; a headless Service neither NodePort nor LoadBalancer;
//! `externalTrafficPolicy` only for externally accessible Services; `sessionAffinityConfig`
//! timeout 1..=86400 and only with `ClientIP`. Every problem is reported at its field.
//!
//! What this module does not do: it does not allocate cluster IPs or check them against
//! `network.serviceClusterIPRange` and each other (`build` does, across every Service of the
//! run), and it never derives endpoints.

use std::net::{IpAddr, Ipv4Addr};

use super::api_fields::{Field, KindSchema, S, SL, Shape, m, u};
use super::decode::{Cx, Decode, StringMap};
use super::kinds::{Spec, list, port_or_name, word};
use super::resource::Resource;
use super::yaml::{Value, YamlNode};
use crate::model::service::{
    ClusterIpSpec, DEFAULT_AFFINITY_TIMEOUT_SECONDS, Service, ServicePort, ServiceType,
    SessionAffinity, TargetPort, TrafficPolicy,
};
use crate::model::workload::PortProtocol;

const SERVICE_PORT: &[Field] = &[
    m("name", S),
    m("protocol", S),
    u("appProtocol", S),
    m("port", S),
    m("targetPort", S),
    m("nodePort", S),
];
const CLIENT_IP_CONFIG: &[Field] = &[m("timeoutSeconds", S)];
const SESSION_AFFINITY_CONFIG: &[Field] = &[m("clientIP", Shape::Object(CLIENT_IP_CONFIG))];

/// `core/v1` ServiceSpec (k8s-api `core/v1/types.go`).
const SERVICE_SPEC: &[Field] = &[
    m("ports", Shape::ObjectList(SERVICE_PORT)),
    m("selector", Shape::FreeMap),
    m("clusterIP", S),
    u("clusterIPs", SL),
    m("type", S),
    m("externalIPs", SL),
    m("sessionAffinity", S),
    m("loadBalancerIP", S),
    u("loadBalancerSourceRanges", SL),
    u("externalName", S),
    m("externalTrafficPolicy", S),
    u("healthCheckNodePort", S),
    m("publishNotReadyAddresses", S),
    m(
        "sessionAffinityConfig",
        Shape::Object(SESSION_AFFINITY_CONFIG),
    ),
    u("ipFamilies", SL),
    u("ipFamilyPolicy", S),
    u("allocateLoadBalancerNodePorts", S),
    u("loadBalancerClass", S),
    m("internalTrafficPolicy", S),
    u("trafficDistribution", S),
];

/// The `v1` Service schema.
pub(super) static SERVICE_SCHEMA: KindSchema = KindSchema {
    api_version: super::api_fields::CORE_V1,
    kind: "Service",
    modelled: true,
    namespaced: true,
    spec: SERVICE_SPEC,
};

/// Decodes a Service whose fields were already checked against [`SERVICE_SCHEMA`].
pub(super) fn decode(r: &Resource, cx: &mut Cx) -> Option<Service> {
    let spec = Spec::of(r, cx)?;
    cx.at_key("spec", |cx| service(r, &spec, cx))
}

fn service(r: &Resource, spec: &Spec, cx: &mut Cx) -> Option<Service> {
    let mut ok = true;
    let service_type = match spec.get(cx, "type", service_type) {
        Some(t) => t,
        None if spec.has("type") => {
            ok = false;
            ServiceType::ClusterIp
        }
        None => ServiceType::ClusterIp,
    };
    let cluster_ip = match spec.get(cx, "clusterIP", cluster_ip) {
        Some(c) => c,
        None if spec.has("clusterIP") => {
            ok = false;
            ClusterIpSpec::Allocate
        }
        None => ClusterIpSpec::Allocate,
    };
    let selector = match spec.value::<StringMap>(cx, "selector") {
        Some(s) => Some(s.0).filter(|s| !s.is_empty()),
        None if spec.has("selector") => {
            ok = false;
            None
        }
        None => None,
    };
    let ports = match spec.get(cx, "ports", |n, cx| ports(n, service_type, cx)) {
        Some(p) => p,
        None if spec.has("ports") => {
            ok = false;
            Vec::new()
        }
        None => Vec::new(),
    };
    let headless = cluster_ip == ClusterIpSpec::Headless;
    if ports.is_empty() && ok && !headless && service_type != ServiceType::ExternalName {
        cx.error(
            spec.pos_of("ports"),
            "`ports` is required (at least one) unless the Service is headless (`clusterIP: None`)",
        );
        ok = false;
    }
    if headless
        && matches!(
            service_type,
            ServiceType::NodePort | ServiceType::LoadBalancer
        )
    {
        cx.at_key("clusterIP", |cx| {
            cx.error(
                spec.pos_of("clusterIP"),
                format!("may not be `None` for a {service_type} Service"),
            )
        });
        ok = false;
    }
    let external_ips = spec
        .get(cx, "externalIPs", |n, cx| list(n, cx, ipv4))
        .unwrap_or_default();
    let externally_accessible = matches!(
        service_type,
        ServiceType::NodePort | ServiceType::LoadBalancer
    ) || (service_type == ServiceType::ClusterIp
        && !external_ips.is_empty());
    let internal_traffic_policy = spec
        .get(cx, "internalTrafficPolicy", traffic_policy)
        .unwrap_or(TrafficPolicy::Cluster);
    let external_traffic_policy = match spec.get(cx, "externalTrafficPolicy", traffic_policy) {
        Some(p) if !externally_accessible => {
            cx.at_key("externalTrafficPolicy", |cx| {
                cx.error(
                    spec.pos_of("externalTrafficPolicy"),
                    "may only be set for a NodePort or LoadBalancer Service, or one with `externalIPs`",
                )
            });
            ok = false;
            p
        }
        Some(p) => p,
        None => TrafficPolicy::Cluster,
    };
    let session_affinity = spec
        .get(cx, "sessionAffinity", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("None", SessionAffinity::None),
                    ("ClientIP", SessionAffinity::ClientIp),
                ],
            )
        })
        .unwrap_or(SessionAffinity::None);
    let mut affinity_timeout_seconds = DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    if let Some(config) = spec.child(cx, "sessionAffinityConfig") {
        cx.at_key("sessionAffinityConfig", |cx| {
            if session_affinity != SessionAffinity::ClientIp {
                cx.error(
                    config.pos,
                    "may only be set with `sessionAffinity: ClientIP`",
                );
                ok = false;
            }
            if let Some(client) = config.child(cx, "clientIP") {
                cx.at_key("clientIP", |cx| {
                    if let Some(t) = client.get(cx, "timeoutSeconds", |n, cx| {
                        let t = u32::decode(n, cx)?;
                        if !(1..=86400).contains(&t) {
                            cx.error(n.pos, format!("{t} is outside 1..=86400"));
                            return None;
                        }
                        Some(t)
                    }) {
                        affinity_timeout_seconds = t;
                    }
                });
            }
        });
    }
    let load_balancer_ip = spec.get(cx, "loadBalancerIP", ipv4);
    let publish_not_ready_addresses = spec.value(cx, "publishNotReadyAddresses").unwrap_or(false);
    ok.then(|| Service {
        namespace: r.namespace.clone().unwrap_or_else(|| "default".to_string()),
        name: r.name.clone(),
        service_type,
        selector,
        cluster_ip,
        ports,
        session_affinity,
        affinity_timeout_seconds,
        internal_traffic_policy,
        external_traffic_policy,
        external_ips,
        load_balancer_ip,
        publish_not_ready_addresses,
    })
}

fn service_type(node: &YamlNode, cx: &mut Cx) -> Option<ServiceType> {
    word(
        node,
        cx,
        &[
            ("ClusterIP", ServiceType::ClusterIp),
            ("NodePort", ServiceType::NodePort),
            ("LoadBalancer", ServiceType::LoadBalancer),
            ("ExternalName", ServiceType::ExternalName),
        ],
    )
}

fn traffic_policy(node: &YamlNode, cx: &mut Cx) -> Option<TrafficPolicy> {
    word(
        node,
        cx,
        &[
            ("Cluster", TrafficPolicy::Cluster),
            ("Local", TrafficPolicy::Local),
        ],
    )
}

fn ipv4(node: &YamlNode, cx: &mut Cx) -> Option<Ipv4Addr> {
    match IpAddr::decode(node, cx)? {
        IpAddr::V4(ip) => Some(ip),
        IpAddr::V6(ip) => {
            cx.error(
                node.pos,
                format!("`{ip}`: podnet models IPv4 Services only"),
            );
            None
        }
    }
}

/// `clusterIP`: `None` (headless), empty (allocate) or an address.
fn cluster_ip(node: &YamlNode, cx: &mut Cx) -> Option<ClusterIpSpec> {
    match &node.value {
        Value::Str(s) if s == "None" => Some(ClusterIpSpec::Headless),
        Value::Str(s) if s.is_empty() => Some(ClusterIpSpec::Allocate),
        Value::Str(s) => match s.trim().parse::<IpAddr>() {
            Ok(IpAddr::V4(ip)) => Some(ClusterIpSpec::Fixed(ip)),
            Ok(IpAddr::V6(_)) => {
                cx.error(node.pos, format!("`{s}`: podnet models IPv4 Services only"));
                None
            }
            Err(_) => {
                cx.error(
                    node.pos,
                    format!("`{s}` is neither `None` nor an IP address"),
                );
                None
            }
        },
        other => {
            cx.error(
                node.pos,
                format!(
                    "expected `None` or an IP address, found {}",
                    other.kind_name()
                ),
            );
            None
        }
    }
}

fn port_number(node: &YamlNode, cx: &mut Cx) -> Option<u16> {
    let n = u16::decode(node, cx)?;
    if n == 0 {
        cx.error(node.pos, "port 0 is outside 1..=65535");
        return None;
    }
    Some(n)
}

/// Kubernetes' DNS_LABEL (RFC 1123 label): at most 63 lowercase letters, digits and inner
/// hyphens.
pub(super) fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

fn ports(node: &YamlNode, service_type: ServiceType, cx: &mut Cx) -> Option<Vec<ServicePort>> {
    let ports = list(node, cx, |n, cx| port(n, service_type, cx))?;
    let Some(items) = super::kinds::seq_items(node) else {
        return Some(ports);
    };
    let mut ok = true;
    for (i, (p, item)) in ports.iter().zip(items).enumerate() {
        let pos = item.get("name").map_or(item.pos, |n| n.pos);
        cx.at_index(i, |cx| {
            if ports.len() > 1 && p.name.is_none() {
                cx.at_key("name", |cx| {
                    cx.error(pos, "required when the Service has more than one port")
                });
                ok = false;
            }
            if let Some(name) = &p.name
                && ports[..i].iter().any(|q| q.name.as_ref() == Some(name))
            {
                cx.at_key("name", |cx| {
                    cx.error(pos, format!("duplicate port name `{name}`"))
                });
                ok = false;
            }
            if ports[..i]
                .iter()
                .any(|q| q.port == p.port && q.protocol == p.protocol)
            {
                let pos = item.get("port").map_or(item.pos, |n| n.pos);
                cx.at_key("port", |cx| {
                    cx.error(pos, format!("duplicate port {}/{}", p.port, p.protocol))
                });
                ok = false;
            }
        });
    }
    ok.then_some(ports)
}

fn port(node: &YamlNode, service_type: ServiceType, cx: &mut Cx) -> Option<ServicePort> {
    let object = Spec::from_node(node, cx)?;
    let name = object.get(cx, "name", |n, cx| {
        let s = String::decode(n, cx)?;
        if !is_dns_label(&s) {
            cx.error(
                n.pos,
                format!(
                    "`{s}` is not a DNS label (lowercase letters, digits and inner hyphens, at most 63)"
                ),
            );
            return None;
        }
        Some(s)
    });
    let protocol = object.get(cx, "protocol", |n, cx| {
        word(
            n,
            cx,
            &[
                ("TCP", PortProtocol::Tcp),
                ("UDP", PortProtocol::Udp),
                ("SCTP", PortProtocol::Sctp),
            ],
        )
    });
    let port = object.required(cx, "port", port_number);
    let target_port = object.get(cx, "targetPort", |n, cx| {
        port_or_name(
            n,
            cx,
            |n, cx| port_number(n, cx).map(TargetPort::Number),
            TargetPort::Name,
        )
    });
    let node_port = object.get(cx, "nodePort", |n, cx| {
        let p = port_number(n, cx)?;
        if !matches!(
            service_type,
            ServiceType::NodePort | ServiceType::LoadBalancer
        ) {
            cx.error(
                n.pos,
                format!("may not be set for a {service_type} Service"),
            );
            return None;
        }
        Some(p)
    });
    let failed = (object.has("name") && name.is_none())
        || (object.has("protocol") && protocol.is_none())
        || (object.has("targetPort") && target_port.is_none())
        || (object.has("nodePort") && node_port.is_none());
    let port = port?;
    (!failed).then(|| ServicePort {
        name,
        protocol: protocol.unwrap_or(PortProtocol::Tcp),
        port,
        target_port: target_port.unwrap_or(TargetPort::Number(port)),
        node_port,
    })
}

/// The cluster IPs the Services name, checked against `range` as the API server's allocator
/// does: inside it, neither its network nor its broadcast address nor the first host address
/// (the `kubernetes` Service's), and, among the Services present from the start, each named
/// once and no more Services than the range holds. Services applied by events are checked
/// for the range only: whether their address is free depends on the time they arrive.
pub(super) fn check_cluster_ips(
    resources: &[Resource],
    specs: &[Option<super::kinds::ResourceSpec>],
    applied: &[Resource],
    applied_specs: &[Option<super::kinds::ResourceSpec>],
    range: ipnet::Ipv4Net,
    cx: &mut Cx,
) {
    use super::kinds::ResourceSpec;
    let kubernetes = Ipv4Addr::from(u32::from(range.network()) + 1);
    let capacity = u64::from(u32::from(range.broadcast()) - u32::from(range.network())) - 2;
    let mut taken: std::collections::BTreeMap<Ipv4Addr, String> = Default::default();
    let mut count = 0u64;
    let initial = resources.iter().zip(specs).map(|(r, s)| (r, s, true));
    let later = applied
        .iter()
        .zip(applied_specs)
        .map(|(r, s)| (r, s, false));
    for (r, spec, at_start) in initial.chain(later) {
        let Some(ResourceSpec::Service(s)) = spec else {
            continue;
        };
        let mut problem = None;
        match s.cluster_ip {
            ClusterIpSpec::Fixed(ip) => {
                if !range.contains(&ip) || ip == range.network() || ip == range.broadcast() {
                    problem = Some(format!(
                        "{ip} is not in the valid range {range} (`network.serviceClusterIPRange`)"
                    ));
                } else if ip == kubernetes {
                    problem = Some(format!(
                        "{ip} is the first address of {range}, which the `kubernetes` Service holds"
                    ));
                } else if at_start {
                    if let Some(other) = taken.get(&ip) {
                        problem = Some(format!("{ip} is already allocated to Service {other}"));
                    }
                    taken.insert(ip, format!("{}/{}", s.namespace, s.name));
                }
            }
            ClusterIpSpec::Allocate => {}
            ClusterIpSpec::Headless => continue,
        }
        if at_start {
            count += 1;
            if count == capacity + 1 {
                problem = Some(format!(
                    "the service cluster IP range {range} holds {capacity} Services; this one has no address left"
                ));
            }
        }
        if let Some(message) = problem {
            r.error_at(cx, &["spec", "clusterIP"], message);
        }
    }
}
