//! `BgpEngine::reconfigure`: configuration changes and nodes joining during a run, driven by
//! the event loop of the engine tests.

use super::*;

impl Net {
    /// Plans `config` and `peers` over the current topology and moves the engine to it.
    fn reconfigure(&mut self, config: &BgpConfig, peers: &[Peer], cause: &str) {
        let peering = plan(&self.topology, config, peers, true);
        let evs = self
            .engine
            .reconfigure(self.now, &self.topology, peering, cause);
        self.push(evs);
        self.log.extend(self.engine.log());
    }

    /// `(id, epoch)` of the session between two nodes.
    fn id_and_epoch(&self, a: &str, b: &str) -> (SessionId, u32) {
        let id = self.session_between(a, b).id;
        (id, self.engine.srt[id.index()].epoch)
    }

    /// Adds a plain Linux node to rack r0 of the topology (the engine learns of it at the
    /// next `reconfigure`).
    fn join_r0(&mut self, name: &str, address: &str) {
        let rack = self.topology.racks.iter().position(|r| r.name == "r0");
        self.topology.add_node(
            crate::model::topology::RackId(rack.expect("rack r0") as u32),
            NewNode {
                name: name.into(),
                ip: ip(address),
                os: Os::Linux,
                max_pods: 110,
                labels: Labels::new(),
                bgp: NodeBgp::default(),
            },
        );
    }

    /// The log lines of one kind from `since` on, as `subject: outcome`.
    fn lines(&self, kind: BgpLogKind, since: SimTime) -> Vec<String> {
        self.log
            .iter()
            .filter(|e| e.kind == kind && e.time >= since)
            .map(|e| format!("{}: {}", e.subject, e.outcome))
            .collect()
    }
}

/// One rack of four nodes, r0n0 a route reflector (cluster 1.1.1.1, which takes it out of the
/// mesh), r0n1..r0n3 plain; every node originates its block.
fn one_reflector() -> Net {
    fn rr(_: usize, i: usize) -> NodeBgp {
        NodeBgp {
            route_reflector_cluster_id: (i == 0).then(|| Ipv4Addr::new(1, 1, 1, 1)),
            ..NodeBgp::default()
        }
    }
    let t = topology(
        &[RackSpec {
            nodes: 4,
            node_bgp: rr,
        }],
        false,
    );
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    for i in 0..4 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.settle();
    net
}

fn to_reflectors() -> Peer {
    let mut p = Peer::named("to-rr");
    p.node_selector = Some(Selector::parse("!has(route-reflector)").unwrap());
    p.peer_selector = Some(Selector::parse("has(route-reflector)").unwrap());
    p
}

#[test]
fn a_new_bgppeer_adds_sessions_and_the_others_do_not_flap() {
    let mut net = one_reflector();
    assert_eq!(
        net.engine.established_sessions(),
        3,
        "the mesh of r0n1..r0n3"
    );
    assert!(
        net.best("r0n1", &block(0, 0)).is_none(),
        "the reflector meshes with nobody"
    );
    let mesh_before: Vec<(SessionId, u32)> = [("r0n1", "r0n2"), ("r0n1", "r0n3"), ("r0n2", "r0n3")]
        .iter()
        .map(|(a, b)| net.id_and_epoch(a, b))
        .collect();
    net.run_until(secs(60));
    net.reconfigure(
        &BgpConfig::default(),
        &[to_reflectors()],
        "BGPPeer to-rr applied",
    );
    // New sessions connect after Calico's connect delay (2s; exact: these tests give the
    // engine no jitter source) and come up one round trip (2 × 20us) later.
    assert_eq!(
        net.lines(BgpLogKind::SessionConnect, secs(60)),
        [
            "r0n1 – r0n0: established at 1m2.00004s if nothing fails",
            "r0n2 – r0n0: established at 1m2.00004s if nothing fails",
            "r0n3 – r0n0: established at 1m2.00004s if nothing fails",
        ]
    );
    net.settle();
    assert_eq!(net.engine.established_sessions(), 6);
    // The mesh sessions kept their ids and epochs: nothing went down, nothing reconnected.
    let mesh_after: Vec<(SessionId, u32)> = [("r0n1", "r0n2"), ("r0n1", "r0n3"), ("r0n2", "r0n3")]
        .iter()
        .map(|(a, b)| net.id_and_epoch(a, b))
        .collect();
    assert_eq!(mesh_before, mesh_after);
    assert!(net.lines(BgpLogKind::SessionDown, secs(60)).is_empty());
    // New sessions got new ids after the old ones, and exchanged full tables: the clients
    // learn the reflector's block, the reflector learns theirs.
    assert_eq!(net.session_between("r0n1", "r0n0").id, SessionId(3));
    for i in 1..4 {
        let node = format!("r0n{i}");
        assert_eq!(net.next_hop_name(&node, &block(0, 0)).unwrap(), "r0n0");
        assert_eq!(net.next_hop_name("r0n0", &block(0, i)).unwrap(), node);
    }
    // A client now holds a second copy of its mesh peers' blocks, reflected.
    assert_eq!(net.entry("r0n1", &block(0, 2)).unwrap().routes.len(), 2);
}

/// What a reflector's flushes keep of its sessions (`send.rs`, `SendCache`) follows the
/// peering: a node that joins becomes its client, and the reflector's next flush reaches it
/// over the new session; every kept target list is what it would be built as now.
#[test]
fn flush_targets_follow_a_reconfiguration() {
    let mut net = one_reflector();
    net.run_until(secs(60));
    net.reconfigure(
        &BgpConfig::default(),
        &[to_reflectors()],
        "BGPPeer to-rr applied",
    );
    net.settle();
    let (in_step, kept) = net.engine.flush_targets_in_step();
    assert!(in_step);
    assert_eq!(kept, 1, "the reflector's (plain speakers keep none)");
    assert!(net.engine.sessions_up_in_step());
    net.join_r0("new", "10.0.0.50");
    net.reconfigure(&BgpConfig::default(), &[to_reflectors()], "node new joined");
    net.settle();
    assert!(net.engine.sessions_up_in_step());
    assert!(
        net.engine.speaker_records_in_step(),
        "the new speaker has its three records"
    );
    // A block r0n1 originates now reaches `new` over the mesh and reflected by r0n0's
    // flush over its new session.
    net.originate("r0n1", &block(0, 9));
    net.settle();
    assert_eq!(net.entry("new", &block(0, 9)).unwrap().routes.len(), 2);
    let (in_step, kept) = net.engine.flush_targets_in_step();
    assert!(in_step);
    assert_eq!(kept, 1);
}

#[test]
fn turning_the_mesh_off_removes_mesh_sessions_and_their_routes_only() {
    let mut net = one_reflector();
    net.reconfigure(
        &BgpConfig::default(),
        &[to_reflectors()],
        "BGPPeer to-rr applied",
    );
    net.settle();
    let rr_before = net.id_and_epoch("r0n1", "r0n0");
    let t = net.now;
    net.reconfigure(
        &no_mesh(),
        &[to_reflectors()],
        "BGPConfiguration default applied",
    );
    assert_eq!(
        net.lines(BgpLogKind::SessionDown, t),
        [
            "r0n1 – r0n2: removed from the configuration: BGPConfiguration default applied",
            "r0n1 – r0n3: removed from the configuration: BGPConfiguration default applied",
            "r0n2 – r0n3: removed from the configuration: BGPConfiguration default applied",
        ]
    );
    net.settle();
    assert_eq!(net.engine.established_sessions(), 3);
    assert_eq!(
        net.engine.sessions().count(),
        3,
        "removed sessions are not listed"
    );
    assert_eq!(
        net.id_and_epoch("r0n1", "r0n0"),
        rr_before,
        "the reflector session ran on"
    );
    // The mesh copy is gone; the reflected one, with the owner as next hop, remains.
    let e = net.entry("r0n1", &block(0, 2)).unwrap();
    assert_eq!(e.routes.len(), 1);
    assert_eq!(e.routes[0].from, Some(net.dev("r0n0")));
    assert_eq!(net.next_hop_name("r0n1", &block(0, 2)).unwrap(), "r0n2");
}

#[test]
fn deleting_a_bgppeer_withdraws_its_routes_and_applying_it_again_restores_them() {
    let mut net = one_reflector();
    net.reconfigure(&no_mesh(), &[to_reflectors()], "BGPPeer to-rr applied");
    net.settle();
    assert_eq!(net.engine.established_sessions(), 3);
    assert!(net.best("r0n1", &block(0, 2)).is_some());
    let t = net.now;
    net.reconfigure(&no_mesh(), &[], "BGPPeer to-rr deleted");
    assert_eq!(net.lines(BgpLogKind::SessionDown, t).len(), 3);
    assert!(
        net.lines(BgpLogKind::SessionDown, t)
            .iter()
            .all(|l| l.ends_with("removed from the configuration: BGPPeer to-rr deleted"))
    );
    net.settle();
    assert_eq!(net.engine.established_sessions(), 0);
    for i in 0..4 {
        let node = format!("r0n{i}");
        assert_eq!(
            net.engine.rib_size(net.dev(&node)),
            1,
            "{node} keeps only its own block"
        );
    }
    // Back again: new sessions (new ids; the removed ones keep their slots), full tables.
    net.run_until(net.now + SimDuration::from_secs(10));
    net.reconfigure(&no_mesh(), &[to_reflectors()], "BGPPeer to-rr applied");
    net.settle();
    assert_eq!(net.engine.established_sessions(), 3);
    assert!(net.session_between("r0n1", "r0n0").id.index() >= 6);
    assert_eq!(net.next_hop_name("r0n1", &block(0, 2)).unwrap(), "r0n2");
    assert_eq!(net.engine.rib_size(net.dev("r0n0")), 4);
}

#[test]
fn a_changed_as_number_resets_the_sessions_it_changes_and_only_those() {
    // r0n1 and r0n2 set their own AS 64512; r0n0 follows the BGPConfiguration.
    fn own_as(_: usize, i: usize) -> NodeBgp {
        NodeBgp {
            as_number: (i > 0).then_some(64512),
            ..NodeBgp::default()
        }
    }
    let t = topology(
        &[RackSpec {
            nodes: 3,
            node_bgp: own_as,
        }],
        false,
    );
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    for i in 0..3 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.settle();
    let kept = net.id_and_epoch("r0n1", "r0n2");
    let reset = net.id_and_epoch("r0n0", "r0n1");
    let t = net.now;
    let config = BgpConfig {
        as_number: 64513,
        node_to_node_mesh: true,
        node_mesh_restart_time: None,
    };
    net.reconfigure(&config, &[], "BGPConfiguration default applied");
    assert_eq!(
        net.lines(BgpLogKind::SessionDown, t),
        [
            "r0n0 – r0n1: configuration changed: BGPConfiguration default applied \
             (r0n0 AS 64512 → 64513, ibgp → ebgp)",
            "r0n0 – r0n2: configuration changed: BGPConfiguration default applied \
             (r0n0 AS 64512 → 64513, ibgp → ebgp)",
        ]
    );
    // Down at once, connecting again after the connect delay, established a round trip later.
    assert_eq!(net.lines(BgpLogKind::SessionConnect, t).len(), 2);
    assert!(
        net.best("r0n1", &block(0, 0)).is_none(),
        "withdrawn with the session"
    );
    net.settle();
    assert_eq!(net.engine.established_sessions(), 3);
    assert_eq!(net.id_and_epoch("r0n1", "r0n2"), kept);
    let (id, epoch) = net.id_and_epoch("r0n0", "r0n1");
    assert_eq!(id, reset.0, "a reset session keeps its id");
    assert!(epoch > reset.1);
    let s = net.session_between("r0n0", "r0n1");
    assert_eq!(
        (s.session_type, s.state),
        (SessionType::Ebgp, SessionState::Established)
    );
    assert_eq!(
        net.engine.speaker(net.dev("r0n0")).unwrap().as_number,
        64513
    );
    // Routes came back over eBGP: r0n0's block carries its new AS.
    let e = net.entry("r0n1", &block(0, 0)).unwrap();
    assert_eq!(e.routes[0].attrs.as_path, vec![64513]);
    assert_eq!(net.next_hop_name("r0n1", &block(0, 0)).unwrap(), "r0n0");
}

#[test]
fn a_wrong_as_number_applied_at_run_time_idles_the_session_until_fixed() {
    let t = topology(
        &[
            RackSpec {
                nodes: 1,
                node_bgp: plain,
            },
            RackSpec {
                nodes: 1,
                node_bgp: plain,
            },
        ],
        false,
    );
    let mut net = Net::new(t, &no_mesh(), &[], TimerProfile::CalicoBird);
    net.originate("r1n0", &block(1, 0));
    net.settle();
    let mut peer = Peer::named("p");
    peer.node = Some("r0n0".into());
    peer.peer_ip = Some(ip("10.1.0.10"));
    peer.as_number = Some(65001);
    net.reconfigure(&no_mesh(), std::slice::from_ref(&peer), "BGPPeer p applied");
    net.settle();
    let s = net.session_between("r0n0", "r1n0");
    assert_eq!(s.state, SessionState::Idle);
    assert_eq!(
        s.reason.as_ref().unwrap().to_string(),
        "BGPPeer p: asNumber 65001 but r1n0 is AS 64512"
    );
    peer.as_number = Some(64512);
    net.reconfigure(&no_mesh(), &[peer], "BGPPeer p applied");
    net.settle();
    assert_eq!(
        net.session_between("r0n0", "r1n0").state,
        SessionState::Established
    );
    assert_eq!(net.next_hop_name("r0n0", &block(1, 0)).unwrap(), "r1n0");
}

#[test]
fn a_node_that_joins_gets_its_mesh_sessions_and_its_blocks_travel() {
    let t = one_rack(3);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    for i in 0..3 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.settle();
    let old: Vec<(SessionId, u32)> = [("r0n0", "r0n1"), ("r0n0", "r0n2"), ("r0n1", "r0n2")]
        .iter()
        .map(|(a, b)| net.id_and_epoch(a, b))
        .collect();
    net.join_r0("new", "10.0.0.50");
    let t = net.now;
    net.reconfigure(&BgpConfig::default(), &[], "node new joined");
    assert_eq!(
        net.lines(BgpLogKind::SpeakerUp, t),
        ["new: starts speaking BGP: node new joined"]
    );
    net.originate("new", "10.244.9.0/26");
    net.settle();
    assert_eq!(net.engine.established_sessions(), 6);
    let kept: Vec<(SessionId, u32)> = [("r0n0", "r0n1"), ("r0n0", "r0n2"), ("r0n1", "r0n2")]
        .iter()
        .map(|(a, b)| net.id_and_epoch(a, b))
        .collect();
    assert_eq!(old, kept);
    for i in 0..3 {
        let node = format!("r0n{i}");
        assert_eq!(net.next_hop_name(&node, "10.244.9.0/26").unwrap(), "new");
        assert_eq!(net.next_hop_name("new", &block(0, i)).unwrap(), node);
    }
}

#[test]
fn a_new_mesh_restart_time_resets_the_mesh_sessions() {
    // BIRD restarts a protocol whose `graceful restart time` changed (`bgp_reconfigure`
    // compares the whole BGP configuration), so nodeMeshMaxRestartTime applied resets every
    // mesh session, and the session takes the new time.
    let t = one_rack(2);
    let mut net = Net::new(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird);
    net.settle();
    let t = net.now;
    let config = BgpConfig {
        node_mesh_restart_time: Some(SimDuration::from_secs(30)),
        ..BgpConfig::default()
    };
    net.reconfigure(&config, &[], "BGPConfiguration default applied");
    assert_eq!(
        net.lines(BgpLogKind::SessionDown, t),
        [
            "r0n0 – r0n1: configuration changed: BGPConfiguration default applied \
          (graceful restart time 2m → 30s)"
        ]
    );
    net.settle();
    assert_eq!(
        net.session_between("r0n0", "r0n1").restart_time,
        SimDuration::from_secs(30)
    );
}
