//! Graceful restart (`restart.rs`, REFERENCE §4.4), driven by the event loop of the engine
//! tests. Times are derived by hand from the tests' settings: one-way latency 20us inside a
//! rack, processing 20us + 2us per prefix, calico-bird timers without jitter (connect delay
//! 2s, hold 240s), restart time 120s. A fresh mesh is Established at E = 2s + 40us.

use super::*;
use crate::bgp::restart::RESTART_TIME;

impl Net {
    fn restart_bgp(&mut self, node: &str, down_for: SimDuration) {
        let d = self.dev(node);
        let evs = self.engine.restart_bgp(self.now, d, down_for);
        self.push(evs);
    }

    fn withdraw(&mut self, node: &str, prefix: &str) {
        let d = self.dev(node);
        let evs = self.engine.withdraw(self.now, d, cidr(prefix));
        self.push(evs);
    }

    /// The prefixes the node's FIB has from BGP, with the next hop's address.
    fn fib(&self, node: &str) -> Vec<(IpNet, IpAddr)> {
        self.engine
            .learned_next_hops(self.dev(node))
            .into_iter()
            .map(|(_, p, nh)| (p, nh))
            .collect()
    }

    /// The log lines of one kind, as `time subject: outcome`.
    fn said(&self, kind: BgpLogKind) -> Vec<String> {
        self.log
            .iter()
            .filter(|e| e.kind == kind)
            .map(|e| format!("{} {}: {}", e.time, e.subject, e.outcome))
            .collect()
    }
}

fn at(s: u64, us: u64) -> SimTime {
    secs(s) + SimDuration::from_micros(us)
}

fn just_before(t: SimTime) -> SimTime {
    SimTime::ZERO + SimDuration::from_nanos((t - SimTime::ZERO).as_nanos() - 1)
}

/// A mesh of three nodes, each originating its block; r0n2 also a second block.
fn mesh3() -> Net {
    mesh3_with(&BgpConfig::default())
}

fn mesh3_with(config: &BgpConfig) -> Net {
    let t = one_rack(3);
    let mut net = Net::new(t, config, &[], TimerProfile::CalicoBird);
    for i in 0..3 {
        net.originate(&format!("r0n{i}"), &block(0, i));
    }
    net.originate("r0n2", "10.244.2.64/26");
    net.run_until(secs(10));
    net
}

#[test]
fn a_restarting_daemon_s_routes_stay_with_its_peers_and_are_refreshed_when_it_returns() {
    let mut net = mesh3();
    let fib_before = net.fib("r0n2");
    assert_eq!(fib_before.len(), 2, "r0n0's and r0n1's blocks");
    net.restart_bgp("r0n2", SimDuration::from_secs(8));
    net.run_until(secs(10));
    // The TCP connections closed: both sessions are down at once, yet r0n0 and r0n1 keep
    // r0n2's routes (stale) and forward with them; r0n2's node forwards with its kernel.
    assert_eq!(
        net.session_between("r0n0", "r0n2").state,
        SessionState::Idle
    );
    for node in ["r0n0", "r0n1"] {
        assert_eq!(net.next_hop_name(node, &block(0, 2)).unwrap(), "r0n2");
        assert_eq!(net.next_hop_name(node, "10.244.2.64/26").unwrap(), "r0n2");
    }
    assert!(
        net.engine.loc_rib(net.dev("r0n2")).is_empty(),
        "BIRD is gone"
    );
    assert_eq!(net.fib("r0n2"), fib_before, "the kernel kept them");
    assert!(net.engine.forwards(net.dev("r0n2")));
    assert!(!net.engine.is_up(net.dev("r0n2")));
    assert_eq!(
        net.said(BgpLogKind::RoutesStale),
        [
            "10s r0n0 <- r0n2: the connection closed: graceful restart, 2 routes kept as stale for up to 2m",
            "10s r0n1 <- r0n2: the connection closed: graceful restart, 2 routes kept as stale for up to 2m",
        ]
    );
    // While it is down, IPAM takes its second block away: the restarted daemon no longer
    // has it.
    net.run_until(secs(12));
    net.withdraw("r0n2", "10.244.2.64/26");
    // Back at 18s; sessions Established at 18s + 2s + 40us. r0n2 sends its one block and
    // End-of-RIB: it arrives at +20us and takes 20us + 2us to process, so r0n0 flushes the
    // stale second block at 20s + 82us, not before.
    net.run_until(at(20, 81));
    assert_eq!(net.next_hop_name("r0n0", "10.244.2.64/26").unwrap(), "r0n2");
    net.run_until(at(20, 82));
    assert!(net.best("r0n0", "10.244.2.64/26").is_none());
    assert_eq!(net.next_hop_name("r0n0", &block(0, 2)).unwrap(), "r0n2");
    net.settle();
    assert_eq!(net.engine.established_sessions(), 3);
    assert_eq!(net.fib("r0n2"), fib_before, "relearned: the same routes");
    let flushed = net.said(BgpLogKind::StaleFlushed);
    assert!(
        flushed.contains(
            &"20.000082s r0n0 <- r0n2: End-of-RIB received: 1 stale route flushed".to_string()
        ),
        "{flushed:?}"
    );
    // r0n2 waited for End-of-RIB from both peers: their tables (one block each) arrive
    // together at +20us and take 22us each, one after the other: done at 20s + 104us.
    assert!(
        flushed
            .iter()
            .any(|l| l.starts_with("20.000104s r0n2: graceful restart recovery done")),
        "{flushed:?}"
    );
}

#[test]
fn stale_routes_go_when_the_restart_time_runs_out() {
    let mut net = mesh3();
    let fib_before = net.fib("r0n2");
    net.restart_bgp("r0n2", SimDuration::from_secs(200));
    let expiry = secs(10) + RESTART_TIME;
    net.run_until(just_before(expiry));
    assert_eq!(net.next_hop_name("r0n1", &block(0, 2)).unwrap(), "r0n2");
    net.run_until(expiry);
    for node in ["r0n0", "r0n1"] {
        assert!(net.best(node, &block(0, 2)).is_none(), "{node}");
    }
    // r0n2's kernel keeps its routes while its daemon is still down.
    assert_eq!(net.fib("r0n2"), fib_before);
    // Back at 210s, Established at 212s + 40us, its blocks arrive 20us later and are
    // processed in 24us.
    net.run_until(at(212, 84));
    assert_eq!(net.next_hop_name("r0n1", &block(0, 2)).unwrap(), "r0n2");
}

#[test]
fn node_mesh_max_restart_time_sets_how_long_stale_routes_stay() {
    // nodeMeshMaxRestartTime 15s: confd writes `graceful restart time 15;` on every mesh
    // session, r0n2 advertises it, and its helpers keep its routes 15s (BIRD starts that
    // timer exactly): down at 10s, gone at 25s.
    let config = BgpConfig {
        node_mesh_restart_time: Some(SimDuration::from_secs(15)),
        ..BgpConfig::default()
    };
    let mut net = mesh3_with(&config);
    net.restart_bgp("r0n2", SimDuration::from_secs(30));
    net.run_until(just_before(secs(25)));
    assert_eq!(net.next_hop_name("r0n1", &block(0, 2)).unwrap(), "r0n2");
    net.run_until(secs(25));
    for node in ["r0n0", "r0n1"] {
        assert!(net.best(node, &block(0, 2)).is_none(), "{node}");
    }
    let stale = net.said(BgpLogKind::RoutesStale);
    assert!(
        stale.contains(&"10s r0n0 <- r0n2: the connection closed: graceful restart, 2 routes kept as stale for up to 15s".to_string()),
        "{stale:?}"
    );
}

#[test]
fn a_crashed_host_back_before_the_hold_timer_noticed_restarts_gracefully() {
    // Without graceful restart the new connection would end the old session and its routes
    // at 20s, and they would come back only at 22s + 60us.
    let mut net = mesh3();
    let d = net.dev("r0n2");
    let evs = net.engine.speaker_down(net.now, d);
    net.push(evs);
    net.run_until(secs(20));
    let evs = net.engine.speaker_up(net.now, d);
    net.push(evs);
    net.run_until(secs(21));
    assert_eq!(net.next_hop_name("r0n0", &block(0, 2)).unwrap(), "r0n2");
    assert_eq!(
        net.session_between("r0n0", "r0n2").state,
        SessionState::Connect
    );
    net.settle();
    assert_eq!(net.next_hop_name("r0n0", &block(0, 2)).unwrap(), "r0n2");
    let stale = net.said(BgpLogKind::RoutesStale);
    assert!(
        stale.contains(&"20s r0n0 <- r0n2: a new connection replaced it: graceful restart, 2 routes kept as stale for up to 2m".to_string()),
        "{stale:?}"
    );
}

#[test]
fn a_hold_timer_expiry_drops_the_routes_and_bfd_graceful_keeps_them_stale() {
    // Hold timer: r0n2's last message is its table at E + 20us, so r0n0 detects at
    // E + 20us + 240s and the routes go then. BFD (`bfd graceful` on Calico nodes): detected
    // at 10s + 1.5s, the routes stay stale until 1.5s + 120s later.
    for (bfd, detected, gone) in [
        (None, at(242, 60), at(242, 60)),
        (Some(Bfd::DEFAULT), at(11, 500_000), at(131, 500_000)),
    ] {
        let t = one_rack(3);
        let s = BgpSettings { bfd, ..settings() };
        let mut net = Net::with(t, &BgpConfig::default(), &[], TimerProfile::CalicoBird, s);
        net.originate("r0n2", &block(0, 2));
        net.run_until(secs(10));
        let d = net.dev("r0n2");
        let evs = net.engine.speaker_down(net.now, d);
        net.push(evs);
        net.run_until(detected);
        assert_eq!(
            net.session_between("r0n0", "r0n2").state,
            SessionState::Idle
        );
        let before = just_before(gone);
        if before >= detected {
            net.run_until(before);
            assert!(
                net.best("r0n0", &block(0, 2)).is_some(),
                "stale until {gone}"
            );
        }
        net.run_until(gone);
        assert!(net.best("r0n0", &block(0, 2)).is_none(), "gone at {gone}");
        assert_eq!(
            net.said(BgpLogKind::RoutesStale).is_empty(),
            bfd.is_none(),
            "graceful restart only with BFD"
        );
    }
}
