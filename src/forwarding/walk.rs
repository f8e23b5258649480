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
use super::fib::{Encap, FibAction, FibEntry, Origin, PodKey};
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
                FibAction::Local(_) => Step::Delivered,
                FibAction::Blackhole => Step::Stop(Reason::Blackhole),
                // Out of the fabric: the packet has left the cluster, which delivers it only
                // when it is for the outside (an address of the cluster sent out is lost).
                FibAction::External(_) if !class && dp.is_external_destination(dst) => {
                    Step::Delivered
                }
                FibAction::External(_) => Step::Stop(Reason::NoRoute),
                FibAction::Connected(rack) => match dp.owner(rack, dst) {
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
                FibAction::Via { device: next, .. } => Step::Forward {
                    next,
                    mode: Mode::Native,
                },
                FibAction::Tunnel { encap, remote, .. } => {
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
        FibAction::Connected(rack) => match dp.owner(rack, outer.dst) {
            Some(Owner::Device(o)) if o != device => Step::Forward {
                next: o,
                mode: Mode::Outer(outer),
            },
            _ => Step::Stop(Reason::NoRoute),
        },
        FibAction::Via { device: next, .. } => Step::Forward {
            next,
            mode: Mode::Outer(outer),
        },
        FibAction::Blackhole => Step::Stop(Reason::Blackhole),
        FibAction::Local(_) | FibAction::Tunnel { .. } | FibAction::External(_) => {
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
        action: FibAction::Connected(pod.rack),
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
                action: FibAction::Via {
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
mod tests;
