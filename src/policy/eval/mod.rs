//! The policy evaluation engine: whether Calico lets one new connection out of its sender's
//! workload endpoint (egress) or into its receiver's (ingress), and why
//! (REFERENCE-policy §2.5).
//!
//! Per endpoint and direction the [`Engine`] walks the tiers in (order, name) order; a tier
//! counts only when at least one of its non-staged policies selects the endpoint in that
//! direction. Inside a tier the applicable policies run in (order, tie key) order (the tie key
//! follows the Calico version, [`Policy::cmp_in_tier`]) and their rules in written order:
//! Allow and Deny decide, Pass leaves the tier, Log goes on. A tier in which nothing acted ends
//! with its default action (Deny: `end-of-tier` for a fixed tier, `tier-default` for a user
//! Tier; Pass: next tier). When every applicable tier passed, or none applied, the profiles
//! decide: `kns.<namespace>` allows everything on Linux. Pods on Windows nodes follow the HNS
//! differences of REFERENCE-policy §4: rule parts HNS cannot express are skipped, and a Pass
//! that leaves the last tier is a Block when the default tier applied (`no-profile`).
//!
//! Selectors see what Calico gives them (§2.2): an endpoint's labels carry
//! `projectcalico.org/namespace`, `…/orchestrator` and `…/serviceaccount`; a
//! `namespaceSelector` sees the namespace's labels plus `projectcalico.org/name`; rule
//! selectors are limited to the policy's namespace unless a `namespaceSelector` is given or
//! the policy is global. Nets compare the packet's address whoever owns it, pods included.
//! Named ports resolve on the endpoint at that end of the connection.
//!
//! Invariants: evaluation is a pure function of the engine and its arguments; it allocates
//! nothing unless an explanation is asked for; the explanation lists every policy that
//! applied and every rule looked at, in evaluation order, ending with the decision.
//! What this is not: it does not route packets, translate Service addresses or know about
//! connection tracking (a reply is never evaluated; callers evaluate new connections only).
//!
//! Layout: `packet` the packet and the parties checked, `explain` what decided and the steps
//! that led there, `classes` the packet and endpoint classes all-pairs reachability uses;
//! the [`Engine`] and its rule matching are here.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;

use super::model::{
    Action, DEFAULT_TIER, Direction, EntityRule, IcmpMatch, Policy, PolicySet, PortMatch, Protocol,
    Rule, Tier, TierAction,
};
use crate::model::Labels;
use crate::model::hash::FastMap;

mod classes;
mod explain;
mod packet;
#[cfg(test)]
mod vectors;

pub use classes::{
    AddressKey, ClassKey, Extent, PacketClass, packet_class_extents, packet_classes,
};
use explain::criterion_text;
pub use explain::{DecidedBy, End, Explain, Miss, Outcome, Step, explain_lines};
pub use packet::{EPHEMERAL_PORT, Endpoint, NamedPort, Packet, Party};

/// A tier with its non-staged policies, both in evaluation order.
struct TierPlan<'a> {
    tier: Tier,
    fixed: bool,
    policies: Vec<PlannedPolicy<'a>>,
    /// Indices into `policies` of the policies that may select a pod of any namespace
    /// (global ones), in evaluation order.
    global: Vec<usize>,
    /// Indices into `policies` of the namespaced policies, by namespace, in evaluation order.
    by_namespace: FastMap<String, Vec<usize>>,
}

impl<'a> TierPlan<'a> {
    fn new(tier: Tier, fixed: bool, policies: Vec<PlannedPolicy<'a>>) -> TierPlan<'a> {
        let mut global = Vec::new();
        let mut by_namespace: FastMap<String, Vec<usize>> = FastMap::default();
        for (i, p) in policies.iter().enumerate() {
            match (p.policy.kind.is_namespaced(), &p.policy.namespace) {
                (false, _) => global.push(i),
                (true, Some(ns)) => by_namespace.entry(ns.clone()).or_default().push(i),
                // A namespaced policy without a namespace selects nothing.
                (true, None) => {}
            }
        }
        TierPlan {
            tier,
            fixed,
            policies,
            global,
            by_namespace,
        }
    }

    /// The policies that may select a pod of namespace `ns`, in evaluation order: the global
    /// ones and `ns`'s own, merged (a namespaced policy never selects a pod of another
    /// namespace, so the others need not be looked at).
    fn candidates(&self, ns: &str) -> impl Iterator<Item = &PlannedPolicy<'a>> + '_ {
        let local = self.by_namespace.get(ns).map_or(&[][..], Vec::as_slice);
        let (mut i, mut j) = (0, 0);
        std::iter::from_fn(move || {
            let next = match (self.global.get(i), local.get(j)) {
                (Some(&a), Some(&b)) if a < b => {
                    i += 1;
                    a
                }
                (_, Some(&b)) => {
                    j += 1;
                    b
                }
                (Some(&a), None) => {
                    i += 1;
                    a
                }
                (None, None) => return None,
            };
            self.policies.get(next)
        })
    }
}

struct PlannedPolicy<'a> {
    policy: &'a Policy,
    name: String,
}

/// A Service endpoint as an EndpointSlice lists it: pod address, protocol, target port.
pub type ServiceEndpoint = (IpAddr, Protocol, u16);

/// The policy state prepared for evaluation: tiers and policies sorted once, namespace and
/// service account labels assembled once.
pub struct Engine<'a> {
    set: &'a PolicySet,
    tiers: Vec<TierPlan<'a>>,
    namespace_labels: HashMap<String, Labels>,
    /// Service account labels by namespace, then name.
    service_account_labels: HashMap<String, HashMap<String, Labels>>,
    /// Endpoint addresses and target ports of Services, by (namespace, name), for
    /// `services` rules (the Service layer supplies them).
    service_endpoints: HashMap<(String, String), Vec<ServiceEndpoint>>,
}

impl<'a> Engine<'a> {
    pub fn new(set: &'a PolicySet) -> Engine<'a> {
        let fixed: Vec<String> = Tier::fixed(set.profile)
            .into_iter()
            .map(|t| t.name)
            .collect();
        let tiers = set
            .tiers()
            .into_iter()
            .map(|tier| {
                let policies = set
                    .policies_in_tier(&tier.name)
                    .into_iter()
                    .filter(|p| !p.staged)
                    .map(|p| PlannedPolicy {
                        name: p.qualified_name(),
                        policy: p,
                    })
                    .collect();
                let fixed = fixed.contains(&tier.name);
                TierPlan::new(tier, fixed, policies)
            })
            .collect();
        let namespace_labels = set
            .namespaces()
            .keys()
            .map(|ns| (ns.clone(), set.namespace_selector_labels(ns)))
            .collect();
        Engine {
            set,
            tiers,
            namespace_labels,
            service_account_labels: HashMap::new(),
            service_endpoints: HashMap::new(),
        }
    }

    /// Registers the endpoints of a Service for `services` rules: each (pod IP, protocol,
    /// target port) as its EndpointSlices list them.
    pub fn with_service_endpoints(
        mut self,
        namespace: &str,
        name: &str,
        endpoints: Vec<ServiceEndpoint>,
    ) -> Engine<'a> {
        self.service_endpoints
            .insert((namespace.to_string(), name.to_string()), endpoints);
        self
    }

    /// Prepares the labels of the namespaces and service accounts of `endpoints`, so that
    /// evaluation never assembles them.
    pub fn know_endpoints<'e>(&mut self, endpoints: impl IntoIterator<Item = &'e Endpoint>) {
        for e in endpoints {
            if !self.namespace_labels.contains_key(&e.namespace) {
                self.namespace_labels.insert(
                    e.namespace.clone(),
                    self.set.namespace_selector_labels(&e.namespace),
                );
            }
            let labels = self
                .set
                .service_account_selector_labels(&e.namespace, &e.service_account);
            self.service_account_labels
                .entry(e.namespace.clone())
                .or_default()
                .entry(e.service_account.clone())
                .or_insert(labels);
        }
    }

    pub fn set(&self) -> &PolicySet {
        self.set
    }

    /// The non-staged policies in evaluation order, as (tier, qualified name, policy).
    pub fn planned(&self) -> impl Iterator<Item = (&str, &str, &'a Policy)> + '_ {
        self.tiers.iter().flat_map(|t| {
            t.policies
                .iter()
                .map(move |p| (t.tier.name.as_str(), p.name.as_str(), p.policy))
        })
    }

    fn with_namespace_labels<T>(&self, ns: &str, f: impl FnOnce(&Labels) -> T) -> T {
        match self.namespace_labels.get(ns) {
            Some(l) => f(l),
            None => f(&self.set.namespace_selector_labels(ns)),
        }
    }

    fn with_service_account_labels<T>(&self, e: &Endpoint, f: impl FnOnce(&Labels) -> T) -> T {
        match self
            .service_account_labels
            .get(e.namespace.as_str())
            .and_then(|m| m.get(e.service_account.as_str()))
        {
            Some(l) => f(l),
            None => f(&self
                .set
                .service_account_selector_labels(&e.namespace, &e.service_account)),
        }
    }

    /// Whether `policy` selects `e` (its direction not considered).
    pub fn selects(&self, policy: &Policy, e: &Endpoint) -> bool {
        if policy.kind.is_namespaced() {
            if policy.namespace.as_deref() != Some(e.namespace.as_str()) {
                return false;
            }
        } else if let Some(ns_sel) = &policy.namespace_selector {
            // `global()` selects non-namespaced things only: never a pod.
            if ns_sel.is_global()
                || !self.with_namespace_labels(&e.namespace, |l| ns_sel.matches(l))
            {
                return false;
            }
        }
        if !policy.selector.matches(&e.labels) {
            return false;
        }
        match &policy.service_account_selector {
            Some(sa) => self.with_service_account_labels(e, |l| sa.matches(l)),
            None => true,
        }
    }

    /// The non-staged policies that apply to `e` in direction `d`, in evaluation order, as
    /// (tier, qualified policy name).
    pub fn applicable(&self, e: &Endpoint, d: Direction) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for t in &self.tiers {
            for p in &t.policies {
                if p.policy.types.contains(d) && self.selects(p.policy, e) {
                    out.push((t.tier.name.clone(), p.name.clone()));
                }
            }
        }
        out
    }

    /// The profiles of `e` in order: `kns.<namespace>` (allows everything), then
    /// `ksa.<namespace>.<serviceaccount>` (labels only).
    pub fn profiles(e: &Endpoint) -> [String; 2] {
        [
            format!("kns.{}", e.namespace),
            format!("ksa.{}.{}", e.namespace, e.service_account),
        ]
    }

    /// Checks direction `d` at endpoint `at` for a new connection with `peer` (the source for
    /// ingress, the destination for egress), REFERENCE-policy §2.5.
    pub fn check(
        &self,
        at: &Endpoint,
        d: Direction,
        peer: Party<'_>,
        packet: &Packet,
        explain: &mut impl Explain,
    ) -> Outcome {
        let me = Party::endpoint(at);
        let (src, dst) = match d {
            Direction::Ingress => (peer, me),
            Direction::Egress => (me, peer),
        };
        let mut default_tier_applied = false;
        for t in &self.tiers {
            let mut applied = false;
            let mut passed = false;
            'policies: for p in t.candidates(&at.namespace) {
                let policy = p.policy;
                if !policy.types.contains(d) || !self.selects(policy, at) {
                    continue;
                }
                applied = true;
                explain.step(|| Step::Policy {
                    tier: t.tier.name.clone(),
                    policy: p.name.clone(),
                });
                for (index, rule) in policy.rules(d).iter().enumerate() {
                    if at.windows
                        && let Some(why) = windows_unsupported(rule)
                    {
                        explain.step(|| Step::RuleSkipped {
                            index,
                            action: rule.action,
                            why,
                        });
                        continue;
                    }
                    if let Err(miss) =
                        self.rule_matches(rule, policy.namespace.as_deref(), src, dst, packet)
                    {
                        explain.step(|| Step::RuleMissed {
                            index,
                            action: rule.action,
                            detail: criterion_text(rule, &miss),
                            miss,
                        });
                        continue;
                    }
                    explain.step(|| Step::RuleMatched {
                        index,
                        action: rule.action,
                    });
                    match rule.action {
                        Action::Log => continue,
                        Action::Pass => {
                            passed = true;
                            break 'policies;
                        }
                        Action::Allow | Action::Deny => {
                            let outcome = Outcome {
                                allowed: rule.action == Action::Allow,
                                by: DecidedBy::Rule {
                                    tier: t.tier.name.clone(),
                                    policy: p.name.clone(),
                                    index,
                                    action: rule.action,
                                },
                            };
                            explain.step(|| Step::Decided(outcome.clone()));
                            return outcome;
                        }
                    }
                }
                explain.step(|| Step::PolicyDone {
                    policy: p.name.clone(),
                });
            }
            if !applied {
                explain.step(|| Step::TierSkipped {
                    tier: t.tier.name.clone(),
                });
                continue;
            }
            if t.tier.name == DEFAULT_TIER {
                default_tier_applied = true;
            }
            if passed {
                continue;
            }
            explain.step(|| Step::TierEnd {
                tier: t.tier.name.clone(),
                action: t.tier.default_action,
            });
            if t.tier.default_action == TierAction::Deny {
                let tier = t.tier.name.clone();
                let outcome = Outcome {
                    allowed: false,
                    by: if t.fixed {
                        DecidedBy::EndOfTier { tier }
                    } else {
                        DecidedBy::TierDefault { tier }
                    },
                };
                explain.step(|| Step::Decided(outcome.clone()));
                return outcome;
            }
        }
        let outcome = if at.windows && default_tier_applied {
            // HNS flattening: a Pass out of the last tier is a Block when the default tier
            // applies to the endpoint, and no profile is appended (REFERENCE-policy §4).
            Outcome {
                allowed: false,
                by: DecidedBy::NoProfile,
            }
        } else {
            Outcome {
                allowed: true,
                by: DecidedBy::Profile {
                    profile: format!("kns.{}", at.namespace),
                },
            }
        };
        explain.step(|| Step::Decided(outcome.clone()));
        outcome
    }

    /// Whether rule `index` of `policy` in direction `d` would match a new connection at
    /// `at` with `peer` if evaluation reached it (a rule HNS cannot express never matches on
    /// Windows). Says nothing about whether the policy selects `at`.
    pub fn rule_would_match(
        &self,
        policy: &Policy,
        d: Direction,
        index: usize,
        at: &Endpoint,
        peer: Party<'_>,
        packet: &Packet,
    ) -> bool {
        let Some(rule) = policy.rules(d).get(index) else {
            return false;
        };
        if at.windows && windows_unsupported(rule).is_some() {
            return false;
        }
        let me = Party::endpoint(at);
        let (src, dst) = match d {
            Direction::Ingress => (peer, me),
            Direction::Egress => (me, peer),
        };
        self.rule_matches(rule, policy.namespace.as_deref(), src, dst, packet)
            .is_ok()
    }

    /// Whether every criterion of `rule` (in a policy of `policy_ns`) matches.
    fn rule_matches(
        &self,
        rule: &Rule,
        policy_ns: Option<&str>,
        src: Party<'_>,
        dst: Party<'_>,
        packet: &Packet,
    ) -> Result<(), Miss> {
        if let Some(p) = rule.protocol
            && p != packet.protocol
        {
            return Err(Miss::Protocol);
        }
        if rule.not_protocol == Some(packet.protocol) {
            return Err(Miss::NotProtocol);
        }
        if let Some(m) = &rule.icmp
            && !icmp_matches(m, packet)
        {
            return Err(Miss::Icmp);
        }
        if let Some(m) = &rule.not_icmp
            && icmp_matches(m, packet)
        {
            return Err(Miss::NotIcmp);
        }
        self.entity_matches(
            &rule.source,
            End::Source,
            policy_ns,
            src,
            EPHEMERAL_PORT,
            rule.protocol,
            packet,
        )?;
        self.entity_matches(
            &rule.destination,
            End::Destination,
            policy_ns,
            dst,
            packet.port,
            rule.protocol,
            packet,
        )
    }

    /// The endpoint criteria of an entity (namespace scope, `selector`, `notSelector`,
    /// `serviceAccounts`) against `party`; nets, ports and services are not looked at.
    fn endpoint_criteria(
        &self,
        entity: &EntityRule,
        end: End,
        policy_ns: Option<&str>,
        party: Party<'_>,
    ) -> Result<(), Miss> {
        if entity.selects_endpoints() {
            // The scope of `EntityRule::scope`, without building it: a namespaceSelector
            // (`global()`: never a pod), else the policy's namespace, else everything.
            // A global rule with only `notSelector` has no positive selector: it matches any
            // address except the endpoints the notSelector selects.
            let only_not = entity.selector.is_none()
                && entity.namespace_selector.is_none()
                && entity.service_accounts.is_none()
                && policy_ns.is_none();
            match party.endpoint {
                None if only_not => {}
                None => return Err(Miss::NotAnEndpoint(end)),
                Some(e) => {
                    let in_scope = match (&entity.namespace_selector, policy_ns) {
                        (Some(sel), _) if sel.is_global() => false,
                        (Some(sel), _) => {
                            self.with_namespace_labels(&e.namespace, |l| sel.matches(l))
                        }
                        (None, Some(ns)) => e.namespace == ns,
                        (None, None) => true,
                    };
                    if !in_scope {
                        return Err(Miss::Namespace(end));
                    }
                    if let Some(sel) = &entity.selector
                        && !sel.matches(&e.labels)
                    {
                        return Err(Miss::Selector(end));
                    }
                    if let Some(sel) = &entity.not_selector
                        && sel.matches(&e.labels)
                    {
                        return Err(Miss::NotSelector(end));
                    }
                    if let Some(sa) = &entity.service_accounts {
                        let named = sa.names.is_empty() || sa.names.contains(&e.service_account);
                        let selected = sa.selector.as_ref().is_none_or(|sel| {
                            self.with_service_account_labels(e, |l| sel.matches(l))
                        });
                        if !(named && selected) {
                            return Err(Miss::ServiceAccount(end));
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The rules whose `source` or `destination` selects `e` by its endpoint criteria (as
    /// `calicoq endpoint` lists them): (tier, policy, direction, rule index, end), in
    /// evaluation order. Entities without endpoint criteria (only nets or ports) are left out.
    pub fn peer_rules(&self, e: &Endpoint) -> Vec<(String, String, Direction, usize, End)> {
        let mut out = Vec::new();
        for t in &self.tiers {
            for p in &t.policies {
                for d in [Direction::Ingress, Direction::Egress] {
                    for (i, rule) in p.policy.rules(d).iter().enumerate() {
                        for (end, entity) in [
                            (End::Source, &rule.source),
                            (End::Destination, &rule.destination),
                        ] {
                            if entity.selects_endpoints()
                                && self
                                    .endpoint_criteria(
                                        entity,
                                        end,
                                        p.policy.namespace.as_deref(),
                                        Party::endpoint(e),
                                    )
                                    .is_ok()
                            {
                                out.push((t.tier.name.clone(), p.name.clone(), d, i, end));
                            }
                        }
                    }
                }
            }
        }
        out
    }

    #[allow(clippy::too_many_arguments)]
    fn entity_matches(
        &self,
        entity: &EntityRule,
        end: End,
        policy_ns: Option<&str>,
        party: Party<'_>,
        port: u16,
        rule_protocol: Option<Protocol>,
        packet: &Packet,
    ) -> Result<(), Miss> {
        if !entity.nets.is_empty() && !entity.nets.iter().any(|n| n.contains(&party.ip)) {
            return Err(Miss::Nets(end));
        }
        if entity.not_nets.iter().any(|n| n.contains(&party.ip)) {
            return Err(Miss::NotNets(end));
        }
        self.endpoint_criteria(entity, end, policy_ns, party)?;
        if !entity.ports.is_empty()
            && !entity
                .ports
                .iter()
                .any(|m| port_matches(m, party, port, rule_protocol, packet))
        {
            return Err(Miss::Ports(end));
        }
        if entity
            .not_ports
            .iter()
            .any(|m| port_matches(m, party, port, rule_protocol, packet))
        {
            return Err(Miss::NotPorts(end));
        }
        if let Some(svc) = &entity.services {
            let members = self
                .service_endpoints
                .get(&(svc.namespace.clone(), svc.name.clone()));
            let hit = members.is_some_and(|list| {
                list.iter().any(|(ip, proto, p)| {
                    *ip == party.ip
                        && (end == End::Source || (*proto == packet.protocol && *p == port))
                })
            });
            if !hit {
                return Err(Miss::Services(end));
            }
        }
        Ok(())
    }
}

fn icmp_matches(m: &IcmpMatch, packet: &Packet) -> bool {
    match packet.icmp {
        Some((t, c)) => t == m.icmp_type && m.code.is_none_or(|code| code == c),
        None => false,
    }
}

/// Whether a `ports` item matches `port` at `party`: a range contains it, or the endpoint
/// there declares a container port with that name, the packet's protocol (and the rule's,
/// when it names one) and that number. Ports exist only for TCP, UDP, SCTP and UDPLite.
fn port_matches(
    m: &PortMatch,
    party: Party<'_>,
    port: u16,
    rule_protocol: Option<Protocol>,
    packet: &Packet,
) -> bool {
    if !packet.protocol.has_ports() {
        return false;
    }
    match m {
        PortMatch::Range { first, last } => (*first..=*last).contains(&port),
        PortMatch::Named(name) => party.endpoint.is_some_and(|e| {
            e.ports.iter().any(|np| {
                np.name == *name
                    && np.port == port
                    && np.protocol == packet.protocol
                    && rule_protocol.is_none_or(|p| p == np.protocol)
            })
        }),
    }
}

/// Why HNS cannot program a rule (calico:felix/dataplane/windows/policysets/policysets.go):
/// negative matches, ICMP type/code, named ports and Log are not supported.
pub fn windows_unsupported(rule: &Rule) -> Option<&'static str> {
    let negative = |e: &EntityRule| {
        !e.not_nets.is_empty() || !e.not_ports.is_empty() || e.not_selector.is_some()
    };
    let named = |e: &EntityRule| {
        e.ports
            .iter()
            .chain(&e.not_ports)
            .any(|p| matches!(p, PortMatch::Named(_)))
    };
    if rule.action == Action::Log {
        Some("HNS has no Log action")
    } else if rule.not_protocol.is_some()
        || rule.not_icmp.is_some()
        || negative(&rule.source)
        || negative(&rule.destination)
    {
        Some("HNS cannot express a negative match")
    } else if rule.icmp.is_some() {
        Some("HNS cannot match an ICMP type or code")
    } else if named(&rule.source) || named(&rule.destination) {
        Some("HNS cannot match a named port")
    } else {
        None
    }
}
