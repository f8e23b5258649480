//! The policy audit of a snapshot with host-network pods: hand-derived counts on a small
//! cluster, and the audit against connecting every ordered pair with every packet class.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use super::*;
use crate::forwarding::connect::connect;
use crate::forwarding::policy_reach::tests::{policy, sel};
use crate::forwarding::testutil::{calico, pod_ip, pod_key, topology};
use crate::forwarding::walk::Source;
use crate::model::network::{CalicoProfile, EncapMode};
use crate::model::topology::{NodeId, Topology};
use crate::model::workload::PodStatus;
use crate::policy::audit::{ConnectivityRow, describe};
use crate::policy::eval::{Explain, Party, Step, packet_class_extents};
use crate::policy::model::{Action, Direction, PolicyKind, PolicySet, PortMatch, Protocol, Rule};
use crate::sim::snapshot::PodRow;

/// A pod of the fixture: key, address, node index, namespace, workload, host network.
struct Pod {
    key: PodKey,
    ip: IpAddr,
    node: u32,
    namespace: &'static str,
    workload: &'static str,
    host: bool,
}

/// The dataplane (Calico pool with `ipip`), the snapshot's pod rows and the policy inputs
/// (one endpoint per pod-network pod, labelled `app: <workload>`) of `pods` on `t` under
/// `set`.
fn world(
    t: &Topology,
    ipip: EncapMode,
    pods: &[Pod],
    set: PolicySet,
) -> (Dataplane, Vec<PodRow>, PolicyInputs) {
    let mut b = calico(t, ipip, EncapMode::Never, 0);
    for p in pods {
        let attachment = if p.host {
            Attachment::Host
        } else {
            Attachment::Calico
        };
        b.pod(p.key, p.ip, NodeId(p.node), attachment);
    }
    let dp = b.build();
    let mut endpoints = BTreeMap::new();
    let mut rows = Vec::new();
    for (i, p) in pods.iter().enumerate() {
        let name = format!("{}-{i}", p.workload);
        rows.push(PodRow {
            name: name.clone(),
            namespace: p.namespace.into(),
            workload: p.workload.into(),
            node: Some(t.node(NodeId(p.node)).name.as_str().into()),
            ip: Some(p.ip),
            pool: None,
            block: None,
            borrowed: false,
            status: PodStatus::Running,
            reason: None,
            key: p.key,
        });
        if !p.host {
            let labels = [("app".to_string(), p.workload.to_string())].into();
            endpoints.insert(p.key, Endpoint::pod(p.namespace, &name, p.ip, &labels));
        }
    }
    let inputs = PolicyInputs {
        set,
        endpoints,
        services: BTreeMap::new(),
    };
    (dp, rows, inputs)
}

fn allow_tcp(port: u16) -> Rule {
    let mut r = Rule::any(Action::Allow);
    r.protocol = Some(Protocol::TCP);
    r.destination.ports = vec![PortMatch::single(port)];
    r
}

/// (policy name ending, direction, rule index) → (actedPairs, matchingPairs, status).
fn rule_use(
    audit: &Audit,
    policy: &str,
    direction: &str,
    index: usize,
) -> (u64, u64, &'static str) {
    let p = audit
        .policy
        .policies
        .iter()
        .find(|p| p.name.ends_with(policy))
        .unwrap_or_else(|| panic!("policy {policy}"));
    let r = p
        .rules
        .iter()
        .find(|r| r.direction == direction && r.index == index)
        .unwrap_or_else(|| panic!("{policy} {direction} rule {index}"));
    (r.acted_pairs, r.matching_pairs, r.status)
}

/// Two nodes on rack a0 (10.0.0.0/24): a0-n0 = 10.0.0.10 runs web-0, web-1 and agent-0;
/// a0-n1 = 10.0.0.11 runs web-2, debug-0 and agent-1. `infra/agent` is a host-network
/// DaemonSet; `shop` has a default deny for ingress, an ingress rule admitting the node
/// subnet on TCP 8080 (as one writes for kubelet probes and node agents), and an egress rule
/// admitting only the node subnet. `tools/debug` has no policy.
fn node_subnet_cluster() -> (Dataplane, Vec<PodRow>, PolicyInputs) {
    let t = topology(&[&[2]]);
    let node_ip = |i: usize| t.nodes[i].ip;
    let pods = [
        (pod_key(0, 0), pod_ip(0, 0), 0, "shop", "web", false),
        (pod_key(0, 1), pod_ip(0, 1), 0, "shop", "web", false),
        (pod_key(1, 0), pod_ip(1, 0), 1, "shop", "web", false),
        (pod_key(1, 1), pod_ip(1, 1), 1, "tools", "debug", false),
        (PodKey(1000), node_ip(0), 0, "infra", "agent", true),
        (PodKey(1001), node_ip(1), 1, "infra", "agent", true),
    ]
    .map(|(key, ip, node, namespace, workload, host)| Pod {
        key,
        ip,
        node,
        namespace,
        workload,
        host,
    });
    let k8s = PolicyKind::KubernetesNetworkPolicy;
    let mut set = shop_ingress_from_rack_a("from-nodes");
    let mut to_nodes = Rule::any(Action::Allow);
    to_nodes.destination.nets = vec!["10.0.0.0/24".parse().expect("a net")];
    set.apply(&policy(
        k8s,
        Some("shop"),
        "to-nodes",
        "default",
        "all()",
        None,
        Some(vec![to_nodes]),
    ));
    // One segment, native routes: host traffic leaves with the node's own address.
    world(&t, EncapMode::Never, &pods, set)
}

/// Namespace `shop` isolated for ingress (`deny-in`, Kubernetes, no rules) and one Kubernetes
/// policy `name` admitting TCP 8080 from 10.0.0.0/24, the first rack's node subnet.
fn shop_ingress_from_rack_a(name: &str) -> PolicySet {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    let k8s = PolicyKind::KubernetesNetworkPolicy;
    set.apply(&policy(
        k8s,
        Some("shop"),
        "deny-in",
        "default",
        "all()",
        Some(vec![]),
        None,
    ));
    let mut from_rack_a = allow_tcp(8080);
    from_rack_a.source.nets = vec!["10.0.0.0/24".parse().expect("a net")];
    set.apply(&policy(
        k8s,
        Some("shop"),
        name,
        "default",
        "all()",
        Some(vec![from_rack_a]),
        None,
    ));
    set
}

#[test]
fn a_rule_admitting_the_node_subnet_acts_for_host_network_pods_of_other_nodes() {
    let (dp, rows, inputs) = node_subnet_cluster();
    let a = audit(&rows, &dp, &inputs);
    // from-nodes ingress rule 0 (TCP 8080 from 10.0.0.0/24): only the agents' addresses are
    // in the subnet, and host → a pod of its own node is never policed. agent-0 → web-2 and
    // agent-1 → web-0, web-1 are policed at web's ingress and match: 3 pairs; agent-0 →
    // web-0, web-1 and agent-1 → web-2 are the same-node exemption: no policy applies there,
    // so the rule neither acts nor would match for them. (Before host-network pods were
    // members of the audit this rule was "unmatched".)
    assert_eq!(rule_use(&a, "from-nodes", "ingress", 0), (3, 3, "acts"));
    // to-nodes egress rule 0 (to 10.0.0.0/24): every web → agent pair, own node included
    // (pod → its own host passes the pod's egress policy, REFERENCE-policy §3.2): 3 × 2.
    assert_eq!(rule_use(&a, "to-nodes", "egress", 0), (6, 6, "acts"));
    assert!(a.policy.unmatched_rules.is_empty(), "{:?}", a.policy);
    assert!(a.policy.shadowed_rules.is_empty(), "{:?}", a.policy);
    // No policy selects a host-network pod: each policy selects the three web pods, and the
    // per-pod and unselected lists hold workload endpoints only.
    for p in &a.policy.policies {
        assert_eq!(p.selected_pods, 3, "{}", p.name);
    }
    assert_eq!(a.policy.pods.len(), 4);
    let unselected: Vec<(&str, u64, u64, u64)> = a
        .policy
        .unselected
        .iter()
        .map(|u| {
            (
                u.workload.as_str(),
                u.pods,
                u.no_ingress_policy,
                u.no_egress_policy,
            )
        })
        .collect();
    assert_eq!(unselected, [("tools/debug", 1, 1, 1)]);

    // Packet classes: TCP 1-8079, 8080, 8081-65535, UDP, SCTP, ICMP (8080 is the only port
    // a rule names).
    let row =
        |from: &str, to: &str, pairs: u64, allowed: &str, some: Option<&str>| ConnectivityRow {
            from: from.to_string(),
            to: to.to_string(),
            pairs,
            allowed: allowed.to_string(),
            allowed_for_some: some.map(str::to_string),
        };
    let want = vec![
        // Host to host: no endpoint on either side.
        row("infra/agent", "infra/agent", 2, "all", None),
        // 3 same-node pairs unpoliced (everything), 3 cross-node pairs admitted on TCP 8080
        // only by from-nodes.
        row(
            "infra/agent",
            "shop/web",
            6,
            "TCP 8080",
            Some("TCP 1-8079, 8081-65535; UDP; SCTP; ICMP"),
        ),
        // debug has no policy; agent-1 → debug is on its own node anyway.
        row("infra/agent", "tools/debug", 2, "all", None),
        // web's egress admits the node subnet; the agents have no ingress policy.
        row("shop/web", "infra/agent", 6, "all", None),
        // web's egress admits nothing but the node subnet: end of tier.
        row("shop/web", "shop/web", 6, "none", None),
        row("shop/web", "tools/debug", 3, "none", None),
        row("tools/debug", "infra/agent", 2, "all", None),
        // debug's 10.200.1.2 is no node address: web's ingress ends with the tier's deny.
        row("tools/debug", "shop/web", 3, "none", None),
    ];
    assert_eq!(a.connectivity, want);

    // All-pairs reachability counts the same 6 × 5 pairs, and the 18 with some packet
    // allowed (every pair the table does not say "none" for; the fabric delivers them all).
    let reach = all_pairs(&dp, Some(&inputs));
    assert_eq!(reach.pairs, 30);
    assert_eq!(a.connectivity.iter().map(|c| c.pairs).sum::<u64>(), 30);
    assert_eq!(reach.reachable, 18);
}

/// Records (policy, direction, rule index) of every rule that matched in a check.
struct Matched {
    direction: Direction,
    policy: Option<String>,
    rules: BTreeSet<(String, Direction, usize)>,
}

impl Explain for Matched {
    fn step(&mut self, make: impl FnOnce() -> Step) {
        match make() {
            Step::Policy { policy, .. } => self.policy = Some(policy),
            Step::RuleMatched { index, .. } => {
                if let Some(p) = &self.policy {
                    self.rules.insert((p.clone(), self.direction, index));
                }
            }
            _ => {}
        }
    }
}

/// Five nodes in two racks (a0 10.0.0.0/24: three, a1 10.1.0.0/24: two), on each a `web`, a
/// `db` and a `debug` pod and the host-network `agent`; `exporter` (host network too) on
/// a0-n0 and a1-n0 only. Rules that see host traffic: shop's ingress admits a0's subnet on
/// TCP 8080 (so a1's hosts are denied, a0's are admitted except on their own node, where
/// nothing is policed), db admits web on 5432, web's egress denies a1's subnet, then allows
/// every pod and a0's subnet.
fn racks_cluster() -> (Dataplane, Vec<PodRow>, PolicyInputs) {
    let t = topology(&[&[3, 2]]);
    let mut pods = Vec::new();
    for (i, n) in t.nodes.iter().enumerate() {
        for (j, (namespace, workload)) in [("shop", "web"), ("shop", "db"), ("tools", "debug")]
            .into_iter()
            .enumerate()
        {
            pods.push(Pod {
                key: pod_key(i, j),
                ip: pod_ip(i, j),
                node: i as u32,
                namespace,
                workload,
                host: false,
            });
        }
        pods.push(Pod {
            key: PodKey(1000 + i as u64),
            ip: n.ip,
            node: i as u32,
            namespace: "infra",
            workload: "agent",
            host: true,
        });
        if i == 0 || i == 3 {
            pods.push(Pod {
                key: PodKey(2000 + i as u64),
                ip: n.ip,
                node: i as u32,
                namespace: "infra",
                workload: "exporter",
                host: true,
            });
        }
    }
    let k8s = PolicyKind::KubernetesNetworkPolicy;
    let mut set = shop_ingress_from_rack_a("from-a0");
    let mut from_web = allow_tcp(5432);
    from_web.source.selector = Some(sel("app == 'web'"));
    set.apply(&policy(
        k8s,
        Some("shop"),
        "db-from-web",
        "default",
        "app == 'db'",
        Some(vec![from_web]),
        None,
    ));
    let mut deny_a1 = Rule::any(Action::Deny);
    deny_a1.destination.nets = vec!["10.1.0.0/24".parse().expect("a net")];
    let mut to_pods = Rule::any(Action::Allow);
    to_pods.destination.selector = Some(sel("has(app)"));
    let mut to_a0 = Rule::any(Action::Allow);
    to_a0.destination.nets = vec!["10.0.0.0/24".parse().expect("a net")];
    set.apply(&policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "web-out",
        "default",
        "app == 'web'",
        None,
        Some(vec![deny_a1, to_pods, to_a0]),
    ));
    // IPIP between the nodes, so that the fabric delivers every pair without BGP.
    world(&t, EncapMode::Always, &pods, set)
}

#[test]
fn the_audit_counts_what_connecting_every_pair_gives() {
    let (dp, rows, inputs) = racks_cluster();
    let a = audit(&rows, &dp, &inputs);
    let pol = Policing::new(&inputs);
    let engine = &pol.engine;
    let packets = packet_class_extents(engine, inputs.endpoints.values());
    let group: BTreeMap<PodKey, String> = rows
        .iter()
        .map(|r| (r.key, format!("{}/{}", r.namespace, r.workload)))
        .collect();
    // Per rule: the pairs it acted for and would have matched; per group pair: the pairs and
    // the packets allowed for every one and for some.
    let mut acted: BTreeMap<(String, Direction, usize), u64> = BTreeMap::new();
    let mut matching: BTreeMap<(String, Direction, usize), u64> = BTreeMap::new();
    type Table = BTreeMap<(String, String), (u64, Vec<bool>, Vec<bool>)>;
    let mut table: Table = BTreeMap::new();
    let (mut pairs, mut some_allowed) = (0u64, 0u64);
    for s in &rows {
        for d in &rows {
            if s.key == d.key {
                continue;
            }
            let to = d.ip.expect("an address");
            let mut acted_here = BTreeSet::new();
            let mut matching_here = BTreeSet::new();
            let mut allowed = Vec::new();
            pairs += 1;
            for class in &packets {
                let c = connect(&dp, Some(&pol), Source::Pod(s.key), to, &class.packet, true)
                    .expect("in the dataplane");
                // The fabric delivers every pair: what stops a packet is policy alone.
                assert!(
                    c.trace
                        .as_ref()
                        .is_none_or(|t| t.verdict == crate::forwarding::Verdict::Delivered),
                    "{c:?}"
                );
                allowed.push(c.verdict.delivered());
                let sender = Party {
                    ip: s.ip.expect("an address"),
                    endpoint: inputs.endpoints.get(&s.key),
                };
                let receiver = Party {
                    ip: to,
                    endpoint: inputs.endpoints.get(&d.key),
                };
                for (check, peer) in [(&c.egress, receiver), (&c.ingress, sender)] {
                    let Some(check) = check else { continue };
                    let direction = check.side.direction();
                    let mut m = Matched {
                        direction,
                        policy: None,
                        rules: BTreeSet::new(),
                    };
                    for step in &check.steps {
                        m.step(|| step.clone());
                    }
                    acted_here.extend(m.rules);
                    let at = if direction == Direction::Egress {
                        sender.endpoint
                    } else {
                        receiver.endpoint
                    }
                    .expect("a check runs at an endpoint");
                    for (_, name, p) in engine.planned() {
                        if !(p.types.contains(direction) && engine.selects(p, at)) {
                            continue;
                        }
                        for index in 0..p.rules(direction).len() {
                            if engine.rule_would_match(p, direction, index, at, peer, &class.packet)
                            {
                                matching_here.insert((name.to_string(), direction, index));
                            }
                        }
                    }
                }
            }
            some_allowed += u64::from(allowed.iter().any(|x| *x));
            for id in acted_here {
                *acted.entry(id).or_default() += 1;
            }
            for id in matching_here {
                *matching.entry(id).or_default() += 1;
            }
            let row = table
                .entry((group[&s.key].clone(), group[&d.key].clone()))
                .or_insert_with(|| (0, vec![true; packets.len()], vec![false; packets.len()]));
            row.0 += 1;
            for (k, ok) in allowed.iter().enumerate() {
                row.1[k] &= *ok;
                row.2[k] |= *ok;
            }
        }
    }
    for p in &a.policy.policies {
        for r in &p.rules {
            let d = if r.direction == "ingress" {
                Direction::Ingress
            } else {
                Direction::Egress
            };
            let id = (p.name.clone(), d, r.index);
            assert_eq!(
                (r.acted_pairs, r.matching_pairs),
                (
                    acted.get(&id).copied().unwrap_or(0),
                    matching.get(&id).copied().unwrap_or(0)
                ),
                "{} {} rule {}",
                p.name,
                r.direction,
                r.index
            );
        }
    }
    let want: Vec<ConnectivityRow> = table
        .into_iter()
        .map(|((from, to), (pairs, every, some))| {
            let extra: Vec<bool> = some.iter().zip(&every).map(|(s, e)| *s && !*e).collect();
            ConnectivityRow {
                from,
                to,
                pairs,
                allowed: describe(&packets, &every),
                allowed_for_some: extra.iter().any(|x| *x).then(|| describe(&packets, &extra)),
            }
        })
        .collect();
    assert_eq!(a.connectivity, want);
    // The fixture exercises what it is for: a0's hosts are admitted on 8080 at shop's pods
    // of other nodes, web's egress denies a1's hosts and admits a0's.
    let acted_for = |policy: &str, d: Direction, index: usize| {
        acted
            .iter()
            .any(|((p, dd, i), n)| p.ends_with(policy) && *dd == d && *i == index && *n > 0)
    };
    assert!(acted_for("from-a0", Direction::Ingress, 0));
    assert!(acted_for("web-out", Direction::Egress, 0));
    assert!(acted_for("web-out", Direction::Egress, 2));
    // And all-pairs reachability counts the same pairs, and the same with some packet allowed.
    let reach = all_pairs(&dp, Some(&inputs));
    assert_eq!((reach.pairs, reach.reachable), (pairs, some_allowed));
    assert_eq!(a.connectivity.iter().map(|c| c.pairs).sum::<u64>(), pairs);
}
