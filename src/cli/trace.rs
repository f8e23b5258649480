//! `podnet trace`: one packet's path, hop by hop, with the FIB entry that matched at each
//! device, the encapsulation, and the verdict.

use std::net::IpAddr;

use serde_json::json;

use super::common::with_state_at;
use super::{Format, TraceArgs, exit};
use crate::forwarding::connect::{
    Connection, ConnectionVerdict, Policing, PolicyCheck, connect, packet_for, verdict_text,
};
use crate::forwarding::{FibAction, FibEntry, Source};
use crate::model::TextEnum;
use crate::model::expect::{PortRef, Probe, ProbeProtocol};
use crate::policy::eval::{Packet, explain_lines};
use crate::sim::Snapshot;

pub fn run(args: &TraceArgs) -> i32 {
    with_state_at(&args.scenario, args.at.as_deref(), |_, world, snap| {
        let dp = &snap.dataplane;
        let topo = &world.topology;
        if let Some(code) = super::trace_external::run(args, snap, topo) {
            return code;
        }
        let source = match source(snap, topo, &args.from) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("{e}");
                return exit::INVALID;
            }
        };
        match super::trace_service::target(snap, &args.to) {
            Err(e) => {
                eprintln!("{e}");
                return exit::INVALID;
            }
            Ok(Some(view)) => {
                return match probe(args) {
                    Ok(p) => super::trace_service::run(args, snap, source, view, &p),
                    Err(e) => {
                        eprintln!("{e}");
                        exit::INVALID
                    }
                };
            }
            Ok(None) => {}
        }
        let to = match resolve(snap, topo, &args.to) {
            Some(Named::Pod(_, Some(ip))) | Some(Named::Address(ip)) => ip,
            Some(Named::Device(_, ip)) => ip,
            Some(Named::Pod(_, None)) => {
                eprintln!("--to: pod `{}` has no address (it is Pending)", args.to);
                return exit::FAILED;
            }
            None => {
                eprintln!("--to: no pod, node, device or address `{}`", args.to);
                return exit::INVALID;
            }
        };
        let policing = snap.policy.as_deref().map(Policing::new);
        let packet = match probe(args) {
            Err(e) => {
                eprintln!("{e}");
                return exit::INVALID;
            }
            Ok(probe) => {
                let dst = policing.as_ref().and_then(|p| p.endpoint_at(to));
                match packet_for(&probe, dst) {
                    Ok(packet) => packet,
                    Err(e) if policing.is_some() => {
                        eprintln!("--port: {e}");
                        return exit::INVALID;
                    }
                    // Without policy the packet's ports do not matter.
                    Err(_) => Packet::icmp(8, 0),
                }
            }
        };
        let Some(c) = connect(dp, policing.as_ref(), source, to, &packet, true) else {
            eprintln!(
                "--from `{}` is not in the dataplane (a Pending pod or a deleted node?)",
                args.from
            );
            return exit::FAILED;
        };
        let enforced = policing.is_some().then_some(&packet);
        match args.format {
            Format::Text => out!("{}", text(snap, &args.from, &args.to, to, &c, enforced)),
            Format::Json => outln!(
                "{}",
                serde_json::to_string_pretty(&as_json(snap, to, &c, enforced)).unwrap_or_default()
            ),
        }
        if c.verdict.delivered() {
            exit::OK
        } else {
            exit::FAILED
        }
    })
}

/// Where `--from` starts: a pod, a device, or the pod or device holding an address.
pub(super) fn source(
    snap: &Snapshot,
    topo: &crate::model::topology::Topology,
    from: &str,
) -> Result<Source, String> {
    let dp = &snap.dataplane;
    match resolve(snap, topo, from) {
        Some(Named::Pod(key, _)) => Ok(Source::Pod(key)),
        Some(Named::Device(d, _)) => Ok(Source::Device(d)),
        Some(Named::Address(ip)) => match dp.device_by_address(ip) {
            Some(d) => Ok(Source::Device(d)),
            None => match dp.pod_by_ip(ip) {
                Some(p) => Ok(Source::Pod(p.key)),
                None => Err(format!("--from: no pod or device has the address {ip}")),
            },
        },
        None => Err(format!(
            "--from: no pod, node, device, external or address `{from}`"
        )),
    }
}

/// The probe the flags describe: a port (TCP unless `--protocol` says otherwise), an ICMP
/// type, or by default an ICMP echo request.
pub(super) fn probe(args: &TraceArgs) -> Result<Probe, String> {
    let protocol = match args.protocol.as_deref() {
        Some(p) => {
            ProbeProtocol::from_text(p).ok_or_else(|| format!("--protocol: unknown `{p}`"))?
        }
        None if args.port.is_some() => ProbeProtocol::Tcp,
        None => ProbeProtocol::Icmp,
    };
    let port = args.port.as_deref().map(|p| match p.parse::<u16>() {
        Ok(n) => PortRef::Number(n),
        Err(_) => PortRef::Name(p.to_string()),
    });
    match (protocol, &port) {
        (ProbeProtocol::Icmp, Some(_)) => {
            return Err("--port: ICMP has no ports; use --icmp-type".into());
        }
        (ProbeProtocol::Icmp, None) => {}
        (_, None) => return Err(format!("--protocol {protocol} needs --port")),
        _ if args.icmp_type.is_some() || args.icmp_code.is_some() => {
            return Err("--icmp-type and --icmp-code are for --protocol ICMP".into());
        }
        _ => {}
    }
    Ok(Probe {
        protocol,
        port,
        icmp_type: args.icmp_type,
        icmp_code: args.icmp_code,
    })
}

/// What `--from`/`--to` names: a pod (with its address, if it has one), a device, or an address.
pub(super) enum Named {
    Pod(crate::forwarding::PodKey, Option<IpAddr>),
    Device(crate::model::topology::DeviceId, IpAddr),
    Address(IpAddr),
}

/// A pod name, `namespace/pod`, a node or router name, or an IP address.
pub(super) fn resolve(
    snap: &Snapshot,
    topo: &crate::model::topology::Topology,
    text: &str,
) -> Option<Named> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(Named::Address(ip));
    }
    let pod = match text.split_once('/') {
        Some((ns, name)) => snap
            .pods
            .iter()
            .find(|p| *p.namespace == *ns && p.name == name),
        None => snap.pods.iter().find(|p| p.name == text),
    };
    if let Some(p) = pod {
        return Some(Named::Pod(p.key, p.ip));
    }
    let d = topo.device_by_name(text)?;
    Some(Named::Device(d, topo.device(d).address))
}

pub(super) fn name(snap: &Snapshot, d: crate::model::topology::DeviceId) -> String {
    snap.devices
        .get(d.index())
        .cloned()
        .unwrap_or_else(|| format!("device#{}", d.0))
}

/// An entry as `ip route` would show it.
pub fn entry_text(snap: &Snapshot, e: &FibEntry) -> String {
    match &e.action {
        FibAction::Local(_) => format!("{} dev cali (local pod)", e.prefix),
        FibAction::Connected(_) => format!("{} dev eth0 scope link", e.prefix),
        FibAction::Via { next_hop, device } => {
            format!("{} via {next_hop} ({})", e.prefix, name(snap, *device))
        }
        FibAction::Tunnel {
            encap,
            remote,
            device,
        } => {
            format!(
                "{} via {remote} ({}) dev {} onlink",
                e.prefix,
                name(snap, *device),
                tunnel_dev(encap.as_str())
            )
        }
        FibAction::Blackhole => format!("blackhole {}", e.prefix),
        FibAction::External(i) => format!(
            "{} dev uplink (out of the fabric to external {})",
            e.prefix,
            snap.externals
                .get(*i as usize)
                .map_or("?", |x| x.name.as_str())
        ),
    }
}

fn tunnel_dev(encap: &str) -> &'static str {
    if encap == "vxlan" {
        "vxlan.calico"
    } else {
        "tunl0"
    }
}

fn check_lines(out: &mut String, c: &PolicyCheck) {
    out.push_str(&format!("{} policy of {}:\n", c.side.as_str(), c.endpoint));
    for line in explain_lines(&c.steps) {
        out.push_str(&format!("  {line}\n"));
    }
}

pub(super) fn text(
    snap: &Snapshot,
    from: &str,
    to_text: &str,
    to: IpAddr,
    c: &Connection,
    packet: Option<&Packet>,
) -> String {
    let mut out = format!(
        "trace {from} -> {to_text} ({to}) at {}\n",
        crate::report::sections::time(snap.time_us)
    );
    out.push_str(&policy_lines(c, packet));
    if let Some(t) = &c.trace {
        out.push_str(&hop_lines(snap, t, &|_| None));
    }
    if c.verdict.delivered() {
        out.push_str("delivered\n");
    } else {
        out.push_str(&format!(
            "not delivered: {}\n",
            verdict_text(c, &|d| name(snap, d))
        ));
    }
    out
}

/// The packet and the policy checks of a connection (nothing without enforced policy).
pub(super) fn policy_lines(c: &Connection, packet: Option<&Packet>) -> String {
    let mut out = String::new();
    if let Some(p) = packet {
        out.push_str(&format!("packet: {p}\n"));
        match &c.egress {
            Some(e) => check_lines(&mut out, e),
            None => out.push_str("egress policy: none (the sender is not a workload endpoint)\n"),
        }
        match &c.ingress {
            Some(i) => check_lines(&mut out, i),
            None if c.egress.as_ref().is_some_and(|e| !e.outcome.allowed) => {
                out.push_str("ingress policy: not reached\n")
            }
            None if c.trace.as_ref().is_some_and(|t| t.delivered()) => out.push_str(
                "ingress policy: none (not a workload endpoint, or host-to-local traffic)\n",
            ),
            None => out.push_str("ingress policy: not reached\n"),
        }
    }
    out
}

/// A walk's hops, one line each (number, device, matched entry, outer header), with `note`'s
/// words for a hop appended (e.g. an SNAT).
pub(super) fn hop_lines(
    snap: &Snapshot,
    t: &crate::forwarding::Trace,
    note: &dyn Fn(usize) -> Option<String>,
) -> String {
    let mut out = String::new();
    {
        for (i, hop) in t.hops.iter().enumerate() {
            let entry = hop
                .entry
                .as_ref()
                .map_or("-".to_string(), |e| entry_text(snap, e));
            out.push_str(&format!(
                "{:>3}  {:<20} {entry}",
                i + 1,
                name(snap, hop.device)
            ));
            if let Some(o) = &hop.outer {
                out.push_str(&format!("  [{} {} -> {}]", o.encap.as_str(), o.src, o.dst));
            }
            if let Some(n) = note(i) {
                out.push_str(&format!("  {n}"));
            }
            out.push('\n');
        }
    }
    out
}

fn check_json(c: &PolicyCheck) -> serde_json::Value {
    json!({
        "endpoint": c.endpoint,
        "allowed": c.outcome.allowed,
        "tier": c.outcome.by.tier(),
        "policy": c.outcome.by.policy(),
        "rule": c.outcome.by.rule_text(),
        "steps": explain_lines(&c.steps),
    })
}

pub(super) fn as_json(
    snap: &Snapshot,
    to: IpAddr,
    c: &Connection,
    packet: Option<&Packet>,
) -> serde_json::Value {
    let hops = c.trace.as_ref().map_or(&[][..], |t| &t.hops[..]);
    let mut v = json!({
        "to": to.to_string(),
        "timeUs": snap.time_us,
        "delivered": c.verdict.delivered(),
        "reason": c.verdict.reason(),
        "stoppedAt": c.verdict.stopped_at().map(|d| name(snap, d)),
        "encapsulation": c.trace.as_ref().and_then(|t| t.encapsulation()).map_or("none", |e| e.as_str()),
        "hops": hops.iter().map(|h| json!({
            "device": name(snap, h.device),
            "entry": h.entry.as_ref().map(|e| entry_text(snap, e)),
            "outer": h.outer.as_ref().map(|o| json!({"encapsulation": o.encap.as_str(), "src": o.src.to_string(), "dst": o.dst.to_string()})),
        })).collect::<Vec<_>>(),
    });
    if let (Some(p), Some(obj)) = (packet, v.as_object_mut()) {
        obj.insert("packet".into(), json!(p.to_string()));
        if let ConnectionVerdict::PolicyDenied(d) = &c.verdict {
            obj.insert("side".into(), json!(d.side.as_str()));
            obj.insert("tier".into(), json!(d.by.tier()));
            obj.insert("policy".into(), json!(d.by.policy()));
            obj.insert("rule".into(), json!(d.by.rule_text()));
        }
        obj.insert(
            "egress".into(),
            c.egress
                .as_ref()
                .map_or(serde_json::Value::Null, check_json),
        );
        obj.insert(
            "ingress".into(),
            c.ingress
                .as_ref()
                .map_or(serde_json::Value::Null, check_json),
        );
    }
    v
}
