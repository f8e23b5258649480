//! What the policies in force do to the cluster's pods as a whole (SPEC §7, report.json
//! `policy` and `connectivity`): which pods each policy selects, which rules decide anything
//! between pods, which pods no policy selects, and which packets each pair of workloads may
//! exchange.
//!
//! The audit evaluates the same checks as all-pairs reachability, once per (sender class,
//! receiver class, packet class) — pods grouped by [`ClassKey`], packets by
//! [`packet_class_extents`] — and weighs each result by the number of ordered pairs of distinct
//! pods it stands for. A check runs as the dataplane runs it: the receiver's ingress only for
//! packets the sender's egress let out.
//!
//! Host-network pods are members too, as all-pairs reachability sees them (REFERENCE-policy
//! §1.6, §3.2): no workload endpoint, so no check at them and no selector matches them; their
//! traffic is their node's, from and to the node's address, grouped by what rules see of that
//! address ([`AddressKey`]), not per node. A pod's traffic to one passes the pod's egress
//! only; one's traffic to a pod of another node passes that pod's ingress only, and to a pod
//! of its own node nothing (Felix does not police host → local workload): those same-node
//! pairs, counted apart per class pair, act for no rule and are allowed every packet.
//!
//! Per rule it records two things: the pairs for which the rule *acted* when evaluation reached
//! it (it matched: Allow and Deny decide, Pass leaves the tier, Log logs) and the pairs for
//! which it *would match* wherever its policy applies. A rule that would match somewhere but
//! never acts is shadowed (an earlier rule, policy or tier always decides first); one that
//! matches no traffic between pods is unmatched (it may still match traffic to or from
//! outside the cluster, which the audit does not see).
//!
//! Invariants: the counts are sums over ordered pairs of distinct pods, as `podPairs` (the
//! connectivity table holds every pair once); every list is sorted or in evaluation order;
//! the result is a pure function of the engine and the members. The per-pod lists (`pods`,
//! `unselected`, `selectedPods`, `windowsSkipped`) are about selection and hold workload
//! endpoints only. What this is not: routing plays no part (the connectivity table says what policy
//! allows; whether the fabric delivers is all-pairs reachability's answer), and staged
//! policies are listed, never evaluated.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::IpAddr;

use serde::Serialize;

use super::eval::{
    AddressKey, ClassKey, Endpoint, Engine, Explain, Extent, PacketClass, Party, Step,
    packet_class_extents, windows_unsupported,
};
use super::model::{Direction, Protocol};
use crate::model::TextEnum;

/// The policy section of report.json.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyAudit {
    /// Non-staged policies in evaluation order.
    pub policies: Vec<PolicyUse>,
    /// Staged policies (loaded, reported, never enforced), by qualified name.
    pub staged: Vec<String>,
    /// Policies that select no pod.
    pub unused_policies: Vec<String>,
    /// Rules that would match traffic between pods but never act on it.
    pub shadowed_rules: Vec<RuleRef>,
    /// Rules that match no traffic between pods (of policies that select some pod).
    pub unmatched_rules: Vec<RuleRef>,
    /// Per workload, the pods no policy selects in a direction.
    pub unselected: Vec<Unselected>,
    /// Per pod, the policies that apply, in evaluation order.
    pub pods: Vec<PodPolicies>,
    /// Rules HNS cannot program, of policies that select pods on Windows nodes: there the
    /// rule is skipped as if absent (REFERENCE-policy §4).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub windows_skipped: Vec<WindowsSkip>,
}

/// A rule Windows skips, and the Windows nodes whose pods its policy selects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WindowsSkip {
    #[serde(flatten)]
    pub rule: RuleRef,
    pub action: &'static str,
    /// Why HNS cannot express it (`HNS cannot express a negative match`).
    pub why: &'static str,
    pub nodes: Vec<String>,
}

impl std::fmt::Display for WindowsSkip {
    /// The warning line: the rule, what it would have done, where it is skipped and why.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) is skipped on Windows {} {}: {}",
            self.rule,
            self.action,
            if self.nodes.len() == 1 {
                "node"
            } else {
                "nodes"
            },
            self.nodes.join(", "),
            self.why
        )
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyUse {
    pub tier: String,
    pub name: String,
    /// Pods the policy selects (in either of its directions).
    pub selected_pods: u64,
    pub rules: Vec<RuleUse>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleUse {
    pub direction: &'static str,
    pub index: usize,
    pub action: &'static str,
    /// Ordered pod pairs for which the rule acted on at least one packet.
    pub acted_pairs: u64,
    /// Ordered pod pairs for which the rule would match at least one packet where its policy
    /// applies.
    pub matching_pairs: u64,
    /// `acts`, `shadowed` or `unmatched`.
    pub status: &'static str,
}

/// A rule by its place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleRef {
    pub tier: String,
    pub policy: String,
    pub direction: &'static str,
    pub index: usize,
}

impl std::fmt::Display for RuleRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "tier {}: {} {} rule {}",
            self.tier, self.policy, self.direction, self.index
        )
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unselected {
    /// The member group (`namespace/workload`).
    pub workload: String,
    pub pods: u64,
    /// Of them, pods no policy selects for ingress, and for egress.
    pub no_ingress_policy: u64,
    pub no_egress_policy: u64,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodPolicies {
    pub pod: String,
    pub ingress: Vec<String>,
    pub egress: Vec<String>,
}

/// What policy allows from one workload to another (report.json `connectivity`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConnectivityRow {
    pub from: String,
    pub to: String,
    /// Ordered pairs of distinct pods between the two.
    pub pairs: u64,
    /// Packets allowed for every pair: `all`, `none` or a list such as `TCP 53, 8080; UDP 53`.
    pub allowed: String,
    /// Further packets allowed for some pairs only, when the pairs differ.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allowed_for_some: Option<String>,
}

/// The audit: the policy section and the connectivity table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Audit {
    pub policy: PolicyAudit,
    pub connectivity: Vec<ConnectivityRow>,
}

/// A pod as the audit sees it: its group (`namespace/workload`), node and what policy sees of
/// it.
pub struct Member<'e> {
    pub group: &'e str,
    pub node: &'e str,
    pub seen: Seen<'e>,
}

/// What policy sees of a pod.
#[derive(Clone, Copy, Debug)]
pub enum Seen<'e> {
    /// A pod-network pod: its workload endpoint.
    Endpoint(&'e Endpoint),
    /// A host-network pod: no workload endpoint (no policy applies at it, no selector matches
    /// it); its traffic is its node's host traffic, from and to this address (the node's).
    Host(IpAddr),
}

impl<'e> Seen<'e> {
    fn endpoint(self) -> Option<&'e Endpoint> {
        match self {
            Seen::Endpoint(e) => Some(e),
            Seen::Host(_) => None,
        }
    }

    /// The party a check at the other end sees.
    fn party(self) -> Party<'e> {
        match self {
            Seen::Endpoint(e) => Party::endpoint(e),
            Seen::Host(ip) => Party::address(ip),
        }
    }
}

/// What makes members interchangeable for every check: an endpoint's class key, or what rules
/// see of a host's address.
#[derive(PartialEq, Eq, Hash)]
enum AuditKey {
    Endpoint(ClassKey),
    Host(AddressKey),
}

/// A rule's identity during the audit: (policy index in evaluation order, direction, index).
type RuleId = (usize, Direction, usize);

/// Records the rules that matched during one check (the policy of each from the step before).
struct Acted<'p> {
    index_of: &'p HashMap<&'p str, usize>,
    direction: Direction,
    policy: Option<usize>,
    rules: Vec<RuleId>,
}

impl Explain for Acted<'_> {
    fn step(&mut self, make: impl FnOnce() -> Step) {
        match make() {
            Step::Policy { policy, .. } => {
                self.policy = self.index_of.get(policy.as_str()).copied()
            }
            Step::RuleMatched { index, .. } => {
                if let Some(p) = self.policy {
                    self.rules.push((p, self.direction, index));
                }
            }
            _ => {}
        }
    }
}

/// Pod pairs per (sender group, receiver group).
type GroupPairs<'e> = BTreeMap<(&'e str, &'e str), u64>;

/// Audits `members` (every pod of the cluster with its network: workload endpoints and
/// host-network pods) under `engine`'s policies.
pub fn audit(engine: &Engine<'_>, members: &[Member<'_>]) -> Audit {
    let planned: Vec<(&str, &str, &super::model::Policy)> = engine.planned().collect();
    let index_of: HashMap<&str, usize> = planned
        .iter()
        .enumerate()
        .map(|(i, (_, name, _))| (*name, i))
        .collect();
    let packets: Vec<PacketClass> =
        packet_class_extents(engine, members.iter().filter_map(|m| m.seen.endpoint()));

    // Classes, ids in order of first appearance: endpoints by class key, host-network pods
    // by what rules see of their node's address (as all-pairs reachability groups them).
    let nets = engine.rule_nets();
    let mut class_ids: HashMap<AuditKey, usize> = HashMap::new();
    let mut reps: Vec<Seen<'_>> = Vec::new();
    let mut groups: Vec<BTreeMap<&str, u64>> = Vec::new();
    let mut member_class: Vec<usize> = Vec::with_capacity(members.len());
    for m in members {
        let key = match m.seen {
            Seen::Endpoint(e) => AuditKey::Endpoint(engine.class_key(e, &nets)),
            Seen::Host(ip) => AuditKey::Host(engine.address_key(ip, &nets)),
        };
        let next = class_ids.len();
        let id = *class_ids.entry(key).or_insert(next);
        if id == reps.len() {
            reps.push(m.seen);
            groups.push(BTreeMap::new());
        }
        *groups[id].entry(m.group).or_default() += 1;
        member_class.push(id);
    }
    let size: Vec<u64> = groups.iter().map(|g| g.values().sum()).collect();
    let local = host_local_pairs(members, &member_class);

    // Which policies apply to each class, per direction (indexes into `planned`); none at a
    // host-network pod.
    let applying = |d: Direction, s: &Seen<'_>| -> Vec<usize> {
        let Some(e) = s.endpoint() else {
            return Vec::new();
        };
        planned
            .iter()
            .enumerate()
            .filter(|(_, (_, _, p))| p.types.contains(d) && engine.selects(p, e))
            .map(|(i, _)| i)
            .collect()
    };
    let ingress_of: Vec<Vec<usize>> = reps
        .iter()
        .map(|s| applying(Direction::Ingress, s))
        .collect();
    let egress_of: Vec<Vec<usize>> = reps
        .iter()
        .map(|s| applying(Direction::Egress, s))
        .collect();

    let mut acted: HashMap<RuleId, u64> = HashMap::new();
    let mut matching: HashMap<RuleId, u64> = HashMap::new();
    let mut allowed_by_classes: Vec<((usize, usize), Vec<bool>)> = Vec::new();
    for a in 0..reps.len() {
        for b in 0..reps.len() {
            // Host → a pod of its own node is not policed (REFERENCE-policy §3.2): those
            // pairs act for no rule, and the connectivity table counts them apart.
            let exempt: u64 = local.get(&(a, b)).map_or(0, |g| g.values().sum());
            let pairs = size[a] * size[b] - if a == b { size[a] } else { 0 } - exempt;
            if pairs == 0 {
                continue;
            }
            let mut acted_here: BTreeSet<RuleId> = BTreeSet::new();
            let mut matching_here: BTreeSet<RuleId> = BTreeSet::new();
            let mut allowed = vec![false; packets.len()];
            for (k, class) in packets.iter().enumerate() {
                let packet = &class.packet;
                // The check at `at` (none at a host-network pod: it passes), with the rules
                // that would match there and those that act.
                let mut run = |at: Seen<'_>, peer: Seen<'_>, d: Direction, applying: &[usize]| {
                    let Some(at) = at.endpoint() else {
                        return true;
                    };
                    let peer = peer.party();
                    for &pi in applying {
                        let policy = planned[pi].2;
                        for index in 0..policy.rules(d).len() {
                            if engine.rule_would_match(policy, d, index, at, peer, packet) {
                                matching_here.insert((pi, d, index));
                            }
                        }
                    }
                    let mut rec = Acted {
                        index_of: &index_of,
                        direction: d,
                        policy: None,
                        rules: Vec::new(),
                    };
                    let outcome = engine.check(at, d, peer, packet, &mut rec);
                    acted_here.extend(rec.rules);
                    outcome.allowed
                };
                if !run(reps[a], reps[b], Direction::Egress, &egress_of[a]) {
                    continue;
                }
                allowed[k] = run(reps[b], reps[a], Direction::Ingress, &ingress_of[b]);
            }
            for id in acted_here {
                *acted.entry(id).or_default() += pairs;
            }
            for id in matching_here {
                *matching.entry(id).or_default() += pairs;
            }
            allowed_by_classes.push(((a, b), allowed));
        }
    }

    let mut selected = vec![0u64; planned.len()];
    for (c, s) in reps.iter().enumerate() {
        let Some(e) = s.endpoint() else {
            continue;
        };
        for (i, (_, _, p)) in planned.iter().enumerate() {
            if engine.selects(p, e)
                && (p.types.contains(Direction::Ingress) || p.types.contains(Direction::Egress))
            {
                selected[i] += size[c];
            }
        }
    }

    let mut out = PolicyAudit::default();
    for (i, (tier, name, policy)) in planned.iter().enumerate() {
        let mut rules = Vec::new();
        for d in [Direction::Ingress, Direction::Egress] {
            for (index, rule) in policy.rules(d).iter().enumerate() {
                let id = (i, d, index);
                let acted_pairs = acted.get(&id).copied().unwrap_or(0);
                let matching_pairs = matching.get(&id).copied().unwrap_or(0);
                let status = if acted_pairs > 0 {
                    "acts"
                } else if matching_pairs > 0 {
                    "shadowed"
                } else {
                    "unmatched"
                };
                let place = RuleRef {
                    tier: tier.to_string(),
                    policy: name.to_string(),
                    direction: direction_word(d),
                    index,
                };
                // A policy that selects nothing is reported once, as unused, not per rule.
                if selected[i] > 0 {
                    match status {
                        "shadowed" => out.shadowed_rules.push(place),
                        "unmatched" => out.unmatched_rules.push(place),
                        _ => {}
                    }
                }
                rules.push(RuleUse {
                    direction: direction_word(d),
                    index,
                    action: rule.action.as_str(),
                    acted_pairs,
                    matching_pairs,
                    status,
                });
            }
        }
        if selected[i] == 0 {
            out.unused_policies.push(name.to_string());
        }
        out.policies.push(PolicyUse {
            tier: tier.to_string(),
            name: name.to_string(),
            selected_pods: selected[i],
            rules,
        });
    }
    out.staged = engine
        .set()
        .policies()
        .filter(|p| p.staged)
        .map(|p| p.qualified_name())
        .collect();

    // Per pod and per workload, what selects it: workload endpoints only (no policy can
    // select a host-network pod, so listing one would say nothing).
    let names = |list: &[usize]| -> Vec<String> {
        list.iter().map(|i| planned[*i].1.to_string()).collect()
    };
    let mut unselected: BTreeMap<&str, Unselected> = BTreeMap::new();
    for (m, c) in members.iter().zip(&member_class) {
        let Some(e) = m.seen.endpoint() else {
            continue;
        };
        out.pods.push(PodPolicies {
            pod: format!("{}/{}", e.namespace, e.name),
            ingress: names(&ingress_of[*c]),
            egress: names(&egress_of[*c]),
        });
        let u = unselected.entry(m.group).or_insert_with(|| Unselected {
            workload: m.group.to_string(),
            pods: 0,
            no_ingress_policy: 0,
            no_egress_policy: 0,
        });
        u.pods += 1;
        u.no_ingress_policy += u64::from(ingress_of[*c].is_empty());
        u.no_egress_policy += u64::from(egress_of[*c].is_empty());
    }
    out.pods.sort_by(|x, y| x.pod.cmp(&y.pod));
    out.windows_skipped =
        windows_skipped(&planned, members, &member_class, &ingress_of, &egress_of);
    out.unselected = unselected
        .into_values()
        .filter(|u| u.no_ingress_policy > 0 || u.no_egress_policy > 0)
        .collect();

    Audit {
        policy: out,
        connectivity: connectivity(&packets, &groups, &allowed_by_classes, &local),
    }
}

/// The pairs of host traffic towards a pod of the same node, per (host class, endpoint
/// class), by (sender group, receiver group): for each endpoint, the host-network pods of its
/// node. Work per endpoint times its node's host-network workloads.
fn host_local_pairs<'e>(
    members: &[Member<'e>],
    member_class: &[usize],
) -> BTreeMap<(usize, usize), GroupPairs<'e>> {
    let mut hosts: HashMap<&str, BTreeMap<(usize, &str), u64>> = HashMap::new();
    for (m, c) in members.iter().zip(member_class) {
        if let Seen::Host(_) = m.seen {
            *hosts
                .entry(m.node)
                .or_default()
                .entry((*c, m.group))
                .or_default() += 1;
        }
    }
    let mut local: BTreeMap<(usize, usize), GroupPairs<'e>> = BTreeMap::new();
    if hosts.is_empty() {
        return local;
    }
    for (m, b) in members.iter().zip(member_class) {
        let (Seen::Endpoint(_), Some(on_node)) = (m.seen, hosts.get(m.node)) else {
            continue;
        };
        for ((a, g), n) in on_node {
            *local
                .entry((*a, *b))
                .or_default()
                .entry((g, m.group))
                .or_default() += n;
        }
    }
    local
}

/// The rules HNS skips on the Windows nodes whose pods their policies select, in evaluation
/// order (policy, direction, rule), each with its nodes sorted.
fn windows_skipped(
    planned: &[(&str, &str, &super::model::Policy)],
    members: &[Member<'_>],
    member_class: &[usize],
    ingress_of: &[Vec<usize>],
    egress_of: &[Vec<usize>],
) -> Vec<WindowsSkip> {
    let mut nodes: BTreeMap<RuleId, BTreeSet<&str>> = BTreeMap::new();
    for (m, c) in members.iter().zip(member_class) {
        if !m.seen.endpoint().is_some_and(|e| e.windows) {
            continue;
        }
        for (d, applying) in [
            (Direction::Ingress, &ingress_of[*c]),
            (Direction::Egress, &egress_of[*c]),
        ] {
            for &pi in applying {
                for (index, rule) in planned[pi].2.rules(d).iter().enumerate() {
                    if windows_unsupported(rule).is_some() {
                        nodes.entry((pi, d, index)).or_default().insert(m.node);
                    }
                }
            }
        }
    }
    nodes
        .into_iter()
        .map(|((pi, d, index), nodes)| {
            let (tier, name, policy) = planned[pi];
            let rule = &policy.rules(d)[index];
            WindowsSkip {
                rule: RuleRef {
                    tier: tier.to_string(),
                    policy: name.to_string(),
                    direction: direction_word(d),
                    index,
                },
                action: rule.action.as_str(),
                why: windows_unsupported(rule).unwrap_or_default(),
                nodes: nodes.into_iter().map(str::to_string).collect(),
            }
        })
        .collect()
}

/// Per (sender group, receiver group): the packets allowed for every pair and for some. The
/// pairs of each class pair are its groups' pairs of distinct pods, less host traffic towards
/// its own node's pods (`local`), which policy does not police: every packet is allowed.
fn connectivity(
    packets: &[PacketClass],
    groups: &[BTreeMap<&str, u64>],
    allowed_by_classes: &[((usize, usize), Vec<bool>)],
    local: &BTreeMap<(usize, usize), GroupPairs<'_>>,
) -> Vec<ConnectivityRow> {
    struct Acc {
        pairs: u64,
        every: Vec<bool>,
        some: Vec<bool>,
    }
    let mut table: BTreeMap<(&str, &str), Acc> = BTreeMap::new();
    let mut add = |g, h, pairs: u64, allowed: &[bool]| {
        if pairs == 0 {
            return;
        }
        let acc = table.entry((g, h)).or_insert_with(|| Acc {
            pairs: 0,
            every: vec![true; packets.len()],
            some: vec![false; packets.len()],
        });
        acc.pairs += pairs;
        for (k, ok) in allowed.iter().enumerate() {
            acc.every[k] &= *ok;
            acc.some[k] |= *ok;
        }
    };
    for ((a, b), allowed) in allowed_by_classes {
        let exempt = local.get(&(*a, *b));
        for (g, ng) in &groups[*a] {
            for (h, nh) in &groups[*b] {
                let pairs = ng * nh
                    - if a == b && g == h { *ng } else { 0 }
                    - exempt.and_then(|e| e.get(&(*g, *h))).copied().unwrap_or(0);
                add(*g, *h, pairs, allowed);
            }
        }
    }
    let all = vec![true; packets.len()];
    for by_group in local.values() {
        for ((g, h), pairs) in by_group {
            add(*g, *h, *pairs, &all);
        }
    }
    table
        .into_iter()
        .map(|((from, to), acc)| {
            let extra: Vec<bool> = acc
                .some
                .iter()
                .zip(&acc.every)
                .map(|(s, e)| *s && !*e)
                .collect();
            ConnectivityRow {
                from: from.to_string(),
                to: to.to_string(),
                pairs: acc.pairs,
                allowed: describe(packets, &acc.every),
                allowed_for_some: extra.iter().any(|x| *x).then(|| describe(packets, &extra)),
            }
        })
        .collect()
}

/// `ingress` or `egress`, as verdicts write a side.
pub(crate) fn direction_word(d: Direction) -> &'static str {
    match d {
        Direction::Ingress => "ingress",
        Direction::Egress => "egress",
    }
}

/// The packets of the classes marked in `set`, as a person writes them: `all`, `none`, or per
/// protocol the ports (`TCP 53, 8080-8090; UDP 53`; a protocol with every port is just `TCP`)
/// and the ICMP types and codes.
pub fn describe(packets: &[PacketClass], set: &[bool]) -> String {
    if set.iter().all(|x| *x) {
        return "all".to_string();
    }
    if !set.iter().any(|x| *x) {
        return "none".to_string();
    }
    let mut parts = Vec::new();
    for proto in [Protocol::TCP, Protocol::UDP, Protocol::SCTP] {
        let mut ranges: Vec<(u16, u16)> = Vec::new();
        let mut whole = true;
        for (c, on) in packets.iter().zip(set) {
            let Extent::Ports { first, last } = c.extent else {
                continue;
            };
            if c.packet.protocol != proto {
                continue;
            }
            if !on {
                whole = false;
                continue;
            }
            match ranges.last_mut() {
                Some(r) if r.1.checked_add(1) == Some(first) => r.1 = last,
                _ => ranges.push((first, last)),
            }
        }
        if ranges.is_empty() {
            continue;
        }
        if whole {
            parts.push(proto.to_string());
            continue;
        }
        let list: Vec<String> = ranges
            .iter()
            .map(|(f, l)| {
                if f == l {
                    f.to_string()
                } else {
                    format!("{f}-{l}")
                }
            })
            .collect();
        parts.push(format!("{proto} {}", list.join(", ")));
    }
    let icmp: Vec<(&PacketClass, bool)> = packets
        .iter()
        .zip(set)
        .filter(|(c, _)| !matches!(c.extent, Extent::Ports { .. }))
        .map(|(c, on)| (c, *on))
        .collect();
    if icmp.iter().all(|(_, on)| *on) {
        parts.push("ICMP".to_string());
    } else {
        let coded = |t: u8| {
            icmp.iter().any(|(c, _)| {
                matches!(c.extent, Extent::IcmpType { icmp_type, code: Some(_) } if icmp_type == t)
            })
        };
        for (c, on) in &icmp {
            if !on {
                continue;
            }
            parts.push(match c.extent {
                Extent::IcmpType {
                    icmp_type,
                    code: Some(code),
                } => format!("ICMP type {icmp_type} code {code}"),
                Extent::IcmpType {
                    icmp_type,
                    code: None,
                } if coded(icmp_type) => format!("ICMP type {icmp_type} other codes"),
                Extent::IcmpType { icmp_type, .. } => format!("ICMP type {icmp_type}"),
                _ => "ICMP other types".to_string(),
            });
        }
    }
    parts.join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::eval::Packet;

    fn ports(protocol: Protocol, first: u16, last: u16) -> PacketClass {
        PacketClass {
            packet: Packet::with_port(protocol, first),
            extent: Extent::Ports { first, last },
        }
    }

    fn icmp(extent: Extent) -> PacketClass {
        let packet = match extent {
            Extent::IcmpType { icmp_type, code } => Packet::icmp(icmp_type, code.unwrap_or(1)),
            _ => Packet::icmp(0, 0),
        };
        PacketClass { packet, extent }
    }

    /// The classes of a rule set naming TCP 53 and 8080-8090 and ICMP type 8 code 0:
    /// TCP 1-52, 53, 54-8079, 8080-8090, 8091-65535; UDP and SCTP whole; ICMP type 8 code
    /// 0, type 8's other codes, the other types.
    fn classes() -> Vec<PacketClass> {
        let tcp = Protocol::TCP;
        vec![
            ports(tcp, 1, 52),
            ports(tcp, 53, 53),
            ports(tcp, 54, 8079),
            ports(tcp, 8080, 8090),
            ports(tcp, 8091, u16::MAX),
            ports(Protocol::UDP, 1, u16::MAX),
            ports(Protocol::SCTP, 1, u16::MAX),
            icmp(Extent::IcmpType {
                icmp_type: 8,
                code: Some(0),
            }),
            icmp(Extent::IcmpType {
                icmp_type: 8,
                code: None,
            }),
            icmp(Extent::IcmpOtherTypes),
        ]
    }

    #[test]
    fn packet_sets_read_as_people_write_them() {
        let c = classes();
        let set = |on: &[usize]| -> Vec<bool> { (0..c.len()).map(|i| on.contains(&i)).collect() };
        let cases: [(&[usize], &str); 7] = [
            (&[0, 1, 2, 3, 4, 5, 6, 7, 8, 9], "all"),
            (&[], "none"),
            (&[1, 3, 5, 7], "TCP 53, 8080-8090; UDP; ICMP type 8 code 0"),
            // Adjacent classes merge into one range.
            (&[1, 2], "TCP 53-8079"),
            (&[0, 1, 2, 3, 4], "TCP"),
            (&[8, 9], "ICMP type 8 other codes; ICMP other types"),
            (&[6, 7, 8, 9], "SCTP; ICMP"),
        ];
        for (on, want) in cases {
            assert_eq!(describe(&c, &set(on)), want, "classes {on:?}");
        }
    }

    #[test]
    fn a_type_without_named_codes_is_the_whole_type() {
        let c = vec![
            ports(Protocol::TCP, 1, u16::MAX),
            icmp(Extent::IcmpType {
                icmp_type: 3,
                code: None,
            }),
            icmp(Extent::IcmpOtherTypes),
        ];
        assert_eq!(describe(&c, &[false, true, false]), "ICMP type 3");
    }

    #[test]
    fn without_rules_each_protocol_is_one_class_covering_every_port() {
        let set = crate::policy::model::PolicySet::new(crate::model::network::CalicoProfile::V3_30);
        let got = packet_class_extents(&Engine::new(&set), std::iter::empty());
        let want = vec![
            ports(Protocol::TCP, 1, u16::MAX),
            ports(Protocol::UDP, 1, u16::MAX),
            ports(Protocol::SCTP, 1, u16::MAX),
            PacketClass {
                // Echo request stands for the types no rule names (as `ping` sends).
                packet: Packet::icmp(8, 0),
                extent: Extent::IcmpOtherTypes,
            },
        ];
        assert_eq!(got, want);
    }
}
