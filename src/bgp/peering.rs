//! Who speaks BGP and with whom: speakers and sessions computed from the topology, Calico's
//! `BGPConfiguration` and `BGPPeer`s (SPEC §3.4, REFERENCE §4.3, §4.5).
//!
//! Speakers: every live Calico node (when the nodes run BIRD) and every router when
//! `topology.fabric.bgp`. Sessions, in creation order: the node-to-node mesh (route reflectors,
//! the nodes with a `routeReflectorClusterID`, mesh with nobody), then `BGPPeer`s in input
//! order, then the fabric (ToR–spine, spine–core). A pair of speakers has at most one session;
//! the first reason to create it wins. A session that can never come up is still listed,
//! `Idle`, with a reason a user can act on.
//!
//! This module is static: it does not know which speakers are up (that is the engine's).

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use ipnet::IpNet;

use super::config::{BgpConfig, Peer};
use super::restart::RESTART_TIME;
use super::underlay::pair_latencies;
use super::{SessionId, SpeakerId};
use crate::model::hash::FastMap;
use crate::model::time::SimDuration;
use crate::model::topology::{DeviceId, DeviceKind, LinkId, LinkKind, NodeId, RackId, Topology};

/// A BGP speaker: a Calico node running BIRD or a fabric router.
#[derive(Clone, Debug, PartialEq)]
pub struct Speaker {
    pub id: SpeakerId,
    pub device: DeviceId,
    pub name: String,
    /// The Calico node, or `None` for a router.
    pub node: Option<NodeId>,
    /// The rack whose segment the speaker sits on (a node's rack, a ToR's rack).
    pub rack: Option<RackId>,
    pub as_number: u32,
    /// BGP Identifier: the device's address (RFC 4271 §4.2).
    pub router_id: IpAddr,
    /// The address sessions run between and next-hop-self sets.
    pub address: IpAddr,
    /// CLUSTER_ID when this speaker reflects (RFC 4456 §7): a Calico node's
    /// `routeReflectorClusterID`, a ToR's gateway.
    pub cluster_id: Option<IpAddr>,
    /// False for a node that is down (`nodeDown`) when the plan is made.
    pub up: bool,
    /// This speaker's hold time, when it differs from the profile's.
    pub hold_time: Option<SimDuration>,
}

impl Speaker {
    pub fn is_router(&self) -> bool {
        self.node.is_none()
    }
}

/// iBGP (same AS) or eBGP.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionType {
    Ibgp,
    Ebgp,
}

impl SessionType {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionType::Ibgp => "ibgp",
            SessionType::Ebgp => "ebgp",
        }
    }
}

/// The session states podnet distinguishes (RFC 4271 §8's Connect, Active, OpenSent and
/// OpenConfirm are one `Connect` here).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SessionState {
    Idle,
    Connect,
    Established,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            SessionState::Idle => "Idle",
            SessionState::Connect => "Connect",
            SessionState::Established => "Established",
        }
    }
}

/// Why a session exists.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SessionSource {
    /// Calico's node-to-node mesh.
    Mesh,
    /// A `BGPPeer`, by name.
    Peer(String),
    /// An RFC 7938 fabric link (ToR–spine, spine–core).
    Fabric,
}

/// Why a session is not Established.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdleReason {
    /// The `BGPPeer`'s `asNumber` is not the peer's real AS: the OPEN would be refused.
    AsNumberMismatch {
        peer: String,
        configured: u32,
        speaker: String,
        actual: u32,
    },
    /// The `BGPPeer`'s `peerIP` is nobody's address.
    NoSpeakerAtAddress { peer: String, address: IpAddr },
    /// The `peerIP` is a device that does not speak BGP.
    NotASpeaker {
        peer: String,
        address: IpAddr,
        device: String,
    },
    /// No path of links that are up joins the two ends.
    NoUnderlayPath,
    /// The single-hop link the session runs over is down.
    LinkDown,
    /// This speaker is down (crashed, or its crash was detected by the peer).
    PeerDown { speaker: String },
    /// The speaker was deleted from the cluster.
    Removed { speaker: String },
    /// A configuration change removed the session (a `BGPPeer` deleted, the mesh turned off);
    /// `cause` names the change. The session is kept only so that ids stay stable.
    Unconfigured { cause: String },
    /// A configuration change altered the session (an AS number, who reflects to whom):
    /// BIRD restarts it, so it goes down and connects again.
    Reconfigured { cause: String },
}

impl IdleReason {
    /// A reason nothing in the run can remove (only a new plan can), so no retry happens.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            IdleReason::AsNumberMismatch { .. }
                | IdleReason::NoSpeakerAtAddress { .. }
                | IdleReason::NotASpeaker { .. }
                | IdleReason::Removed { .. }
                | IdleReason::Unconfigured { .. }
        )
    }

    /// The session no longer exists (its speaker was deleted, or the configuration dropped
    /// it): it is left out of reports.
    pub fn is_gone(&self) -> bool {
        matches!(
            self,
            IdleReason::Removed { .. } | IdleReason::Unconfigured { .. }
        )
    }
}

impl fmt::Display for IdleReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IdleReason::AsNumberMismatch {
                peer,
                configured,
                speaker,
                actual,
            } => write!(
                f,
                "BGPPeer {peer}: asNumber {configured} but {speaker} is AS {actual}"
            ),
            IdleReason::NoSpeakerAtAddress { peer, address } => {
                write!(
                    f,
                    "BGPPeer {peer}: peerIP {address} belongs to no BGP speaker"
                )
            }
            IdleReason::NotASpeaker {
                peer,
                address,
                device,
            } => write!(
                f,
                "BGPPeer {peer}: peerIP {address} is {device}, which does not speak BGP \
                 (topology.fabric.bgp is false)"
            ),
            IdleReason::NoUnderlayPath => f.write_str("no underlay path between the peers"),
            IdleReason::LinkDown => f.write_str("the link under this single-hop session is down"),
            IdleReason::PeerDown { speaker } => write!(f, "{speaker} is down"),
            IdleReason::Removed { speaker } => write!(f, "{speaker} was deleted"),
            IdleReason::Unconfigured { cause } => {
                write!(f, "removed from the configuration: {cause}")
            }
            IdleReason::Reconfigured { cause } => write!(f, "configuration changed: {cause}"),
        }
    }
}

/// One BGP session between speaker `a` and speaker `b` (or an address nobody owns).
///
/// Layout: a full mesh of 1,000 nodes has half a million sessions, each met at random when
/// it comes up and when its UPDATEs are sent, delivered and processed. What those read and
/// write (the ends, the latency, the export profile, the state and reason) is the first
/// cache line, in this order (`repr(C)`), the reason boxed (it is rare and large); what only
/// set-up, reports and configuration changes read is the second. Two lines, aligned.
#[derive(Clone, Debug, PartialEq)]
#[repr(C, align(64))]
pub struct Session {
    pub id: SessionId,
    pub a: SpeakerId,
    /// `None` when the configured peer address belongs to no speaker.
    pub b: Option<SpeakerId>,
    /// One-way underlay latency between the ends (`None`: no path).
    pub latency: Option<SimDuration>,
    /// The segment both ends sit on, if any: a next hop inside it is passed on unchanged
    /// by routers (third-party next hop, RFC 4271 §5.1.3).
    pub shared_subnet: Option<IpNet>,
    pub session_type: SessionType,
    /// `reflects[i]`: side i (0 = a, 1 = b) treats the other as its route-reflector client.
    pub reflects: [bool; 2],
    /// `keep_next_hop[i]`: side i keeps the next hop on eBGP (`keepOriginalNextHop`).
    pub keep_next_hop: [bool; 2],
    pub state: SessionState,
    /// Why the session is not Established (`None` while Connect or Established).
    pub reason: Option<Box<IdleReason>>,
    pub source: SessionSource,
    /// How long a helper keeps the other side's routes when it restarts: the `graceful
    /// restart time` both sides advertise (BIRD's 120 s unless `nodeMeshMaxRestartTime` or
    /// the BGPPeer's `maxRestartTime` sets it).
    pub restart_time: SimDuration,
    /// The link a single-hop session runs over.
    pub link: Option<LinkId>,
    /// The address `a` connects to.
    pub b_address: IpAddr,
    /// Calico's node sessions are multihop; a router–router session over a fabric link is not.
    pub multihop: bool,
}

const _: () = {
    assert!(
        std::mem::size_of::<Session>() == 128,
        "a session is two cache lines"
    );
    assert!(
        std::mem::offset_of!(Session, reason) + 8 == 64,
        "what the busy part of a run reads and writes is the first line"
    );
};

impl Session {
    /// The side (0 or 1) of `s`, if it is an end of this session.
    pub fn side_of(&self, s: SpeakerId) -> Option<usize> {
        if self.a == s {
            Some(0)
        } else if self.b == Some(s) {
            Some(1)
        } else {
            None
        }
    }

    /// The other end as seen from side `side`.
    pub fn peer_of(&self, side: usize) -> Option<SpeakerId> {
        if side == 0 { self.b } else { Some(self.a) }
    }

    /// Whether either side reflects to the other (the report's `reflectorClient`).
    pub fn reflector_client(&self) -> bool {
        self.reflects[0] || self.reflects[1]
    }
}

/// The static result: every speaker and session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Peering {
    pub speakers: Vec<Speaker>,
    pub sessions: Vec<Session>,
}

impl Peering {
    pub fn speaker_by_device(&self, d: DeviceId) -> Option<&Speaker> {
        self.speakers.iter().find(|s| s.device == d)
    }
}

/// Computes speakers and sessions. `calico_nodes`: whether the nodes run BIRD (Calico CNI
/// with the `bird` backend); routers speak when `topology.fabric.bgp`.
pub fn plan(
    topology: &Topology,
    config: &BgpConfig,
    peers: &[Peer],
    calico_nodes: bool,
) -> Peering {
    let mut b = Builder {
        topology,
        peering: Peering::default(),
        by_device: HashMap::new(),
        by_address: HashMap::new(),
        pairs: FastMap::default(),
        meshed: Vec::new(),
    };
    if calico_nodes {
        for (id, node) in topology.live_nodes() {
            let cluster_id = node.bgp.route_reflector_cluster_id.map(IpAddr::V4);
            b.add_speaker(
                node.device,
                Some(id),
                Some(node.rack),
                node.bgp.as_number.unwrap_or(config.as_number),
                cluster_id,
                !node.down,
            );
        }
    }
    if topology.fabric.bgp {
        for (i, device) in topology.devices.iter().enumerate() {
            let rack = match device.kind {
                DeviceKind::Node(_) => continue,
                DeviceKind::Tor(r) => Some(r),
                _ => None,
            };
            let cluster_id = rack.map(|_| device.address);
            b.add_speaker(
                DeviceId(i as u32),
                None,
                rack,
                device.as_number.unwrap_or(config.as_number),
                cluster_id,
                true,
            );
        }
    }

    // Calico's node-to-node mesh: every pair of nodes that are not route reflectors.
    if calico_nodes && config.node_to_node_mesh {
        let mesh: Vec<SpeakerId> = b
            .peering
            .speakers
            .iter()
            .filter(|s| !s.is_router() && s.cluster_id.is_none())
            .map(|s| s.id)
            .collect();
        // n(n-1)/2 sessions (half a million for 1,000 nodes): room for them at once. The
        // pairs are distinct and come first, so none is looked up; later pairs ask `meshed`.
        let sessions = mesh.len() * mesh.len().saturating_sub(1) / 2;
        b.peering.sessions.reserve(sessions);
        b.meshed = vec![false; b.peering.speakers.len()];
        for &x in &mesh {
            b.meshed[x.index()] = true;
        }
        for (i, &x) in mesh.iter().enumerate() {
            for &y in &mesh[i + 1..] {
                let id = b.push_pair(x, y, SessionSource::Mesh, false, None);
                if let Some(t) = config.node_mesh_restart_time {
                    b.peering.sessions[id.index()].restart_time = t;
                }
            }
        }
    }

    // BGPPeers, in input order; each applies to some nodes and targets a peer.
    if calico_nodes {
        for peer in peers {
            let selected = b.selected_peers(peer);
            for local in b.locals(peer) {
                b.add_peer_sessions(peer, local, &selected);
            }
        }
    }

    // RFC 7938 fabric: eBGP over every ToR–spine and spine–core link.
    if topology.fabric.bgp {
        for (i, link) in topology.links.iter().enumerate() {
            if !matches!(link.kind, LinkKind::Fabric | LinkKind::InterZone) {
                continue;
            }
            if let (Some(&x), Some(&y)) = (b.by_device.get(&link.a), b.by_device.get(&link.b)) {
                b.add_pair(x, y, SessionSource::Fabric, false, Some(LinkId(i as u32)));
            }
        }
    }

    let mut peering = b.peering;
    set_latencies(topology, &mut peering);
    peering
}

/// Fills `latency` of every session, and marks those with no path Idle.
pub(crate) fn set_latencies(topology: &Topology, peering: &mut Peering) {
    let mut pairs = Vec::new();
    let mut which = Vec::new();
    for (i, s) in peering.sessions.iter_mut().enumerate() {
        let Some(b) = s.b else { continue };
        let (da, db) = (
            peering.speakers[s.a.index()].device,
            peering.speakers[b.index()].device,
        );
        if let Some(link) = s.link {
            let l = &topology.links[link.index()];
            s.latency = l.up.then_some(l.latency);
        } else {
            pairs.push((da, db));
            which.push(i);
        }
    }
    for (i, latency) in which.into_iter().zip(pair_latencies(topology, &pairs)) {
        peering.sessions[i].latency = latency;
    }
    for s in &mut peering.sessions {
        if s.b.is_some() && s.latency.is_none() && s.reason.is_none() {
            s.reason = Some(Box::new(if s.link.is_some() {
                IdleReason::LinkDown
            } else {
                IdleReason::NoUnderlayPath
            }));
        }
    }
}

struct Builder<'t> {
    topology: &'t Topology,
    peering: Peering,
    by_device: HashMap<DeviceId, SpeakerId>,
    by_address: HashMap<IpAddr, SpeakerId>,
    /// The pairs with a session, but those of the node-to-node mesh (`meshed`); looked up
    /// only, never iterated.
    pairs: FastMap<PairKey, SessionId>,
    /// By speaker: a member of the node-to-node mesh, which has a session with every other
    /// member (empty without the mesh).
    meshed: Vec<bool>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum PairKey {
    Speakers(SpeakerId, SpeakerId),
    Address(SpeakerId, IpAddr),
}

impl Builder<'_> {
    fn add_speaker(
        &mut self,
        device: DeviceId,
        node: Option<NodeId>,
        rack: Option<RackId>,
        as_number: u32,
        cluster_id: Option<IpAddr>,
        up: bool,
    ) {
        let d = self.topology.device(device);
        let id = SpeakerId(self.peering.speakers.len() as u32);
        self.by_device.insert(device, id);
        self.by_address.entry(d.address).or_insert(id);
        self.peering.speakers.push(Speaker {
            id,
            device,
            name: d.name.clone(),
            node,
            rack,
            as_number,
            router_id: d.address,
            address: d.address,
            cluster_id,
            up,
            hold_time: None,
        });
    }

    fn speaker(&self, id: SpeakerId) -> &Speaker {
        &self.peering.speakers[id.index()]
    }

    /// The node speakers a `BGPPeer` applies to (Calico: `node`, else `nodeSelector`, else
    /// every node).
    fn locals(&self, peer: &Peer) -> Vec<SpeakerId> {
        let nodes = self.peering.speakers.iter().filter(|s| !s.is_router());
        if let Some(name) = &peer.node {
            return nodes.filter(|s| &s.name == name).map(|s| s.id).collect();
        }
        match &peer.node_selector {
            Some(sel) => nodes
                .filter(|s| {
                    s.node
                        .is_some_and(|n| sel.matches(&self.topology.node(n).labels))
                })
                .map(|s| s.id)
                .collect(),
            None => nodes.map(|s| s.id).collect(),
        }
    }

    /// The node speakers a `BGPPeer`'s `peerSelector` selects (none without one), matched
    /// once rather than once per local node.
    fn selected_peers(&self, peer: &Peer) -> Vec<SpeakerId> {
        let Some(sel) = peer
            .peer_selector
            .as_ref()
            .filter(|_| peer.peer_ip.is_none())
        else {
            return Vec::new();
        };
        self.peering
            .speakers
            .iter()
            .filter(|s| {
                s.node
                    .is_some_and(|n| sel.matches(&self.topology.node(n).labels))
            })
            .map(|s| s.id)
            .collect()
    }

    fn add_peer_sessions(&mut self, peer: &Peer, local: SpeakerId, selected: &[SpeakerId]) {
        let source = SessionSource::Peer(peer.name.clone());
        let keep = peer.keep_original_next_hop;
        if let Some(address) = peer.peer_ip {
            match self.by_address.get(&address).copied() {
                Some(target) if target == local => {}
                Some(target) => {
                    let id = self.add_pair(local, target, source, keep, None);
                    self.set_restart_time(id, peer);
                    // confd gives a peering made from `peerIP` no `rr_cluster_id` (only the
                    // peerings it builds from a node carry one: `nodeAsBGPPeers`, client.go),
                    // so the template makes the peer an `rr client` of a reflector whatever
                    // the peer's own cluster ID; the reverse peering carries ours.
                    if let Some(id) = id
                        && self.speaker(local).node.is_some()
                        && self.speaker(local).cluster_id.is_some()
                    {
                        let s = &mut self.peering.sessions[id.index()];
                        if s.session_type == SessionType::Ibgp {
                            s.reflects[0] = true;
                        }
                    }
                    let actual = self.speaker(target).as_number;
                    if let (Some(id), Some(configured)) = (id, peer.as_number)
                        && configured != actual
                    {
                        let speaker = self.speaker(target).name.clone();
                        let s = &mut self.peering.sessions[id.index()];
                        s.reason
                            .get_or_insert(Box::new(IdleReason::AsNumberMismatch {
                                peer: peer.name.clone(),
                                configured,
                                speaker,
                                actual,
                            }));
                    }
                }
                None => {
                    let device = self
                        .topology
                        .devices
                        .iter()
                        .find(|d| d.address == address)
                        .map(|d| d.name.clone());
                    let reason = match device {
                        Some(device) => IdleReason::NotASpeaker {
                            peer: peer.name.clone(),
                            address,
                            device,
                        },
                        None => IdleReason::NoSpeakerAtAddress {
                            peer: peer.name.clone(),
                            address,
                        },
                    };
                    self.add_unreachable(local, address, source, reason, peer.as_number);
                }
            }
        } else {
            for &target in selected.iter().filter(|t| **t != local) {
                let id = self.add_pair(local, target, source.clone(), keep, None);
                self.set_restart_time(id, peer);
            }
        }
    }

    /// A BGPPeer's `maxRestartTime` on the session it made.
    fn set_restart_time(&mut self, id: Option<SessionId>, peer: &Peer) {
        if let (Some(id), Some(t)) = (id, peer.max_restart_time) {
            self.peering.sessions[id.index()].restart_time = t;
        }
    }

    fn add_unreachable(
        &mut self,
        local: SpeakerId,
        address: IpAddr,
        source: SessionSource,
        reason: IdleReason,
        peer_as: Option<u32>,
    ) {
        let key = PairKey::Address(local, address);
        if self.pairs.contains_key(&key) {
            return;
        }
        let id = SessionId(self.peering.sessions.len() as u32);
        self.pairs.insert(key, id);
        let session_type = if peer_as == Some(self.speaker(local).as_number) {
            SessionType::Ibgp
        } else {
            SessionType::Ebgp
        };
        self.peering.sessions.push(Session {
            id,
            a: local,
            b: None,
            b_address: address,
            session_type,
            reflects: [false; 2],
            keep_next_hop: [false; 2],
            multihop: true,
            link: None,
            shared_subnet: None,
            latency: None,
            source,
            restart_time: RESTART_TIME,
            state: SessionState::Idle,
            reason: Some(Box::new(reason)),
        });
    }

    /// Adds the session x–y unless the pair already has one; returns the new session.
    fn add_pair(
        &mut self,
        x: SpeakerId,
        y: SpeakerId,
        source: SessionSource,
        x_keeps_next_hop: bool,
        link: Option<LinkId>,
    ) -> Option<SessionId> {
        let key = PairKey::Speakers(x.min(y), x.max(y));
        let meshed = |s: SpeakerId| self.meshed.get(s.index()).copied().unwrap_or(false);
        if (x != y && meshed(x) && meshed(y)) || self.pairs.contains_key(&key) {
            return None;
        }
        let id = self.push_pair(x, y, source, x_keeps_next_hop, link);
        self.pairs.insert(key, id);
        Some(id)
    }

    /// Adds the session x–y, known to be new.
    fn push_pair(
        &mut self,
        x: SpeakerId,
        y: SpeakerId,
        source: SessionSource,
        x_keeps_next_hop: bool,
        link: Option<LinkId>,
    ) -> SessionId {
        let id = SessionId(self.peering.sessions.len() as u32);
        let (sx, sy) = (self.speaker(x), self.speaker(y));
        let ibgp = sx.as_number == sy.as_number;
        let reflects = [self.reflects(sx, sy, ibgp), self.reflects(sy, sx, ibgp)];
        let shared_subnet = match (sx.rack, sy.rack) {
            (Some(rx), Some(ry)) if rx == ry && !(sx.is_router() && sy.is_router()) => {
                Some(self.topology.racks[rx.index()].subnet)
            }
            _ => None,
        };
        let multihop = !(sx.is_router() && sy.is_router() && link.is_some());
        let b_address = sy.address;
        self.peering.sessions.push(Session {
            id,
            a: x,
            b: Some(y),
            b_address,
            session_type: if ibgp {
                SessionType::Ibgp
            } else {
                SessionType::Ebgp
            },
            reflects,
            keep_next_hop: [x_keeps_next_hop && !sx.is_router(), false],
            multihop,
            link,
            shared_subnet,
            latency: None,
            source,
            restart_time: RESTART_TIME,
            state: SessionState::Idle,
            reason: None,
        });
        id
    }

    /// Whether `x` treats `y` as its route-reflector client: a Calico reflector's iBGP peers
    /// without its cluster ID (Calico's BIRD template), a ToR's iBGP nodes of its own rack.
    fn reflects(&self, x: &Speaker, y: &Speaker, ibgp: bool) -> bool {
        if !ibgp {
            return false;
        }
        match self.topology.device(x.device).kind {
            DeviceKind::Tor(rack) => y.node.is_some() && y.rack == Some(rack),
            DeviceKind::Node(_) => x.cluster_id.is_some() && y.cluster_id != x.cluster_id,
            _ => false,
        }
    }
}
