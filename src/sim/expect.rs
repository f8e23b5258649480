//! Evaluating expectations (SPEC §2.6) on snapshots.
//!
//! Each expectation is checked against the snapshot at its `at:` (or the last one) and gives
//! PASS or FAIL with the expected and actual values in words. Naming something that can never
//! exist is an input error found when loading (SPEC §2.6); naming something absent at the
//! expectation's time is a failure with that reason.
//! Expectations about routes, reachability, paths and BGP need layers podnet does not have
//! yet; they fail and say so rather than pass silently.

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;

use super::policy::Pairs;
use super::snapshot::{BgpState, PodRow, Snapshot};
use crate::forwarding::connect::{
    ConnectionVerdict, Policing, PolicyInputs, connect, packet_for, verdict_text,
};
use crate::forwarding::policy_reach::{BlockedGroup, PolicyReach, policy_reachability};
use crate::forwarding::{Dataplane, FibAction, PodKey, Source, Verdict, reachability, trace};
use crate::model::TextEnum;
use crate::model::expect::{Check, Count, Expectation, PodSet, RouteTable};
use crate::model::expect::{Probe, ProbeProtocol};
use crate::model::time::{SimDuration, SimTime};
use crate::model::topology::DeviceId;
use crate::model::workload::PodStatus;
use crate::policy::eval::{Engine, Packet, packet_classes};
use crate::policy::model::{Direction, Protocol};

/// The verdict on one expectation.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExpectationResult {
    pub name: String,
    pub passed: bool,
    pub expected: String,
    pub actual: String,
    pub at_us: u64,
    /// Why the expectation does not apply to this scenario (its `when:`); then it is neither
    /// passed nor failed, and was not evaluated. Absent from the JSON when it applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_applicable: Option<String>,
}

impl ExpectationResult {
    /// Applies and does not hold: what counts against a run (exit codes, failure counts).
    pub fn failed(&self) -> bool {
        !self.passed && self.not_applicable.is_none()
    }

    /// `PASS`, `FAIL` or `N/A`, as `check` and `sweep --verbose` print it.
    pub fn verdict_word(&self) -> &'static str {
        match (self.passed, &self.not_applicable) {
            (_, Some(_)) => "N/A",
            (true, None) => "PASS",
            (false, None) => "FAIL",
        }
    }
}

/// Evaluates every expectation. A name the expectation's snapshot lacks (a pod not created
/// yet or deleted, a pool applied later) makes it fail with that reason: loading already
/// refused names that can never exist (SPEC §2.6), so the lack is one of time.
pub fn evaluate(
    expectations: &[Expectation],
    snapshots: &[Snapshot],
    last: &Snapshot,
) -> Vec<ExpectationResult> {
    let mut results = Vec::new();
    for e in expectations {
        let snap = match e.at {
            Some(at) => snapshots
                .iter()
                .find(|s| s.time_us == at.as_micros())
                .unwrap_or(last),
            None => last,
        };
        let at_us =
            e.at.unwrap_or(SimTime::from_nanos(snap.time_us * 1000))
                .as_micros();
        if let Some(why) = &e.not_applicable {
            results.push(ExpectationResult {
                name: e.name.clone(),
                passed: false,
                expected: format!("{} {}", e.check.kind(), e.check.summary()),
                actual: "not evaluated".to_string(),
                at_us,
                not_applicable: Some(why.clone()),
            });
            continue;
        }
        let (passed, expected, actual) = match check(&e.check, snap) {
            Ok(verdict) => verdict,
            Err(what) => (
                false,
                format!("{} {}", e.check.kind(), e.check.summary()),
                format!(
                    "{what} at {} (it exists only at other times of the run)",
                    SimDuration::from_micros(at_us)
                ),
            ),
        };
        results.push(ExpectationResult {
            name: e.name.clone(),
            passed,
            expected,
            actual,
            at_us,
            not_applicable: None,
        });
    }
    results
}

/// Compares counts, collecting the rendering of what was expected and what was found.
#[derive(Default)]
struct Compare {
    passed: bool,
    expected: Vec<String>,
    actual: Vec<String>,
}

impl Compare {
    fn new() -> Compare {
        Compare {
            passed: true,
            ..Compare::default()
        }
    }

    fn count(&mut self, field: &str, want: Option<Count>, got: u64) {
        if let Some(want) = want {
            self.passed &= want.holds(got);
            self.expected.push(format!("{field} {want}"));
            self.actual.push(format!("{field} {got}"));
        }
    }

    fn value<T: PartialEq + std::fmt::Display>(
        &mut self,
        field: &str,
        want: Option<T>,
        got: Option<T>,
    ) {
        if let Some(want) = want {
            self.passed &= got.as_ref() == Some(&want);
            self.expected.push(format!("{field} {want}"));
            self.actual.push(format!(
                "{field} {}",
                got.map_or("none".to_string(), |g| g.to_string())
            ));
        }
    }

    fn finish(self) -> (bool, String, String) {
        (
            self.passed,
            self.expected.join(", "),
            self.actual.join(", "),
        )
    }
}

fn find_pod<'a>(snap: &'a Snapshot, reference: &str) -> Option<&'a PodRow> {
    match reference.split_once('/') {
        Some((ns, name)) => snap
            .pods
            .iter()
            .find(|p| *p.namespace == *ns && p.name == name),
        None => snap.pods.iter().find(|p| p.name == reference),
    }
}

/// The pods a set names; `Err` when it names a pod or node that does not exist.
pub(super) fn select<'a>(snap: &'a Snapshot, set: &PodSet) -> Result<Vec<&'a PodRow>, String> {
    Ok(match set {
        PodSet::All => snap.pods.iter().collect(),
        PodSet::Pod(reference) => {
            vec![find_pod(snap, reference).ok_or_else(|| format!("no pod `{reference}`"))?]
        }
        PodSet::Workload { name, namespace } => {
            let ns = namespace.as_deref().unwrap_or("default");
            snap.pods
                .iter()
                .filter(|p| *p.workload == **name && *p.namespace == *ns)
                .collect()
        }
        PodSet::Namespace(ns) => snap.pods.iter().filter(|p| *p.namespace == **ns).collect(),
        PodSet::Service { namespace, name } => {
            return Err(format!(
                "service {namespace}/{name} is a destination, not a set of pods"
            ));
        }
        PodSet::External(name) => {
            return Err(format!("external {name} is a place, not a set of pods"));
        }
        PodSet::Node(node) => {
            if !snap.nodes.iter().any(|n| &n.name == node) {
                return Err(format!("no node `{node}`"));
            }
            snap.pods
                .iter()
                .filter(|p| p.node.as_deref() == Some(node.as_str()))
                .collect()
        }
    })
}

fn device_id(snap: &Snapshot, name: &str) -> Result<DeviceId, String> {
    snap.devices
        .iter()
        .position(|d| d == name)
        .map(|i| DeviceId(i as u32))
        .ok_or_else(|| format!("no node or device `{name}`"))
}

/// How SPEC §2.6 names a FIB entry's next hop: the device handed the packet (the tunnel's
/// far end for an encapsulated route), `blackhole`, `local`, or `connected` for on-link.
fn next_hop_name(snap: &Snapshot, action: &FibAction) -> String {
    let name = |d: &DeviceId| snap.devices.get(d.index()).cloned().unwrap_or_default();
    match action {
        FibAction::Via { device, .. } | FibAction::Tunnel { device, .. } => name(device),
        FibAction::Blackhole => "blackhole".to_string(),
        FibAction::Local(_) => "local".to_string(),
        FibAction::Connected(_) => "connected".to_string(),
        FibAction::External(_) => "external".to_string(),
    }
}

pub(super) fn addressed_keys(pods: Vec<&PodRow>) -> Vec<PodKey> {
    pods.into_iter()
        .filter(|p| p.ip.is_some())
        .map(|p| p.key)
        .collect()
}

/// Routing reachability (no policy) from `sources` to `targets`. When both are every pod of
/// the dataplane, this is the snapshot's all-pairs result ([`Snapshot::reachability`]),
/// computed once and shared with whoever else asks (a sweep's row, the report): the result
/// depends only on the two sets, not on their order.
fn routing_pairs(snap: &Snapshot, sources: &[PodKey], targets: &[PodKey]) -> Pairs {
    let dp = &snap.dataplane;
    if snap.policy.is_none() && names_every_pod(dp, sources) && names_every_pod(dp, targets) {
        return snap.reachability().clone();
    }
    super::policy::pairs_between(dp, None, sources, targets, None)
}

/// Whether `keys` name every pod of `dp` (and maybe others): one walk of both in key order.
fn names_every_pod(dp: &crate::forwarding::Dataplane, keys: &[PodKey]) -> bool {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    let mut named = keys.iter().peekable();
    dp.pods().all(|p| {
        while named.next_if(|k| **k < p.key).is_some() {}
        named.next_if(|k| **k == p.key).is_some()
    })
}

pub(super) fn pod_name(snap: &Snapshot, key: PodKey) -> String {
    snap.pods.iter().find(|p| p.key == key).map_or_else(
        || "?".to_string(),
        |p| format!("{}/{}", p.namespace, p.name),
    )
}

fn check(c: &Check, snap: &Snapshot) -> Result<(bool, String, String), String> {
    let mut cmp = Compare::new();
    match c {
        Check::Pod {
            name,
            ip,
            in_cidr,
            node,
            pool,
            borrowed,
            status,
        } => {
            let pod = find_pod(snap, name).ok_or_else(|| format!("no pod `{name}`"))?;
            let pod_ip: Option<IpAddr> = pod.ip;
            cmp.value("ip", *ip, pod_ip);
            if let Some(cidr) = in_cidr {
                let inside = pod_ip.is_some_and(|a| cidr.contains(&a));
                cmp.passed &= inside;
                cmp.expected.push(format!("ip in {cidr}"));
                cmp.actual.push(format!(
                    "ip {}",
                    pod.ip
                        .map_or_else(|| "none".to_string(), |ip| ip.to_string())
                ));
            }
            cmp.value(
                "node",
                node.clone(),
                pod.node.as_deref().map(str::to_string),
            );
            cmp.value(
                "pool",
                pool.clone(),
                pod.pool.as_deref().map(str::to_string),
            );
            cmp.value("borrowed", *borrowed, Some(pod.borrowed));
            cmp.value(
                "status",
                status.map(|s| s.as_str()),
                Some(pod.status.as_str()),
            );
            if !cmp.passed
                && let Some(reason) = &pod.reason
            {
                cmp.actual.push(format!("reason: {reason}"));
            }
        }
        Check::Pods {
            of,
            running,
            pending,
            unknown,
        } => {
            let pods = select(snap, of)?;
            let count = |s: PodStatus| pods.iter().filter(|p| p.status == s).count() as u64;
            cmp.count("running", *running, count(PodStatus::Running));
            cmp.count("pending", *pending, count(PodStatus::Pending));
            cmp.count("unknown", *unknown, count(PodStatus::Unknown));
        }
        Check::Pool {
            name,
            allocated,
            blocks,
            free,
            reserved,
        } => {
            let pool = snap
                .pools
                .iter()
                .find(|p| &p.name == name)
                .ok_or_else(|| format!("no pool `{name}`"))?;
            cmp.count("allocated", *allocated, pool.allocated);
            cmp.count("blocks", *blocks, u64::from(pool.blocks));
            cmp.count("free", *free, u64::try_from(pool.free).unwrap_or(u64::MAX));
            cmp.count("reserved", *reserved, pool.reserved);
        }
        Check::Node {
            name,
            blocks,
            borrowed_ips,
            rib_routes,
            fib_routes,
        } => {
            let nodes: Vec<_> = if name == "*" {
                snap.nodes.iter().collect()
            } else {
                vec![
                    snap.nodes
                        .iter()
                        .find(|n| &n.name == name)
                        .ok_or_else(|| format!("no node `{name}`"))?,
                ]
            };
            for n in nodes {
                let mut one = Compare::new();
                one.count("blocks", *blocks, n.blocks.len() as u64);
                one.count("borrowedIps", *borrowed_ips, n.borrowed_ips as u64);
                one.count("ribRoutes", *rib_routes, n.rib_routes.unwrap_or(0) as u64);
                one.count("fibRoutes", *fib_routes, n.fib_routes as u64);
                if !one.passed || name != "*" {
                    cmp.passed &= one.passed;
                    let prefix = if name == "*" {
                        format!("{}: ", n.name)
                    } else {
                        String::new()
                    };
                    cmp.expected
                        .push(format!("{prefix}{}", one.expected.join(", ")));
                    cmp.actual
                        .push(format!("{prefix}{}", one.actual.join(", ")));
                }
                if !cmp.passed && name == "*" {
                    break;
                }
            }
            if name == "*" && cmp.passed {
                cmp.expected.push("every node as given".to_string());
                cmp.actual
                    .push(format!("all {} nodes match", snap.nodes.len()));
            }
        }
        Check::Block {
            cidr,
            affinity,
            allocated,
        } => {
            let Some(block) = snap.blocks.iter().find(|b| b.cidr == *cidr) else {
                return Ok((
                    false,
                    format!("block {cidr}"),
                    format!("no block {cidr} exists"),
                ));
            };
            cmp.value(
                "affinity",
                affinity.clone(),
                Some(block.affinity.clone().unwrap_or_else(|| "none".to_string())),
            );
            cmp.count("allocated", *allocated, u64::from(block.allocated));
        }
        Check::AllocationFailures(want) => {
            cmp.count(
                "allocationFailures",
                Some(*want),
                snap.allocation_failures() as u64,
            );
        }
        Check::Route {
            node,
            prefix,
            next_hop,
            present,
            table,
        } => {
            device_id(snap, node)?;
            let found = if *table == RouteTable::Rib {
                // Without BGP speakers (Calico's VXLAN backend) every RIB is empty.
                snap.bgp
                    .as_ref()
                    .and_then(|bgp| bgp.ribs.get(node))
                    .and_then(|rib| rib.iter().find(|r| r.prefix == *prefix))
                    .map(|r| r.next_hop.clone())
            } else {
                let device = device_id(snap, node)?;
                snap.dataplane
                    .entries(device)
                    .into_iter()
                    .find(|e| e.prefix == *prefix)
                    .map(|e| next_hop_name(snap, &e.action))
            };
            let holds = match (present, &found, next_hop) {
                (true, Some(got), Some(want)) => got == want,
                (true, Some(_), None) => true,
                (false, None, _) => true,
                (false, Some(got), Some(want)) => got != want,
                _ => false,
            };
            let expected = match (present, next_hop) {
                (true, Some(nh)) => format!("{prefix} via {nh} in the {table} of {node}"),
                (true, None) => format!("{prefix} in the {table} of {node}"),
                (false, Some(nh)) => format!("no {prefix} via {nh} in the {table} of {node}"),
                (false, None) => format!("no {prefix} in the {table} of {node}"),
            };
            let actual = match found {
                Some(nh) => format!("{prefix} via {nh}"),
                None => format!("no entry for {prefix}"),
            };
            return Ok((holds, expected, actual));
        }
        Check::Reachable { from, to, probe }
        | Check::Unreachable {
            from, to, probe, ..
        }
        | Check::Isolated { from, to, probe } => {
            if let (PodSet::External(x), PodSet::Service { namespace, name }) = (from, to) {
                return super::service_entry_expect::judge(c, snap, x, namespace, name);
            }
            if matches!(from, PodSet::External(_)) || matches!(to, PodSet::External(_)) {
                return super::external_expect::judge(c, snap);
            }
            let dp = &snap.dataplane;
            let sources = addressed_keys(select(snap, from)?);
            if let PodSet::Service { namespace, name } = to {
                return super::service_expect::judge(c, snap, &sources, namespace, name);
            }
            let targets = addressed_keys(select(snap, to)?);
            if let Some(inputs) = snap.policy.as_deref() {
                return Ok(policy_pairs(
                    c,
                    snap,
                    dp,
                    inputs,
                    &sources,
                    &targets,
                    probe.as_ref(),
                ));
            }
            let r = routing_pairs(snap, &sources, &targets);
            let reason = match c {
                Check::Unreachable { reason, .. } => *reason,
                _ => None,
            };
            let want_reachable = matches!(c, Check::Reachable { .. });
            let expected = match (want_reachable, reason) {
                (true, _) => format!("every pair of {from} -> {to} delivered"),
                (false, _) if matches!(c, Check::Isolated { .. }) => {
                    format!("no pair of {from} -> {to} delivered")
                }
                (false, Some(why)) => {
                    format!("no pair of {from} -> {to} delivered, every one {why}")
                }
                (false, None) => format!("no pair of {from} -> {to} delivered"),
            };
            if r.pairs == 0 {
                return Ok((
                    false,
                    expected,
                    "no pair of pods with an address in these sets".to_string(),
                ));
            }
            let groups: Vec<String> = r
                .groups
                .iter()
                .map(|g| {
                    let (a, b) = g.example;
                    format!(
                        "{} {} at {} (e.g. {} -> {})",
                        g.count,
                        g.reason,
                        snap.devices
                            .get(g.stopped_at.index())
                            .map_or("?", String::as_str),
                        pod_name(snap, a),
                        pod_name(snap, b)
                    )
                })
                .collect();
            let actual = if groups.is_empty() {
                format!("{} of {} pairs delivered", r.reachable, r.pairs)
            } else {
                format!(
                    "{} of {} pairs delivered; {}",
                    r.reachable,
                    r.pairs,
                    groups.join("; ")
                )
            };
            let holds = if want_reachable {
                r.reachable == r.pairs
            } else {
                r.reachable == 0
                    && reason.is_none_or(|why| r.groups.iter().all(|g| g.reason == why.as_str()))
            };
            return Ok((holds, expected, actual));
        }
        Check::Path {
            from,
            to,
            via,
            encapsulation,
            probe,
        } => {
            let dp = &snap.dataplane;
            let source = find_pod(snap, from).ok_or_else(|| format!("no pod `{from}`"))?;
            let target = find_pod(snap, to).ok_or_else(|| format!("no pod `{to}`"))?;
            let what = match probe {
                Some(p) => format!("a path {from} -> {to} on {p}"),
                None => format!("a path {from} -> {to}"),
            };
            let (Some(_), Some(ip)) = (&source.ip, target.ip) else {
                return Ok((false, what, "one of the pods has no address".to_string()));
            };
            let device_name =
                |d: DeviceId| snap.devices.get(d.index()).cloned().unwrap_or_default();
            // With policy, the connection as `trace` makes it (egress, routing, ingress) for
            // the probe's packet, an ICMP echo request without one; else routing alone.
            let (t, verdict) = match snap.policy.as_deref() {
                Some(inputs) => {
                    let pol = Policing::new(inputs);
                    let packet = match probe {
                        Some(p) => match packet_for(p, pol.endpoint(target.key)) {
                            Ok(packet) => packet,
                            Err(why) => return Ok((false, what, why)),
                        },
                        None => Packet::icmp(8, 0),
                    };
                    let Some(c) =
                        connect(dp, Some(&pol), Source::Pod(source.key), ip, &packet, false)
                    else {
                        return Ok((
                            false,
                            what,
                            "the source is not in the dataplane".to_string(),
                        ));
                    };
                    let verdict = verdict_text(&c, &device_name);
                    (c.trace, (c.verdict.delivered(), verdict))
                }
                None => {
                    let Some(t) = trace(dp, Source::Pod(source.key), ip) else {
                        return Ok((
                            false,
                            what,
                            "the source is not in the dataplane".to_string(),
                        ));
                    };
                    let verdict = match t.verdict {
                        Verdict::Delivered => "delivered".to_string(),
                        Verdict::Dropped { reason, at } => {
                            format!("{reason} at {}", device_name(at))
                        }
                    };
                    let delivered = t.delivered();
                    (Some(t), (delivered, verdict))
                }
            };
            // Denied at the sender's egress: the packet never left its node.
            let hops: Vec<String> = match &t {
                Some(t) => t.path().iter().map(|d| device_name(*d)).collect(),
                None => source.node.iter().map(|n| n.to_string()).collect(),
            };
            let encap = t
                .as_ref()
                .and_then(|t| t.encapsulation())
                .map_or("none", |e| e.as_str());
            let (mut holds, verdict) = verdict;
            let mut expected = vec![match probe {
                Some(p) => format!("{from} -> {to} on {p} delivered"),
                None => format!("{from} -> {to} delivered"),
            }];
            if let Some(via) = via {
                holds &= &hops == via;
                expected.push(format!("via [{}]", via.join(", ")));
            }
            if let Some(e) = encapsulation {
                holds &= e.as_str() == encap;
                expected.push(format!("encapsulation {e}"));
            }
            return Ok((
                holds,
                expected.join(", "),
                format!("{verdict} via [{}], encapsulation {encap}", hops.join(", ")),
            ));
        }
        Check::Policy {
            pod,
            ingress,
            egress,
        } => {
            let row = find_pod(snap, pod).ok_or_else(|| format!("no pod `{pod}`"))?;
            let applying = |d: Direction| -> Vec<String> {
                let Some(inputs) = snap.policy.as_deref() else {
                    return Vec::new();
                };
                let Some(e) = inputs.endpoints.get(&row.key) else {
                    return Vec::new();
                };
                Engine::new(&inputs.set)
                    .applicable(e, d)
                    .into_iter()
                    .map(|(_, p)| p)
                    .collect()
            };
            for (field, want, d) in [
                ("ingress", ingress, Direction::Ingress),
                ("egress", egress, Direction::Egress),
            ] {
                if let Some(want) = want {
                    let got = applying(d);
                    cmp.passed &= &got == want;
                    cmp.expected.push(format!("{field} [{}]", want.join(", ")));
                    cmp.actual.push(format!("{field} [{}]", got.join(", ")));
                }
            }
        }
        Check::Bgp {
            sessions_established,
            converged_within,
            updates,
        } => {
            // Nothing speaks BGP (Calico's VXLAN backend, no BGP fabric): no sessions, no
            // UPDATEs, nothing to converge.
            let none = BgpState::default();
            let bgp = snap.bgp.as_ref().unwrap_or(&none);
            cmp.count(
                "sessionsEstablished",
                *sessions_established,
                bgp.sessions_established as u64,
            );
            cmp.count("updates", *updates, bgp.updates);
            if let Some(limit) = converged_within {
                let took = SimDuration::from_micros(bgp.converged_within_us);
                cmp.passed &= took <= *limit;
                cmp.expected.push(format!("converged within {limit}"));
                cmp.actual.push(format!("converged in {took}"));
            }
            if snap.bgp.is_none() {
                cmp.actual
                    .push("no BGP speaker in this scenario".to_string());
            }
        }
    }
    Ok(cmp.finish())
}

/// The packets a probe stands for towards each destination: all packet classes (no probe),
/// the classes of one protocol (a protocol without a port), or one packet (a named port
/// resolved on each destination). Destinations where a named port resolves to nothing are
/// returned apart.
pub(super) fn probe_packets(
    pol: &Policing<'_>,
    targets: &[PodKey],
    probe: Option<&Probe>,
) -> (BTreeMap<Vec<Packet>, Vec<PodKey>>, Vec<PodKey>) {
    let mut groups: BTreeMap<Vec<Packet>, Vec<PodKey>> = BTreeMap::new();
    let mut unresolved = Vec::new();
    let classes = || packet_classes(&pol.engine, pol.endpoints());
    match probe {
        None => {
            groups.insert(classes(), targets.to_vec());
        }
        Some(p) if p.port.is_none() && p.protocol != ProbeProtocol::Icmp => {
            let proto = Protocol::of_probe(p.protocol).unwrap_or(Protocol::TCP);
            let packets: Vec<Packet> = classes()
                .into_iter()
                .filter(|k| k.protocol == proto)
                .collect();
            groups.insert(packets, targets.to_vec());
        }
        Some(p) => {
            for t in targets {
                match packet_for(p, pol.endpoint(*t)) {
                    Ok(packet) => groups.entry(vec![packet]).or_default().push(*t),
                    Err(_) => unresolved.push(*t),
                }
            }
        }
    }
    (groups, unresolved)
}

/// `reachable`, `unreachable` and `isolated` when network policy is enforced: routing and
/// policy together, over the packets the probe names.
fn policy_pairs(
    c: &Check,
    snap: &Snapshot,
    dp: &Dataplane,
    inputs: &PolicyInputs,
    sources: &[PodKey],
    targets: &[PodKey],
    probe: Option<&Probe>,
) -> (bool, String, String) {
    let pol = Policing::new(inputs);
    let (groups, unresolved) = probe_packets(&pol, targets, probe);
    let mut total = PolicyReach::default();
    let mut blocked: BTreeMap<ConnectionVerdict, (u64, (PodKey, PodKey))> = BTreeMap::new();
    for (packets, dests) in &groups {
        let r = policy_reachability(dp, &pol, sources, dests, Some(packets));
        total.pairs += r.pairs;
        total.all_packets += r.all_packets;
        total.some_packets += r.some_packets;
        for BlockedGroup {
            verdict,
            count,
            example,
        } in r.blocked
        {
            let g = blocked.entry(verdict).or_insert((0, example));
            g.0 += count;
            g.1 = g.1.min(example);
        }
    }
    let no_port = if unresolved.is_empty() {
        0
    } else {
        let r = reachability(dp, sources, &unresolved);
        total.pairs += r.pairs;
        r.pairs
    };
    let what = match probe {
        Some(p) => format!(" on {p}"),
        None => String::new(),
    };
    let (from, to) = match c {
        Check::Reachable { from, to, .. }
        | Check::Unreachable { from, to, .. }
        | Check::Isolated { from, to, .. } => (from.to_string(), to.to_string()),
        _ => (String::new(), String::new()),
    };
    let reason = match c {
        Check::Unreachable { reason, .. } => *reason,
        _ => None,
    };
    let expected = match (c, reason) {
        (Check::Reachable { .. }, _) if probe.is_none() => {
            format!("every pair of {from} -> {to} delivered on every port and protocol")
        }
        (Check::Reachable { .. }, _) => format!("every pair of {from} -> {to} delivered{what}"),
        (_, Some(why)) => format!("no pair of {from} -> {to} delivered{what}, every one {why}"),
        _ => format!("no pair of {from} -> {to} delivered{what}"),
    };
    if total.pairs == 0 {
        return (
            false,
            expected,
            "no pair of pods with an address in these sets".to_string(),
        );
    }
    let device = |d: crate::model::topology::DeviceId| {
        snap.devices
            .get(d.index())
            .map_or("?", String::as_str)
            .to_string()
    };
    let mut parts: Vec<String> = blocked
        .iter()
        .map(|(v, (count, (a, b)))| {
            let why = match v {
                ConnectionVerdict::PolicyDenied(d) => format!(
                    "policy-denied ({} {}) at {}",
                    d.side.as_str(),
                    d.by,
                    device(d.at)
                ),
                ConnectionVerdict::Dropped { reason, at } => format!("{reason} at {}", device(*at)),
                ConnectionVerdict::Delivered => "delivered".to_string(),
            };
            format!(
                "{count} {why} (e.g. {} -> {})",
                pod_name(snap, *a),
                pod_name(snap, *b)
            )
        })
        .collect();
    if no_port > 0 {
        parts.push(format!("{no_port} to pods that declare no such port"));
    }
    let partial = total.some_packets - total.all_packets;
    let mut actual = if probe.is_some_and(|p| p.port.is_some() || p.protocol == ProbeProtocol::Icmp)
    {
        format!("{} of {} pairs delivered", total.some_packets, total.pairs)
    } else {
        format!(
            "{} of {} pairs delivered on every packet, {partial} on some",
            total.all_packets, total.pairs
        )
    };
    if !parts.is_empty() {
        actual.push_str("; ");
        actual.push_str(&parts.join("; "));
    }
    let holds = match c {
        Check::Reachable { .. } => total.all_packets == total.pairs,
        _ => {
            total.some_packets == 0
                && reason.is_none_or(|why| {
                    no_port == 0 && blocked.keys().all(|v| v.reason() == Some(why.as_str()))
                })
        }
    };
    (holds, expected, actual)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::Simulation;

    /// Two racks of two nodes, one router between them (a rack's ToR); `web` (4 pods) and
    /// `db` (2 pods) spread over the nodes; no policy.
    const TWO_WORKLOADS: &str = r#"
name: shared-reach
topology:
  zones:
  - name: z
    racks:
    - {name: a, subnet: 10.0.0.0/24, nodes: [{namePrefix: a, count: 2}]}
    - {name: b, subnet: 10.0.1.0/24, nodes: [{namePrefix: b, count: 2}]}
workloads:
- {name: web, replicas: 4}
- {name: db, replicas: 2}
expect:
- reachable: {from: {workload: web}, to: {workload: web}}
- reachable: {from: all, to: all}
"#;

    #[test]
    fn an_all_pairs_expectation_shares_the_snapshots_reachability() {
        let s = crate::scenario::load_str("t.yaml", TWO_WORKLOADS).expect("valid scenario");
        let out = Simulation::new(&s).run();
        // web -> web is a subset: computed on its own, the snapshot's all pairs untouched.
        let subset = evaluate(&s.expectations[..1], &[], &out.last);
        assert!(subset[0].passed, "{}", subset[0].actual);
        assert!(!out.last.reachability_known());
        // all -> all is every pod both ways: the snapshot's result, kept for the report and
        // a sweep's row. 6 pods: 6 x 5 = 30 ordered pairs of distinct pods, all delivered
        // (one pool, no policy, every node reaches every other through the ToR).
        let all = evaluate(&s.expectations[1..], &[], &out.last);
        assert!(out.last.reachability_known());
        assert_eq!(all[0].actual, "30 of 30 pairs delivered");
        assert_eq!(out.last.reachability().pairs, 30);
    }

    #[test]
    fn every_pod_is_named_whatever_the_order_repeats_and_strangers() {
        let s = crate::scenario::load_str("t.yaml", TWO_WORKLOADS).expect("valid scenario");
        let dp = Simulation::new(&s).run().last.dataplane;
        let mut keys: Vec<PodKey> = dp.pods().map(|p| p.key).collect();
        assert_eq!(keys.len(), 6);
        assert!(names_every_pod(&dp, &keys));
        keys.reverse();
        keys.push(keys[2]);
        keys.push(PodKey(1_000_000));
        assert!(
            names_every_pod(&dp, &keys),
            "repeated and unknown keys change nothing"
        );
        let lost = keys.remove(1);
        assert!(keys.contains(&PodKey(1_000_000)));
        assert!(!names_every_pod(&dp, &keys), "{lost:?} is not named");
        assert!(!names_every_pod(&dp, &[]));
    }
}
