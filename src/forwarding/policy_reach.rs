//! Reachability between sets of pods when network policy is enforced: routing by forwarding
//! equivalence classes (`reach.rs`), policy by endpoint classes and packet classes.
//!
//! Pods are grouped into policy classes ([`ClassKey`]: everything any selector, net or named
//! port can see of them), so policy is evaluated once per (sender class, receiver class,
//! packet) rather than per pair. A host-network pod has no endpoint: it is its node's host
//! traffic (one class per node, seen by the node's address), never policed towards a pod of
//! its own node (REFERENCE-policy §3.2). The packets are the classes policy tells apart
//! ([`packet_classes`]) or the one packet a question names. For each sender class, receiver
//! classes with the same policy summary share one routing computation ([`reachability`]).
//!
//! A pair's fate over the packets: egress denies every packet → denied at the sender's egress
//! (the packet never leaves, whatever routing says); otherwise routing decides whether it is
//! delivered; a delivered pair is allowed for the packets both checks allow. A pair that
//! delivers no packet is grouped by its routing reason, or by the policy denial of the first
//! packet.
//!
//! Invariants: the counts equal evaluating [`connect`](super::connect::connect) for every
//! ordered pair of distinct pods and every packet (a property test checks it); groups are
//! sorted and each example is the smallest pair of its group by pod key.
//! This module does not translate Services or judge expectations.

use std::collections::BTreeMap;

use super::connect::{ConnectionVerdict, Denial, Policing, Side};
use super::dataplane::{Attachment, Dataplane};
use super::fib::PodKey;
use super::reach::{Prepared, reachability_in};
use super::walk::{Source, trace};
use crate::model::topology::DeviceId;
use crate::policy::eval::{ClassKey, DecidedBy, Endpoint, Packet, Party, packet_classes};
use crate::policy::model::Direction;

/// Pairs that deliver no packet for the same reason at the same place.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BlockedGroup {
    /// `Dropped` (routing) or `PolicyDenied`.
    pub verdict: ConnectionVerdict,
    pub count: u64,
    pub example: (PodKey, PodKey),
}

/// Reachability of ordered pairs of distinct pods over a list of packets.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyReach {
    pub pairs: u64,
    /// Pairs delivered for every packet.
    pub all_packets: u64,
    /// Pairs delivered for at least one packet (`all_packets` included).
    pub some_packets: u64,
    /// Pairs delivered for no packet, sorted by verdict.
    pub blocked: Vec<BlockedGroup>,
    /// The smallest pair delivered for some packets but not all, if any.
    pub partial_example: Option<(PodKey, PodKey)>,
}

/// What policy sees of a pod.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Seen {
    /// A workload endpoint of this policy class.
    Endpoint(usize),
    /// A host-network pod: host traffic of this node, from and to the node's address.
    Host(DeviceId),
    /// A pod without an endpoint (none in practice): never checked.
    Unseen,
}

/// What policy does to the packets between a sender class and a receiver class.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Summary {
    allowed: usize,
    /// Every packet is denied at the sender's egress: by what, for the first one.
    egress_denies_all: Option<DecidedBy>,
    /// The first packet's denial, when it is denied.
    first_denial: Option<(Side, DecidedBy)>,
}

/// Evaluates `packets` (every packet class when `None`) from every pod of `from` to every other
/// pod of `to`.
pub fn policy_reachability(
    dp: &Dataplane,
    policing: &Policing<'_>,
    from: &[PodKey],
    to: &[PodKey],
    packets: Option<&[Packet]>,
) -> PolicyReach {
    let known = |keys: &[PodKey]| {
        let mut v: Vec<PodKey> = keys
            .iter()
            .copied()
            .filter(|k| dp.pod(*k).is_some())
            .collect();
        v.sort();
        v.dedup();
        v
    };
    let (from, to) = (known(from), known(to));
    let all_packets: Vec<Packet>;
    let packets = match packets {
        Some(p) => p,
        None => {
            all_packets = packet_classes(policing.engine.set(), policing.endpoints());
            &all_packets
        }
    };
    let nets = policing.engine.rule_nets();
    // Policy classes; a host-network pod is its node's host traffic (one class per node),
    // and pods with neither (none in practice) share one class that no policy checks.
    // Ids in order of first appearance (pods in key order): deterministic; the map is a lookup.
    let mut class_ids: std::collections::HashMap<ClassKey, usize> =
        std::collections::HashMap::new();
    let mut reps: Vec<&Endpoint> = Vec::new();
    let mut class_of = |k: PodKey| -> Seen {
        if let Some(p) = dp.pod(k)
            && p.attachment == Attachment::Host
        {
            return Seen::Host(p.device);
        }
        let Some(e) = policing.endpoint(k) else {
            return Seen::Unseen;
        };
        let key = policing.engine.class_key(e, &nets);
        let next = class_ids.len();
        let id = *class_ids.entry(key).or_insert(next);
        if id == reps.len() {
            reps.push(e);
        }
        Seen::Endpoint(id)
    };
    let src_classes: Vec<(PodKey, Seen)> = from.iter().map(|k| (*k, class_of(*k))).collect();
    let dst_classes: Vec<(PodKey, Seen)> = to.iter().map(|k| (*k, class_of(*k))).collect();
    let party = |c: Seen| -> Option<Party<'_>> {
        match c {
            Seen::Endpoint(i) => Some(Party::endpoint(reps[i])),
            Seen::Host(d) => Some(Party::address(dp.address(d)?)),
            Seen::Unseen => None,
        }
    };

    let mut by_src: BTreeMap<Seen, Vec<PodKey>> = BTreeMap::new();
    for (k, c) in &src_classes {
        by_src.entry(*c).or_default().push(*k);
    }
    // Atoms and node profiles once, for every routing computation below.
    let prep = Prepared::new(dp);
    let mut out = PolicyReach::default();
    let mut blocked: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
    let mut block = |verdict: ConnectionVerdict, count: u64, example: (PodKey, PodKey)| {
        if count == 0 {
            return;
        }
        let g = blocked.entry(verdict).or_insert((0, example));
        g.0 += count;
        g.1 = g.1.min(example);
    };
    let mut summaries: BTreeMap<(Seen, Seen, bool), Summary> = BTreeMap::new();
    for (sc, senders) in &by_src {
        // Receivers grouped by the summary of (this sender class, their class).
        let mut groups: BTreeMap<Summary, Vec<PodKey>> = BTreeMap::new();
        for (k, dc) in &dst_classes {
            // Host → local pod: not policed (REFERENCE-policy §1.6, §3.2).
            let host_local =
                matches!(sc, Seen::Host(d) if dp.pod(*k).is_some_and(|p| p.device == *d));
            let summary = summaries
                .entry((*sc, *dc, host_local))
                .or_insert_with(|| summarize(policing, party(*sc), party(*dc), host_local, packets))
                .clone();
            groups.entry(summary).or_default().push(*k);
        }
        for (summary, receivers) in groups {
            let pairs = pair_count(senders, &receivers);
            if pairs == 0 {
                continue;
            }
            out.pairs += pairs;
            if let Some(by) = summary.egress_denies_all {
                // Denied at each sender's egress, on its node: no routing involved.
                for s in senders {
                    let (Some(p), Some(ex)) = (dp.pod(*s), smallest_pair(&[*s], &receivers)) else {
                        continue;
                    };
                    block(
                        ConnectionVerdict::PolicyDenied(Denial {
                            side: Side::Egress,
                            at: p.device,
                            by: by.clone(),
                        }),
                        pair_count(&[*s], &receivers),
                        ex,
                    );
                }
                continue;
            }
            let r = reachability_in(&prep, dp, senders, &receivers);
            for g in &r.unreachable {
                block(
                    ConnectionVerdict::Dropped {
                        reason: g.reason,
                        at: g.stopped_at,
                    },
                    g.count,
                    g.example,
                );
            }
            if r.reachable == 0 {
                continue;
            }
            if summary.allowed == packets.len() {
                out.all_packets += r.reachable;
                out.some_packets += r.reachable;
            } else if summary.allowed > 0 {
                out.some_packets += r.reachable;
                let ex = delivered_example(dp, senders, &receivers);
                out.partial_example = match (out.partial_example, ex) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            } else if let Some((side, by)) = summary.first_denial {
                // Grouped by the node of the endpoint whose policy denied.
                let on_node = |pods: &[PodKey]| {
                    let mut m: BTreeMap<DeviceId, Vec<PodKey>> = BTreeMap::new();
                    for k in pods {
                        if let Some(p) = dp.pod(*k) {
                            m.entry(p.device).or_default().push(*k);
                        }
                    }
                    m
                };
                let splits: Vec<(DeviceId, Vec<PodKey>, Vec<PodKey>)> = match side {
                    Side::Ingress => on_node(&receivers)
                        .into_iter()
                        .map(|(at, rr)| (at, senders.clone(), rr))
                        .collect(),
                    Side::Egress => on_node(senders)
                        .into_iter()
                        .map(|(at, ss)| (at, ss, receivers.clone()))
                        .collect(),
                };
                for (at, ss, rr) in splits {
                    let delivered = if splits_whole(&ss, senders, &rr, &receivers) {
                        r.reachable
                    } else {
                        reachability_in(&prep, dp, &ss, &rr).reachable
                    };
                    if delivered == 0 {
                        continue;
                    }
                    let Some(ex) = delivered_example(dp, &ss, &rr) else {
                        continue;
                    };
                    block(
                        ConnectionVerdict::PolicyDenied(Denial {
                            side,
                            at,
                            by: by.clone(),
                        }),
                        delivered,
                        ex,
                    );
                }
            }
        }
    }
    out.blocked = blocked
        .into_iter()
        .map(|(verdict, (count, example))| BlockedGroup {
            verdict,
            count,
            example,
        })
        .collect();
    out
}

/// What policy does to `packets` from `src` to `dst`: the sender's egress when it is a
/// workload endpoint, then the receiver's ingress when it is one and the traffic is not its
/// own node's host traffic (`host_local`). A party that is no endpoint (a host-network pod:
/// its node's address) is seen by its address alone; `None` is a pod policy never sees.
fn summarize(
    policing: &Policing<'_>,
    src: Option<Party<'_>>,
    dst: Option<Party<'_>>,
    host_local: bool,
    packets: &[Packet],
) -> Summary {
    let engine = &policing.engine;
    let mut allowed = 0;
    let mut egress_denials = 0;
    let mut first_egress: Option<DecidedBy> = None;
    let mut first_denial = None;
    for (i, p) in packets.iter().enumerate() {
        let out = match (src, dst) {
            (Some(s), Some(d)) => s
                .endpoint
                .map(|e| engine.check(e, Direction::Egress, d, p, &mut ())),
            _ => None,
        };
        if let Some(o) = &out
            && !o.allowed
        {
            egress_denials += 1;
            if first_egress.is_none() {
                first_egress = Some(o.by.clone());
            }
            if i == 0 {
                first_denial = Some((Side::Egress, o.by.clone()));
            }
            continue;
        }
        let inn = match (src, dst) {
            (Some(s), Some(d)) if !host_local => d
                .endpoint
                .map(|e| engine.check(e, Direction::Ingress, s, p, &mut ())),
            _ => None,
        };
        match inn {
            Some(o) if !o.allowed => {
                if i == 0 {
                    first_denial = Some((Side::Ingress, o.by));
                }
            }
            _ => allowed += 1,
        }
    }
    Summary {
        allowed,
        egress_denies_all: (egress_denials == packets.len() && !packets.is_empty())
            .then_some(first_egress)
            .flatten(),
        first_denial,
    }
}

/// Whether a split is the whole group (one node only): its routing is already known.
fn splits_whole(ss: &[PodKey], senders: &[PodKey], rr: &[PodKey], receivers: &[PodKey]) -> bool {
    ss.len() == senders.len() && rr.len() == receivers.len()
}

/// Ordered pairs of distinct pods from `a` × `b` (both sorted, without duplicates).
fn pair_count(a: &[PodKey], b: &[PodKey]) -> u64 {
    let common = a.iter().filter(|k| b.binary_search(k).is_ok()).count() as u64;
    (a.len() as u64) * (b.len() as u64) - common
}

fn smallest_pair(a: &[PodKey], b: &[PodKey]) -> Option<(PodKey, PodKey)> {
    let s0 = *a.first()?;
    let d0 = *b.first()?;
    if s0 != d0 {
        return Some((s0, d0));
    }
    match (b.get(1), a.get(1)) {
        (Some(d1), _) => Some((s0, *d1)),
        (None, Some(s1)) => Some((*s1, d0)),
        (None, None) => None,
    }
}

/// The smallest pair routing delivers.
fn delivered_example(dp: &Dataplane, a: &[PodKey], b: &[PodKey]) -> Option<(PodKey, PodKey)> {
    for s in a {
        for d in b {
            if s == d {
                continue;
            }
            let ip = dp.pod(*d)?.ip;
            if trace(dp, Source::Pod(*s), ip).is_some_and(|t| t.delivered()) {
                return Some((*s, *d));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use proptest::prelude::*;

    use super::*;
    use crate::forwarding::connect::{PolicyInputs, connect};
    use crate::forwarding::reach::tests::{Gen, scenario};
    use crate::model::network::CalicoProfile;
    use crate::model::selector::Selector;
    use crate::policy::eval::NamedPort;
    use crate::policy::model::{
        Action, EntityRule, Policy, PolicyKind, PolicyResource, PolicySet, PolicyTypes, PortMatch,
        Protocol, Rule, Tier, TierAction, endpoint_labels,
    };

    fn sel(s: &str) -> Selector {
        Selector::parse(s).expect("selector in fixture")
    }

    /// A random entity: a selector, a namespace selector, nets over the pod ranges, ports.
    fn entity(g: &mut Gen, with_ports: bool) -> EntityRule {
        let mut e = EntityRule::default();
        if g.chance(40) {
            e.selector = Some(sel(g.pick(&[
                "app == 'x'",
                "app != 'y'",
                "has(app)",
                "all()",
            ])));
        }
        if g.chance(25) {
            e.namespace_selector = Some(sel(g.pick(&["team == 'red'", "all()"])));
        }
        if g.chance(20) {
            e.not_selector = Some(sel("app == 'z'"));
        }
        if g.chance(25) {
            e.nets = vec![
                g.pick(&["10.200.0.0/16", "10.200.1.0/24", "10.0.0.0/8"])
                    .parse()
                    .unwrap(),
            ];
        }
        if g.chance(15) {
            e.not_nets = vec![g.pick(&["10.200.0.0/24", "10.1.0.100/32"]).parse().unwrap()];
        }
        if with_ports && g.chance(50) {
            let choices = [
                PortMatch::single(80),
                PortMatch::Range {
                    first: 8000,
                    last: 8100,
                },
                PortMatch::Named("web".to_string()),
            ];
            e.ports = vec![choices[g.below(choices.len())].clone()];
        }
        e
    }

    fn random_policy(g: &mut Gen, i: usize) -> Policy {
        let kind = g.pick(&[
            PolicyKind::KubernetesNetworkPolicy,
            PolicyKind::CalicoNetworkPolicy,
            PolicyKind::GlobalNetworkPolicy,
        ]);
        let namespace = kind
            .is_namespaced()
            .then(|| g.pick(&["red", "blue"]).to_string());
        let rules = |g: &mut Gen| -> Vec<Rule> {
            (0..g.below(3))
                .map(|_| {
                    let action = if kind == PolicyKind::KubernetesNetworkPolicy {
                        Action::Allow
                    } else {
                        g.pick(&[Action::Allow, Action::Deny, Action::Pass, Action::Log])
                    };
                    let mut r = Rule::any(action);
                    let ports = g.chance(50);
                    if ports {
                        r.protocol = Some(g.pick(&[Protocol::TCP, Protocol::UDP]));
                    }
                    r.source = entity(g, false);
                    r.destination = entity(g, ports);
                    r
                })
                .collect()
        };
        let ingress = rules(g);
        let egress = rules(g);
        Policy {
            kind,
            staged: g.chance(10),
            namespace,
            name: format!("p{i}"),
            tier: if kind != PolicyKind::KubernetesNetworkPolicy && g.chance(30) {
                "guard".to_string()
            } else {
                "default".to_string()
            },
            order: g.chance(70).then(|| g.pick(&[100.0, 1000.0, 2000.0])),
            selector: sel(g.pick(&["all()", "app == 'x'", "app in {'y', 'z'}"])),
            service_account_selector: None,
            namespace_selector: None,
            types: PolicyTypes {
                ingress: g.chance(70),
                egress: g.chance(50),
            },
            ingress,
            egress,
        }
    }

    fn inputs(seed: u64, dp: &Dataplane) -> PolicyInputs {
        let mut g = Gen(seed ^ 0x5eed);
        let mut set = PolicySet::new(CalicoProfile::V3_30);
        set.apply(&PolicyResource::Namespace {
            name: "red".into(),
            labels: [("team".to_string(), "red".to_string())].into(),
        });
        set.apply(&PolicyResource::Tier(Tier {
            name: "guard".into(),
            order: Some(100.0),
            default_action: g.pick(&[TierAction::Deny, TierAction::Pass]),
        }));
        for i in 0..1 + g.below(4) {
            set.apply(&PolicyResource::Policy(Box::new(random_policy(&mut g, i))));
        }
        let mut endpoints = BTreeMap::new();
        // Host-network pods have no workload endpoint.
        for p in dp.pods().filter(|p| p.attachment != Attachment::Host) {
            let ns = g.pick(&["red", "blue"]);
            let app = g.pick(&["x", "y", "z"]);
            let labels = [("app".to_string(), app.to_string())].into();
            endpoints.insert(
                p.key,
                Endpoint {
                    namespace: ns.to_string(),
                    name: format!("pod-{}", p.key.0),
                    ip: p.ip,
                    labels: endpoint_labels(&labels, ns, "default"),
                    service_account: "default".to_string(),
                    ports: if g.chance(50) {
                        vec![NamedPort {
                            name: "web".into(),
                            port: 8080,
                            protocol: Protocol::TCP,
                        }]
                    } else {
                        Vec::new()
                    },
                    windows: g.chance(10),
                },
            );
        }
        PolicyInputs {
            set,
            endpoints,
            services: BTreeMap::new(),
        }
    }

    /// Every ordered pair, every packet, one connection at a time.
    fn brute(
        dp: &Dataplane,
        pol: &Policing<'_>,
        from: &[PodKey],
        to: &[PodKey],
        packets: &[Packet],
    ) -> PolicyReach {
        let mut out = PolicyReach::default();
        let mut groups: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
        for s in from {
            for d in to {
                if s == d {
                    continue;
                }
                let Some(ip) = dp.pod(*d).map(|p| p.ip) else {
                    continue;
                };
                out.pairs += 1;
                let cs: Vec<Connection> = packets
                    .iter()
                    .map(|p| {
                        connect(dp, Some(pol), Source::Pod(*s), ip, p, false)
                            .expect("in the dataplane")
                    })
                    .collect();
                let delivered = cs.iter().filter(|c| c.verdict.delivered()).count();
                if delivered == packets.len() {
                    out.all_packets += 1;
                }
                if delivered > 0 {
                    out.some_packets += 1;
                    if delivered < packets.len() {
                        out.partial_example = Some(
                            out.partial_example
                                .map_or((*s, *d), |e: (PodKey, PodKey)| e.min((*s, *d))),
                        );
                    }
                    continue;
                }
                let egress_denied = |c: &Connection| matches!(&c.verdict, ConnectionVerdict::PolicyDenied(x) if x.side == Side::Egress);
                let verdict = if cs.iter().all(egress_denied) {
                    cs[0].verdict.clone()
                } else {
                    match cs.iter().find(|c| !egress_denied(c)).map(|c| &c.verdict) {
                        Some(v @ ConnectionVerdict::Dropped { .. }) => v.clone(),
                        _ => cs[0].verdict.clone(),
                    }
                };
                let g = groups.entry(verdict).or_insert((0, (*s, *d)));
                g.0 += 1;
                g.1 = g.1.min((*s, *d));
            }
        }
        out.blocked = groups
            .into_iter()
            .map(|(verdict, (count, example))| BlockedGroup {
                verdict,
                count,
                example,
            })
            .collect();
        out
    }

    use crate::forwarding::connect::Connection;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(120))]
        /// Policy classes and packet classes give exactly what evaluating every connection
        /// of every pair and every packet gives.
        #[test]
        fn classes_equal_connecting_every_pair(seed in any::<u64>()) {
            let (_t, dp) = scenario(seed);
            let inputs = inputs(seed, &dp);
            let pol = Policing::new(&inputs);
            let all: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
            let packets = packet_classes(&inputs.set, inputs.endpoints.values());
            prop_assert_eq!(
                policy_reachability(&dp, &pol, &all, &all, None),
                brute(&dp, &pol, &all, &all, &packets)
            );
            let half: Vec<PodKey> = all.iter().copied().step_by(2).collect();
            let one = [Packet::tcp(8080)];
            prop_assert_eq!(
                policy_reachability(&dp, &pol, &half, &all, Some(&one)),
                brute(&dp, &pol, &half, &all, &one)
            );
        }
    }
}
