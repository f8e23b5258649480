//! The HNS ACL rules Calico for Windows programs on one pod's HNS endpoint (REFERENCE-policy
//! §4): per direction (In, Out) the ordered list of ACL entries, in HNS terms (Id, Action,
//! Direction, Protocol number, Local/Remote Addresses and Ports, Priority, RuleType), derived
//! from the policies that select the endpoint at one instant.
//!
//! The derivation follows Felix's Windows dataplane (calico:felix/dataplane/windows/
//! policysets/policysets.go, flattener.go, endpoint_mgr.go), step by step:
//! 1. per tier that has a policy selecting the endpoint in that direction, the rules of its
//!    applicable policies in evaluation order, each rule turned into entries: Allow → `Allow`,
//!    Deny → `Block`, Pass kept for step 3; protocol names become numbers (a rule without one
//!    is 256, "any"); an ingress rule's source goes to Remote, its destination to Local, an
//!    egress rule the reverse; `nets` and the pod addresses a `selector` picks (as /32,
//!    intersected with `nets` when both are given) are the addresses; at most
//!    [`MAX_PER_RULE`] addresses or ports per entry, larger lists split into every
//!    combination of chunks, numbered `<policy set id>-<rule>-<i>`. Rules HNS cannot program
//!    ([`windows_unsupported`], the classification behind report.json `policy.windowsSkipped`)
//!    are left out and listed in [`EndpointAcls::skipped`]. Each tier ends with a rule-less
//!    `Block` (tier default action Deny) or `Pass` (default action Pass);
//! 2. the profiles (`kns.<namespace>`: one Allow-everything entry, then a `Block`) follow when
//!    no tier applied in that direction or the default tier did not;
//! 3. flattening: a Pass in the last tier becomes `Block`; a Pass elsewhere is replaced by
//!    every entry of the next tier combined with it (protocol, addresses and ports
//!    intersected, the next tier's action and Id kept; an empty intersection drops the entry);
//! 4. priorities are rewritten to 1000, 1001, … in list order (while there are fewer entries
//!    than 64,000; beyond, they go up by one only where the action changes);
//! 5. the In list starts with `allow-host-to-endpoint` (Switch, Allow, priority 900, the
//!    node's address as RemoteAddresses) and each list ends with the host-scoped rule
//!    (RuleType `Host`, Allow, priority 0: the HNS versions that take a host rule without a
//!    priority; older ones need 100).
//!
//! Invariants: the result is a pure function of the engine, the endpoints and the node
//! address; entries keep Felix's order; addresses and ports are written as HNS reads them
//! (comma-separated, `a-b` for a port range, empty = any).
//! What this is not: no packet is evaluated here (the engine decides; these lists are what an
//! operator would see with `Get-HnsEndpoint`); no static rules file is modelled (Felix reads
//! none by default); Calico's rule ids are hashes of the rule, podnet writes the rule's index
//! instead (`policy-<policy>-<direction><index>-<i>`); a rule with `services` is left out (listed in [`EndpointAcls::not_modelled`]:
//! Felix renders it from IP-and-port sets podnet does not build); a selector that picks no pod
//! leaves its rule out (it matches nothing; how HNS treats an empty IP set was not verified).

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::{IpNet, Ipv4Net};
use serde::Serialize;

use super::audit::{RuleRef, direction_word};
use super::eval::{End, Endpoint, Engine, windows_unsupported};
use super::model::{
    Action, DEFAULT_TIER, Direction, EntityRule, PortMatch, Protocol, Rule, TierAction,
};

/// At most this many addresses, or ports, in one HNS ACL entry (policysets.go).
pub const MAX_PER_RULE: usize = 4000;
/// The first priority of the policy entries (policyset_defs.go `PolicyRuleBasePriority`).
pub const BASE_PRIORITY: u16 = 1000;
/// The highest priority Felix writes (`PolicyRuleMaxPriority`).
pub const MAX_PRIORITY: u16 = 65000;
/// The priority of the node-to-endpoint Allow (`HostToEndpointRulePriority`).
pub const HOST_TO_ENDPOINT_PRIORITY: u16 = 900;
/// HNS's protocol number for "any protocol".
pub const ANY_PROTOCOL: u16 = 256;

/// An HNS ACL action.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AclAction {
    Allow,
    Block,
}

/// An HNS ACL direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum AclDirection {
    In,
    Out,
}

/// An HNS ACL rule type: `Switch` (the endpoint's port) or `Host` (the host firewall).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum RuleType {
    Switch,
    Host,
}

/// One HNS ACL entry, with the policy rule it came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AclEntry {
    /// Empty for the rule-less Blocks and the host rule (Felix sets no Id there).
    pub id: String,
    pub action: AclAction,
    pub direction: AclDirection,
    pub protocol: u16,
    pub local_addresses: String,
    pub remote_addresses: String,
    pub local_ports: String,
    pub remote_ports: String,
    pub priority: u16,
    pub rule_type: RuleType,
    /// What produced it: `tier T: P ingress rule N`, `end of tier T`, `profile kns.NS`,
    /// `default`, `host`, `host-to-endpoint`.
    pub origin: String,
}

/// A rule left out of an endpoint's lists, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeftOut {
    #[serde(flatten)]
    pub rule: RuleRef,
    pub why: &'static str,
}

/// The ACL lists of one HNS endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAcls {
    /// `namespace/name`.
    pub pod: String,
    pub ip: String,
    /// The In list, then the Out list, each in priority order.
    pub acls: Vec<AclEntry>,
    /// Rules HNS cannot program (the `policy.windowsSkipped` entries for this endpoint).
    pub skipped: Vec<LeftOut>,
    /// Rules podnet does not render (see the module doc).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_modelled: Vec<LeftOut>,
}

/// The pod addresses each rule's `source`/`destination` selects, from every endpoint of the
/// cluster at one instant: (policy, direction, rule index, is source) → sorted /32s.
pub struct Peers {
    selected: HashMap<(String, Direction, usize, bool), Vec<Ipv4Net>>,
}

impl Peers {
    /// Resolves every rule selector against `endpoints` (IPv4 only: Windows is IPv4-only).
    pub fn resolve<'e>(
        engine: &Engine<'_>,
        endpoints: impl IntoIterator<Item = &'e Endpoint>,
    ) -> Peers {
        let mut selected: HashMap<(String, Direction, usize, bool), Vec<Ipv4Net>> = HashMap::new();
        for e in endpoints {
            let IpAddr::V4(ip) = e.ip else { continue };
            for (_, policy, d, index, end) in engine.peer_rules(e) {
                selected
                    .entry((policy, d, index, end == End::Source))
                    .or_default()
                    .push(Ipv4Net::from(ip));
            }
        }
        for list in selected.values_mut() {
            list.sort();
            list.dedup();
        }
        Peers { selected }
    }
}

/// A match on one side: `None` = any.
type Addrs = Option<Vec<Ipv4Net>>;
type Ports = Option<Vec<(u16, u16)>>;

/// An entry before flattening and priorities.
#[derive(Clone, Debug)]
struct Draft {
    id: String,
    /// `None` = Pass.
    action: Option<AclAction>,
    protocol: u16,
    local: Addrs,
    remote: Addrs,
    local_ports: Ports,
    remote_ports: Ports,
    origin: String,
}

impl Draft {
    /// A rule-less entry (matches everything).
    fn any(action: Option<AclAction>, origin: String) -> Draft {
        Draft {
            id: String::new(),
            action,
            protocol: ANY_PROTOCOL,
            local: None,
            remote: None,
            local_ports: None,
            remote_ports: None,
            origin,
        }
    }
}

/// The ACL lists of endpoint `e` on a node whose address is `host`.
pub fn endpoint_acls(
    engine: &Engine<'_>,
    peers: &Peers,
    e: &Endpoint,
    host: Option<Ipv4Addr>,
) -> EndpointAcls {
    let mut skipped = Vec::new();
    let mut not_modelled = Vec::new();
    let mut acls = Vec::new();
    if let Some(h) = host {
        acls.push(AclEntry {
            id: "allow-host-to-endpoint".to_string(),
            action: AclAction::Allow,
            direction: AclDirection::In,
            protocol: ANY_PROTOCOL,
            local_addresses: String::new(),
            remote_addresses: Ipv4Net::from(h).to_string(),
            local_ports: String::new(),
            remote_ports: String::new(),
            priority: HOST_TO_ENDPOINT_PRIORITY,
            rule_type: RuleType::Switch,
            origin: "host-to-endpoint".to_string(),
        });
    }
    for d in [Direction::Ingress, Direction::Egress] {
        let tiers = tier_drafts(engine, peers, e, d, &mut skipped, &mut not_modelled);
        acls.extend(finish(flatten(tiers), d));
    }
    EndpointAcls {
        pod: format!("{}/{}", e.namespace, e.name),
        ip: e.ip.to_string(),
        acls,
        skipped,
        not_modelled,
    }
}

/// Step 1 and 2: the entries of each applicable tier, then the profiles' when they apply.
fn tier_drafts(
    engine: &Engine<'_>,
    peers: &Peers,
    e: &Endpoint,
    d: Direction,
    skipped: &mut Vec<LeftOut>,
    not_modelled: &mut Vec<LeftOut>,
) -> Vec<Vec<Draft>> {
    let tier_actions: HashMap<String, TierAction> = engine
        .set()
        .tiers()
        .into_iter()
        .map(|t| (t.name, t.default_action))
        .collect();
    let mut tiers: Vec<(String, Vec<Draft>)> = Vec::new();
    for (tier, name, policy) in engine.planned() {
        if !policy.types.contains(d) || !engine.selects(policy, e) {
            continue;
        }
        if tiers.last().is_none_or(|(t, _)| t != tier) {
            tiers.push((tier.to_string(), Vec::new()));
        }
        let Some((_, drafts)) = tiers.last_mut() else {
            continue;
        };
        for (index, rule) in policy.rules(d).iter().enumerate() {
            let place = || RuleRef {
                tier: tier.to_string(),
                policy: name.to_string(),
                direction: direction_word(d),
                index,
            };
            if let Some(why) = windows_unsupported(rule) {
                skipped.push(LeftOut { rule: place(), why });
                continue;
            }
            if rule.source.services.is_some() || rule.destination.services.is_some() {
                not_modelled.push(LeftOut {
                    rule: place(),
                    why: "podnet does not render Service rules as HNS ACLs",
                });
                continue;
            }
            drafts.extend(rule_drafts(
                rule,
                d,
                &format!("policy-{name}-{}{index}", direction_word(d)),
                |end| {
                    peers
                        .selected
                        .get(&(name.to_string(), d, index, end == End::Source))
                },
                &place().to_string(),
                MAX_PER_RULE,
            ));
        }
    }
    let default_applied = tiers.iter().any(|(t, _)| t == DEFAULT_TIER);
    let mut out: Vec<Vec<Draft>> = tiers
        .into_iter()
        .map(|(tier, mut drafts)| {
            let action = match tier_actions.get(&tier) {
                Some(TierAction::Pass) => None,
                _ => Some(AclAction::Block),
            };
            drafts.push(Draft::any(action, format!("end of tier {tier}")));
            drafts
        })
        .collect();
    if out.is_empty() || !default_applied {
        let profile = format!("kns.{}", e.namespace);
        let mut allow = Draft::any(Some(AclAction::Allow), format!("profile {profile}"));
        allow.id = format!("profile-{profile}-0-0");
        out.push(vec![
            allow,
            Draft::any(Some(AclAction::Block), "default".to_string()),
        ]);
    }
    out
}

/// The entries of one rule (already known to be programmable): every combination of address
/// and port chunks of at most `chunk` items, their Ids `id_prefix-0`, `-1`, … Calico's Id
/// is `<policy set>-<rule id hash>-<i>`; podnet's prefix is `policy-<policy>-<direction><index>`.
fn rule_drafts<'p>(
    rule: &Rule,
    d: Direction,
    id_prefix: &str,
    selected: impl Fn(End) -> Option<&'p Vec<Ipv4Net>>,
    origin: &str,
    chunk: usize,
) -> Vec<Draft> {
    let action = match rule.action {
        Action::Allow => Some(AclAction::Allow),
        Action::Deny => Some(AclAction::Block),
        Action::Pass | Action::Log => None,
    };
    let Some(src) = entity_addresses(&rule.source, selected(End::Source)) else {
        return Vec::new();
    };
    let Some(dst) = entity_addresses(&rule.destination, selected(End::Destination)) else {
        return Vec::new();
    };
    let (src_ports, dst_ports) = (ranges(&rule.source.ports), ranges(&rule.destination.ports));
    let (local, remote, local_ports, remote_ports) = match d {
        Direction::Ingress => (dst, src, dst_ports, src_ports),
        Direction::Egress => (src, dst, src_ports, dst_ports),
    };
    let mut out = Vec::new();
    for l in chunks(&local, chunk) {
        for lp in chunks(&local_ports, chunk) {
            for r in chunks(&remote, chunk) {
                for rp in chunks(&remote_ports, chunk) {
                    out.push(Draft {
                        id: format!("{id_prefix}-{}", out.len()),
                        action,
                        protocol: rule
                            .protocol
                            .map_or(ANY_PROTOCOL, |Protocol(p)| u16::from(p)),
                        local: l.clone(),
                        remote: r.clone(),
                        local_ports: lp.clone(),
                        remote_ports: rp.clone(),
                        origin: origin.to_string(),
                    });
                }
            }
        }
    }
    out
}

/// The addresses an entity matches, `Some(None)` for any; `None` when the rule is a no-op on
/// IPv4 (only IPv6 nets, or a selector picking no IPv4 pod, or nets and pods disjoint).
fn entity_addresses(entity: &EntityRule, selected: Option<&Vec<Ipv4Net>>) -> Option<Addrs> {
    let nets: Vec<Ipv4Net> = entity
        .nets
        .iter()
        .filter_map(|n| match n {
            IpNet::V4(v4) => Some(*v4),
            IpNet::V6(_) => None,
        })
        .collect();
    if !entity.nets.is_empty() && nets.is_empty() {
        return None;
    }
    let nets = (!nets.is_empty()).then_some(nets);
    if !entity.selects_endpoints() {
        return Some(nets);
    }
    let pods = selected.filter(|l| !l.is_empty())?.clone();
    let combined = intersect_addrs(&nets, &Some(pods))?;
    Some(combined)
}

/// The `ports` ranges of an entity (named ports never reach here), `None` when it has none.
fn ranges(ports: &[PortMatch]) -> Ports {
    let list: Vec<(u16, u16)> = ports
        .iter()
        .filter_map(|p| match p {
            PortMatch::Range { first, last } => Some((*first, *last)),
            PortMatch::Named(_) => None,
        })
        .collect();
    (!list.is_empty()).then_some(list)
}

/// `list` in pieces of at most `size` (one piece, `None`, for "any").
fn chunks<T: Clone>(list: &Option<Vec<T>>, size: usize) -> Vec<Option<Vec<T>>> {
    match list {
        None => vec![None],
        Some(items) => items
            .chunks(size.max(1))
            .map(|c| Some(c.to_vec()))
            .collect(),
    }
}

/// Both address matches at once: `Some(None)` any, `None` nothing. Of two overlapping CIDRs
/// the narrower is kept (CIDRs either nest or are disjoint); the result is sorted.
fn intersect_addrs(a: &Addrs, b: &Addrs) -> Option<Addrs> {
    match (a, b) {
        (None, x) | (x, None) => Some(x.clone()),
        (Some(a), Some(b)) => {
            let mut out: Vec<Ipv4Net> = Vec::new();
            for x in a {
                for y in b {
                    if x.contains(y) {
                        out.push(*y);
                    } else if y.contains(x) {
                        out.push(*x);
                    }
                }
            }
            out.sort();
            out.dedup();
            (!out.is_empty()).then_some(Some(out))
        }
    }
}

/// Both port matches at once, as sorted merged ranges: `Some(None)` any, `None` nothing.
fn intersect_ports(a: &Ports, b: &Ports) -> Option<Ports> {
    match (a, b) {
        (None, x) | (x, None) => Some(x.clone()),
        (Some(a), Some(b)) => {
            let mut out: Vec<(u16, u16)> = Vec::new();
            for &(a0, a1) in a {
                for &(b0, b1) in b {
                    let (lo, hi) = (a0.max(b0), a1.min(b1));
                    if lo <= hi {
                        out.push((lo, hi));
                    }
                }
            }
            out.sort();
            let mut merged: Vec<(u16, u16)> = Vec::new();
            for (lo, hi) in out {
                match merged.last_mut() {
                    Some(last) if u32::from(lo) <= u32::from(last.1) + 1 => last.1 = last.1.max(hi),
                    _ => merged.push((lo, hi)),
                }
            }
            (!merged.is_empty()).then_some(Some(merged))
        }
    }
}

/// `pass` ∧ `next`, with `next`'s action and Id; `None` when nothing matches both.
fn combine(pass: &Draft, next: &Draft) -> Option<Draft> {
    let protocol = match (pass.protocol, next.protocol) {
        (ANY_PROTOCOL, p) => p,
        (p, ANY_PROTOCOL) => p,
        (p, q) if p == q => p,
        _ => return None,
    };
    Some(Draft {
        protocol,
        local: intersect_addrs(&pass.local, &next.local)?,
        remote: intersect_addrs(&pass.remote, &next.remote)?,
        local_ports: intersect_ports(&pass.local_ports, &next.local_ports)?,
        remote_ports: intersect_ports(&pass.remote_ports, &next.remote_ports)?,
        ..next.clone()
    })
}

/// Step 3: one list from the tiers. A Pass in the last tier is a Block; any other Pass is
/// replaced by the next tier's entries combined with it; tiers no Pass leads to drop out.
fn flatten(mut tiers: Vec<Vec<Draft>>) -> Vec<Draft> {
    if let Some(last) = tiers.last_mut() {
        for d in last.iter_mut().filter(|d| d.action.is_none()) {
            d.action = Some(AclAction::Block);
        }
    }
    let mut rest = tiers.into_iter();
    let Some(mut current) = rest.next() else {
        return Vec::new();
    };
    for next in rest {
        if current.iter().all(|d| d.action.is_some()) {
            break;
        }
        current = current
            .iter()
            .flat_map(|d| match d.action {
                Some(_) => vec![d.clone()],
                None => next.iter().filter_map(|n| combine(d, n)).collect(),
            })
            .collect();
    }
    current
}

/// Steps 4 and 5 for one direction: priorities, HNS text, the host rule at the end.
fn finish(drafts: Vec<Draft>, d: Direction) -> Vec<AclEntry> {
    let direction = match d {
        Direction::Ingress => AclDirection::In,
        Direction::Egress => AclDirection::Out,
    };
    let always_increment = drafts.len() < usize::from(MAX_PRIORITY - BASE_PRIORITY);
    let mut priority = BASE_PRIORITY;
    let mut out: Vec<AclEntry> = Vec::with_capacity(drafts.len() + 1);
    for (i, draft) in drafts.into_iter().enumerate() {
        let action = draft.action.unwrap_or(AclAction::Block);
        if i > 0 && (always_increment || out.last().is_some_and(|p| p.action != action)) {
            priority = priority.saturating_add(1);
        }
        out.push(AclEntry {
            id: draft.id,
            action,
            direction,
            protocol: draft.protocol,
            local_addresses: join(&draft.local),
            remote_addresses: join(&draft.remote),
            local_ports: port_text(&draft.local_ports),
            remote_ports: port_text(&draft.remote_ports),
            priority,
            rule_type: RuleType::Switch,
            origin: draft.origin,
        });
    }
    out.push(AclEntry {
        id: String::new(),
        action: AclAction::Allow,
        direction,
        protocol: ANY_PROTOCOL,
        local_addresses: String::new(),
        remote_addresses: String::new(),
        local_ports: String::new(),
        remote_ports: String::new(),
        priority: 0,
        rule_type: RuleType::Host,
        origin: "host".to_string(),
    });
    out
}

fn join<T: fmt::Display>(list: &Option<Vec<T>>) -> String {
    list.as_ref().map_or_else(String::new, |l| {
        l.iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    })
}

fn port_text(list: &Ports) -> String {
    list.as_ref().map_or_else(String::new, |l| {
        l.iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect::<Vec<_>>()
            .join(",")
    })
}

#[cfg(test)]
mod tests;
