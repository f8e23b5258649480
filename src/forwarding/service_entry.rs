//! A connection from an external place to a Service address (cluster IP, external IP or
//! LoadBalancer IP) that the fabric learned over BGP (REFERENCE-policy §5, SPEC §7).
//!
//! The packet enters at the external's attachment router and is routed by longest-prefix
//! match along the routers' learned Service routes until it reaches a node (the next hop of
//! the route a ToR or a node's peer holds). There kube-proxy translates it (nat PREROUTING,
//! before any routing on the node):
//! - to the cluster IP: as any traffic to a cluster IP, by the internal traffic policy (any
//!   ready endpoint, or with `Local` those of this node), and masqueraded to the node's
//!   address because the source is outside the cluster (kube-proxy marks off-cluster
//!   traffic to a cluster IP for masquerade);
//! - to an external or LoadBalancer IP: by `externalTrafficPolicy`: `Cluster`, any ready
//!   endpoint with the source masqueraded to the node; `Local`, only this node's ready
//!   endpoints with the client's address preserved (none: `no-endpoints`).
//!
//! Then the packet is walked from the node to the endpoint, whose ingress policy sees the
//! masquerading node's address or the client's own, and the reply is walked back (to the node
//! and from it to the client when masqueraded, straight to the client otherwise).
//! The walk in starts only if the attachment router learned a route covering the address: a
//! router that only knows it by a static or external route has never heard of the Service
//! (`not-advertised`).
//!
//! Invariants: the first failing step decides (not advertised, the walk in, no endpoint, the
//! walk to the endpoint, its ingress policy, the reply); replies never meet policy. The
//! endpoint is kube-proxy's seeded draw ([`dnat`]) keyed by the client's address, and the
//! other candidates are followed too, as for a pod's connection to a Service.
//! With fabric ECMP (`topology.fabric.ecmp`, [`super::ecmp`]) a router holding several
//! equal-cost paths for the address forks the walk in: [`EntryRequest::hashed`] follows the branch
//! the seeded flow hash picks and records every fork ([`Fork`]: the equal next hops and the
//! one picked); [`EntryRequest::every_path`] follows every branch (each its own node, DNAT and
//! legs), so reachability is judged over all of them.
//! What this is not: no NodePort, no health-check node port.

use std::net::IpAddr;

use super::advertise::{ServiceIpKind, service_ips};
use super::connect::{ConnectionVerdict, Policing, PolicyCheck};
use super::dataplane::Dataplane;
use super::ecmp;
use super::external::{Entered, enter};
use super::fib::Origin;
use super::service::{Dnat, NoBackend, ServiceTable, ServiceView, dnat_with};
use super::walk::{
    Hop, Mode, Reason, Source, Step, Trace, Verdict, forward_check, process, refused_at, trace,
};
use crate::model::service::TrafficPolicy;
use crate::model::topology::{DeviceId, DeviceKind};
use crate::policy::eval::Packet;

/// Where the packet went in, or why it never reached a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Inbound {
    /// It reached this node, where kube-proxy translates it.
    Node(DeviceId),
    /// The attachment router has no learned route for the address.
    NotAdvertised { at: DeviceId },
    /// The walk in stopped.
    Lost { reason: Reason, at: DeviceId },
}

/// A router on the walk in with several equal-cost next hops (fabric ECMP).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fork {
    pub at: DeviceId,
    /// The equal-cost next hops, the best route's first.
    pub options: Vec<DeviceId>,
    /// Which of them this walk took.
    pub picked: usize,
    /// Which of them the flow hash picks (the one a real connection takes).
    pub hashed: usize,
}

/// How the walk in chooses at a fork: by the flow hash, or by a list of choices (one per
/// fork met, the first branch beyond its end) to enumerate every branch.
#[derive(Clone, Copy)]
enum Choice<'a> {
    Hash {
        seed: u64,
        flow: u64,
    },
    Script {
        seed: u64,
        flow: u64,
        picks: &'a [usize],
    },
}

/// The most ECMP branches followed for one connection; beyond it the rest are left out
/// (a fabric of that width is far past podnet's racks of one ToR).
pub const MAX_PATHS: usize = 64;

/// The packet from the node to one endpoint, and its reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Leg {
    /// Index into the Service's backends.
    pub backend: usize,
    pub trace: Trace,
    pub ingress: Option<PolicyCheck>,
    /// The reply's walks: to the masquerading node and then to the client, or straight to
    /// the client.
    pub reply: Vec<Trace>,
    pub verdict: ConnectionVerdict,
}

/// The fate of a connection from an external to a Service address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EntryVerdict {
    Delivered,
    NotAdvertised {
        at: DeviceId,
    },
    /// No endpoint the traffic policy allows, at the node that received the packet;
    /// `local_only` when the policy kept only that node's endpoints.
    NoEndpoints {
        at: DeviceId,
        local_only: bool,
    },
    /// The Service has no such port (the address answers only its ports).
    NoSuchPort {
        at: DeviceId,
    },
    /// The walk in, the walk to the endpoint, its ingress policy or the reply failed.
    Failed(ConnectionVerdict),
}

impl EntryVerdict {
    pub fn delivered(&self) -> bool {
        *self == EntryVerdict::Delivered
    }

    /// The word scenarios use for it.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            EntryVerdict::Delivered => None,
            EntryVerdict::NotAdvertised { .. } => Some("not-advertised"),
            EntryVerdict::NoEndpoints { .. } => Some("no-endpoints"),
            EntryVerdict::NoSuchPort { .. } => Some("no-such-port"),
            EntryVerdict::Failed(v) => v.reason(),
        }
    }

    pub fn stopped_at(&self) -> Option<DeviceId> {
        match self {
            EntryVerdict::Delivered => None,
            EntryVerdict::NotAdvertised { at }
            | EntryVerdict::NoEndpoints { at, .. }
            | EntryVerdict::NoSuchPort { at } => Some(*at),
            EntryVerdict::Failed(v) => v.stopped_at(),
        }
    }
}

/// A connection from an external to a Service address, step by step.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServiceEntry {
    /// Index of the external in `Topology::externals`.
    pub external: usize,
    /// The client's address.
    pub client: IpAddr,
    pub address: IpAddr,
    pub kind: ServiceIpKind,
    /// From the attachment router to the node (included), or to where it stopped.
    pub inbound: Vec<Hop>,
    /// The ECMP forks on the way in, in walk order (none without fabric ECMP).
    pub forks: Vec<Fork>,
    pub entered: Inbound,
    pub dnat: Option<Result<Dnat, NoBackend>>,
    /// The node's address the packet was masqueraded to, if it was.
    pub snat: Option<IpAddr>,
    /// The chosen endpoint's leg, then the other candidates' (without session affinity,
    /// other connections of the client reach them).
    pub chosen: Option<Leg>,
    pub others: Vec<Leg>,
}

impl ServiceEntry {
    /// The fate of the connection this trace follows (to the chosen endpoint).
    pub fn verdict(&self) -> EntryVerdict {
        let node = match &self.entered {
            Inbound::NotAdvertised { at } => return EntryVerdict::NotAdvertised { at: *at },
            Inbound::Lost { reason, at } => {
                return EntryVerdict::Failed(ConnectionVerdict::Dropped {
                    reason: *reason,
                    at: *at,
                });
            }
            Inbound::Node(n) => *n,
        };
        match &self.dnat {
            Some(Err(NoBackend::NoEndpoints { local_only })) => EntryVerdict::NoEndpoints {
                at: node,
                local_only: *local_only,
            },
            Some(Err(_)) | None => EntryVerdict::NoSuchPort { at: node },
            Some(Ok(_)) => match &self.chosen {
                Some(leg) => match &leg.verdict {
                    ConnectionVerdict::Delivered => EntryVerdict::Delivered,
                    v => EntryVerdict::Failed(v.clone()),
                },
                None => EntryVerdict::NoSuchPort { at: node },
            },
        }
    }

    /// This walk took the flow hash's branch at every fork (always without ECMP).
    pub fn hashed(&self) -> bool {
        self.forks.iter().all(|f| f.picked == f.hashed)
    }

    /// Every leg a connection of this client can take: only the chosen one with ClientIP
    /// affinity, every candidate otherwise.
    pub fn reachable_legs(&self) -> Vec<&Leg> {
        let sticky = matches!(&self.dnat, Some(Ok(d)) if d.sticky);
        let mut out: Vec<&Leg> = self.chosen.iter().collect();
        if !sticky {
            out.extend(&self.others);
        }
        out
    }
}

/// The Service address an external reaches `view` at: its LoadBalancer IP, else its first
/// external IP, else its cluster IP.
pub fn entry_address(view: &ServiceView) -> Option<(ServiceIpKind, IpAddr)> {
    let ips = service_ips(view);
    [
        ServiceIpKind::LoadBalancer,
        ServiceIpKind::External,
        ServiceIpKind::Cluster,
    ]
    .into_iter()
    .find_map(|k| ips.iter().find(|(kind, _)| *kind == k).copied())
}

/// The Service, and which of its addresses, `ip` is.
pub fn service_at(table: &ServiceTable, ip: IpAddr) -> Option<(&ServiceView, ServiceIpKind)> {
    table.services.iter().find_map(|v| {
        service_ips(v)
            .into_iter()
            .find(|(_, a)| *a == ip)
            .map(|(k, _)| (v, k))
    })
}

/// Walks the packet in from `attach` towards `address` until it reaches a node, choosing at
/// each ECMP fork by `choice`.
fn walk_in(
    dp: &Dataplane,
    attach: DeviceId,
    address: IpAddr,
    choice: Choice<'_>,
) -> (Vec<Hop>, Inbound, Vec<Fork>) {
    let mut forks: Vec<Fork> = Vec::new();
    let learned = dp
        .lookup(attach, address)
        .is_some_and(|e| e.origin == Origin::Learned);
    let mut hops = Vec::new();
    if !learned {
        hops.push(Hop {
            device: attach,
            entry: dp.lookup(attach, address),
            outer: None,
        });
        return (hops, Inbound::NotAdvertised { at: attach }, forks);
    }
    let (mut cur, mut mode, mut forwards) = (attach, Mode::Native, 0usize);
    loop {
        if matches!(dp.devices[cur.index()].kind, DeviceKind::Node(_)) {
            hops.push(Hop {
                device: cur,
                entry: None,
                outer: None,
            });
            return (hops, Inbound::Node(cur), forks);
        }
        let p = process(dp, cur, mode, address, false);
        hops.push(Hop {
            device: cur,
            entry: p.entry,
            outer: p.outer,
        });
        let (mut next, next_mode) = match p.step {
            Step::Forward { next, mode } => (next, mode),
            Step::Stop(reason) => return (hops, Inbound::Lost { reason, at: cur }, forks),
            _ => {
                return (
                    hops,
                    Inbound::Lost {
                        reason: Reason::NoRoute,
                        at: cur,
                    },
                    forks,
                );
            }
        };
        let options = p
            .entry
            .as_ref()
            .map_or_else(Vec::new, |e| ecmp::branches(dp, cur, e));
        if options.len() > 1 {
            let (seed, flow, picks) = match choice {
                Choice::Hash { seed, flow } => (seed, flow, None),
                Choice::Script { seed, flow, picks } => (seed, flow, Some(picks)),
            };
            let hashed = ecmp::pick(seed, flow, cur, options.len());
            let picked = match picks {
                None => hashed,
                Some(p) => p
                    .get(forks.len())
                    .copied()
                    .unwrap_or(0)
                    .min(options.len() - 1),
            };
            next = options[picked];
            forks.push(Fork {
                at: cur,
                options,
                picked,
                hashed,
            });
        }
        if let Some(reason) = forward_check(dp, cur, next, forwards) {
            let at = refused_at(reason, cur, next, None, &mut hops);
            return (hops, Inbound::Lost { reason, at }, forks);
        }
        forwards += 1;
        cur = next;
        mode = next_mode;
    }
}

/// Who a leg's packet comes from: the address the endpoint sees (the masquerading node's, or
/// the client's own) and the client's.
#[derive(Clone, Copy)]
struct Sources {
    seen: IpAddr,
    client: IpAddr,
}

/// One leg: from `node` to the backend at `ip` with `packet` (already translated), seen at
/// the endpoint as coming from `from.seen`; then the reply.
fn leg(
    dp: &Dataplane,
    policing: Option<&Policing<'_>>,
    node: DeviceId,
    backend: (usize, IpAddr),
    from: Sources,
    packet: &Packet,
    explain: bool,
) -> Option<Leg> {
    let (index, ip) = backend;
    let Sources {
        seen: seen_from,
        client,
    } = from;
    // Forwarded traffic (DNATed in PREROUTING): the endpoint's ingress always applies.
    let Entered {
        trace: t,
        mut verdict,
        ingress,
    } = enter(dp, policing, node, ip, seen_from, packet, explain)?;
    let mut reply = Vec::new();
    if verdict.delivered()
        && let Some(pod) = dp.pod_by_ip(ip)
    {
        let back = trace(dp, Source::Pod(pod.key), seen_from)?;
        let ok = back.delivered();
        reply.push(back);
        if ok && seen_from != client {
            reply.push(trace(dp, Source::Device(node), client)?);
        }
        if let Some(Verdict::Dropped { reason, at }) = reply.last().map(|t| t.verdict) {
            verdict = ConnectionVerdict::Dropped { reason, at };
        }
    }
    Some(Leg {
        backend: index,
        trace: t,
        ingress,
        reply,
        verdict,
    })
}

/// A new connection from an external place to a Service address: from `from`, an external
/// (its index in `Topology::externals`) and the client address there, to `address`, an
/// address of a Service of `table`, with `packet` (whose port is the Service port).
/// `explain` records each policy evaluation step by step (for `trace`).
#[derive(Clone, Copy)]
pub struct EntryRequest<'a> {
    pub dp: &'a Dataplane,
    pub policing: Option<&'a Policing<'a>>,
    pub table: &'a ServiceTable,
    pub from: (usize, IpAddr),
    pub address: IpAddr,
    pub packet: &'a Packet,
    pub explain: bool,
}

impl EntryRequest<'_> {
    /// The connection along the ECMP branch the flow hash picks. `None` when the external or
    /// the address is unknown.
    pub fn hashed(&self) -> Option<ServiceEntry> {
        self.along(Choice::Hash {
            seed: self.table.seed,
            flow: self.flow(),
        })
    }

    /// The connection along every ECMP branch of the walk in (at most [`MAX_PATHS`]), in
    /// branch order (at each fork the best route's next hop first); one entry without ECMP.
    /// The entry [`ServiceEntry::hashed`] says is the one [`EntryRequest::hashed`] follows.
    pub fn every_path(&self) -> Option<Vec<ServiceEntry>> {
        let flow = self.flow();
        let mut out: Vec<ServiceEntry> = Vec::new();
        let mut picks: Vec<usize> = Vec::new();
        loop {
            let e = self.along(Choice::Script {
                seed: self.table.seed,
                flow,
                picks: &picks,
            })?;
            // The next branch: the last fork with a choice left takes it, earlier ones stay.
            let next = e
                .forks
                .iter()
                .rposition(|f| f.picked + 1 < f.options.len())
                .map(|i| {
                    let mut p: Vec<usize> = e.forks[..i].iter().map(|f| f.picked).collect();
                    p.push(e.forks[i].picked + 1);
                    p
                });
            out.push(e);
            match next {
                Some(p) if out.len() < MAX_PATHS => picks = p,
                _ => break,
            }
        }
        Some(out)
    }

    fn flow(&self) -> u64 {
        ecmp::flow_key(
            self.from.1,
            self.address,
            self.packet.port,
            self.packet.protocol.0,
        )
    }

    fn along(&self, choice: Choice<'_>) -> Option<ServiceEntry> {
        let EntryRequest {
            dp,
            policing,
            table,
            from,
            address,
            packet,
            explain,
        } = *self;
        let (external, client) = from;
        let attach = dp.externals().get(external)?.attach;
        let (view, kind) = service_at(table, address)?;
        let (inbound, entered, forks) = walk_in(dp, attach, address, choice);
        let mut entry = ServiceEntry {
            external,
            client,
            address,
            kind,
            inbound,
            forks,
            entered: entered.clone(),
            dnat: None,
            snat: None,
            chosen: None,
            others: Vec::new(),
        };
        let Inbound::Node(node) = entered else {
            return Some(entry);
        };
        let Some(port) = packet.protocol.has_ports().then_some(packet.port) else {
            entry.dnat = Some(Err(NoBackend::NoSuchPort));
            return Some(entry);
        };
        let s = &view.service;
        let (local_only, masquerade) = match kind {
            ServiceIpKind::Cluster => (s.internal_traffic_policy == TrafficPolicy::Local, true),
            _ => match s.external_traffic_policy {
                TrafficPolicy::Local => (true, false),
                TrafficPolicy::Cluster => (false, true),
            },
        };
        let d = dnat_with(
            table.seed,
            view,
            client,
            local_only.then_some(node),
            port,
            packet.protocol,
        );
        entry.snat = masquerade.then(|| dp.address(node)).flatten();
        let seen_from = entry.snat.unwrap_or(client);
        if let Ok(d) = &d {
            let mut legs = Vec::new();
            for &i in
                std::iter::once(&d.chosen).chain(d.candidates.iter().filter(|i| **i != d.chosen))
            {
                let b = &view.backends[i];
                let mut translated = *packet;
                translated.port = b.target_ports[d.port_index].unwrap_or(packet.port);
                legs.push(leg(
                    dp,
                    policing,
                    node,
                    (i, b.ip),
                    Sources {
                        seen: seen_from,
                        client,
                    },
                    &translated,
                    explain,
                )?);
            }
            let mut legs = legs.into_iter();
            entry.chosen = legs.next();
            entry.others = legs.collect();
        }
        entry.dnat = Some(d);
        Some(entry)
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use super::*;
    use crate::forwarding::service::Backend;
    use crate::forwarding::testutil::*;
    use crate::model::external::External;
    use crate::model::network::EncapMode::Never;
    use crate::model::service::{Service, ServicePort, ServiceType, TargetPort};
    use crate::model::topology::Topology;
    use crate::model::workload::PortProtocol;

    /// Zones a (rack a0: a0-n0 10.0.0.10, a0-n1 10.0.0.11) and b (rack b0: b0-n0), one pod
    /// per node (10.200.<node>.1), the external `internet` 0.0.0.0/0 on the core.
    fn world() -> Topology {
        let mut t = topology(&[&[2], &[1]]);
        t.externals = vec![External {
            name: "internet".into(),
            cidr: net("0.0.0.0/0"),
            attach: dev(&t, "core"),
        }];
        t
    }

    /// LoadBalancer 203.0.113.10 (cluster IP 10.96.0.2), port 80 -> 8080, with ready
    /// endpoints the pods of nodes `on`.
    fn table(t: &Topology, etp: TrafficPolicy, on: &[usize]) -> ServiceTable {
        let port = ServicePort {
            name: None,
            protocol: PortProtocol::Tcp,
            port: 80,
            target_port: TargetPort::Number(8080),
            node_port: None,
        };
        let service = Service {
            service_type: ServiceType::LoadBalancer,
            external_traffic_policy: etp,
            load_balancer_ip: Some(Ipv4Addr::new(203, 0, 113, 10)),
            ..Service::new("default", "web", vec![port])
        };
        let backends = on
            .iter()
            .map(|&i| Backend {
                pod: pod_key(i, 0),
                name: format!("default/web-{i}"),
                ip: pod_ip(i, 0),
                node: t.nodes[i].device,
                ready: true,
                target_ports: vec![Some(8080)],
            })
            .collect();
        ServiceTable {
            seed: 7,
            services: vec![ServiceView {
                service,
                cluster_ip: Some(Ipv4Addr::new(10, 96, 0, 2)),
                backends,
            }],
        }
    }

    /// The fabric learned 203.0.113.10/32 towards `node` of rack a0: the core via
    /// spine-a-1's loopback, the spine via the ToR, the ToR via the node.
    fn advertised_towards(t: &Topology, node: &str) -> Dataplane {
        let mut b = calico(t, Never, Never, 1);
        let p = net("203.0.113.10/32");
        b.learned(dev(t, "core"), p, ip("100.127.0.2"));
        b.learned(dev(t, "spine-a-1"), p, ip("10.0.0.1"));
        b.learned(dev(t, "tor-a0"), p, t.device(dev(t, node)).address);
        b.build()
    }

    fn enter(dp: &Dataplane, table: &ServiceTable) -> ServiceEntry {
        let p = Packet::tcp(80);
        EntryRequest {
            dp,
            policing: None,
            table,
            from: (0, ip("0.0.0.1")),
            address: ip("203.0.113.10"),
            packet: &p,
            explain: false,
        }
        .hashed()
        .unwrap()
    }

    fn path(t: &Topology, hops: &[Hop]) -> Vec<String> {
        hops.iter()
            .map(|h| t.device(h.device).name.clone())
            .collect()
    }

    #[test]
    fn local_policy_keeps_the_nodes_endpoint_and_the_clients_address() {
        // The packet follows the learned /32 to a0-n0, whose own endpoint is the only
        // candidate (Local); no SNAT, the endpoint's reply goes straight back out by the
        // default routes to the core.
        let t = world();
        let dp = advertised_towards(&t, "a0-n0");
        let e = enter(&dp, &table(&t, TrafficPolicy::Local, &[0, 1]));
        assert_eq!(
            path(&t, &e.inbound),
            ["core", "spine-a-1", "tor-a0", "a0-n0"]
        );
        assert_eq!(e.entered, Inbound::Node(dev(&t, "a0-n0")));
        assert_eq!(e.kind, ServiceIpKind::LoadBalancer);
        assert_eq!(e.snat, None);
        let d = e.dnat.clone().unwrap().unwrap();
        assert_eq!((d.candidates.clone(), d.chosen), (vec![0], 0));
        let leg = e.chosen.as_ref().unwrap();
        assert_eq!(leg.trace.verdict, Verdict::Delivered);
        assert_eq!(leg.reply.len(), 1);
        assert_eq!(
            path(&t, &leg.reply[0].hops),
            ["a0-n0", "tor-a0", "spine-a-1", "core"]
        );
        assert_eq!(e.verdict(), EntryVerdict::Delivered);
        assert!(e.others.is_empty());
    }

    #[test]
    fn local_policy_on_a_node_without_an_endpoint_is_no_endpoints() {
        // The route leads to a0-n1, which has no endpoint of its own: Local drops it there.
        let t = world();
        let dp = advertised_towards(&t, "a0-n1");
        let e = enter(&dp, &table(&t, TrafficPolicy::Local, &[0]));
        assert_eq!(
            e.verdict(),
            EntryVerdict::NoEndpoints {
                at: dev(&t, "a0-n1"),
                local_only: true
            }
        );
        assert_eq!(e.verdict().reason(), Some("no-endpoints"));
    }

    #[test]
    fn cluster_policy_masquerades_to_the_node_and_reaches_every_endpoint() {
        // Cluster: both endpoints are candidates; the source becomes a0-n0's address, so the
        // endpoint on a0-n1 replies to a0-n0 over the segment and a0-n0 sends it out.
        let t = world();
        let dp = advertised_towards(&t, "a0-n0");
        let e = enter(&dp, &table(&t, TrafficPolicy::Cluster, &[0, 1]));
        assert_eq!(e.snat, Some(ip("10.0.0.10")));
        let legs = e.reachable_legs();
        assert_eq!(legs.len(), 2);
        assert!(
            legs.iter()
                .all(|l| l.verdict == ConnectionVerdict::Delivered)
        );
        let far = legs.iter().find(|l| l.backend == 1).unwrap();
        assert_eq!(path(&t, &far.trace.hops), ["a0-n0", "a0-n1"]);
        assert_eq!(far.reply.len(), 2);
        assert_eq!(path(&t, &far.reply[0].hops), ["a0-n1", "a0-n0"]);
        assert_eq!(
            path(&t, &far.reply[1].hops),
            ["a0-n0", "tor-a0", "spine-a-1", "core"]
        );
        assert_eq!(e.verdict(), EntryVerdict::Delivered);
    }

    #[test]
    fn an_address_the_attachment_router_never_learned_is_not_advertised() {
        // Without learned routes the core knows 203.0.113.10 only by the external's
        // 0.0.0.0/0: the fabric never heard of the Service.
        let t = world();
        let dp = calico(&t, Never, Never, 1).build();
        let e = enter(&dp, &table(&t, TrafficPolicy::Local, &[0]));
        assert_eq!(
            e.verdict(),
            EntryVerdict::NotAdvertised {
                at: dev(&t, "core")
            }
        );
        assert_eq!(path(&t, &e.inbound), ["core"]);
        assert!(e.dnat.is_none());
        // The Service is found by any of its addresses; its entry address is the
        // LoadBalancer IP.
        let tb = table(&t, TrafficPolicy::Local, &[0]);
        assert_eq!(
            entry_address(&tb.services[0]),
            Some((ServiceIpKind::LoadBalancer, ip("203.0.113.10")))
        );
        assert!(service_at(&tb, ip("10.96.0.2")).is_some_and(|(_, k)| k == ServiceIpKind::Cluster));
        assert!(service_at(&tb, ip("10.96.0.3")).is_none());
    }
}
