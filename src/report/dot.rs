//! `topology.dot`: the cluster as a Graphviz graph (`dot -Tsvg topology.dot > topology.svg`).
//!
//! Devices are grouped as the architect drew them, core on top and nodes at the bottom: one
//! cluster per zone holding one cluster per rack (its ToR and its nodes), the zone's spines
//! beside the racks, the core outside.
//! Links are solid lines (red and labelled "down" when down); BGP sessions are dashed lines
//! (blue for iBGP, orange for eBGP, grey when not Established), and a route reflector's
//! session to a client is an arrow towards the client labelled "RR client".
//! Deleted nodes and their links are left out. Output order follows the topology's vectors,
//! so the same topology gives the same bytes.

use crate::model::topology::{DeviceKind, LinkKind, Topology};

/// One BGP session to draw, between two devices named as in the topology.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionEdge {
    pub a: String,
    pub b: String,
    pub kind: SessionKind,
    /// `b` is a route-reflector client of `a` (RFC 4456).
    pub reflector_client: bool,
    pub established: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SessionKind {
    Ibgp,
    Ebgp,
}

/// Renders the topology and the given BGP sessions (empty until BGP is simulated).
pub fn render(topology: &Topology, sessions: &[SessionEdge]) -> String {
    let mut out = String::from("graph podnet {\n");
    // Bottom to top puts the core on top; under it `labelloc=b` puts cluster labels on top.
    out.push_str(
        "  graph [fontname=\"Helvetica\", fontsize=12, rankdir=BT, labelloc=b, compound=true];\n",
    );
    out.push_str("  node [fontname=\"Helvetica\", fontsize=10];\n");
    out.push_str("  edge [fontname=\"Helvetica\", fontsize=9];\n");

    for (z, zone) in topology.zones.iter().enumerate() {
        out.push_str(&format!(
            "  subgraph {} {{\n    label={};\n    style=rounded;\n    color=\"#9aa5b1\";\n",
            quote(&format!("cluster_zone_{z}")),
            quote(&format!("zone {}", zone.name))
        ));
        for &r in &zone.racks {
            let Some(rack) = topology.racks.get(r.index()) else {
                continue;
            };
            out.push_str(&format!(
                "    subgraph {} {{\n      label={};\n      style=\"rounded,filled\";\n      fillcolor=\"#f5f7f9\";\n      color=\"#c4ccd4\";\n",
                quote(&format!("cluster_rack_{}", r.index())),
                quote(&format!("rack {} {}", rack.name, rack.subnet))
            ));
            if let Some(tor) = topology.devices.get(rack.tor.index()) {
                out.push_str(&format!("      {}\n", router_node(&tor.name, tor.address)));
            }
            for &n in &rack.nodes {
                let Some(node) = topology.nodes.get(n.index()) else {
                    continue;
                };
                if node.deleted {
                    continue;
                }
                let mut label = format!("{}\n{}", node.name, node.ip);
                let mut attrs = String::from("shape=ellipse");
                if node.down {
                    label.push_str("\n(down)");
                    attrs.push_str(", style=dashed, color=\"#b3261e\", fontcolor=\"#b3261e\"");
                }
                out.push_str(&format!(
                    "      {} [{attrs}, label={}];\n",
                    quote(&node.name),
                    quote(&label)
                ));
            }
            out.push_str("    }\n");
        }
        for &s in &zone.spines {
            if let Some(spine) = topology.devices.get(s.index()) {
                out.push_str(&format!(
                    "    {}\n",
                    router_node(&spine.name, spine.address)
                ));
            }
        }
        out.push_str("  }\n");
    }
    for d in &topology.devices {
        if d.kind == DeviceKind::Core {
            out.push_str(&format!("  {}\n", router_node(&d.name, d.address)));
        }
    }

    for link in &topology.links {
        // A ToR's own access link joins it to its segment: there is no second device.
        if link.a == link.b {
            continue;
        }
        let (Some(a), Some(b)) = (
            topology.devices.get(link.a.index()),
            topology.devices.get(link.b.index()),
        ) else {
            continue;
        };
        let deleted = |kind: DeviceKind| match kind {
            DeviceKind::Node(n) => topology.nodes.get(n.index()).is_none_or(|n| n.deleted),
            _ => false,
        };
        if deleted(a.kind) || deleted(b.kind) {
            continue;
        }
        let weight = match link.kind {
            LinkKind::Access => "",
            LinkKind::Fabric => ", penwidth=1.5",
            LinkKind::InterZone => ", penwidth=2",
        };
        let state = if link.up {
            String::from("color=\"#5b6570\"")
        } else {
            String::from("color=\"#b3261e\", fontcolor=\"#b3261e\", label=\"down\"")
        };
        out.push_str(&format!(
            "  {} -- {} [style=solid, {state}{weight}];\n",
            quote(&a.name),
            quote(&b.name)
        ));
    }

    for s in sessions {
        let colour = match (s.established, s.kind) {
            (false, _) => "#9aa5b1",
            (true, SessionKind::Ibgp) => "#1f5fa8",
            (true, SessionKind::Ebgp) => "#d9730d",
        };
        let kind = match s.kind {
            SessionKind::Ibgp => "iBGP",
            SessionKind::Ebgp => "eBGP",
        };
        let mut label = String::from(kind);
        let mut attrs = format!("style=dashed, color=\"{colour}\", fontcolor=\"{colour}\"");
        if s.reflector_client {
            label.push_str(" RR client");
            attrs.push_str(", dir=forward, arrowhead=empty");
        }
        if !s.established {
            label.push_str(" (Idle)");
        }
        out.push_str(&format!(
            "  {} -- {} [{attrs}, label={}, constraint=false];\n",
            quote(&s.a),
            quote(&s.b),
            quote(&label)
        ));
    }
    out.push_str("}\n");
    out
}

fn router_node(name: &str, address: std::net::IpAddr) -> String {
    format!(
        "{} [shape=box, style=\"rounded,filled\", fillcolor=\"#dce8f5\", label={}];",
        quote(name),
        quote(&format!("{name}\n{address}"))
    )
}

/// A DOT double-quoted string: `"` and `\` escaped, line breaks as `\n`.
fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => {}
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn racks_are_clusters_links_solid_sessions_dashed() {
        let topo = crate::report::testutil::two_racks_one_fabric_link_down();
        let sessions = [
            SessionEdge {
                a: "a-1".into(),
                b: "b-1".into(),
                kind: SessionKind::Ibgp,
                reflector_client: true,
                established: true,
            },
            SessionEdge {
                a: "a-2".into(),
                b: "tor-r1".into(),
                kind: SessionKind::Ebgp,
                reflector_client: false,
                established: false,
            },
        ];
        let dot = render(&topo, &sessions);
        assert!(dot.starts_with("graph podnet {\n") && dot.ends_with("}\n"));
        assert!(dot.contains("subgraph \"cluster_rack_0\""));
        assert!(dot.contains("label=\"rack r1 10.0.1.0/24\""));
        assert!(dot.contains("\"a-1\" -- \"tor-r1\" [style=solid"));
        assert_eq!(dot.matches("label=\"down\"").count(), 1);
        assert!(dot.contains(
            "\"a-1\" -- \"b-1\" [style=dashed, color=\"#1f5fa8\", fontcolor=\"#1f5fa8\", dir=forward, arrowhead=empty, label=\"iBGP RR client\""
        ));
        assert!(dot.contains("label=\"eBGP (Idle)\""));
        // No self-loop for the ToRs' own access links.
        assert!(!dot.contains("\"tor-r1\" -- \"tor-r1\""));
        assert_eq!(dot.matches('{').count(), dot.matches('}').count());
    }

    #[test]
    fn empty_topology_is_a_valid_graph() {
        assert_eq!(render(&Topology::default(), &[]).lines().last(), Some("}"));
        assert_eq!(quote("a\"b\\c\nd"), "\"a\\\"b\\\\c\\nd\"");
    }
}
