use super::*;

#[test]
fn port_protocols_are_their_ip_protocol_numbers_and_back() {
    use crate::model::workload::PortProtocol;
    // IANA protocol numbers: TCP 6, UDP 17, SCTP 132.
    for (p, n) in [
        (PortProtocol::Tcp, 6),
        (PortProtocol::Udp, 17),
        (PortProtocol::Sctp, 132),
    ] {
        assert_eq!(Protocol::from(p), Protocol(n));
        assert_eq!(Protocol(n).port_protocol(), Some(p));
    }
    assert_eq!(Protocol::ICMP.port_protocol(), None);
    assert_eq!(Protocol::UDPLITE.port_protocol(), None);
}

fn policy(kind: PolicyKind, ns: Option<&str>, name: &str, order: Option<f64>) -> Policy {
    Policy {
        order,
        types: PolicyTypes::calico_default(true, false),
        ..Policy::new(kind, ns, name)
    }
}

#[test]
fn types_defaulting_differs_between_kubernetes_and_calico() {
    // (has ingress rules, has egress rules) -> (calico ingress, egress) and
    // kubernetes (ingress, egress), REFERENCE-policy §1.1 and §2.3.
    let cases = [
        ((false, false), (true, false), (true, false)),
        ((true, false), (true, false), (true, false)),
        ((false, true), (false, true), (true, true)),
        ((true, true), (true, true), (true, true)),
    ];
    for ((i, e), calico, k8s) in cases {
        let c = PolicyTypes::calico_default(i, e);
        assert_eq!((c.ingress, c.egress), calico, "calico {i} {e}");
        let k = PolicyTypes::kubernetes_default(e);
        assert_eq!((k.ingress, k.egress), k8s, "kubernetes {i} {e}");
    }
}

#[test]
fn mixed_ties_follow_the_calico_version() {
    // REFERENCE-policy §2.3: Calico `zeta` and Kubernetes `alpha`, both order 1000 in
    // the default tier of namespace ns: zeta first up to v3.31 (`ns/default.zeta` <
    // `ns/knp.default.alpha`), alpha first from v3.32 (`alpha/…` < `zeta/…`).
    let zeta = policy(
        PolicyKind::CalicoNetworkPolicy,
        Some("ns"),
        "zeta",
        Some(1000.0),
    );
    let alpha = policy(
        PolicyKind::KubernetesNetworkPolicy,
        Some("ns"),
        "alpha",
        Some(1000.0),
    );
    assert_eq!(
        zeta.cmp_in_tier(&alpha, CalicoProfile::V3_30),
        Ordering::Less
    );
    assert_eq!(
        zeta.cmp_in_tier(&alpha, CalicoProfile::V3_32),
        Ordering::Greater
    );
    // A missing order runs after every ordered policy.
    let unordered = policy(PolicyKind::CalicoNetworkPolicy, Some("ns"), "a", None);
    assert_eq!(
        unordered.cmp_in_tier(&zeta, CalicoProfile::V3_30),
        Ordering::Greater
    );
}

#[test]
fn tiers_sort_with_fixed_names_per_version() {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    set.apply(&PolicyResource::Tier(Tier {
        name: "security".into(),
        order: Some(100.0),
        default_action: TierAction::Deny,
    }));
    set.apply(&PolicyResource::Tier(Tier {
        name: "late".into(),
        order: None,
        default_action: TierAction::Pass,
    }));
    let names = |s: &PolicySet| s.tiers().into_iter().map(|t| t.name).collect::<Vec<_>>();
    assert_eq!(
        names(&set),
        [
            "security",
            "adminnetworkpolicy",
            "default",
            "baselineadminnetworkpolicy",
            "late"
        ]
    );
    set.profile = CalicoProfile::V3_32;
    assert_eq!(
        names(&set),
        ["security", "kube-admin", "default", "kube-baseline", "late"]
    );
    assert!(set.delete(&PolicyDelete::Tier("late".into())));
    assert!(!set.delete(&PolicyDelete::Tier("late".into())));
}

#[test]
fn namespace_labels_carry_the_automatic_ones() {
    let mut set = PolicySet::new(CalicoProfile::V3_30);
    set.apply(&PolicyResource::Namespace {
        name: "prod".into(),
        labels: [("team".to_string(), "a".to_string())].into(),
    });
    let l = set.namespace_selector_labels("prod");
    assert_eq!(l.get("team").map(String::as_str), Some("a"));
    assert_eq!(l.get(LABEL_METADATA_NAME).map(String::as_str), Some("prod"));
    assert_eq!(l.get(LABEL_NAME).map(String::as_str), Some("prod"));
    // An undeclared namespace still has its name labels.
    let l = set.namespace_selector_labels("dev");
    assert_eq!(l.len(), 2);
}
