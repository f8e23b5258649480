//! Which Service addresses each Calico node advertises over BGP (REFERENCE-policy §5:
//! BGPConfiguration `serviceClusterIPs`, `serviceExternalIPs`, `serviceLoadBalancerIPs`, as
//! confd's `updateGlobalRoutes` and `advertiseThisService` decide them).
//!
//! - Every node advertises each `serviceClusterIPs` CIDR, and each `serviceExternalIPs` and
//!   `serviceLoadBalancerIPs` CIDR that is not a single address (LoadBalancer aggregation,
//!   the default).
//! - A NodePort or LoadBalancer Service with `externalTrafficPolicy: Local` is advertised as
//!   /32s only by the nodes with a ready endpoint of it: its cluster IP (when
//!   `serviceClusterIPs` is set), its external IPs inside a `serviceExternalIPs` CIDR, its
//!   `loadBalancerIP` inside a `serviceLoadBalancerIPs` CIDR.
//! - A NodePort or LoadBalancer Service with `externalTrafficPolicy: Cluster` whose external
//!   or LoadBalancer IP is itself a /32 entry of the configuration is advertised as that /32
//!   by every node.
//! - Windows nodes and nodes labelled `node.kubernetes.io/exclude-from-external-load-balancers
//!   =true` advertise none of it.
//!
//! Invariants: pure; every map and set is ordered, so the same inputs give the same routes.
//! What this is not: no BGP (the simulator hands the result to the engine as static routes,
//! `bgp::engine` `statics.rs`), no forwarding of Service traffic (`service_entry`).

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use ipnet::IpNet;

use super::service::{ServiceTable, ServiceView};
use crate::model::service::{ServiceType, TrafficPolicy};
use crate::model::topology::{DeviceId, Os, Topology};

/// The label that keeps a node out of Service advertisement (and external load balancers).
pub const EXCLUDE_LABEL: &str = "node.kubernetes.io/exclude-from-external-load-balancers";

/// The Service CIDRs of Calico's `BGPConfiguration` `default`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceCidrs {
    pub cluster_ips: Vec<IpNet>,
    pub external_ips: Vec<IpNet>,
    pub load_balancer_ips: Vec<IpNet>,
}

impl ServiceCidrs {
    pub fn is_empty(&self) -> bool {
        self.cluster_ips.is_empty()
            && self.external_ips.is_empty()
            && self.load_balancer_ips.is_empty()
    }

    /// The prefixes every advertising node originates: every cluster IP CIDR, and the
    /// external and LoadBalancer CIDRs that are not single addresses.
    fn aggregates(&self) -> impl Iterator<Item = IpNet> + '_ {
        let ranges = |nets: &'_ [IpNet]| {
            nets.iter()
                .copied()
                .filter(|n| n.prefix_len() < n.max_prefix_len())
                .collect::<Vec<_>>()
        };
        self.cluster_ips
            .iter()
            .copied()
            .chain(ranges(&self.external_ips))
            .chain(ranges(&self.load_balancer_ips))
    }

    /// Every configured entry: the CIDRs confd tells BIRD not to program into the kernel
    /// (`/rejectcidrs`), so a node never forwards by a learned Service route.
    pub fn all(&self) -> impl Iterator<Item = IpNet> + '_ {
        self.cluster_ips
            .iter()
            .chain(&self.external_ips)
            .chain(&self.load_balancer_ips)
            .copied()
    }
}

/// Which kind of Service address an advertised address is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum ServiceIpKind {
    Cluster,
    External,
    LoadBalancer,
}

impl ServiceIpKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ServiceIpKind::Cluster => "clusterIP",
            ServiceIpKind::External => "externalIP",
            ServiceIpKind::LoadBalancer => "loadBalancerIP",
        }
    }
}

/// The addresses of a Service that can be reached from outside the cluster through BGP:
/// its cluster IP, its external IPs and its LoadBalancer IP, in that order.
pub fn service_ips(view: &ServiceView) -> Vec<(ServiceIpKind, IpAddr)> {
    let s = &view.service;
    let mut out: Vec<(ServiceIpKind, IpAddr)> = Vec::new();
    if let Some(ip) = view.cluster_ip {
        out.push((ServiceIpKind::Cluster, IpAddr::V4(ip)));
    }
    for ip in &s.external_ips {
        out.push((ServiceIpKind::External, IpAddr::V4(*ip)));
    }
    if s.service_type == ServiceType::LoadBalancer
        && let Some(ip) = s.load_balancer_ip
    {
        out.push((ServiceIpKind::LoadBalancer, IpAddr::V4(ip)));
    }
    out
}

/// Whether [`advertised`] reads the Service's endpoints: a NodePort or LoadBalancer Service
/// with `externalTrafficPolicy: Local`, whose /32s come from the nodes with a ready endpoint.
/// The others are advertised the same whatever their endpoints.
pub fn needs_endpoints(s: &crate::model::service::Service) -> bool {
    matches!(
        s.service_type,
        ServiceType::NodePort | ServiceType::LoadBalancer
    ) && s.external_traffic_policy == TrafficPolicy::Local
}

/// The static routes each node advertises for Services, by node device.
pub fn advertised(
    cidrs: &ServiceCidrs,
    table: &ServiceTable,
    topology: &Topology,
) -> BTreeMap<DeviceId, BTreeSet<IpNet>> {
    let mut out: BTreeMap<DeviceId, BTreeSet<IpNet>> = BTreeMap::new();
    if cidrs.is_empty() {
        return out;
    }
    let nodes: Vec<DeviceId> = topology
        .live_nodes()
        .filter(|(_, n)| {
            n.os == Os::Linux && n.labels.get(EXCLUDE_LABEL).map(String::as_str) != Some("true")
        })
        .map(|(_, n)| n.device)
        .collect();
    let aggregates: Vec<IpNet> = cidrs.aggregates().collect();
    for d in &nodes {
        out.entry(*d)
            .or_default()
            .extend(aggregates.iter().copied());
    }
    for view in &table.services {
        let s = &view.service;
        if view.cluster_ip.is_none()
            || !matches!(
                s.service_type,
                ServiceType::NodePort | ServiceType::LoadBalancer
            )
        {
            continue;
        }
        let inside = |nets: &[IpNet], ip: IpAddr| nets.iter().any(|n| n.contains(&ip));
        let exact = |nets: &[IpNet], ip: IpAddr| nets.contains(&IpNet::from(ip));
        let local = s.external_traffic_policy == TrafficPolicy::Local;
        for (kind, ip) in service_ips(view) {
            let configured = match kind {
                ServiceIpKind::Cluster => &cidrs.cluster_ips,
                ServiceIpKind::External => &cidrs.external_ips,
                ServiceIpKind::LoadBalancer => &cidrs.load_balancer_ips,
            };
            let host = IpNet::from(ip);
            let by: Vec<DeviceId> = if local {
                let wanted = match kind {
                    ServiceIpKind::Cluster => !configured.is_empty(),
                    _ => inside(configured, ip),
                };
                if !wanted {
                    continue;
                }
                let ready: BTreeSet<DeviceId> = view
                    .backends
                    .iter()
                    .filter(|b| b.ready || s.publish_not_ready_addresses)
                    .map(|b| b.node)
                    .collect();
                nodes
                    .iter()
                    .copied()
                    .filter(|d| ready.contains(d))
                    .collect()
            } else if kind != ServiceIpKind::Cluster && exact(configured, ip) {
                nodes.clone()
            } else {
                continue;
            };
            for d in by {
                out.entry(d).or_default().insert(host);
            }
        }
    }
    out
}

/// The most specific advertised prefix covering `ip` and the nodes advertising exactly it,
/// in device order; `None` when no node advertises anything covering it.
pub fn advertisers(
    routes: &BTreeMap<DeviceId, BTreeSet<IpNet>>,
    ip: IpAddr,
) -> Option<(IpNet, Vec<DeviceId>)> {
    let best = routes
        .values()
        .flatten()
        .filter(|n| n.contains(&ip))
        .max_by_key(|n| n.prefix_len())
        .copied()?;
    let nodes = routes
        .iter()
        .filter(|(_, nets)| nets.contains(&best))
        .map(|(d, _)| *d)
        .collect();
    Some((best, nodes))
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::forwarding::PodKey;
    use crate::forwarding::service::Backend;
    use crate::forwarding::testutil::*;
    use crate::model::service::{Service, ServicePort, TargetPort};
    use crate::model::workload::PortProtocol;

    fn service(name: &str, kind: ServiceType, etp: TrafficPolicy) -> Service {
        let port = ServicePort {
            name: None,
            protocol: PortProtocol::Tcp,
            port: 80,
            target_port: TargetPort::Number(8080),
            node_port: None,
        };
        Service {
            service_type: kind,
            external_traffic_policy: etp,
            ..Service::new("default", name, vec![port])
        }
    }

    fn backend(t: &Topology, node: &str, i: u8, ready: bool) -> Backend {
        Backend {
            pod: PodKey(u64::from(i)),
            name: format!("default/web-{i}"),
            ip: ip(&format!("10.200.0.{i}")),
            node: dev(t, node),
            ready,
            target_ports: vec![Some(8080)],
        }
    }

    fn names(t: &Topology, nodes: &[DeviceId]) -> Vec<String> {
        nodes.iter().map(|d| t.device(*d).name.clone()).collect()
    }

    #[test]
    fn cidrs_from_every_node_and_local_services_only_from_nodes_with_a_ready_endpoint() {
        // Three nodes in one rack; a3-n2 is a Windows node, which never advertises.
        let mut t = topology(&[&[3]]);
        let win = t.node_by_name("a0-n2").unwrap();
        t.node_mut(win).os = Os::Windows;
        let cidrs = ServiceCidrs {
            cluster_ips: vec![net("10.96.0.0/12")],
            external_ips: vec![net("192.0.2.0/24"), net("198.51.100.7/32")],
            load_balancer_ips: vec![net("203.0.113.0/24")],
        };
        let mut local = service("local", ServiceType::LoadBalancer, TrafficPolicy::Local);
        local.external_ips = vec![Ipv4Addr::new(192, 0, 2, 10), Ipv4Addr::new(8, 8, 8, 8)];
        local.load_balancer_ip = Some(Ipv4Addr::new(203, 0, 113, 5));
        let mut cluster = service("cluster", ServiceType::NodePort, TrafficPolicy::Cluster);
        cluster.external_ips = vec![Ipv4Addr::new(198, 51, 100, 7), Ipv4Addr::new(192, 0, 2, 11)];
        let plain = service("plain", ServiceType::ClusterIp, TrafficPolicy::Cluster);
        let table = ServiceTable {
            seed: 1,
            services: vec![
                ServiceView {
                    service: local,
                    cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 10)),
                    // A ready endpoint on a0-n0, a not-ready one on a0-n1, one on the
                    // Windows node.
                    backends: vec![
                        backend(&t, "a0-n0", 1, true),
                        backend(&t, "a0-n1", 2, false),
                        backend(&t, "a0-n2", 3, true),
                    ],
                },
                ServiceView {
                    service: cluster,
                    cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 11)),
                    backends: Vec::new(),
                },
                ServiceView {
                    service: plain,
                    cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 12)),
                    backends: vec![backend(&t, "a0-n1", 4, true)],
                },
            ],
        };
        let routes = advertised(&cidrs, &table, &t);
        let of = |node: &str| -> Vec<String> {
            routes[&dev(&t, node)]
                .iter()
                .map(|n| n.to_string())
                .collect()
        };
        // Aggregates: the cluster CIDR, the external /24 and the LoadBalancer /24 (the /32
        // entry is not an aggregate). a0-n0 adds the Local Service's cluster IP, its external
        // IP inside 192.0.2.0/24 (8.8.8.8 is in no CIDR) and its LoadBalancer IP; every node
        // adds the Cluster Service's external IP that is a /32 entry.
        assert_eq!(
            of("a0-n0"),
            [
                "10.96.0.0/12",
                "10.96.0.10/32",
                "192.0.2.0/24",
                "192.0.2.10/32",
                "198.51.100.7/32",
                "203.0.113.0/24",
                "203.0.113.5/32"
            ]
        );
        assert_eq!(
            of("a0-n1"),
            [
                "10.96.0.0/12",
                "192.0.2.0/24",
                "198.51.100.7/32",
                "203.0.113.0/24"
            ]
        );
        assert!(!routes.contains_key(&dev(&t, "a0-n2")));
        let (prefix, by) = advertisers(&routes, ip("10.96.0.10")).unwrap();
        assert_eq!(
            (prefix, names(&t, &by)),
            (net("10.96.0.10/32"), vec!["a0-n0".to_string()])
        );
        let (prefix, by) = advertisers(&routes, ip("10.96.0.12")).unwrap();
        assert_eq!(
            (prefix, names(&t, &by)),
            (
                net("10.96.0.0/12"),
                vec!["a0-n0".to_string(), "a0-n1".to_string()]
            )
        );
        assert_eq!(advertisers(&routes, ip("8.8.8.8")), None);
    }

    #[test]
    fn excluded_nodes_and_an_empty_configuration_advertise_nothing() {
        let mut t = topology(&[&[2]]);
        let n = t.node_by_name("a0-n1").unwrap();
        t.node_mut(n)
            .labels
            .insert(EXCLUDE_LABEL.to_string(), "true".to_string());
        let cidrs = ServiceCidrs {
            cluster_ips: vec![net("10.96.0.0/12")],
            ..ServiceCidrs::default()
        };
        let routes = advertised(&cidrs, &ServiceTable::default(), &t);
        assert_eq!(
            routes.keys().copied().collect::<Vec<_>>(),
            vec![dev(&t, "a0-n0")]
        );
        assert!(advertised(&ServiceCidrs::default(), &ServiceTable::default(), &t).is_empty());
    }
}
