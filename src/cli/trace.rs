//! `podnet trace`: one packet's path, hop by hop, with the FIB entry that matched at each
//! device, the encapsulation, and the verdict.

use std::net::IpAddr;

use serde_json::json;

use super::common::with_state_at;
use super::{Format, TraceArgs, exit};
use crate::forwarding::{Action, FibEntry, Source, Trace, Verdict, trace};
use crate::sim::Snapshot;

pub fn run(args: &TraceArgs) -> i32 {
    with_state_at(&args.scenario, args.at.as_deref(), |_, world, snap| {
        let dp = &snap.dataplane;
        let topo = &world.topology;
        let source = match resolve(snap, topo, &args.from) {
            Some(Endpoint::Pod(key, _)) => Source::Pod(key),
            Some(Endpoint::Device(d, _)) => Source::Device(d),
            Some(Endpoint::Address(ip)) => match dp.device_by_address(ip) {
                Some(d) => Source::Device(d),
                None => match dp.pod_by_ip(ip) {
                    Some(p) => Source::Pod(p.key),
                    None => {
                        eprintln!("--from: no pod or device has the address {ip}");
                        return exit::INVALID;
                    }
                },
            },
            None => {
                eprintln!("--from: no pod, node, device or address `{}`", args.from);
                return exit::INVALID;
            }
        };
        let to = match resolve(snap, topo, &args.to) {
            Some(Endpoint::Pod(_, Some(ip))) | Some(Endpoint::Address(ip)) => ip,
            Some(Endpoint::Device(_, ip)) => ip,
            Some(Endpoint::Pod(_, None)) => {
                eprintln!("--to: pod `{}` has no address (it is Pending)", args.to);
                return exit::FAILED;
            }
            None => {
                eprintln!("--to: no pod, node, device or address `{}`", args.to);
                return exit::INVALID;
            }
        };
        let Some(t) = trace(dp, source, to) else {
            eprintln!(
                "--from `{}` is not in the dataplane (a Pending pod or a deleted node?)",
                args.from
            );
            return exit::FAILED;
        };
        match args.format {
            Format::Text => out!("{}", text(snap, &args.from, &args.to, to, &t)),
            Format::Json => outln!(
                "{}",
                serde_json::to_string_pretty(&as_json(snap, to, &t)).unwrap_or_default()
            ),
        }
        if t.delivered() {
            exit::OK
        } else {
            exit::FAILED
        }
    })
}

enum Endpoint {
    Pod(crate::forwarding::PodKey, Option<IpAddr>),
    Device(crate::model::topology::DeviceId, IpAddr),
    Address(IpAddr),
}

/// A pod name, `namespace/pod`, a node or router name, or an IP address.
fn resolve(
    snap: &Snapshot,
    topo: &crate::model::topology::Topology,
    text: &str,
) -> Option<Endpoint> {
    if let Ok(ip) = text.parse::<IpAddr>() {
        return Some(Endpoint::Address(ip));
    }
    let pod = match text.split_once('/') {
        Some((ns, name)) => snap
            .pods
            .iter()
            .find(|p| p.namespace == ns && p.name == name),
        None => snap.pods.iter().find(|p| p.name == text),
    };
    if let Some(p) = pod {
        return Some(Endpoint::Pod(
            p.key,
            p.ip.as_deref().and_then(|i| i.parse().ok()),
        ));
    }
    let d = topo.device_by_name(text)?;
    Some(Endpoint::Device(d, topo.device(d).address))
}

fn name(snap: &Snapshot, d: crate::model::topology::DeviceId) -> String {
    snap.devices
        .get(d.index())
        .cloned()
        .unwrap_or_else(|| format!("device#{}", d.0))
}

/// An entry as `ip route` would show it.
pub fn entry_text(snap: &Snapshot, e: &FibEntry) -> String {
    match &e.action {
        Action::Local(_) => format!("{} dev cali (local pod)", e.prefix),
        Action::Connected(_) => format!("{} dev eth0 scope link", e.prefix),
        Action::Via { next_hop, device } => {
            format!("{} via {next_hop} ({})", e.prefix, name(snap, *device))
        }
        Action::Tunnel {
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
        Action::Blackhole => format!("blackhole {}", e.prefix),
    }
}

fn tunnel_dev(encap: &str) -> &'static str {
    if encap == "vxlan" {
        "vxlan.calico"
    } else {
        "tunl0"
    }
}

fn verdict_text(snap: &Snapshot, v: &Verdict) -> String {
    match v {
        Verdict::Delivered => "delivered".to_string(),
        Verdict::Dropped { reason, at } => {
            format!("not delivered: {reason} at {}", name(snap, *at))
        }
    }
}

fn text(snap: &Snapshot, from: &str, to_text: &str, to: IpAddr, t: &Trace) -> String {
    let mut out = format!("trace {from} -> {to_text} ({to}) at {}us\n", snap.time_us);
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
        out.push('\n');
    }
    out.push_str(&verdict_text(snap, &t.verdict));
    out.push('\n');
    out
}

fn as_json(snap: &Snapshot, to: IpAddr, t: &Trace) -> serde_json::Value {
    let (delivered, reason, stopped_at) = match &t.verdict {
        Verdict::Delivered => (true, None, None),
        Verdict::Dropped { reason, at } => (false, Some(reason.as_str()), Some(name(snap, *at))),
    };
    json!({
        "to": to.to_string(),
        "timeUs": snap.time_us,
        "delivered": delivered,
        "reason": reason,
        "stoppedAt": stopped_at,
        "encapsulation": t.encapsulation().map_or("none", |e| e.as_str()),
        "hops": t.hops.iter().map(|h| json!({
            "device": name(snap, h.device),
            "entry": h.entry.as_ref().map(|e| entry_text(snap, e)),
            "outer": h.outer.as_ref().map(|o| json!({"encapsulation": o.encap.as_str(), "src": o.src.to_string(), "dst": o.dst.to_string()})),
        })).collect::<Vec<_>>(),
    })
}
