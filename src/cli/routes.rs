//! `podnet routes`: a node's or router's BGP Loc-RIB in the style of `birdc show route all`
//! (every candidate, the best marked with `*`, and the rule that decided), or its FIB in the
//! style of `ip route`.
//!
//! As in `birdc`, the number in parentheses is the route's preference (REFERENCE §4.3: static
//! 200, kernel 10, BGP 100), not its LOCAL_PREF, which is shown with the other attributes. A
//! node's own block is Calico's static `blackhole` route, and so is each Service route it
//! advertises (`/staticroutes`); a borrowed /32 (or a /32 block) is the kernel route to the
//! pod's interface that BIRD learns, not a blackhole.

use serde_json::json;

use super::common::with_state_at;
use super::trace::entry_text;
use super::{Format, RouteTableArg, RoutesArgs, exit};
use crate::bgp::{BestBecause, RibEntry, RibRoute, RouteStatus};
use crate::forwarding::Origin;
use ipnet::IpNet;

/// Which BIRD protocol a Loc-RIB route belongs to, as `birdc show route` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Protocol {
    /// Learned from a peer.
    Bgp,
    /// Calico's `blackhole` for one of the node's own blocks.
    StaticBlackhole,
    /// The kernel route Felix programs to a local pod's interface (a borrowed /32).
    KernelPod,
}

impl Protocol {
    fn of(route: &RibRoute, prefix: IpNet, blackholes: &[IpNet]) -> Protocol {
        match route.from {
            Some(_) => Protocol::Bgp,
            None if blackholes.contains(&prefix) => Protocol::StaticBlackhole,
            None => Protocol::KernelPod,
        }
    }

    /// BIRD's default preference of the protocol's routes.
    fn preference(self) -> u32 {
        match self {
            Protocol::Bgp => 100,
            Protocol::StaticBlackhole => 200,
            Protocol::KernelPod => 10,
        }
    }
}

pub fn run(args: &RoutesArgs) -> i32 {
    with_state_at(&args.scenario, args.at.as_deref(), |_, world, snap| {
        let topo = &world.topology;
        let Some(device) = topo.device_by_name(&args.node) else {
            let hint = crate::scenario::diag::nearest(
                &args.node,
                topo.devices.iter().map(|d| d.name.as_str()),
            )
            .map(|n| format!("; did you mean `{n}`?"))
            .unwrap_or_default();
            eprintln!("--node: no node or router `{}`{hint}", args.node);
            return exit::INVALID;
        };
        let name = |d: crate::model::topology::DeviceId| topo.device(d).name.clone();
        match args.table {
            RouteTableArg::Rib => {
                let Some(bgp) = world
                    .control
                    .bgp
                    .as_deref()
                    .filter(|b| b.speaker(device).is_some())
                else {
                    eprintln!("`{}` does not speak BGP in this scenario", args.node);
                    return exit::INVALID;
                };
                let rib = bgp.loc_rib(device);
                // The node's own blocks are the prefixes its FIB blackholes; its Service
                // routes are static blackholes too (kept out of the kernel).
                let blackholes: Vec<IpNet> = snap
                    .dataplane
                    .entries(device)
                    .iter()
                    .filter(|e| e.origin == Origin::Blackhole)
                    .map(|e| e.prefix)
                    .chain(bgp.statics(device).iter().copied())
                    .collect();
                match args.format {
                    Format::Text => {
                        outln!(
                            "Table master of {} at {} ({} prefixes):",
                            args.node,
                            crate::report::sections::time(snap.time_us),
                            rib.len()
                        );
                        for entry in &rib {
                            out!("{}", rib_text(entry, &blackholes, &name));
                        }
                    }
                    Format::Json => {
                        let v: Vec<_> = rib
                            .iter()
                            .map(|e| rib_json(e, &blackholes, &name))
                            .collect();
                        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                    }
                }
            }
            RouteTableArg::Fib => {
                let dp = &snap.dataplane;
                let entries = dp.entries(device);
                match args.format {
                    Format::Text => {
                        for e in &entries {
                            let proto = match e.origin {
                                Origin::Connected => " proto kernel",
                                Origin::Default | Origin::Fabric | Origin::External => {
                                    " proto static"
                                }
                                Origin::Local => "",
                                Origin::Blackhole | Origin::Learned | Origin::PodTable => {
                                    " proto bird"
                                }
                            };
                            let text = entry_text(snap, e);
                            if e.prefix.prefix_len() == 0 {
                                outln!(
                                    "default {}{proto}",
                                    text.trim_start_matches(&e.prefix.to_string()).trim()
                                );
                            } else {
                                outln!("{text}{proto}");
                            }
                        }
                    }
                    Format::Json => {
                        let v: Vec<_> = entries
                            .iter()
                            .map(|e| json!({"prefix": e.prefix.to_string(), "route": entry_text(snap, e), "origin": format!("{:?}", e.origin)}))
                            .collect();
                        outln!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                    }
                }
            }
        }
        exit::OK
    })
}

fn why(status: &RouteStatus) -> String {
    match status {
        RouteStatus::Best(BestBecause::OnlyCandidate) => "best: only candidate".to_string(),
        RouteStatus::Best(BestBecause::Over(l)) => {
            format!("best: the others lost on {}", l.as_str())
        }
        RouteStatus::Lost(l) => format!("lost: {}", l.describe()),
        RouteStatus::NotEvaluated => "not evaluated".to_string(),
    }
}

fn rib_text(
    entry: &RibEntry,
    blackholes: &[IpNet],
    name: &dyn Fn(crate::model::topology::DeviceId) -> String,
) -> String {
    let mut out = String::new();
    for (i, r) in entry.routes.iter().enumerate() {
        let prefix = if i == 0 {
            entry.prefix.to_string()
        } else {
            String::new()
        };
        let best = if matches!(r.status, RouteStatus::Best(_)) {
            " *"
        } else {
            ""
        };
        let protocol = Protocol::of(r, entry.prefix, blackholes);
        let from = match (r.from, protocol) {
            (Some(d), _) => format!("{} {}", name(d), if r.ebgp { "ebgp" } else { "ibgp" }),
            (None, Protocol::KernelPod) => "kernel, local pod".to_string(),
            (None, _) => "static, originated here".to_string(),
        };
        let path = if r.attrs.as_path.is_empty() {
            "i".to_string()
        } else {
            format!(
                "{} i",
                r.attrs
                    .as_path
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(" ")
            )
        };
        out.push_str(&format!(
            "{prefix:<20} unicast [{from}]{best} ({}) [{path}]\n",
            protocol.preference()
        ));
        let nh = match (protocol, r.next_hop_device) {
            (Protocol::StaticBlackhole, _) => "blackhole".to_string(),
            (Protocol::KernelPod, _) => "dev cali (local pod)".to_string(),
            (_, Some(d)) => format!("via {} on {}", r.attrs.next_hop, name(d)),
            (_, None) => format!("via {} (unresolved)", r.attrs.next_hop),
        };
        let clusters = if r.attrs.cluster_list.is_empty() {
            "-".to_string()
        } else {
            r.attrs
                .cluster_list
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(" ")
        };
        let originator = r
            .attrs
            .originator_id
            .map_or(String::new(), |o| format!("  originator {o}"));
        out.push_str(&format!(
            "\t{nh}  origin {}  local-pref {}  cluster-list {clusters}{originator}  {}\n",
            r.attrs.origin.as_str(),
            r.attrs.local_pref,
            why(&r.status)
        ));
    }
    out
}

fn rib_json(
    entry: &RibEntry,
    blackholes: &[IpNet],
    name: &dyn Fn(crate::model::topology::DeviceId) -> String,
) -> serde_json::Value {
    json!({
        "prefix": entry.prefix.to_string(),
        "routes": entry.routes.iter().map(|r| {
            let protocol = Protocol::of(r, entry.prefix, blackholes);
            json!({
            "from": r.from.map(name),
            "type": match protocol {
                Protocol::StaticBlackhole => "blackhole",
                Protocol::KernelPod => "localPod",
                Protocol::Bgp if r.ebgp => "ebgp",
                Protocol::Bgp => "ibgp",
            },
            "protocol": match protocol {
                Protocol::Bgp => "bgp",
                Protocol::StaticBlackhole => "static",
                Protocol::KernelPod => "kernel",
            },
            "preference": protocol.preference(),
            "nextHop": (protocol == Protocol::Bgp).then(|| r.attrs.next_hop.to_string()),
            "nextHopDevice": r.next_hop_device.map(name),
            "asPath": r.attrs.as_path,
            "origin": r.attrs.origin.as_str(),
            "localPref": r.attrs.local_pref,
            "originatorId": r.attrs.originator_id.map(|o| o.to_string()),
            "clusterList": r.attrs.cluster_list.iter().map(ToString::to_string).collect::<Vec<_>>(),
            "best": matches!(r.status, RouteStatus::Best(_)),
            "why": why(&r.status),
        })}).collect::<Vec<_>>(),
    })
}
