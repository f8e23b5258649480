//! Single-packet policy evaluations per second (issue #17 target: ≥ 1 M/s): one egress or
//! ingress check at a workload endpoint against a realistic policy state — 50 namespaces, a
//! default-deny and an allow-from-frontend Kubernetes policy in each, a security tier with a
//! global Deny/Pass policy and a platform tier with a monitoring allow — for a mix of allowed
//! and denied packets. Criterion reports the throughput in evaluations.

use std::net::IpAddr;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use podnet::model::network::CalicoProfile;
use podnet::model::selector::Selector;
use podnet::policy::eval::{Endpoint, Engine, NamedPort, Packet, Party};
use podnet::policy::model::{
    Action, Direction, EntityRule, Policy, PolicyKind, PolicyResource, PolicySet, PolicyTypes,
    PortMatch, Protocol, Rule, Tier, TierAction, endpoint_labels,
};

const NAMESPACES: usize = 50;
const ENDPOINTS: usize = 400;

fn sel(s: &str) -> Selector {
    Selector::parse(s).expect("selector")
}

fn policy(kind: PolicyKind, ns: Option<String>, name: &str, tier: &str, selector: &str) -> Policy {
    Policy {
        kind,
        staged: false,
        namespace: ns,
        name: name.to_string(),
        tier: tier.to_string(),
        order: Some(1000.0),
        selector: sel(selector),
        service_account_selector: None,
        namespace_selector: None,
        types: PolicyTypes {
            ingress: true,
            egress: false,
        },
        ingress: Vec::new(),
        egress: Vec::new(),
    }
}

fn set() -> PolicySet {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    for (name, order, action) in [
        ("security", 100.0, TierAction::Deny),
        ("platform", 200.0, TierAction::Pass),
    ] {
        set.apply(&PolicyResource::Tier(Tier {
            name: name.into(),
            order: Some(order),
            default_action: action,
        }));
    }
    let mut sec = policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "security.quarantine",
        "security",
        "all()",
    );
    let mut deny = Rule::any(Action::Deny);
    deny.source.selector = Some(sel("quarantine == 'true'"));
    sec.ingress = vec![deny, Rule::any(Action::Pass)];
    set.apply(&PolicyResource::Policy(Box::new(sec)));
    let mut mon = policy(
        PolicyKind::GlobalNetworkPolicy,
        None,
        "platform.monitoring",
        "platform",
        "all()",
    );
    let mut allow = Rule::any(Action::Allow);
    allow.protocol = Some(Protocol::TCP);
    allow.source.namespace_selector = Some(sel("projectcalico.org/name == 'monitoring'"));
    allow.destination.ports = vec![PortMatch::single(9090)];
    mon.ingress = vec![allow];
    set.apply(&PolicyResource::Policy(Box::new(mon)));
    for n in 0..NAMESPACES {
        let ns = format!("ns-{n}");
        set.apply(&PolicyResource::Namespace {
            name: ns.clone(),
            labels: [("team".to_string(), format!("t{}", n % 5))].into(),
        });
        let k8s = "projectcalico.org/orchestrator == 'k8s'";
        set.apply(&PolicyResource::Policy(Box::new(policy(
            PolicyKind::KubernetesNetworkPolicy,
            Some(ns.clone()),
            "default-deny",
            "default",
            k8s,
        ))));
        let mut p = policy(
            PolicyKind::KubernetesNetworkPolicy,
            Some(ns.clone()),
            "from-frontend",
            "default",
            &format!("{k8s} && app == 'backend'"),
        );
        let mut r = Rule::any(Action::Allow);
        r.protocol = Some(Protocol::TCP);
        r.source = EntityRule {
            selector: Some(sel("app == 'frontend'")),
            ..EntityRule::default()
        };
        r.destination.ports = vec![PortMatch::Named("http".into()), PortMatch::single(8443)];
        p.ingress = vec![r];
        set.apply(&PolicyResource::Policy(Box::new(p)));
    }
    set
}

fn endpoints() -> Vec<Endpoint> {
    (0..ENDPOINTS)
        .map(|i| {
            let ns = format!("ns-{}", i % NAMESPACES);
            let app = ["frontend", "backend", "worker"][i % 3];
            let labels = [("app".to_string(), app.to_string())].into();
            Endpoint {
                labels: endpoint_labels(&labels, &ns, "default").into(),
                namespace: ns,
                name: format!("pod-{i}"),
                ip: IpAddr::from([10, 64, (i / 250) as u8, (i % 250) as u8 + 1]),
                service_account: "default".into(),
                ports: vec![NamedPort {
                    name: "http".into(),
                    port: 8080,
                    protocol: Protocol::TCP,
                }],
                windows: false,
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let set = set();
    let eps = endpoints();
    let mut engine = Engine::new(&set);
    engine.know_endpoints(&eps);
    let packets = [
        Packet::tcp(8080),
        Packet::tcp(8443),
        Packet::tcp(22),
        Packet::udp(53),
    ];
    // (receiver, sender, packet) triples: same-namespace and cross-namespace pairs.
    let cases: Vec<(usize, usize, usize)> = (0..1024)
        .map(|i| {
            (
                (i * 7) % ENDPOINTS,
                (i * 13 + 1) % ENDPOINTS,
                i % packets.len(),
            )
        })
        .collect();
    let mut group = c.benchmark_group("policy");
    group.throughput(Throughput::Elements(cases.len() as u64));
    group.bench_function("ingress_check", |b| {
        b.iter(|| {
            let mut allowed = 0usize;
            for &(at, peer, p) in &cases {
                let o = engine.check(
                    &eps[at],
                    Direction::Ingress,
                    Party::endpoint(&eps[peer]),
                    std::hint::black_box(&packets[p]),
                    &mut (),
                );
                allowed += usize::from(o.allowed);
            }
            allowed
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
