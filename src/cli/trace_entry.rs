//! `podnet trace --from EXTERNAL --to svc/NS/NAME --port P` (or `--to` one of the Service's
//! addresses): a connection from outside the cluster to a Service address advertised over
//! BGP, step by step: the hops from the external's router to the node the fabric chose, the
//! advertising nodes, kube-proxy's translation there (the endpoint chosen, the other
//! candidates, the SNAT to the node or the preserved source), the hops to the endpoint, its
//! ingress policy, the reply, and the verdict (`not-advertised` when the external's router
//! never learned the address).

use std::net::IpAddr;

use serde_json::json;

use super::trace::{hop_lines, name, policy_lines, probe};
use super::{Format, TraceArgs, exit};
use crate::forwarding::advertise::advertisers;
use crate::forwarding::connect::{Connection, ConnectionVerdict, Policing};
use crate::forwarding::service::{NoBackend, ServiceView};
use crate::forwarding::service_entry::{
    EntryRequest, Fork, Inbound, Leg, ServiceEntry, entry_address, service_at,
};
use crate::forwarding::{Trace, Verdict};
use crate::model::TextEnum;
use crate::model::topology::DeviceId;
use crate::policy::eval::Packet;
use crate::sim::Snapshot;
use crate::sim::service_entry_expect::words;

/// Traces from the external `external` when `--to` is a Service or one of its addresses;
/// `None` when it is neither.
pub fn run(args: &TraceArgs, snap: &Snapshot, external: usize) -> Option<i32> {
    let fail = |e: String| {
        eprintln!("{e}");
        Some(exit::INVALID)
    };
    let (view, address) = match super::trace_service::target(snap, &args.to) {
        Err(e) => return fail(e),
        Ok(Some(view)) => match args.to.parse::<IpAddr>() {
            Ok(ip) => (view, ip),
            Err(_) => match entry_address(view) {
                Some((_, ip)) => (view, ip),
                None => {
                    return fail(format!(
                        "--to: Service {}/{} is headless: it has no address to reach",
                        view.service.namespace, view.service.name
                    ));
                }
            },
        },
        Ok(None) => {
            let ip = args.to.parse::<IpAddr>().ok()?;
            (service_at(&snap.services, ip)?.0, ip)
        }
    };
    let probe = match probe(args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let packet = match super::trace_service::packet(view, &probe) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let policing = snap.policy.as_deref().map(Policing::new);
    let client = snap.externals[external].address();
    let request = EntryRequest {
        dp: &snap.dataplane,
        policing: policing.as_ref(),
        table: &snap.services,
        from: (external, client),
        address,
        packet: &packet,
        explain: true,
    };
    let Some(e) = request.hashed() else {
        return fail(format!("--to: {address} is no address of a Service"));
    };
    // With fabric ECMP, every branch of the walk in, each to its own node.
    let paths = if e.forks.is_empty() {
        Vec::new()
    } else {
        EntryRequest {
            explain: false,
            ..request
        }
        .every_path()
        .unwrap_or_default()
    };
    let enforced = policing.is_some().then_some(&packet);
    match args.format {
        Format::Text => out!(
            "{}{}",
            text(snap, args, view, &e, enforced),
            ecmp_lines(snap, &paths)
        ),
        Format::Json => {
            let mut v = to_json(snap, view, &e);
            v["ecmp"] = ecmp_json(snap, &e, &paths);
            outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default())
        }
    }
    Some(if e.verdict().delivered() {
        exit::OK
    } else {
        exit::FAILED
    })
}

/// `ecmp at R: N equal-cost next hops A, B, C; the flow hash picks B`.
fn fork_line(snap: &Snapshot, f: &Fork) -> String {
    let hops: Vec<String> = f.options.iter().map(|d| name(snap, *d)).collect();
    format!(
        "ecmp at {}: {} equal-cost next hops {}; the flow hash picks {}\n",
        name(snap, f.at),
        f.options.len(),
        hops.join(", "),
        hops[f.hashed]
    )
}

/// The branches a connection may take: the devices each fork sends it to.
fn branch_name(snap: &Snapshot, e: &ServiceEntry) -> String {
    e.forks
        .iter()
        .map(|f| name(snap, f.options[f.picked]))
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Every ECMP branch with its verdict, and how many deliver; empty without forks.
fn ecmp_lines(snap: &Snapshot, paths: &[ServiceEntry]) -> String {
    if paths.len() < 2 {
        return String::new();
    }
    let mut out = String::new();
    let delivered = paths.iter().filter(|p| p.verdict().delivered()).count();
    for (i, p) in paths.iter().enumerate() {
        let mark = if p.hashed() { " (the flow hash's)" } else { "" };
        out.push_str(&format!(
            "ecmp path {} of {} via {}{mark}: {}\n",
            i + 1,
            paths.len(),
            branch_name(snap, p),
            words(snap, &p.verdict())
        ));
    }
    out.push_str(&format!(
        "delivered on {delivered} of {} ECMP paths\n",
        paths.len()
    ));
    out
}

fn ecmp_json(snap: &Snapshot, e: &ServiceEntry, paths: &[ServiceEntry]) -> serde_json::Value {
    json!({
        "forks": e.forks.iter().map(|f| json!({
            "at": name(snap, f.at),
            "nextHops": f.options.iter().map(|d| name(snap, *d)).collect::<Vec<_>>(),
            "hashed": name(snap, f.options[f.hashed]),
        })).collect::<Vec<_>>(),
        "paths": paths.iter().map(|p| json!({
            "via": p.forks.iter().map(|f| name(snap, f.options[f.picked])).collect::<Vec<_>>(),
            "hashed": p.hashed(),
            "delivered": p.verdict().delivered(),
            "verdict": words(snap, &p.verdict()),
        })).collect::<Vec<_>>(),
    })
}

fn node_names(snap: &Snapshot, nodes: &[DeviceId]) -> String {
    nodes
        .iter()
        .map(|d| name(snap, *d))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `advertised as P by a, b` or `advertised by no node`.
fn advertised_line(snap: &Snapshot, address: IpAddr, forks: bool) -> String {
    match advertisers(&snap.service_routes, address) {
        Some((prefix, nodes)) => format!(
            "advertised as {prefix} by {} ({})",
            node_names(snap, &nodes),
            if forks {
                "routers with equal-cost paths spread flows over them: see the ecmp lines"
            } else {
                "one best route per prefix on the way in: no equal-cost paths"
            }
        ),
        None => "advertised by no node".to_string(),
    }
}

fn leg_lines(snap: &Snapshot, view: &ServiceView, leg: &Leg, packet: Option<&Packet>) -> String {
    let b = &view.backends[leg.backend];
    let mut out = format!("to endpoint {} ({}):\n", b.name, b.ip);
    let conn = Connection {
        egress: None,
        trace: None,
        ingress: leg.ingress.clone(),
        verdict: leg.verdict.clone(),
    };
    out.push_str(&hop_lines(snap, &leg.trace, &|_| None));
    out.push_str(&policy_lines(&conn, packet));
    for r in &leg.reply {
        out.push_str(&format!("reply towards {}:\n", reply_target(snap, r)));
        out.push_str(&hop_lines(snap, r, &|_| None));
    }
    out
}

fn reply_target(snap: &Snapshot, t: &Trace) -> String {
    match t.verdict {
        Verdict::Delivered => t
            .hops
            .last()
            .map_or("?".to_string(), |h| name(snap, h.device)),
        Verdict::Dropped { reason, at } => format!("lost: {reason} at {}", name(snap, at)),
    }
}

fn text(
    snap: &Snapshot,
    args: &TraceArgs,
    view: &ServiceView,
    e: &ServiceEntry,
    packet: Option<&Packet>,
) -> String {
    let ext = &snap.externals[e.external];
    let s = &view.service;
    let mut out = format!(
        "trace {} -> {} ({} {} of Service {}/{}) at {}\n",
        args.from,
        args.to,
        e.kind.as_str(),
        e.address,
        s.namespace,
        s.name,
        crate::report::sections::time(snap.time_us)
    );
    out.push_str(&format!(
        "from external {} ({}, source {}) entering at {}\n",
        ext.name,
        ext.cidr,
        e.client,
        name(snap, ext.attach)
    ));
    out.push_str(&format!(
        "{}\n",
        advertised_line(snap, e.address, !e.forks.is_empty())
    ));
    let inbound = Trace {
        hops: e.inbound.clone(),
        verdict: match &e.entered {
            Inbound::Node(_) => Verdict::Delivered,
            Inbound::Lost { reason, at } => Verdict::Dropped {
                reason: *reason,
                at: *at,
            },
            Inbound::NotAdvertised { at } => Verdict::Dropped {
                reason: crate::forwarding::Reason::NoRoute,
                at: *at,
            },
        },
    };
    out.push_str(&hop_lines(snap, &inbound, &|_| None));
    for f in &e.forks {
        out.push_str(&fork_line(snap, f));
    }
    if let (Inbound::Node(node), Some(d)) = (&e.entered, &e.dnat) {
        let policy = match e.kind {
            crate::forwarding::advertise::ServiceIpKind::Cluster => format!(
                "internalTrafficPolicy {}",
                s.internal_traffic_policy.as_str()
            ),
            _ => format!(
                "externalTrafficPolicy {}",
                s.external_traffic_policy.as_str()
            ),
        };
        match d {
            Ok(d) => {
                let chosen = &view.backends[d.chosen];
                let others: Vec<&str> = d
                    .candidates
                    .iter()
                    .filter(|i| **i != d.chosen)
                    .map(|i| view.backends[*i].name.as_str())
                    .collect();
                out.push_str(&format!(
                    "dnat at {} ({policy}): {} -> {} ({}){}\n",
                    name(snap, *node),
                    e.address,
                    chosen.ip,
                    chosen.name,
                    if others.is_empty() {
                        String::new()
                    } else {
                        format!("; other candidates: {}", others.join(", "))
                    }
                ));
                out.push_str(&match e.snat {
                    Some(a) => format!("snat {} -> {a} (kube-proxy masquerade)\n", e.client),
                    None => format!("source {} preserved\n", e.client),
                });
            }
            Err(NoBackend::NoEndpoints { .. }) => {
                out.push_str(&format!("dnat at {} ({policy}): none\n", name(snap, *node)));
            }
            Err(other) => out.push_str(&format!("dnat at {}: {other}\n", name(snap, *node))),
        }
    }
    if let Some(leg) = &e.chosen {
        out.push_str(&leg_lines(snap, view, leg, packet));
    }
    for leg in &e.others {
        let v = match &leg.verdict {
            ConnectionVerdict::Delivered => "delivered".to_string(),
            v => words(
                snap,
                &crate::forwarding::service_entry::EntryVerdict::Failed(v.clone()),
            ),
        };
        out.push_str(&format!(
            "other candidate {}: {v}\n",
            view.backends[leg.backend].name
        ));
    }
    let v = e.verdict();
    if v.delivered() {
        out.push_str("delivered\n");
    } else {
        out.push_str(&format!("not delivered: {}\n", words(snap, &v)));
    }
    out
}

fn to_json(snap: &Snapshot, view: &ServiceView, e: &ServiceEntry) -> serde_json::Value {
    let v = e.verdict();
    let hops = |hops: &[crate::forwarding::Hop]| -> Vec<String> {
        hops.iter().map(|h| name(snap, h.device)).collect()
    };
    let leg = |l: &Leg| {
        json!({
            "endpoint": view.backends[l.backend].name,
            "ip": view.backends[l.backend].ip.to_string(),
            "hops": hops(&l.trace.hops),
            "delivered": l.verdict == ConnectionVerdict::Delivered,
            "reply": l.reply.iter().map(|r| json!({"hops": hops(&r.hops), "delivered": r.delivered()})).collect::<Vec<_>>(),
        })
    };
    let advertised = advertisers(&snap.service_routes, e.address).map(|(p, nodes)| {
        json!({"prefix": p.to_string(), "nodes": nodes.iter().map(|d| name(snap, *d)).collect::<Vec<_>>()})
    });
    json!({
        "service": format!("{}/{}", view.service.namespace, view.service.name),
        "address": e.address.to_string(),
        "addressKind": e.kind.as_str(),
        "external": snap.externals[e.external].name,
        "source": e.client.to_string(),
        "advertised": advertised,
        "inbound": hops(&e.inbound),
        "node": match &e.entered { Inbound::Node(n) => Some(name(snap, *n)), _ => None },
        "snat": e.snat.map(|a| a.to_string()),
        "chosen": e.chosen.as_ref().map(leg),
        "others": e.others.iter().map(leg).collect::<Vec<_>>(),
        "delivered": v.delivered(),
        "reason": v.reason(),
        "stoppedAt": v.stopped_at().map(|d| name(snap, d)),
        "verdict": words(snap, &v),
    })
}
