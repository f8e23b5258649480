//! Connections between the cluster and an external place (SPEC §7, REFERENCE-policy §3.5):
//! out from a pod (or a node) to an external, and in from an external to a pod or a device.
//!
//! Out: the sender's egress policy sees the pod's own address (natOutgoing happens in nat
//! POSTROUTING, after the FORWARD chain), the packet is routed by longest-prefix match to the
//! external's attachment router, where it leaves the fabric. When the pod's address is in a
//! Calico pool with `natOutgoing` and the destination lies outside every Calico pool, the
//! sending node masquerades the packet to its own address ([`Snat`], on the first hop), so
//! the reply comes back to the node; otherwise the reply is addressed to the pod itself and
//! must be routable from the attachment router (the fabric must have learned the pod's
//! block, or its rack subnet for a Spiderpool pod). The connection works only when the reply
//! is delivered too.
//! In: the packet enters at the attachment router with the external's address as source and
//! is routed to the destination; the receiver's ingress policy sees the external's address
//! (no endpoint, so only nets match); the reply from the pod must route back to the
//! attachment router (natOutgoing never applies to replies: connection tracking).
//!
//! Invariants: the first failing step decides (egress, forward walk, ingress, reply), as for
//! [`connect`]; replies never meet policy (connection tracking).
//! What this is not: no NodePort, no Service address entry (`service_entry`), no
//! `natOutgoingExclusions`.

use std::net::IpAddr;

use ipnet::IpNet;

use super::connect::{
    Connection, ConnectionVerdict, Denial, Policing, PolicyCheck, Side, check, connect,
};
use super::dataplane::Dataplane;
use super::walk::{Reason, Source, Trace, Verdict, trace};
use crate::model::topology::DeviceId;
use crate::policy::eval::{Packet, Party};

/// natOutgoing's masquerade of one connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Snat {
    /// The pod's address.
    pub from: IpAddr,
    /// The node's address the packet leaves with.
    pub to: IpAddr,
    /// The natOutgoing pool of the pod's address.
    pub pool: IpNet,
    /// The node that masquerades (the first hop).
    pub at: DeviceId,
}

/// Which way a connection crosses the edge of the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// From the cluster to the external.
    Out,
    /// From the external into the cluster.
    In,
}

/// A connection between the cluster and an external, step by step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExternalConnection {
    pub way: Way,
    /// Index of the external in `Topology::externals`.
    pub external: usize,
    /// The first packet: policy checks, walk and its verdict.
    pub connection: Connection,
    /// Out only: the masquerade, when natOutgoing applies.
    pub snat: Option<Snat>,
    /// Where replies are addressed: the SNAT address, else the sender's own address.
    pub reply_to: IpAddr,
    /// The reply's walk, when the first packet was delivered.
    pub reply: Option<Trace>,
}

impl ExternalConnection {
    /// The first packet and its reply are both delivered.
    pub fn delivered(&self) -> bool {
        self.connection.verdict.delivered() && self.reply.as_ref().is_some_and(Trace::delivered)
    }

    /// The first failing step: the first packet's verdict, else the reply's.
    pub fn verdict(&self) -> ConnectionVerdict {
        if !self.connection.verdict.delivered() {
            return self.connection.verdict.clone();
        }
        match self.reply.as_ref().map(|t| t.verdict) {
            Some(Verdict::Dropped { reason, at }) => ConnectionVerdict::Dropped { reason, at },
            Some(Verdict::Delivered) => ConnectionVerdict::Delivered,
            None => ConnectionVerdict::Dropped {
                reason: Reason::NoRoute,
                at: self.connection.stopped_or_last(),
            },
        }
    }

    /// The first packet was delivered and its reply was not.
    pub fn reply_failed(&self) -> bool {
        self.connection.verdict.delivered() && !self.delivered()
    }
}

impl Connection {
    /// The device where the first packet stopped, else its last hop.
    fn stopped_or_last(&self) -> DeviceId {
        self.verdict.stopped_at().unwrap_or_else(|| {
            self.trace
                .as_ref()
                .and_then(|t| t.hops.last())
                .map_or(DeviceId(0), |h| h.device)
        })
    }
}

/// natOutgoing for a packet from `src` (a pod's address on node `node`) to `dst`: the
/// pod's pool has it and `dst` is in no Calico pool (felix's nat rule: source in the
/// masquerade pools, destination not in all pools).
pub fn snat(dp: &Dataplane, src: IpAddr, node: DeviceId, dst: IpAddr) -> Option<Snat> {
    let pool = dp.pool_of(src).filter(|p| p.nat_outgoing)?;
    if dp.pool_of(dst).is_some() {
        return None;
    }
    Some(Snat {
        from: src,
        to: dp.address(node)?,
        pool: pool.cidr,
        at: node,
    })
}

/// A new connection from `from` (a pod or a device of the cluster) to `dst`, an address of
/// the external `external`. `None` when the source or the external is unknown.
pub fn connect_out(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    from: Source,
    external: usize,
    dst: IpAddr,
    packet: &Packet,
    explain: bool,
) -> Option<ExternalConnection> {
    dp.externals().get(external)?;
    let connection = connect(dp, policing, from, dst, packet, explain)?;
    let (src_ip, node) = match from {
        Source::Pod(k) => dp.pod(k).map(|p| (p.ip, p.device))?,
        Source::Device(d) => (dp.address(d)?, d),
    };
    let snat = match from {
        Source::Pod(_) => snat(dp, src_ip, node, dst),
        Source::Device(_) => None,
    };
    let reply_to = snat.map_or(src_ip, |s| s.to);
    let reply = connection
        .verdict
        .delivered()
        .then(|| {
            let at = connection.trace.as_ref()?.hops.last()?.device;
            trace(dp, Source::Device(at), reply_to)
        })
        .flatten();
    Some(ExternalConnection {
        way: Way::Out,
        external,
        connection,
        snat,
        reply_to,
        reply,
    })
}

/// A new connection from the external `external` (source address `src`) to `to`, which
/// enters at the external's attachment router. `None` when the external is unknown.
pub fn connect_in(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    external: usize,
    src: IpAddr,
    to: IpAddr,
    packet: &Packet,
    explain: bool,
) -> Option<ExternalConnection> {
    let attach = dp.externals().get(external)?.attach;
    let Entered {
        trace: t,
        verdict,
        ingress,
    } = enter(dp, policing, attach, to, src, packet, explain)?;
    let reply = verdict
        .delivered()
        .then(|| {
            let back = match dp.pod_by_ip(to) {
                Some(p) => Source::Pod(p.key),
                None => Source::Device(dp.device_by_address(to)?),
            };
            trace(dp, back, src)
        })
        .flatten();
    Some(ExternalConnection {
        way: Way::In,
        external,
        connection: Connection {
            egress: None,
            trace: Some(t),
            ingress,
            verdict,
        },
        snat: None,
        reply_to: src,
        reply,
    })
}

/// A packet that enters the fabric at a device: walked from `start` to `to`, then, when it is
/// delivered to a workload endpoint, that endpoint's ingress policy seeing `seen` as the
/// source (forwarded traffic: ingress always applies).
pub(super) struct Entered {
    pub trace: Trace,
    pub verdict: ConnectionVerdict,
    pub ingress: Option<PolicyCheck>,
}

pub(super) fn enter(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    start: DeviceId,
    to: IpAddr,
    seen: IpAddr,
    packet: &Packet,
    explain: bool,
) -> Option<Entered> {
    let trace = trace(dp, Source::Device(start), to)?;
    let mut verdict = match trace.verdict {
        Verdict::Delivered => ConnectionVerdict::Delivered,
        Verdict::Dropped { reason, at } => ConnectionVerdict::Dropped { reason, at },
    };
    let mut ingress = None;
    if verdict.delivered()
        && let Some(pol) = policing
        && let Some(receiver) = pol.endpoint_at(to)
    {
        let c = check(
            pol,
            Side::Ingress,
            receiver,
            Party::address(seen),
            packet,
            explain,
        );
        if !c.outcome.allowed {
            verdict = ConnectionVerdict::PolicyDenied(Denial {
                side: Side::Ingress,
                at: dp.pod_by_ip(to).map_or(start, |p| p.device),
                by: c.outcome.by.clone(),
            });
        }
        ingress = Some(c);
    }
    Some(Entered {
        trace,
        verdict,
        ingress,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarding::testutil::*;
    use crate::model::external::External;
    use crate::model::network::EncapMode::Never;
    use crate::model::topology::Topology;

    /// Zones a and b, one rack of one node each (a0-n0 10.0.0.10, b0-n0 10.1.0.10), pool
    /// 10.200.0.0/16 natively routed, one pod per node (10.200.0.1 on a0-n0), and the
    /// externals given as (name, cidr, attachment).
    fn world(externals: &[(&str, &str, &str)]) -> Topology {
        let mut t = topology(&[&[1], &[1]]);
        t.externals = externals
            .iter()
            .map(|(name, cidr, attach)| External {
                name: name.to_string(),
                cidr: net(cidr),
                attach: dev(&t, attach),
            })
            .collect();
        t
    }

    fn names(t: &Topology, tr: &Trace) -> String {
        let path: Vec<String> = tr
            .path()
            .into_iter()
            .map(|d| t.device(d).name.clone())
            .collect();
        let verdict = match tr.verdict {
            Verdict::Delivered => "delivered".to_string(),
            Verdict::Dropped { reason, at } => format!("{reason}@{}", t.device(at).name),
        };
        format!("{} | {verdict}", path.join(" "))
    }

    fn out(dp: &Dataplane, to: &str) -> ExternalConnection {
        let p = Packet::tcp(443);
        connect_out(dp, None, Source::Pod(pod_key(0, 0)), 0, ip(to), &p, false).unwrap()
    }

    #[test]
    fn nat_outgoing_masquerades_to_the_node_and_the_reply_comes_back_to_it() {
        // The pod's node sends by its default route to its ToR; routers route 0.0.0.0/0
        // towards the core, where it leaves. natOutgoing: the node masquerades to its address
        // 10.0.0.10, which every router reaches by the rack subnet routes.
        let t = world(&[("internet", "0.0.0.0/0", "core")]);
        let mut b = calico(&t, Never, Never, 1);
        b.nat_outgoing(net("10.200.0.0/16"));
        let dp = b.build();
        let c = out(&dp, "0.0.0.1");
        let fwd = c.connection.trace.as_ref().unwrap();
        assert_eq!(names(&t, fwd), "a0-n0 tor-a0 spine-a-1 core | delivered");
        let s = c.snat.unwrap();
        assert_eq!(
            (s.from, s.to, s.at),
            (ip("10.200.0.1"), ip("10.0.0.10"), dev(&t, "a0-n0"))
        );
        assert_eq!(
            names(&t, c.reply.as_ref().unwrap()),
            "core spine-a-1 tor-a0 a0-n0 | delivered"
        );
        assert!(c.delivered());
    }

    #[test]
    fn without_nat_the_pod_address_must_be_routable_back() {
        // No natOutgoing and a fabric that learned nothing: the core's only route for
        // 10.200.0.1 is the one to the outside, so the reply is lost there.
        let t = world(&[("internet", "0.0.0.0/0", "core")]);
        let dp = calico(&t, Never, Never, 1).build();
        let c = out(&dp, "0.0.0.1");
        assert_eq!(c.snat, None);
        assert_eq!(c.reply_to, ip("10.200.0.1"));
        assert!(c.connection.verdict.delivered());
        assert_eq!(names(&t, c.reply.as_ref().unwrap()), "core | no-route@core");
        assert!(c.reply_failed());
        assert_eq!(
            c.verdict(),
            ConnectionVerdict::Dropped {
                reason: Reason::NoRoute,
                at: dev(&t, "core")
            }
        );
        // A fabric that learned the block (core via spine-a-1's loopback, the spine via the
        // ToR, the ToR via the node) routes the reply to the pod.
        let mut b = calico(&t, Never, Never, 1);
        b.learned(dev(&t, "core"), block(0), ip("100.127.0.2"));
        b.learned(dev(&t, "spine-a-1"), block(0), ip("10.0.0.1"));
        b.learned(dev(&t, "tor-a0"), block(0), ip("10.0.0.10"));
        let dp = b.build();
        let c = out(&dp, "0.0.0.1");
        assert_eq!(
            names(&t, c.reply.as_ref().unwrap()),
            "core spine-a-1 tor-a0 a0-n0 | delivered"
        );
        assert!(c.delivered());
        // In from the external: the same fabric carries it to the pod, and the pod's reply
        // leaves by the default routes.
        let p = Packet::tcp(80);
        let c = connect_in(&dp, None, 0, ip("0.0.0.1"), ip("10.200.0.1"), &p, false).unwrap();
        assert_eq!(
            names(&t, c.connection.trace.as_ref().unwrap()),
            "core spine-a-1 tor-a0 a0-n0 | delivered"
        );
        assert_eq!(
            names(&t, c.reply.as_ref().unwrap()),
            "a0-n0 tor-a0 spine-a-1 core | delivered"
        );
        assert!(c.delivered());
    }

    #[test]
    fn an_external_on_a_tor_is_reached_across_the_fabric_and_cluster_addresses_never_leave() {
        let t = world(&[
            ("lab", "192.0.2.0/24", "tor-a0"),
            ("internet", "0.0.0.0/0", "core"),
        ]);
        let mut b = calico(&t, Never, Never, 1);
        b.nat_outgoing(net("10.200.0.0/16"));
        let dp = b.build();
        let p = Packet::tcp(22);
        let from_b = Source::Pod(pod_key(1, 0));
        let c = connect_out(&dp, None, from_b, 0, ip("192.0.2.1"), &p, false).unwrap();
        assert_eq!(
            names(&t, c.connection.trace.as_ref().unwrap()),
            "b0-n0 tor-b0 spine-b-1 core spine-a-1 tor-a0 | delivered"
        );
        assert_eq!(c.snat.map(|s| s.to), Some(ip("10.1.0.10")));
        assert!(c.delivered());
        // An unallocated address of the pool is not the internet's, 0.0.0.0/0 or not.
        assert_eq!(
            names(&t, &trace(&dp, from_b, ip("10.200.9.9")).unwrap()),
            "b0-n0 | unallocated@b0-n0"
        );
        // A destination inside a pool is never masqueraded (pod to pod).
        assert_eq!(
            snat(&dp, ip("10.200.1.1"), dev(&t, "b0-n0"), ip("10.200.0.1")),
            None
        );
    }
}
