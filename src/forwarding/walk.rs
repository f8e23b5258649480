//! Hop-by-hop forwarding of one packet (SPEC §3.5): `podnet trace` and the `path`
//! expectation.
//!
//! A packet starts at the source pod's node (or a source device) and is forwarded by
//! longest-prefix match, device after device, with a hop limit of [`HOP_LIMIT`] forwards.
//! A Calico node whose matching route is a tunnel encapsulates the packet towards the next-hop
//! node; the outer packet is forwarded by the underlay (lookups on the outer destination) and
//! decapsulated at the node it is addressed to, which then looks up the inner destination.
//! A Spiderpool pod leaves its node's segment directly (destination on the segment) or through
//! its gateway; its node's FIB is not used.
//!
//! Invariants: the outcome is data — [`Verdict::Delivered`] or exactly one [`Reason`] with
//! the device where the packet stopped, which is always the last hop of the path; checks run
//! in a fixed order (source `wrong-subnet`, destination `wrong-subnet`, `unallocated`, then
//! the walk). The per-device step ([`process`]) is shared with the equivalence-class
//! computation in `reach.rs`, so that both agree by construction.
//! This module does not change any state and does not model TTL per encapsulation layer (one
//! hop count covers inner and outer packets).

use std::net::IpAddr;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};

use super::dataplane::{Attachment, Dataplane, Owner, PodInfo};
use super::fib::{Action, Encap, FibEntry, Origin, PodKey};
use crate::model::topology::{DeviceId, RackId};

/// How many times a packet may be handed from one device to the next.
pub const HOP_LIMIT: usize = 64;

/// Why a packet was not delivered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    /// A device had no matching entry (or the next hop was not on the segment).
    NoRoute,
    Blackhole,
    /// The hop limit ran out.
    Loop,
    /// The next device is a node that is down (or the source's node is).
    NodeDown,
    /// The link to the next device is down.
    LinkDown,
    /// A Spiderpool pod whose address lies outside its node's segment.
    WrongSubnet,
    /// The destination address belongs to no pod and no device.
    Unallocated,
    /// The source or destination pod's address is also a node's or router's address (a pool
    /// overlapping a rack subnet handed it out): two hosts claim it, so neither direction is
    /// delivered (ARCHITECTURE.md, choices).
    DuplicateAddress,
}

impl Reason {
    /// The word used in scenarios and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::NoRoute => "no-route",
            Reason::Blackhole => "blackhole",
            Reason::Loop => "loop",
            Reason::NodeDown => "node-down",
            Reason::LinkDown => "link-down",
            Reason::WrongSubnet => "wrong-subnet",
            Reason::Unallocated => "unallocated",
            Reason::DuplicateAddress => "duplicate-address",
        }
    }

    pub const ALL: [Reason; 8] = [
        Reason::NoRoute,
        Reason::Blackhole,
        Reason::Loop,
        Reason::NodeDown,
        Reason::LinkDown,
        Reason::WrongSubnet,
        Reason::Unallocated,
        Reason::DuplicateAddress,
    ];
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The outcome of a walk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Verdict {
    Delivered,
    Dropped { reason: Reason, at: DeviceId },
}

/// Where a packet starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    Pod(PodKey),
    Device(DeviceId),
}

/// The outer header of an encapsulated packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Outer {
    pub encap: Encap,
    pub src: IpAddr,
    pub dst: IpAddr,
}

/// One device on the path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hop {
    pub device: DeviceId,
    /// The entry that matched here: the inner destination's, or the outer destination's
    /// while the packet is in transit in a tunnel. `None` where no lookup happened (the
    /// packet was for this device, it was dropped on arrival, or it reached a segment pod).
    pub entry: Option<FibEntry>,
    /// The outer header the packet leaves this device with (`None`: not encapsulated;
    /// a decapsulating node forwards the inner packet).
    pub outer: Option<Outer>,
}

/// A packet's path and fate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trace {
    pub hops: Vec<Hop>,
    pub verdict: Verdict,
}

impl Trace {
    /// The devices visited, in order.
    pub fn path(&self) -> Vec<DeviceId> {
        self.hops.iter().map(|h| h.device).collect()
    }

    /// The first encapsulation used on the way, if any.
    pub fn encapsulation(&self) -> Option<Encap> {
        self.hops.iter().find_map(|h| h.outer.map(|o| o.encap))
    }

    pub fn delivered(&self) -> bool {
        self.verdict == Verdict::Delivered
    }
}

/// The packet's state on arrival at a device.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Mode {
    Native,
    Outer(Outer),
}

/// What a device does with the packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// For this device: its own address, or a local pod.
    Delivered,
    Stop(Reason),
    Forward {
        next: DeviceId,
        mode: Mode,
    },
    /// To a pod on the segment, whose node is `node`.
    ToSegmentPod {
        node: DeviceId,
    },
    /// Class mode: on-link on this segment; who receives it depends on the exact address.
    Handoff(RackId),
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Processed {
    pub(crate) step: Step,
    pub(crate) entry: Option<FibEntry>,
    pub(crate) outer: Option<Outer>,
    /// A lookup of the inner destination happened here (where a local pod would match).
    pub(crate) native_lookup: bool,
}

fn stop(reason: Reason, entry: Option<FibEntry>, outer: Option<Outer>) -> Processed {
    Processed {
        step: Step::Stop(reason),
        entry,
        outer,
        native_lookup: false,
    }
}

/// Processes a packet for `dst` arriving at `device` in `mode`. In class mode (`class`),
/// `dst` stands for its whole equivalence class: local pods are ignored and an on-link
/// delivery to a non-device address ends in [`Step::Handoff`].
pub(crate) fn process(
    dp: &Dataplane,
    device: DeviceId,
    mode: Mode,
    dst: IpAddr,
    class: bool,
) -> Processed {
    let own = dp.address(device);
    let mode = match mode {
        Mode::Outer(o) if Some(o.dst) == own => Mode::Native,
        m => m,
    };
    match mode {
        Mode::Native => {
            if Some(dst) == own {
                return Processed {
                    step: Step::Delivered,
                    entry: None,
                    outer: None,
                    native_lookup: false,
                };
            }
            let Some(entry) = dp.lookup_with(device, dst, Some(dst), class) else {
                let mut p = stop(Reason::NoRoute, None, None);
                p.native_lookup = true;
                return p;
            };
            let step = match entry.action {
                Action::Local(_) => Step::Delivered,
                Action::Blackhole => Step::Stop(Reason::Blackhole),
                // Out of the fabric: the packet has left the cluster, which delivers it only
                // when it is for the outside (an address of the cluster sent out is lost).
                Action::External(_) if !class && dp.is_external_destination(dst) => Step::Delivered,
                Action::External(_) => Step::Stop(Reason::NoRoute),
                Action::Connected(rack) => match dp.owner(rack, dst) {
                    Some(Owner::Device(o)) => Step::Forward {
                        next: o,
                        mode: Mode::Native,
                    },
                    _ if class => Step::Handoff(rack),
                    Some(Owner::Pod(p)) => match dp.pod(p) {
                        Some(info) if info.device == device => Step::Delivered,
                        Some(info) => Step::ToSegmentPod { node: info.device },
                        None => Step::Stop(Reason::NoRoute),
                    },
                    None => Step::Stop(Reason::NoRoute),
                },
                Action::Via { device: next, .. } => Step::Forward {
                    next,
                    mode: Mode::Native,
                },
                Action::Tunnel { encap, remote, .. } => {
                    let outer = Outer {
                        encap,
                        src: own.unwrap_or(remote),
                        dst: remote,
                    };
                    let step = outer_step(dp, device, outer);
                    return Processed {
                        step,
                        entry: Some(entry),
                        outer: Some(outer),
                        native_lookup: true,
                    };
                }
            };
            Processed {
                step,
                entry: Some(entry),
                outer: None,
                native_lookup: true,
            }
        }
        Mode::Outer(outer) => {
            let entry = dp.lookup_with(device, outer.dst, None, false);
            Processed {
                step: outer_step(dp, device, outer),
                entry,
                outer: Some(outer),
                native_lookup: false,
            }
        }
    }
}

/// Forwarding of an outer packet by the underlay at `device` (never encapsulated again).
fn outer_step(dp: &Dataplane, device: DeviceId, outer: Outer) -> Step {
    let Some(entry) = dp.lookup_with(device, outer.dst, None, false) else {
        return Step::Stop(Reason::NoRoute);
    };
    match entry.action {
        Action::Connected(rack) => match dp.owner(rack, outer.dst) {
            Some(Owner::Device(o)) if o != device => Step::Forward {
                next: o,
                mode: Mode::Outer(outer),
            },
            _ => Step::Stop(Reason::NoRoute),
        },
        Action::Via { device: next, .. } => Step::Forward {
            next,
            mode: Mode::Outer(outer),
        },
        Action::Blackhole => Step::Stop(Reason::Blackhole),
        Action::Local(_) | Action::Tunnel { .. } | Action::External(_) => {
            Step::Stop(Reason::NoRoute)
        }
    }
}

fn default_route(addr: IpAddr) -> IpNet {
    match addr {
        IpAddr::V4(_) => IpNet::V4(Ipv4Net::default()),
        IpAddr::V6(_) => IpNet::V6(Ipv6Net::default()),
    }
}

/// The first step of a segment-attached pod: its own table sends the packet on-link when the
/// destination is on its segment, else to its gateway; a gateway no device on the segment
/// owns stops the packet at the pod's node. A gateway that is the pod's own node hands the
/// packet to that node's FIB.
pub(crate) fn pod_table_step(dp: &Dataplane, pod: &PodInfo, dst: IpAddr, class: bool) -> Processed {
    let Some(rack) = dp.racks.get(pod.rack.index()).copied() else {
        return stop(Reason::NoRoute, None, None);
    };
    let entry_on_link = FibEntry {
        prefix: rack.subnet,
        action: Action::Connected(pod.rack),
        origin: Origin::PodTable,
        learned_next_hop: None,
    };
    let done = |step, entry| Processed {
        step,
        entry: Some(entry),
        outer: None,
        native_lookup: false,
    };
    if rack.subnet.contains(&dst) {
        let step = match dp.owner(pod.rack, dst) {
            Some(Owner::Device(o)) if o == pod.device => Step::Delivered,
            Some(Owner::Device(o)) => Step::Forward {
                next: o,
                mode: Mode::Native,
            },
            _ if class => Step::Handoff(pod.rack),
            Some(Owner::Pod(q)) => match dp.pod(q) {
                Some(info) if info.device == pod.device => Step::Delivered,
                Some(info) => Step::ToSegmentPod { node: info.device },
                None => Step::Stop(Reason::NoRoute),
            },
            None => Step::Stop(Reason::NoRoute),
        };
        return done(step, entry_on_link);
    }
    let gateway = match pod.attachment {
        Attachment::Segment { gateway: Some(g) } => g,
        _ => rack.gateway,
    };
    match dp.owner(pod.rack, gateway) {
        Some(Owner::Device(o)) if o == pod.device => process(dp, o, Mode::Native, dst, class),
        Some(Owner::Device(o)) => done(
            Step::Forward {
                next: o,
                mode: Mode::Native,
            },
            FibEntry {
                prefix: default_route(gateway),
                action: Action::Via {
                    next_hop: gateway,
                    device: o,
                },
                origin: Origin::PodTable,
                learned_next_hop: None,
            },
        ),
        _ => stop(Reason::NoRoute, None, None),
    }
}

/// Checks made before the walk, in order: whether the source or the destination pod holds a
/// node's or router's address (`duplicate-address`, at the source: all-pairs reachability
/// settles those pairs the same way before its walks), the source's and the destination's
/// segment, and whether the destination exists. `Some` stops the packet.
pub(crate) fn precheck(
    dp: &Dataplane,
    start: DeviceId,
    src_pod: Option<&PodInfo>,
    dst: IpAddr,
) -> Option<(Reason, DeviceId)> {
    let dst_pod = dp.pod_by_ip(dst);
    if src_pod
        .into_iter()
        .chain(dst_pod)
        .any(|p| dp.is_duplicate(p))
    {
        return Some((Reason::DuplicateAddress, start));
    }
    if src_pod.is_some_and(|p| p.wrong_subnet) {
        return Some((Reason::WrongSubnet, start));
    }
    match dst_pod {
        Some(p) if p.wrong_subnet => Some((Reason::WrongSubnet, p.device)),
        Some(_) => None,
        None if dp.device_by_address(dst).is_some() || dp.is_external_destination(dst) => None,
        None => Some((Reason::Unallocated, start)),
    }
}

/// Traces one packet from `from` to `to`. `None` when the source is unknown.
pub fn trace(dp: &Dataplane, from: Source, to: IpAddr) -> Option<Trace> {
    let (start, src_pod) = match from {
        Source::Device(d) => {
            dp.address(d)?;
            (d, None)
        }
        Source::Pod(k) => {
            let p = dp.pod(k)?;
            (p.device, Some(p))
        }
    };
    let bare = |reason, at| {
        Some(Trace {
            hops: vec![Hop {
                device: start,
                entry: None,
                outer: None,
            }],
            verdict: Verdict::Dropped { reason, at },
        })
    };
    if let Some((reason, at)) = precheck(dp, start, src_pod, to) {
        return bare(reason, at);
    }
    if dp.is_down(start) {
        return bare(Reason::NodeDown, start);
    }
    let segment_source = src_pod.filter(|p| matches!(p.attachment, Attachment::Segment { .. }));
    let mut hops: Vec<Hop> = Vec::new();
    let mut forwards = 0usize;
    let mut cur = start;
    let mut processed = match segment_source {
        Some(p) => pod_table_step(dp, p, to, false),
        None => process(dp, start, Mode::Native, to, false),
    };
    loop {
        hops.push(Hop {
            device: cur,
            entry: processed.entry,
            outer: processed.outer,
        });
        let dropped = |reason, at| Verdict::Dropped { reason, at };
        let (next, mode, to_pod) = match processed.step {
            Step::Delivered => {
                return Some(Trace {
                    hops,
                    verdict: Verdict::Delivered,
                });
            }
            Step::Stop(reason) => {
                return Some(Trace {
                    hops,
                    verdict: dropped(reason, cur),
                });
            }
            Step::Handoff(_) => {
                return Some(Trace {
                    hops,
                    verdict: dropped(Reason::NoRoute, cur),
                });
            }
            Step::Forward { next, mode } => (next, mode, false),
            Step::ToSegmentPod { node } => (node, Mode::Native, true),
        };
        if let Some(reason) = forward_check(dp, cur, next, forwards) {
            let outer = match mode {
                Mode::Outer(o) => Some(o),
                Mode::Native => None,
            };
            let at = refused_at(reason, cur, next, outer, &mut hops);
            return Some(Trace {
                hops,
                verdict: dropped(reason, at),
            });
        }
        forwards += 1;
        if to_pod {
            hops.push(Hop {
                device: next,
                entry: None,
                outer: None,
            });
            return Some(Trace {
                hops,
                verdict: Verdict::Delivered,
            });
        }
        cur = next;
        processed = process(dp, cur, mode, to, false);
    }
}

/// Where a forward from `cur` to `next` that [`forward_check`] refused for `reason` loses the
/// packet: a node that is down is reached (the hop to it is recorded, with the packet's outer
/// header), anything else stops at `cur`.
pub(crate) fn refused_at(
    reason: Reason,
    cur: DeviceId,
    next: DeviceId,
    outer: Option<Outer>,
    hops: &mut Vec<Hop>,
) -> DeviceId {
    if reason != Reason::NodeDown {
        return cur;
    }
    hops.push(Hop {
        device: next,
        entry: None,
        outer,
    });
    next
}

/// Whether a packet at `cur`, already forwarded `forwards` times, can be handed to `next`:
/// the hop limit, then the link, then the next device being up.
pub(crate) fn forward_check(
    dp: &Dataplane,
    cur: DeviceId,
    next: DeviceId,
    forwards: usize,
) -> Option<Reason> {
    if forwards >= HOP_LIMIT {
        return Some(Reason::Loop);
    }
    match dp.link_up(cur, next) {
        None => return Some(Reason::NoRoute),
        Some(false) => return Some(Reason::LinkDown),
        Some(true) => {}
    }
    dp.is_down(next).then_some(Reason::NodeDown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forwarding::testutil::*;
    use crate::model::network::EncapMode::{Always, CrossSubnet, Never};
    use crate::model::topology::{NodeId, Topology};

    /// Traces and renders `path | verdict | encapsulation`, e.g.
    /// `a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | ipip`.
    fn render(t: &Topology, dp: &Dataplane, from: Source, to: IpAddr) -> String {
        let tr = trace(dp, from, to).expect("known source");
        let name = |d: DeviceId| t.device(d).name.clone();
        let path: Vec<String> = tr.path().into_iter().map(name).collect();
        let verdict = match tr.verdict {
            Verdict::Delivered => "delivered".to_string(),
            Verdict::Dropped { reason, at } => format!("{reason}@{}", name(at)),
        };
        let encap = tr.encapsulation().map_or("none", Encap::as_str);
        format!("{} | {verdict} | {encap}", path.join(" "))
    }

    fn check(t: &Topology, dp: &Dataplane, from: Source, to: IpAddr, expect: &str) {
        assert_eq!(render(t, dp, from, to), expect);
    }

    fn p(i: usize, j: usize) -> Source {
        Source::Pod(pod_key(i, j))
    }

    #[test]
    fn host_network_pods_are_their_node_and_share_its_address() {
        let t = topology(&[&[2, 1]]);
        let mut b = calico(&t, Always, Never, 1);
        // Two host-network pods on a0-n0 and one on a1-n0: the builder gives them their
        // node's address (whatever address it is handed), and none is a duplicate.
        let (h1, h2, h3) = (PodKey(901), PodKey(902), PodKey(903));
        assert!(b.pod(h1, ip("10.99.0.1"), NodeId(0), Attachment::Host));
        assert!(b.pod(h2, ip("10.99.0.2"), NodeId(0), Attachment::Host));
        assert!(b.pod(h3, ip("10.99.0.3"), NodeId(2), Attachment::Host));
        let dp = b.build();
        let a0n0 = ip("10.0.0.10");
        for k in [h1, h2] {
            let info = dp.pod(k).expect("a host-network pod");
            assert_eq!(info.ip, a0n0);
            assert!(!dp.is_duplicate(info));
        }
        // The address is the node's: no pod holds it.
        assert!(dp.pod_by_ip(a0n0).is_none());
        // To a host-network pod: delivered to its node, natively (a node's address is routed
        // by the underlay, never tunnelled).
        check(&t, &dp, p(0, 0), a0n0, "a0-n0 | delivered | none");
        check(
            &t,
            &dp,
            p(2, 0),
            a0n0,
            "a1-n0 tor-a1 spine-a-1 tor-a0 a0-n0 | delivered | none",
        );
        // From one: exactly its node's walk, to pods (tunnelled by the node's routes) and to
        // another host-network pod.
        for to in [pod_ip(2, 0), pod_ip(1, 0), ip("10.1.0.10"), a0n0] {
            assert_eq!(
                render(&t, &dp, Source::Pod(h1), to),
                render(&t, &dp, Source::Device(dev(&t, "a0-n0")), to)
            );
        }
        check(
            &t,
            &dp,
            Source::Pod(h1),
            pod_ip(2, 0),
            "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | ipip",
        );
    }

    #[test]
    fn same_rack_native_goes_over_the_segment_without_the_tor() {
        let t = topology(&[&[2, 1]]);
        let dp = calico(&t, Never, Never, 2).build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 1),
            "a0-n0 a0-n1 | delivered | none",
        );
        check(&t, &dp, p(0, 0), pod_ip(0, 1), "a0-n0 | delivered | none");
        // Natively across racks the fabric knows no pod route.
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(2, 0),
            "a0-n0 tor-a0 | no-route@tor-a0 | none",
        );
    }

    #[test]
    fn ipip_always_tunnels_through_the_fabric_and_decapsulates_at_the_far_node() {
        let t = topology(&[&[2, 1], &[1]]);
        let dp = calico(&t, Always, Never, 1).build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(3, 0),
            "a0-n0 tor-a0 spine-a-1 core spine-b-1 tor-b0 b0-n0 | delivered | ipip",
        );
        let tr = trace(&dp, p(0, 0), pod_ip(3, 0)).expect("trace");
        let outer = tr.hops[2].outer.expect("encapsulated at the spine");
        assert_eq!((outer.src, outer.dst), (ip("10.0.0.10"), ip("10.2.0.10")));
        assert_eq!(tr.hops[6].outer, None);
        assert_eq!(
            tr.hops[6].entry.map(|e| e.action),
            Some(Action::Local(pod_key(3, 0)))
        );
        // Always also tunnels inside the rack, straight to the node.
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 0),
            "a0-n0 a0-n1 | delivered | ipip",
        );
    }

    #[test]
    fn cross_subnet_tunnels_only_outside_the_node_subnet_and_a_slash_32_always_tunnels() {
        let mut t = topology(&[&[2, 1]]);
        let dp = calico(&t, Never, CrossSubnet, 1).build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 0),
            "a0-n0 a0-n1 | delivered | none",
        );
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(2, 0),
            "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | vxlan",
        );
        // node#563: an ipv4Address configured as /32 makes every peer "another subnet".
        t.node_mut(NodeId(0)).bgp.ipv4_subnet = Some(net("10.0.0.10/32"));
        let dp = calico(&t, Never, CrossSubnet, 1).build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 0),
            "a0-n0 a0-n1 | delivered | vxlan",
        );
    }

    #[test]
    fn a_borrowed_address_whose_slash_32_is_missing_hits_the_owners_blackhole() {
        let t = topology(&[&[3]]);
        let mut b = calico(&t, Never, Never, 1);
        // a0-n1 borrowed 10.200.0.50 from a0-n0's block; only a0-n2 learned its /32.
        b.pod(
            PodKey(999),
            ip("10.200.0.50"),
            NodeId(1),
            Attachment::Calico,
        );
        b.learned(dev(&t, "a0-n2"), net("10.200.0.50/32"), ip("10.0.0.11"));
        let dp = b.build();
        check(
            &t,
            &dp,
            p(2, 0),
            ip("10.200.0.50"),
            "a0-n2 a0-n1 | delivered | none",
        );
        check(
            &t,
            &dp,
            p(1, 0),
            ip("10.200.0.50"),
            "a0-n1 | delivered | none",
        );
        check(
            &t,
            &dp,
            Source::Device(dev(&t, "a0-n2")),
            ip("10.200.1.1"),
            "a0-n2 a0-n1 | delivered | none",
        );
        // a0-n0's own blackhole for its block wins over nothing more specific.
        check(
            &t,
            &dp,
            p(0, 0),
            ip("10.200.0.50"),
            "a0-n0 | blackhole@a0-n0 | none",
        );
    }

    #[test]
    fn down_nodes_down_links_loops_and_unallocated_addresses() {
        let mut t = topology(&[&[2, 1]]);
        t.node_mut(NodeId(1)).down = true;
        let tor = dev(&t, "tor-a1");
        let spine = dev(&t, "spine-a-1");
        let link = t.link_between(tor, spine).expect("fabric link");
        t.set_link_up(link, false);
        let mut b = calico(&t, Always, Never, 1);
        // A loop between two nodes of one rack for a prefix nobody owns.
        let (n0, n1) = (dev(&t, "a0-n0"), dev(&t, "a0-n1"));
        b.learned(n0, net("10.250.0.0/24"), ip("10.0.0.11"));
        let dp = b.build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 0),
            "a0-n0 a0-n1 | node-down@a0-n1 | ipip",
        );
        check(
            &t,
            &dp,
            p(1, 0),
            pod_ip(0, 0),
            "a0-n1 | node-down@a0-n1 | none",
        );
        // tor-a1 is cut off: the spine has no route to rack a1 any more; a0-n0's outer
        // packet reaches tor-a0, which has none either.
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(2, 0),
            "a0-n0 tor-a0 | no-route@tor-a0 | ipip",
        );
        check(
            &t,
            &dp,
            p(0, 0),
            ip("10.99.0.1"),
            "a0-n0 | unallocated@a0-n0 | none",
        );
        let _ = n1;
        // Two nodes pointing at each other for a pod on a third: the hop limit ends it.
        let t2 = topology(&[&[3]]);
        let mut b = calico(&t2, Never, Never, 1);
        let (m0, m1) = (dev(&t2, "a0-n0"), dev(&t2, "a0-n1"));
        b.pod(PodKey(7), ip("10.250.0.1"), NodeId(2), Attachment::Calico);
        b.learned(m0, net("10.250.0.0/24"), ip("10.0.0.11"));
        b.learned(m1, net("10.250.0.0/24"), ip("10.0.0.10"));
        let dp = b.build();
        let tr = trace(&dp, Source::Device(m0), ip("10.250.0.1")).expect("trace");
        assert_eq!(tr.hops.len(), HOP_LIMIT + 1);
        assert_eq!(
            tr.verdict,
            Verdict::Dropped {
                reason: Reason::Loop,
                at: m0
            }
        );
        // From the pod's own node's neighbour on the segment it is direct.
        let b = {
            let mut b = calico(&t2, Never, Never, 1);
            b.pod(PodKey(7), ip("10.250.0.1"), NodeId(2), Attachment::Calico);
            b.learned(m0, net("10.250.0.0/24"), ip("10.0.0.12"));
            b
        };
        let dp = b.build();
        check(
            &t2,
            &dp,
            Source::Device(m0),
            ip("10.250.0.1"),
            "a0-n0 a0-n2 | delivered | none",
        );
    }

    #[test]
    fn a_link_down_on_the_way_stops_at_the_device_before_it() {
        let mut t = topology(&[&[1, 1]]);
        let link = t
            .link_between(dev(&t, "a1-n0"), dev(&t, "tor-a1"))
            .expect("access link");
        t.set_link_up(link, false);
        let dp = calico(&t, Always, Never, 1).build();
        check(
            &t,
            &dp,
            p(0, 0),
            pod_ip(1, 0),
            "a0-n0 tor-a0 spine-a-1 tor-a1 | link-down@tor-a1 | ipip",
        );
    }

    #[test]
    fn spiderpool_pods_live_on_the_segment_and_leave_through_their_gateway() {
        let t = topology(&[&[2, 1]]);
        let mut b = Dataplane::builder(&t);
        let seg = |gateway| Attachment::Segment { gateway };
        b.pod(PodKey(1), ip("10.0.0.100"), NodeId(0), seg(None));
        b.pod(PodKey(2), ip("10.0.0.101"), NodeId(1), seg(None));
        b.pod(PodKey(3), ip("10.1.0.100"), NodeId(2), seg(None));
        b.pod(PodKey(4), ip("10.9.0.100"), NodeId(2), seg(None));
        b.pod(
            PodKey(5),
            ip("10.0.0.102"),
            NodeId(0),
            seg(Some(ip("10.0.0.254"))),
        );
        b.pod(
            PodKey(6),
            ip("10.0.0.103"),
            NodeId(1),
            seg(Some(ip("10.0.0.10"))),
        );
        let dp = b.build();
        let k = |n| Source::Pod(PodKey(n));
        check(
            &t,
            &dp,
            k(1),
            ip("10.0.0.101"),
            "a0-n0 a0-n1 | delivered | none",
        );
        check(
            &t,
            &dp,
            k(1),
            ip("10.1.0.100"),
            "a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | none",
        );
        check(
            &t,
            &dp,
            k(1),
            ip("10.9.0.100"),
            "a0-n0 | wrong-subnet@a1-n0 | none",
        );
        check(
            &t,
            &dp,
            k(4),
            ip("10.0.0.100"),
            "a1-n0 | wrong-subnet@a1-n0 | none",
        );
        check(
            &t,
            &dp,
            k(5),
            ip("10.1.0.100"),
            "a0-n0 | no-route@a0-n0 | none",
        );
        check(
            &t,
            &dp,
            k(5),
            ip("10.0.0.103"),
            "a0-n0 a0-n1 | delivered | none",
        );
        // A gateway that is a node: the node routes it with its own FIB (default via ToR).
        check(
            &t,
            &dp,
            k(6),
            ip("10.1.0.100"),
            "a0-n1 a0-n0 tor-a0 spine-a-1 tor-a1 a1-n0 | delivered | none",
        );
    }

    #[test]
    fn fib_entries_show_tunnels_to_the_far_node_and_count_what_they_list() {
        let t = topology(&[&[2, 1]]);
        let dp = calico(&t, CrossSubnet, Never, 2).build();
        let n0 = dev(&t, "a0-n0");
        let entries = dp.entries(n0);
        assert_eq!(dp.fib_len(n0), entries.len());
        // Connected, default, own blackhole, 2 local pods, the two other blocks.
        assert_eq!(entries.len(), 7);
        let find = |p: IpNet| entries.iter().find(|e| e.prefix == p).map(|e| e.action);
        assert_eq!(find(block(0)), Some(Action::Blackhole));
        assert_eq!(
            find(block(1)),
            Some(Action::Via {
                next_hop: ip("10.0.0.11"),
                device: dev(&t, "a0-n1")
            })
        );
        assert_eq!(
            find(block(2)),
            Some(Action::Tunnel {
                encap: Encap::Ipip,
                remote: ip("10.1.0.10"),
                device: dev(&t, "a1-n0")
            })
        );
        let tor = dev(&t, "tor-a0");
        // Its own rack, the other rack over the fabric, and the spine's loopback.
        assert_eq!(dp.fib_len(tor), 3);
        let spine = dev(&t, "spine-a-1");
        assert_eq!(dp.entries(spine).len(), 2);
        for d in 0..t.devices.len() {
            let d = DeviceId(d as u32);
            assert_eq!(dp.fib_len(d), dp.entries(d).len());
        }
    }
}
