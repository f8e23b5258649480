//! A new connection on a packet path: the sender's egress policy at its workload endpoint, the
//! routing walk, the receiver's ingress policy at its workload endpoint
//! (REFERENCE-policy §0, §3.1, SPEC §7).
//!
//! The order is the dataplane's: a Service's DNAT happens before anything here (the caller
//! passes the translated destination and packet; that is where issue #18's Service step slots
//! in), then egress at the sender's endpoint on its node — a deny there stops the packet before
//! it is routed —, then [`trace`], then ingress at the receiver's endpoint on its node. Pods on
//! one node go through the same two checks. Traffic from a node's host (or a host-network pod)
//! to a pod of the same node is not policed (calico:felix/rules/static.go filterOutputChain);
//! from another node it is ordinary traffic from that node's address, which selectors never
//! match and nets can. Replies are never checked (connection tracking).
//!
//! Invariants: without [`Policing`] a connection is exactly [`trace`]'s walk, so everything
//! without policy stays as it was; the first failing check decides, and a policy denial names
//! its side, the device where it happened and what decided.
//! What this is not: no Service translation, no SNAT, no host endpoint policy.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::dataplane::{Attachment, Dataplane};
use super::fib::PodKey;
use super::walk::{Reason, Source, Trace, Verdict, trace};
use crate::model::expect::{PortRef, Probe};
use crate::model::hash::FastMap;
use crate::model::topology::DeviceId;
use crate::policy::eval::{
    DecidedBy, Endpoint, Engine, Outcome, Packet, Party, ServiceEndpoint, Step,
};
use crate::policy::model::{Direction, PolicySet, Protocol};

/// The policy state of an instant with the workload endpoints it protects (pod-network pods
/// with an address; host-network pods have none).
#[derive(Clone, Debug)]
pub struct PolicyInputs {
    pub set: PolicySet,
    /// By pod key.
    pub endpoints: BTreeMap<PodKey, Endpoint>,
    /// Each Service's endpoints (pod address, protocol, target port) by (namespace, name),
    /// for Calico `services` rules ([`super::service::ServiceTable::policy_endpoints`]).
    pub services: BTreeMap<(String, String), Vec<ServiceEndpoint>>,
}

/// [`PolicyInputs`] prepared for evaluation.
pub struct Policing<'a> {
    pub engine: Engine<'a>,
    by_key: &'a BTreeMap<PodKey, Endpoint>,
    by_ip: FastMap<IpAddr, &'a Endpoint>,
}

impl<'a> Policing<'a> {
    pub fn new(inputs: &'a PolicyInputs) -> Policing<'a> {
        let mut engine = Engine::new(&inputs.set);
        for ((namespace, name), list) in &inputs.services {
            engine = engine.with_service_endpoints(namespace, name, list.clone());
        }
        engine.know_endpoints(inputs.endpoints.values());
        Policing {
            engine,
            by_key: &inputs.endpoints,
            by_ip: inputs.endpoints.values().map(|e| (e.ip, e)).collect(),
        }
    }

    /// Every workload endpoint, by pod key.
    pub fn endpoints(&self) -> impl Iterator<Item = &'a Endpoint> + use<'a> {
        self.by_key.values()
    }

    pub fn endpoint(&self, key: PodKey) -> Option<&'a Endpoint> {
        self.by_key.get(&key)
    }

    pub fn endpoint_at(&self, ip: IpAddr) -> Option<&'a Endpoint> {
        self.by_ip.get(&ip).copied()
    }

    fn party(&self, ip: IpAddr) -> Party<'a> {
        Party {
            ip,
            endpoint: self.endpoint_at(ip),
        }
    }
}

/// Where a policy check ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// At the sender's endpoint, as the packet leaves it.
    Egress,
    /// At the receiver's endpoint, as the packet enters it.
    Ingress,
}

impl Side {
    pub fn as_str(self) -> &'static str {
        match self {
            Side::Egress => "egress",
            Side::Ingress => "ingress",
        }
    }

    pub fn direction(self) -> Direction {
        match self {
            Side::Egress => Direction::Egress,
            Side::Ingress => Direction::Ingress,
        }
    }
}

/// A connection stopped by policy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Denial {
    pub side: Side,
    /// The node of the endpoint whose policy denied.
    pub at: DeviceId,
    pub by: DecidedBy,
}

/// The fate of a new connection: delivered, dropped by routing, or denied by policy.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ConnectionVerdict {
    Delivered,
    Dropped { reason: Reason, at: DeviceId },
    PolicyDenied(Denial),
}

impl ConnectionVerdict {
    pub fn delivered(&self) -> bool {
        *self == ConnectionVerdict::Delivered
    }

    /// The reason word of SPEC §3.5 and §7 (`policy-denied` for a denial).
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            ConnectionVerdict::Delivered => None,
            ConnectionVerdict::Dropped { reason, .. } => Some(reason.as_str()),
            ConnectionVerdict::PolicyDenied(_) => Some("policy-denied"),
        }
    }

    /// The device where the connection stopped.
    pub fn stopped_at(&self) -> Option<DeviceId> {
        match self {
            ConnectionVerdict::Delivered => None,
            ConnectionVerdict::Dropped { at, .. } => Some(*at),
            ConnectionVerdict::PolicyDenied(d) => Some(d.at),
        }
    }
}

/// One policy check with its explanation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyCheck {
    pub side: Side,
    /// `namespace/name` of the endpoint.
    pub endpoint: String,
    pub outcome: Outcome,
    /// Empty unless an explanation was asked for.
    pub steps: Vec<Step>,
}

/// A connection, step by step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Connection {
    /// `None`: the sender is not a workload endpoint, or policy is not enforced.
    pub egress: Option<PolicyCheck>,
    /// `None` when egress denied (the packet never left).
    pub trace: Option<Trace>,
    /// `None`: not reached, not a workload endpoint, host-to-local traffic, or no policy.
    pub ingress: Option<PolicyCheck>,
    pub verdict: ConnectionVerdict,
}

pub(crate) fn check(
    policing: &Policing<'_>,
    side: Side,
    at: &Endpoint,
    peer: Party<'_>,
    packet: &Packet,
    explain: bool,
) -> PolicyCheck {
    let mut steps = Vec::new();
    let outcome = if explain {
        policing
            .engine
            .check(at, side.direction(), peer, packet, &mut steps)
    } else {
        policing
            .engine
            .check(at, side.direction(), peer, packet, &mut ())
    };
    PolicyCheck {
        side,
        endpoint: format!("{}/{}", at.namespace, at.name),
        outcome,
        steps,
    }
}

/// Follows a new connection from `from` to `to` (already translated if it was a Service) with
/// `packet`; `None` when the source is not in the dataplane. With `policing` `None` (no policy
/// enforced) it is [`trace`]'s walk.
pub fn connect(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    from: Source,
    to: IpAddr,
    packet: &Packet,
    explain: bool,
) -> Option<Connection> {
    // `src_host`: the node whose host traffic this is (a node, or a host-network pod).
    let (src_ip, src_device, src_endpoint, src_host) = match from {
        Source::Pod(k) => {
            let p = dp.pod(k)?;
            let host = (p.attachment == Attachment::Host).then_some(p.device);
            (
                p.ip,
                p.device,
                policing.and_then(|pol| pol.endpoint(k)),
                host,
            )
        }
        Source::Device(d) => (dp.address(d)?, d, None, Some(d)),
    };
    let mut egress = None;
    if let (Some(pol), Some(e)) = (policing, src_endpoint) {
        let c = check(pol, Side::Egress, e, pol.party(to), packet, explain);
        if !c.outcome.allowed {
            let verdict = ConnectionVerdict::PolicyDenied(Denial {
                side: Side::Egress,
                at: src_device,
                by: c.outcome.by.clone(),
            });
            return Some(Connection {
                egress: Some(c),
                trace: None,
                ingress: None,
                verdict,
            });
        }
        egress = Some(c);
    }
    let t = trace(dp, from, to)?;
    let routed = match t.verdict {
        Verdict::Delivered => None,
        Verdict::Dropped { reason, at } => Some(ConnectionVerdict::Dropped { reason, at }),
    };
    if let Some(verdict) = routed {
        return Some(Connection {
            egress,
            trace: Some(t),
            ingress: None,
            verdict,
        });
    }
    let mut ingress = None;
    let mut verdict = ConnectionVerdict::Delivered;
    if let Some(pol) = policing
        && let Some(receiver) = pol.endpoint_at(to)
    {
        let receiver_node = dp.pod_by_ip(to).map(|p| p.device);
        // Host → local pod: not policed (the node's own traffic, and its host-network pods).
        let host_local = src_host.is_some_and(|d| Some(d) == receiver_node);
        if !host_local {
            let sender = Party {
                ip: src_ip,
                endpoint: src_endpoint,
            };
            let c = check(pol, Side::Ingress, receiver, sender, packet, explain);
            if !c.outcome.allowed {
                verdict = ConnectionVerdict::PolicyDenied(Denial {
                    side: Side::Ingress,
                    at: receiver_node.unwrap_or(src_device),
                    by: c.outcome.by.clone(),
                });
            }
            ingress = Some(c);
        }
    }
    Some(Connection {
        egress,
        trace: Some(t),
        ingress,
        verdict,
    })
}

/// The policy verdict alone for a pod-to-pod connection whose routing delivers: egress at
/// `src`, then ingress at `dst` (the fast path of all-pairs computations).
pub fn policy_verdict(
    policing: &Policing<'_>,
    src: &Endpoint,
    dst: &Endpoint,
    packet: &Packet,
) -> (Outcome, Option<Outcome>) {
    let engine = &policing.engine;
    let out = engine.check(
        src,
        Direction::Egress,
        Party::endpoint(dst),
        packet,
        &mut (),
    );
    if !out.allowed {
        return (out, None);
    }
    let inn = engine.check(
        dst,
        Direction::Ingress,
        Party::endpoint(src),
        packet,
        &mut (),
    );
    (out, Some(inn))
}

/// The packet `probe` sends to `dst`: a named port is resolved on the destination endpoint
/// (a container port with that name and the probe's protocol); ICMP defaults to an echo
/// request (type 8, code 0). `Err` says why there is no such packet.
pub fn packet_for(probe: &Probe, dst: Option<&Endpoint>) -> Result<Packet, String> {
    let Some(protocol) = Protocol::of_probe(probe.protocol) else {
        return Ok(Packet::icmp(
            probe.icmp_type.unwrap_or(8),
            probe.icmp_code.unwrap_or(0),
        ));
    };
    let port = match &probe.port {
        Some(PortRef::Number(n)) => *n,
        Some(PortRef::Name(name)) => {
            let Some(e) = dst else {
                return Err(format!(
                    "the named port `{name}` needs a destination pod that declares it"
                ));
            };
            e.ports
                .iter()
                .find(|p| p.name == *name && p.protocol == protocol)
                .map(|p| p.port)
                .ok_or_else(|| {
                    format!(
                        "{}/{} declares no {protocol} container port named `{name}`",
                        e.namespace, e.name
                    )
                })?
        }
        None => return Err(format!("a {protocol} packet needs a port")),
    };
    Ok(Packet::with_port(protocol, port))
}

/// The words of a connection's verdict: `delivered`, `<reason> at <device>`, or
/// `policy-denied (<side> of <pod>: <what decided>) at <device>`.
pub fn verdict_text(c: &Connection, device_name: &dyn Fn(DeviceId) -> String) -> String {
    match &c.verdict {
        ConnectionVerdict::Delivered => "delivered".to_string(),
        ConnectionVerdict::Dropped { reason, at } => format!("{reason} at {}", device_name(*at)),
        ConnectionVerdict::PolicyDenied(d) => {
            let pod = match d.side {
                Side::Egress => c.egress.as_ref(),
                Side::Ingress => c.ingress.as_ref(),
            }
            .map_or("?", |p| p.endpoint.as_str());
            format!(
                "policy-denied ({} of {pod}: {}) at {}",
                d.side.as_str(),
                d.by,
                device_name(d.at)
            )
        }
    }
}
