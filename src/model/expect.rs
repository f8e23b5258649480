//! Expectations (SPEC §2.6): what the scenario's author says must hold, and when.
//!
//! These are validated descriptions only; evaluating them against a snapshot is the
//! simulator's job. Names that must exist (pods, nodes, pools) have been checked by `scenario`
//! as far as they can be before the run.

use std::net::IpAddr;

use ipnet::IpNet;

use super::text_enum;
use super::time::{SimDuration, SimTime};
use super::workload::PodStatus;

/// A number that must match exactly or within a bound: `3`, `{atMost: 3}`, `{atLeast: 3}`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum Count {
    Exactly(u64),
    Bounded {
        #[serde(rename = "atLeast", default)]
        at_least: Option<u64>,
        #[serde(rename = "atMost", default)]
        at_most: Option<u64>,
    },
}

impl Count {
    pub fn holds(&self, actual: u64) -> bool {
        match *self {
            Count::Exactly(n) => actual == n,
            Count::Bounded { at_least, at_most } => {
                at_least.is_none_or(|lo| actual >= lo) && at_most.is_none_or(|hi| actual <= hi)
            }
        }
    }
}

impl std::fmt::Display for Count {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            Count::Exactly(n) => write!(f, "{n}"),
            Count::Bounded {
                at_least: Some(lo),
                at_most: Some(hi),
            } => write!(f, "{lo}..={hi}"),
            Count::Bounded {
                at_least: Some(lo),
                at_most: None,
            } => write!(f, ">= {lo}"),
            Count::Bounded {
                at_least: None,
                at_most: Some(hi),
            } => write!(f, "<= {hi}"),
            Count::Bounded {
                at_least: None,
                at_most: None,
            } => f.write_str("any"),
        }
    }
}

/// A set of pods: `all`, one pod (`name` or `namespace/name`), or `{workload}`,
/// `{namespace}`, `{node}`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodSet {
    All,
    Pod(String),
    Workload {
        name: String,
        namespace: Option<String>,
    },
    Namespace(String),
    Node(String),
    /// A Service (`{service: ns/name}`), only as the `to` of `reachable`, `unreachable` and
    /// `isolated`: its cluster IP, on each of its ports (SPEC §7); from an external, the
    /// address it reaches the Service at (`forwarding::service_entry::entry_address`).
    Service {
        namespace: String,
        name: String,
    },
    /// An external place (`{external: name}`, SPEC §7), as the `from` or the `to` of
    /// `reachable`, `unreachable` and `isolated`, the other side being pods.
    External(String),
}

impl std::fmt::Display for PodSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PodSet::All => f.write_str("all"),
            PodSet::Pod(p) => f.write_str(p),
            PodSet::Workload {
                name,
                namespace: None,
            } => write!(f, "workload {name}"),
            PodSet::Workload {
                name,
                namespace: Some(ns),
            } => write!(f, "workload {ns}/{name}"),
            PodSet::Namespace(ns) => write!(f, "namespace {ns}"),
            PodSet::Node(n) => write!(f, "node {n}"),
            PodSet::Service { namespace, name } => write!(f, "service {namespace}/{name}"),
            PodSet::External(name) => write!(f, "external {name}"),
        }
    }
}

text_enum! {
    /// Why a packet was or was not delivered (SPEC §3.5).
    pub enum Verdict {
        Delivered = "delivered",
        NoRoute = "no-route",
        Blackhole = "blackhole",
        Loop = "loop",
        NodeDown = "node-down",
        LinkDown = "link-down",
        WrongSubnet = "wrong-subnet",
        Unallocated = "unallocated",
        DuplicateAddress = "duplicate-address",
        /// Network policy: the sender's egress or the receiver's ingress (SPEC §7).
        PolicyDenied = "policy-denied",
        /// A Service with no ready endpoint its traffic policy allows (SPEC §7).
        NoEndpoints = "no-endpoints",
        /// An external reaching a Service address the fabric never learned (SPEC §7).
        NotAdvertised = "not-advertised",
    }
}

text_enum! {
    /// The protocol of a probe packet (expectations' and `trace`'s `protocol`).
    pub enum ProbeProtocol {
        Tcp = "TCP",
        Udp = "UDP",
        Sctp = "SCTP",
        Icmp = "ICMP",
    }
}

/// A destination port: a number, or a container port name resolved on the destination pod.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PortRef {
    Number(u16),
    Name(String),
}

impl std::fmt::Display for PortRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PortRef::Number(n) => write!(f, "{n}"),
            PortRef::Name(name) => f.write_str(name),
        }
    }
}

/// The packet a reachability question is about (`port`, `protocol`, `icmpType`, `icmpCode`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Probe {
    pub protocol: ProbeProtocol,
    /// Protocols with ports; `None` for ICMP.
    pub port: Option<PortRef>,
    /// ICMP: the type (echo request, 8, when not given) and code.
    pub icmp_type: Option<u8>,
    pub icmp_code: Option<u8>,
}

impl std::fmt::Display for Probe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.port, self.protocol) {
            (_, ProbeProtocol::Icmp) => {
                write!(f, "ICMP type {}", self.icmp_type.unwrap_or(8))?;
                if let Some(c) = self.icmp_code {
                    write!(f, " code {c}")?;
                }
                Ok(())
            }
            (Some(p), proto) => write!(f, "{p}/{proto}"),
            (None, proto) => write!(f, "{proto}"),
        }
    }
}

text_enum! {
    pub enum Encapsulation {
        None = "none",
        Ipip = "ipip",
        Vxlan = "vxlan",
    }
}

text_enum! {
    pub enum RouteTable {
        Fib = "fib",
        Rib = "rib",
    }
}

/// One expectation with its name and the time it is checked at.
#[derive(Clone, Debug, PartialEq)]
pub struct Expectation {
    /// The given name, or the kind and a short rendering (`reachable a -> b`, with ` at T` when
    /// timed, numbered ` (2)` among identical ones): content, not position.
    pub name: String,
    /// `None`: at the end of the simulation.
    pub at: Option<SimTime>,
    pub check: Check,
    /// `when:`: the fields this expectation is about; empty for one that always applies.
    pub when: Vec<Condition>,
    /// Why it does not apply to this scenario (a `when:` field with another value, or not
    /// written); `None` when it applies. Decided when loading, from the fields as loaded
    /// (after `sweep --set`).
    pub not_applicable: Option<String>,
}

/// One `when:` entry: the expectation applies only where the scenario's field at `path`
/// holds `value` (both as written, in the canonical form of `scenario::overrides`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    pub path: String,
    pub value: String,
}

impl std::fmt::Display for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={}", self.path, self.value)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Check {
    Pod {
        name: String,
        ip: Option<IpAddr>,
        in_cidr: Option<IpNet>,
        node: Option<String>,
        pool: Option<String>,
        borrowed: Option<bool>,
        status: Option<PodStatus>,
    },
    Pods {
        of: PodSet,
        running: Option<Count>,
        pending: Option<Count>,
        unknown: Option<Count>,
    },
    Pool {
        name: String,
        allocated: Option<Count>,
        blocks: Option<Count>,
        free: Option<Count>,
        reserved: Option<Count>,
    },
    Node {
        /// A node name or `*` for every node.
        name: String,
        blocks: Option<Count>,
        borrowed_ips: Option<Count>,
        rib_routes: Option<Count>,
        fib_routes: Option<Count>,
    },
    Block {
        cidr: IpNet,
        affinity: Option<String>,
        allocated: Option<Count>,
    },
    Route {
        node: String,
        prefix: IpNet,
        next_hop: Option<String>,
        present: bool,
        table: RouteTable,
    },
    Reachable {
        from: PodSet,
        to: PodSet,
        /// `None`: every port and protocol.
        probe: Option<Probe>,
    },
    Unreachable {
        from: PodSet,
        to: PodSet,
        reason: Option<Verdict>,
        probe: Option<Probe>,
    },
    /// No pair delivers the probe (SPEC §7).
    Isolated {
        from: PodSet,
        to: PodSet,
        probe: Option<Probe>,
    },
    /// The policies applying to a pod, in evaluation order, per direction.
    Policy {
        pod: String,
        ingress: Option<Vec<String>>,
        egress: Option<Vec<String>>,
    },
    Path {
        from: String,
        to: String,
        via: Option<Vec<String>>,
        encapsulation: Option<Encapsulation>,
        /// The packet traced: an ICMP echo request when `None` (as `trace` sends).
        probe: Option<Probe>,
    },
    Bgp {
        sessions_established: Option<Count>,
        converged_within: Option<SimDuration>,
        updates: Option<Count>,
    },
    AllocationFailures(Count),
}

impl Check {
    /// The expectation kind as written in YAML.
    pub fn kind(&self) -> &'static str {
        match self {
            Check::Pod { .. } => "pod",
            Check::Pods { .. } => "pods",
            Check::Pool { .. } => "pool",
            Check::Node { .. } => "node",
            Check::Block { .. } => "block",
            Check::Route { .. } => "route",
            Check::Reachable { .. } => "reachable",
            Check::Unreachable { .. } => "unreachable",
            Check::Isolated { .. } => "isolated",
            Check::Policy { .. } => "policy",
            Check::Path { .. } => "path",
            Check::Bgp { .. } => "bgp",
            Check::AllocationFailures(_) => "allocationFailures",
        }
    }

    /// A short rendering of the fields, for default names.
    pub fn summary(&self) -> String {
        match self {
            Check::Pod { name, .. } => name.clone(),
            Check::Pods { of, .. } => of.to_string(),
            Check::Pool { name, .. } => name.clone(),
            Check::Node { name, .. } => name.clone(),
            Check::Block { cidr, .. } => cidr.to_string(),
            Check::Route { node, prefix, .. } => format!("{node} {prefix}"),
            Check::Reachable { from, to, probe }
            | Check::Unreachable {
                from, to, probe, ..
            }
            | Check::Isolated { from, to, probe } => match probe {
                Some(p) => format!("{from} -> {to} {p}"),
                None => format!("{from} -> {to}"),
            },
            Check::Policy { pod, .. } => pod.clone(),
            Check::Path {
                from, to, probe, ..
            } => match probe {
                Some(p) => format!("{from} -> {to} {p}"),
                None => format!("{from} -> {to}"),
            },
            Check::Bgp { .. } => "sessions".to_string(),
            Check::AllocationFailures(c) => c.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_hold_as_written() {
        assert!(Count::Exactly(3).holds(3));
        assert!(!Count::Exactly(3).holds(4));
        let at_most = Count::Bounded {
            at_least: None,
            at_most: Some(3),
        };
        assert!(at_most.holds(0) && at_most.holds(3) && !at_most.holds(4));
        let at_least = Count::Bounded {
            at_least: Some(2),
            at_most: None,
        };
        assert!(!at_least.holds(1) && at_least.holds(2));
    }
}
