//! Engine tests: small topologies driven by a local event loop (a heap of
//! `(time, sequence, event)`), as the simulator drives the engine.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap};
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;

use super::*;
use crate::model::Labels;
use crate::model::network::{Bfd, BgpSettings, TimerProfile};
use crate::model::selector::Selector;
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::{DeviceId, Fabric, LinkId, NewNode, NodeBgp, Os, Topology};

mod add_path;
mod lines;
mod reconfigure;
mod restart;
mod statics;
mod update_groups;

/// One rack: its node count and each node's Calico settings.
struct RackSpec {
    nodes: usize,
    node_bgp: fn(rack: usize, node: usize) -> NodeBgp,
}

/// Node 0 of each rack reflects, in cluster 1.1.1.1.
fn first_reflects(_: usize, i: usize) -> NodeBgp {
    NodeBgp {
        route_reflector_cluster_id: (i == 0).then(|| Ipv4Addr::new(1, 1, 1, 1)),
        ..NodeBgp::default()
    }
}

/// Nodes 0 and 1 of each rack reflect, in clusters 1.1.1.1 and 1.1.1.2.
fn two_clusters(_: usize, i: usize) -> NodeBgp {
    NodeBgp {
        route_reflector_cluster_id: (i < 2).then(|| Ipv4Addr::new(1, 1, 1, 1 + i as u8)),
        ..NodeBgp::default()
    }
}

/// The BGPPeer `to-rr`: every node peers with every node labelled `route-reflector`.
fn to_reflectors() -> Peer {
    let mut to_rr = Peer::named("to-rr");
    to_rr.peer_selector = Some(Selector::parse("has(route-reflector)").unwrap());
    to_rr
}

/// One rack of `nodes` nodes without the mesh, node 0 reflecting for the others (cluster
/// 1.1.1.1) through the BGPPeer `to-rr`, with Calico's BIRD timers.
fn one_reflector_net(nodes: usize) -> Net {
    reflector_per_rack_net(1, nodes)
}

/// `racks` racks of `nodes` nodes without the mesh, node 0 of each reflecting (one cluster,
/// 1.1.1.1) for every node through the BGPPeer `to-rr`, with Calico's BIRD timers.
fn reflector_per_rack_net(racks: usize, nodes: usize) -> Net {
    let specs: Vec<RackSpec> = (0..racks)
        .map(|_| RackSpec {
            nodes,
            node_bgp: first_reflects,
        })
        .collect();
    let t = topology(&specs, false);
    Net::new(t, &no_mesh(), &[to_reflectors()], TimerProfile::CalicoBird)
}

fn plain(_: usize, _: usize) -> NodeBgp {
    NodeBgp::default()
}

/// One rack of `nodes` plain nodes (no reflectors) and a fabric that does not speak BGP.
fn one_rack(nodes: usize) -> Topology {
    topology(
        &[RackSpec {
            nodes,
            node_bgp: plain,
        }],
        false,
    )
}

/// One zone of racks `r0, r1, ...` (subnet 10.<r>.0.0/24, gateway .1, nodes `r<r>n<i>` at
/// .10 + i, ToR AS 65101 + r), one spine (AS 65100, loopback 100.127.0.2).
fn topology(racks: &[RackSpec], fabric_bgp: bool) -> Topology {
    let mut t = Topology::new(Fabric {
        bgp: fabric_bgp,
        ..Fabric::default()
    });
    let zone = t.add_zone("z", Labels::new(), 65100);
    for (r, spec) in racks.iter().enumerate() {
        let rack = t.add_rack(
            zone,
            &format!("r{r}"),
            format!("10.{r}.0.0/24").parse().unwrap(),
            IpAddr::from([10, r as u8, 0, 1]),
            Labels::new(),
            65101 + r as u32,
        );
        for i in 0..spec.nodes {
            let mut labels = Labels::new();
            labels.insert("rack".into(), format!("r{r}"));
            let bgp = (spec.node_bgp)(r, i);
            if bgp.route_reflector_cluster_id.is_some() {
                labels.insert("route-reflector".into(), "true".into());
            }
            t.add_node(
                rack,
                NewNode {
                    name: format!("r{r}n{i}"),
                    ip: IpAddr::from([10, r as u8, 0, 10 + i as u8]),
                    os: Os::Linux,
                    max_pods: 110,
                    labels,
                    bgp,
                },
            );
        }
    }
    let loopbacks: BTreeMap<String, IpAddr> = [
        ("core".to_string(), IpAddr::from([100, 127, 0, 1])),
        ("spine-z-1".to_string(), IpAddr::from([100, 127, 0, 2])),
    ]
    .into_iter()
    .collect();
    t.add_fabric(&loopbacks, 65000);
    t
}

fn settings() -> BgpSettings {
    BgpSettings {
        processing_delay: SimDuration::from_micros(20),
        per_prefix_delay: SimDuration::from_micros(2),
        bfd: None,
    }
}

fn cidr(s: &str) -> IpNet {
    s.parse().unwrap()
}

fn ip(s: &str) -> IpAddr {
    s.parse().unwrap()
}

fn secs(s: u64) -> SimTime {
    SimTime::ZERO + SimDuration::from_secs(s)
}

/// The tiny event loop of these tests.
struct Net {
    topology: Topology,
    engine: BgpEngine,
    queue: BinaryHeap<Reverse<(SimTime, u64, BgpEvent)>>,
    seq: u64,
    now: SimTime,
    handled: usize,
    log: Vec<BgpLogEntry>,
}

/// What the engine schedules handling `e` at `t` (into a buffer of its own, where the
/// simulator reuses one).
fn handle(engine: &mut BgpEngine, t: SimTime, e: BgpEvent) -> Scheduled {
    let mut out = Vec::new();
    engine.handle(t, e, &mut out);
    out
}

impl Net {
    fn new(topology: Topology, config: &BgpConfig, peers: &[Peer], timers: TimerProfile) -> Net {
        Net::with(topology, config, peers, timers, settings())
    }

    fn with(
        topology: Topology,
        config: &BgpConfig,
        peers: &[Peer],
        timers: TimerProfile,
        settings: BgpSettings,
    ) -> Net {
        let peering = plan(&topology, config, peers, true);
        let mut engine = BgpEngine::new(&topology, peering, Timers::for_profile(timers), &settings);
        let pools = vec![ExportPool {
            cidr: cidr("10.240.0.0/12"),
            disable_bgp_export: false,
        }];
        let mut net = Net {
            topology,
            engine: BgpEngine::new(
                &Topology::default(),
                Peering::default(),
                Timers::for_profile(timers),
                &settings,
            ),
            queue: BinaryHeap::new(),
            seq: 0,
            now: SimTime::ZERO,
            handled: 0,
            log: Vec::new(),
        };
        let evs = engine.set_pools(SimTime::ZERO, pools);
        net.engine = engine;
        net.push(evs);
        let evs = net.engine.start(SimTime::ZERO);
        net.push(evs);
        net
    }

    fn push(&mut self, events: Scheduled) {
        for (t, e) in events {
            assert!(t >= self.now, "the engine scheduled {e:?} in the past");
            self.queue.push(Reverse((t, self.seq, e)));
            self.seq += 1;
        }
    }

    /// Handles every event up to and including `until`; then the clock reads `until`.
    fn run_until(&mut self, until: SimTime) {
        while let Some(Reverse((t, _, _))) = self.queue.peek() {
            if *t > until {
                break;
            }
            let Reverse((t, _, e)) = self.queue.pop().unwrap();
            self.now = t;
            let evs = handle(&mut self.engine, t, e);
            self.handled += 1;
            self.push(evs);
        }
        self.now = until;
        self.log.extend(self.engine.log());
    }

    /// Runs until nothing is left (bounded, so a livelock fails the test).
    fn settle(&mut self) {
        while let Some(Reverse((t, _, _))) = self.queue.peek() {
            let t = *t;
            assert!(t < secs(100_000), "the network never settles");
            self.run_until(t);
        }
    }

    /// Takes the speakers of `nodes` down (`up` false) or brings them back, all at this
    /// instant, and lets everything settle.
    fn set_speakers(&mut self, nodes: &[&str], up: bool) {
        for node in nodes {
            let d = self.dev(node);
            let evs = match up {
                true => self.engine.speaker_up(self.now, d),
                false => self.engine.speaker_down(self.now, d),
            };
            self.push(evs);
        }
        self.settle();
    }

    fn dev(&self, name: &str) -> DeviceId {
        self.topology.device_by_name(name).expect(name)
    }

    /// Takes the link between two devices down and returns the topology to hand to
    /// `link_changed`.
    /// Takes the link between `a` and `b` down: the topology after it, and the link.
    fn cut(&mut self, a: &str, b: &str) -> (Topology, LinkId) {
        let link = self
            .topology
            .link_between(self.dev(a), self.dev(b))
            .unwrap();
        self.topology.set_link_up(link, false);
        (self.topology.clone(), link)
    }

    fn originate(&mut self, node: &str, prefix: &str) {
        let d = self.dev(node);
        let evs = self.engine.originate(self.now, d, cidr(prefix));
        self.push(evs);
    }

    fn best(&self, node: &str, prefix: &str) -> Option<BestRoute> {
        self.engine
            .best_routes(self.dev(node))
            .into_iter()
            .find(|r| r.prefix == cidr(prefix))
    }

    fn entry(&self, node: &str, prefix: &str) -> Option<RibEntry> {
        self.engine
            .loc_rib(self.dev(node))
            .into_iter()
            .find(|r| r.prefix == cidr(prefix))
    }

    fn next_hop_name(&self, node: &str, prefix: &str) -> Option<String> {
        let r = self.best(node, prefix)?;
        Some(self.topology.device(r.next_hop_device?).name.clone())
    }

    fn session_between(&self, a: &str, b: &str) -> &Session {
        let (a, b) = (self.dev(a), self.dev(b));
        self.engine
            .sessions()
            .find(|s| {
                let ends: Vec<DeviceId> = std::iter::once(s.a)
                    .chain(s.b)
                    .map(|x| self.engine.speakers()[x.index()].device)
                    .collect();
                ends.contains(&a) && ends.contains(&b)
            })
            .expect("a session between them")
    }
}

fn no_mesh() -> BgpConfig {
    BgpConfig {
        as_number: 64512,
        node_to_node_mesh: false,
        node_mesh_restart_time: None,
    }
}

fn block(r: usize, i: usize) -> String {
    format!("10.244.{}.0/26", r * 16 + i)
}

#[test]
fn a_mesh_of_n_nodes_has_n_choose_2_sessions_and_converges() {
    for n in [2usize, 5, 8] {
        let t = one_rack(n);
        let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
        assert_eq!(net.engine.sessions().count(), n * (n - 1) / 2);
        for i in 0..n {
            net.originate(&format!("r0n{i}"), &block(0, i));
        }
        net.settle();
        assert_eq!(net.engine.established_sessions(), n * (n - 1) / 2);
        for i in 0..n {
            let node = format!("r0n{i}");
            assert_eq!(net.engine.rib_size(net.dev(&node)), n);
            for j in 0..n {
                let owner = format!("r0n{j}");
                let expected = if i == j { node.clone() } else { owner.clone() };
                assert_eq!(net.next_hop_name(&node, &block(0, j)), Some(expected));
            }
        }
        // Sessions come up one connect delay plus one round trip after the start.
        let up = net
            .log
            .iter()
            .find(|e| e.kind == BgpLogKind::SessionEstablished)
            .unwrap();
        assert_eq!(
            up.time,
            secs(2) + SimDuration::from_micros(40),
            "Calico's connect delay 2s (no jitter source: exact) + RTT 2 × 20us"
        );
        // Every node sent its block once to each peer, in one UPDATE per session.
        assert_eq!(net.engine.total_updates() as usize, n * (n - 1));
    }
}

/// Prefetching (`engine/prefetch.rs`) is a hint the simulator gives before every event: it
/// must be harmless for any event, also one whose payload was already taken (a delivery or a
/// message handled) and ids the engine never gave out, and it changes nothing.
#[test]
fn prefetching_any_event_even_a_stale_one_is_harmless() {
    let mut net = Net::new(
        one_rack(4),
        &BgpConfig::default(),
        &[],
        TimerProfile::CalicoBird,
    );
    for i in 0..4 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    let mut handled = 0;
    while let Some(Reverse((t, _, e))) = net.queue.pop() {
        net.now = t;
        net.engine.prefetch(&e);
        let evs = handle(&mut net.engine, t, e);
        // Handled: a batch's or a message's slot is empty now.
        net.engine.prefetch(&e);
        handled += 1;
        net.push(evs);
    }
    let unknown = BatchId(10_000);
    for e in [
        BgpEvent::SessionEstablished {
            session: SessionId(10_000),
            epoch: 0,
        },
        BgpEvent::Deliver { batch: unknown },
        BgpEvent::ProcessNext { message: unknown },
        BgpEvent::ProcessMany { batch: unknown },
    ] {
        net.engine.prefetch(&e);
    }
    // 6 sessions up, each with 2 full tables delivered and processed.
    assert!(handled >= 6 * 2);
    assert_eq!(net.engine.established_sessions(), 6);
    for i in 0..4 {
        assert_eq!(net.engine.rib_size(net.dev(&format!("r0n{i}"))), 4);
    }
}

#[test]
fn changes_decided_in_one_instant_leave_in_one_update_per_peer() {
    let t = one_rack(3);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    net.run_until(secs(5));
    let before = net.engine.total_updates();
    net.originate("r0n0", "10.244.0.0/26");
    net.originate("r0n0", "10.244.0.64/26");
    net.originate("r0n0", "10.244.1.5/32");
    net.settle();
    assert_eq!(
        net.engine.total_updates() - before,
        2,
        "one UPDATE to each of 2 peers"
    );
    let update = net
        .log
        .iter()
        .find(|e| e.kind == BgpLogKind::Update)
        .unwrap();
    assert_eq!(
        update.outcome,
        "announce 10.244.0.0/26 10.244.0.64/26 10.244.1.5/32"
    );
}

/// Route reflector test bed. `same_cluster`: r0n0..r0n2 reflect for cluster 1.1.1.1;
/// otherwise r0n0 and r0n1 reflect for clusters 1.1.1.1 and 1.1.1.2. The other nodes are
/// clients; every node peers with every reflector.
fn reflected(nodes: usize, same_cluster: bool) -> Net {
    fn one(_: usize, i: usize) -> NodeBgp {
        NodeBgp {
            route_reflector_cluster_id: (i < 3).then(|| Ipv4Addr::new(1, 1, 1, 1)),
            ..NodeBgp::default()
        }
    }
    fn two(_: usize, i: usize) -> NodeBgp {
        NodeBgp {
            route_reflector_cluster_id: (i < 2).then(|| Ipv4Addr::new(1, 1, 1, 1 + i as u8)),
            ..NodeBgp::default()
        }
    }
    let t = topology(
        &[RackSpec {
            nodes,
            node_bgp: if same_cluster { one } else { two },
        }],
        false,
    );
    let to_rr = to_reflectors();
    Net::new(t, &no_mesh(), &[to_rr], TimerProfile::CalicoBird)
}

#[test]
fn a_reflector_sends_client_routes_to_everyone_and_same_cluster_reflectors_keep_each_other() {
    // r0n0..r0n2: reflectors of cluster 1.1.1.1; r0n3, r0n4: clients.
    let mut net = reflected(5, true);
    // 2 clients × 3 reflectors + 3 reflector pairs.
    assert_eq!(net.engine.sessions().count(), 9);
    let rr_rr = net.session_between("r0n0", "r0n1");
    assert!(!rr_rr.reflector_client(), "same cluster: non-clients");
    let client = net.session_between("r0n0", "r0n3");
    // The client's BGPPeer created it: side 0 is the client, side 1 the reflector.
    assert_eq!(client.reflects, [false, true]);
    net.originate("r0n3", "10.244.3.0/26");
    net.settle();
    // The other client hears it from all three reflectors; all carry the originator and the
    // cluster, so the lowest peer address decides.
    let e = net.entry("r0n4", "10.244.3.0/26").unwrap();
    assert_eq!(e.routes.len(), 3);
    let best = &e.routes[0];
    assert_eq!(
        best.status,
        RouteStatus::Best(BestBecause::Over(LostBecause::PeerAddress))
    );
    assert_eq!(best.from, Some(net.dev("r0n0")));
    assert_eq!(best.attrs.originator_id, Some(ip("10.0.0.13")));
    assert_eq!(best.attrs.cluster_list, [ip("1.1.1.1")]);
    assert_eq!(net.next_hop_name("r0n4", "10.244.3.0/26").unwrap(), "r0n3");
    // BIRD checks CLUSTER_LIST on import only on `rr client` sessions (REFERENCE §4.2), so a
    // reflector keeps what its two same-cluster partners (plain iBGP peers) reflect to it:
    // the client's own announcement plus r0n0's and r0n2's reflections, each with
    // CLUSTER_LIST [1.1.1.1]. All three have ORIGINATOR_ID (or peer ID) 10.0.0.13, so the
    // shorter CLUSTER_LIST decides for the direct one (RFC 4456 §9b).
    let e = net.entry("r0n1", "10.244.3.0/26").unwrap();
    assert_eq!(e.routes.len(), 3, "the client's own and two reflections");
    assert_eq!(e.routes[0].from, Some(net.dev("r0n3")));
    for lost in &e.routes[1..] {
        assert_eq!(lost.attrs.cluster_list, [ip("1.1.1.1")]);
        assert_eq!(
            lost.status,
            RouteStatus::Lost(LostBecause::ClusterListLength)
        );
    }
    assert!(
        !net.log.iter().any(|l| l.kind == BgpLogKind::RouteRejected),
        "nothing is rejected on a non-client session"
    );
}

/// r0n0..r0n2 reflect for the clients r0n3..r0n6 (one cluster); r0n3's block is known
/// everywhere, then r0n4..r0n6 go down (to come back in the test).
fn clients_gone_after_a_block() -> Net {
    let mut net = reflected(7, true);
    net.originate("r0n3", "10.244.3.0/26");
    net.settle();
    net.set_speakers(&["r0n4", "r0n5", "r0n6"], false);
    net
}

#[test]
fn a_reflector_shares_one_exported_route_among_the_full_tables_of_its_clients() {
    // r0n0..r0n2 reflect for the clients r0n3..r0n6. The clients r0n4..r0n6 go down and come
    // back once r0n3's block is known everywhere, so each reflector sends the block in the
    // full table of each returning client's session, at instants the jitter spreads apart.
    // The attributes are the same for every client of one reflector (same ORIGINATOR_ID,
    // CLUSTER_LIST and next hop), so the three clients hold one shared copy per reflector:
    // a reflector of n clients keeps one copy of each route, not n (issue #20, where
    // copies per client took rr-5000 from 2.7 to 9 GiB).
    let mut net = clients_gone_after_a_block();
    assert!(net.entry("r0n4", "10.244.3.0/26").is_none(), "down: forgot");
    net.set_speakers(&["r0n4", "r0n5", "r0n6"], true);
    let from = |client: &str, rr: &str| {
        let e = net.entry(client, "10.244.3.0/26").expect("learned again");
        let route = e.routes.iter().find(|r| r.from == Some(net.dev(rr)));
        route.expect("from every reflector").attrs.clone()
    };
    for rr in ["r0n0", "r0n1", "r0n2"] {
        let a = from("r0n4", rr);
        assert_eq!(a.cluster_list, [ip("1.1.1.1")]);
        for client in ["r0n5", "r0n6"] {
            assert!(
                std::sync::Arc::ptr_eq(&a, &from(client, rr)),
                "{client} holds its own copy of {rr}'s route"
            );
        }
    }
}

#[test]
fn clients_coming_up_while_nothing_changes_are_sent_one_shared_full_table() {
    // As above: r0n0..r0n2 reflect for r0n3..r0n6, and only r0n3 originates. r0n4..r0n6 go
    // down and come back; their sessions come up at instants the jitter spreads apart, and
    // nothing a reflector advertises changes in between (the returning clients originate
    // nothing). So each reflector walks its table once, for the first of the three, and
    // sends the next two that very body: 3 tables built for 9 sessions, where building one
    // per session would be 9.
    let mut net = clients_gone_after_a_block();
    let before = net.engine.full_tables_built;
    net.set_speakers(&["r0n4", "r0n5", "r0n6"], true);
    assert_eq!(net.engine.full_tables_built - before, 3);
    for c in ["r0n4", "r0n5", "r0n6"] {
        let e = net.entry(c, "10.244.3.0/26").expect("learned again");
        assert_eq!(
            e.routes.len(),
            3,
            "{c} hears the block from every reflector"
        );
    }
}

#[test]
fn a_reflector_flushing_what_no_client_may_get_looks_at_no_session() {
    // r0n0..r0n2 reflect for the clients r0n3..r0n6 (one cluster, 1.1.1.1, peered as plain
    // iBGP as Calico does); r0n3 originates a block. Each reflector keeps what its two
    // partners reflect to it (CLUSTER_LIST [1.1.1.1], lost to the client's own
    // announcement, as `a_reflector_sends_client_routes_to_everyone_and_same_cluster_
    // reflectors_keep_each_other` shows), so its ADD-PATH advertisement of the block gains
    // and loses those candidates as r0n1 goes down and comes back. Such a change is for
    // nobody: BIRD refuses on export to a client a route whose CLUSTER_LIST holds the
    // client session's cluster ID (every client session of a reflector has the reflector's),
    // a route from a non-client goes to no non-client, and the best route stays the
    // client's. So r0n0 and r0n2 flush the block (their candidates changed) and look at
    // none of their six sessions; visiting every list either advertisement could reach
    // (what they did before) looked at all six each time.
    let mut net = reflected(7, true);
    net.originate("r0n3", "10.244.3.0/26");
    net.settle();
    let before: Vec<(u64, u64)> = ["r0n0", "r0n2"]
        .iter()
        .map(|n| {
            let s = net.engine.by_device[&net.dev(n)];
            net.engine.flushes.get(&s).copied().unwrap_or_default()
        })
        .collect();
    for up in [false, true] {
        net.set_speakers(&["r0n1"], up);
    }
    for (n, (flushes, looked_at)) in ["r0n0", "r0n2"].into_iter().zip(before) {
        let s = net.engine.by_device[&net.dev(n)];
        let (f, l) = net.engine.flushes[&s];
        assert!(f > flushes, "{n} flushed the block again");
        assert_eq!(l, looked_at, "{n} looked at no session");
    }
    // The clients hold the block from every reflector again, r0n1's included.
    for c in ["r0n4", "r0n5", "r0n6"] {
        let e = net.entry(c, "10.244.3.0/26").expect("learned");
        assert_eq!(e.routes.len(), 3, "{c}: one route per reflector");
    }
}

#[test]
fn clients_finishing_one_reflected_announcement_together_take_its_steps_once() {
    // r0n0..r0n2 reflect for the clients r0n3..r0n11, and the clients originate a block
    // each, one after another, once the sessions are up. Each reflector's announcement of
    // a block reaches its other eight clients at one instant (one latency, one processing
    // delay each), so they finish it in one group (`ProcessMany`), where each is a plain
    // speaker applying one announcement (`finish_plain`) when nothing is queued behind it
    // (the other reflectors' copies of the block may be): the group's receivers in a state
    // an earlier one was in take that one's step (`GroupSteps`). Every RIB and log line is
    // what the same cluster gives with shared states off, where every speaker computes
    // every step itself and no message takes that path.
    let clients: Vec<String> = (3..12).map(|i| format!("r0n{i}")).collect();
    let run = |shared: bool| {
        let mut net = reflected(12, true);
        net.engine.set_shared_states(shared);
        net.settle();
        for (i, c) in clients.iter().enumerate() {
            net.originate(c, &block(1, i));
            net.settle();
        }
        net
    };
    let (net, alone) = (run(true), run(false));
    let (finished, reused) = net.engine.plain_finished;
    assert!(finished > 0, "no message finished on the plain path");
    assert!(
        reused > 0,
        "no step taken from an earlier receiver of the group"
    );
    assert_eq!(alone.engine.plain_finished, (0, 0));
    for c in &clients {
        for (i, origin) in clients.iter().enumerate() {
            let (a, b) = (net.entry(c, &block(1, i)), alone.entry(c, &block(1, i)));
            assert_eq!(format!("{a:?}"), format!("{b:?}"), "{c}, block {i}");
            // Its own block (the local route), or the block from each reflector.
            let routes = if c == origin { 1 } else { 3 };
            assert_eq!(a.expect("learned").routes.len(), routes, "{c}, block {i}");
        }
    }
    assert_eq!(format!("{:?}", net.log), format!("{:?}", alone.log));
}

#[test]
fn a_client_of_one_reflector_is_reached_through_the_other_reflector_of_its_cluster() {
    // r0n0 and r0n1 reflect for cluster 1.1.1.1 and peer as plain iBGP (Calico: same cluster
    // ID, no `rr client`). r0n2 peers with both; r0n3 (asymmetric) with r0n0 only.
    let t = topology(
        &[RackSpec {
            nodes: 4,
            node_bgp: |_, i| NodeBgp {
                route_reflector_cluster_id: (i < 2).then(|| Ipv4Addr::new(1, 1, 1, 1)),
                ..NodeBgp::default()
            },
        }],
        false,
    );
    let mut rr = Peer::named("rr-mesh");
    rr.node = Some("r0n0".into());
    rr.peer_ip = Some(ip("10.0.0.11"));
    let mut both = Peer::named("n2-to-rrs");
    both.node = Some("r0n2".into());
    both.peer_selector = Some(Selector::parse("has(route-reflector)").unwrap());
    let mut one = Peer::named("n3-to-rr0");
    one.node = Some("r0n3".into());
    one.peer_ip = Some(ip("10.0.0.10"));
    let mut net = Net::new(t, &no_mesh(), &[rr, both, one], TimerProfile::CalicoBird);
    assert_eq!(net.engine.sessions().count(), 4);
    for i in 0..4 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.settle();
    // r0n1 hears r0n3's block only from r0n0, reflected with CLUSTER_LIST [1.1.1.1] — its
    // own cluster ID. The session to r0n0 is not `rr client`, so BIRD keeps and uses it; the
    // old reading of RFC 4456 §8 (drop on import) left r0n1 with no route to r0n3.
    let e = net.entry("r0n1", &block(0, 3)).unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(e.routes[0].from, Some(net.dev("r0n0")));
    assert_eq!(e.routes[0].attrs.cluster_list, [ip("1.1.1.1")]);
    assert_eq!(e.routes[0].attrs.originator_id, Some(ip("10.0.0.13")));
    assert_eq!(net.next_hop_name("r0n1", &block(0, 3)).unwrap(), "r0n3");
    // r0n1 does not pass it to its client r0n2 (the CLUSTER_LIST holds the client
    // session's cluster ID: BIRD refuses it on export); r0n2 has it from r0n0 alone.
    let e = net.entry("r0n2", &block(0, 3)).unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(e.routes[0].from, Some(net.dev("r0n0")));
    // r0n0's session to r0n1 comes from r0n0's own `peerIP` BGPPeer, which confd renders
    // with no `rr_cluster_id`: on r0n0's side it is `rr client` (the reverse, on r0n1, is
    // not). So r0n0 refuses on import the copy of r0n2's block that r0n1 reflects (its
    // CLUSTER_LIST holds 1.1.1.1) and has that block from r0n2 alone.
    let e = net.entry("r0n0", &block(0, 2)).unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(e.routes[0].from, Some(net.dev("r0n2")));
    // r0n3 reaches everyone through r0n0: r0n1's own block (a client route at r0n0,
    // reflected to all) and r0n2's (a client route).
    for (i, owner) in [(1, "r0n1"), (2, "r0n2")] {
        assert_eq!(net.next_hop_name("r0n3", &block(0, i)).unwrap(), owner);
    }
    // Every node has every block.
    for i in 0..4 {
        assert_eq!(net.engine.rib_size(net.dev(&format!("r0n{i}"))), 4);
    }
}

#[test]
fn a_reflector_sends_non_client_routes_to_clients_only() {
    let mut net = reflected(5, true);
    // r0n1 (a reflector, so a non-client of r0n0 and r0n2) originates a prefix.
    net.originate("r0n1", "10.244.1.0/26");
    net.settle();
    // r0n0 learned it from a non-client: it passes it to its clients...
    let e = net.entry("r0n3", "10.244.1.0/26").unwrap();
    let froms: Vec<_> = e.routes.iter().map(|r| r.from).collect();
    assert!(froms.contains(&Some(net.dev("r0n0"))));
    // ...but not to the other non-client r0n2, which has it from r0n1 alone.
    let e = net.entry("r0n2", "10.244.1.0/26").unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(e.routes[0].from, Some(net.dev("r0n1")));
}

#[test]
fn two_clusters_reflect_through_each_other_without_loops() {
    // r0n0 in cluster 1.1.1.1, r0n1 in cluster 1.1.1.2: each is the other's client.
    let t = topology(
        &[RackSpec {
            nodes: 4,
            node_bgp: two_clusters,
        }],
        false,
    );
    // r0n2 peers with r0n0 only, r0n3 with r0n1 only; the reflectors peer with each other.
    let mut p2 = Peer::named("n2-to-rr0");
    p2.node = Some("r0n2".into());
    p2.peer_ip = Some(ip("10.0.0.10"));
    let mut p3 = Peer::named("n3-to-rr1");
    p3.node = Some("r0n3".into());
    p3.peer_ip = Some(ip("10.0.0.11"));
    let mut rr = Peer::named("rr-to-rr");
    rr.node = Some("r0n0".into());
    rr.peer_ip = Some(ip("10.0.0.11"));
    let mut net = Net::new(t, &no_mesh(), &[p2, p3, rr], TimerProfile::CalicoBird);
    let s = net.session_between("r0n0", "r0n1");
    assert_eq!(s.reflects, [true, true]);
    net.originate("r0n2", "10.244.2.0/26");
    net.originate("r0n3", "10.244.3.0/26");
    net.settle();
    let e = net.entry("r0n3", "10.244.2.0/26").unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(
        e.routes[0].attrs.cluster_list,
        [ip("1.1.1.2"), ip("1.1.1.1")]
    );
    assert_eq!(e.routes[0].attrs.originator_id, Some(ip("10.0.0.12")));
    let e = net.entry("r0n2", "10.244.3.0/26").unwrap();
    assert_eq!(
        e.routes[0].attrs.cluster_list,
        [ip("1.1.1.1"), ip("1.1.1.2")]
    );
    // Nothing came back to a reflector carrying its own cluster (the settle() above also
    // proves nothing circulates forever).
    let e = net.entry("r0n0", "10.244.2.0/26").unwrap();
    assert_eq!(e.routes.len(), 1);
}

/// AS per rack: nodes share their ToR's AS and peer with it (iBGP, the ToR reflects).
fn as_per_rack_peers() -> Vec<Peer> {
    (0..2)
        .map(|r| {
            let mut p = Peer::named(&format!("rack{r}-tor"));
            p.node_selector = Some(Selector::parse(&format!("rack == 'r{r}'")).unwrap());
            p.peer_ip = Some(IpAddr::from([10, r as u8, 0, 1]));
            p.as_number = Some(65101 + r as u32);
            p
        })
        .collect()
}

#[test]
fn as_per_rack_carries_a_pod_block_across_racks_and_keeps_third_party_next_hops() {
    let t = topology(
        &[
            RackSpec {
                nodes: 2,
                node_bgp: |r, _| NodeBgp {
                    as_number: Some(65101 + r as u32),
                    ..NodeBgp::default()
                },
            },
            RackSpec {
                nodes: 2,
                node_bgp: |r, _| NodeBgp {
                    as_number: Some(65101 + r as u32),
                    ..NodeBgp::default()
                },
            },
        ],
        true,
    );
    let mut net = Net::new(
        t,
        &no_mesh(),
        &as_per_rack_peers(),
        TimerProfile::CalicoBird,
    );
    let s = net.session_between("r0n0", "tor-r0");
    assert_eq!(s.session_type, SessionType::Ibgp);
    assert!(s.reflector_client());
    assert_eq!(
        net.session_between("tor-r0", "spine-z-1").session_type,
        SessionType::Ebgp
    );
    net.originate("r0n0", "10.244.0.0/26");
    net.settle();
    assert_eq!(net.engine.established_sessions(), 2 + 2 + 2);
    // Across racks: through the fabric, next hop the local ToR.
    let e = net.entry("r1n1", "10.244.0.0/26").unwrap();
    assert_eq!(e.routes[0].attrs.as_path, [65100, 65101]);
    assert_eq!(
        net.next_hop_name("r1n1", "10.244.0.0/26").unwrap(),
        "tor-r1"
    );
    // Within the rack: reflected by the ToR with the originating node as next hop.
    let e = net.entry("r0n1", "10.244.0.0/26").unwrap();
    assert_eq!(e.routes[0].attrs.next_hop, ip("10.0.0.10"));
    assert_eq!(e.routes[0].attrs.originator_id, Some(ip("10.0.0.10")));
    assert_eq!(e.routes[0].attrs.cluster_list, [ip("10.0.0.1")]);
    assert_eq!(
        net.next_hop_name("spine-z-1", "10.244.0.0/26").unwrap(),
        "tor-r0"
    );
}

#[test]
fn as_per_node_carries_a_pod_block_over_ebgp_and_rejects_as_path_loops() {
    let per_node = |r: usize, i: usize| NodeBgp {
        // r0n0 and r1n1 share AS 64600: the route between them would loop.
        as_number: Some(if (r, i) == (1, 1) {
            64600
        } else {
            64600 + 10 * r as u32 + i as u32
        }),
        ..NodeBgp::default()
    };
    let t = topology(
        &[
            RackSpec {
                nodes: 2,
                node_bgp: per_node,
            },
            RackSpec {
                nodes: 2,
                node_bgp: per_node,
            },
        ],
        true,
    );
    let mut net = Net::new(
        t,
        &no_mesh(),
        &as_per_rack_peers(),
        TimerProfile::CalicoBird,
    );
    assert_eq!(
        net.session_between("r0n0", "tor-r0").session_type,
        SessionType::Ebgp
    );
    net.originate("r0n0", "10.244.0.0/26");
    net.settle();
    let e = net.entry("r1n0", "10.244.0.0/26").unwrap();
    assert_eq!(e.routes[0].attrs.as_path, [65102, 65100, 65101, 64600]);
    assert_eq!(
        net.next_hop_name("r1n0", "10.244.0.0/26").unwrap(),
        "tor-r1"
    );
    // Same rack over eBGP: the ToR keeps the third-party next hop.
    let e = net.entry("r0n1", "10.244.0.0/26").unwrap();
    assert_eq!(e.routes[0].attrs.as_path, [65101, 64600]);
    assert_eq!(net.next_hop_name("r0n1", "10.244.0.0/26").unwrap(), "r0n0");
    // r1n1 is in AS 64600 too: the route is never sent to it.
    assert!(net.entry("r1n1", "10.244.0.0/26").is_none());
    assert!(net.best("tor-r1", "10.244.0.0/26").is_some());
}

#[test]
fn a_crashed_peer_is_detected_after_the_hold_time_or_bfd() {
    // Sessions come up at E = 2s + 40us (connect delay, round trip of 2 × 20us); r0n2's
    // block leaves in the first UPDATE at E and arrives at E + 20us. r0n2 crashes at 10s.
    // Hold timer (SPEC §3.4): restarted by every message; r0n2's last message is that UPDATE
    // (its first KEEPALIVE would be at E + 80s), so r0n0 detects at E + 20us + 240s =
    // 242.00006s, well before 10s + 240s. BFD: 1.5s after the crash, and then the routes
    // stay stale for the 120s restart time (`bfd graceful`).
    for (bfd, detected_at) in [
        (None, secs(242) + SimDuration::from_micros(60)),
        (
            Some(Bfd::DEFAULT),
            secs(10) + SimDuration::from_millis(1500),
        ),
    ] {
        let t = one_rack(3);
        let s = BgpSettings { bfd, ..settings() };
        let mut net = Net::with(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird, s);
        net.originate("r0n2", "10.244.2.0/26");
        net.run_until(secs(10));
        assert!(net.best("r0n0", "10.244.2.0/26").is_some());
        let d = net.dev("r0n2");
        let evs = net.engine.speaker_down(net.now, d);
        net.push(evs);
        let just_before =
            SimTime::ZERO + SimDuration::from_nanos((detected_at - SimTime::ZERO).as_nanos() - 1);
        net.run_until(just_before);
        assert!(
            net.best("r0n0", "10.244.2.0/26").is_some(),
            "not yet detected"
        );
        assert_eq!(
            net.session_between("r0n0", "r0n2").state,
            SessionState::Established
        );
        net.run_until(detected_at);
        // BFD on Calico nodes is `bfd graceful`: the routes stay stale for the restart time.
        let gone = match bfd {
            Some(_) => detected_at + super::restart::RESTART_TIME,
            None => detected_at,
        };
        net.run_until(gone);
        assert!(
            net.best("r0n0", "10.244.2.0/26").is_none(),
            "detected at {detected_at}, gone at {gone}"
        );
        let s = net.session_between("r0n0", "r0n2");
        assert_eq!(s.state, SessionState::Idle);
        assert_eq!(s.reason.as_ref().unwrap().to_string(), "r0n2 is down");
        // Nothing periodic is left: the down node's sessions wait for it.
        net.settle();
        assert!(net.queue.is_empty());
        // Back up: sessions re-establish and the block is announced again.
        let evs = net.engine.speaker_up(net.now, d);
        net.push(evs);
        net.settle();
        assert_eq!(net.next_hop_name("r0n0", "10.244.2.0/26").unwrap(), "r0n2");
        assert_eq!(net.engine.established_sessions(), 3);
    }
}

#[test]
fn a_borrowed_address_is_exported_by_the_borrower_and_the_owner_keeps_its_block() {
    let t = one_rack(3);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    net.originate("r0n0", "10.244.0.0/26");
    net.originate("r0n1", "10.244.0.64/26");
    net.originate("r0n1", "10.244.0.5/32");
    net.settle();
    assert_eq!(net.next_hop_name("r0n2", "10.244.0.0/26").unwrap(), "r0n0");
    assert_eq!(net.next_hop_name("r0n2", "10.244.0.5/32").unwrap(), "r0n1");
    assert_eq!(net.next_hop_name("r0n0", "10.244.0.5/32").unwrap(), "r0n1");
    let own = net.best("r0n0", "10.244.0.0/26").unwrap();
    assert!(own.local);
}

#[test]
fn a_reflector_owning_the_block_does_not_reflect_a_borrowed_address_inside_it() {
    // REFERENCE §4.3 "derived": r0n0 reflects, owns 10.244.0.0/26; r0n1 borrowed .5 from it.
    let mut net = one_reflector_net(3);
    net.originate("r0n0", "10.244.0.0/26");
    net.originate("r0n1", "10.244.0.5/32");
    net.settle();
    assert_eq!(net.next_hop_name("r0n0", "10.244.0.5/32").unwrap(), "r0n1");
    assert!(
        net.best("r0n2", "10.244.0.5/32").is_none(),
        "filtered by the owner"
    );
    assert_eq!(net.next_hop_name("r0n2", "10.244.0.0/26").unwrap(), "r0n0");
    // When the reflector releases the block, the /32 passes its filter again.
    let d = net.dev("r0n0");
    let evs = net.engine.withdraw(net.now, d, cidr("10.244.0.0/26"));
    net.push(evs);
    net.settle();
    assert_eq!(net.next_hop_name("r0n2", "10.244.0.5/32").unwrap(), "r0n1");
    assert!(net.best("r0n2", "10.244.0.0/26").is_none());
}

/// BGPPeers on top of the mesh add a session only for a pair without one. One rack, r0n0 a
/// reflector (so outside the mesh), r0n1–r0n3 meshed: the mesh's 3 pairs come first; `to-rr`
/// adds r0n1–r0n0, r0n2–r0n0, r0n3–r0n0 (r0n0 does not peer with itself); `everyone`
/// (every node with every node) finds all six pairs taken; `pin` (r0n1 to r0n2's address, a
/// meshed pair) too. Six sessions, each pair once, from what made it first.
#[test]
fn peers_over_the_mesh_add_only_pairs_it_lacks() {
    let t = topology(
        &[RackSpec {
            nodes: 4,
            node_bgp: first_reflects,
        }],
        false,
    );
    let mut everyone = Peer::named("everyone");
    everyone.peer_selector = Some(Selector::parse("has(rack)").unwrap());
    let mut pin = Peer::named("pin");
    pin.node = Some("r0n1".into());
    pin.peer_ip = Some(ip("10.0.0.12"));
    let peering = plan(
        &t,
        &BgpConfig::default(),
        &[to_reflectors(), everyone, pin],
        true,
    );
    let name = |s: SpeakerId| peering.speakers[s.index()].name.as_str();
    let sessions: Vec<(&str, &str, SessionSource)> = peering
        .sessions
        .iter()
        .map(|s| (name(s.a), name(s.b.unwrap()), s.source.clone()))
        .collect();
    let rr = || SessionSource::Peer("to-rr".into());
    assert_eq!(
        sessions,
        [
            ("r0n1", "r0n2", SessionSource::Mesh),
            ("r0n1", "r0n3", SessionSource::Mesh),
            ("r0n2", "r0n3", SessionSource::Mesh),
            ("r0n1", "r0n0", rr()),
            ("r0n2", "r0n0", rr()),
            ("r0n3", "r0n0", rr()),
        ]
    );
}

#[test]
fn sessions_that_cannot_come_up_say_why() {
    let t = topology(
        &[
            RackSpec {
                nodes: 2,
                node_bgp: plain,
            },
            RackSpec {
                nodes: 1,
                node_bgp: plain,
            },
        ],
        false,
    );
    let mut mismatch = Peer::named("wrong-as");
    mismatch.node = Some("r0n0".into());
    mismatch.peer_ip = Some(ip("10.1.0.10"));
    mismatch.as_number = Some(65001);
    let mut nobody = Peer::named("nobody");
    nobody.node = Some("r0n0".into());
    nobody.peer_ip = Some(ip("10.0.0.250"));
    let mut router = Peer::named("tor");
    router.node = Some("r0n0".into());
    router.peer_ip = Some(ip("10.0.0.1"));
    let mut t2 = t.clone();
    // Cut r0n1 off the segment before planning: its mesh sessions have no path.
    let n1 = t2.device_by_name("r0n1").unwrap();
    let tor = t2.device_by_name("tor-r0").unwrap();
    let link = t2.link_between(n1, tor).unwrap();
    t2.set_link_up(link, false);
    let peering = plan(&t2, &no_mesh(), &[mismatch, nobody, router], true);
    let reasons: Vec<String> = peering
        .sessions
        .iter()
        .map(|s| s.reason.as_ref().map(|r| r.to_string()).unwrap_or_default())
        .collect();
    assert_eq!(
        reasons,
        [
            "BGPPeer wrong-as: asNumber 65001 but r1n0 is AS 64512",
            "BGPPeer nobody: peerIP 10.0.0.250 belongs to no BGP speaker",
            "BGPPeer tor: peerIP 10.0.0.1 is tor-r0, which does not speak BGP (topology.fabric.bgp is false)",
        ]
    );
    let with_mesh = plan(&t2, &BgpConfig::default(), &[], true);
    let cut = with_mesh
        .sessions
        .iter()
        .find(|s| s.reason.is_some())
        .unwrap();
    assert_eq!(cut.reason.as_deref(), Some(&IdleReason::NoUnderlayPath));
    // Idle sessions with a permanent reason schedule nothing.
    let mut engine = BgpEngine::new(
        &t2,
        peering,
        Timers::for_profile(TimerProfile::CalicoBird),
        &settings(),
    );
    assert!(engine.start(SimTime::ZERO).is_empty());
    assert!(engine.sessions().all(|s| s.state == SessionState::Idle));
    // The path comes back: the session connects at the next connect-retry tick.
    let mut engine = BgpEngine::new(
        &t2,
        with_mesh,
        Timers::for_profile(TimerProfile::CalicoBird),
        &settings(),
    );
    let started = engine.start(SimTime::ZERO);
    assert_eq!(started.len(), 1, "only r0n0–r1n0 can connect");
    t2.set_link_up(link, true);
    let evs = engine.link_changed(secs(10), &t2, &[link]);
    assert_eq!(evs.len(), 2);
    assert!(evs.iter().all(|(t, _)| *t > secs(10) && *t < secs(13)));
}

#[test]
fn a_fabric_link_down_drops_its_session_at_once_and_routes_move() {
    let per_node = |r: usize, i: usize| NodeBgp {
        as_number: Some(64600 + 10 * r as u32 + i as u32),
        ..NodeBgp::default()
    };
    let t = topology(
        &[
            RackSpec {
                nodes: 1,
                node_bgp: per_node,
            },
            RackSpec {
                nodes: 1,
                node_bgp: per_node,
            },
        ],
        true,
    );
    let mut net = Net::new(
        t,
        &no_mesh(),
        &as_per_rack_peers(),
        TimerProfile::CalicoBird,
    );
    net.originate("r0n0", "10.244.0.0/26");
    net.run_until(secs(5));
    assert!(net.best("r1n0", "10.244.0.0/26").is_some());
    let (tor, spine) = (net.dev("tor-r0"), net.dev("spine-z-1"));
    let link = net.topology.link_between(tor, spine).unwrap();
    net.topology.set_link_up(link, false);
    let topo = net.topology.clone();
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    net.push(evs);
    let s = net.session_between("tor-r0", "spine-z-1");
    assert_eq!(s.state, SessionState::Idle);
    assert_eq!(s.reason.as_deref(), Some(&IdleReason::LinkDown));
    net.run_until(secs(6));
    assert!(
        net.best("r1n0", "10.244.0.0/26").is_none(),
        "withdrawn through the fabric"
    );
    // The node sessions are multihop and the nodes are still joined by their segments.
    assert_eq!(
        net.session_between("r0n0", "tor-r0").state,
        SessionState::Established
    );
}

/// Two racks of three nodes, each node eBGP to its ToR (as-per-rack), the ToRs to the spine;
/// every node has originated its block and the network has converged (5 s).
fn as_per_rack_fabric() -> Net {
    let per_node = |r: usize, i: usize| NodeBgp {
        as_number: Some(64600 + 10 * r as u32 + i as u32),
        ..NodeBgp::default()
    };
    let rack = || RackSpec {
        nodes: 3,
        node_bgp: per_node,
    };
    let t = topology(&[rack(), rack()], true);
    let mut net = Net::new(
        t,
        &no_mesh(),
        &as_per_rack_peers(),
        TimerProfile::CalicoBird,
    );
    for r in 0..2 {
        for i in 0..3 {
            net.originate(&format!("r{r}n{i}"), &block(r, i));
        }
    }
    net.run_until(secs(5));
    net
}

#[test]
fn a_split_fabric_re_decides_at_the_routers_only() {
    // Two racks of three nodes, each node eBGP to its ToR (as-per-rack), the ToRs to the
    // spine; every node originates its block, so each of the 9 speakers ends with 6 prefixes.
    // tor-r0–spine down splits the fabric in two components. A Calico node resolves every
    // next hop through its default route (REFERENCE §4: BIRD `gateway recursive` over the
    // kernel table), and each node has one next hop per prefix (its ToR), so no node's
    // decision can change: only the 3 routers re-decide their learned prefixes, at most
    // 3 × 6 = 18 decisions (re-deciding every speaker would add the nodes' 6 × 5 = 30).
    let mut net = as_per_rack_fabric();
    assert!(net.best("r1n2", &block(0, 0)).is_some());
    let (topo, link) = net.cut("tor-r0", "spine-z-1");
    let before = net.engine.decisions;
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    let spent = net.engine.decisions - before;
    assert!(spent > 0 && spent <= 18, "{spent} decisions");
    // Nothing was missed: deciding everything again changes no best route.
    assert_eq!(net.engine.redecide_everything(net.now), 0);
    net.push(evs);
    net.run_until(secs(6));
    assert!(net.best("r1n2", &block(0, 0)).is_none(), "withdrawn");
}

#[test]
fn a_link_change_looks_only_at_prefixes_with_several_owners_when_no_next_hop_was_rewritten() {
    // Two racks of four nodes, node 0 of each reflecting (cluster 1.1.1.1), every node a
    // client of both; each node originates its block, and r1n1 originates r0n1's block too
    // (two owners). Nobody rewrites a next hop (iBGP between Calico nodes keeps it), so every
    // candidate of a block carries its owner's address: only the shared block can have two
    // next hops anywhere. Cutting r1 off the spine makes each speaker look at that one
    // destination: 8 speakers hold it, so 8 destinations, against the full scan's 8 × 8
    // (eight distinct blocks on each of the 8 speakers).
    //
    // Sessions: 13 (each of the six clients to both reflectors, and the reflectors' own).
    // The first change looks at all 13 (the underlay starts following them then); mending
    // the link afterwards looks only at the 7 that cross the racks, whose path comes back:
    // r1's four nodes to r0n0 (r1n0–r0n0 among them) and r0's other three to r1n0.
    let mut net = reflector_per_rack_net(2, 4);
    for r in 0..2 {
        for i in 0..4 {
            net.originate(&format!("r{r}n{i}"), &block(r, i));
        }
    }
    net.originate("r1n1", &block(0, 1));
    net.run_until(secs(5));
    // Each rack prefers the owner in its own rack: equal up to the IGP cost, and the other
    // rack's owner is two fabric links further (ToR–spine, spine–ToR).
    let r0n1 = ip("10.0.0.11");
    let r1n1 = ip("10.1.0.11");
    assert_eq!(net.best("r0n2", &block(0, 1)).unwrap().next_hop, r0n1);
    assert_eq!(net.best("r1n2", &block(0, 1)).unwrap().next_hop, r1n1);
    let (topo, link) = net.cut("tor-r1", "spine-z-1");
    let before = net.engine.link_examined;
    let sessions_before = net.engine.link_sessions_examined;
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    assert_eq!(net.engine.link_examined - before, 8);
    assert_eq!(net.engine.link_sessions_examined - sessions_before, 13);
    // Nothing was missed: deciding everything again changes no best route.
    assert_eq!(net.engine.redecide_everything(net.now), 0);
    net.push(evs);
    net.run_until(secs(6));
    assert_eq!(net.best("r0n2", &block(0, 1)).unwrap().next_hop, r0n1);
    assert_eq!(net.best("r1n2", &block(0, 1)).unwrap().next_hop, r1n1);
    net.topology.set_link_up(link, true);
    let topo = net.topology.clone();
    let sessions_before = net.engine.link_sessions_examined;
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    assert_eq!(net.engine.link_sessions_examined - sessions_before, 7);
    net.push(evs);
}

#[test]
fn a_link_event_takes_in_the_nodes_removed_before_it() {
    // Two racks of four nodes, node 0 of each reflecting. r1n3 is deleted: the engine drops
    // its sessions at once, and the underlay, which has a copy of the topology, takes the
    // deletion in at the next link event (as when it compared the whole topology), told it
    // by the engine: `update_told` compares nothing else, and in tests asserts that the
    // full comparison finds the same (the link and this node), so it panics if not told.
    let mut net = reflector_per_rack_net(2, 4);
    net.run_until(secs(5));
    let node = net.topology.node_by_name("r1n3").unwrap();
    net.topology.node_mut(node).deleted = true;
    let evs = net.engine.speaker_removed(net.now, net.dev("r1n3"));
    net.push(evs);
    assert!(!net.engine.underlay.topology().nodes[node.index()].deleted);
    let (topo, link) = net.cut("tor-r0", "spine-z-1");
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    net.push(evs);
    assert!(net.engine.underlay.topology().nodes[node.index()].deleted);
    // A later link event has nothing more to take in.
    net.topology.set_link_up(link, true);
    let topo = net.topology.clone();
    let evs = net.engine.link_changed(net.now, &topo, &[link]);
    net.push(evs);
    net.run_until(secs(10));
}

#[test]
fn a_link_change_looks_at_every_destination_once_a_next_hop_was_rewritten() {
    // The split fabric above: nodes and ToRs set themselves as next hop on eBGP, so any
    // prefix may carry different next hops somewhere and a link change looks at every
    // destination of every speaker that holds a candidate: 9 speakers × 6 blocks, less what
    // the cut took first — the tor-r0–spine session runs over the cut link and drops at
    // once, before the re-decision looks, so tor-r0 no longer holds rack 1's 3 blocks nor
    // the spine rack 0's 3: 54 − 6 = 48.
    let mut net = as_per_rack_fabric();
    let (topo, link) = net.cut("tor-r0", "spine-z-1");
    let before = net.engine.link_examined;
    net.engine.link_changed(net.now, &topo, &[link]);
    assert_eq!(net.engine.link_examined - before, 9 * 6 - 2 * 3);
}

#[test]
fn a_busy_reflector_processes_one_message_at_a_time() {
    let mut net = reflected(9, true);
    net.run_until(secs(5));
    let rr = net.dev("r0n0");
    let sent_before = net.engine.updates_sent(rr);
    for i in 3..9 {
        net.originate(&format!("r0n{i}"), &format!("10.244.{i}.0/26"));
    }
    net.settle();
    // Six one-prefix UPDATEs reach r0n0 at the same instant; the last is processed six
    // processing times (22us each) after arrival, so r0n0's last change is 132us after it.
    let arrival = secs(5) + SimDuration::from_micros(20);
    let last = net
        .log
        .iter()
        .filter(|e| e.kind == BgpLogKind::BestPathChanged && e.subject == "r0n0")
        .map(|e| e.time)
        .max()
        .unwrap();
    assert_eq!(last, arrival + SimDuration::from_micros(6 * 22));
    // It sends once its queue is empty: one UPDATE to each of its 8 peers for the burst.
    assert_eq!(net.engine.updates_sent(rr) - sent_before, 8);
}

/// The clients of three reflectors receive a change three times at one instant (one copy
/// per reflector, the same latency): each takes one and queues two, and all finish the
/// first together. They then start their queued copies together and finish those together
/// too, so one `ProcessMany` finishes them (`receive.rs`): no handler schedules two lone
/// `ProcessNext` events for one instant, and the copies are still processed one at a time.
#[test]
fn speakers_finishing_together_start_their_queued_messages_in_one_event() {
    let mut net = reflected(9, true);
    net.run_until(secs(5));
    net.originate("r0n5", "10.244.5.0/26");
    let (mut lone, mut many) = (0, 0);
    while let Some(Reverse((t, _, e))) = net.queue.pop() {
        assert!(t < secs(100), "the network never settles");
        net.now = t;
        let events = handle(&mut net.engine, t, e);
        let mut instants: Vec<SimTime> = events
            .iter()
            .filter(|(_, e)| matches!(e, BgpEvent::ProcessNext { .. }))
            .map(|&(at, _)| at)
            .collect();
        lone += instants.len();
        many += (events.iter())
            .filter(|(_, e)| matches!(e, BgpEvent::ProcessMany { .. }))
            .count();
        let scheduled = instants.len();
        instants.dedup();
        assert_eq!(
            instants.len(),
            scheduled,
            "lone messages at one instant: {events:?}"
        );
        net.push(events);
    }
    // Every reflector gets the client's UPDATE at once (one ProcessMany of three); the five
    // other clients finish their first copy together (one), then their second (one), then
    // their third (one).
    assert!(many >= 4, "{many} groups, {lone} lone messages");
    net.log.extend(net.engine.log());
    let at_clients = (0..9).filter(|&i| i >= 3 && i != 5).map(|i| {
        net.entry(&format!("r0n{i}"), "10.244.5.0/26")
            .unwrap()
            .routes
            .len()
    });
    assert!(
        at_clients.into_iter().all(|n| n == 3),
        "each client holds the three copies"
    );
}

#[test]
fn mrai_holds_announcements_but_not_withdrawals() {
    let t = one_rack(2);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::Rfc4271);
    net.run_until(secs(1));
    net.originate("r0n0", "10.244.0.0/26");
    net.run_until(secs(2));
    assert!(
        net.best("r0n1", "10.244.0.0/26").is_some(),
        "first announcement goes at once"
    );
    net.originate("r0n0", "10.244.0.64/26");
    net.run_until(secs(5));
    assert!(
        net.best("r0n1", "10.244.0.64/26").is_none(),
        "held by the 5s iBGP MRAI"
    );
    net.run_until(secs(7));
    assert!(net.best("r0n1", "10.244.0.64/26").is_some());
    let d = net.dev("r0n0");
    let evs = net.engine.withdraw(net.now, d, cidr("10.244.0.0/26"));
    net.push(evs);
    net.run_until(secs(8));
    assert!(
        net.best("r0n1", "10.244.0.0/26").is_none(),
        "withdrawals are not held"
    );
}

fn scripted_run() -> (Vec<BgpLogEntry>, usize) {
    let mut net = reflected(7, false);
    for i in 3..7 {
        net.originate(&format!("r0n{i}"), &format!("10.244.{i}.0/26"));
    }
    net.run_until(secs(3));
    let d = net.dev("r0n4");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.settle();
    (net.log, net.handled)
}

#[test]
fn the_same_inputs_give_the_same_log() {
    let (a, na) = scripted_run();
    let (b, nb) = scripted_run();
    assert!(a.len() > 20);
    assert_eq!(na, nb);
    assert_eq!(a, b);
}

#[test]
fn a_300_node_mesh_converges() {
    let t = topology(
        &[
            RackSpec {
                nodes: 100,
                node_bgp: plain,
            },
            RackSpec {
                nodes: 100,
                node_bgp: plain,
            },
            RackSpec {
                nodes: 100,
                node_bgp: plain,
            },
        ],
        false,
    );
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    net.engine.set_log_options(LogOptions {
        updates: false,
        routes: false,
    });
    assert_eq!(net.engine.sessions().count(), 300 * 299 / 2);
    for r in 0..3 {
        for i in 0..100 {
            net.originate(&format!("r{r}n{i}"), &format!("10.{}.{}.0/24", 100 + r, i));
        }
    }
    net.settle();
    assert_eq!(net.engine.rib_size(net.dev("r2n99")), 300);
    assert_eq!(net.engine.total_updates(), 300 * 299);
}

/// `cargo test --lib bgp::tests::scale -- --ignored --nocapture`: the sizes.
#[test]
#[ignore]
fn scale_1000_node_mesh_cold_start() {
    let racks: Vec<RackSpec> = (0..10)
        .map(|_| RackSpec {
            nodes: 100,
            node_bgp: plain,
        })
        .collect();
    let t = topology(&racks, false);
    let clock = std::time::Instant::now();
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    net.engine.set_log_options(LogOptions {
        updates: false,
        routes: false,
    });
    eprintln!("plan + start: {:?}", clock.elapsed());
    assert_eq!(net.engine.sessions().count(), 499_500);
    for r in 0..10 {
        for i in 0..100 {
            net.originate(&format!("r{r}n{i}"), &format!("10.{}.{}.0/26", 100 + r, i));
        }
    }
    net.settle();
    eprintln!(
        "converged: {:?}, {} events, {} updates, last change at {}",
        clock.elapsed(),
        net.handled,
        net.engine.total_updates(),
        net.engine.last_rib_change()
    );
    assert_eq!(net.engine.rib_size(net.dev("r9n99")), 1000);
}

#[test]
#[ignore]
fn scale_5000_nodes_3_reflectors() {
    fn rr(r: usize, i: usize) -> NodeBgp {
        NodeBgp {
            route_reflector_cluster_id: (r == 0 && i < 3).then(|| Ipv4Addr::new(1, 1, 1, 1)),
            ..NodeBgp::default()
        }
    }
    let racks: Vec<RackSpec> = (0..50)
        .map(|_| RackSpec {
            nodes: 100,
            node_bgp: rr,
        })
        .collect();
    let t = topology(&racks, false);
    let clock = std::time::Instant::now();
    let to_rr = to_reflectors();
    let mut net = Net::new(t, &no_mesh(), &[to_rr], TimerProfile::CalicoBird);
    net.engine.set_log_options(LogOptions {
        updates: false,
        routes: false,
    });
    eprintln!("plan + start: {:?}", clock.elapsed());
    // Two blocks per node: 10^4 prefixes.
    for r in 0..50 {
        for i in 0..100 {
            for b in 0..2 {
                let n = (r * 100 + i) * 2 + b;
                net.originate(
                    &format!("r{r}n{i}"),
                    &format!(
                        "10.{}.{}.{}/26",
                        240 + n / 1024,
                        (n / 4) % 256,
                        (n % 4) * 64
                    ),
                );
            }
        }
    }
    net.settle();
    eprintln!(
        "converged: {:?}, {} events, {} updates, last change at {}",
        clock.elapsed(),
        net.handled,
        net.engine.total_updates(),
        net.engine.last_rib_change()
    );
    assert_eq!(net.engine.rib_size(net.dev("r49n99")), 10_000);
}

#[test]
fn a_best_path_change_that_keeps_the_next_hop_is_no_fib_change() {
    // SPEC §2.6: `convergedWithin` measures FIB changes. r0n4 (a client of three same-cluster
    // reflectors) prefers r0n0's copy of r0n3's block (lowest peer address). When r0n0 dies,
    // its best becomes r0n1's copy: another Loc-RIB route, the same next hop r0n3, so no FIB
    // changes anywhere (the reflectors' own best is the client's direct announcement).
    let mut net = reflected(5, true);
    net.originate("r0n3", "10.244.3.0/26");
    net.settle();
    assert!(
        net.engine.drain_fib_change_times().next().is_some(),
        "the block was learned"
    );
    let rib_before = net.engine.last_rib_change();
    let d = net.dev("r0n0");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.settle();
    let e = net.entry("r0n4", "10.244.3.0/26").unwrap();
    assert_eq!(e.routes[0].from, Some(net.dev("r0n1")));
    assert!(
        net.engine.last_rib_change() > rib_before,
        "r0n4's Loc-RIB changed"
    );
    assert_eq!(net.engine.drain_fib_change_times().next(), None);
    assert_eq!(net.next_hop_name("r0n4", "10.244.3.0/26").unwrap(), "r0n3");
}

/// A jitter source that always shortens a timer by the full 25% (BIRD's largest cut).
#[derive(Debug)]
struct MaxJitter;

impl config::TimerJitter for MaxJitter {
    fn draw(&mut self, bound: u64) -> u64 {
        bound
    }
}

#[test]
fn bird_jitters_its_timers_and_hold_counts_from_the_last_keepalive() {
    // calico-bird with every timer cut by the full 25% (REFERENCE §4.4): the connect delay
    // of 2s becomes 1.5s, so E = 1.5s + 40us. KEEPALIVEs every 80s × 0.75 = 60s from E: at
    // E + 60s and E + 120s (< the crash at 130s), arriving 20us later. The hold timer, armed
    // at 240s × 0.75 = 180s after that last KEEPALIVE, expires at E + 300s + 20us =
    // 301.50006s — not at 130s + 240s.
    let t = one_rack(2);
    let peering = plan(&t, &BgpConfig::default(), &[], true);
    let mut engine = BgpEngine::new(
        &t,
        peering,
        Timers::for_profile(TimerProfile::CalicoBird),
        &settings(),
    );
    engine.set_jitter(Box::new(MaxJitter));
    let pools = vec![ExportPool {
        cidr: cidr("10.240.0.0/12"),
        disable_bgp_export: false,
    }];
    let _ = engine.set_pools(SimTime::ZERO, pools);
    let mut net = Net::with(
        t,
        &BgpConfig::default(),
        &[],
        TimerProfile::CalicoBird,
        settings(),
    );
    // Replace the test bed's engine by the jittered one, started the same way.
    net.queue.clear();
    net.engine = engine;
    let evs = net.engine.start(SimTime::ZERO);
    net.push(evs);
    net.originate("r0n1", "10.244.1.0/26");
    net.run_until(secs(130));
    let up = net
        .log
        .iter()
        .find(|e| e.kind == BgpLogKind::SessionEstablished)
        .unwrap();
    assert_eq!(up.time, SimTime::ZERO + SimDuration::from_micros(1_500_040));
    let d = net.dev("r0n1");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.settle();
    let down = net
        .log
        .iter()
        .find(|e| e.kind == BgpLogKind::SessionDown)
        .unwrap();
    assert_eq!(
        down.time,
        SimTime::ZERO + SimDuration::from_micros(301_500_060)
    );
    assert!(
        down.outcome.contains("hold timer (3m armed)"),
        "{}",
        down.outcome
    );
}

#[test]
fn frr_uses_exact_timers_and_detects_hold_after_the_last_keepalive() {
    // frr-datacenter: hold 9s, keepalive 3s, no connect delay, no jitter. E = 40us; r0n1's
    // KEEPALIVEs leave at E + 3s, 6s, 9s (< the crash at 10s) and the last arrives at
    // 9.00006s: detection at 18.00006s, not at 10s + 9s.
    let t = one_rack(2);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::FrrDatacenter);
    net.originate("r0n1", "10.244.1.0/26");
    net.run_until(secs(10));
    let d = net.dev("r0n1");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.settle();
    let down = net
        .log
        .iter()
        .find(|e| e.kind == BgpLogKind::SessionDown)
        .unwrap();
    assert_eq!(
        down.time,
        SimTime::ZERO + SimDuration::from_micros(18_000_060)
    );
}
