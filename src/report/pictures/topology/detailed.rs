//! The detailed drawing, for clusters small enough to show every node: zones and racks as
//! boxes, each router and node as its own box, every link and every BGP session.

use super::*;

/// Every node, router, link and session.
pub(super) fn detailed(topo: &Topology, sessions: &[SessionRow]) -> String {
    const GAP: f64 = 18.0;
    const PAD: f64 = 12.0;
    let has_core = topo.devices.iter().any(|d| d.kind == DeviceKind::Core);
    let core_y = MARGIN + 24.0;
    let zone_y = if has_core {
        core_y + ROUTER_H + 30.0
    } else {
        core_y
    };
    let spine_y = zone_y + 28.0;
    let rack_y = spine_y + ROUTER_H + 44.0;
    let tor_y = rack_y + 24.0;
    let first_node_y = tor_y + ROUTER_H + 22.0;
    let node_pitch = NODE_H + 10.0;
    let rack_w = ROUTER_W + 2.0 * PAD;

    let mut placed: BTreeMap<&str, Placed> = BTreeMap::new();
    // (zone box, label), (rack box, label)
    let mut zone_boxes: Vec<(Placed, String)> = Vec::new();
    let mut rack_boxes: Vec<(Placed, String)> = Vec::new();
    let mut x = MARGIN;
    let mut bottom = rack_y;
    for zone in &topo.zones {
        let zone_x = x;
        x += PAD;
        let spines: Vec<usize> = zone.spines.iter().map(|s| s.index()).collect();
        let mut racks_w = 0.0;
        for &r in &zone.racks {
            let Some(rack) = topo.racks.get(r.index()) else {
                continue;
            };
            let nodes: Vec<&str> = rack
                .nodes
                .iter()
                .filter_map(|n| topo.nodes.get(n.index()))
                .filter(|n| !n.deleted)
                .map(|n| n.name.as_str())
                .collect();
            let rack_h = (first_node_y - rack_y) + nodes.len() as f64 * node_pitch + PAD - 10.0;
            let at = Placed {
                x: x + racks_w,
                y: rack_y,
                w: rack_w,
                h: rack_h.max(first_node_y - rack_y),
            };
            rack_boxes.push((at, format!("{} {}", rack.name, rack.subnet)));
            bottom = f64::max(bottom, at.y + at.h);
            if let Some(tor) = topo.devices.get(rack.tor.index()) {
                placed.insert(
                    &tor.name,
                    Placed {
                        x: at.x + (rack_w - ROUTER_W) / 2.0,
                        y: tor_y,
                        w: ROUTER_W,
                        h: ROUTER_H,
                    },
                );
            }
            for (i, name) in nodes.iter().enumerate() {
                placed.insert(
                    name,
                    Placed {
                        x: at.x + PAD + 16.0,
                        y: first_node_y + i as f64 * node_pitch,
                        w: NODE_W,
                        h: NODE_H,
                    },
                );
            }
            racks_w += rack_w + GAP;
        }
        let spines_w = spines.len() as f64 * (ROUTER_W + GAP);
        let inner = f64::max(racks_w, spines_w).max(ROUTER_W + GAP) - GAP;
        let spine_x = x + (inner - (spines_w - GAP).max(0.0)) / 2.0;
        for (k, &s) in spines.iter().enumerate() {
            if let Some(spine) = topo.devices.get(s) {
                placed.insert(
                    &spine.name,
                    Placed {
                        x: spine_x + k as f64 * (ROUTER_W + GAP),
                        y: spine_y,
                        w: ROUTER_W,
                        h: ROUTER_H,
                    },
                );
            }
        }
        zone_boxes.push((
            Placed {
                x: zone_x,
                y: zone_y,
                w: inner + 2.0 * PAD,
                h: 0.0,
            },
            format!(
                "{} (zone, {})",
                zone.name,
                counted(zone.racks.len(), "rack")
            ),
        ));
        x = zone_x + inner + 2.0 * PAD + 24.0;
    }
    let zone_bottom = bottom + PAD;
    for (z, _) in &mut zone_boxes {
        z.h = zone_bottom - z.y;
    }
    let width = f64::max(x - 24.0 + MARGIN, 760.0);
    let cores: Vec<&str> = topo
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::Core)
        .map(|d| d.name.as_str())
        .collect();
    let cores_w = cores.len() as f64 * (ROUTER_W + GAP) - GAP;
    for (k, name) in cores.iter().enumerate() {
        placed.insert(
            name,
            Placed {
                x: (width - cores_w) / 2.0 + k as f64 * (ROUTER_W + GAP),
                y: core_y,
                w: ROUTER_W,
                h: ROUTER_H,
            },
        );
    }
    let legend_y = zone_bottom + 30.0;
    let height = legend_y + LEGEND_H;

    let live = topo.nodes.iter().filter(|n| !n.deleted).count();
    let mut svg = canvas(topo, live, sessions, "", (width, height));
    for (at, label) in &zone_boxes {
        outline(&mut svg, *at, label);
    }
    for (at, label) in &rack_boxes {
        svg.rect((at.x, at.y, at.w, at.h), 8.0, BAND, "#c4ccd4", 1.0, "");
        svg.text(
            (at.x + 8.0, at.y + 15.0),
            TextStyle::plain(11.0).fill(MUTED),
            &shorten(label, ((at.w - 12.0) / 6.6) as usize),
        );
    }

    // Links under the boxes. An access link is the node's stub off the rack's segment.
    let mut down_marks = Vec::new();
    for link in &topo.links {
        let (Some(a), Some(b)) = (
            topo.devices.get(link.a.index()),
            topo.devices.get(link.b.index()),
        ) else {
            continue;
        };
        if link.a == link.b || is_deleted(topo, a.kind) || is_deleted(topo, b.kind) {
            continue;
        }
        let (Some(&pa), Some(&pb)) = (placed.get(a.name.as_str()), placed.get(b.name.as_str()))
        else {
            continue;
        };
        if link.kind == LinkKind::Access {
            // The segment runs down the rack's left side from its ToR.
            let (node, tor) = if a.is_router() { (pb, pa) } else { (pa, pb) };
            let bus_x = node.x - 10.0;
            let (_, ny) = node.centre();
            let colour = if link.up { LINE } else { BAD };
            svg.line((bus_x, tor.y + tor.h), (bus_x, ny), LINE, 1.2, "");
            if link.up {
                svg.line((bus_x, ny), (node.x, ny), colour, 1.2, "");
            } else {
                svg.line(
                    (bus_x, ny),
                    (node.x, ny),
                    BAD,
                    2.0,
                    "stroke-dasharray=\"3 2\"",
                );
                down_marks.push((node.x - 5.0, ny));
            }
            continue;
        }
        link_line(&mut svg, pa, pb, link.kind, link.up);
    }
    for (x, y) in down_marks {
        svg.text(
            (x, y - 4.0),
            TextStyle::plain(12.0)
                .anchor(Anchor::Middle)
                .fill(BAD)
                .bold(),
            "✕",
        );
    }

    // Sessions under the boxes, so names stay readable in a full mesh; the non-Established
    // last so no Established curve hides them.
    let mut order: Vec<&SessionRow> = sessions.iter().collect();
    order.sort_by_key(|s| usize::from(s.state != "Established"));
    for s in order {
        let (Some(&a), Some(&b)) = (placed.get(&*s.a), placed.get(&*s.b)) else {
            continue;
        };
        svg.group(&format!(
            "{} session {} – {}: {}{}",
            if s.session_type == "ebgp" {
                "eBGP"
            } else {
                "iBGP"
            },
            s.a,
            s.b,
            s.state,
            s.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        ));
        session_curve(&mut svg, a, b, s, 1.3, 0.18);
        svg.end();
    }
    // Boxes.
    let rrs = reflectors(sessions);
    for d in &topo.devices {
        let Some(&at) = placed.get(d.name.as_str()) else {
            continue;
        };
        let reflector = rrs.binary_search(&d.name.as_str()).is_ok();
        let address = d.address.to_string();
        match d.kind {
            DeviceKind::Node(n) => {
                let Some(node) = topo.nodes.get(n.index()) else {
                    continue;
                };
                let (fill, frame) = if node.down {
                    ("#fbeaea", (BAD, 1.5, "stroke-dasharray=\"4 2\""))
                } else if reflector {
                    ("#ffffff", (REFLECTOR, 2.5, ""))
                } else {
                    ("#ffffff", ("#7b8794", 1.0, ""))
                };
                let second = if node.down {
                    format!("{address} · down")
                } else {
                    address
                };
                svg.group(&format!("node {} {}", d.name, second));
                device_box(&mut svg, at, fill, frame, [&d.name, &second]);
                svg.end();
            }
            _ => {
                let frame = if reflector {
                    (REFLECTOR, 2.5, "")
                } else {
                    ("#8aa4c2", 1.0, "")
                };
                let second = match d.as_number {
                    Some(asn) => format!("{address} · AS {asn}"),
                    None => address,
                };
                svg.group(&format!("router {} {}", d.name, second));
                device_box(&mut svg, at, ROUTER_FILL, frame, [&d.name, &second]);
                svg.end();
            }
        }
        if reflector {
            rr_badge(&mut svg, at);
        }
    }

    legend(&mut svg, legend_y, "");
    svg.finish()
}
