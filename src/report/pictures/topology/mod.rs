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

mod detailed;
mod tiled;

use detailed::detailed;
use tiled::aggregated;

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

/// The picture's canvas and title: zones, racks, live nodes and sessions counted, then
/// `suffix`.
fn canvas(
    topo: &Topology,
    live: usize,
    sessions: &[SessionRow],
    suffix: &str,
    (width, height): (f64, f64),
) -> Svg {
    let title = format!(
        "Topology: {}, {}, {}, {}{suffix}",
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
    svg
}

/// A zone's (or a band of tiles') outline, its label in the top-left corner.
fn outline(svg: &mut Svg, at: Placed, label: &str) {
    svg.rect((at.x, at.y, at.w, at.h), 10.0, "none", LINE, 1.2, "");
    svg.text(
        (at.x + 10.0, at.y + 17.0),
        TextStyle::plain(13.0).fill(MUTED).bold(),
        label,
    );
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

type BundleKey = (usize, usize, usize);

#[cfg(test)]
mod tests {
    use super::*;

    fn session(a: &str, b: &str, state: &'static str, reflector: Option<&str>) -> SessionRow {
        SessionRow {
            a: a.into(),
            b: b.into(),
            session_type: "ibgp",
            reflector_client: reflector.is_some(),
            reflector: reflector.map(Into::into),
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
        let mut topo = crate::report::testutil::two_racks_one_fabric_link_down();
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
