//! Decoding the network policy kinds (SPEC §7) into [`crate::policy::model`], converting each
//! to the Calico policy Felix would evaluate (REFERENCE-policy §2.6, §2.7).
//!
//! Kinds: `networking.k8s.io/v1` NetworkPolicy; `projectcalico.org/v3` (and
//! `crd.projectcalico.org/v1`) NetworkPolicy, GlobalNetworkPolicy, Tier and the three Staged
//! kinds; `policy.networking.k8s.io` v1alpha1 AdminNetworkPolicy, BaselineAdminNetworkPolicy
//! and v1alpha2 ClusterNetworkPolicy; `v1` ServiceAccount. The field check (typos, unmodelled
//! fields) is [`super::kinds`]'s, run with [`super::policy_fields`]' tables before this.
//!
//! Validation is the API server's: Kubernetes' `ValidateNetworkPolicy` (peers, `ipBlock`
//! `except` a strict subset, ports and `endPort`, label selectors), Calico's validator (rule
//! actions, protocols, ports only with a protocol that has ports, `icmp` only with ICMP,
//! `services` placement, the v3.30–3.31 tier name prefix), the network-policy-api CRDs'
//! (priority 0–1000, exactly one subject and peer kind, BaselineAdminNetworkPolicy named
//! `default`). Every problem is reported at its field; decoding never stops at the first.
//!
//! Conversion is Calico's (conversion.go K8sNetworkPolicyToCalico,
//! K8sAdminNetworkPolicyToCalico): Kubernetes `policyTypes` are defaulted the Kubernetes way
//! before conversion, Calico `types` the Calico way; a Kubernetes rule becomes one Allow rule
//! per peer and protocol; an admin rule that cannot be converted (a `nodes` peer) fails
//! closed: Deny and Pass rules become "Deny everything", Allow rules are dropped, each with a
//! warning.
//!
//! What this module does not do: it does not check that a namespace, tier or service named by
//! a policy exists (a warning at most: events may create them later) and it never evaluates.

use std::collections::BTreeMap;

use ipnet::IpNet;

use super::api_fields::KindSchema;
use super::decode::{Cx, Decode};
use super::diag::nearest;
use super::kinds::{
    ResourceSpec, Spec, calico_selector, label_selector, list, port_or_name, seq_items, strings,
    word,
};
use super::resource::Resource;
use super::yaml::{Node, Value};
use crate::model::Labels;
use crate::model::network::CalicoProfile;
use crate::model::selector::{LabelSelector, Selector};
use crate::policy::model::{
    Action, DEFAULT_TIER, Direction, EntityRule, IcmpMatch, LABEL_ORCHESTRATOR, Policy, PolicyKind,
    PolicyResource, PolicySet, PolicyTypes, PortMatch, Protocol, Rule, ServiceAccountMatch,
    ServiceRef, Tier, TierAction, admin_tier_name, baseline_tier_name,
};

/// Decodes one policy-kind resource whose fields were already checked against `schema`.
pub(super) fn decode(
    r: &Resource,
    schema: &'static KindSchema,
    labels: Labels,
    profile: CalicoProfile,
    cx: &mut Cx,
) -> Option<PolicyResource> {
    let namespace = r.namespace.clone().unwrap_or_else(|| "default".to_string());
    if schema.kind == "ServiceAccount" {
        return Some(PolicyResource::ServiceAccount {
            namespace,
            name: r.name.clone(),
            labels,
        });
    }
    let spec = Spec::of(r, cx)?;
    let d = PolicyDecoder {
        r,
        profile,
        namespace: schema.namespaced.then_some(namespace),
    };
    cx.at_key("spec", |cx| match schema.kind {
        "Tier" => d.tier(&spec, cx).map(PolicyResource::Tier),
        "NetworkPolicy" if schema.api_version == super::policy_fields::NETWORKING_V1 => {
            d.kubernetes(&spec, false, cx)
        }
        "StagedKubernetesNetworkPolicy" => d.kubernetes(&spec, true, cx),
        "NetworkPolicy" | "GlobalNetworkPolicy" => d.calico(&spec, false, cx),
        "StagedNetworkPolicy" | "StagedGlobalNetworkPolicy" => d.calico(&spec, true, cx),
        "AdminNetworkPolicy" => d.admin(&spec, AdminFlavour::Anp, cx),
        "BaselineAdminNetworkPolicy" => d.admin(&spec, AdminFlavour::Banp, cx),
        "ClusterNetworkPolicy" => d.admin(&spec, AdminFlavour::Cnp, cx),
        _ => None,
    })
}

/// A ServiceAccount has top-level fields besides `metadata` (k8s-api core/v1 ServiceAccount);
/// podnet reads only its labels, so the copy returned has them removed for the field check
/// (`None` for every other kind, or when there is nothing to remove).
pub(super) fn without_service_account_fields(r: &Resource) -> Option<Resource> {
    const FIELDS: [&str; 3] = [
        "secrets",
        "imagePullSecrets",
        "automountServiceAccountToken",
    ];
    if r.api_version != "v1" || r.kind != "ServiceAccount" {
        return None;
    }
    let Value::Map(entries) = &r.body.value else {
        return None;
    };
    if !entries
        .iter()
        .any(|(k, _)| FIELDS.contains(&k.text.as_str()))
    {
        return None;
    }
    let mut trimmed = r.clone();
    trimmed.body.value = Value::Map(
        entries
            .iter()
            .filter(|(k, _)| !FIELDS.contains(&k.text.as_str()))
            .cloned()
            .collect(),
    );
    Some(trimmed)
}

/// The policy state the decoded `resources` make at time zero, with their namespaces'
/// labels. A policy in a tier that no Tier declares (neither here nor in an `apply` event) is
/// kept with a warning: Calico's API server refuses it, but an event may create the tier, and
/// until one does the engine finds no such tier and the policy never applies.
pub(super) fn policy_set(
    profile: CalicoProfile,
    resources: &[Resource],
    specs: &[Option<ResourceSpec>],
    applied_specs: &[Option<ResourceSpec>],
    cx: &mut Cx,
) -> PolicySet {
    let mut set = PolicySet::new(profile);
    for spec in specs.iter().flatten() {
        match spec {
            ResourceSpec::Policy(p) => set.apply(p),
            ResourceSpec::Namespace(ns) => set.apply(&PolicyResource::Namespace {
                name: ns.name.clone(),
                labels: ns.labels.clone(),
            }),
            _ => {}
        }
    }
    let mut tiers: Vec<String> = Tier::fixed(profile).map(|t| t.name).into();
    for spec in specs.iter().chain(applied_specs).flatten() {
        if let ResourceSpec::Policy(PolicyResource::Tier(t)) = spec {
            tiers.push(t.name.clone());
        }
    }
    for (r, spec) in resources.iter().zip(specs) {
        let Some(ResourceSpec::Policy(PolicyResource::Policy(p))) = spec else {
            continue;
        };
        if tiers.contains(&p.tier) {
            continue;
        }
        let pos = r.locate(&["spec", "tier"]);
        cx.with_path_prefix(&r.path, |cx| {
            cx.at_key("spec", |cx| {
                cx.at_key("tier", |cx| {
                    cx.warning(
                        pos,
                        format!(
                            "no Tier `{}` is declared; Calico refuses a policy in a missing \
                             tier, and podnet applies this one only once the tier exists",
                            p.tier
                        ),
                    )
                })
            })
        });
    }
    set
}

struct PolicyDecoder<'r> {
    r: &'r Resource,
    profile: CalicoProfile,
    /// The policy's namespace for namespaced kinds.
    namespace: Option<String>,
}

/// `projectcalico.org/orchestrator == 'k8s'`: what Calico prefixes to every selector it
/// converts from a Kubernetes pod selector (conversion.go k8sSelectorToCalico, SelectorPod).
fn k8s_pods(pod_selector: Option<&LabelSelector>) -> Selector {
    let base = Selector::label_equals(LABEL_ORCHESTRATOR, "k8s");
    match pod_selector {
        Some(ls) => base.and(Selector::from(ls)),
        None => base,
    }
}

impl PolicyDecoder<'_> {
    fn policy(&self, kind: PolicyKind, staged: bool, tier: String) -> Policy {
        Policy {
            kind,
            staged,
            namespace: self.namespace.clone(),
            name: self.r.name.clone(),
            tier,
            order: None,
            selector: Selector::all(),
            service_account_selector: None,
            namespace_selector: None,
            types: PolicyTypes::default(),
            ingress: Vec::new(),
            egress: Vec::new(),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Calico Tier

    fn tier(&self, spec: &Spec, cx: &mut Cx) -> Option<Tier> {
        let order = spec.get(cx, "order", order);
        let default_action = spec
            .get(cx, "defaultAction", |n, cx| {
                word(
                    n,
                    cx,
                    &[("Deny", TierAction::Deny), ("Pass", TierAction::Pass)],
                )
            })
            .unwrap_or(TierAction::Deny);
        let fixed = Tier::fixed(self.profile);
        if let Some(t) = fixed.iter().find(|t| t.name == self.r.name) {
            // Calico's validator fixes these tiers' order and default action.
            if order.is_some_and(|o| Some(o) != t.order) || default_action != t.default_action {
                let pos = spec.pos;
                cx.error(
                    pos,
                    format!(
                        "tier `{}` has a fixed order {} and defaultAction {}",
                        t.name,
                        t.order.unwrap_or_default(),
                        t.default_action
                    ),
                );
                return None;
            }
        }
        Some(Tier {
            name: self.r.name.clone(),
            order,
            default_action,
        })
    }

    // -----------------------------------------------------------------------------------------
    // Kubernetes NetworkPolicy

    fn kubernetes(&self, spec: &Spec, staged: bool, cx: &mut Cx) -> Option<PolicyResource> {
        if staged {
            spec.get(cx, "stagedAction", staged_action);
        }
        let pod_selector = spec
            .get(cx, "podSelector", checked_label_selector)
            .unwrap_or_default();
        let policy_types = spec.get(cx, "policyTypes", |n, cx| list(n, cx, direction));
        let ingress = spec
            .get(cx, "ingress", |n, cx| {
                list(n, cx, |n, cx| self.k8s_rule(n, Direction::Ingress, cx))
            })
            .unwrap_or_default();
        let egress = spec
            .get(cx, "egress", |n, cx| {
                list(n, cx, |n, cx| self.k8s_rule(n, Direction::Egress, cx))
            })
            .unwrap_or_default();
        // The API server defaults an empty or missing policyTypes (k8s-api NetworkPolicySpec).
        let types = match policy_types {
            Some(list) if !list.is_empty() => {
                if list.len() > 2 {
                    let pos = spec.pos_of("policyTypes");
                    cx.at_key("policyTypes", |cx| {
                        cx.error(pos, "must have at most 2 items (Ingress, Egress)")
                    });
                }
                PolicyTypes {
                    ingress: list.contains(&Direction::Ingress),
                    egress: list.contains(&Direction::Egress),
                }
            }
            _ => PolicyTypes::kubernetes_default(!egress.is_empty()),
        };
        let mut p = self.policy(
            PolicyKind::KubernetesNetworkPolicy,
            staged,
            DEFAULT_TIER.to_string(),
        );
        p.order = Some(1000.0);
        p.selector = k8s_pods(Some(&pod_selector));
        p.types = types;
        p.ingress = ingress.into_iter().flatten().collect();
        p.egress = egress.into_iter().flatten().collect();
        Some(PolicyResource::Policy(Box::new(p)))
    }

    /// One Kubernetes rule as Calico's Allow rules: one per peer and protocol
    /// (conversion.go k8sRuleToCalico).
    fn k8s_rule(&self, node: &Node, d: Direction, cx: &mut Cx) -> Option<Vec<Rule>> {
        let object = Spec::from_node(node, cx)?;
        let peers_key = match d {
            Direction::Ingress => "from",
            Direction::Egress => "to",
        };
        let peers = object
            .get(cx, peers_key, |n, cx| {
                list(n, cx, |n, cx| self.k8s_peer(n, cx))
            })
            .unwrap_or_default();
        let ports = object
            .get(cx, "ports", |n, cx| list(n, cx, k8s_port))
            .unwrap_or_default();
        // Ports grouped by protocol; `None` = every port of that protocol.
        let by_protocol = ports_by_protocol(ports);
        let protocols: Vec<(Option<Protocol>, Vec<PortMatch>)> = if by_protocol.is_empty() {
            vec![(None, Vec::new())]
        } else {
            by_protocol
                .into_iter()
                .map(|(p, ports)| (Some(p), ports.unwrap_or_default()))
                .collect()
        };
        let peers: Vec<EntityRule> = if peers.is_empty() {
            vec![EntityRule::default()]
        } else {
            peers
        };
        let mut rules = Vec::new();
        for (protocol, ports) in &protocols {
            for peer in &peers {
                let mut rule = Rule::any(Action::Allow);
                rule.protocol = *protocol;
                rule.destination.ports = ports.clone();
                match d {
                    Direction::Ingress => rule.source = peer.clone(),
                    Direction::Egress => {
                        let ports = std::mem::take(&mut rule.destination.ports);
                        rule.destination = peer.clone();
                        rule.destination.ports = ports;
                    }
                }
                rules.push(rule);
            }
        }
        Some(rules)
    }

    /// A NetworkPolicyPeer (k8s-validation ValidateNetworkPolicyPeer).
    fn k8s_peer(&self, node: &Node, cx: &mut Cx) -> Option<EntityRule> {
        let object = Spec::from_node(node, cx)?;
        let pods = object.get(cx, "podSelector", checked_label_selector);
        let namespaces = object.get(cx, "namespaceSelector", checked_label_selector);
        let ip_block = object.get(cx, "ipBlock", ip_block);
        let given = ["podSelector", "namespaceSelector", "ipBlock"]
            .iter()
            .filter(|k| object.has(k))
            .count();
        if given == 0 {
            cx.error(
                node.pos,
                "must specify a peer: `podSelector`, `namespaceSelector` or `ipBlock`",
            );
            return None;
        }
        if object.has("ipBlock") && given > 1 {
            let pos = object.pos_of("ipBlock");
            cx.at_key("ipBlock", |cx| {
                cx.error(
                    pos,
                    "may not be combined with `podSelector` or `namespaceSelector` in one peer",
                )
            });
            return None;
        }
        if object.has("ipBlock") {
            let (cidr, except) = ip_block?;
            return Some(EntityRule {
                nets: vec![cidr],
                not_nets: except,
                ..EntityRule::default()
            });
        }
        if (object.has("podSelector") && pods.is_none())
            || (object.has("namespaceSelector") && namespaces.is_none())
        {
            return None;
        }
        Some(EntityRule {
            selector: Some(k8s_pods(pods.as_ref())),
            // A namespaceSelector `{}` becomes `all()`: every namespace.
            namespace_selector: namespaces.as_ref().map(Selector::from),
            ..EntityRule::default()
        })
    }

    // -----------------------------------------------------------------------------------------
    // Calico NetworkPolicy / GlobalNetworkPolicy (and their Staged kinds)

    fn calico(&self, spec: &Spec, staged: bool, cx: &mut Cx) -> Option<PolicyResource> {
        if staged {
            spec.get(cx, "stagedAction", staged_action);
        }
        let tier: String = spec
            .value::<String>(cx, "tier")
            .filter(|t| !t.is_empty())
            .unwrap_or_else(|| DEFAULT_TIER.to_string());
        self.check_tier_prefix(&tier, staged, cx);
        let kind = if self.namespace.is_some() {
            PolicyKind::CalicoNetworkPolicy
        } else {
            PolicyKind::GlobalNetworkPolicy
        };
        let mut p = self.policy(kind, staged, tier);
        p.order = spec.get(cx, "order", order);
        p.selector = spec
            .get(cx, "selector", calico_selector)
            .unwrap_or_else(Selector::all);
        p.service_account_selector = spec.get(cx, "serviceAccountSelector", calico_selector);
        p.namespace_selector = spec.get(cx, "namespaceSelector", calico_selector);
        let types = spec.get(cx, "types", |n, cx| list(n, cx, direction));
        let ingress = spec.get(cx, "ingress", |n, cx| {
            list(n, cx, |n, cx| self.calico_rule(n, Direction::Ingress, cx))
        });
        let egress = spec.get(cx, "egress", |n, cx| {
            list(n, cx, |n, cx| self.calico_rule(n, Direction::Egress, cx))
        });
        let (has_ingress, has_egress) = (
            spec.node("ingress")
                .and_then(seq_items)
                .is_some_and(|s| !s.is_empty()),
            spec.node("egress")
                .and_then(seq_items)
                .is_some_and(|s| !s.is_empty()),
        );
        p.types = match types {
            Some(list) if !list.is_empty() => PolicyTypes {
                ingress: list.contains(&Direction::Ingress),
                egress: list.contains(&Direction::Egress),
            },
            // Calico's defaulting (api/pkg/defaults/networkpolicy.go).
            _ => PolicyTypes::calico_default(has_ingress, has_egress),
        };
        p.ingress = ingress.unwrap_or_default();
        p.egress = egress.unwrap_or_default();
        Some(PolicyResource::Policy(Box::new(p)))
    }

    /// Up to v3.31 a policy in tier T must be named `T.<name>`; a default-tier policy may
    /// omit the prefix (v3.30 libcalico-go/lib/names/policy.go ValidateTieredPolicyName).
    fn check_tier_prefix(&self, tier: &str, staged: bool, cx: &mut Cx) {
        if self.profile >= CalicoProfile::V3_32 || tier == DEFAULT_TIER {
            return;
        }
        let name = self.r.name.as_str();
        let name = if staged {
            name.strip_prefix("staged:").unwrap_or(name)
        } else {
            name
        };
        if name.strip_prefix(tier).is_some_and(|r| r.starts_with('.')) {
            return;
        }
        let pos = self.r.locate(&["metadata", "name"]);
        cx.with_path_prefix(&self.r.path, |cx| {
            cx.at_key("metadata", |cx| {
                cx.at_key("name", |cx| {
                    cx.error(
                        pos,
                        format!(
                            "a policy in tier `{tier}` must be named `{tier}.<name>` up to \
                             Calico v3.31 (profile {}); did you mean `{tier}.{name}`?",
                            self.profile
                        ),
                    )
                })
            })
        });
    }

    fn calico_rule(&self, node: &Node, d: Direction, cx: &mut Cx) -> Option<Rule> {
        let object = Spec::from_node(node, cx)?;
        let action = object.required(cx, "action", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("Allow", Action::Allow),
                    ("Deny", Action::Deny),
                    ("Pass", Action::Pass),
                    ("Log", Action::Log),
                ],
            )
        });
        let rule_protocol = object.get(cx, "protocol", protocol);
        let not_protocol = object.get(cx, "notProtocol", protocol);
        let rule_icmp = object.get(cx, "icmp", icmp);
        let not_icmp = object.get(cx, "notICMP", icmp);
        object.get(cx, "ipVersion", |n, cx| {
            u8::decode(n, cx).filter(|v| {
                let ok = *v == 4 || *v == 6;
                if !ok {
                    cx.error(n.pos, "ipVersion must be 4 or 6");
                }
                ok
            })
        });
        let source = object.get(cx, "source", |n, cx| self.entity(n, cx));
        let destination = object.get(cx, "destination", |n, cx| self.entity(n, cx));
        let mut ok = action.is_some();
        // Calico's validator: numeric ports need a protocol with ports.
        for (key, entity) in [("source", &source), ("destination", &destination)] {
            let Some(entity) = entity else {
                ok &= !object.has(key);
                continue;
            };
            let numeric = entity
                .ports
                .iter()
                .chain(&entity.not_ports)
                .any(|p| matches!(p, PortMatch::Range { .. }));
            if numeric && !rule_protocol.is_some_and(Protocol::has_ports) {
                let pos = object.pos_of(key);
                cx.at_key(key, |cx| {
                    cx.error(
                        pos,
                        "numeric ports need `protocol` TCP, UDP, SCTP or UDPLite in the rule",
                    )
                });
                ok = false;
            }
            if entity.services.is_some() {
                let allowed = matches!(
                    (d, key),
                    (Direction::Egress, "destination") | (Direction::Ingress, "source")
                );
                if !allowed {
                    let pos = object.pos_of(key);
                    cx.at_key(key, |cx| {
                        cx.error(
                            pos,
                            "`services` may only match an egress destination or an ingress source",
                        )
                    });
                    ok = false;
                }
            }
        }
        for (key, m) in [("icmp", rule_icmp), ("notICMP", not_icmp)] {
            let icmp_protocol = matches!(rule_protocol, Some(Protocol::ICMP | Protocol::ICMPV6));
            if m.is_some() && !icmp_protocol {
                let pos = object.pos_of(key);
                cx.at_key(key, |cx| {
                    cx.error(
                        pos,
                        "`icmp` and `notICMP` need `protocol: ICMP` or `ICMPv6`",
                    )
                });
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        Some(Rule {
            action: action?,
            protocol: rule_protocol,
            not_protocol,
            icmp: rule_icmp,
            not_icmp,
            source: source.unwrap_or_default(),
            destination: destination.unwrap_or_default(),
        })
    }

    /// A Calico EntityRule.
    fn entity(&self, node: &Node, cx: &mut Cx) -> Option<EntityRule> {
        let object = Spec::from_node(node, cx)?;
        let nets = object.get(cx, "nets", |n, cx| list(n, cx, calico_net));
        let not_nets = object.get(cx, "notNets", |n, cx| list(n, cx, calico_net));
        let selector = object.get(cx, "selector", calico_selector);
        let not_selector = object.get(cx, "notSelector", calico_selector);
        let namespace_selector = object.get(cx, "namespaceSelector", calico_selector);
        let ports = object.get(cx, "ports", |n, cx| list(n, cx, calico_port));
        let not_ports = object.get(cx, "notPorts", |n, cx| list(n, cx, calico_port));
        let service_accounts = object.child(cx, "serviceAccounts").map(|sa| {
            cx.at_key("serviceAccounts", |cx| ServiceAccountMatch {
                names: sa.get(cx, "names", strings).unwrap_or_default(),
                selector: sa.get(cx, "selector", calico_selector),
            })
        });
        let services = object.child(cx, "services").and_then(|s| {
            cx.at_key("services", |cx| {
                let name = s.required(cx, "name", String::decode)?;
                let namespace = s
                    .value::<String>(cx, "namespace")
                    .or_else(|| self.namespace.clone());
                match namespace {
                    Some(namespace) => Some(ServiceRef { name, namespace }),
                    None => {
                        cx.error(
                            s.pos,
                            "a GlobalNetworkPolicy must give the service's `namespace`",
                        );
                        None
                    }
                }
            })
        });
        if object.has("services") {
            // Calico's validator: only ports may accompany `services`.
            for key in [
                "nets",
                "notNets",
                "selector",
                "notSelector",
                "namespaceSelector",
                "serviceAccounts",
            ] {
                if object.has(key) {
                    let pos = object.pos_of(key);
                    cx.at_key(key, |cx| {
                        cx.error(pos, format!("`{key}` cannot be combined with `services`"))
                    });
                }
            }
        }
        let failed = (object.has("nets") && nets.is_none())
            || (object.has("notNets") && not_nets.is_none())
            || (object.has("selector") && selector.is_none())
            || (object.has("notSelector") && not_selector.is_none())
            || (object.has("namespaceSelector") && namespace_selector.is_none())
            || (object.has("ports") && ports.is_none())
            || (object.has("notPorts") && not_ports.is_none())
            || (object.has("services") && services.is_none());
        if failed {
            return None;
        }
        Some(EntityRule {
            nets: nets.unwrap_or_default(),
            not_nets: not_nets.unwrap_or_default(),
            selector,
            not_selector,
            namespace_selector,
            ports: ports.unwrap_or_default(),
            not_ports: not_ports.unwrap_or_default(),
            service_accounts,
            services,
        })
    }

    // -----------------------------------------------------------------------------------------
    // AdminNetworkPolicy, BaselineAdminNetworkPolicy, ClusterNetworkPolicy

    fn admin(&self, spec: &Spec, flavour: AdminFlavour, cx: &mut Cx) -> Option<PolicyResource> {
        let (kind, tier, order) = match flavour {
            AdminFlavour::Anp => {
                let priority = spec.required(cx, "priority", priority);
                (
                    PolicyKind::AdminNetworkPolicy,
                    admin_tier_name(self.profile),
                    priority,
                )
            }
            AdminFlavour::Banp => {
                if self.r.name != "default" {
                    let pos = self.r.locate(&["metadata", "name"]);
                    cx.with_path_prefix(&self.r.path, |cx| {
                        cx.at_key("metadata", |cx| {
                            cx.at_key("name", |cx| {
                                cx.error(
                                    pos,
                                    format!(
                                        "BaselineAdminNetworkPolicy is a singleton named \
                                         `default`, not `{}`",
                                        self.r.name
                                    ),
                                )
                            })
                        })
                    });
                }
                (
                    PolicyKind::BaselineAdminNetworkPolicy,
                    baseline_tier_name(self.profile),
                    Some(1000.0),
                )
            }
            AdminFlavour::Cnp => {
                let tier = spec.required(cx, "tier", |n, cx| {
                    word(n, cx, &[("Admin", true), ("Baseline", false)])
                });
                let priority = spec.required(cx, "priority", priority);
                let tier = match tier {
                    Some(false) => baseline_tier_name(self.profile),
                    _ => admin_tier_name(self.profile),
                };
                (PolicyKind::ClusterNetworkPolicy, tier, priority)
            }
        };
        let subject = spec.required(cx, "subject", |n, cx| self.admin_subject(n, cx));
        let ingress = spec.get(cx, "ingress", |n, cx| {
            list(n, cx, |n, cx| {
                self.admin_rule(n, Direction::Ingress, flavour, cx)
            })
        });
        let egress = spec.get(cx, "egress", |n, cx| {
            list(n, cx, |n, cx| {
                self.admin_rule(n, Direction::Egress, flavour, cx)
            })
        });
        let (selector, namespace_selector) = subject?;
        let mut p = self.policy(kind, false, tier.to_string());
        p.order = order;
        p.selector = selector;
        p.namespace_selector = Some(namespace_selector);
        p.ingress = ingress.unwrap_or_default().into_iter().flatten().collect();
        p.egress = egress.unwrap_or_default().into_iter().flatten().collect();
        // Calico: the directions that have rules.
        p.types = PolicyTypes {
            ingress: spec
                .node("ingress")
                .and_then(seq_items)
                .is_some_and(|s| !s.is_empty()),
            egress: spec
                .node("egress")
                .and_then(seq_items)
                .is_some_and(|s| !s.is_empty()),
        };
        Some(PolicyResource::Policy(Box::new(p)))
    }

    /// `subject`: exactly one of `namespaces` and `pods`, as (pod selector, namespace
    /// selector).
    fn admin_subject(&self, node: &Node, cx: &mut Cx) -> Option<(Selector, Selector)> {
        let object = Spec::from_node(node, cx)?;
        let namespaces = object.get(cx, "namespaces", checked_label_selector);
        let pods = object.get(cx, "pods", namespaced_pods);
        match (object.has("namespaces"), object.has("pods")) {
            (true, false) => Some((k8s_pods(None), Selector::from(&namespaces?))),
            (false, true) => pods,
            _ => {
                cx.error(node.pos, "give exactly one of `namespaces` and `pods`");
                None
            }
        }
    }

    /// One admin rule as Calico rules (one per peer and protocol), failing closed.
    fn admin_rule(
        &self,
        node: &Node,
        d: Direction,
        flavour: AdminFlavour,
        cx: &mut Cx,
    ) -> Option<Vec<Rule>> {
        let object = Spec::from_node(node, cx)?;
        let words: &[(&str, Action)] = match flavour {
            AdminFlavour::Anp => &[
                ("Allow", Action::Allow),
                ("Deny", Action::Deny),
                ("Pass", Action::Pass),
            ],
            AdminFlavour::Banp => &[("Allow", Action::Allow), ("Deny", Action::Deny)],
            AdminFlavour::Cnp => &[
                ("Accept", Action::Allow),
                ("Deny", Action::Deny),
                ("Pass", Action::Pass),
            ],
        };
        let action = object.required(cx, "action", |n, cx| word(n, cx, words));
        if let Some(name) = object.value::<String>(cx, "name")
            && name.chars().count() > 100
        {
            let pos = object.pos_of("name");
            cx.at_key("name", |cx| cx.error(pos, "must be at most 100 characters"));
        }
        let peers_key = match d {
            Direction::Ingress => "from",
            Direction::Egress => "to",
        };
        let unconvertible = std::cell::Cell::new(false);
        let peers = object.required(cx, peers_key, |n, cx| {
            let items = seq_items(n);
            if items.is_some_and(|s| s.is_empty()) {
                cx.error(n.pos, "must have at least one peer");
                return None;
            }
            list(n, cx, |n, cx| {
                let peer = self.admin_peer(n, d, cx)?;
                if peer.is_none() {
                    unconvertible.set(true);
                }
                Some(peer)
            })
        });
        let ports_key = match flavour {
            AdminFlavour::Cnp => "protocols",
            _ => "ports",
        };
        let ports = object
            .get(cx, ports_key, |n, cx| match flavour {
                AdminFlavour::Cnp => list(n, cx, cnp_protocol),
                _ => list(n, cx, anp_port),
            })
            .unwrap_or_default();
        let action = action?;
        let peers = peers?;
        if unconvertible.get() {
            // Calico fails closed (conversion.go): Deny and Pass become "deny all", Allow is
            // dropped.
            let pos = object.pos_of(peers_key);
            let what = match action {
                Action::Allow => "the rule is dropped",
                _ => "the rule becomes `Deny` everything",
            };
            cx.at_key(peers_key, |cx| {
                cx.warning(
                    pos,
                    format!("Calico cannot convert a `nodes` peer; failing closed, {what}"),
                )
            });
            return Some(match action {
                Action::Allow => Vec::new(),
                _ => vec![Rule::any(Action::Deny)],
            });
        }
        // Ports grouped by protocol (a named port has none of its own); `None` = every port
        // of that protocol.
        let by_protocol = ports_by_protocol(ports);
        let mut groups: Vec<(Option<Protocol>, Vec<PortMatch>)> = by_protocol
            .into_iter()
            .map(|(p, ports)| (p, ports.unwrap_or_default()))
            .collect();
        if groups.is_empty() {
            groups.push((None, Vec::new()));
        }
        let mut rules = Vec::new();
        for peer in peers.into_iter().flatten() {
            for (protocol, ports) in &groups {
                let mut rule = Rule::any(action);
                rule.protocol = *protocol;
                match d {
                    Direction::Ingress => rule.source = peer.clone(),
                    Direction::Egress => rule.destination = peer.clone(),
                }
                rule.destination.ports = ports.clone();
                rules.push(rule);
            }
        }
        Some(rules)
    }

    /// An admin peer; `Some(None)` for a valid peer Calico cannot convert (`nodes`).
    fn admin_peer(&self, node: &Node, d: Direction, cx: &mut Cx) -> Option<Option<EntityRule>> {
        let object = Spec::from_node(node, cx)?;
        let namespaces = object.get(cx, "namespaces", checked_label_selector);
        let pods = object.get(cx, "pods", namespaced_pods);
        let networks = match d {
            Direction::Egress => object.get(cx, "networks", |n, cx| {
                let items = list(n, cx, network_cidr)?;
                if items.is_empty() || items.len() > 25 {
                    cx.error(n.pos, "must have 1 to 25 CIDRs");
                    return None;
                }
                Some(items)
            }),
            Direction::Ingress => None,
        };
        let keys: &[&str] = match d {
            Direction::Ingress => &["namespaces", "pods"],
            Direction::Egress => &["namespaces", "pods", "nodes", "networks"],
        };
        let given: Vec<&str> = keys.iter().copied().filter(|k| object.has(k)).collect();
        if given.len() != 1 {
            cx.error(
                node.pos,
                format!("give exactly one of: {}", keys.join(", ")),
            );
            return None;
        }
        Some(match given[0] {
            "namespaces" => Some(EntityRule {
                selector: Some(k8s_pods(None)),
                namespace_selector: Some(Selector::from(&namespaces?)),
                ..EntityRule::default()
            }),
            "pods" => {
                let (selector, namespace_selector) = pods?;
                Some(EntityRule {
                    selector: Some(selector),
                    namespace_selector: Some(namespace_selector),
                    ..EntityRule::default()
                })
            }
            "networks" => Some(EntityRule {
                nets: networks?,
                ..EntityRule::default()
            }),
            _ => None,
        })
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum AdminFlavour {
    Anp,
    Banp,
    Cnp,
}

// ---------------------------------------------------------------------------------------------
// Values

fn direction(node: &Node, cx: &mut Cx) -> Option<Direction> {
    word(
        node,
        cx,
        &[
            ("Ingress", Direction::Ingress),
            ("Egress", Direction::Egress),
        ],
    )
}

fn staged_action(node: &Node, cx: &mut Cx) -> Option<()> {
    word(node, cx, &[("Set", ()), ("Delete", ())])
}

/// A Calico `order`: any number.
fn order(node: &Node, cx: &mut Cx) -> Option<f64> {
    match node.value {
        Value::Int(i) => Some(i as f64),
        Value::Float(f) if f.is_finite() => Some(f),
        _ => {
            cx.error(
                node.pos,
                format!("expected a number, found {}", node.value.kind_name()),
            );
            None
        }
    }
}

/// An admin policy's `priority`: 0..=1000.
fn priority(node: &Node, cx: &mut Cx) -> Option<f64> {
    let p = u32::decode(node, cx)?;
    if p > 1000 {
        cx.error(node.pos, format!("{p} is outside 0..1000"));
        return None;
    }
    Some(f64::from(p))
}

/// A label selector with Kubernetes' own checks (`ValidateLabelSelector`).
fn checked_label_selector(node: &Node, cx: &mut Cx) -> Option<LabelSelector> {
    let s = label_selector(node, cx)?;
    let problems = s.validate();
    for p in &problems {
        cx.error(node.pos, p.clone());
    }
    problems.is_empty().then_some(s)
}

/// `pods: {namespaceSelector, podSelector}` as (pod selector, namespace selector); both are
/// required.
fn namespaced_pods(node: &Node, cx: &mut Cx) -> Option<(Selector, Selector)> {
    let object = Spec::from_node(node, cx)?;
    let namespaces = object.required(cx, "namespaceSelector", checked_label_selector);
    let pods = object.required(cx, "podSelector", checked_label_selector);
    Some((k8s_pods(Some(&pods?)), Selector::from(&namespaces?)))
}

/// `ipBlock`: a CIDR and the ranges it excepts, each a strict subset of it
/// (k8s-validation ValidateIPBlock).
fn ip_block(node: &Node, cx: &mut Cx) -> Option<(IpNet, Vec<IpNet>)> {
    let object = Spec::from_node(node, cx)?;
    let cidr = object.required(cx, "cidr", k8s_cidr);
    let except = object
        .get(cx, "except", |n, cx| {
            let items = seq_items(n).unwrap_or_default();
            let nets = list(n, cx, k8s_cidr)?;
            let mut ok = true;
            if let Some(cidr) = cidr {
                for (i, (net, item)) in nets.iter().zip(items).enumerate() {
                    let inside = net.prefix_len() > cidr.prefix_len()
                        && cidr.contains(&net.network())
                        && std::mem::discriminant(net) == std::mem::discriminant(&cidr);
                    if !inside {
                        cx.at_index(i, |cx| {
                            cx.error(
                                item.pos,
                                format!("must be a strict subset of `cidr` {cidr}"),
                            )
                        });
                        ok = false;
                    }
                }
            }
            ok.then_some(nets)
        })
        .unwrap_or_default();
    Some((
        cidr?.trunc(),
        except.into_iter().map(|n| n.trunc()).collect(),
    ))
}

/// A CIDR as Kubernetes' `ParseCIDRSloppy` takes it (host bits allowed).
fn k8s_cidr(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    match text.trim().parse::<IpNet>() {
        Ok(net) => Some(net),
        Err(_) => {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            None
        }
    }
}

/// An admin `networks` entry: a CIDR (the CRD's `format: cidr`).
fn network_cidr(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    k8s_cidr(node, cx).map(|n| n.trunc())
}

/// A Calico `nets` entry: a CIDR or a bare address (a /32 or /128).
fn calico_net(node: &Node, cx: &mut Cx) -> Option<IpNet> {
    let text = String::decode(node, cx)?;
    let t = text.trim();
    if let Ok(ip) = t.parse::<std::net::IpAddr>() {
        return Some(IpNet::from(ip));
    }
    match t.parse::<IpNet>() {
        Ok(net) => Some(net.trunc()),
        Err(_) => {
            cx.error(
                node.pos,
                format!("`{text}` is not a CIDR such as 10.0.0.0/16"),
            );
            None
        }
    }
}

/// A Calico protocol: a name or a number 1..=255.
fn protocol(node: &Node, cx: &mut Cx) -> Option<Protocol> {
    match &node.value {
        Value::Int(i) => match u8::try_from(*i) {
            Ok(p) if p > 0 => Some(Protocol(p)),
            _ => {
                cx.error(node.pos, format!("protocol {i} is outside 1..255"));
                None
            }
        },
        Value::Str(s) => {
            if let Some(p) = Protocol::from_name(s) {
                return Some(p);
            }
            if let Ok(n) = s.parse::<u8>()
                && n > 0
            {
                return Some(Protocol(n));
            }
            let names: Vec<&str> = Protocol::names().collect();
            let hint = nearest(s, names.iter().copied())
                .map(|n| format!("; did you mean `{n}`?"))
                .unwrap_or_default();
            cx.error(
                node.pos,
                format!(
                    "`{s}` is not a protocol: one of {} or a number 1..255{hint}",
                    names.join(", ")
                ),
            );
            None
        }
        other => {
            cx.error(
                node.pos,
                format!("expected a protocol, found {}", other.kind_name()),
            );
            None
        }
    }
}

fn icmp(node: &Node, cx: &mut Cx) -> Option<IcmpMatch> {
    let object = Spec::from_node(node, cx)?;
    let icmp_type = object.get(cx, "type", |n, cx| {
        u8::decode(n, cx).filter(|t| {
            if *t == 255 {
                cx.error(n.pos, "ICMP type 255 is reserved (0..254)");
            }
            *t < 255
        })
    });
    let code = object.value::<u8>(cx, "code");
    if code.is_some() && !object.has("type") {
        cx.error(object.pos, "`code` needs `type`");
        return None;
    }
    Some(IcmpMatch {
        icmp_type: icmp_type?,
        code,
    })
}

/// A Calico port: a number, `"first:last"`, a numeric string or a port name.
fn calico_port(node: &Node, cx: &mut Cx) -> Option<PortMatch> {
    match &node.value {
        Value::Int(i) => port_number(*i, node, cx).map(PortMatch::single),
        Value::Str(s) => {
            let t = s.trim();
            if let Some((a, b)) = t.split_once(':') {
                let (first, last) = match (a.parse::<u16>(), b.parse::<u16>()) {
                    (Ok(a), Ok(b)) => (a, b),
                    _ => {
                        cx.error(node.pos, format!("`{s}` is not a port range `first:last`"));
                        return None;
                    }
                };
                if first == 0 || first > last {
                    cx.error(
                        node.pos,
                        format!("port range `{s}` must have 1 <= first <= last <= 65535"),
                    );
                    return None;
                }
                return Some(PortMatch::Range { first, last });
            }
            if let Ok(n) = t.parse::<i128>() {
                return port_number(n, node, cx).map(PortMatch::single);
            }
            if t.is_empty() || t.len() > 15 {
                cx.error(
                    node.pos,
                    format!("`{s}` is not a port number, range or name"),
                );
                return None;
            }
            Some(PortMatch::Named(t.to_string()))
        }
        other => {
            cx.error(
                node.pos,
                format!("expected a port, found {}", other.kind_name()),
            );
            None
        }
    }
}

fn port_number(i: i128, node: &Node, cx: &mut Cx) -> Option<u16> {
    match u16::try_from(i) {
        Ok(p) if p > 0 => Some(p),
        _ => {
            cx.error(node.pos, format!("port {i} is outside 1..65535"));
            None
        }
    }
}

/// A NetworkPolicyPort as (protocol, port): protocol TCP by default; `None` port = every
/// port of the protocol (k8s-validation ValidateNetworkPolicyPort).
fn k8s_port(node: &Node, cx: &mut Cx) -> Option<(Protocol, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let protocol = object
        .get(cx, "protocol", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("TCP", Protocol::TCP),
                    ("UDP", Protocol::UDP),
                    ("SCTP", Protocol::SCTP),
                ],
            )
        })
        .or_else(|| (!object.has("protocol")).then_some(Protocol::TCP));
    let port = object.get(cx, "port", |n, cx| {
        port_or_name(
            n,
            cx,
            |n: &Node, cx: &mut Cx| match &n.value {
                Value::Int(i) => port_number(*i, n, cx).map(|p| (Some(p), None)),
                _ => None,
            },
            |name| (None, Some(name)),
        )
    });
    let end_port = object.value::<u16>(cx, "endPort");
    let mut ok = protocol.is_some() && (port.is_some() || !object.has("port"));
    let port_match = match (port.clone(), end_port) {
        (None, None) => None,
        (Some((Some(p), _)), None) => Some(PortMatch::single(p)),
        (Some((None, Some(name))), None) => Some(PortMatch::Named(name)),
        (Some((Some(p), _)), Some(end)) if end >= p => Some(PortMatch::Range {
            first: p,
            last: end,
        }),
        (_, Some(_)) => {
            let pos = object.pos_of("endPort");
            let message = match port {
                Some((Some(p), _)) => format!("must be greater than or equal to `port` {p}"),
                Some((None, Some(_))) => "may not be specified when `port` is a name".into(),
                _ => "may not be specified without a numeric `port`".into(),
            };
            if object.has("port") && port.is_none() {
                // The port itself was already reported.
            } else {
                cx.at_key("endPort", |cx| cx.error(pos, message));
            }
            ok = false;
            None
        }
        _ => None,
    };
    ok.then(|| (protocol.unwrap_or(Protocol::TCP), port_match))
}

/// An AdminNetworkPolicyPort: exactly one of `portNumber`, `namedPort`, `portRange`.
fn anp_port(node: &Node, cx: &mut Cx) -> Option<(Option<Protocol>, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let given = ["portNumber", "namedPort", "portRange"]
        .iter()
        .filter(|k| object.has(k))
        .count();
    if given != 1 {
        cx.error(
            node.pos,
            "give exactly one of `portNumber`, `namedPort` and `portRange`",
        );
        return None;
    }
    let proto = |o: &Spec, cx: &mut Cx| {
        o.get(cx, "protocol", |n, cx| {
            word(
                n,
                cx,
                &[
                    ("TCP", Protocol::TCP),
                    ("UDP", Protocol::UDP),
                    ("SCTP", Protocol::SCTP),
                ],
            )
        })
        .or_else(|| (!o.has("protocol")).then_some(Protocol::TCP))
    };
    if let Some(name) = object.value::<String>(cx, "namedPort") {
        return Some((None, Some(PortMatch::Named(name))));
    }
    if let Some(pn) = object.child(cx, "portNumber") {
        return cx.at_key("portNumber", |cx| {
            let protocol = proto(&pn, cx);
            let port = pn.required(cx, "port", |n, cx| {
                let i = i128::from(u16::decode(n, cx)?);
                port_number(i, n, cx)
            });
            Some((Some(protocol?), Some(PortMatch::single(port?))))
        });
    }
    let range = object.child(cx, "portRange")?;
    cx.at_key("portRange", |cx| {
        let protocol = proto(&range, cx);
        let start = range.required(cx, "start", u16::decode);
        let end = range.required(cx, "end", u16::decode);
        let (start, end) = (start?, end?);
        if start == 0 || start >= end {
            cx.error(range.pos, "needs 1 <= start < end <= 65535");
            return None;
        }
        Some((
            Some(protocol?),
            Some(PortMatch::Range {
                first: start,
                last: end,
            }),
        ))
    })
}

/// A ClusterNetworkPolicy `protocols` item: one of `tcp`, `udp`, `sctp` (each with an
/// optional `destinationPort` number or range) or `destinationNamedPort`.
fn cnp_protocol(node: &Node, cx: &mut Cx) -> Option<(Option<Protocol>, Option<PortMatch>)> {
    let object = Spec::from_node(node, cx)?;
    let keys = ["tcp", "udp", "sctp", "destinationNamedPort"];
    let given: Vec<&str> = keys.iter().copied().filter(|k| object.has(k)).collect();
    if given.len() != 1 {
        cx.error(
            node.pos,
            "give exactly one of `tcp`, `udp`, `sctp` and `destinationNamedPort`",
        );
        return None;
    }
    let protocol = match given[0] {
        "tcp" => Protocol::TCP,
        "udp" => Protocol::UDP,
        "sctp" => Protocol::SCTP,
        _ => {
            let name = object.value::<String>(cx, "destinationNamedPort")?;
            return Some((None, Some(PortMatch::Named(name))));
        }
    };
    let key = given[0];
    let body = object.child(cx, key)?;
    cx.at_key(key, |cx| {
        let Some(dp) = body.child(cx, "destinationPort") else {
            return Some((Some(protocol), None));
        };
        cx.at_key("destinationPort", |cx| {
            match (dp.has("number"), dp.has("range")) {
                (true, false) => {
                    let port = dp.get(cx, "number", |n, cx| {
                        let i = i128::from(u16::decode(n, cx)?);
                        port_number(i, n, cx)
                    })?;
                    Some((Some(protocol), Some(PortMatch::single(port))))
                }
                (false, true) => {
                    let range = dp.child(cx, "range")?;
                    cx.at_key("range", |cx| {
                        let start = range.required(cx, "start", u16::decode);
                        let end = range.required(cx, "end", u16::decode);
                        let (start, end) = (start?, end?);
                        if start == 0 || start >= end {
                            cx.error(range.pos, "needs 1 <= start < end <= 65535");
                            return None;
                        }
                        Some((
                            Some(protocol),
                            Some(PortMatch::Range {
                                first: start,
                                last: end,
                            }),
                        ))
                    })
                }
                _ => {
                    cx.error(dp.pos, "give exactly one of `number` and `range`");
                    None
                }
            }
        })
    })
}

/// Ports grouped by protocol key, as the Kubernetes and admin conversions both need: a port
/// entry without a port (`None`) means every port of that protocol and absorbs the others.
fn ports_by_protocol<K: Ord>(
    ports: impl IntoIterator<Item = (K, Option<PortMatch>)>,
) -> BTreeMap<K, Option<Vec<PortMatch>>> {
    let mut by_protocol: BTreeMap<K, Option<Vec<PortMatch>>> = BTreeMap::new();
    for (protocol, port) in ports {
        let entry = by_protocol
            .entry(protocol)
            .or_insert_with(|| Some(Vec::new()));
        match (port, entry.as_mut()) {
            (Some(port), Some(list)) => list.push(port),
            (None, _) => *entry = None,
            (Some(_), None) => {}
        }
    }
    by_protocol
}
