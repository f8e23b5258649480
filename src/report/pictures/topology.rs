//! `topology.svg`: the cluster drawn in layers, core on top, then each zone's spines, each
//! rack's ToR and the rack's nodes listed under it on the rack's access segment.
//!
//! Up to [`DETAIL_NODES`] nodes every device is a box: links are grey lines (red, dashed and
//! labelled "down" when down), BGP sessions are curves coloured by state (green Established,
//! orange Connect, red Idle; dashed when eBGP), a route reflector has a purple frame and an
//! "RR" badge and its sessions to clients end in an arrow at the client. Larger clusters are
//! drawn one tile per rack (or one per zone above [`RACK_TILES`] racks): a tile counts its
//! nodes, the down ones and the links down, holds its reflectors, and shows its nodes'
//! sessions as a bar by state; sessions between tiles are bundled into one curve per pair of
//! tiles and state, at most [`BUNDLES`] of them (the non-Established first).
//!
//! Invariants: the layout is computed from the topology's vectors in order, so the same
//! topology and sessions give the same bytes; the picture's size grows with racks (or zones),
//! never with nodes beyond [`DETAIL_NODES`]. Deleted nodes are left out. This module draws;
//! it decides nothing about the network (states and reflectors come from the BGP section).

use std::collections::BTreeMap;

use super::counted;
use super::svg::{Anchor, BAD, BAND, GOOD, LINE, MUTED, Svg, TextStyle, WARN, shorten, text_width};
use crate::model::topology::{DeviceKind, LinkKind, Topology};
use crate::sim::snapshot::SessionRow;

/// Clusters with at most this many nodes (and [`DETAIL_RACKS`] racks) show every node.
pub const DETAIL_NODES: usize = 64;
/// Racks drawn side by side in the detailed picture.
pub const DETAIL_RACKS: usize = 16;
/// Above this many racks, the picture has one tile per zone.
pub const RACK_TILES: usize = 240;
/// Curves drawn between tiles in the aggregated picture.
pub const BUNDLES: usize = 400;

const REFLECTOR: &str = "#6a3d9a";
const ROUTER_FILL: &str = "#dce8f5";
const NODE_W: f64 = 132.0;
const NODE_H: f64 = 34.0;
const ROUTER_W: f64 = 156.0;
const ROUTER_H: f64 = 34.0;
const TILE_W: f64 = 104.0;
const TILE_H: f64 = 64.0;
const TILES_PER_ROW: usize = 12;
const MARGIN: f64 = 20.0;
const LEGEND_H: f64 = 64.0;

/// Where a box was drawn: top-left corner and size.
#[derive(Clone, Copy, Debug)]
struct Placed {
    x: f64,
    y: f64,
    w: f64,
    h: f64,
}

impl Placed {
    fn centre(self) -> (f64, f64) {
        (self.x + self.w / 2.0, self.y + self.h / 2.0)
    }

    /// The middle of the side facing `to`.
    fn port(self, to: Placed) -> (f64, f64) {
        let (cx, cy) = self.centre();
        let (tx, ty) = to.centre();
        let (dx, dy) = (tx - cx, ty - cy);
        if dx.abs() * self.h > dy.abs() * self.w {
            (if dx > 0.0 { self.x + self.w } else { self.x }, cy)
        } else {
            (cx, if dy > 0.0 { self.y + self.h } else { self.y })
        }
    }
}

/// Session states in the order of their colour's urgency (legend and bars).
const STATES: [(&str, &str); 3] = [("Established", GOOD), ("Connect", WARN), ("Idle", BAD)];

fn state_colour(state: &str) -> &'static str {
    STATES.iter().find(|s| s.0 == state).map_or(WARN, |s| s.1)
}

fn state_rank(state: &str) -> usize {
    STATES.iter().position(|s| s.0 == state).unwrap_or(1)
}

/// Renders the picture. `sessions` is empty when nothing speaks BGP.
pub fn render(topo: &Topology, sessions: &[SessionRow]) -> String {
    let live = topo.nodes.iter().filter(|n| !n.deleted).count();
    if live <= DETAIL_NODES && topo.racks.len() <= DETAIL_RACKS {
        detailed(topo, sessions)
    } else {
        aggregated(topo, sessions, topo.racks.len() > RACK_TILES)
    }
}

/// The devices that reflect routes to at least one client.
fn reflectors(sessions: &[SessionRow]) -> Vec<&str> {
    let mut out: Vec<&str> = sessions
        .iter()
        .filter_map(|s| s.reflector.as_deref())
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

fn is_deleted(topo: &Topology, kind: DeviceKind) -> bool {
    match kind {
        DeviceKind::Node(n) => topo.nodes.get(n.index()).is_none_or(|n| n.deleted),
        _ => false,
    }
}

fn defs(svg: &mut Svg) {
    svg.raw(&format!(
        "<defs><marker id=\"podnet-rr-client\" viewBox=\"0 0 10 10\" refX=\"9\" refY=\"5\" \
         markerWidth=\"7\" markerHeight=\"7\" orient=\"auto-start-reverse\">\
         <path d=\"M0 0 L10 5 L0 10 z\" fill=\"{REFLECTOR}\"/></marker></defs>\n"
    ));
}

fn legend(svg: &mut Svg, y: f64, extra: &str) {
    let small = TextStyle::plain(12.0).fill(MUTED);
    let mut x = MARGIN;
    svg.text((x, y), small.bold(), "BGP sessions:");
    x += 96.0;
    for (state, colour) in STATES {
        svg.line((x, y - 4.0), (x + 26.0, y - 4.0), colour, 2.5, "");
        svg.text((x + 32.0, y), small, state);
        x += 40.0 + text_width(state, 12.0);
    }
    svg.line(
        (x, y - 4.0),
        (x + 26.0, y - 4.0),
        GOOD,
        2.0,
        "stroke-dasharray=\"6 3\"",
    );
    svg.text((x + 32.0, y), small, "eBGP");
    x += 76.0;
    svg.line(
        (x, y - 4.0),
        (x + 26.0, y - 4.0),
        REFLECTOR,
        2.0,
        "marker-end=\"url(#podnet-rr-client)\"",
    );
    svg.text((x + 32.0, y), small, "reflector → client");
    let y = y + 22.0;
    let mut x = MARGIN;
    svg.text((x, y), small.bold(), "Links:");
    x += 96.0;
    svg.line((x, y - 4.0), (x + 26.0, y - 4.0), LINE, 1.5, "");
    svg.text((x + 32.0, y), small, "up");
    x += 60.0;
    svg.line(
        (x, y - 4.0),
        (x + 26.0, y - 4.0),
        BAD,
        2.0,
        "stroke-dasharray=\"5 3\"",
    );
    svg.text((x + 32.0, y), small, "down");
    x += 76.0;
    svg.rect(
        (x, y - 13.0, 26.0, 14.0),
        3.0,
        "#ffffff",
        REFLECTOR,
        2.5,
        "",
    );
    svg.text((x + 32.0, y), small, "route reflector");
    x += 140.0;
    svg.rect(
        (x, y - 13.0, 26.0, 14.0),
        3.0,
        "#fbeaea",
        BAD,
        1.5,
        "stroke-dasharray=\"4 2\"",
    );
    svg.text((x + 32.0, y), small, "node down");
    x += 110.0;
    if !extra.is_empty() {
        svg.text((x, y), small, extra);
    }
}

/// A router or node box with one or two lines of text.
fn device_box(svg: &mut Svg, at: Placed, fill: &str, frame: (&str, f64, &str), lines: [&str; 2]) {
    svg.rect(
        (at.x, at.y, at.w, at.h),
        5.0,
        fill,
        frame.0,
        frame.1,
        frame.2,
    );
    let chars = ((at.w - 10.0) / (11.5 * 0.6)) as usize;
    svg.text(
        (at.x + at.w / 2.0, at.y + 14.0),
        TextStyle::plain(11.5).anchor(Anchor::Middle).bold(),
        &shorten(lines[0], chars),
    );
    svg.text(
        (at.x + at.w / 2.0, at.y + 28.0),
        TextStyle::plain(10.5).anchor(Anchor::Middle).fill(MUTED),
        &shorten(lines[1], chars + 1),
    );
}

fn rr_badge(svg: &mut Svg, at: Placed) {
    svg.rect(
        (at.x + at.w - 22.0, at.y - 7.0, 24.0, 14.0),
        7.0,
        REFLECTOR,
        REFLECTOR,
        1.0,
        "",
    );
    svg.text(
        (at.x + at.w - 10.0, at.y + 4.0),
        TextStyle::plain(10.0)
            .anchor(Anchor::Middle)
            .fill("#ffffff")
            .bold(),
        "RR",
    );
}

/// A session curve between two boxes, bent to one side so parallel sessions stay apart.
fn session_curve(svg: &mut Svg, a: Placed, b: Placed, s: &SessionRow, width: f64, bend: f64) {
    let colour = state_colour(s.state);
    // The reflector's end first, so the arrow lands on the client.
    let (from, to) = match &s.reflector {
        Some(r) if *r == s.b => (b, a),
        _ => (a, b),
    };
    let (p, q, control) = if (from.x - to.x).abs() < 1.0 {
        // One above the other (nodes of one rack): right side to right side, bulging out of
        // the column so the curve does not cross the boxes between them.
        let (p, q) = (
            (from.x + from.w, from.centre().1),
            (to.x + to.w, to.centre().1),
        );
        let reach = 14.0 + (q.1 - p.1).abs() * 0.25;
        (p, q, (p.0 + reach, (p.1 + q.1) / 2.0))
    } else {
        let p = from.port(to);
        let q = to.port(from);
        let (mx, my) = ((p.0 + q.0) / 2.0, (p.1 + q.1) / 2.0);
        let (dx, dy) = (q.0 - p.0, q.1 - p.1);
        (p, q, (mx - dy * bend, my + dx * bend))
    };
    let mut extra = String::from("stroke-opacity=\"0.7\"");
    if s.session_type == "ebgp" {
        extra.push_str(" stroke-dasharray=\"6 3\"");
    }
    if s.reflector.is_some() {
        extra.push_str(" marker-end=\"url(#podnet-rr-client)\"");
    }
    svg.curve(p, control, q, colour, width, &extra);
}

fn link_line(svg: &mut Svg, a: Placed, b: Placed, kind: LinkKind, up: bool) {
    let p = a.port(b);
    let q = b.port(a);
    let width = match kind {
        LinkKind::Access => 1.2,
        LinkKind::Fabric => 1.5,
        LinkKind::InterZone => 2.2,
    };
    if up {
        svg.line(p, q, LINE, width, "");
    } else {
        svg.line(p, q, BAD, width + 0.8, "stroke-dasharray=\"5 3\"");
        let (mx, my) = ((p.0 + q.0) / 2.0, (p.1 + q.1) / 2.0);
        svg.rect(
            (mx - 18.0, my - 8.0, 36.0, 15.0),
            3.0,
            "#ffffff",
            BAD,
            1.0,
            "",
        );
        svg.text(
            (mx, my + 3.5),
            TextStyle::plain(10.0)
                .anchor(Anchor::Middle)
                .fill(BAD)
                .bold(),
            "down",
        );
    }
}

/// Every node, router, link and session.
fn detailed(topo: &Topology, sessions: &[SessionRow]) -> String {
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
    let title = format!(
        "Topology: {}, {}, {}, {}",
        counted(topo.zones.len(), "zone"),
        counted(topo.racks.len(), "rack"),
        counted(live, "node"),
        counted(sessions.len(), "BGP session")
    );
    let mut svg = Svg::new(width, height, &title);
    defs(&mut svg);
    svg.text(
        (MARGIN, MARGIN + 4.0),
        TextStyle::plain(16.0).bold(),
        &title,
    );
    for (at, label) in &zone_boxes {
        svg.rect((at.x, at.y, at.w, at.h), 10.0, "none", LINE, 1.2, "");
        svg.text(
            (at.x + 10.0, at.y + 17.0),
            TextStyle::plain(13.0).fill(MUTED).bold(),
            label,
        );
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
        let (Some(&a), Some(&b)) = (placed.get(s.a.as_str()), placed.get(s.b.as_str())) else {
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

/// One tile of the aggregated picture: a rack (or a zone) and what it holds.
#[derive(Default)]
struct Tile {
    name: String,
    subtitle: String,
    nodes: usize,
    down: usize,
    links_down: usize,
    reflectors: Vec<String>,
    /// Sessions with an end in the tile, by state rank.
    sessions: [usize; 3],
}

/// Racks (or zones) as tiles, in bands per zone, with bundled sessions.
fn aggregated(topo: &Topology, sessions: &[SessionRow], by_zone: bool) -> String {
    // Which tile (or router box) each device is drawn in.
    let mut tiles: Vec<Tile> = Vec::new();
    let mut tile_of_device: Vec<Option<usize>> = vec![None; topo.devices.len()];
    // Bands: title, spines, tiles.
    let mut bands: Vec<(String, Vec<usize>, Vec<usize>)> = Vec::new();
    if by_zone {
        let mut members = Vec::new();
        for zone in &topo.zones {
            let t = tiles.len();
            let tile = Tile {
                name: zone.name.clone(),
                subtitle: counted(zone.racks.len(), "rack"),
                ..Tile::default()
            };
            for &r in &zone.racks {
                if let Some(rack) = topo.racks.get(r.index()) {
                    tile_of_device[rack.tor.index()] = Some(t);
                }
            }
            for &s in &zone.spines {
                tile_of_device[s.index()] = Some(t);
            }
            tiles.push(tile);
            members.push(t);
        }
        bands.push((format!("{} zones", topo.zones.len()), Vec::new(), members));
    } else {
        for zone in &topo.zones {
            let mut members = Vec::new();
            for &r in &zone.racks {
                let Some(rack) = topo.racks.get(r.index()) else {
                    continue;
                };
                let t = tiles.len();
                tile_of_device[rack.tor.index()] = Some(t);
                tiles.push(Tile {
                    name: rack.name.clone(),
                    subtitle: rack.subnet.to_string(),
                    ..Tile::default()
                });
                members.push(t);
            }
            bands.push((
                format!("zone {}", zone.name),
                zone.spines.iter().map(|s| s.index()).collect(),
                members,
            ));
        }
    }
    for node in topo.nodes.iter().filter(|n| !n.deleted) {
        let t = if by_zone {
            Some(node.zone.index())
        } else {
            topo.racks
                .get(node.rack.index())
                .and_then(|r| tile_of_device[r.tor.index()])
        };
        if let Some(t) = t.filter(|&t| t < tiles.len()) {
            tile_of_device[node.device.index()] = Some(t);
            tiles[t].nodes += 1;
            tiles[t].down += usize::from(node.down);
        }
    }
    for link in topo.links.iter().filter(|l| !l.up) {
        let (a, b) = (link.a.index(), link.b.index());
        let t = tile_of_device
            .get(a)
            .copied()
            .flatten()
            .or_else(|| tile_of_device.get(b).copied().flatten());
        if let Some(t) = t {
            tiles[t].links_down += 1;
        }
    }
    let by_name: BTreeMap<&str, usize> = topo
        .devices
        .iter()
        .enumerate()
        .map(|(i, d)| (d.name.as_str(), i))
        .collect();
    let rrs = reflectors(sessions);
    for rr in &rrs {
        if let Some(t) = by_name.get(rr).and_then(|&d| tile_of_device[d]) {
            tiles[t].reflectors.push((*rr).to_string());
        }
    }
    for s in sessions {
        let rank = state_rank(s.state);
        let ta = by_name.get(s.a.as_str()).and_then(|&d| tile_of_device[d]);
        let tb = by_name.get(s.b.as_str()).and_then(|&d| tile_of_device[d]);
        for t in [ta, tb].into_iter().flatten() {
            tiles[t].sessions[rank] += 1;
        }
    }

    // Layout: the core on top, then one band per zone with its spines and a grid of tiles.
    let core_y = MARGIN + 24.0;
    let mut y = core_y + ROUTER_H + 30.0;
    let mut placed_tiles: Vec<Option<Placed>> = vec![None; tiles.len()];
    let mut placed_routers: BTreeMap<usize, Placed> = BTreeMap::new();
    let mut band_boxes: Vec<(Placed, String)> = Vec::new();
    let grid_w = TILES_PER_ROW as f64 * (TILE_W + 8.0) - 8.0;
    let width = grid_w + 2.0 * MARGIN + 24.0;
    for (title, spines, members) in &bands {
        let top = y;
        y += 26.0;
        if !spines.is_empty() {
            let w = spines.len() as f64 * (ROUTER_W + 12.0) - 12.0;
            for (k, &s) in spines.iter().enumerate() {
                placed_routers.insert(
                    s,
                    Placed {
                        x: (width - w) / 2.0 + k as f64 * (ROUTER_W + 12.0),
                        y,
                        w: ROUTER_W,
                        h: ROUTER_H,
                    },
                );
            }
            y += ROUTER_H + 26.0;
        }
        for (i, &t) in members.iter().enumerate() {
            let (row, col) = (i / TILES_PER_ROW, i % TILES_PER_ROW);
            placed_tiles[t] = Some(Placed {
                x: MARGIN + 12.0 + col as f64 * (TILE_W + 8.0),
                y: y + row as f64 * (TILE_H + 8.0),
                w: TILE_W,
                h: TILE_H,
            });
        }
        let rows = members.len().div_ceil(TILES_PER_ROW).max(1);
        y += rows as f64 * (TILE_H + 8.0) + 4.0;
        let nodes: usize = members.iter().map(|&t| tiles[t].nodes).sum();
        let down: usize = members.iter().map(|&t| tiles[t].down).sum();
        let label = if down > 0 {
            format!("{title} · {} ({down} down)", counted(nodes, "node"))
        } else {
            format!("{title} · {}", counted(nodes, "node"))
        };
        band_boxes.push((
            Placed {
                x: MARGIN,
                y: top,
                w: width - 2.0 * MARGIN,
                h: y - top,
            },
            label,
        ));
        y += 14.0;
    }
    let cores: Vec<usize> = topo
        .devices
        .iter()
        .enumerate()
        .filter(|(_, d)| d.kind == DeviceKind::Core)
        .map(|(i, _)| i)
        .collect();
    let cores_w = cores.len() as f64 * (ROUTER_W + 12.0) - 12.0;
    for (k, &c) in cores.iter().enumerate() {
        placed_routers.insert(
            c,
            Placed {
                x: (width - cores_w) / 2.0 + k as f64 * (ROUTER_W + 12.0),
                y: core_y,
                w: ROUTER_W,
                h: ROUTER_H,
            },
        );
    }
    let legend_y = y + 16.0;
    let height = legend_y + LEGEND_H;
    let box_of = |key: usize| -> Option<Placed> {
        match key.checked_sub(topo.devices.len()) {
            Some(t) => placed_tiles.get(t).copied().flatten(),
            None => placed_routers.get(&key).copied(),
        }
    };

    let live: usize = tiles.iter().map(|t| t.nodes).sum();
    let unit = if by_zone { "zone" } else { "rack" };
    let title = format!(
        "Topology: {}, {}, {}, {} (one tile per {unit})",
        counted(topo.zones.len(), "zone"),
        counted(topo.racks.len(), "rack"),
        counted(live, "node"),
        counted(sessions.len(), "BGP session")
    );
    let mut svg = Svg::new(width, height, &title);
    defs(&mut svg);
    svg.text(
        (MARGIN, MARGIN + 4.0),
        TextStyle::plain(16.0).bold(),
        &title,
    );
    for (at, label) in &band_boxes {
        svg.rect((at.x, at.y, at.w, at.h), 10.0, "none", LINE, 1.2, "");
        svg.text(
            (at.x + 10.0, at.y + 17.0),
            TextStyle::plain(13.0).fill(MUTED).bold(),
            label,
        );
    }
    // Links between routers drawn as boxes (core–spine); links to tiles are counted on them.
    for link in &topo.links {
        let (a, b) = (link.a.index(), link.b.index());
        if let (Some(pa), Some(pb)) = (placed_routers.get(&a), placed_routers.get(&b)) {
            link_line(&mut svg, *pa, *pb, link.kind, link.up);
        }
    }
    for (i, d) in topo.devices.iter().enumerate() {
        let Some(&at) = placed_routers.get(&i) else {
            continue;
        };
        svg.group(&format!("router {} {}", d.name, d.address));
        device_box(
            &mut svg,
            at,
            ROUTER_FILL,
            ("#8aa4c2", 1.0, ""),
            [&d.name, &d.address.to_string()],
        );
        svg.end();
    }
    for (t, tile) in tiles.iter().enumerate() {
        let Some(at) = placed_tiles[t] else {
            continue;
        };
        let bad = tile.down > 0 || tile.links_down > 0;
        let (stroke, width) = if !tile.reflectors.is_empty() {
            (REFLECTOR, 2.5)
        } else if bad {
            (BAD, 1.5)
        } else {
            ("#7b8794", 1.0)
        };
        let mut tip = format!(
            "{unit} {} ({}): {} nodes",
            tile.name, tile.subtitle, tile.nodes
        );
        if tile.down > 0 {
            tip.push_str(&format!(", {} down", tile.down));
        }
        if tile.links_down > 0 {
            tip.push_str(&format!(", {} links down", tile.links_down));
        }
        if !tile.reflectors.is_empty() {
            tip.push_str(&format!(
                ", route reflectors {}",
                tile.reflectors.join(", ")
            ));
        }
        let total: usize = tile.sessions.iter().sum();
        if total > 0 {
            tip.push_str(&format!(
                "; session ends: {} Established, {} Connect, {} Idle",
                tile.sessions[0], tile.sessions[1], tile.sessions[2]
            ));
        }
        svg.group(&tip);
        svg.rect(
            (at.x, at.y, at.w, at.h),
            6.0,
            if bad { "#fbeaea" } else { "#ffffff" },
            stroke,
            width,
            "",
        );
        let chars = ((at.w - 8.0) / (11.0 * 0.6)) as usize;
        svg.text(
            (at.x + 6.0, at.y + 14.0),
            TextStyle::plain(11.0).bold(),
            &shorten(&tile.name, chars),
        );
        svg.text(
            (at.x + 6.0, at.y + 28.0),
            TextStyle::plain(10.0).fill(MUTED),
            &counted(tile.nodes, "node"),
        );
        let mut problems = Vec::new();
        if tile.down > 0 {
            problems.push(format!("{} down", tile.down));
        }
        if tile.links_down > 0 {
            problems.push(format!("{} link↓", tile.links_down));
        }
        if !problems.is_empty() {
            svg.text(
                (at.x + 6.0, at.y + 41.0),
                TextStyle::plain(10.0).fill(BAD).bold(),
                &shorten(&problems.join(", "), chars + 2),
            );
        }
        // The tile's session ends by state, as a bar along its foot.
        if total > 0 {
            let (bx, by, bw) = (at.x + 6.0, at.y + at.h - 12.0, at.w - 12.0);
            let mut x = bx;
            for (rank, (_, colour)) in STATES.iter().enumerate() {
                let w = bw * tile.sessions[rank] as f64 / total as f64;
                if w > 0.0 {
                    svg.rect((x, by, w, 6.0), 0.0, colour, "none", 0.0, "");
                }
                x += w;
            }
        }
        svg.end();
        if !tile.reflectors.is_empty() {
            rr_badge(&mut svg, at);
        }
    }
    // Sessions between tiles, bundled per (tile pair, state) and drawn with a width that
    // grows with the count; the non-Established first when there are too many.
    // (from key, to key, state rank) → (sessions, any reflected, any eBGP)
    let mut bundles: BTreeMap<BundleKey, (usize, bool, bool)> = BTreeMap::new();
    for s in sessions {
        let (Some(&da), Some(&db)) = (by_name.get(s.a.as_str()), by_name.get(s.b.as_str())) else {
            continue;
        };
        let (ka, kb) = (
            key_of(&placed_routers, &tile_of_device, da),
            key_of(&placed_routers, &tile_of_device, db),
        );
        let (Some(ka), Some(kb)) = (ka, kb) else {
            continue;
        };
        if ka == kb {
            continue;
        }
        // A bundle runs from the reflector's side when there is one.
        let (from, to) = match &s.reflector {
            Some(r) if *r == s.b => (kb, ka),
            _ => (ka, kb),
        };
        let e = bundles
            .entry((from, to, state_rank(s.state)))
            .or_insert((0, false, false));
        e.0 += 1;
        e.1 |= s.reflector.is_some();
        e.2 |= s.session_type == "ebgp";
    }
    let mut chosen: Vec<_> = bundles.iter().collect();
    let left_out = chosen.len().saturating_sub(BUNDLES);
    chosen.sort_by_key(|(k, _)| std::cmp::Reverse(k.2));
    chosen.truncate(BUNDLES);
    chosen.sort_by_key(|(k, _)| (usize::from(k.2 != 0), **k));
    for (&(from, to, rank), &(count, reflected, ebgp)) in chosen {
        let (Some(a), Some(b)) = (box_of(from), box_of(to)) else {
            continue;
        };
        let state = STATES[rank].0;
        // A stand-in session from `a` (the reflector's side) to `b`.
        let row = SessionRow {
            a: "a".to_string(),
            b: "b".to_string(),
            session_type: if ebgp { "ebgp" } else { "ibgp" },
            reflector_client: reflected,
            reflector: reflected.then(|| "a".to_string()),
            state,
            reason: None,
            times_down: 0,
        };
        let width = 1.0 + (count as f64).log2().max(0.0) * 0.6;
        svg.group(&format!(
            "{count} {state} session{} between {} and {}",
            if count == 1 { "" } else { "s" },
            label_of(topo, &tiles, from),
            label_of(topo, &tiles, to),
        ));
        session_curve(&mut svg, a, b, &row, width, 0.12);
        svg.end();
    }
    let note = if left_out > 0 {
        format!(
            "{left_out} Established bundles not drawn (the first {BUNDLES} are); a bar at a tile's foot counts its session ends by state"
        )
    } else {
        "a bar at a tile's foot counts its session ends by state".to_string()
    };
    legend(&mut svg, legend_y, &note);
    svg.finish()
}

type BundleKey = (usize, usize, usize);

/// Where a session end is drawn: a router box (by device index) or a tile (after the
/// devices), so every end in one tile shares one key.
fn key_of(
    routers: &BTreeMap<usize, Placed>,
    tile_of_device: &[Option<usize>],
    device: usize,
) -> Option<usize> {
    if routers.contains_key(&device) {
        return Some(device);
    }
    let t = tile_of_device.get(device).copied().flatten()?;
    Some(tile_of_device.len() + t)
}

fn label_of(topo: &Topology, tiles: &[Tile], key: usize) -> String {
    match key.checked_sub(topo.devices.len()) {
        Some(t) => tiles.get(t).map(|t| t.name.clone()).unwrap_or_default(),
        None => topo
            .devices
            .get(key)
            .map(|d| d.name.clone())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO_RACKS: &str = r#"
name: tiny
topology:
  zones:
  - name: z
    racks:
    - {name: r1, subnet: 10.0.1.0/24, nodes: [{namePrefix: a, count: 2}]}
    - {name: r2, subnet: 10.0.2.0/24, nodes: [{namePrefix: b, count: 1}]}
"#;

    fn session(a: &str, b: &str, state: &'static str, reflector: Option<&str>) -> SessionRow {
        SessionRow {
            a: a.to_string(),
            b: b.to_string(),
            session_type: "ibgp",
            reflector_client: reflector.is_some(),
            reflector: reflector.map(str::to_string),
            state,
            reason: (state == "Idle").then(|| "peer does not speak BGP".to_string()),
            times_down: 0,
        }
    }

    /// A scenario of `zones` zones of `racks` racks of `nodes` nodes, the first node of each
    /// zone's first rack a reflector.
    fn big(zones: usize, racks: usize, nodes: usize) -> Topology {
        let mut yaml = String::from("name: big\ntopology:\n  zones:\n");
        for z in 0..zones {
            yaml.push_str(&format!("  - name: z{z}\n    racks:\n"));
            for r in 0..racks {
                yaml.push_str(&format!(
                    "    - {{name: z{z}-r{r}, subnet: 10.{z}.{r}.0/24, nodes: [{{namePrefix: z{z}-r{r}-n, count: {nodes}}}]}}\n"
                ));
            }
        }
        crate::scenario::load_str("big.yaml", &yaml)
            .expect("valid")
            .topology
    }

    #[test]
    fn every_device_link_and_session_of_a_small_cluster_is_drawn() {
        let s = crate::scenario::load_str("tiny.yaml", TWO_RACKS).expect("valid");
        let mut topo = s.topology.clone();
        let fabric = topo
            .links
            .iter()
            .position(|l| l.kind == LinkKind::Fabric)
            .expect("a fabric link");
        topo.links[fabric].up = false;
        topo.nodes[2].down = true;
        let sessions = [
            session("a-1", "a-2", "Established", Some("a-1")),
            session("a-1", "b-1", "Established", Some("a-1")),
            session("a-2", "tor-r1", "Idle", None),
        ];
        let svg = render(&topo, &sessions);
        assert!(svg.starts_with("<svg") && svg.ends_with("</svg>\n"));
        assert!(svg.contains("<title>Topology: 1 zone, 2 racks, 3 nodes, 3 BGP sessions</title>"));
        for name in ["a-1", "a-2", "b-1", "tor-r1", "tor-r2", "spine-z-1"] {
            assert!(svg.contains(&format!(">{name}</text>")), "{name} not drawn");
        }
        // The one link down is red and labelled (the legend says "down" too); the down node
        // says so.
        assert_eq!(svg.matches(">down</text>").count(), 1 + 1);
        assert!(svg.contains("node b-1 10.0.2.2 · down"));
        // Sessions: coloured by state, the Idle one with its reason, reflector arrows.
        assert_eq!(
            svg.matches(&format!("stroke=\"{GOOD}\" stroke-width=\"1.3\""))
                .count(),
            2
        );
        assert!(svg.contains("iBGP session a-2 – tor-r1: Idle (peer does not speak BGP)"));
        assert_eq!(
            svg.matches(&format!("stroke=\"{BAD}\" stroke-width=\"1.3\""))
                .count(),
            1
        );
        assert_eq!(
            svg.matches("marker-end=\"url(#podnet-rr-client)\"").count(),
            2 + 1
        );
        // The reflector has its badge (and the legend one more "RR"-framed sample).
        assert_eq!(svg.matches(">RR</text>").count(), 1);
        assert_eq!(render(&topo, &sessions), svg, "not deterministic");
    }

    #[test]
    fn large_clusters_become_rack_tiles_then_zone_tiles() {
        let topo = big(3, 10, 40);
        let mut sessions = Vec::new();
        for n in topo.nodes.iter().skip(1) {
            sessions.push(session(
                &topo.nodes[0].name,
                &n.name,
                "Established",
                Some(&topo.nodes[0].name),
            ));
        }
        sessions.push(session("z1-r0-n-1", "z2-r0-n-1", "Idle", None));
        let svg = render(&topo, &sessions);
        assert!(svg.contains("one tile per rack"));
        assert!(svg.contains("1,200 nodes"));
        assert!(
            !svg.contains(">z0-r0-n-2<"),
            "nodes are not drawn one by one"
        );
        assert!(svg.contains(">z2-r9</text>"));
        // One bundle per rack the reflector's rack serves (29 others) plus the Idle one.
        assert_eq!(
            svg.matches("marker-end=\"url(#podnet-rr-client)\"").count(),
            29 + 1
        );
        assert!(svg.contains("40 Established sessions between z0-r0 and z2-r9"));
        assert!(svg.contains("1 Idle session between z1-r0 and z2-r0"));
        assert_eq!(svg.matches(">RR</text>").count(), 1);
        assert!(svg.len() < 150_000, "{} bytes", svg.len());

        let topo = big(2, 130, 1);
        let svg = render(&topo, &[]);
        assert!(svg.contains("one tile per zone"));
        assert!(svg.contains(">z1</text>") && !svg.contains(">z1-r3</text>"));
        assert!(svg.len() < 20_000, "{} bytes", svg.len());
    }
}
