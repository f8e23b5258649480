//! `reachable`, `unreachable` and `isolated` with `from: {external: name}` or
//! `to: {external: name}` (SPEC §2.6, §7): every pod of the other side connects to (or is
//! connected from) the external's address ([`External::address`]) through
//! [`crate::forwarding::external`]: policy, the walk, natOutgoing, and the reply back.
//!
//! A pod "delivers on every packet" when the connection works for each packet the
//! expectation stands for: its probe, or without one every packet class policy tells apart
//! (SPEC §2.6: without `port`, `reachable` needs every port and protocol); without enforced
//! policy the packet does not matter and one connection is followed. `reachable` needs every
//! pod to deliver on every packet, `isolated` and `unreachable` none on any (with `reason`,
//! every failure has that reason, a lost reply included).
//!
//! [`pod_connections`] is the per-pod part, which the report's `externals` section shares.

use std::collections::BTreeMap;
use std::net::IpAddr;

use super::expect::{addressed_keys, pod_name, probe_packets, select};
use super::snapshot::Snapshot;
use crate::forwarding::connect::{Policing, packet_for};
use crate::forwarding::external::{ExternalConnection, connect_in, connect_out};
use crate::forwarding::{PodKey, Source};
use crate::model::TextEnum;
use crate::model::expect::{Check, PodSet, Probe};
use crate::policy::eval::Packet;

/// The words of an external connection's fate, for traces and expectations: `delivered`
/// (with the SNAT or the routed pod address), or the verdict of the first failing step,
/// which for a lost reply says where and why.
pub fn words(snap: &Snapshot, c: &ExternalConnection) -> String {
    let device = |d: crate::model::topology::DeviceId| {
        snap.devices
            .get(d.index())
            .map_or("?", String::as_str)
            .to_string()
    };
    let external = snap
        .externals
        .get(c.external)
        .map_or("?", |x| x.name.as_str());
    if !c.connection.verdict.delivered() {
        return crate::forwarding::connect::verdict_text(&c.connection, &device);
    }
    let out = c.way == crate::forwarding::external::Way::Out;
    match (c.verdict(), &c.snat) {
        (crate::forwarding::connect::ConnectionVerdict::Delivered, Some(s)) => format!(
            "delivered (natOutgoing: SNAT to the node address {} at {})",
            s.to,
            device(s.at)
        ),
        (crate::forwarding::connect::ConnectionVerdict::Delivered, None) if out => format!(
            "delivered (no SNAT: the reply to {} is routed back from {external}'s router)",
            c.reply_to
        ),
        (crate::forwarding::connect::ConnectionVerdict::Delivered, None) => "delivered".to_string(),
        (v, snat) => {
            let why = match snat {
                Some(_) => "the reply to the node address is lost".to_string(),
                None if out && snap.dataplane.pod_by_ip(c.reply_to).is_some() => {
                    "the reply to the pod's own address is lost: its pool has no natOutgoing \
                     and the fabric has not learned the address"
                        .to_string()
                }
                None => format!("the reply to {} is lost", c.reply_to),
            };
            format!(
                "{} at {} ({why})",
                v.reason().unwrap_or("?"),
                v.stopped_at().map_or("?".to_string(), device)
            )
        }
    }
}

/// Judges `c` whose `from` or `to` is an external.
pub fn judge(c: &Check, snap: &Snapshot) -> Result<(bool, String, String), String> {
    let (from, to, probe, reason) = match c {
        Check::Reachable { from, to, probe } | Check::Isolated { from, to, probe } => {
            (from, to, probe.as_ref(), None)
        }
        Check::Unreachable {
            from,
            to,
            probe,
            reason,
        } => (from, to, probe.as_ref(), *reason),
        _ => return Err("not a reachability expectation".to_string()),
    };
    let (name, pods, outward) = match (from, to) {
        (pods, PodSet::External(x)) => (x, pods, true),
        (PodSet::External(x), pods) => (x, pods, false),
        _ => return Err("no external in this expectation".to_string()),
    };
    let index = snap
        .externals
        .iter()
        .position(|x| &x.name == name)
        .ok_or_else(|| format!("no external `{name}`"))?;
    let address = snap.externals[index].address();
    let keys = addressed_keys(select(snap, pods)?);
    let what = probe.map_or(String::new(), |p| format!(" on {p}"));
    let expected = match (c, reason) {
        (Check::Reachable { .. }, _) => format!("every connection {from} -> {to} delivered{what}"),
        (_, Some(why)) => format!("no connection {from} -> {to} delivered{what}, every one {why}"),
        _ => format!("no connection {from} -> {to} delivered{what}"),
    };
    if keys.is_empty() {
        return Ok((
            false,
            expected,
            "no pod with an address in this set".to_string(),
        ));
    }
    let policing = snap.policy.as_deref().map(Policing::new);
    let (mut every, mut none) = (0u64, 0u64);
    let mut failures: BTreeMap<String, (u64, PodKey)> = BTreeMap::new();
    let tries = pod_connections(
        snap,
        policing.as_ref(),
        &keys,
        (index, address),
        outward,
        probe,
    );
    for (k, conns) in &tries {
        let conns = match conns {
            Ok(c) => c,
            Err(e) => {
                none += 1;
                failures.entry(e.clone()).or_insert((0, *k)).0 += 1;
                continue;
            }
        };
        let mut delivered = 0usize;
        for conn in conns {
            match conn {
                Ok(ec) if ec.delivered() => delivered += 1,
                Ok(ec) => failures.entry(words(snap, ec)).or_insert((0, *k)).0 += 1,
                Err(e) => failures.entry(e.clone()).or_insert((0, *k)).0 += 1,
            }
        }
        if delivered == conns.len() && delivered > 0 {
            every += 1;
        } else if delivered == 0 {
            none += 1;
        }
    }
    let total = tries.len() as u64;
    let some = total - every - none;
    let mut actual = format!(
        "{every} of {total} pods delivered on every {}, {some} on some",
        if policing.is_some() {
            "packet"
        } else {
            "connection"
        }
    );
    for (w, (count, k)) in &failures {
        actual.push_str(&format!("; {count} {w} (e.g. {})", pod_name(snap, *k)));
    }
    let holds = reach_holds(
        c,
        (every == total, none == total),
        reason.map(|why| why.as_str()),
        failures.keys(),
    );
    Ok((holds, expected, actual))
}

/// One pod's connections to or from an external, one per packet it stands for; `Err` when
/// no packet could be made for it (a named port it does not declare), or for a connection
/// the dataplane cannot follow.
pub type PodConnections = (
    PodKey,
    Result<Vec<Result<ExternalConnection, String>>, String>,
);

/// The connections of each pod of `keys` to (`outward`) or from the external `external` (its
/// index and address): per pod the packets `probe` stands for, or without one every packet
/// class policy tells apart (without enforced policy one connection, an ICMP echo or the
/// probe's packet). Shared by the expectations and the report's `externals` section.
pub fn pod_connections(
    snap: &Snapshot,
    policing: Option<&Policing<'_>>,
    keys: &[PodKey],
    (index, address): (usize, IpAddr),
    outward: bool,
    probe: Option<&Probe>,
) -> Vec<PodConnections> {
    // Per pod, the packets it is judged on: the external stands as a destination without an
    // endpoint (a named port needs a pod that declares it).
    let mut per_pod: Vec<(PodKey, Result<Vec<Packet>, String>)> = Vec::new();
    match policing {
        Some(pol) => {
            let unknown = PodKey(u64::MAX);
            let targets = if outward {
                vec![unknown]
            } else {
                keys.to_vec()
            };
            let (groups, unresolved) = probe_packets(pol, &targets, probe);
            let packets_of = |k: PodKey| {
                let t = if outward { unknown } else { k };
                groups
                    .iter()
                    .find(|(_, ts)| ts.contains(&t))
                    .map(|(ps, _)| ps.clone())
                    .ok_or_else(|| match probe.map(|p| packet_for(p, None)) {
                        Some(Err(e)) if unresolved.contains(&t) => e,
                        _ => "no packet".to_string(),
                    })
            };
            per_pod.extend(keys.iter().map(|&k| (k, packets_of(k))));
        }
        None => {
            let packet = probe
                .and_then(|p| packet_for(p, None).ok())
                .unwrap_or_else(|| Packet::icmp(8, 0));
            per_pod.extend(keys.iter().map(|&k| (k, Ok(vec![packet]))));
        }
    }
    per_pod
        .into_iter()
        .map(|(k, packets)| {
            let conns = packets.map(|packets| {
                packets
                    .iter()
                    .map(|packet| {
                        let conn = if outward {
                            connect_out(
                                &snap.dataplane,
                                policing,
                                Source::Pod(k),
                                index,
                                address,
                                packet,
                                false,
                            )
                        } else {
                            snap.dataplane.pod(k).and_then(|p| {
                                connect_in(
                                    &snap.dataplane,
                                    policing,
                                    index,
                                    address,
                                    p.ip,
                                    packet,
                                    false,
                                )
                            })
                        };
                        conn.ok_or_else(|| "not in the dataplane".to_string())
                    })
                    .collect()
            });
            (k, conns)
        })
        .collect()
}

/// Whether a reachability expectation holds: `reachable` when every try delivered every time,
/// `isolated`/`unreachable` when none ever did and, with a `reason`, every failure (worded
/// with its reason first) has that reason.
pub(super) fn reach_holds<'w>(
    c: &Check,
    (all_every, all_none): (bool, bool),
    reason: Option<&str>,
    failures: impl IntoIterator<Item = &'w String>,
) -> bool {
    match c {
        Check::Reachable { .. } => all_every,
        _ => {
            all_none
                && reason.is_none_or(|why| {
                    failures
                        .into_iter()
                        .all(|w| w.split([' ', '(']).next() == Some(why))
                })
        }
    }
}
