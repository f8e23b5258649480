//! Golden outputs: `report.md` and `events.jsonl` of every scenario in `scenarios/`, compared
//! byte for byte with `tests/golden/<file stem>.md` and `.events.jsonl`.
//! `UPDATE_GOLDEN=1 cargo test --test report_golden` rewrites them; review the diff.
//! Also: the renderings are deterministic, the HTML page is self-contained, and an empty
//! report renders without panicking.

use std::path::{Path, PathBuf};

use podnet::report::charts::{self, Chart, ChartInputs};
use podnet::report::unreachable::{PairExample, UnreachableGroup};
use podnet::report::{Report, Summary, TopologySummary, dot, events_jsonl, html, markdown};
use podnet::scenario;
use podnet::sim::expect::evaluate;
use podnet::sim::{PoolUsageSeries, Simulation};

/// Every output of one run, as `podnet run` writes them.
struct Rendered {
    md: String,
    html: String,
    events: String,
    dot: String,
    charts: Vec<Chart>,
}

fn scenario_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("scenarios folder")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no scenarios in {}", dir.display());
    files
}

fn render(file: &Path) -> Rendered {
    let s =
        scenario::load(file).unwrap_or_else(|d| panic!("{} does not load:\n{d}", file.display()));
    let outcome = Simulation::new(&s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    let report = Report::new(&s, &outcome, results);
    let charts = podnet::report::run_charts(&report, &outcome);
    Rendered {
        md: markdown::render(&report, &charts, Some(&report.unreachable)),
        html: html::render(&report, &charts, Some(&report.unreachable)),
        events: events_jsonl(&outcome.log),
        dot: dot::render(&outcome.world.topology, &report.session_edges()),
        charts,
    }
}

/// Compares `actual` with the golden file (or rewrites it); returns a problem to report.
fn check_golden(path: &Path, actual: &str) -> Option<String> {
    if std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1") {
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).expect("create tests/golden");
        }
        std::fs::write(path, actual).expect("write golden file");
        return None;
    }
    let Ok(expected) = std::fs::read_to_string(path) else {
        return Some(format!(
            "{} is missing: run `UPDATE_GOLDEN=1 cargo test --test report_golden`",
            path.display()
        ));
    };
    if expected == actual {
        return None;
    }
    let line = expected
        .lines()
        .zip(actual.lines())
        .position(|(e, a)| e != a)
        .unwrap_or_else(|| expected.lines().count().min(actual.lines().count()));
    Some(format!(
        "{} differs from line {}:\n  golden: {}\n  actual: {}\n(UPDATE_GOLDEN=1 rewrites it if the change is intended)",
        path.display(),
        line + 1,
        expected.lines().nth(line).unwrap_or("<end of file>"),
        actual.lines().nth(line).unwrap_or("<end of file>")
    ))
}

#[test]
fn every_scenario_matches_its_golden_report_and_events() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut problems = Vec::new();
    for file in scenario_files() {
        let stem = file
            .file_stem()
            .and_then(|s| s.to_str())
            .expect("file name");
        let out = render(&file);
        problems.extend(check_golden(&golden.join(format!("{stem}.md")), &out.md));
        problems.extend(check_golden(
            &golden.join(format!("{stem}.events.jsonl")),
            &out.events,
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn two_runs_give_identical_bytes() {
    for file in scenario_files() {
        let (a, b) = (render(&file), render(&file));
        let name = file.display();
        assert!(a.md == b.md, "{name}: report.md differs between runs");
        assert!(a.html == b.html, "{name}: report.html differs between runs");
        assert!(a.dot == b.dot, "{name}: topology.dot differs between runs");
        assert_eq!(a.charts.len(), b.charts.len());
        for (x, y) in a.charts.iter().zip(&b.charts) {
            assert!(x == y, "{name}: {} differs between runs", x.file);
        }
    }
}

#[test]
fn html_is_one_self_contained_page_with_every_section() {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/quickstart.yaml");
    let out = render(&file);
    let page = &out.html;
    for heading in [
        "<h1>podnet report: quickstart</h1>",
        "<h2>Summary</h2>",
        "<h2>Pools</h2>",
        "<h2>Nodes</h2>",
        "<h2>Pods</h2>",
        "<h2>Expectations</h2>",
        "<h2>Charts</h2>",
        "<h2>Warnings</h2>",
    ] {
        assert!(page.contains(heading), "missing {heading}");
    }
    assert_eq!(page.matches("<svg").count(), out.charts.len());
    assert!(!page.contains("<script"), "no scripts");
    assert!(!page.contains("<link"), "no linked stylesheets");
    assert!(!page.contains("src="), "no external images");
    assert!(!page.contains("url("), "no external CSS resources");
    // The only address in the page is the SVG namespace, which is never fetched.
    let without_ns = page.replace("xmlns=\"http://www.w3.org/2000/svg\"", "");
    assert!(!without_ns.contains("http:") && !without_ns.contains("https:"));
    // The markdown links the same charts `podnet run` writes beside it.
    for c in &out.charts {
        assert!(out.md.contains(&format!("]({})", c.file)), "{}", c.file);
    }
}

fn empty_report() -> Report {
    Report {
        podnet: "0.1.0",
        scenario: "empty".to_string(),
        description: String::new(),
        seed: 0,
        end_time_us: 0,
        summary: Summary {
            nodes: 0,
            pods: 0,
            pods_running: 0,
            pods_pending: 0,
            pods_unknown: 0,
            allocation_failures: 0,
            blocks: 0,
            borrowed_ips: 0,
            events: 0,
            expectations_passed: 0,
            expectations_failed: 0,
            reachable_pairs: 0,
            pod_pairs: 0,
            max_fib_routes: None,
            bgp_sessions: None,
            bgp_sessions_established: None,
            bgp_updates: None,
            convergence_time_us: None,
            max_rib_routes: None,
        },
        topology: TopologySummary {
            zones: 0,
            racks: 0,
            routers: 0,
            links: 0,
            links_down: 0,
            fabric_bgp: false,
            spines_per_zone: 0,
        },
        pools: Vec::new(),
        nodes: Vec::new(),
        pods: Vec::new(),
        bgp: None,
        unreachable: Vec::new(),
        windows: None,
        expectations: Vec::new(),
        warnings: Vec::new(),
    }
}

#[test]
fn an_empty_cluster_renders_without_panicking() {
    let report = empty_report();
    let usage = PoolUsageSeries::default();
    let empty: [(u64, u64); 0] = [];
    let no_ribs: [(String, u64); 0] = [];
    let inputs = ChartInputs {
        bgp_updates: Some(&empty),
        rib_sizes: Some(&no_ribs),
        ..ChartInputs::new(&report, &usage)
    };
    let charts = charts::render(&inputs);
    assert_eq!(charts.len(), 4);
    for c in &charts {
        assert!(
            c.svg.starts_with("<svg") && c.svg.contains(c.title.split(' ').next().unwrap_or(""))
        );
    }
    let md = markdown::render(&report, &charts, Some(&[]));
    assert!(md.contains("No IP pools."));
    assert!(md.contains("The cluster has no nodes."));
    assert!(md.contains("Every pod pair is reachable."));
    let page = html::render(&report, &charts, None);
    assert!(page.ends_with("</html>\n"));
    assert!(!page.contains("Reachability"));
    let graph = dot::render(&podnet::model::topology::Topology::default(), &[]);
    assert!(graph.starts_with("graph podnet {"));
}

#[test]
fn unreachable_pairs_are_shown_when_given() {
    let report = empty_report();
    let groups = [UnreachableGroup {
        reason: "no route to 192.168.17.0/26".to_string(),
        stopped_at: "tor-rack-b1".to_string(),
        count: 12,
        example: PairExample {
            from: "default/web-3".to_string(),
            to: "default/web-0".to_string(),
        },
        policy: None,
    }];
    let md = markdown::render(&report, &[], Some(&groups));
    assert!(md.contains("## Reachability"));
    assert!(md.contains(
        "| **no route to 192.168.17.0/26** | tor-rack-b1 | 12 | default/web-3 → default/web-0 |"
    ));
    let page = html::render(&report, &[], Some(&groups));
    assert!(page.contains("<h2>Reachability</h2>"));
    assert!(page.contains("default/web-3 → default/web-0"));
}
