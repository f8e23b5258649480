//! Golden outputs: `report.md` and `events.jsonl` of every scenario in `scenarios/`, compared
//! byte for byte with `tests/golden/<file stem>.md` and `.events.jsonl`.
//! `UPDATE_GOLDEN=1 cargo test --test report_golden` rewrites them; review the diff.
//! Also: the renderings are deterministic, the HTML page is self-contained, and an empty
//! report renders without panicking.

use std::path::{Path, PathBuf};

use podnet::report::charts::{self, Chart, ChartInputs};
use podnet::report::unreachable::{PairExample, UnreachableRow};
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
    // `url(#…)` names a marker or pattern of the same SVG; anything else would be fetched.
    assert!(
        page.split("url(").skip(1).all(|rest| rest.starts_with('#')),
        "no external CSS resources"
    );
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
        ended_because: String::new(),
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
        policy: None,
        connectivity: None,
        services: Vec::new(),
        externals: Vec::new(),
        unreachable_causes: Vec::new(),
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
    let groups = [UnreachableRow {
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

/// `report.json` of `file` (or of YAML text) as a JSON value, with the outcome's summary.
fn report_of(s: &scenario::Scenario) -> (serde_json::Value, Report) {
    let outcome = Simulation::new(s).run();
    let results = evaluate(&s.expectations, &outcome.snapshots, &outcome.last);
    let report = Report::new(s, &outcome, results);
    let json = serde_json::from_str(&report.to_json()).expect("report.json parses");
    (json, report)
}

/// Every key SPEC §6.1 calls stable, as JSON pointers; `[]` stands for every element.
const STABLE_KEYS: &[&str] = &[
    "/podnet",
    "/scenario",
    "/seed",
    "/endTimeUs",
    "/summary/nodes",
    "/summary/pods",
    "/summary/podsRunning",
    "/summary/podsPending",
    "/summary/blocks",
    "/summary/borrowedIps",
    "/summary/bgpSessions",
    "/summary/bgpSessionsEstablished",
    "/summary/bgpUpdates",
    "/summary/convergenceTimeUs",
    "/summary/reachablePairs",
    "/summary/podPairs",
    "/summary/maxRibRoutes",
    "/summary/maxFibRoutes",
    "/pools/[]/name",
    "/pools/[]/kind",
    "/pools/[]/cidr",
    "/pools/[]/blockSize",
    "/pools/[]/capacity",
    "/pools/[]/allocated",
    "/pools/[]/reserved",
    "/pools/[]/blocks",
    "/pools/[]/mtu",
    "/nodes/[]/name",
    "/nodes/[]/zone",
    "/nodes/[]/rack",
    "/nodes/[]/ip",
    "/nodes/[]/os",
    "/nodes/[]/up",
    "/nodes/[]/pods",
    "/nodes/[]/blocks",
    "/nodes/[]/borrowedIps",
    "/nodes/[]/ribRoutes",
    "/nodes/[]/fibRoutes",
    "/pods/[]/name",
    "/pods/[]/namespace",
    "/pods/[]/workload",
    "/pods/[]/node",
    "/pods/[]/ip",
    "/pods/[]/pool",
    "/pods/[]/block",
    "/pods/[]/borrowed",
    "/pods/[]/status",
    "/pods/[]/reason",
    "/bgp/sessions",
    "/bgp/sessions/[]/a",
    "/bgp/sessions/[]/b",
    "/bgp/sessions/[]/type",
    "/bgp/sessions/[]/reflectorClient",
    "/bgp/sessions/[]/state",
    "/bgp/sessions/[]/reason",
    "/unreachable",
    "/unreachable/[]/reason",
    "/unreachable/[]/stoppedAt",
    "/unreachable/[]/count",
    "/unreachable/[]/example/from",
    "/unreachable/[]/example/to",
    "/expectations",
    "/expectations/[]/name",
    "/expectations/[]/passed",
    "/expectations/[]/expected",
    "/expectations/[]/actual",
    "/warnings",
];

/// The pointers in `key` that are missing from `json` (`[]` expands to every element).
fn missing(json: &serde_json::Value, key: &str) -> Vec<String> {
    match key.split_once("/[]") {
        None => {
            if json.pointer(key).is_some() {
                Vec::new()
            } else {
                vec![key.to_string()]
            }
        }
        Some((list, rest)) => match json.pointer(list).and_then(|v| v.as_array()) {
            None => vec![list.to_string()],
            Some(items) => items
                .iter()
                .enumerate()
                .flat_map(|(i, item)| {
                    missing(item, rest)
                        .into_iter()
                        .map(move |m| format!("{list}/{i}{m}"))
                })
                .collect(),
        },
    }
}

#[test]
fn every_report_json_has_every_stable_key() {
    let mut problems = Vec::new();
    for file in scenario_files() {
        let s = scenario::load(&file).expect("loads");
        let (json, _) = report_of(&s);
        for key in STABLE_KEYS {
            for m in missing(&json, key) {
                problems.push(format!("{}: {m}", file.display()));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The quick start with `events:` and `expect:` replaced by `tail`.
fn quickstart_with(extra_resources: &str, tail: &str) -> scenario::Scenario {
    let text = podnet::cli::QUICKSTART;
    let head = &text[..text.find("\nevents:").expect("events")];
    let head = head.replace("\nworkloads:", &format!("{extra_resources}\nworkloads:"));
    scenario::load_str("quickstart.yaml", &format!("{head}\n{tail}"))
        .unwrap_or_else(|d| panic!("{d}"))
}

#[test]
fn a_bgppeer_at_a_tor_that_does_not_speak_bgp_is_the_answer_not_a_footnote() {
    // No mesh, and one global BGPPeer at tor-rack-a1 (10.1.1.1), which does not speak BGP
    // (fabric.bgp is false): each of the 12 nodes has one session, and it stays Idle
    // (SPEC §3.4). Without BGP routes a node reaches only its own pods: 24 pods, 2 per node
    // (24 / 12, spread evenly), so 12 × 2 × 1 = 24 of 24 × 23 = 552 ordered pairs deliver
    // and the other 528 all share the one cause.
    let s = quickstart_with(
        "
- apiVersion: projectcalico.org/v3
  kind: BGPConfiguration
  metadata: {name: default}
  spec: {nodeToNodeMeshEnabled: false}
- apiVersion: projectcalico.org/v3
  kind: BGPPeer
  metadata: {name: to-tor}
  spec: {peerIP: 10.1.1.1, asNumber: 64512}
",
        "",
    );
    let (json, report) = report_of(&s);
    let reason = "BGPPeer to-tor: peerIP 10.1.1.1 is tor-rack-a1, which does not speak BGP \
                  (topology.fabric.bgp is false)";
    let summary = report.summary_text();
    assert!(
        summary.contains("  bgp: 0 of 12 sessions Established"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "    12 Idle: {reason} (e.g. a1-control – 10.1.1.1)"
        )),
        "{summary}"
    );
    assert!(
        summary.contains("  reachability: 24 of 552 pod pairs delivered"),
        "{summary}"
    );
    assert!(
        summary.contains(&format!(
            "    528 BGP session not Established: Idle: {reason}"
        )),
        "{summary}"
    );
    assert_eq!(json["unreachableCauses"].as_array().map(Vec::len), Some(1));
    // One warning per Idle session.
    let idle_warnings = report
        .warnings
        .iter()
        .filter(|w| w.starts_with("BGP session ") && w.ends_with(reason))
        .count();
    assert_eq!(idle_warnings, 12);
    let md = markdown::render(&report, &[], Some(&report.unreachable));
    assert!(md.contains("## BGP"), "{md}");
    assert!(
        md.contains(&format!("| **Idle** | {reason} | 12 |")),
        "{md}"
    );
}

#[test]
fn a_node_left_down_is_one_cause_with_its_event() {
    // a2-w-1 goes down at 30s and stays down. Its 2 pods (24 over 12 nodes) keep their
    // addresses but nothing reaches them or leaves them: each sends to 23 others and each of
    // the 22 others sends to both, 2 × 23 + 22 × 2 = 90 ordered pairs, all caused by the one
    // nodeDown event, whichever device the packets stop at.
    let s = quickstart_with("", "events:\n- {at: 30s, nodeDown: a2-w-1}\n");
    let (json, report) = report_of(&s);
    let causes = json["unreachableCauses"].as_array().expect("causes");
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert_eq!(causes[0]["cause"], "node-down");
    assert_eq!(causes[0]["detail"], "a2-w-1 is down");
    assert_eq!(causes[0]["count"], 90);
    assert_eq!(causes[0]["event"]["kind"], "nodeDown");
    assert_eq!(causes[0]["event"]["timeUs"], 30_000_000);
    let summary = report.summary_text();
    assert!(
        summary.contains("    90 node down: a2-w-1 is down, since nodeDown a2-w-1 at 30s (e.g. "),
        "{summary}"
    );
}

#[test]
fn the_summary_says_why_the_run_ended() {
    // `until` later than anything else decides (SPEC §3.1).
    let s = quickstart_with("", "until: 10m\n");
    let (_, report) = report_of(&s);
    assert_eq!(report.end_time_us, 600_000_000);
    assert!(
        report
            .summary_text()
            .starts_with("quickstart (seed 1), ended at 10m\n  ended by: the scenario's `until`\n")
    );
    // Without it, an expectation at 1h (later than any change of the quick start: its last
    // event is at 2m and BGP settles within seconds of it) decides.
    let s = quickstart_with("", "expect:\n- {allocationFailures: 0, at: 1h}\n");
    let (_, report) = report_of(&s);
    assert!(
        report
            .summary_text()
            .contains("ended at 1h\n  ended by: the latest expectation's `at:`\n")
    );
}
