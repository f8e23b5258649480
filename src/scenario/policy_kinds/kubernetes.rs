//! `networking.k8s.io/v1` NetworkPolicy: validated as Kubernetes' `ValidateNetworkPolicy` does
//! and converted as Calico's K8sNetworkPolicyToCalico (REFERENCE-policy §2.6): one Allow rule
//! per peer and protocol, in tier `default` at order 1000.

use super::*;

impl PolicyDecoder<'_> {
    pub(super) fn kubernetes(
        &self,
        spec: &Spec,
        staged: bool,
        cx: &mut Cx,
    ) -> Option<PolicyResource> {
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
    pub(super) fn k8s_rule(&self, node: &YamlNode, d: Direction, cx: &mut Cx) -> Option<Vec<Rule>> {
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
    pub(super) fn k8s_peer(&self, node: &YamlNode, cx: &mut Cx) -> Option<EntityRule> {
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
}

/// `projectcalico.org/orchestrator == 'k8s'`: what Calico prefixes to every selector it
/// converts from a Kubernetes pod selector (conversion.go k8sSelectorToCalico, SelectorPod).
pub(super) fn k8s_pods(pod_selector: Option<&LabelSelector>) -> Selector {
    let base = Selector::label_equals(LABEL_ORCHESTRATOR, "k8s");
    match pod_selector {
        Some(ls) => base.and(Selector::from(ls)),
        None => base,
    }
}
