//! Calico NetworkPolicy and GlobalNetworkPolicy (and their Staged kinds): rules, entity
//! matches and Calico's validator (actions, protocols, ports, `icmp`, `services`, the tier
//! name prefix of v3.30–3.31).

use super::*;

impl PolicyDecoder<'_> {
    pub(super) fn calico(&self, spec: &Spec, staged: bool, cx: &mut Cx) -> Option<PolicyResource> {
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
    pub(super) fn check_tier_prefix(&self, tier: &str, staged: bool, cx: &mut Cx) {
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
        self.r.error_at(
            cx,
            &["metadata", "name"],
            format!(
                "a policy in tier `{tier}` must be named `{tier}.<name>` up to Calico v3.31 \
                 (profile {}); did you mean `{tier}.{name}`?",
                self.profile
            ),
        );
    }

    pub(super) fn calico_rule(&self, node: &YamlNode, d: Direction, cx: &mut Cx) -> Option<Rule> {
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
    pub(super) fn entity(&self, node: &YamlNode, cx: &mut Cx) -> Option<EntityRule> {
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
}
