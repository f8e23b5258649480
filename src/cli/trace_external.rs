//! `podnet trace --to EXTERNAL` and `--from EXTERNAL` (SPEC §7): a connection between the
//! cluster and a place outside it, shown step by step: the policy checks, the first packet's
//! hops with natOutgoing's SNAT on the hop where it happens, the reply's hops back, and the
//! verdict, which says whether the reply came back to the node (SNAT) or to the pod address
//! routed by the fabric.

use std::net::IpAddr;

use serde_json::json;

use super::trace::{as_json, hop_lines, name, policy_lines, probe, resolve, source};
use super::{Format, TraceArgs, exit};
use crate::forwarding::connect::{Policing, packet_for};
use crate::forwarding::external::{ExternalConnection, Way, connect_in, connect_out};
use crate::model::topology::Topology;
use crate::policy::eval::Packet;
use crate::sim::Snapshot;
use crate::sim::external_expect::words;

fn external_named(snap: &Snapshot, text: &str) -> Option<usize> {
    snap.externals.iter().position(|x| x.name == text)
}

/// Traces when `--from` or `--to` names an external; `None` otherwise (an ordinary trace).
pub fn run(args: &TraceArgs, snap: &Snapshot, topo: &Topology) -> Option<i32> {
    let to_ext = external_named(snap, &args.to);
    let from_ext = external_named(snap, &args.from);
    if to_ext.is_none() && from_ext.is_none() {
        return None;
    }
    let fail = |e: String| {
        eprintln!("{e}");
        Some(exit::INVALID)
    };
    let probe = match probe(args) {
        Ok(p) => p,
        Err(e) => return fail(e),
    };
    let policing = snap.policy.as_deref().map(Policing::new);
    let dp = &snap.dataplane;
    let (conn, packet, to_ip) = match (from_ext, to_ext) {
        (Some(_), Some(_)) => {
            return fail(
                "--from and --to are both externals: that traffic never crosses the cluster".into(),
            );
        }
        (None, Some(x)) => {
            let from = match source(snap, topo, &args.from) {
                Ok(s) => s,
                Err(e) => return fail(e),
            };
            let packet = match packet_for(&probe, None) {
                Ok(p) => p,
                Err(_) if policing.is_none() => Packet::icmp(8, 0),
                Err(e) => return fail(format!("--port: {e}")),
            };
            let to = snap.externals[x].address();
            let c = connect_out(dp, policing.as_ref(), from, x, to, &packet, true);
            (c, packet, to)
        }
        (Some(x), None) => {
            if let Some(code) = super::trace_entry::run(args, snap, x) {
                return Some(code);
            }
            let to = match resolve(snap, topo, &args.to) {
                Some(super::trace::Named::Pod(_, Some(ip)))
                | Some(super::trace::Named::Address(ip))
                | Some(super::trace::Named::Device(_, ip)) => ip,
                Some(super::trace::Named::Pod(_, None)) => {
                    eprintln!("--to: pod `{}` has no address (it is Pending)", args.to);
                    return Some(exit::FAILED);
                }
                None => {
                    return fail(format!(
                        "--to: no pod, node, device or address `{}`",
                        args.to
                    ));
                }
            };
            let dst = policing.as_ref().and_then(|p| p.endpoint_at(to));
            let packet = match packet_for(&probe, dst) {
                Ok(p) => p,
                Err(_) if policing.is_none() => Packet::icmp(8, 0),
                Err(e) => return fail(format!("--port: {e}")),
            };
            let src = snap.externals[x].address();
            let c = connect_in(dp, policing.as_ref(), x, src, to, &packet, true);
            (c, packet, to)
        }
        (None, None) => return None,
    };
    let Some(c) = conn else {
        eprintln!(
            "--from `{}` is not in the dataplane (a Pending pod or a deleted node?)",
            args.from
        );
        return Some(exit::FAILED);
    };
    let enforced = policing.is_some().then_some(&packet);
    match args.format {
        Format::Text => out!("{}", text(snap, args, to_ip, &c, enforced)),
        Format::Json => outln!(
            "{}",
            serde_json::to_string_pretty(&to_json(snap, to_ip, &c, enforced)).unwrap_or_default()
        ),
    }
    Some(if c.delivered() {
        exit::OK
    } else {
        exit::FAILED
    })
}

fn snat_note(c: &ExternalConnection) -> Option<String> {
    c.snat
        .map(|s| format!("snat {} -> {} (natOutgoing pool {})", s.from, s.to, s.pool))
}

fn text(
    snap: &Snapshot,
    args: &TraceArgs,
    to: IpAddr,
    c: &ExternalConnection,
    packet: Option<&Packet>,
) -> String {
    let ext = &snap.externals[c.external];
    let mut out = format!(
        "trace {} -> {} ({to}) at {}\n",
        args.from,
        args.to,
        crate::report::sections::time(snap.time_us)
    );
    out.push_str(&match c.way {
        Way::Out => format!(
            "external {} ({}) attached to {}\n",
            ext.name,
            ext.cidr,
            name(snap, ext.attach)
        ),
        Way::In => format!(
            "from external {} ({}, source {}) entering at {}\n",
            ext.name,
            ext.cidr,
            c.reply_to,
            name(snap, ext.attach)
        ),
    });
    out.push_str(&policy_lines(&c.connection, packet));
    if let Some(t) = &c.connection.trace {
        let note = snat_note(c);
        out.push_str(&hop_lines(snap, t, &|i| {
            if i == 0 { note.clone() } else { None }
        }));
    }
    if let Some(r) = &c.reply {
        out.push_str(&format!("reply to {}:\n", c.reply_to));
        out.push_str(&hop_lines(snap, r, &|_| None));
    }
    if c.delivered() {
        out.push_str(&format!("{}\n", words(snap, c)));
    } else {
        out.push_str(&format!("not delivered: {}\n", words(snap, c)));
    }
    out
}

fn to_json(
    snap: &Snapshot,
    to: IpAddr,
    c: &ExternalConnection,
    packet: Option<&Packet>,
) -> serde_json::Value {
    let mut v = as_json(snap, to, &c.connection, packet);
    let ext = &snap.externals[c.external];
    let verdict = c.verdict();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("delivered".into(), json!(c.delivered()));
        obj.insert("reason".into(), json!(verdict.reason()));
        obj.insert(
            "stoppedAt".into(),
            json!(verdict.stopped_at().map(|d| name(snap, d))),
        );
        obj.insert("verdict".into(), json!(words(snap, c)));
        obj.insert(
            "external".into(),
            json!({
                "name": ext.name,
                "cidr": ext.cidr.to_string(),
                "attach": name(snap, ext.attach),
                "direction": match c.way { Way::Out => "out", Way::In => "in" },
            }),
        );
        obj.insert(
            "snat".into(),
            c.snat.map_or(serde_json::Value::Null, |s| {
                json!({"from": s.from.to_string(), "to": s.to.to_string(), "pool": s.pool.to_string(), "at": name(snap, s.at)})
            }),
        );
        obj.insert("replyTo".into(), json!(c.reply_to.to_string()));
        obj.insert(
            "reply".into(),
            c.reply.as_ref().map_or(serde_json::Value::Null, |r| {
                json!({
                    "delivered": r.delivered(),
                    "hops": r.hops.iter().map(|h| name(snap, h.device)).collect::<Vec<_>>(),
                })
            }),
        );
    }
    v
}
