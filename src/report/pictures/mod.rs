//! Pictures of a run that a person would rather look at than read: the topology, a
//! reachability heatmap and an address map per pool, each an SVG laid out here by hand
//! (no layout engine, no fonts), inlined in `report.html` and written beside it.
//!
//! Invariants: deterministic (layouts follow the topology's and the report's order, numbers
//! are written with [`svg::num`]); bounded whatever the cluster's size (each picture
//! aggregates to racks or zones, or to fewer blocks, past a stated limit); drawn from the
//! same facts as the tables, never from anything `report.json` could disagree with.
//! The time charts (pool utilisation, BGP UPDATEs) are plotters charts in
//! [`super::charts`]; this module does not draw axes or series.

pub mod address_map;
pub mod heatmap;
pub mod svg;
pub mod topology;

pub(crate) use super::sections::count;

/// `n` with separators and `word`, plural unless `n` is 1: "1 zone", "1,200 nodes".
pub(crate) fn counted(n: usize, word: &str) -> String {
    let s = if n == 1 { "" } else { "s" };
    format!("{} {word}{s}", count(n))
}

use super::Report;
use super::charts::Chart;
use crate::sim::Outcome;

/// The pictures of a run, in the order the report shows them (before the time charts).
pub fn render(report: &Report, outcome: &Outcome) -> Vec<Chart> {
    let sessions = report.bgp.as_ref().map_or(&[][..], |b| &b.sessions[..]);
    let last = &outcome.last;
    let matrix = heatmap::matrix(report, &last.dataplane, last.policy.as_deref());
    vec![
        Chart {
            file: "topology.svg",
            title: "Topology",
            svg: topology::render(&outcome.world.topology, sessions),
        },
        Chart {
            file: "reachability.svg",
            title: "Reachability between racks",
            svg: heatmap::render(matrix.as_ref()),
        },
        Chart {
            file: "address-map.svg",
            title: "Address map per pool",
            svg: address_map::render(&report.pools, &last.blocks, &report.pods, &report.nodes),
        },
    ]
}
