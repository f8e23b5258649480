//! `reachable`, `unreachable` and `isolated` with `from: {external: X}` and
//! `to: {service: ns/name}` (SPEC §2.6, §7): the external connects to the address it reaches
//! the Service at (its LoadBalancer IP, else its first external IP, else its cluster IP) on
//! each Service port, or the one `port` names, through [`EntryRequest`]: the fabric's
//! advertised routes, kube-proxy at the node the packet reached, the endpoint's ingress
//! policy, the reply.
//!
//! A port "delivers on every connection" when every endpoint a connection can be sent to
//! delivers (without session affinity every candidate, with `ClientIP` the chosen one), as
//! for pods connecting to a Service (`service_expect`). `reachable` needs every port to
//! deliver on every connection; `isolated` and `unreachable` none on any (with `reason`,
//! every failure has it: `not-advertised`, `no-endpoints`, or a routing or policy reason).

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::external_expect::reach_holds;
use super::service_expect::{PortOutcome, service_ports};
use super::snapshot::Snapshot;
use crate::forwarding::connect::{ConnectionVerdict, Policing};
use crate::forwarding::service_entry::{EntryRequest, EntryVerdict, entry_address};
use crate::model::TextEnum;
use crate::model::expect::Check;
use crate::model::topology::DeviceId;
use crate::policy::eval::Packet;
use crate::policy::model::Protocol;

/// The words of an external-to-Service verdict: the reason, where, and why.
pub fn words(snap: &Snapshot, v: &EntryVerdict) -> String {
    let device = |d: DeviceId| {
        snap.devices
            .get(d.index())
            .map_or("?", String::as_str)
            .to_string()
    };
    match v {
        EntryVerdict::Delivered => "delivered".to_string(),
        EntryVerdict::NotAdvertised { at } => format!(
            "not-advertised at {} (it learned no route for the Service address)",
            device(*at)
        ),
        EntryVerdict::NoEndpoints {
            at,
            local_only: true,
        } => format!(
            "no-endpoints at {} (traffic policy Local: no ready endpoint on this node)",
            device(*at)
        ),
        EntryVerdict::NoEndpoints { at, .. } => format!("no-endpoints at {}", device(*at)),
        EntryVerdict::NoSuchPort { at } => {
            format!(
                "no-such-port at {} (the Service has no such port)",
                device(*at)
            )
        }
        EntryVerdict::Failed(ConnectionVerdict::PolicyDenied(d)) => format!(
            "policy-denied ({} {}) at {}",
            d.side.as_str(),
            d.by,
            device(d.at)
        ),
        EntryVerdict::Failed(ConnectionVerdict::Dropped { reason, at }) => {
            format!("{reason} at {}", device(*at))
        }
        EntryVerdict::Failed(ConnectionVerdict::Delivered) => "delivered".to_string(),
    }
}

/// How connections from outside fare on one port of a Service address ([`entry_port`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EntryPaths {
    pub outcome: PortOutcome,
    /// The fabric's equal-cost paths in (1 without ECMP).
    pub paths: usize,
    /// Those on which every endpoint a connection can reach delivers.
    pub delivered: usize,
}

/// How connections from `from` (an external's index and its client address) to `address`,
/// a Service address, fare on `port`: every endpoint a connection can reach delivers, some
/// do, or none; the failures in words. Judged over every ECMP branch of the walk in: a
/// connection may take any of them (the flow hash spreads connections), so every endpoint
/// reachable on every branch counts; a failure on a branch other than the first says which
/// (`on ECMP path k of n`).
pub fn entry_port(
    snap: &Snapshot,
    policing: Option<&Policing<'_>>,
    from: (usize, IpAddr),
    address: IpAddr,
    port: (u16, Protocol),
    failures: &mut Vec<String>,
) -> Result<EntryPaths, String> {
    let packet = Packet::with_port(port.1, port.0);
    let entries = EntryRequest {
        dp: &snap.dataplane,
        policing,
        table: &snap.services,
        from,
        address,
        packet: &packet,
        explain: false,
    }
    .every_path()
    .ok_or_else(|| format!("{address} is no Service address"))?;
    let n = entries.len();
    let (mut verdicts, mut paths_delivered) = (Vec::new(), 0usize);
    for (i, entry) in entries.iter().enumerate() {
        let legs = entry.reachable_legs();
        let on_path: Vec<EntryVerdict> = if legs.is_empty() {
            vec![entry.verdict()]
        } else {
            legs.iter()
                .map(|l| match &l.verdict {
                    ConnectionVerdict::Delivered => EntryVerdict::Delivered,
                    v => EntryVerdict::Failed(v.clone()),
                })
                .collect()
        };
        paths_delivered += usize::from(on_path.iter().all(EntryVerdict::delivered));
        for v in on_path.iter().filter(|v| !v.delivered()) {
            let mut w = words(snap, v);
            if n > 1 {
                w.push_str(&format!(" on ECMP path {} of {n}", i + 1));
            }
            failures.push(w);
        }
        verdicts.extend(on_path);
    }
    let delivered = verdicts.iter().filter(|v| v.delivered()).count();
    let outcome = match delivered {
        0 => PortOutcome::None,
        n if n == verdicts.len() => PortOutcome::Every,
        d => PortOutcome::Some {
            delivered: d,
            reachable: verdicts.len(),
        },
    };
    Ok(EntryPaths {
        outcome,
        paths: n,
        delivered: paths_delivered,
    })
}

/// Judges `c` from the external `external` to the Service `namespace/name`.
pub fn judge(
    c: &Check,
    snap: &Snapshot,
    external: &str,
    namespace: &str,
    name: &str,
) -> Result<(bool, String, String), String> {
    let (probe, reason) = match c {
        Check::Reachable { probe, .. } | Check::Isolated { probe, .. } => (probe.as_ref(), None),
        Check::Unreachable { probe, reason, .. } => (probe.as_ref(), *reason),
        _ => return Err("not a reachability expectation".to_string()),
    };
    let index = snap
        .externals
        .iter()
        .position(|x| x.name == external)
        .ok_or_else(|| format!("no external `{external}`"))?;
    let client = snap.externals[index].address();
    let view = snap
        .services
        .get(namespace, name)
        .ok_or_else(|| format!("no Service `{namespace}/{name}`"))?;
    let what = match probe {
        Some(p) => format!(" on {p}"),
        None => " on every Service port".to_string(),
    };
    let to = format!("service {namespace}/{name}");
    let from = format!("external {external}");
    let expected = match (c, reason) {
        (Check::Reachable { .. }, _) => format!("every connection {from} -> {to} delivered{what}"),
        (_, Some(why)) => {
            format!("no connection {from} -> {to} delivered{what}, every one {why}")
        }
        _ => format!("no connection {from} -> {to} delivered{what}"),
    };
    let Some((kind, address)) = entry_address(view) else {
        let holds = !matches!(c, Check::Reachable { .. }) && reason.is_none();
        return Ok((holds, expected, format!("{to} is headless: no address")));
    };
    let ports = service_ports(view, probe);
    if ports.is_empty() {
        let holds = !matches!(c, Check::Reachable { .. }) && reason.is_none();
        return Ok((holds, expected, format!("{to} has no such port")));
    }
    let policing = snap.policy.as_deref().map(Policing::new);
    let (mut every, mut none) = (0usize, 0usize);
    let mut failures: BTreeMap<String, (u64, u16)> = BTreeMap::new();
    let (mut paths, mut paths_delivered) = (0usize, 0usize);
    for &port in &ports {
        let mut words = Vec::new();
        let p = entry_port(
            snap,
            policing.as_ref(),
            (index, client),
            address,
            port,
            &mut words,
        )?;
        paths += p.paths;
        paths_delivered += p.delivered;
        match p.outcome {
            PortOutcome::Every => every += 1,
            PortOutcome::None => none += 1,
            PortOutcome::Some { .. } => {}
        }
        for w in words {
            failures.entry(w).or_insert((0, port.0)).0 += 1;
        }
    }
    let total = ports.len();
    let mut actual = format!(
        "{every} of {total} ports delivered on every connection to {} {address}, {} on some",
        kind.as_str(),
        total - every - none
    );
    if paths > total {
        actual.push_str(&format!(
            " (over the fabric's ECMP paths: {paths_delivered} of {paths} delivered)"
        ));
    }
    for (w, (count, port)) in &failures {
        actual.push_str(&format!("; {count} {w} (e.g. :{port})"));
    }
    let holds = reach_holds(
        c,
        (every == total, none == total),
        reason.map(|why| why.as_str()),
        failures.keys(),
    );
    Ok((holds, expected, actual))
}
