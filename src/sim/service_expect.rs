//! `reachable`, `unreachable` and `isolated` with `to: {service: ns/name}` (SPEC §2.6, §7):
//! every source pod connects to the Service's cluster IP on each Service port (or the one the
//! expectation's `port` names), through kube-proxy's DNAT ([`connect_service`]).
//!
//! A (client, port) pair "delivers on every connection" when each endpoint a connection of
//! that client can be sent to delivers — every candidate without session affinity, the one
//! chosen with `ClientIP` —, and "delivers on some" when one of them does. `reachable` needs
//! every pair to deliver on every connection; `isolated` and `unreachable` need no pair to
//! deliver at all (and for `unreachable` with `reason`, every failure to have that reason,
//! `no-endpoints` included). A port the Service does not have, and ICMP (a cluster IP answers
//! only its ports), deliver nothing.
//!
//! What this is not: no all-pairs counting (the report's Service section asks this module
//! per client workload instead).

use std::collections::BTreeMap;

use super::snapshot::Snapshot;
use crate::forwarding::connect::{Connection, ConnectionVerdict, Policing};
use crate::forwarding::service::{NoBackend, ServiceView, connect_service};
use crate::forwarding::{PodKey, Source};
use crate::model::TextEnum;
use crate::model::expect::{Check, PortRef, Probe};
use crate::policy::eval::Packet;
use crate::policy::model::Protocol;

/// What happened to one client on one Service port.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum PortOutcome {
    /// Every endpoint a connection can reach delivers.
    Every,
    /// Some do (`delivered` of `reachable`), the others fail with the verdicts listed.
    Some { delivered: usize, reachable: usize },
    /// None does.
    None,
}

/// One failure, grouped by its words (reason and place).
type Failures = BTreeMap<String, (u64, (PodKey, u16))>;

/// The Service ports a probe addresses: `(port, protocol)`; empty when none matches.
pub fn service_ports(view: &ServiceView, probe: Option<&Probe>) -> Vec<(u16, Protocol)> {
    let proto = Protocol::from;
    let all = view
        .service
        .ports
        .iter()
        .map(|p| (p.port, proto(p.protocol)));
    let Some(probe) = probe else {
        return all.collect();
    };
    let Some(want) = Protocol::of_probe(probe.protocol) else {
        return Vec::new();
    };
    view.service
        .ports
        .iter()
        .filter(|p| proto(p.protocol) == want)
        .filter(|p| match &probe.port {
            Some(PortRef::Number(n)) => p.port == *n,
            Some(PortRef::Name(n)) => p.name.as_deref() == Some(n.as_str()),
            None => true,
        })
        .map(|p| (p.port, want))
        .collect()
}

/// The outcome of `client` on `port`, with the failures it saw, in words.
pub fn client_port(
    snap: &Snapshot,
    policing: Option<&Policing<'_>>,
    view: &ServiceView,
    client: PodKey,
    port: (u16, Protocol),
    failures: &mut Vec<String>,
) -> PortOutcome {
    let packet = Packet::with_port(port.1, port.0);
    let Some(sc) = connect_service(
        &snap.dataplane,
        policing,
        &snap.services,
        view,
        Source::Pod(client),
        &packet,
        false,
    ) else {
        failures.push("the client is not in the dataplane".to_string());
        return PortOutcome::None;
    };
    let d = match &sc.dnat {
        Ok(d) => d,
        Err(e) => {
            failures.push(match e {
                NoBackend::NoEndpoints { .. } => "no-endpoints".to_string(),
                other => other.to_string(),
            });
            return PortOutcome::None;
        }
    };
    let mut conns: Vec<&Connection> = sc.chosen.iter().collect();
    if !d.sticky {
        conns.extend(sc.others.iter().map(|(_, c)| c));
    }
    let delivered = conns.iter().filter(|c| c.verdict.delivered()).count();
    for c in conns.iter().filter(|c| !c.verdict.delivered()) {
        failures.push(verdict_words(snap, &c.verdict));
    }
    match delivered {
        0 => PortOutcome::None,
        n if n == conns.len() => PortOutcome::Every,
        n => PortOutcome::Some {
            delivered: n,
            reachable: conns.len(),
        },
    }
}

fn verdict_words(snap: &Snapshot, v: &ConnectionVerdict) -> String {
    let device = |d: crate::model::topology::DeviceId| {
        snap.devices
            .get(d.index())
            .map_or("?", String::as_str)
            .to_string()
    };
    match v {
        ConnectionVerdict::Delivered => "delivered".to_string(),
        ConnectionVerdict::Dropped { reason, at } => format!("{reason} at {}", device(*at)),
        ConnectionVerdict::PolicyDenied(d) => format!(
            "policy-denied ({} {}) at {}",
            d.side.as_str(),
            d.by,
            device(d.at)
        ),
    }
}

/// Judges `c` (reachable, unreachable or isolated) whose `to` is the Service `ns/name`, from
/// the pods `sources`.
pub fn judge(
    c: &Check,
    snap: &Snapshot,
    sources: &[PodKey],
    namespace: &str,
    name: &str,
) -> Result<(bool, String, String), String> {
    let view = snap
        .services
        .get(namespace, name)
        .ok_or_else(|| format!("no Service `{namespace}/{name}`"))?;
    let (from, probe, reason) = match c {
        Check::Reachable { from, probe, .. } => (from, probe.as_ref(), None),
        Check::Isolated { from, probe, .. } => (from, probe.as_ref(), None),
        Check::Unreachable {
            from,
            probe,
            reason,
            ..
        } => (from, probe.as_ref(), *reason),
        _ => return Err("not a reachability expectation".to_string()),
    };
    let ports = service_ports(view, probe);
    let what = match probe {
        Some(p) => format!(" on {p}"),
        None => " on every Service port".to_string(),
    };
    let to = format!("service {namespace}/{name}");
    let expected = match (c, reason) {
        (Check::Reachable { .. }, _) => {
            format!("every connection of {from} -> {to} delivered{what}")
        }
        (_, Some(why)) => {
            format!("no connection of {from} -> {to} delivered{what}, every one {why}")
        }
        _ => format!("no connection of {from} -> {to} delivered{what}"),
    };
    if sources.is_empty() {
        return Ok((
            false,
            expected,
            "no source pod with an address in this set".to_string(),
        ));
    }
    if ports.is_empty() {
        let actual = format!("{to} has no such port");
        let holds = !matches!(c, Check::Reachable { .. }) && reason.is_none();
        return Ok((holds, expected, actual));
    }
    let policing = snap.policy.as_deref().map(Policing::new);
    let mut counts: BTreeMap<PortOutcome, u64> = BTreeMap::new();
    let mut failures: Failures = BTreeMap::new();
    for &client in sources {
        for &port in &ports {
            let mut words = Vec::new();
            let outcome = client_port(snap, policing.as_ref(), view, client, port, &mut words);
            let bucket = match outcome {
                PortOutcome::Some { .. } => PortOutcome::Some {
                    delivered: 0,
                    reachable: 0,
                },
                other => other,
            };
            *counts.entry(bucket).or_default() += 1;
            for w in words {
                let g = failures.entry(w).or_insert((0, (client, port.0)));
                g.0 += 1;
            }
        }
    }
    let pairs: u64 = counts.values().sum();
    let every = counts.get(&PortOutcome::Every).copied().unwrap_or(0);
    let none = counts.get(&PortOutcome::None).copied().unwrap_or(0);
    let some = pairs - every - none;
    let mut actual = format!(
        "{every} of {pairs} (client, port) pairs delivered on every connection, {some} on some"
    );
    for (words, (count, (client, port))) in &failures {
        actual.push_str(&format!(
            "; {count} {words} (e.g. {} -> :{port})",
            super::expect::pod_name(snap, *client)
        ));
    }
    let holds = match c {
        Check::Reachable { .. } => every == pairs,
        _ => {
            none == pairs
                && reason.is_none_or(|why| {
                    failures
                        .keys()
                        .all(|w| w.split([' ', '(']).next() == Some(why.as_str()))
                })
        }
    };
    Ok((holds, expected, actual))
}
