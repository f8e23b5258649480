//! `reachability.svg`: the share of pod pairs delivered from each rack (row) to each rack
//! (column), or zone × zone above [`RACK_LIMIT`] racks.
//!
//! A cell counts the ordered pairs of distinct pods with an address, the source's pod on a
//! node of the row's group and the destination's on a node of the column's, exactly as the
//! summary's "pod pairs delivered" counts them (routing, and policy when enforced, over every
//! packet class): the cells' pairs add up to the summary's. Green is 100 %, red 0 %, grey no
//! pair. A cell that is not fully delivered links to the report's reachability section
//! ([`CAUSES`]), where the unreachable pairs are grouped by cause.
//!
//! Invariants: at most [`RACK_LIMIT`] × [`RACK_LIMIT`] cells (zones beyond [`ZONE_LIMIT`]
//! are not drawn, and the picture says so); the counts are computed here by the forwarding
//! layer's own pair counting or, when the summary delivers every pair, counted by the same
//! definition (ordered pairs of distinct pods the dataplane knows), never estimated. This module does not explain causes.

use std::collections::BTreeMap;

use super::svg::{Anchor, BAD, GOOD, INK, LINE, MUTED, Svg, TextStyle, shorten};
use crate::forwarding::connect::PolicyInputs;
use crate::forwarding::{Dataplane, PodKey};
use crate::report::Report;
use crate::sim::policy::PairCounter;

/// One row and column per rack up to this many racks, per zone above.
pub const RACK_LIMIT: usize = 24;
/// Zones drawn at most.
pub const ZONE_LIMIT: usize = 40;
/// Where a cell links: the report's section of unreachable pairs by cause.
pub const CAUSES: &str = "report.html#reachability";

/// Each group's pods with an address, in the groups' order.
type Members = Vec<Vec<PodKey>>;

/// (pairs, delivered) by row, then column.
pub type Cells = Vec<Vec<(u64, u64)>>;

/// The delivered share between groups of pods.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Matrix {
    /// "rack" or "zone".
    pub unit: &'static str,
    pub groups: Vec<String>,
    /// `cells[row][column]` = (pairs, delivered).
    pub cells: Cells,
}

/// The matrix of a run: groups in the order the nodes' racks (or zones) first appear in the
/// node table; `None` when there are too many zones to draw.
pub fn matrix(report: &Report, dp: &Dataplane, policy: Option<&PolicyInputs>) -> Option<Matrix> {
    let (unit, groups, members) = layout(report)?;
    // When the summary delivers every pair, so does every cell: its pairs are counted as
    // the walks count them, and nothing is walked again.
    let cells = if report.summary.reachable_pairs == report.summary.pod_pairs {
        counted(dp, &members)
    } else {
        walked(dp, policy, &members)
    };
    Some(Matrix {
        unit,
        groups,
        cells,
    })
}

/// The unit, the groups and each group's pods with an address; `None` when there are too
/// many zones to draw.
fn layout(report: &Report) -> Option<(&'static str, Vec<String>, Members)> {
    let racks = distinct(report.nodes.iter().map(|n| n.rack.as_str()));
    let by_zone = racks.len() > RACK_LIMIT;
    let group_of: BTreeMap<&str, &str> = report
        .nodes
        .iter()
        .map(|n| {
            let g = if by_zone { &n.zone } else { &n.rack };
            (n.name.as_str(), g.as_str())
        })
        .collect();
    let groups = if by_zone {
        distinct(report.nodes.iter().map(|n| n.zone.as_str()))
    } else {
        racks
    };
    if groups.len() > ZONE_LIMIT {
        return None;
    }
    let mut members: Members = vec![Vec::new(); groups.len()];
    for p in &report.pods {
        if p.ip.is_none() {
            continue;
        }
        let Some(g) = p.node.as_deref().and_then(|n| group_of.get(n)) else {
            continue;
        };
        if let Some(i) = groups.iter().position(|x| x == g) {
            members[i].push(p.key);
        }
    }
    let unit = if by_zone { "zone" } else { "rack" };
    Some((unit, groups, members))
}

/// Each cell walked: the routing setup (atoms over every table) and the policy engine once
/// for all cells, so each cell costs its own walks only.
fn walked(dp: &Dataplane, policy: Option<&PolicyInputs>, members: &[Vec<PodKey>]) -> Cells {
    let counter = PairCounter::new(dp, policy);
    members
        .iter()
        .map(|from| {
            members
                .iter()
                .map(|to| {
                    if from.is_empty() || to.is_empty() {
                        (0, 0)
                    } else {
                        let p = counter.between(from, to, None);
                        (p.pairs, p.reachable)
                    }
                })
                .collect()
        })
        .collect()
}

/// Each cell fully delivered, its pairs counted as the walks count them: the ordered pairs
/// of distinct pods the dataplane knows, a pod in exactly one group.
fn counted(dp: &Dataplane, members: &[Vec<PodKey>]) -> Cells {
    let known: Vec<u64> = members
        .iter()
        .map(|m| m.iter().filter(|k| dp.pod(**k).is_some()).count() as u64)
        .collect();
    known
        .iter()
        .enumerate()
        .map(|(i, from)| {
            known
                .iter()
                .enumerate()
                .map(|(j, to)| {
                    let pairs = from * to - if i == j { *from } else { 0 };
                    (pairs, pairs)
                })
                .collect()
        })
        .collect()
}

fn distinct<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for n in names {
        if !out.iter().any(|x| x == n) {
            out.push(n.to_string());
        }
    }
    out
}

/// The cell colour: red at 0 %, amber at 50 %, green at 100 %; grey without pairs.
fn colour(pairs: u64, delivered: u64) -> String {
    if pairs == 0 {
        return "#e9ecef".to_string();
    }
    if delivered == pairs {
        return GOOD.to_string();
    }
    // Anything short of full delivery stays on the red-to-amber side, so 99 % is not green.
    let share = delivered as f64 / pairs as f64;
    let (r0, g0, b0) = (0xb3, 0x26, 0x1e);
    let (r1, g1, b1) = (0xf0, 0xb4, 0x29);
    let mix = |a: u8, b: u8| (a as f64 + (b as f64 - a as f64) * share).round() as u8;
    format!("#{:02x}{:02x}{:02x}", mix(r0, r1), mix(g0, g1), mix(b0, b1))
}

/// The share as a cell shows it: whole percent, but never "100%" unless all pairs deliver
/// and never "0%" when some do.
pub fn share_label(pairs: u64, delivered: u64) -> String {
    if pairs == 0 {
        return "–".to_string();
    }
    let percent = (u128::from(delivered) * 100 / u128::from(pairs)) as u64;
    match (delivered, percent) {
        (d, _) if d == pairs => "100%".to_string(),
        (d, 0) if d > 0 => "<1%".to_string(),
        (_, p) => format!("{p}%"),
    }
}

/// Draws the matrix, or a note when there is none.
pub fn render(m: Option<&Matrix>) -> String {
    let Some(m) = m else {
        let title = format!("Reachability: more than {ZONE_LIMIT} zones, not drawn");
        let mut svg = Svg::new(760.0, 80.0, &title);
        svg.text((20.0, 44.0), TextStyle::plain(14.0).fill(MUTED), &title);
        return svg.finish();
    };
    let n = m.groups.len();
    let cell = (560.0 / n.max(1) as f64).clamp(22.0, 64.0).floor();
    let longest = m
        .groups
        .iter()
        .map(|g| g.chars().count().min(18))
        .max()
        .unwrap_or(4);
    let label_w = longest as f64 * 7.0 + 16.0;
    let left = 20.0 + label_w;
    // Column labels are turned 45°: their height is about their length times sin 45°.
    let top = 70.0 + longest as f64 * 7.0 * 0.72;
    let width = f64::max(left + n as f64 * cell + 40.0, 760.0);
    let height = top + n as f64 * cell + 70.0;
    let (pairs, delivered) = m
        .cells
        .iter()
        .flatten()
        .fold((0u64, 0u64), |(p, d), c| (p + c.0, d + c.1));
    let title = format!(
        "Reachability {unit} × {unit}: {} of {} pod pairs delivered",
        super::count(delivered),
        super::count(pairs),
        unit = m.unit
    );
    let mut svg = Svg::new(width, height, &title);
    svg.text((20.0, 24.0), TextStyle::plain(16.0).bold(), &title);
    svg.text(
        (20.0, 44.0),
        TextStyle::plain(12.0).fill(MUTED),
        &format!(
            "row: the source pod's {unit}, column: the destination's; a cell short of 100% links to the causes",
            unit = m.unit
        ),
    );
    let font = (cell * 0.3).clamp(9.0, 13.0);
    for (i, g) in m.groups.iter().enumerate() {
        let y = top + i as f64 * cell + cell / 2.0 + 4.0;
        svg.text(
            (left - 8.0, y),
            TextStyle::plain(12.0).anchor(Anchor::End),
            &shorten(g, 18),
        );
        let x = left + i as f64 * cell + cell / 2.0;
        svg.raw(&format!(
            "<text transform=\"translate({} {}) rotate(-45)\" font-size=\"12\" fill=\"{INK}\">{}</text>\n",
            super::svg::num(x),
            super::svg::num(top - 6.0),
            crate::report::markup::escape(&shorten(g, 18))
        ));
    }
    for (r, row) in m.cells.iter().enumerate() {
        for (c, &(p, d)) in row.iter().enumerate() {
            let (x, y) = (left + c as f64 * cell, top + r as f64 * cell);
            let tip = format!(
                "{} → {}: {} of {} pod pairs delivered",
                m.groups[r],
                m.groups[c],
                super::count(d),
                super::count(p)
            );
            let linked = p > 0 && d < p;
            if linked {
                svg.link(CAUSES, &format!("{tip}; see the causes"));
            } else {
                svg.group(&tip);
            }
            svg.rect((x, y, cell, cell), 0.0, &colour(p, d), "#ffffff", 1.5, "");
            if cell >= 26.0 {
                let fill = if p == 0 { MUTED } else { "#ffffff" };
                svg.text(
                    (x + cell / 2.0, y + cell / 2.0 + font / 3.0),
                    TextStyle::plain(font)
                        .anchor(Anchor::Middle)
                        .fill(fill)
                        .bold(),
                    &share_label(p, d),
                );
            }
            if linked {
                svg.end_link();
            } else {
                svg.end();
            }
        }
    }
    // Legend.
    let y = top + n as f64 * cell + 30.0;
    let mut x = 20.0;
    for (label, fill) in [
        ("100% delivered", GOOD.to_string()),
        ("50%", colour(2, 1)),
        ("0%", BAD.to_string()),
        ("no pod pairs", colour(0, 0)),
    ] {
        svg.rect((x, y - 12.0, 16.0, 16.0), 2.0, &fill, LINE, 0.5, "");
        svg.text(
            (x + 22.0, y + 1.0),
            TextStyle::plain(12.0).fill(MUTED),
            label,
        );
        x += 36.0 + label.chars().count() as f64 * 7.0;
    }
    svg.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_never_round_to_full_or_empty() {
        assert_eq!(share_label(0, 0), "–");
        assert_eq!(share_label(10, 10), "100%");
        assert_eq!(share_label(1000, 999), "99%");
        assert_eq!(share_label(1000, 1), "<1%");
        assert_eq!(share_label(4, 0), "0%");
        assert_eq!(colour(10, 10), GOOD);
        assert_eq!(colour(10, 0), "#b3261e");
        assert_ne!(colour(1000, 999), GOOD);
    }

    /// Where every pair is delivered, the counted cells are the walked ones (with and
    /// without policy; racks of different sizes; Windows and Spiderpool nodes).
    #[test]
    fn counted_cells_are_the_walked_cells_when_everything_delivers() {
        for name in [
            "quickstart",
            "calico-rack-pools",
            "spiderpool-cross-zone",
            "windows-nodes",
            "windows-policy-hns",
        ] {
            let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join(format!("scenarios/{name}.yaml"));
            let scenario = crate::scenario::load(&file).expect("a library scenario");
            let outcome = crate::sim::Simulation::new(&scenario).run();
            let report = Report::new(&scenario, &outcome, Vec::new());
            let s = &report.summary;
            assert_eq!(s.reachable_pairs, s.pod_pairs, "{name} delivers everything");
            let last = &outcome.last;
            let (_, _, members) = layout(&report).expect("a matrix");
            let walked = walked(&last.dataplane, last.policy.as_deref(), &members);
            assert_eq!(counted(&last.dataplane, &members), walked, "{name}");
            assert!(walked.iter().flatten().any(|c| c.0 > 0), "{name} has pairs");
        }
    }

    #[test]
    fn cells_link_to_the_causes_only_when_short_of_full_delivery() {
        let m = Matrix {
            unit: "rack",
            groups: vec!["r1".into(), "r<2>".into()],
            cells: vec![vec![(6, 6), (9, 3)], vec![(9, 9), (0, 0)]],
        };
        let svg = render(Some(&m));
        assert!(svg.contains("18 of 24 pod pairs delivered"));
        assert_eq!(svg.matches(&format!("<a href=\"{CAUSES}\">")).count(), 1);
        assert!(svg.contains("r1 → r&lt;2&gt;: 3 of 9 pod pairs delivered; see the causes"));
        assert_eq!(svg.matches("<rect").count(), 1 + 4 + 4);
        assert!(svg.contains(">33%</text>"));
        assert!(render(None).contains("not drawn"));
    }
}
