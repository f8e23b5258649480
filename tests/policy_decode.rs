//! Decoding the network policy kinds into the policy model (SPEC §7, REFERENCE-policy §1–§2):
//! types defaulting per kind, Calico's conversion of Kubernetes and admin policies, tier names
//! per Calico version, and the API servers' validation, each located at its field.
//!
//! Every case is one manifest in a small scenario; the expected rules are written in the
//! model's one-line form (`Allow TCP from[…] to[…]`) and derived by hand from the cited rule.

use podnet::policy::{Direction, Policy, PolicySet};
use podnet::scenario::{Diagnostic, load_str};

fn scenario(profile: &str, resources: &str) -> String {
    format!(
        "name: t\n\
         profile: {{calico: {profile}}}\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: z\n\
         \x20   racks:\n\
         \x20   - name: r\n\
         \x20     subnet: 10.6.0.0/24\n\
         \x20     nodes: [{{name: n1}}]\n\
         resources:\n\
         {resources}"
    )
}

fn policies(profile: &str, resources: &str) -> PolicySet {
    match load_str("t.yaml", &scenario(profile, resources)) {
        Ok(s) => s.policies,
        Err(d) => panic!("expected the scenario to load:\n{d}"),
    }
}

fn only_policy(profile: &str, resources: &str) -> Policy {
    let set = policies(profile, resources);
    let all: Vec<&Policy> = set.policies().collect();
    assert_eq!(all.len(), 1, "expected one policy");
    all[0].clone()
}

fn rules(p: &Policy, d: Direction) -> Vec<String> {
    p.rules(d).iter().map(|r| r.to_string()).collect()
}

fn first_error(profile: &str, resources: &str) -> Diagnostic {
    match load_str("t.yaml", &scenario(profile, resources)) {
        Ok(_) => panic!("expected an error for:\n{resources}"),
        Err(d) => d.errors().next().expect("an error").clone(),
    }
}

const K8S: &str = "- apiVersion: networking.k8s.io/v1\n  kind: NetworkPolicy\n  metadata: {name: p, namespace: prod}\n";
const CALICO_NP: &str = "- apiVersion: projectcalico.org/v3\n  kind: NetworkPolicy\n  metadata: {name: p, namespace: prod}\n";
const CALICO_GNP: &str =
    "- apiVersion: projectcalico.org/v3\n  kind: GlobalNetworkPolicy\n  metadata: {name: g}\n";

#[test]
fn kubernetes_and_calico_default_types_differently() {
    // (spec, expected (ingress, egress)).
    // Kubernetes (k8s-api NetworkPolicySpec.policyTypes, REFERENCE-policy §1.1): missing or
    // empty policyTypes = Ingress, plus Egress iff there are egress rules.
    // Calico (api/pkg/defaults/networkpolicy.go, §2.3): missing types = Ingress unless there
    // are egress rules and no ingress rules; Egress iff egress rules.
    let k8s = [
        ("{podSelector: {}}", (true, false)),
        ("{podSelector: {}, egress: [{}]}", (true, true)),
        (
            "{podSelector: {}, policyTypes: [], egress: [{}]}",
            (true, true),
        ),
        (
            "{podSelector: {}, policyTypes: [Egress], egress: [{}]}",
            (false, true),
        ),
        ("{podSelector: {}, policyTypes: [Egress]}", (false, true)),
        (
            "{podSelector: {}, ingress: [{}], egress: [{}]}",
            (true, true),
        ),
    ];
    for (spec, expected) in k8s {
        let p = only_policy("v3.30", &format!("{K8S}  spec: {spec}\n"));
        assert_eq!((p.types.ingress, p.types.egress), expected, "k8s {spec}");
    }
    let calico = [
        ("{}", (true, false)),
        ("{egress: [{action: Allow}]}", (false, true)),
        ("{ingress: [{action: Allow}]}", (true, false)),
        (
            "{ingress: [{action: Allow}], egress: [{action: Allow}]}",
            (true, true),
        ),
        ("{types: [Ingress, Egress]}", (true, true)),
        (
            "{types: [Egress], ingress: [{action: Allow}]}",
            (false, true),
        ),
    ];
    for (spec, expected) in calico {
        let p = only_policy("v3.30", &format!("{CALICO_NP}  spec: {spec}\n"));
        assert_eq!((p.types.ingress, p.types.egress), expected, "calico {spec}");
    }
}

#[test]
fn kubernetes_policy_converts_as_calico_does() {
    // conversion.go K8sNetworkPolicyToCalico (REFERENCE-policy §2.6): tier default, order
    // 1000, selector `orchestrator == k8s && podSelector`; one Allow rule per peer and
    // protocol; ipBlock -> nets/notNets; podSelector alone stays in the policy's namespace
    // (no namespaceSelector); namespaceSelector {} -> all(); ports default to TCP; endPort
    // -> a range; no ports -> no protocol at all.
    let orch = r#"projectcalico.org/orchestrator == "k8s""#;
    let cases: &[(&str, &[&str], &[&str])] = &[
        // The concept page's example (k8s-examples/networkpolicy.yaml).
        (
            "podSelector: {matchLabels: {role: db}}\n    policyTypes: [Ingress, Egress]\n    \
             ingress:\n    - from:\n      - ipBlock: {cidr: 172.17.0.0/16, except: [172.17.1.0/24]}\n      \
             - namespaceSelector: {matchLabels: {project: myproject}}\n      \
             - podSelector: {matchLabels: {role: frontend}}\n      \
             ports: [{protocol: TCP, port: 6379}]\n    \
             egress: [{to: [{ipBlock: {cidr: 10.0.0.0/24}}], ports: [{protocol: TCP, port: 5978}]}]",
            &[
                "Allow TCP from[nets=172.17.0.0/16 !nets=172.17.1.0/24] to[ports=6379]",
                r#"Allow TCP from[selector=projectcalico.org/orchestrator == "k8s" ns=project == "myproject"] to[ports=6379]"#,
                r#"Allow TCP from[selector=(projectcalico.org/orchestrator == "k8s" && role == "frontend")] to[ports=6379]"#,
            ],
            &["Allow TCP to[nets=10.0.0.0/24 ports=5978]"],
        ),
        // `ingress: [{}]`: one rule, no peer, no port: everything (§1.4).
        ("podSelector: {}\n    ingress: [{}]", &["Allow"], &[]),
        // `ingress: []`: no rule at all.
        ("podSelector: {}\n    ingress: []", &[], &[]),
        // Two protocols: one rule per protocol; a protocol-only port = every port of it;
        // endPort makes a range; a named port passes through.
        (
            "podSelector: {}\n    ingress: [{ports: [{protocol: UDP}, {port: 32000, endPort: 32768}, {port: http}]}]",
            &["Allow TCP to[ports=32000:32768,http]", "Allow UDP"],
            &[],
        ),
        // Both selectors in one peer: AND (pods in the selected namespaces); all() for `{}`.
        (
            "podSelector: {}\n    ingress: [{from: [{namespaceSelector: {}, podSelector: {matchExpressions: [{key: app, operator: NotIn, values: [a]}]}}]}]",
            &[
                r#"Allow from[selector=(projectcalico.org/orchestrator == "k8s" && app not in {"a"}) ns=all()]"#,
            ],
            &[],
        ),
    ];
    for (spec, ingress, egress) in cases {
        let p = only_policy("v3.30", &format!("{K8S}  spec:\n    {spec}\n"));
        assert_eq!(p.tier, "default");
        assert_eq!(p.order, Some(1000.0));
        assert_eq!(p.qualified_name(), "prod/knp.default.p");
        assert!(p.selector.to_string().contains(orch), "{}", p.selector);
        assert_eq!(rules(&p, Direction::Ingress), *ingress, "ingress of {spec}");
        assert_eq!(rules(&p, Direction::Egress), *egress, "egress of {spec}");
    }
}

#[test]
fn admin_policies_go_to_their_tiers_per_calico_version() {
    // REFERENCE-policy §2.5/§2.7: ANP -> admin tier, order = priority; BANP -> baseline tier,
    // order 1000; tier names `adminnetworkpolicy`/`baselineadminnetworkpolicy` up to v3.31,
    // `kube-admin`/`kube-baseline` from v3.32; types = the directions with rules.
    let anp = "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: AdminNetworkPolicy\n  \
               metadata: {name: a}\n  spec:\n    priority: 42\n    \
               subject: {namespaces: {matchLabels: {team: x}}}\n    \
               ingress: [{name: r, action: Pass, from: [{namespaces: {}}], \
               ports: [{portNumber: {protocol: UDP, port: 53}}, {portRange: {start: 80, end: 90}}, {namedPort: web}]}]\n";
    let banp = "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: BaselineAdminNetworkPolicy\n  \
                metadata: {name: default}\n  spec:\n    subject: {namespaces: {}}\n    \
                egress: [{action: Deny, to: [{networks: [0.0.0.0/0]}]}]\n";
    let cnp = "- apiVersion: policy.networking.k8s.io/v1alpha2\n  kind: ClusterNetworkPolicy\n  \
               metadata: {name: c}\n  spec:\n    tier: Baseline\n    priority: 7\n    \
               subject: {pods: {namespaceSelector: {}, podSelector: {matchLabels: {app: w}}}}\n    \
               ingress: [{action: Accept, from: [{namespaces: {}}], protocols: [{tcp: {destinationPort: {number: 8080}}}, {sctp: {}}]}]\n";
    for (profile, admin, baseline) in [
        ("v3.30", "adminnetworkpolicy", "baselineadminnetworkpolicy"),
        ("v3.32", "kube-admin", "kube-baseline"),
    ] {
        let set = policies(profile, &format!("{anp}{banp}{cnp}"));
        let by_name = |n: &str| set.policies().find(|p| p.name == n).unwrap().clone();
        let a = by_name("a");
        assert_eq!((a.tier.as_str(), a.order), (admin, Some(42.0)), "{profile}");
        assert_eq!((a.types.ingress, a.types.egress), (true, false));
        // Ports grouped per protocol (TCP is the default protocol of a portRange); the
        // named port has no protocol of its own.
        let all_namespaces = r#"from[selector=projectcalico.org/orchestrator == "k8s" ns=all()]"#;
        assert_eq!(
            rules(&a, Direction::Ingress),
            [
                format!("Pass {all_namespaces} to[ports=web]"),
                format!("Pass TCP {all_namespaces} to[ports=80:90]"),
                format!("Pass UDP {all_namespaces} to[ports=53]"),
            ]
        );
        let b = by_name("default");
        assert_eq!((b.tier.as_str(), b.order), (baseline, Some(1000.0)));
        assert_eq!((b.types.ingress, b.types.egress), (false, true));
        assert_eq!(rules(&b, Direction::Egress), ["Deny to[nets=0.0.0.0/0]"]);
        let c = by_name("c");
        assert_eq!((c.tier.as_str(), c.order), (baseline, Some(7.0)));
        // Accept is Calico's Allow; `sctp: {}` is every SCTP port.
        assert_eq!(
            rules(&c, Direction::Ingress),
            [
                format!("Allow TCP {all_namespaces} to[ports=8080]"),
                format!("Allow SCTP {all_namespaces}"),
            ]
        );
        // The admin tier runs first, the baseline tier after default.
        let tiers: Vec<String> = set.tiers().into_iter().map(|t| t.name).collect();
        assert_eq!(tiers, [admin, "default", baseline]);
    }
}

#[test]
fn calico_rules_decode_every_criterion() {
    let p = only_policy(
        "v3.30",
        &format!(
            "{CALICO_GNP}  spec:\n    order: 10.5\n    namespaceSelector: has(team)\n    \
             ingress:\n    - action: Deny\n      protocol: ICMP\n      icmp: {{type: 8, code: 0}}\n      \
             source: {{nets: [10.1.0.0/16, 10.9.9.9], notSelector: app == 'x', namespaceSelector: global()}}\n    \
             - action: Allow\n      protocol: TCP\n      destination: {{ports: [80, '443', '8000:8080', http], notPorts: ['30000:32767']}}\n    \
             - action: Log\n      notProtocol: 17\n      source: {{serviceAccounts: {{names: [api], selector: role == 'x'}}}}\n    \
             egress:\n    - action: Allow\n      destination: {{services: {{name: kube-dns, namespace: kube-system}}}}\n"
        ),
    );
    assert_eq!(p.order, Some(10.5));
    assert_eq!(p.namespace, None);
    assert_eq!(
        rules(&p, Direction::Ingress),
        [
            r#"Deny ICMP icmp=8/0 from[nets=10.1.0.0/16,10.9.9.9/32 !selector=app == "x" ns=global()]"#,
            "Allow TCP to[ports=80,443,8000:8080,http !ports=30000:32767]",
            r#"Log !UDP from[sa=api|role == "x"]"#,
        ]
    );
    assert_eq!(
        rules(&p, Direction::Egress),
        ["Allow to[service=kube-system/kube-dns]"]
    );
}

#[test]
fn invalid_policies_are_refused_at_their_field() {
    // (profile, resources, path of the first error, words of its message).
    let cases: &[(&str, String, &str, &str)] = &[
        // k8s-validation ValidateNetworkPolicyPeer.
        (
            "v3.30",
            format!("{K8S}  spec: {{podSelector: {{}}, ingress: [{{from: [{{}}]}}]}}\n"),
            "resources[0].spec.ingress[0].from[0]",
            "must specify a peer",
        ),
        (
            "v3.30",
            format!(
                "{K8S}  spec: {{podSelector: {{}}, ingress: [{{from: [{{ipBlock: {{cidr: 10.0.0.0/8}}, podSelector: {{}}}}]}}]}}\n"
            ),
            "resources[0].spec.ingress[0].from[0].ipBlock",
            "may not be combined",
        ),
        // ValidateIPBlock: except must be a strict subset.
        (
            "v3.30",
            format!(
                "{K8S}  spec: {{podSelector: {{}}, egress: [{{to: [{{ipBlock: {{cidr: 10.0.0.0/16, except: [10.0.0.0/16]}}}}]}}]}}\n"
            ),
            "resources[0].spec.egress[0].to[0].ipBlock.except[0]",
            "strict subset",
        ),
        // ValidateNetworkPolicyPort: endPort >= port; a quoted number is no port name.
        (
            "v3.30",
            format!("{K8S}  spec: {{podSelector: {{}}, ingress: [{{ports: [{{port: 90, endPort: 80}}]}}]}}\n"),
            "resources[0].spec.ingress[0].ports[0].endPort",
            "greater than or equal",
        ),
        (
            "v3.30",
            format!("{K8S}  spec: {{podSelector: {{}}, ingress: [{{ports: [{{port: '80'}}]}}]}}\n"),
            "resources[0].spec.ingress[0].ports[0].port",
            "not a port name",
        ),
        (
            "v3.30",
            format!("{K8S}  spec: {{podSelector: {{}}, policyTypes: [Ingres]}}\n"),
            "resources[0].spec.policyTypes[0]",
            "did you mean `Ingress`",
        ),
        // A typo'd field: the API server's strict decoding, with the nearest field.
        (
            "v3.30",
            format!("{K8S}  spec: {{podSelectr: {{}}}}\n"),
            "resources[0].spec.podSelectr",
            "did you mean `podSelector`",
        ),
        // Calico's validator: numeric ports need a protocol with ports; icmp needs ICMP.
        (
            "v3.30",
            format!("{CALICO_NP}  spec: {{ingress: [{{action: Allow, destination: {{ports: [80]}}}}]}}\n"),
            "resources[0].spec.ingress[0].destination",
            "need `protocol`",
        ),
        (
            "v3.30",
            format!("{CALICO_NP}  spec: {{ingress: [{{action: Allow, protocol: TCP, icmp: {{type: 8}}}}]}}\n"),
            "resources[0].spec.ingress[0].icmp",
            "ICMP",
        ),
        (
            "v3.30",
            format!("{CALICO_NP}  spec: {{ingress: [{{action: Accept}}]}}\n"),
            "resources[0].spec.ingress[0].action",
            "not one of",
        ),
        (
            "v3.30",
            format!("{CALICO_GNP}  spec: {{egress: [{{action: Allow, destination: {{services: {{name: dns}}}}}}]}}\n"),
            "resources[0].spec.egress[0].destination.services",
            "namespace",
        ),
        // v3.30–3.31: a policy in tier T must be named T.<name>.
        (
            "v3.30",
            format!(
                "- {{apiVersion: projectcalico.org/v3, kind: Tier, metadata: {{name: sec}}, spec: {{order: 10}}}}\n{CALICO_GNP}  spec: {{tier: sec}}\n"
            ),
            "resources[1].metadata.name",
            "`sec.g`",
        ),
        // The network-policy-api CRDs: priority 0..1000; BANP is the singleton `default`.
        (
            "v3.30",
            "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: AdminNetworkPolicy\n  metadata: {name: a}\n  spec: {priority: 1001, subject: {namespaces: {}}}\n".to_string(),
            "resources[0].spec.priority",
            "outside 0..1000",
        ),
        (
            "v3.30",
            "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: BaselineAdminNetworkPolicy\n  metadata: {name: b}\n  spec: {subject: {namespaces: {}}}\n".to_string(),
            "resources[0].metadata.name",
            "singleton",
        ),
        (
            "v3.30",
            "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: BaselineAdminNetworkPolicy\n  metadata: {name: default}\n  spec: {subject: {namespaces: {}}, ingress: [{action: Pass, from: [{namespaces: {}}]}]}\n".to_string(),
            "resources[0].spec.ingress[0].action",
            "not one of",
        ),
        (
            "v3.30",
            "- apiVersion: policy.networking.k8s.io/v1alpha1\n  kind: AdminNetworkPolicy\n  metadata: {name: a}\n  spec: {priority: 1, subject: {namespaces: {}, pods: {namespaceSelector: {}, podSelector: {}}}}\n".to_string(),
            "resources[0].spec.subject",
            "exactly one",
        ),
    ];
    for (profile, resources, path, words) in cases {
        let e = first_error(profile, resources);
        assert_eq!(e.path, *path, "{resources}\n{e:?}");
        assert!(e.message.contains(words), "{resources}\n{}", e.message);
        assert!(e.pos.line > 0 && e.pos.col > 0, "{e:?}");
    }
    // From v3.32 only spec.tier counts: the same policy loads.
    let ok = format!(
        "- {{apiVersion: projectcalico.org/v3, kind: Tier, metadata: {{name: sec}}, spec: {{order: 10}}}}\n{CALICO_GNP}  spec: {{tier: sec}}\n"
    );
    assert_eq!(only_policy("v3.32", &ok).tier, "sec");
}

#[test]
fn staged_policies_are_loaded_but_never_apply() {
    // REFERENCE-policy §2.9: loaded, reported, never enforced.
    let set = policies(
        "v3.30",
        "- apiVersion: projectcalico.org/v3\n  kind: StagedNetworkPolicy\n  \
         metadata: {name: s, namespace: prod}\n  spec: {stagedAction: Set, ingress: [{action: Deny}]}\n\
         - apiVersion: projectcalico.org/v3\n  kind: StagedKubernetesNetworkPolicy\n  \
         metadata: {name: k, namespace: prod}\n  spec: {podSelector: {}}\n",
    );
    let all: Vec<&Policy> = set.policies().collect();
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|p| p.staged && !p.applies(Direction::Ingress))
    );
    assert!(!set.has_enforced_policy());
}

#[test]
fn namespaces_service_accounts_and_deletes_reach_the_policy_set() {
    let mut set = policies(
        "v3.30",
        "- {apiVersion: v1, kind: Namespace, metadata: {name: prod, labels: {team: a}}}\n\
         - {apiVersion: v1, kind: ServiceAccount, metadata: {name: api, namespace: prod, labels: {role: x}}, \
         automountServiceAccountToken: false, imagePullSecrets: [{name: reg}]}\n\
         - apiVersion: networking.k8s.io/v1\n  kind: NetworkPolicy\n  metadata: {name: p, namespace: prod}\n  spec: {podSelector: {}}\n",
    );
    let ns = set.namespace_selector_labels("prod");
    assert_eq!(ns.get("team").map(String::as_str), Some("a"));
    assert_eq!(
        ns.get("kubernetes.io/metadata.name").map(String::as_str),
        Some("prod")
    );
    let sa = set.service_account_selector_labels("prod", "api");
    assert_eq!(sa.get("role").map(String::as_str), Some("x"));
    assert_eq!(
        sa.get("projectcalico.org/name").map(String::as_str),
        Some("api")
    );
    assert!(!set.delete_named("GlobalNetworkPolicy", "p"));
    assert!(set.delete_named("NetworkPolicy", "prod/p"));
    assert_eq!(set.policies().count(), 0);
}

/// A scenario with `body` (top-level keys) after the topology.
fn with_body(body: &str) -> String {
    format!(
        "name: t\n\
         topology:\n\
         \x20 zones:\n\
         \x20 - name: z\n\
         \x20   racks:\n\
         \x20   - name: r\n\
         \x20     subnet: 10.6.0.0/24\n\
         \x20     nodes: [{{name: n1}}]\n\
         {body}"
    )
}

#[test]
fn workloads_carry_ports_service_account_and_host_network() {
    use podnet::model::network::PolicyMode;
    use podnet::model::workload::{ContainerPort, PortProtocol};
    let s = load_str(
        "t.yaml",
        &with_body(
            "network: {policy: ignore}\n\
             workloads:\n\
             - {name: web, ports: [{name: http, containerPort: 8080}, {containerPort: 53, protocol: UDP}], \
             serviceAccountName: api, hostNetwork: true}\n\
             - {name: plain}\n\
             resources:\n\
             - apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: db, namespace: prod}\n  \
             spec:\n    template:\n      spec:\n        serviceAccount: legacy\n        containers:\n        \
             - {name: a, ports: [{name: pg, containerPort: 5432, hostPort: 5432}]}\n        \
             - {name: b, ports: [{containerPort: 9187, protocol: TCP}]}\n",
        ),
    )
    .unwrap_or_else(|d| panic!("{d}"));
    assert_eq!(s.network.policy, Some(PolicyMode::Ignore));
    let w = |name: &str| s.workloads.iter().find(|w| w.name == name).unwrap();
    let web = w("web");
    assert_eq!(
        web.ports,
        [
            ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                protocol: PortProtocol::Tcp
            },
            ContainerPort {
                name: None,
                container_port: 53,
                protocol: PortProtocol::Udp
            },
        ]
    );
    assert_eq!(
        (web.service_account_name.as_str(), web.host_network),
        ("api", true)
    );
    // Kubernetes' defaults: service account `default`, pod network.
    let plain = w("plain");
    assert_eq!(
        (plain.service_account_name.as_str(), plain.host_network),
        ("default", false)
    );
    assert!(plain.ports.is_empty());
    // From a manifest: every container's ports, hostPort ignored; the deprecated
    // `serviceAccount` alias.
    let db = w("db");
    assert_eq!(
        db.ports
            .iter()
            .map(|p| (p.name.as_deref(), p.container_port))
            .collect::<Vec<_>>(),
        [(Some("pg"), 5432), (None, 9187)]
    );
    assert_eq!(db.service_account_name, "legacy");
}

#[test]
fn invalid_container_ports_and_policy_mode_are_refused() {
    // Kubernetes' validateContainerPorts: 1..=65535, IANA_SVC_NAME names, unique per pod.
    let cases = [
        (
            "workloads: [{name: w, ports: [{containerPort: 0}]}]\n",
            "workloads[0].ports[0].containerPort",
            "outside 1..=65535",
        ),
        (
            "workloads: [{name: w, ports: [{name: HTTP, containerPort: 80}]}]\n",
            "workloads[0].ports[0].name",
            "not a port name",
        ),
        (
            "workloads: [{name: w, ports: [{name: web, containerPort: 80}, {name: web, containerPort: 81}]}]\n",
            "workloads[0].ports[1].name",
            "already used",
        ),
        (
            "workloads: [{name: w, ports: [{name: web}]}]\n",
            "workloads[0].ports[0]",
            "containerPort",
        ),
        ("network: {policy: enforced}\n", "network.policy", "enforce"),
    ];
    for (body, path, words) in cases {
        let d = load_str("t.yaml", &with_body(body)).expect_err("refused");
        let e = d.errors().next().expect("an error");
        assert_eq!(e.path, path, "{body}\n{e:?}");
        assert!(e.message.contains(words), "{body}\n{}", e.message);
    }
}

#[test]
fn the_schema_knows_the_policy_fields() {
    let schema = serde_json::to_value(podnet::scenario::raw::scenario_schema()).expect("json");
    let defs = &schema["$defs"];
    let props = |def: &str| {
        defs[def]["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("no definition {def}: {defs}"))
            .keys()
            .cloned()
            .collect::<Vec<_>>()
    };
    let workload = props("RawWorkload");
    for key in ["ports", "serviceAccountName", "hostNetwork"] {
        assert!(
            workload.contains(&key.to_string()),
            "RawWorkload lacks {key}"
        );
    }
    assert!(props("RawNetwork").contains(&"policy".to_string()));
    assert_eq!(
        props("RawContainerPort"),
        ["containerPort", "name", "protocol"]
    );
}
