//! AdminNetworkPolicy, BaselineAdminNetworkPolicy and ClusterNetworkPolicy: validated as the
//! network-policy-api CRDs do and converted as Calico's K8sAdminNetworkPolicyToCalico
//! (REFERENCE-policy §2.7), failing closed for rules Calico cannot convert.

use super::*;

impl PolicyDecoder<'_> {
    pub(super) fn admin(
        &self,
        spec: &Spec,
        flavour: AdminFlavour,
        cx: &mut Cx,
    ) -> Option<PolicyResource> {
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
                    self.r.error_at(
                        cx,
                        &["metadata", "name"],
                        format!(
                            "BaselineAdminNetworkPolicy is a singleton named `default`, not `{}`",
                            self.r.name
                        ),
                    );
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
    pub(super) fn admin_subject(
        &self,
        node: &YamlNode,
        cx: &mut Cx,
    ) -> Option<(Selector, Selector)> {
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
    pub(super) fn admin_rule(
        &self,
        node: &YamlNode,
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
    pub(super) fn admin_peer(
        &self,
        node: &YamlNode,
        d: Direction,
        cx: &mut Cx,
    ) -> Option<Option<EntityRule>> {
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
pub(super) enum AdminFlavour {
    Anp,
    Banp,
    Cnp,
}
