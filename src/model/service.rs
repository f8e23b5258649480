//! Kubernetes Services as podnet models them (SPEC §7, REFERENCE-policy §5): the `v1` Service
//! a manifest declares, after validation, with Kubernetes' defaults applied.
//!
//! Invariants: `ports` are in declaration order, their (port, protocol) pairs and names are
//! unique (the API server's `validateServicePort`); a headless Service has no cluster IP;
//! `target_port` is never absent (it defaults to `port`).
//! What this is not: no cluster IP allocation, no EndpointSlices, no DNAT (`sim::services`
//! and `forwarding::service` do those).

use std::net::Ipv4Addr;

use super::Labels;
use super::text_enum;
use super::workload::PortProtocol;

text_enum! {
    /// `spec.type` (k8s-api ServiceType; default ClusterIP).
    pub enum ServiceType {
        ClusterIp = "ClusterIP",
        NodePort = "NodePort",
        LoadBalancer = "LoadBalancer",
        ExternalName = "ExternalName",
    }
}

text_enum! {
    /// `internalTrafficPolicy` / `externalTrafficPolicy` (default Cluster).
    pub enum TrafficPolicy {
        Cluster = "Cluster",
        Local = "Local",
    }
}

text_enum! {
    /// `sessionAffinity` (default None).
    pub enum SessionAffinity {
        None = "None",
        ClientIp = "ClientIP",
    }
}

/// `spec.clusterIP` as written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClusterIpSpec {
    /// Not written (or `""`): the control plane allocates one from the service range.
    Allocate,
    /// `None`: headless, no virtual IP and no proxying.
    Headless,
    /// A fixed address, which must lie in the service range.
    Fixed(Ipv4Addr),
}

/// A `targetPort`: a number, or the name of a container port looked up on each backend pod.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum TargetPort {
    Number(u16),
    Name(String),
}

impl std::fmt::Display for TargetPort {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TargetPort::Number(n) => write!(f, "{n}"),
            TargetPort::Name(n) => f.write_str(n),
        }
    }
}

/// One entry of `spec.ports`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServicePort {
    pub name: Option<String>,
    pub protocol: PortProtocol,
    pub port: u16,
    pub target_port: TargetPort,
    pub node_port: Option<u16>,
}

/// A validated `v1` Service.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Service {
    pub namespace: String,
    pub name: String,
    pub service_type: ServiceType,
    /// `spec.selector`; `None`: a Service without selector (its endpoints would be managed by
    /// hand, which podnet does not model: it never has endpoints).
    pub selector: Option<Labels>,
    pub cluster_ip: ClusterIpSpec,
    pub ports: Vec<ServicePort>,
    pub session_affinity: SessionAffinity,
    /// `sessionAffinityConfig.clientIP.timeoutSeconds` (default 10800).
    pub affinity_timeout_seconds: u32,
    pub internal_traffic_policy: TrafficPolicy,
    pub external_traffic_policy: TrafficPolicy,
    pub external_ips: Vec<Ipv4Addr>,
    /// `spec.loadBalancerIP` (deprecated but still honoured by Calico's LoadBalancer IPAM and
    /// most load balancers): the ingress address a LoadBalancer Service gets.
    pub load_balancer_ip: Option<Ipv4Addr>,
    pub publish_not_ready_addresses: bool,
}

/// Kubernetes' `DefaultClientIPServiceAffinitySeconds`.
pub const DEFAULT_AFFINITY_TIMEOUT_SECONDS: u32 = 10800;

impl Service {
    /// A Service as the API server defaults one written with only these fields: type
    /// ClusterIP, a cluster IP allocated, no selector, no session affinity (timeout 10800 s),
    /// both traffic policies `Cluster`, no external or load-balancer address.
    pub fn new(namespace: &str, name: &str, ports: Vec<ServicePort>) -> Service {
        Service {
            namespace: namespace.into(),
            name: name.into(),
            service_type: ServiceType::ClusterIp,
            selector: None,
            cluster_ip: ClusterIpSpec::Allocate,
            ports,
            session_affinity: SessionAffinity::None,
            affinity_timeout_seconds: DEFAULT_AFFINITY_TIMEOUT_SECONDS,
            internal_traffic_policy: TrafficPolicy::Cluster,
            external_traffic_policy: TrafficPolicy::Cluster,
            external_ips: Vec::new(),
            load_balancer_ip: None,
            publish_not_ready_addresses: false,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> (String, String) {
        (self.namespace.clone(), self.name.clone())
    }

    pub fn is_headless(&self) -> bool {
        self.cluster_ip == ClusterIpSpec::Headless
    }

    /// The port entry a client reaches with `port`/`protocol`, if any.
    pub fn port(&self, port: u16, protocol: PortProtocol) -> Option<&ServicePort> {
        self.ports
            .iter()
            .find(|p| p.port == port && p.protocol == protocol)
    }

    /// Whether `labels` (a pod's) match the selector; a Service without selector selects none.
    pub fn selects(&self, labels: &Labels) -> bool {
        self.selector
            .as_ref()
            .is_some_and(|sel| sel.iter().all(|(k, v)| labels.get(k) == Some(v)))
    }
}
