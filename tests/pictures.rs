//! The pictures of `report.html` (topology, reachability heatmap, address map, time charts)
//! checked as SVG documents, without a browser: well-formed, of a sensible size, not empty,
//! and drawing the numbers the report's tables give. `tests/browser.rs` checks that a browser
//! renders them.

use std::path::Path;

use podnet::report::charts::Chart;
use podnet::report::pictures::heatmap;
use podnet::report::{Report, run_charts};
use podnet::scenario;
use podnet::sim::expect::evaluate;
use podnet::sim::{Outcome, Simulation};

fn run(name: &str) -> (Report, Outcome) {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("scenarios/{name}.yaml"));
    let s = scenario::load(&file).unwrap_or_else(|d| panic!("{name} does not load:\n{d}"));
    let outcome = Simulation::new(&s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    (Report::new(&s, &outcome, results), outcome)
}

/// Every tag is closed in order (a stack of element names), no text outside the root.
fn assert_well_formed(file: &str, svg: &str) {
    assert!(svg.starts_with("<svg"), "{file} does not start with <svg");
    assert!(
        svg.trim_end().ends_with("</svg>"),
        "{file} does not end with </svg>"
    );
    let mut stack: Vec<&str> = Vec::new();
    let mut rest = svg;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            panic!("{file}: unterminated tag");
        };
        let tag = &rest[open + 1..open + close];
        rest = &rest[open + close + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            let top = stack.pop();
            assert_eq!(top, Some(name.trim()), "{file}: </{name}> closes {top:?}");
        } else if !tag.ends_with('/') {
            let name = tag.split_whitespace().next().unwrap_or("");
            stack.push(name);
        }
    }
    assert!(stack.is_empty(), "{file}: unclosed {stack:?}");
    assert!(
        !svg.contains("NaN") && !svg.contains("inf\""),
        "{file}: a bad number"
    );
}

/// The root's width and height attributes.
fn size(svg: &str) -> (f64, f64) {
    let root = &svg[..svg.find('>').unwrap_or(0)];
    let attr = |name: &str| -> f64 {
        let at = root.find(&format!(" {name}=\"")).expect("attribute") + name.len() + 3;
        let end = root[at..].find('"').expect("closing quote");
        root[at..at + end].parse().expect("a number")
    };
    (attr("width"), attr("height"))
}

fn chart<'a>(charts: &'a [Chart], file: &str) -> &'a str {
    &charts
        .iter()
        .find(|c| c.file == file)
        .unwrap_or_else(|| panic!("no {file}"))
        .svg
}

#[test]
fn every_picture_is_well_formed_sized_and_drawn() {
    for name in [
        "quickstart",
        "route-reflectors",
        "borrowed-ip-blackhole",
        "spiderpool-cross-zone",
    ] {
        let (report, outcome) = run(name);
        let charts = run_charts(&report, &outcome);
        for file in ["topology.svg", "reachability.svg", "address-map.svg"] {
            assert!(charts.iter().any(|c| c.file == file), "{name}: no {file}");
        }
        for c in &charts {
            let what = format!("{name}/{}", c.file);
            assert_well_formed(&what, &c.svg);
            let (w, h) = size(&c.svg);
            assert!((300.0..=4000.0).contains(&w), "{what}: width {w}");
            assert!((150.0..=20000.0).contains(&h), "{what}: height {h}");
            let shapes = ["<rect", "<path", "<line", "<polyline", "<circle"]
                .iter()
                .map(|s| c.svg.matches(s).count())
                .sum::<usize>();
            assert!(shapes >= 5, "{what}: only {shapes} shapes");
            assert!(
                c.svg.matches("<text").count() >= 3,
                "{what}: hardly any text"
            );
        }
        // Every live node is drawn by name in these small clusters.
        let topology = chart(&charts, "topology.svg");
        for n in &report.nodes {
            assert!(
                topology.contains(&format!(">{}</text>", n.name)),
                "{name}: {}",
                n.name
            );
        }
        // Every pool is in the address map.
        let map = chart(&charts, "address-map.svg");
        for p in &report.pools {
            assert!(
                map.contains(&format!("pool {} ", p.name)),
                "{name}: pool {}",
                p.name
            );
        }
    }
}

/// The heatmap's cells count the pairs the summary counts: they add up to its totals, and
/// a cell short of full delivery links to the causes.
#[test]
fn the_heatmap_adds_up_to_the_summary() {
    for name in [
        "quickstart",
        "borrowed-ip-blackhole",
        "policy-cross-zone",
        "spiderpool-wrong-subnet",
    ] {
        let (report, outcome) = run(name);
        let last = &outcome.last;
        let m =
            heatmap::matrix(&report, &last.dataplane, last.policy.as_deref()).expect("a matrix");
        assert_eq!(m.unit, "rack");
        let racks: std::collections::BTreeSet<&str> =
            report.nodes.iter().map(|n| n.rack.as_str()).collect();
        assert_eq!(m.groups.len(), racks.len(), "{name}");
        let (pairs, delivered) = m
            .cells
            .iter()
            .flatten()
            .fold((0, 0), |(p, d), c| (p + c.0, d + c.1));
        assert_eq!(pairs, report.summary.pod_pairs, "{name}: pairs");
        assert_eq!(
            delivered, report.summary.reachable_pairs,
            "{name}: delivered"
        );
        let svg = heatmap::render(Some(&m));
        let short = m.cells.iter().flatten().filter(|c| c.1 < c.0).count();
        assert_eq!(
            svg.matches(&format!("<a href=\"{}\">", heatmap::CAUSES))
                .count(),
            short,
            "{name}"
        );
        assert_eq!(
            short > 0,
            report.summary.reachable_pairs < report.summary.pod_pairs
        );
    }
}

/// The pages link the heatmap's cells to the section that groups the causes.
#[test]
fn the_heatmap_links_to_a_section_of_the_page() {
    let (report, outcome) = run("borrowed-ip-blackhole");
    let charts = run_charts(&report, &outcome);
    let page = podnet::report::html::render(&report, &charts, Some(&report.unreachable));
    let anchor = heatmap::CAUSES.split('#').nth(1).expect("an anchor");
    assert!(page.contains(&format!("<section id=\"{anchor}\">")));
    assert!(page.contains(&format!("<a href=\"{}\">", heatmap::CAUSES)));
}

/// The time charts share the run's time axis and mark every scenario event.
#[test]
fn time_charts_share_the_axis_and_mark_the_events() {
    // quickstart.yaml: nodeDown a2-w-1 at 30s, scale at 1m10s, linkDown at 2m, ...
    let (report, outcome) = run("quickstart");
    let markers = podnet::report::event_markers(&outcome.log);
    assert!(
        markers
            .iter()
            .any(|m| m.time_us == 30_000_000 && m.label == "nodeDown a2-w-1")
    );
    assert!(
        markers.iter().any(|m| m.time_us == 120_000_000
            && m.label.starts_with("linkDown tor-rack-b1--spine-zone-b-1"))
    );
    let charts = run_charts(&report, &outcome);
    let pool = chart(&charts, "pool-utilisation.svg");
    let bgp = chart(&charts, "bgp-updates.svg");
    for m in &markers {
        let label = m.label.chars().take(20).collect::<String>();
        assert!(pool.contains(&label), "pool chart lacks {label}");
        assert!(bgp.contains(&label), "BGP chart lacks {label}");
    }
    // The same tick labels at the same places along both time axes: plotters writes an x
    // tick label centred below the axis, its text on the next line.
    let ticks = |svg: &str| -> Vec<(String, String)> {
        svg.split("<text")
            .skip(1)
            .filter_map(|t| {
                let (attrs, rest) = t.split_once('>')?;
                let text = rest.split('<').next()?.trim();
                let numeric =
                    !text.is_empty() && text.chars().all(|c| c.is_ascii_digit() || c == '.');
                let x_tick = attrs.contains("text-anchor=\"middle\"")
                    && attrs.contains("dy=\"0.76em\"")
                    && !attrs.contains("rotate");
                let x = attrs.split("x=\"").nth(1)?.split('"').next()?;
                (numeric && x_tick).then(|| (x.to_string(), text.to_string()))
            })
            .collect()
    };
    let (p, b) = (ticks(pool), ticks(bgp));
    assert!(p.len() >= 4, "{p:?}");
    assert_eq!(p, b, "the two time axes differ");
    // The axis runs to the end of the run (quickstart ends after its last event at 4m).
    let last: f64 = p
        .iter()
        .filter_map(|t| t.1.parse().ok())
        .fold(0.0, f64::max);
    let end_s = report.end_time_us as f64 / 1e6;
    assert!(
        last <= end_s && last >= end_s * 0.8,
        "last tick {last}, end {end_s}"
    );
}

/// The pool chart counts what the pool table's "pods" column counts: at the end of every run,
/// each pool's last sample is the number of pods holding one of its addresses.
#[test]
fn the_pool_chart_ends_at_the_pool_tables_pods_column() {
    for name in [
        "quickstart",
        "pool-too-small",
        "block-limit",
        "spiderpool-cross-zone",
        "windows-nodes",
    ] {
        let (report, outcome) = run(name);
        let usage = &outcome.pool_usage;
        let last = usage.samples.last().expect("samples");
        for p in &report.pools {
            let pods = report
                .pods
                .iter()
                .filter(|x| x.ip.is_some() && x.pool.as_deref() == Some(p.name.as_str()))
                .count() as u64;
            let charted = usage
                .pools
                .iter()
                .position(|n| *n == p.name)
                .map_or(0, |i| last.allocated.get(i).copied().unwrap_or(0));
            assert_eq!(charted, pods, "{name}: pool {}", p.name);
        }
        let md = podnet::report::markdown::render(&report, &[], None);
        assert!(
            md.contains("| allocated | pods | used |"),
            "{name}: the pool table has a pods column"
        );
    }
}
