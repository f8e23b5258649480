//! `podnet trace --to svc/NS/NAME` (or `--to` a cluster IP) `--port P`: a connection to a
//! Service, shown as kube-proxy handles it: the DNAT choice and the other backends it could
//! have picked (each with its own verdict), then the chosen connection's policy steps, hops
//! and verdict (SPEC §7, REFERENCE-policy §3.4, §5).

use std::net::IpAddr;

use serde_json::json;

use super::trace::{as_json, name, text};
use super::{Format, TraceArgs, exit};
use crate::forwarding::Source;
use crate::forwarding::connect::{Connection, Policing, verdict_text};
use crate::forwarding::service::{
    Dnat, NoBackend, ServiceConnection, ServiceView, connect_service,
};
use crate::model::TextEnum;
use crate::model::expect::{PortRef, Probe};
use crate::model::service::SessionAffinity;
use crate::policy::eval::Packet;
use crate::policy::model::Protocol;
use crate::sim::Snapshot;

/// The Service `--to` names: `svc/NS/NAME`, or an address that is a Service's cluster IP.
/// `Err` for a `svc/` form that names no Service.
pub fn target<'s>(snap: &'s Snapshot, to: &str) -> Result<Option<&'s ServiceView>, String> {
    if let Some(rest) = to.strip_prefix("svc/") {
        let (ns, name) = rest.split_once('/').unwrap_or(("default", rest));
        return snap
            .services
            .get(ns, name)
            .map(Some)
            .ok_or_else(|| format!("--to: no Service `{ns}/{name}` at this time"));
    }
    Ok(to
        .parse::<IpAddr>()
        .ok()
        .and_then(|ip| snap.services.by_cluster_ip(ip)))
}

/// The packet sent to the Service: `--port` is a Service port number or a Service port name.
pub(super) fn packet(view: &ServiceView, probe: &Probe) -> Result<Packet, String> {
    let s = &view.service;
    let Some(protocol) = Protocol::of_probe(probe.protocol) else {
        return Err("--to a Service needs --port (a Service port number or name)".into());
    };
    let port = match &probe.port {
        Some(PortRef::Number(n)) => *n,
        Some(PortRef::Name(n)) => s
            .ports
            .iter()
            .find(|p| p.name.as_deref() == Some(n.as_str()))
            .map(|p| p.port)
            .ok_or_else(|| {
                format!(
                    "--port: Service {}/{} has no port named `{n}`",
                    s.namespace, s.name
                )
            })?,
        None => return Err("--to a Service needs --port".into()),
    };
    Ok(Packet::with_port(protocol, port))
}

pub fn run(
    args: &TraceArgs,
    snap: &Snapshot,
    source: Source,
    view: &ServiceView,
    probe: &Probe,
) -> i32 {
    let packet = match packet(view, probe) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("{e}");
            return exit::INVALID;
        }
    };
    let policing = snap.policy.as_deref().map(Policing::new);
    let Some(sc) = connect_service(
        &snap.dataplane,
        policing.as_ref(),
        &snap.services,
        view,
        source,
        &packet,
        true,
    ) else {
        eprintln!(
            "--from `{}` is not in the dataplane (a Pending pod or a deleted node?)",
            args.from
        );
        return exit::FAILED;
    };
    let enforced = policing.as_ref().map(|_| &packet);
    match args.format {
        Format::Text => out!("{}", service_text(snap, args, view, &packet, &sc, enforced)),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&service_json(snap, view, &packet, &sc, enforced))
                .unwrap_or_default()
        ),
    }
    if sc.delivered() {
        exit::OK
    } else {
        exit::FAILED
    }
}

fn vip(view: &ServiceView, packet: &Packet) -> String {
    let ip = view
        .cluster_ip
        .map_or_else(|| "None".to_string(), |ip| ip.to_string());
    format!("{ip}:{}", packet)
}

fn short_verdict(snap: &Snapshot, c: &Connection) -> String {
    verdict_text(c, &|d| name(snap, d))
}

fn dnat_lines(
    snap: &Snapshot,
    view: &ServiceView,
    packet: &Packet,
    d: &Dnat,
    sc: &ServiceConnection,
) -> String {
    let s = &view.service;
    let b = &view.backends[d.chosen];
    let target = b.target_ports[d.port_index].unwrap_or(0);
    let mut out = format!(
        "dnat: {} -> {} {}:{target} on {} (one of {} ready endpoint{}{})\n",
        vip(view, packet),
        b.name,
        b.ip,
        name(snap, b.node),
        d.candidates.len(),
        if d.candidates.len() == 1 { "" } else { "s" },
        if s.internal_traffic_policy.as_str() == "Local" {
            " on the client's node: internalTrafficPolicy Local"
        } else {
            ""
        },
    );
    if s.session_affinity == SessionAffinity::ClientIp {
        out.push_str(&format!(
            "  sessionAffinity ClientIP: every connection of this client goes to {} for {}s\n",
            b.name, s.affinity_timeout_seconds
        ));
    } else if d.candidates.len() > 1 {
        out.push_str("  sessionAffinity None: other connections may go to the other endpoints:\n");
    }
    for (i, c) in &sc.others {
        let o = &view.backends[*i];
        out.push_str(&format!(
            "  {:<3} {} {}:{} on {}: {}\n",
            if s.session_affinity == SessionAffinity::ClientIp {
                "(not used)"
            } else {
                "or"
            },
            o.name,
            o.ip,
            o.target_ports[d.port_index].unwrap_or(0),
            name(snap, o.node),
            short_verdict(snap, c)
        ));
    }
    out
}

fn service_text(
    snap: &Snapshot,
    args: &TraceArgs,
    view: &ServiceView,
    packet: &Packet,
    sc: &ServiceConnection,
    enforced: Option<&Packet>,
) -> String {
    let s = &view.service;
    match (&sc.dnat, &sc.chosen) {
        (Ok(d), Some(c)) => {
            let b = &view.backends[d.chosen];
            let mut out = format!("service {}/{} {}\n", s.namespace, s.name, vip(view, packet));
            out.push_str(&dnat_lines(snap, view, packet, d, sc));
            // Policy saw the translated packet: the endpoint's target port.
            let mut translated = *packet;
            translated.port = b.target_ports[d.port_index].unwrap_or(packet.port);
            let shown = enforced.map(|_| &translated);
            out.push_str(&text(snap, &args.from, &b.name, b.ip, c, shown));
            out
        }
        (dnat, _) => {
            let why = match dnat {
                Err(e) => e.to_string(),
                Ok(_) => "the chosen endpoint resolves no target port".to_string(),
            };
            format!(
                "trace {} -> svc/{}/{} ({}) at {}us\nservice {}/{}: {} ready of {} endpoints\nnot delivered: {why}\n",
                args.from,
                s.namespace,
                s.name,
                vip(view, packet),
                snap.time_us,
                s.namespace,
                s.name,
                view.backends.iter().filter(|b| b.ready).count(),
                view.backends.len(),
            )
        }
    }
}

fn service_json(
    snap: &Snapshot,
    view: &ServiceView,
    packet: &Packet,
    sc: &ServiceConnection,
    enforced: Option<&Packet>,
) -> serde_json::Value {
    let s = &view.service;
    let backend = |i: usize, d: &Dnat| {
        let b = &view.backends[i];
        json!({
            "pod": b.name,
            "ip": b.ip.to_string(),
            "port": b.target_ports[d.port_index],
            "node": name(snap, b.node),
        })
    };
    let service = |dnat: serde_json::Value| {
        json!({
            "namespace": s.namespace,
            "name": s.name,
            "clusterIP": view.cluster_ip.map(|ip| ip.to_string()),
            "packet": packet.to_string(),
            "sessionAffinity": s.session_affinity.as_str(),
            "internalTrafficPolicy": s.internal_traffic_policy.as_str(),
            "dnat": dnat,
        })
    };
    match (&sc.dnat, &sc.chosen) {
        (Ok(d), Some(c)) => {
            let mut chosen = backend(d.chosen, d);
            if let Some(obj) = chosen.as_object_mut() {
                obj.insert("delivered".into(), json!(c.verdict.delivered()));
            }
            let others: Vec<serde_json::Value> = sc
                .others
                .iter()
                .map(|(i, c)| {
                    let mut v = backend(*i, d);
                    if let Some(obj) = v.as_object_mut() {
                        obj.insert("delivered".into(), json!(c.verdict.delivered()));
                        obj.insert("reason".into(), json!(c.verdict.reason()));
                        obj.insert("verdict".into(), json!(short_verdict(snap, c)));
                    }
                    v
                })
                .collect();
            let b = &view.backends[d.chosen];
            let mut translated = *packet;
            translated.port = b.target_ports[d.port_index].unwrap_or(packet.port);
            let mut v = as_json(snap, b.ip, c, enforced.map(|_| &translated));
            if let Some(obj) = v.as_object_mut() {
                obj.insert(
                    "service".into(),
                    service(json!({"chosen": chosen, "others": others, "sticky": d.sticky})),
                );
            }
            v
        }
        (dnat, _) => {
            let reason = match dnat {
                Err(NoBackend::NoEndpoints { .. }) | Ok(_) => "no-endpoints",
                Err(NoBackend::NoSuchPort) => "no-such-port",
                Err(NoBackend::Headless) => "headless",
            };
            json!({
                "to": view.cluster_ip.map(|ip| ip.to_string()),
                "timeUs": snap.time_us,
                "delivered": false,
                "reason": reason,
                "detail": match dnat { Err(e) => e.to_string(), Ok(_) => String::new() },
                "hops": [],
                "service": service(serde_json::Value::Null),
            })
        }
    }
}
