//! Update groups (`engine/groups.rs`) against the per-session computation: random small
//! clusters (a full mesh, reflectors of one or two clusters, reflectors in two racks, eBGP to
//! the racks' ToRs through the fabric) driven by random event sequences (blocks and borrowed
//! addresses originated and withdrawn, speakers crashing and coming back, graceful restarts,
//! node links going down and up, at random instants, with BIRD's timer jitter) must give the
//! same log, line for line, and the same RIBs (every candidate with its attributes and
//! verdict) at every step, with update groups on and off.
//!
//! The same runs check shared RIB states (`engine/shared.rs`) against every speaker's own:
//! with sharing on, speakers name sources by peer, hold interned states together and replay
//! each other's steps from the memo, and the states no speaker holds are collected after
//! every step; with it off, every step is computed by the speaker taking it.

use proptest::prelude::*;

use super::*;

/// The cluster shapes drawn.
#[derive(Clone, Copy, Debug)]
enum Shape {
    /// One rack, full node-to-node mesh.
    Mesh(usize),
    /// One rack, nodes 0–2 reflect (one cluster) or nodes 0–1 (two clusters).
    Reflectors { nodes: usize, same_cluster: bool },
    /// Two racks, node 0 of each reflects (one cluster).
    TwoRacks(usize),
    /// Two racks, an AS per rack, nodes peering with their ToR over eBGP.
    AsPerRack(usize),
}

/// What happens at one instant.
#[derive(Clone, Copy, Debug)]
enum Op {
    Originate(usize, usize),
    Withdraw(usize, usize),
    Down(usize),
    Up(usize),
    Restart(usize, u64),
    Link(usize, bool),
}

/// The prefixes nodes originate: four blocks and an address borrowed inside the first.
const PREFIXES: [&str; 5] = [
    "10.244.0.0/26",
    "10.244.0.64/26",
    "10.244.1.0/26",
    "10.244.1.64/26",
    "10.244.0.5/32",
];

/// BIRD's jitter from a small deterministic stream (both runs draw the same values in the
/// same order, as they run the same timers).
#[derive(Debug)]
struct Lcg(u64);

impl config::TimerJitter for Lcg {
    fn draw(&mut self, bound: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % (bound + 1)
    }
}

/// How the engine runs: update groups, shared states.
#[derive(Clone, Copy, Debug)]
struct Sharing {
    groups: bool,
    states: bool,
}

const EVERYTHING_SHARED: Sharing = Sharing {
    groups: true,
    states: true,
};

fn build(shape: Shape, seed: u64, sharing: Sharing) -> (Net, Vec<String>) {
    fn one(_: usize, i: usize) -> NodeBgp {
        NodeBgp {
            route_reflector_cluster_id: (i < 3).then(|| Ipv4Addr::new(1, 1, 1, 1)),
            ..NodeBgp::default()
        }
    }
    fn per_rack_as(r: usize, _: usize) -> NodeBgp {
        NodeBgp {
            as_number: Some(65101 + r as u32),
            ..NodeBgp::default()
        }
    }
    let rack = |nodes, node_bgp| RackSpec { nodes, node_bgp };
    let (racks, config, peers, fabric) = match shape {
        Shape::Mesh(n) => (vec![rack(n, plain)], BgpConfig::default(), vec![], false),
        Shape::Reflectors {
            nodes,
            same_cluster,
        } => (
            vec![rack(nodes, if same_cluster { one } else { two_clusters })],
            no_mesh(),
            vec![to_reflectors()],
            false,
        ),
        Shape::TwoRacks(n) => (
            vec![rack(n, first_reflects), rack(n, first_reflects)],
            no_mesh(),
            vec![to_reflectors()],
            false,
        ),
        Shape::AsPerRack(n) => (
            vec![rack(n, per_rack_as), rack(n, per_rack_as)],
            no_mesh(),
            as_per_rack_peers(),
            true,
        ),
    };
    let names = racks
        .iter()
        .enumerate()
        .flat_map(|(r, spec)| (0..spec.nodes).map(move |i| format!("r{r}n{i}")))
        .collect();
    let t = topology(&racks, fabric);
    let peering = plan(&t, &config, &peers, true);
    let timers = TimerProfile::CalicoBird;
    let mut engine = BgpEngine::new(&t, peering, Timers::for_profile(timers), &settings());
    engine.set_jitter(Box::new(Lcg(seed)));
    engine.set_update_groups(sharing.groups);
    engine.set_shared_states(sharing.states);
    let mut net = Net {
        topology: t,
        engine,
        queue: BinaryHeap::new(),
        seq: 0,
        now: SimTime::ZERO,
        handled: 0,
        log: Vec::new(),
    };
    let pools = vec![ExportPool {
        cidr: cidr("10.240.0.0/12"),
        disable_bgp_export: false,
    }];
    let evs = net.engine.set_pools(SimTime::ZERO, pools);
    net.push(evs);
    let evs = net.engine.start(SimTime::ZERO);
    net.push(evs);
    (net, names)
}

impl Net {
    fn apply(&mut self, op: Op, names: &[String]) {
        let name = |i: usize| &names[i % names.len()];
        let now = self.now;
        let evs = match op {
            Op::Originate(n, p) => {
                let d = self.dev(name(n));
                self.engine.originate(now, d, cidr(PREFIXES[p]))
            }
            Op::Withdraw(n, p) => {
                let d = self.dev(name(n));
                self.engine.withdraw(now, d, cidr(PREFIXES[p]))
            }
            Op::Down(n) => {
                let d = self.dev(name(n));
                self.engine.speaker_down(now, d)
            }
            Op::Up(n) => {
                let d = self.dev(name(n));
                self.engine.speaker_up(now, d)
            }
            Op::Restart(n, secs) => {
                let d = self.dev(name(n));
                self.engine
                    .restart_bgp(now, d, SimDuration::from_secs(secs))
            }
            Op::Link(n, up) => {
                let node = name(n);
                let rack = node.split('n').next().expect("r<r>n<i>");
                let tor = self.dev(&format!("tor-{rack}"));
                let Some(link) = self.topology.link_between(self.dev(node), tor) else {
                    return;
                };
                self.topology.set_link_up(link, up);
                let topo = self.topology.clone();
                self.engine.link_changed(now, &topo, &[link])
            }
        };
        self.push(evs);
    }

    /// Everything the engine shows: every device's candidates and best routes, and the
    /// UPDATE counters.
    fn state(&self) -> Vec<String> {
        let mut out = vec![format!("updates {}", self.engine.total_updates())];
        for s in self.engine.speakers() {
            out.push(format!(
                "{:?} sent {} received {} rib {} {:?} {:?}",
                s.device,
                self.engine.updates_sent(s.device),
                self.engine.updates_received(s.device),
                self.engine.rib_size(s.device),
                self.engine.loc_rib(s.device),
                self.engine.best_routes(s.device),
            ));
            out.push(format!(
                "{:?} {:?}",
                self.engine.learned_next_hops(s.device),
                self.engine.equal_cost_next_hops(s.device)
            ));
        }
        out
    }
}

/// What `BgpEngine::learned_spread` says of every speaker holds: outside the prefixes it
/// names for a speaker, the speaker's learned routes are the reference's; it names none only
/// for a restarting daemon's node (its kernel's routes).
fn spread_holds(engine: &BgpEngine) -> Result<(), String> {
    let devices: Vec<DeviceId> = engine.speakers().iter().map(|s| s.device).collect();
    let spread = engine.learned_spread(&devices);
    if spread.differing.len() != devices.len() {
        return Err("one entry per device".to_string());
    }
    let outside = |list: Vec<(PrefixId, IpNet, IpAddr)>, differing: &[PrefixId]| {
        list.into_iter()
            .filter(|r| differing.binary_search(&r.0).is_err())
            .collect::<Vec<_>>()
    };
    for (&d, differing) in devices.iter().zip(&spread.differing) {
        let restarting = engine.restart.kernel(engine.by_device[&d]).is_some();
        match differing {
            None if restarting => {}
            None => return Err(format!("{d:?} has no differing prefixes")),
            Some(_) if restarting => return Err(format!("{d:?} restarts")),
            Some(differing) => {
                if !differing.is_sorted_by(|a, b| a < b) {
                    return Err(format!("{d:?}'s prefixes not ascending"));
                }
                let mine = outside(engine.learned_next_hops(d), differing);
                if mine != outside(spread.reference.clone(), differing) {
                    return Err(format!("{d:?} differs from the reference elsewhere"));
                }
                for &p in differing {
                    let one = engine.learned_next_hops(d).into_iter().find(|r| r.0 == p);
                    if engine.learned_next_hop(d, p) != one.map(|r| (r.1, r.2)) {
                        return Err(format!("{d:?}'s route for {p:?} alone"));
                    }
                }
            }
        }
    }
    Ok(())
}

fn shape() -> impl Strategy<Value = Shape> {
    prop_oneof![
        (2usize..6).prop_map(Shape::Mesh),
        (4usize..8, any::<bool>()).prop_map(|(nodes, same_cluster)| Shape::Reflectors {
            nodes,
            same_cluster
        }),
        (2usize..5).prop_map(Shape::TwoRacks),
        (1usize..4).prop_map(Shape::AsPerRack),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    let node = 0usize..16;
    let prefix = 0..PREFIXES.len();
    prop_oneof![
        4 => (node.clone(), prefix.clone()).prop_map(|(n, p)| Op::Originate(n, p)),
        2 => (node.clone(), prefix).prop_map(|(n, p)| Op::Withdraw(n, p)),
        1 => node.clone().prop_map(Op::Down),
        1 => node.clone().prop_map(Op::Up),
        1 => (node.clone(), 0u64..200).prop_map(|(n, s)| Op::Restart(n, s)),
        1 => (node, any::<bool>()).prop_map(|(n, up)| Op::Link(n, up)),
    ]
}

/// Runs `ops` on the cluster with everything shared and with `reference`, comparing the
/// logs and RIBs after every step and at the end; the shared engine collects its unused
/// states after every step.
fn same_as_reference(
    shape: Shape,
    seed: u64,
    ops: Vec<(u64, Op)>,
    reference: Sharing,
) -> Result<(), TestCaseError> {
    let (mut shared, names) = build(shape, seed, EVERYTHING_SHARED);
    let (mut alone, _) = build(shape, seed, reference);
    let mut t = SimTime::ZERO;
    for (step, (wait_ms, op)) in ops.into_iter().enumerate() {
        t = t + SimDuration::from_millis(wait_ms);
        for net in [&mut shared, &mut alone] {
            net.run_until(t);
            net.apply(op, &names);
        }
        shared.engine.collect_unused_states();
        for net in [&mut shared, &mut alone] {
            // What flushes keep of the sessions (`send.rs`, `SendCache`) follows them.
            prop_assert!(net.engine.sessions_up_in_step(), "up after step {}", step);
            prop_assert!(
                net.engine.speaker_records_in_step(),
                "inboxes and marks after step {}",
                step
            );
            prop_assert!(
                net.engine.flush_targets_in_step().0,
                "targets after step {}",
                step
            );
            spread_holds(&net.engine)
                .map_err(|e| TestCaseError::fail(format!("{e} after step {step}")))?;
        }
        prop_assert_eq!(
            &shared.log,
            &alone.log,
            "log up to step {} ({:?})",
            step,
            op
        );
        prop_assert_eq!(shared.state(), alone.state(), "state after step {}", step);
    }
    // Past every hold time and restart timer.
    let end = t + SimDuration::from_secs(1_000);
    shared.run_until(end);
    alone.run_until(end);
    prop_assert_eq!(&shared.log, &alone.log);
    prop_assert_eq!(shared.state(), alone.state());
    // A flush works out each group's changes once, also when they come to nothing for it.
    prop_assert_eq!(shared.engine.group_bodies_repeated, 0);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn update_groups_give_what_every_session_computed_alone_gives(
        shape in shape(),
        seed in any::<u64>(),
        ops in prop::collection::vec((0u64..3_000, op()), 1..14),
    ) {
        let groups_off = Sharing { groups: false, states: true };
        same_as_reference(shape, seed, ops, groups_off)?;
    }

    #[test]
    fn shared_states_give_what_every_speaker_computing_alone_gives(
        shape in shape(),
        seed in any::<u64>(),
        ops in prop::collection::vec((0u64..3_000, op()), 1..14),
    ) {
        let states_off = Sharing { groups: true, states: false };
        same_as_reference(shape, seed, ops, states_off)?;
    }
}
