//! The results of a run as plain, serializable data, and their renderings.
//!
//! [`Report`] is built from a scenario, its simulation outcome and the expectation verdicts,
//! and is the single source for every output format, so `report.json`, the text summary and
//! `podnet check` cannot disagree. Keys are the stable ones of SPEC §6.1; a key appears only
//! when podnet computes it.

pub mod charts;
pub mod dot;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod markup;
pub mod sections;
pub mod unreachable;
pub mod windows;

use serde::Serialize;

use crate::model::topology::DeviceKind;
use crate::model::workload::PodStatus;
use crate::scenario::Scenario;
use crate::sim::expect::ExpectationResult;
use crate::sim::snapshot::{NodeRow, PodRow, PoolRow, SessionRow};
use crate::sim::{LogEntry, Outcome};
use unreachable::{PairExample, UnreachableGroup};

/// `report.json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub podnet: &'static str,
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub end_time_us: u64,
    pub summary: Summary,
    pub topology: TopologySummary,
    pub pools: Vec<PoolRow>,
    pub nodes: Vec<NodeRow>,
    pub pods: Vec<PodRow>,
    /// BGP sessions, when anything speaks BGP.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp: Option<BgpSection>,
    /// Unreachable ordered pod pairs grouped by (reason, where they stopped).
    pub unreachable: Vec<UnreachableGroup>,
    /// Windows nodes' HNS objects and what each HNS layout allows, when any node runs Windows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<windows::WindowsSection>,
    pub expectations: Vec<ExpectationResult>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BgpSection {
    pub sessions: Vec<SessionRow>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub nodes: usize,
    pub pods: usize,
    pub pods_running: usize,
    pub pods_pending: usize,
    pub pods_unknown: usize,
    pub allocation_failures: usize,
    pub blocks: usize,
    pub borrowed_ips: usize,
    pub events: usize,
    pub expectations_passed: usize,
    pub expectations_failed: usize,
    /// Ordered pairs of distinct pods with an address that deliver, and all such pairs:
    /// n(n−1).
    pub reachable_pairs: u64,
    pub pod_pairs: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_fib_routes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp_sessions: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp_sessions_established: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub bgp_updates: Option<u64>,
    /// SPEC §2.6 `convergedWithin` at the end of the run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub convergence_time_us: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_rib_routes: Option<usize>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologySummary {
    pub zones: usize,
    pub racks: usize,
    pub routers: usize,
    pub links: usize,
    pub links_down: usize,
    pub fabric_bgp: bool,
    pub spines_per_zone: u32,
}

impl Report {
    pub fn new(
        scenario: &Scenario,
        outcome: &Outcome,
        expectations: Vec<ExpectationResult>,
    ) -> Report {
        let topo = &outcome.world.topology;
        let last = &outcome.last;
        let mut warnings = scenario.warning_lines();
        warnings.extend(outcome.notes.iter().cloned());
        let passed = expectations.iter().filter(|e| e.passed).count();
        let reach = last.reachability();
        let pod_name = |key| {
            last.pods.iter().find(|p| p.key == key).map_or_else(
                || "?".to_string(),
                |p| format!("{}/{}", p.namespace, p.name),
            )
        };
        let unreachable = reach
            .groups
            .iter()
            .map(|g| UnreachableGroup {
                reason: g.reason.to_string(),
                policy: g.denial.as_ref().map(|d| unreachable::DenialRow {
                    side: d.side.as_str(),
                    tier: d.by.tier().map(str::to_string),
                    policy: d.by.policy().map(str::to_string),
                    rule: d.by.rule_text(),
                }),
                stopped_at: last
                    .devices
                    .get(g.stopped_at.index())
                    .cloned()
                    .unwrap_or_default(),
                count: g.count,
                example: PairExample {
                    from: pod_name(g.example.0),
                    to: pod_name(g.example.1),
                },
            })
            .collect();
        Report {
            podnet: env!("CARGO_PKG_VERSION"),
            scenario: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            end_time_us: outcome.end.as_micros(),
            summary: Summary {
                nodes: last.nodes.len(),
                pods: last.pods.len(),
                pods_running: last.count(PodStatus::Running),
                pods_pending: last.count(PodStatus::Pending),
                pods_unknown: last.count(PodStatus::Unknown),
                allocation_failures: last.allocation_failures(),
                blocks: last.blocks.len(),
                borrowed_ips: last.nodes.iter().map(|n| n.borrowed_ips).sum(),
                events: outcome.log.len(),
                expectations_passed: passed,
                expectations_failed: expectations.len() - passed,
                reachable_pairs: reach.reachable,
                pod_pairs: reach.pairs,
                max_fib_routes: last.nodes.iter().map(|n| n.fib_routes).max(),
                bgp_sessions: last.bgp.as_ref().map(|b| b.sessions.len()),
                bgp_sessions_established: last.bgp.as_ref().map(|b| b.sessions_established),
                bgp_updates: last.bgp.as_ref().map(|b| b.updates),
                convergence_time_us: last.bgp.as_ref().map(|b| b.converged_within_us),
                max_rib_routes: last.nodes.iter().filter_map(|n| n.rib_routes).max(),
            },
            topology: TopologySummary {
                zones: topo.zones.len(),
                racks: topo.racks.len(),
                routers: topo
                    .devices
                    .iter()
                    .filter(|d| !matches!(d.kind, DeviceKind::Node(_)))
                    .count(),
                links: topo.links.len(),
                links_down: topo.links.iter().filter(|l| !l.up).count(),
                fabric_bgp: topo.fabric.bgp,
                spines_per_zone: topo.fabric.spines_per_zone,
            },
            pools: last.pools.clone(),
            nodes: last.nodes.clone(),
            pods: last.pods.clone(),
            bgp: last.bgp.as_ref().map(|b| BgpSection {
                sessions: b.sessions.clone(),
            }),
            unreachable,
            windows: windows::build(outcome),
            expectations,
            warnings,
        }
    }

    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self)
            .unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"));
        s.push('\n');
        s
    }

    /// The short text summary `podnet run` prints.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let t = &self.topology;
        let mut out = format!(
            "{} (seed {}), ended at {}\n  topology: {} zones, {} racks, {} nodes, {} routers, {} links ({} down)\n  \
             pods: {} ({} running, {} pending, {} unknown), {} allocation failures\n  \
             ipam: {} blocks, {} borrowed addresses\n",
            self.scenario,
            self.seed,
            crate::model::time::SimTime::from_nanos(self.end_time_us * 1000),
            t.zones,
            t.racks,
            s.nodes,
            t.routers,
            t.links,
            t.links_down,
            s.pods,
            s.pods_running,
            s.pods_pending,
            s.pods_unknown,
            s.allocation_failures,
            s.blocks,
            s.borrowed_ips
        );
        out.push_str(&format!(
            "  reachability: {} of {} pod pairs delivered\n",
            s.reachable_pairs, s.pod_pairs
        ));
        for u in &self.unreachable {
            out.push_str(&format!(
                "    {} {} at {} (e.g. {} -> {})\n",
                u.count, u.reason, u.stopped_at, u.example.from, u.example.to
            ));
        }
        for p in &self.pools {
            out.push_str(&format!(
                "  pool {} {}: {} allocated of {}, {} blocks, MTU {}\n",
                p.name, p.cidr, p.allocated, p.capacity, p.blocks, p.mtu
            ));
        }
        for w in &self.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
        if !self.expectations.is_empty() {
            out.push_str(&format!(
                "  expectations: {} passed, {} failed\n",
                s.expectations_passed, s.expectations_failed
            ));
        }
        out
    }
}

/// BGP UPDATEs sent over time, as (time in µs, count), from the event log.
pub fn bgp_update_series(log: &[LogEntry]) -> Vec<(u64, u64)> {
    let mut out: Vec<(u64, u64)> = Vec::new();
    for e in log.iter().filter(|e| e.kind == "update") {
        match out.last_mut() {
            Some((t, n)) if *t == e.time_us => *n += 1,
            _ => out.push((e.time_us, 1)),
        }
    }
    out
}

impl Report {
    /// Loc-RIB sizes of the nodes that speak BGP.
    pub fn rib_sizes(&self) -> Vec<(String, u64)> {
        self.nodes
            .iter()
            .filter_map(|n| n.rib_routes.map(|r| (n.name.clone(), r as u64)))
            .collect()
    }

    /// BGP sessions as `topology.dot` draws them.
    pub fn session_edges(&self) -> Vec<dot::SessionEdge> {
        let Some(bgp) = &self.bgp else {
            return Vec::new();
        };
        bgp.sessions
            .iter()
            .map(|s| {
                // DOT marks `b` as the client of `a`: put the reflector first.
                let (a, b) = match &s.reflector {
                    Some(r) if *r == s.b => (s.b.clone(), s.a.clone()),
                    _ => (s.a.clone(), s.b.clone()),
                };
                dot::SessionEdge {
                    a,
                    b,
                    kind: if s.session_type == "ebgp" {
                        dot::SessionKind::Ebgp
                    } else {
                        dot::SessionKind::Ibgp
                    },
                    reflector_client: s.reflector.is_some(),
                    established: s.state == "Established",
                }
            })
            .collect()
    }
}

/// Every chart of a run: pool utilisation and pods per node, plus BGP UPDATEs over time and
/// Loc-RIB sizes when anything speaks BGP. The one place that decides which charts a run has.
pub fn run_charts(report: &Report, outcome: &Outcome) -> Vec<charts::Chart> {
    let updates = bgp_update_series(&outcome.log);
    let rib_sizes = report.rib_sizes();
    let mut inputs = charts::ChartInputs::new(report, &outcome.pool_usage);
    if report.bgp.is_some() {
        inputs.bgp_updates = Some(&updates);
        inputs.rib_sizes = Some(&rib_sizes);
    }
    charts::render(&inputs)
}

/// `events.jsonl`: one JSON object per line.
pub fn events_jsonl(log: &[LogEntry]) -> String {
    let mut out = String::new();
    for entry in log {
        if let Ok(line) = serde_json::to_string(entry) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    out
}
