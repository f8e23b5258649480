//! REFERENCE-policy §6: the 25 test vectors, each a test.
//!
//! Every vector starts from the reference world (three namespaces, seven pods on Linux nodes
//! a1–a3, the external address 192.0.2.80) and adds the policies it lists, written here in the
//! Calico-normalised form the policy model holds. Kubernetes NetworkPolicies are converted by
//! hand as Calico converts them (REFERENCE-policy §2.6): tier `default`, order 1000, selector
//! `projectcalico.org/orchestrator == 'k8s' && <podSelector>`, one Allow rule per peer, a
//! podSelector-only peer scoped to the policy's namespace, `namespaceSelector: {}` as `all()`,
//! ipBlock as nets/notNets, ports defaulting to TCP. AdminNetworkPolicies become global
//! policies in the admin tier at `order = priority` (§2.7). Expected verdicts are the
//! vectors' own, copied from the reference with its reasoning in the comments.
//!
//! A connection is allowed when the sender's egress (if it is a workload endpoint) and the
//! receiver's ingress (likewise) both allow it; routing is outside these vectors (every pod
//! reaches every other in the reference world).

use std::net::IpAddr;

use super::*;
use crate::model::network::CalicoProfile;
use crate::model::selector::Selector;
use crate::policy::model::{EntityRule, PolicyKind, PolicyResource, PolicyTypes, ServiceRef};

const EXTERNAL: &str = "192.0.2.80";

/// (namespace, name, labels, node, IP, named ports)
type PodSpec = (
    &'static str,
    &'static str,
    &'static [(&'static str, &'static str)],
    &'static str,
    &'static str,
    &'static [(&'static str, u16, &'static str)],
);

const PODS: [PodSpec; 7] = [
    (
        "shop",
        "front",
        &[("app", "front"), ("tier", "edge")],
        "a1",
        "10.48.0.10",
        &[("web", 8443, "TCP")],
    ),
    (
        "shop",
        "store",
        &[("app", "store")],
        "a1",
        "10.48.0.11",
        &[("sql", 3306, "TCP"), ("stats", 9200, "TCP")],
    ),
    (
        "shop",
        "queue",
        &[("app", "queue")],
        "a2",
        "10.48.1.20",
        &[("amqp", 5672, "TCP"), ("dns", 53, "UDP")],
    ),
    (
        "lab",
        "front-t",
        &[("app", "front")],
        "a2",
        "10.48.1.21",
        &[("web", 8443, "TCP")],
    ),
    ("lab", "probe", &[("app", "probe")], "a3", "10.48.2.30", &[]),
    (
        "infra",
        "agent",
        &[("app", "agent")],
        "a3",
        "10.48.2.31",
        &[],
    ),
    (
        "infra",
        "front-i",
        &[("app", "front")],
        "a1",
        "10.48.0.12",
        &[("web", 8443, "TCP")],
    ),
];

/// Host-network pods of T24: (name, node address).
const HOSTS: [(&str, &str, &str); 2] = [
    ("node-agent", "a1", "192.168.10.1"),
    ("node-agent-2", "a2", "192.168.10.2"),
];

struct World {
    set: PolicySet,
    endpoints: Vec<(String, &'static str, Endpoint)>,
    windows: Vec<&'static str>,
    services: Vec<(&'static str, &'static str, Vec<ServiceEndpoint>)>,
}

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn world() -> World {
    world_at(CalicoProfile::V3_30)
}

fn world_at(profile: CalicoProfile) -> World {
    let mut set = PolicySet::new(profile);
    for (ns, l) in [
        ("shop", ("stage", "live")),
        ("lab", ("stage", "test")),
        ("infra", ("owner", "sre")),
    ] {
        set.apply(&PolicyResource::Namespace {
            name: ns.to_string(),
            labels: labels(&[l]),
        });
    }
    let endpoints = PODS
        .iter()
        .map(|(ns, name, l, node, ip, ports)| {
            let e = Endpoint {
                ports: ports
                    .iter()
                    .map(|(n, p, proto)| NamedPort {
                        name: n.to_string(),
                        port: *p,
                        protocol: Protocol::from_name(proto).unwrap(),
                    })
                    .collect(),
                ..Endpoint::pod(ns, name, ip.parse().unwrap(), &labels(l))
            };
            (format!("{ns}/{name}"), *node, e)
        })
        .collect();
    World {
        set,
        endpoints,
        windows: Vec::new(),
        services: Vec::new(),
    }
}

fn sel(text: &str) -> Selector {
    Selector::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A Calico policy with no rules; the helpers below fill it in.
fn policy(kind: PolicyKind, ns: Option<&str>, name: &str, selector: &str) -> Policy {
    Policy {
        selector: sel(selector),
        ..Policy::new(kind, ns, name)
    }
}

/// A Kubernetes NetworkPolicy as Calico holds it: default tier, order 1000, the
/// orchestrator term ANDed to the pod selector.
fn knp(ns: &str, name: &str, pod_selector: &str, ingress: bool, egress: bool) -> Policy {
    let selector = if pod_selector == "all()" {
        "projectcalico.org/orchestrator == 'k8s'".to_string()
    } else {
        format!("projectcalico.org/orchestrator == 'k8s' && {pod_selector}")
    };
    let mut p = policy(
        PolicyKind::KubernetesNetworkPolicy,
        Some(ns),
        name,
        &selector,
    );
    p.order = Some(1000.0);
    p.types = PolicyTypes { ingress, egress };
    p
}

fn cnp(ns: &str, name: &str, selector: &str, order: Option<f64>) -> Policy {
    let mut p = policy(PolicyKind::CalicoNetworkPolicy, Some(ns), name, selector);
    p.order = order;
    p
}

fn gnp(name: &str, selector: &str, order: Option<f64>) -> Policy {
    let mut p = policy(PolicyKind::GlobalNetworkPolicy, None, name, selector);
    p.order = order;
    p
}

fn ingress_only() -> PolicyTypes {
    PolicyTypes {
        ingress: true,
        egress: false,
    }
}

fn egress_only() -> PolicyTypes {
    PolicyTypes {
        ingress: false,
        egress: true,
    }
}

fn rule(action: Action) -> Rule {
    Rule::any(action)
}

fn entity() -> EntityRule {
    EntityRule::default()
}

trait EntityExt {
    fn selector(self, s: &str) -> Self;
    fn namespaces(self, s: &str) -> Self;
    fn nets(self, nets: &[&str]) -> Self;
    fn not_nets(self, nets: &[&str]) -> Self;
    fn ports(self, ports: &[&str]) -> Self;
}

fn port_match(p: &str) -> PortMatch {
    match p.split_once(':') {
        Some((a, b)) => PortMatch::Range {
            first: a.parse().unwrap(),
            last: b.parse().unwrap(),
        },
        None => match p.parse() {
            Ok(n) => PortMatch::single(n),
            Err(_) => PortMatch::Named(p.to_string()),
        },
    }
}

impl EntityExt for EntityRule {
    fn selector(mut self, s: &str) -> Self {
        self.selector = Some(sel(s));
        self
    }
    fn namespaces(mut self, s: &str) -> Self {
        self.namespace_selector = Some(sel(s));
        self
    }
    fn nets(mut self, nets: &[&str]) -> Self {
        self.nets = nets.iter().map(|n| n.parse().unwrap()).collect();
        self
    }
    fn not_nets(mut self, nets: &[&str]) -> Self {
        self.not_nets = nets.iter().map(|n| n.parse().unwrap()).collect();
        self
    }
    fn ports(mut self, ports: &[&str]) -> Self {
        self.ports = ports.iter().map(|p| port_match(p)).collect();
        self
    }
}

trait RuleExt {
    fn from(self, e: EntityRule) -> Self;
    fn to(self, e: EntityRule) -> Self;
    fn protocol(self, p: &str) -> Self;
}

impl RuleExt for Rule {
    fn from(mut self, e: EntityRule) -> Self {
        self.source = e;
        self
    }
    fn to(mut self, e: EntityRule) -> Self {
        self.destination = e;
        self
    }
    fn protocol(mut self, p: &str) -> Self {
        self.protocol = Some(Protocol::from_name(p).unwrap());
        self
    }
}

/// A Kubernetes Allow rule with TCP ports (the protocol Kubernetes defaults to).
fn k8s_allow_tcp(peer: EntityRule, ports: &[&str]) -> Rule {
    if ports.is_empty() {
        rule(Action::Allow).from(peer)
    } else {
        rule(Action::Allow)
            .protocol("TCP")
            .from(peer.clone())
            .to(entity().ports(ports))
    }
}

impl World {
    fn add(&mut self, p: Policy) -> &mut Self {
        self.set.apply(&PolicyResource::Policy(Box::new(p)));
        self
    }

    fn tier(&mut self, name: &str, order: Option<f64>, default_action: TierAction) -> &mut Self {
        self.set.apply(&PolicyResource::Tier(Tier {
            name: name.to_string(),
            order,
            default_action,
        }));
        self
    }

    fn endpoint(&self, name: &str) -> Option<&Endpoint> {
        self.endpoints
            .iter()
            .find(|(n, _, _)| n == name || n.ends_with(&format!("/{name}")))
            .map(|(_, _, e)| e)
    }

    fn node_of(&self, name: &str) -> Option<&'static str> {
        self.endpoints
            .iter()
            .find(|(n, _, _)| n == name || n.ends_with(&format!("/{name}")))
            .map(|(_, node, _)| *node)
    }

    /// Whether a new connection from `from` to `to` with `packet` is allowed: egress at the
    /// sender (a pod), ingress at the receiver (a pod), except host → pod of the same node
    /// (REFERENCE-policy §1.6/§3.2, the rule `forwarding::connect` applies).
    fn allowed(&self, from: &str, to: &str, packet: &Packet) -> (bool, Vec<String>) {
        let mut engine = Engine::new(&self.set);
        for (ns, name, endpoints) in &self.services {
            engine = engine.with_service_endpoints(ns, name, endpoints.clone());
        }
        let with_os = |e: &Endpoint| {
            let mut e = e.clone();
            e.windows = self.windows.contains(&e.name.as_str());
            e
        };
        let src = self.endpoint(from).map(with_os);
        let dst = self.endpoint(to).map(with_os);
        let host = HOSTS.iter().find(|(n, _, _)| *n == from);
        let src_ip: IpAddr = match (&src, host) {
            (Some(e), _) => e.ip,
            (None, Some((_, _, ip))) => ip.parse().unwrap(),
            (None, None) => from.parse().expect("a pod, host or address"),
        };
        let dst_ip: IpAddr = match &dst {
            Some(e) => e.ip,
            None => to.parse().expect("a pod or address"),
        };
        let mut steps = Vec::new();
        if let Some(s) = &src {
            let peer = Party {
                ip: dst_ip,
                endpoint: dst.as_ref(),
            };
            if !engine
                .check(s, Direction::Egress, peer, packet, &mut steps)
                .allowed
            {
                return (false, explain_lines(&steps));
            }
        }
        if let Some(d) = &dst {
            let host_local = host.is_some_and(|(_, node, _)| Some(*node) == self.node_of(to));
            if !host_local {
                let peer = Party {
                    ip: src_ip,
                    endpoint: src.as_ref(),
                };
                if !engine
                    .check(d, Direction::Ingress, peer, packet, &mut steps)
                    .allowed
                {
                    return (false, explain_lines(&steps));
                }
            }
        }
        (true, explain_lines(&steps))
    }

    /// Checks every case: (from, to, packet, allowed).
    fn expect(&self, vector: &str, cases: &[(&str, &str, Packet, bool)]) {
        for (from, to, packet, want) in cases {
            let (got, steps) = self.allowed(from, to, packet);
            assert_eq!(
                got,
                *want,
                "{vector}: {from} -> {to} {packet}: expected {}, got {}\n{}",
                word(*want),
                word(got),
                steps.join("\n")
            );
        }
    }
}

fn word(allowed: bool) -> &'static str {
    if allowed { "ALLOW" } else { "DENY" }
}

const ALLOW: bool = true;
const DENY: bool = false;

fn tcp(port: u16) -> Packet {
    Packet::tcp(port)
}

fn udp(port: u16) -> Packet {
    Packet::udp(port)
}

/// T02's `deny-in`: `podSelector: {}`, `policyTypes: [Ingress]`, no rules.
fn deny_in() -> Policy {
    knp("shop", "deny-in", "all()", true, false)
}

/// T03's `store-open`: ingress `[{}]` on app=store.
fn store_open() -> Policy {
    let mut p = knp("shop", "store-open", "app == 'store'", true, false);
    p.ingress = vec![rule(Action::Allow)];
    p
}

/// T10's `store-from-front`: ingress from app=front of shop.
fn store_from_front() -> Policy {
    let mut p = knp("shop", "store-from-front", "app == 'store'", true, false);
    p.ingress = vec![rule(Action::Allow).from(entity().selector("app == 'front'"))];
    p
}

/// T21's `store-from-any-front`: one peer `{namespaceSelector: {}, podSelector: app=front}`.
fn store_from_any_front() -> Policy {
    let mut p = knp(
        "shop",
        "store-from-any-front",
        "app == 'store'",
        true,
        false,
    );
    p.ingress =
        vec![rule(Action::Allow).from(entity().namespaces("all()").selector("app == 'front'"))];
    p
}

/// An AdminNetworkPolicy as Calico converts it: a global policy in the admin tier at
/// `order = priority`, subject namespaces as the policy's namespaceSelector.
fn anp(name: &str, priority: f64, subject_namespaces: &str, ingress: Vec<Rule>) -> Policy {
    let mut p = gnp(name, "all()", Some(priority));
    p.kind = PolicyKind::AdminNetworkPolicy;
    p.tier = crate::policy::model::admin_tier_name(CalicoProfile::V3_30).to_string();
    p.namespace_selector = Some(sel(subject_namespaces));
    p.types = ingress_only();
    p.ingress = ingress;
    p
}

#[test]
fn t01_no_policy() {
    // Nothing applies at either end: profiles kns.lab (egress) and kns.shop (ingress) allow.
    world().expect("T01", &[("probe", "store", tcp(3306), ALLOW)]);
}

#[test]
fn t02_default_deny_ingress() {
    let mut w = world();
    w.add(deny_in());
    w.expect(
        "T02",
        &[
            // knp.default.deny-in selects queue with no rule: end of the default tier.
            ("front", "queue", tcp(5672), DENY),
            // Egress is not isolated.
            ("queue", EXTERNAL, tcp(443), ALLOW),
        ],
    );
    let (_, steps) = w.allowed("front", "queue", &tcp(5672));
    assert!(
        steps
            .last()
            .is_some_and(|l| l.contains("end of tier default")),
        "{steps:?}"
    );
}

#[test]
fn t03_additive_and_empty_rule_lists() {
    let mut w = world();
    w.add(deny_in()).add(store_open());
    // `ingress: []` is the same as no ingress rule.
    w.add(knp("lab", "front-t-closed", "app == 'front'", true, false));
    w.expect(
        "T03",
        &[
            ("probe", "store", tcp(3306), ALLOW),
            (EXTERNAL, "store", tcp(3306), ALLOW),
            ("front", "front-t", tcp(8443), DENY),
            ("front", "queue", tcp(5672), DENY),
        ],
    );
}

#[test]
fn t04_one_peer_is_an_and() {
    let mut w = world();
    let mut p = knp("shop", "store-sre-front", "app == 'store'", true, false);
    p.ingress = vec![
        rule(Action::Allow).from(
            entity()
                .namespaces("owner == 'sre'")
                .selector("app == 'front'"),
        ),
    ];
    w.add(p);
    w.expect(
        "T04",
        &[
            ("front-i", "store", tcp(3306), ALLOW),
            ("agent", "store", tcp(3306), DENY),
            ("shop/front", "store", tcp(3306), DENY),
        ],
    );
}

#[test]
fn t05_two_peers_are_an_or() {
    let mut w = world();
    let mut p = knp("shop", "queue-two-peers", "app == 'queue'", true, false);
    p.ingress = vec![
        rule(Action::Allow).from(entity().namespaces("owner == 'sre'")),
        rule(Action::Allow).from(entity().selector("app == 'front'")),
    ];
    w.add(p);
    w.expect(
        "T05",
        &[
            ("agent", "queue", tcp(5672), ALLOW),
            ("shop/front", "queue", tcp(5672), ALLOW),
            // A podSelector-only peer stays in shop.
            ("front-t", "queue", tcp(5672), DENY),
        ],
    );
}

#[test]
fn t06_namespace_by_name() {
    let mut w = world();
    let mut p = knp("shop", "front-from-lab", "app == 'front'", true, false);
    p.ingress =
        vec![rule(Action::Allow).from(entity().namespaces("kubernetes.io/metadata.name == 'lab'"))];
    w.add(p);
    w.expect(
        "T06",
        &[
            ("probe", "shop/front", tcp(8443), ALLOW),
            ("agent", "shop/front", tcp(8443), DENY),
        ],
    );
}

#[test]
fn t07_ip_block_with_except_on_pod_ips() {
    let mut w = world();
    let mut out = knp("shop", "queue-egress-block", "app == 'queue'", false, true);
    out.egress =
        vec![rule(Action::Allow).to(entity().nets(&["10.48.0.0/16"]).not_nets(&["10.48.0.0/24"]))];
    let mut inn = knp("shop", "store-in-block", "app == 'store'", true, false);
    inn.ingress =
        vec![rule(Action::Allow).from(entity().nets(&["0.0.0.0/0"]).not_nets(&["10.48.2.0/24"]))];
    w.add(out).add(inn);
    w.expect(
        "T07",
        &[
            ("queue", "front-t", tcp(8443), ALLOW),
            ("queue", "store", tcp(3306), DENY),
            ("queue", EXTERNAL, tcp(443), DENY),
            ("probe", "store", tcp(3306), DENY),
            ("shop/front", "store", tcp(3306), ALLOW),
            (EXTERNAL, "store", tcp(3306), ALLOW),
        ],
    );
}

#[test]
fn t08_ingress_ports_named_range_protocol() {
    let mut w = world();
    let mut a = knp("shop", "store-sql", "app == 'store'", true, false);
    a.ingress = vec![k8s_allow_tcp(entity().selector("app == 'front'"), &["sql"])];
    let mut b = knp("shop", "store-range", "app == 'store'", true, false);
    b.ingress = vec![k8s_allow_tcp(entity().namespaces("all()"), &["9000:9200"])];
    // `ports: [{port: dns, protocol: UDP}, {port: amqp, protocol: UDP}]`: one UDP rule.
    let mut q = knp("shop", "queue-udp", "app == 'queue'", true, false);
    q.ingress = vec![
        rule(Action::Allow)
            .protocol("UDP")
            .to(entity().ports(&["dns", "amqp"])),
    ];
    w.add(a).add(b).add(q);
    w.expect(
        "T08",
        &[
            ("shop/front", "store", tcp(3306), ALLOW),
            ("front-i", "store", tcp(3306), DENY),
            ("front-i", "store", tcp(9200), ALLOW),
            ("agent", "store", tcp(9201), DENY),
            ("agent", "store", udp(9200), DENY),
            (EXTERNAL, "store", tcp(9100), DENY),
            ("probe", "queue", udp(53), ALLOW),
            ("probe", "queue", tcp(5672), DENY),
        ],
    );
}

#[test]
fn t09_egress_named_port_resolves_on_the_destination() {
    let mut w = world();
    let mut p = knp("lab", "probe-out", "app == 'probe'", false, true);
    p.egress = vec![
        rule(Action::Allow)
            .protocol("TCP")
            .to(entity().namespaces("all()").ports(&["web"])),
        rule(Action::Allow)
            .protocol("UDP")
            .to(entity().nets(&["0.0.0.0/0"]).ports(&["53"])),
    ];
    w.add(p);
    w.expect(
        "T09",
        &[
            ("probe", "shop/front", tcp(8443), ALLOW),
            ("probe", "store", tcp(8443), DENY),
            ("probe", "queue", udp(53), ALLOW),
            ("probe", EXTERNAL, udp(53), ALLOW),
            ("probe", EXTERNAL, tcp(8443), DENY),
        ],
    );
}

#[test]
fn t10_sender_egress_deny_beats_receiver_ingress_allow() {
    let mut w = world();
    w.add(knp(
        "shop",
        "front-no-egress",
        "app == 'front'",
        false,
        true,
    ))
    .add(store_from_front());
    w.expect(
        "T10",
        &[
            ("shop/front", "store", tcp(3306), DENY),
            ("front-i", "store", tcp(3306), DENY),
        ],
    );
    // The deny is front's egress: store's ingress is never consulted.
    let (_, steps) = w.allowed("shop/front", "store", &tcp(3306));
    assert!(
        steps.iter().all(|s| !s.contains("store-from-front")),
        "{steps:?}"
    );
}

#[test]
fn t11_types_defaulting_differs() {
    // (a) Kubernetes, egress rules only, no policyTypes: stored as [Ingress, Egress].
    let mut w = world();
    let mut p = knp("shop", "queue-egress", "app == 'queue'", true, true);
    p.egress = vec![rule(Action::Allow)];
    w.add(p);
    w.expect(
        "T11a",
        &[
            ("probe", "queue", tcp(5672), DENY),
            ("queue", "probe", tcp(80), ALLOW),
        ],
    );
    // (b) The same shape as a Calico policy: types [Egress].
    let mut w = world();
    let mut p = cnp("shop", "queue-egress", "app == 'queue'", None);
    p.types = PolicyTypes::calico_default(false, true);
    p.egress = vec![rule(Action::Allow)];
    w.add(p);
    w.expect("T11b", &[("probe", "queue", tcp(5672), ALLOW)]);
}

#[test]
fn t12_deny_before_allow_by_order_and_all_isolates() {
    let mut w = world();
    let mut p = gnp("no-lab", "all()", Some(100.0));
    p.types = ingress_only();
    p.ingress = vec![rule(Action::Deny).from(entity().namespaces("stage == 'test'"))];
    w.add(p).add(store_open());
    w.expect(
        "T12",
        &[
            ("probe", "store", tcp(3306), DENY),
            ("agent", "store", tcp(3306), ALLOW),
            ("shop/front", "front-i", tcp(8443), DENY),
        ],
    );
}

#[test]
fn t13_missing_order_runs_last() {
    let mut w = world();
    let mut k = knp("shop", "queue-from-front", "app == 'queue'", true, false);
    k.ingress = vec![rule(Action::Allow).from(entity().selector("app == 'front'"))];
    let mut g = gnp("queue-deny", "app == 'queue'", None);
    g.types = ingress_only();
    g.ingress = vec![rule(Action::Deny)];
    w.add(k).add(g);
    w.expect(
        "T13",
        &[
            ("shop/front", "queue", tcp(5672), ALLOW),
            ("front-i", "queue", tcp(5672), DENY),
        ],
    );
}

#[test]
fn t14_ties_broken_by_name() {
    let pair = |deny_name: &str, allow_name: &str| {
        let mut w = world();
        let mut d = cnp("shop", deny_name, "app == 'store'", Some(500.0));
        d.types = ingress_only();
        d.ingress = vec![rule(Action::Deny).from(entity().namespaces("stage == 'test'"))];
        let mut a = cnp("shop", allow_name, "app == 'store'", Some(500.0));
        a.types = ingress_only();
        a.ingress = vec![rule(Action::Allow)];
        w.add(d).add(a);
        w
    };
    pair("a-deny-lab", "b-allow").expect(
        "T14",
        &[
            ("probe", "store", tcp(3306), DENY),
            ("agent", "store", tcp(3306), ALLOW),
        ],
    );
    pair("b-deny-lab", "a-allow").expect("T14 renamed", &[("probe", "store", tcp(3306), ALLOW)]);
}

fn pass_front() -> Policy {
    let mut p = cnp("shop", "pass-front", "app == 'store'", Some(100.0));
    p.types = ingress_only();
    p.ingress = vec![
        rule(Action::Log),
        rule(Action::Pass).from(entity().selector("app == 'front'")),
    ];
    p
}

#[test]
fn t15_pass_in_the_last_applicable_tier() {
    let mut w = world();
    w.add(pass_front());
    w.expect(
        "T15",
        &[
            // No later tier applies: profile kns.shop.
            ("shop/front", "store", tcp(3306), ALLOW),
            // The rule selector only sees shop: end of the default tier.
            ("front-i", "store", tcp(3306), DENY),
        ],
    );
    // store on a Windows node: the HNS flattener turns a last-tier Pass into Block.
    w.windows.push("store");
    w.expect("T15 Windows", &[("shop/front", "store", tcp(3306), DENY)]);
}

#[test]
fn t16_pass_to_the_next_tier() {
    let mut w = world();
    w.tier("guard", Some(100.0), TierAction::Deny);
    let mut g = gnp("guard.gate", "app == 'store'", None);
    g.tier = "guard".to_string();
    g.types = ingress_only();
    g.ingress = vec![
        rule(Action::Pass).from(entity().namespaces("stage == 'live'")),
        rule(Action::Deny),
    ];
    w.add(g).add(store_from_front());
    w.expect(
        "T16",
        &[
            ("shop/front", "store", tcp(3306), ALLOW),
            ("queue", "store", tcp(3306), DENY),
            ("probe", "store", tcp(3306), DENY),
        ],
    );
}

#[test]
fn t17_tier_default_action_and_skipped_tiers() {
    let build = |action: TierAction| {
        let mut w = world();
        w.tier("soft", Some(200.0), action);
        let mut g = gnp("soft.block-probe", "app == 'store'", None);
        g.tier = "soft".to_string();
        g.types = ingress_only();
        g.ingress = vec![rule(Action::Deny).from(entity().selector("app == 'probe'"))];
        w.add(g);
        w
    };
    build(TierAction::Pass).expect(
        "T17 Pass",
        &[
            ("agent", "store", tcp(3306), ALLOW),
            ("probe", "store", tcp(3306), DENY),
            ("shop/front", "queue", tcp(5672), ALLOW),
        ],
    );
    let w = build(TierAction::Deny);
    w.expect(
        "T17 Deny",
        &[
            ("agent", "store", tcp(3306), DENY),
            ("shop/front", "queue", tcp(5672), ALLOW),
        ],
    );
    // A user tier's default action decides: `tier-default`.
    let (_, steps) = w.allowed("agent", "store", &tcp(3306));
    assert!(
        steps
            .last()
            .is_some_and(|l| l.contains("default action of tier soft")),
        "{steps:?}"
    );
}

#[test]
fn t18_gnp_namespace_selector() {
    let mut w = world();
    let mut out = gnp("lab-out", "all()", Some(10.0));
    out.namespace_selector = Some(sel("stage == 'test'"));
    out.types = egress_only();
    out.egress = vec![
        rule(Action::Allow).protocol("TCP").to(entity()
            .namespaces("stage == 'live'")
            .ports(&["3306", "8443"])),
    ];
    let mut inn = gnp("infra-in", "all()", Some(20.0));
    inn.namespace_selector = Some(sel("projectcalico.org/name == 'infra'"));
    inn.types = ingress_only();
    inn.ingress = vec![
        rule(Action::Allow).from(entity().namespaces("kubernetes.io/metadata.name == 'shop'")),
    ];
    w.add(out).add(inn);
    w.expect(
        "T18",
        &[
            ("probe", "store", tcp(3306), ALLOW),
            ("probe", "queue", tcp(5672), DENY),
            ("probe", "agent", tcp(80), DENY),
            ("agent", "probe", tcp(80), ALLOW),
            ("shop/front", "agent", tcp(80), ALLOW),
            ("front-i", "agent", tcp(80), DENY),
            (EXTERNAL, "agent", tcp(80), DENY),
        ],
    );
}

#[test]
fn t19_rule_selector_scope_and_not_nets_on_pod_ips() {
    let mut w = world();
    let mut a = cnp("infra", "agent-from-front", "app == 'agent'", None);
    a.types = ingress_only();
    a.ingress = vec![rule(Action::Allow).from(entity().selector("app == 'front'"))];
    let mut g = gnp("probe-from-front", "app == 'probe'", None);
    g.types = ingress_only();
    g.ingress = vec![rule(Action::Allow).from(entity().selector("app == 'front'"))];
    let mut s = cnp("shop", "store-notnets", "app == 'store'", None);
    s.types = ingress_only();
    s.ingress = vec![rule(Action::Allow).from(entity().not_nets(&["10.48.1.0/24"]))];
    w.add(a).add(g).add(s);
    w.expect(
        "T19",
        &[
            ("front-i", "agent", tcp(80), ALLOW),
            ("shop/front", "agent", tcp(80), DENY),
            ("front-t", "probe", tcp(80), ALLOW),
            ("shop/front", "probe", tcp(80), ALLOW),
            ("probe", "store", tcp(3306), ALLOW),
            ("queue", "store", tcp(3306), DENY),
        ],
    );
}

#[test]
fn t20_staged_policy_is_ignored() {
    let mut w = world();
    let mut p = gnp("deny-everything", "all()", None);
    p.staged = true;
    p.types = ingress_only();
    p.ingress = vec![rule(Action::Deny)];
    w.add(p);
    w.expect("T20", &[("probe", "store", tcp(3306), ALLOW)]);
}

#[test]
fn t21_admin_network_policy_pass_deny_allow() {
    let mut w = world();
    w.add(anp(
        "shop-guard",
        10.0,
        "stage == 'live'",
        vec![
            rule(Action::Deny).from(entity().namespaces("owner == 'sre'")),
            rule(Action::Pass).from(entity().namespaces("stage == 'test'")),
        ],
    ))
    .add(store_from_any_front());
    w.expect(
        "T21",
        &[
            // Pass → the KNP allows.
            ("front-t", "store", tcp(3306), ALLOW),
            // Pass → the KNP applies, no match: end of the default tier.
            ("probe", "store", tcp(3306), DENY),
            // ANP Deny beats the KNP allow.
            ("front-i", "store", tcp(3306), DENY),
            // No ANP rule matched: the admin tier passes → KNP.
            ("shop/front", "store", tcp(3306), ALLOW),
        ],
    );
    // Separate setup: deny-in plus ANP sre-in (priority 5, Allow from owner=sre).
    let mut w = world();
    w.add(deny_in()).add(anp(
        "sre-in",
        5.0,
        "stage == 'live'",
        vec![rule(Action::Allow).from(entity().namespaces("owner == 'sre'"))],
    ));
    w.expect(
        "T21 sre-in",
        &[
            ("agent", "queue", tcp(5672), ALLOW),
            ("probe", "queue", tcp(5672), DENY),
        ],
    );
}

#[test]
fn t22_baseline_admin_network_policy() {
    let mut w = world();
    let mut b = gnp("default", "all()", Some(1000.0));
    b.kind = PolicyKind::BaselineAdminNetworkPolicy;
    b.tier = crate::policy::model::baseline_tier_name(CalicoProfile::V3_30).to_string();
    b.namespace_selector = Some(sel("all()"));
    b.types = ingress_only();
    b.ingress = vec![rule(Action::Deny).from(entity().namespaces("all()"))];
    w.add(b).add(store_from_any_front());
    w.expect(
        "T22",
        &[
            ("shop/front", "store", tcp(3306), ALLOW),
            // The KNP applies: end of the default tier; the baseline is never reached.
            ("agent", "store", tcp(3306), DENY),
            // No NP selects queue: baseline Deny.
            ("agent", "queue", tcp(5672), DENY),
            // The baseline's peers are pods only: the tier passes; profile.
            (EXTERNAL, "queue", tcp(5672), ALLOW),
        ],
    );
}

#[test]
fn t23_service_policy_sees_the_translated_packet() {
    // Policy runs after DNAT: these cases evaluate the packet as it is after kube-proxy
    // rewrote 10.96.7.7:3306 and 10.96.7.8:80 to store's 10.48.0.11:3306 (targetPort `sql`).
    // (a) KNP store-3306: ingress from app=front of any namespace on port 3306.
    let mut w = world();
    let mut p = knp("shop", "store-3306", "app == 'store'", true, false);
    p.ingress = vec![k8s_allow_tcp(
        entity().namespaces("all()").selector("app == 'front'"),
        &["3306"],
    )];
    w.add(p);
    w.expect(
        "T23a",
        &[
            ("probe", "store", tcp(3306), DENY),
            ("shop/front", "store", tcp(3306), ALLOW),
        ],
    );
    // (b) Only port 80 allowed: the backend sees 3306.
    let mut w = world();
    let mut p = knp("shop", "store-80", "app == 'store'", true, false);
    p.ingress = vec![k8s_allow_tcp(entity(), &["80"])];
    w.add(p);
    w.expect("T23b", &[("shop/front", "store", tcp(3306), DENY)]);
    // (c) Egress to the service CIDR only: the destination is already the pod.
    let mut w = world();
    let mut p = knp("shop", "front-to-svc-cidr", "app == 'front'", false, true);
    p.egress = vec![rule(Action::Allow).to(entity().nets(&["10.96.0.0/12"]))];
    w.add(p);
    w.expect("T23c", &[("shop/front", "store", tcp(3306), DENY)]);
    // (c') `destination.services` matches the endpoints' addresses and ports.
    let mut w = world();
    let mut p = cnp("shop", "front-to-store-svc", "app == 'front'", None);
    p.types = egress_only();
    p.egress = vec![rule(Action::Allow).to(EntityRule {
        services: Some(ServiceRef {
            name: "store-svc".to_string(),
            namespace: "shop".to_string(),
        }),
        ..EntityRule::default()
    })];
    w.add(p);
    w.services.push((
        "shop",
        "store-svc",
        vec![("10.48.0.11".parse().unwrap(), Protocol::TCP, 3306)],
    ));
    w.expect(
        "T23c'",
        &[
            ("shop/front", "store", tcp(3306), ALLOW),
            ("shop/front", "store", tcp(3307), DENY),
            ("shop/front", "queue", tcp(3306), DENY),
        ],
    );
}

#[test]
fn t24_host_network_pods_and_node_traffic() {
    let with = |extra_peer: bool| {
        let mut w = world();
        let mut p = knp("shop", "store-from-cluster", "app == 'store'", true, false);
        p.ingress = vec![rule(Action::Allow).from(entity().namespaces("all()"))];
        if extra_peer {
            p.ingress
                .push(rule(Action::Allow).from(entity().nets(&["192.168.10.0/24"])));
        }
        w.add(deny_in()).add(p);
        w
    };
    with(false).expect(
        "T24",
        &[
            // Host → local pod is not policed.
            ("node-agent", "store", tcp(3306), ALLOW),
            // Not a workload endpoint; its source is node a2's address.
            ("node-agent-2", "store", tcp(3306), DENY),
        ],
    );
    with(true).expect(
        "T24 ipBlock",
        &[("node-agent-2", "store", tcp(3306), ALLOW)],
    );
}

#[test]
fn t25_selector_operators() {
    let mut w = world();
    let mut k = knp(
        "shop",
        "udp-from-untiered",
        "app in {'queue', 'store'}",
        true,
        false,
    );
    k.ingress = vec![
        rule(Action::Allow).protocol("UDP").from(
            entity()
                .namespaces("stage not in {'test'}")
                .selector("!has(tier)"),
        ),
    ];
    let mut g = gnp(
        "lab-operators",
        "projectcalico.org/namespace == 'lab'",
        Some(300.0),
    );
    g.types = ingress_only();
    g.ingress = vec![
        rule(Action::Allow).from(entity().selector("app in {'agent', 'front'} && !has(tier)")),
    ];
    w.add(k).add(g);
    w.expect(
        "T25",
        &[
            ("agent", "queue", udp(53), ALLOW),
            ("shop/front", "queue", udp(53), DENY),
            ("probe", "queue", udp(53), DENY),
            ("agent", "queue", tcp(5672), DENY),
            ("agent", "probe", tcp(80), ALLOW),
            ("shop/front", "probe", tcp(80), DENY),
            ("front-t", "probe", tcp(80), ALLOW),
        ],
    );
}

#[test]
fn mixed_ties_follow_the_calico_version() {
    // REFERENCE-policy §2.3: Calico `zeta` (Deny) and Kubernetes `alpha` (Allow), both order
    // 1000 in the default tier of shop: zeta first up to v3.31, alpha first from v3.32.
    let build = |profile| {
        let mut w = world_at(profile);
        let mut z = cnp("shop", "zeta", "app == 'store'", Some(1000.0));
        z.types = ingress_only();
        z.ingress = vec![rule(Action::Deny)];
        let mut a = knp("shop", "alpha", "app == 'store'", true, false);
        a.ingress = vec![rule(Action::Allow)];
        w.add(z).add(a);
        w
    };
    build(CalicoProfile::V3_30).expect("v3.30", &[("probe", "store", tcp(3306), DENY)]);
    build(CalicoProfile::V3_32).expect("v3.32", &[("probe", "store", tcp(3306), ALLOW)]);
}

#[test]
fn icmp_and_protocol_criteria() {
    // A rule with protocol ICMP and a type matches that type only; rules with ports never
    // match ICMP; a rule with no ports passes every protocol (REFERENCE-policy §1.3).
    let mut w = world();
    let mut p = cnp("shop", "store-icmp", "app == 'store'", None);
    p.types = ingress_only();
    p.ingress = vec![
        Rule {
            icmp: Some(crate::policy::model::IcmpMatch {
                icmp_type: 8,
                code: None,
            }),
            ..rule(Action::Allow).protocol("ICMP")
        },
        rule(Action::Allow)
            .protocol("TCP")
            .to(entity().ports(&["3306"])),
    ];
    w.add(p);
    w.expect(
        "ICMP",
        &[
            ("probe", "store", Packet::icmp(8, 0), ALLOW),
            ("probe", "store", Packet::icmp(13, 0), DENY),
            ("probe", "store", tcp(3306), ALLOW),
            ("probe", "store", udp(3306), DENY),
        ],
    );
    // On Windows the ICMP rule is skipped (HNS cannot match a type).
    w.windows.push("store");
    w.expect(
        "ICMP Windows",
        &[("probe", "store", Packet::icmp(8, 0), DENY)],
    );
}
