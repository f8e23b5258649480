//! What one policy check looks at: the packet (protocol, ports or ICMP type and code) and the
//! two parties, each a workload endpoint (labels, namespace, service account, named ports) or
//! a bare address.
//!
//! Plain data; what this is not: no matching (the [`Engine`] matches rules against these).

use super::*;

/// The source port podnet gives every new connection: the first port of Linux's default
/// ephemeral range (`net.ipv4.ip_local_port_range` = 32768–60999). Rules on source ports are
/// rare; this keeps them deterministic.
pub const EPHEMERAL_PORT: u16 = 32768;

/// A container port a pod declares (workload `ports`), for named-port rules.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct NamedPort {
    pub name: String,
    pub port: u16,
    pub protocol: Protocol,
}

/// A pod's workload endpoint as policy sees it (pod-network pods only: Calico creates none for
/// a host-network pod).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub namespace: String,
    pub name: String,
    pub ip: IpAddr,
    /// The pod's labels plus Calico's endpoint labels ([`super::model::endpoint_labels`]);
    /// shared by the pods of a workload (they are the same for all of them).
    pub labels: std::sync::Arc<Labels>,
    pub service_account: String,
    /// Named container ports.
    pub ports: Vec<NamedPort>,
    /// The pod runs on a Windows node (HNS ACLs, REFERENCE-policy §4).
    pub windows: bool,
}

impl Endpoint {
    /// A Linux pod's endpoint under the `default` ServiceAccount, without named ports: its
    /// labels are `pod_labels` plus Calico's endpoint labels.
    pub fn pod(namespace: &str, name: &str, ip: IpAddr, pod_labels: &Labels) -> Endpoint {
        Endpoint {
            namespace: namespace.to_string(),
            name: name.to_string(),
            ip,
            labels: crate::policy::model::endpoint_labels(pod_labels, namespace, "default").into(),
            service_account: "default".to_string(),
            ports: Vec::new(),
            windows: false,
        }
    }
}

/// One end of a connection: an address and the workload endpoint owning it, if any.
#[derive(Clone, Copy, Debug)]
pub struct Party<'a> {
    pub ip: IpAddr,
    pub endpoint: Option<&'a Endpoint>,
}

impl<'a> Party<'a> {
    pub fn endpoint(e: &'a Endpoint) -> Party<'a> {
        Party {
            ip: e.ip,
            endpoint: Some(e),
        }
    }

    pub fn address(ip: IpAddr) -> Party<'a> {
        Party { ip, endpoint: None }
    }
}

/// What a new connection's first packet carries that rules can match, after any DNAT.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Packet {
    pub protocol: Protocol,
    /// Destination port (protocols with ports).
    pub port: u16,
    /// ICMP type and code (ICMP only).
    pub icmp: Option<(u8, u8)>,
}

impl Packet {
    pub fn tcp(port: u16) -> Packet {
        Packet::with_port(Protocol::TCP, port)
    }

    pub fn udp(port: u16) -> Packet {
        Packet::with_port(Protocol::UDP, port)
    }

    pub fn with_port(protocol: Protocol, port: u16) -> Packet {
        Packet {
            protocol,
            port,
            icmp: None,
        }
    }

    pub fn icmp(icmp_type: u8, code: u8) -> Packet {
        Packet {
            protocol: Protocol::ICMP,
            port: 0,
            icmp: Some((icmp_type, code)),
        }
    }
}

impl fmt::Display for Packet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.icmp {
            Some((t, c)) => write!(f, "{} type {t} code {c}", self.protocol),
            None if self.protocol.has_ports() => write!(f, "{}/{}", self.port, self.protocol),
            None => write!(f, "{}", self.protocol),
        }
    }
}
