use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::forwarding::connect::{PolicyInputs, connect};
use crate::forwarding::reach::tests::{Gen, scenario};
use crate::model::network::CalicoProfile;
use crate::model::selector::Selector;
use crate::policy::eval::NamedPort;
use crate::policy::model::{
    Action, EntityRule, Policy, PolicyKind, PolicyResource, PolicySet, PolicyTypes, PortMatch,
    Protocol, Rule, Tier, TierAction,
};

pub(crate) fn sel(s: &str) -> Selector {
    Selector::parse(s).expect("selector in fixture")
}

/// A random entity: a selector, a namespace selector, nets over the pod ranges, ports.
fn entity(g: &mut Gen, with_ports: bool) -> EntityRule {
    let mut e = EntityRule::default();
    if g.chance(40) {
        e.selector = Some(sel(g.pick(&[
            "app == 'x'",
            "app != 'y'",
            "has(app)",
            "all()",
        ])));
    }
    if g.chance(25) {
        e.namespace_selector = Some(sel(g.pick(&["team == 'red'", "all()"])));
    }
    if g.chance(20) {
        e.not_selector = Some(sel("app == 'z'"));
    }
    if g.chance(25) {
        e.nets = vec![
            g.pick(&["10.200.0.0/16", "10.200.1.0/24", "10.0.0.0/8"])
                .parse()
                .unwrap(),
        ];
    }
    if g.chance(15) {
        e.not_nets = vec![g.pick(&["10.200.0.0/24", "10.1.0.100/32"]).parse().unwrap()];
    }
    if with_ports && g.chance(50) {
        let choices = [
            PortMatch::single(80),
            PortMatch::Range {
                first: 8000,
                last: 8100,
            },
            PortMatch::Named("web".to_string()),
        ];
        e.ports = vec![choices[g.below(choices.len())].clone()];
    }
    e
}

fn random_policy(g: &mut Gen, i: usize) -> Policy {
    let kind = g.pick(&[
        PolicyKind::KubernetesNetworkPolicy,
        PolicyKind::CalicoNetworkPolicy,
        PolicyKind::GlobalNetworkPolicy,
    ]);
    let namespace = kind
        .is_namespaced()
        .then(|| g.pick(&["red", "blue"]).to_string());
    let rules = |g: &mut Gen| -> Vec<Rule> {
        (0..g.below(3))
            .map(|_| {
                let action = if kind == PolicyKind::KubernetesNetworkPolicy {
                    Action::Allow
                } else {
                    g.pick(&[Action::Allow, Action::Deny, Action::Pass, Action::Log])
                };
                let mut r = Rule::any(action);
                let ports = g.chance(50);
                if ports {
                    r.protocol = Some(g.pick(&[Protocol::TCP, Protocol::UDP]));
                }
                r.source = entity(g, false);
                r.destination = entity(g, ports);
                r
            })
            .collect()
    };
    let ingress = rules(g);
    let egress = rules(g);
    Policy {
        kind,
        staged: g.chance(10),
        namespace,
        name: format!("p{i}"),
        tier: if kind != PolicyKind::KubernetesNetworkPolicy && g.chance(30) {
            "guard".to_string()
        } else {
            "default".to_string()
        },
        order: g.chance(70).then(|| g.pick(&[100.0, 1000.0, 2000.0])),
        selector: sel(g.pick(&["all()", "app == 'x'", "app in {'y', 'z'}"])),
        service_account_selector: None,
        namespace_selector: None,
        types: PolicyTypes {
            ingress: g.chance(70),
            egress: g.chance(50),
        },
        ingress,
        egress,
    }
}

/// Namespace `red` (labelled `team: red`) and the tier `guard` (order 100) ending in
/// `default_action`.
fn red_and_guard(default_action: TierAction) -> PolicySet {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    set.apply(&PolicyResource::Namespace {
        name: "red".into(),
        labels: [("team".to_string(), "red".to_string())].into(),
    });
    set.apply(&PolicyResource::Tier(Tier {
        name: "guard".into(),
        order: Some(100.0),
        default_action,
    }));
    set
}

fn inputs(seed: u64, dp: &Dataplane) -> PolicyInputs {
    let mut g = Gen(seed ^ 0x5eed);
    let mut set = red_and_guard(g.pick(&[TierAction::Deny, TierAction::Pass]));
    for i in 0..1 + g.below(4) {
        set.apply(&PolicyResource::Policy(Box::new(random_policy(&mut g, i))));
    }
    let mut endpoints = BTreeMap::new();
    // Host-network pods have no workload endpoint.
    for p in dp.pods().filter(|p| p.attachment != Attachment::Host) {
        let ns = g.pick(&["red", "blue"]);
        let app = g.pick(&["x", "y", "z"]);
        let labels = [("app".to_string(), app.to_string())].into();
        endpoints.insert(
            p.key,
            Endpoint {
                ports: if g.chance(50) {
                    vec![NamedPort {
                        name: "web".into(),
                        port: 8080,
                        protocol: Protocol::TCP,
                    }]
                } else {
                    Vec::new()
                },
                windows: g.chance(10),
                ..Endpoint::pod(ns, &format!("pod-{}", p.key.0), p.ip, &labels)
            },
        );
    }
    PolicyInputs {
        set,
        endpoints,
        services: BTreeMap::new(),
    }
}

/// Every ordered pair, every packet, one connection at a time.
fn brute(
    dp: &Dataplane,
    pol: &Policing<'_>,
    from: &[PodKey],
    to: &[PodKey],
    packets: &[Packet],
) -> PolicyReach {
    let mut out = PolicyReach::default();
    let mut groups: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
    for s in from {
        for d in to {
            if s == d {
                continue;
            }
            let Some(ip) = dp.pod(*d).map(|p| p.ip) else {
                continue;
            };
            out.pairs += 1;
            let cs: Vec<Connection> = packets
                .iter()
                .map(|p| {
                    connect(dp, Some(pol), Source::Pod(*s), ip, p, false).expect("in the dataplane")
                })
                .collect();
            let delivered = cs.iter().filter(|c| c.verdict.delivered()).count();
            if delivered == packets.len() {
                out.all_packets += 1;
            }
            if delivered > 0 {
                out.some_packets += 1;
                if delivered < packets.len() {
                    out.partial_example = Some(
                        out.partial_example
                            .map_or((*s, *d), |e: (PodKey, PodKey)| e.min((*s, *d))),
                    );
                }
                continue;
            }
            let egress_denied = |c: &Connection| matches!(&c.verdict, ConnectionVerdict::PolicyDenied(x) if x.side == Side::Egress);
            let verdict = if cs.iter().all(egress_denied) {
                cs[0].verdict.clone()
            } else {
                match cs.iter().find(|c| !egress_denied(c)).map(|c| &c.verdict) {
                    Some(v @ ConnectionVerdict::Dropped { .. }) => v.clone(),
                    _ => cs[0].verdict.clone(),
                }
            };
            let g = groups.entry(verdict).or_insert((0, (*s, *d)));
            g.0 += 1;
            g.1 = g.1.min((*s, *d));
        }
    }
    out.blocked = groups
        .into_iter()
        .map(|(verdict, (count, example))| BlockedGroup {
            verdict,
            count,
            example,
        })
        .collect();
    out
}

use crate::forwarding::connect::Connection;
use crate::forwarding::walk::Source;

/// A policy of `kind` in `tier` selecting `selector`, with its rules.
pub(crate) fn policy(
    kind: PolicyKind,
    namespace: Option<&str>,
    name: &str,
    tier: &str,
    selector: &str,
    ingress: Option<Vec<Rule>>,
    egress: Option<Vec<Rule>>,
) -> PolicyResource {
    PolicyResource::Policy(Box::new(Policy {
        tier: tier.to_string(),
        order: Some(100.0),
        selector: sel(selector),
        types: PolicyTypes {
            ingress: ingress.is_some(),
            egress: egress.is_some(),
        },
        ingress: ingress.unwrap_or_default(),
        egress: egress.unwrap_or_default(),
        ..Policy::new(kind, namespace, name)
    }))
}

/// Three racks of six pods per node, every node holding all three apps of both
/// namespaces, so that each cohort (rack) and each destination node mixes policy classes,
/// and one node blackholes another's block (a routing drop for some pairs only). Policies
/// that give every kind of fate between classes:
/// - `x` senders: TCP denied at their egress (`egress-tcp` rule 0), the rest allowed out;
/// - `z` senders: everything denied at their egress (tier `guard`, its end-of-tier Deny);
/// - `red` receivers: ingress only from `y` on TCP 80.
///
/// So x → red delivers nothing: the first packet (TCP) is denied at x's egress and the
/// others at red's ingress — a denial after routing on the sender's side, grouped by the
/// sender's node; y → red is partial (TCP 80); z → anything is denied at egress, whatever
/// routing does; x, y → blue delivers UDP, SCTP and ICMP (x) or everything (y).
fn mixed_classes() -> (Dataplane, PolicyInputs) {
    let zones: [&[u8]; 2] = [&[3, 2], &[2]];
    let t = crate::forwarding::testutil::topology(&zones);
    let mut b = crate::forwarding::testutil::calico(
        &t,
        crate::model::network::EncapMode::Always,
        crate::model::network::EncapMode::Never,
        6,
    );
    let n1 = crate::forwarding::testutil::dev(&t, "a0-n1");
    b.blackhole(n1, crate::forwarding::testutil::block(5));
    let dp = b.build();
    let mut set = red_and_guard(TierAction::Deny);
    let mut deny_tcp = Rule::any(Action::Deny);
    deny_tcp.protocol = Some(Protocol::TCP);
    set.apply(&policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "egress-tcp",
        "default",
        "app == 'x'",
        None,
        Some(vec![deny_tcp, Rule::any(Action::Allow)]),
    ));
    set.apply(&policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "guard.z-out",
        "guard",
        "app == 'z'",
        None,
        Some(vec![]),
    ));
    let mut from_y = Rule::any(Action::Allow);
    from_y.protocol = Some(Protocol::TCP);
    from_y.source.selector = Some(sel("app == 'y'"));
    from_y.destination.ports = vec![PortMatch::single(80)];
    set.apply(&policy(
        PolicyKind::KubernetesNetworkPolicy,
        Some("red"),
        "from-y",
        "default",
        "all()",
        Some(vec![from_y]),
        None,
    ));
    let mut endpoints = BTreeMap::new();
    for p in dp.pods() {
        let ns = if p.key.0 % 2 == 0 { "red" } else { "blue" };
        let app = ["x", "y", "z"][(p.key.0 as usize / 2) % 3];
        let labels = [("app".to_string(), app.to_string())].into();
        endpoints.insert(
            p.key,
            Endpoint::pod(ns, &format!("pod-{}", p.key.0), p.ip, &labels),
        );
    }
    let inputs = PolicyInputs {
        set,
        endpoints,
        services: BTreeMap::new(),
    };
    (dp, inputs)
}

/// A DaemonSet of host-network pods on every node of two racks beside one pod-network
/// pod per node, and a policy whose only rule admits rack a0's subnet (10.0.0.0/24) to
/// every pod-network pod. Host traffic is one class per node (its exemption towards the
/// node's own pods depends on the node), but policy sees only the node's address, and the
/// only rule net splits the five nodes into two groups: a0's three and a1's two.
#[test]
fn host_traffic_of_nodes_every_rule_sees_alike_is_evaluated_once() {
    let zones: [&[u8]; 1] = [&[3, 2]];
    let t = crate::forwarding::testutil::topology(&zones);
    let mut b = crate::forwarding::testutil::calico(
        &t,
        crate::model::network::EncapMode::Always,
        crate::model::network::EncapMode::Never,
        1,
    );
    for (i, n) in t.nodes.iter().enumerate() {
        b.pod(
            PodKey(1000 + i as u64),
            n.ip,
            crate::model::topology::NodeId(i as u32),
            Attachment::Host,
        );
    }
    let dp = b.build();
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    let mut from_a0 = Rule::any(Action::Allow);
    from_a0.source.nets = vec!["10.0.0.0/24".parse().expect("a net")];
    set.apply(&policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "from-a0",
        "default",
        "all()",
        Some(vec![from_a0]),
        None,
    ));
    let mut endpoints = BTreeMap::new();
    for p in dp.pods().filter(|p| p.attachment != Attachment::Host) {
        let labels = [("app".to_string(), "x".to_string())].into();
        endpoints.insert(
            p.key,
            Endpoint::pod("red", &format!("pod-{}", p.key.0), p.ip, &labels),
        );
    }
    let inputs = PolicyInputs {
        set,
        endpoints,
        services: BTreeMap::new(),
    };
    let pol = Policing::new(&inputs);
    let pods: Vec<&PodInfo> = dp.pods().collect();
    let packets = packet_classes(&pol.engine, inputs.endpoints.values());
    let judge = Judge::new(&dp, &pol, &pods, &pods, &packets);
    let hosts = judge
        .seen
        .iter()
        .filter(|s| matches!(s, Seen::Host(_)))
        .count();
    assert_eq!(hosts, 5);
    // The pod-network pods (one endpoint class: their addresses are in no rule net) and
    // the two groups of nodes.
    assert_eq!(judge.views, 3);
    let all: Vec<PodKey> = pods.iter().map(|p| p.key).collect();
    let r = policy_reachability(&dp, &pol, &all, &all, None);
    assert_eq!(r, brute(&dp, &pol, &all, &all, &packets));
    // Rack a1's host traffic is denied at the pods of other nodes (end of tier), a0's is not.
    assert!(r.blocked.iter().any(|g| matches!(
        &g.verdict,
        ConnectionVerdict::PolicyDenied(d) if d.side == Side::Ingress
    )));
}

#[test]
fn tallying_per_policy_class_equals_connecting_every_pair() {
    let (dp, inputs) = mixed_classes();
    let pol = Policing::new(&inputs);
    let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
    let packets = packet_classes(&pol.engine, inputs.endpoints.values());
    let r = policy_reachability(&dp, &pol, &all, &all, None);
    assert_eq!(r, brute(&dp, &pol, &all, &all, &packets));
    let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
    assert_eq!(
        policy_reachability(&dp, &pol, &all, &half, None),
        brute(&dp, &pol, &all, &half, &packets)
    );
    // Every kind of fate occurs: delivered for every packet, for some, routing drops,
    // denials at the egress before and after routing, at the ingress.
    let denied_by = |side: Side, name: &str| {
        r.blocked.iter().any(|g| match &g.verdict {
            ConnectionVerdict::PolicyDenied(d) => {
                d.side == side && format!("{:?}", d.by).contains(name)
            }
            _ => false,
        })
    };
    assert!(r.all_packets > 0 && r.some_packets > r.all_packets);
    assert!(denied_by(Side::Egress, "egress-tcp"));
    assert!(denied_by(Side::Egress, "guard"));
    assert!(
        r.blocked
            .iter()
            .any(|g| matches!(g.verdict, ConnectionVerdict::Dropped { .. }))
    );
    // x → red after routing: one group per sender node (7 nodes hold x senders).
    let egress_after = r
        .blocked
        .iter()
        .filter(|g| match &g.verdict {
            ConnectionVerdict::PolicyDenied(d) => format!("{:?}", d.by).contains("egress-tcp"),
            _ => false,
        })
        .count();
    assert_eq!(egress_after, 7);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(120))]
    /// Policy classes and packet classes give exactly what evaluating every connection
    /// of every pair and every packet gives.
    #[test]
    fn classes_equal_connecting_every_pair(seed in any::<u64>()) {
        let (_t, dp) = scenario(seed);
        let inputs = inputs(seed, &dp);
        let pol = Policing::new(&inputs);
        let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
        let packets = packet_classes(&pol.engine, inputs.endpoints.values());
        prop_assert_eq!(
            policy_reachability(&dp, &pol, &all, &all, None),
            brute(&dp, &pol, &all, &all, &packets)
        );
        let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
        let one = [Packet::tcp(8080)];
        prop_assert_eq!(
            policy_reachability(&dp, &pol, &half, &all, Some(&one)),
            brute(&dp, &pol, &half, &all, &one)
        );
    }

    /// The result does not depend on how many threads share the routing.
    #[test]
    fn policy_reachability_does_not_depend_on_the_number_of_threads(seed in any::<u64>()) {
        let (_t, dp) = scenario(seed);
        let inputs = inputs(seed, &dp);
        let pol = Policing::new(&inputs);
        let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
        let on = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .expect("a thread pool")
                .install(|| policy_reachability(&dp, &pol, &all, &all, None))
        };
        let one = on(1);
        prop_assert_eq!(&one, &on(3));
    }
}
