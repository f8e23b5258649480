//! The results of a run as plain, serializable data, and their renderings.
//!
//! [`Report`] is built from a scenario, its simulation outcome and the expectation verdicts,
//! and is the single source for every output format, so `report.json`, the text summary and
//! `podnet check` cannot disagree. Every key SPEC §6.1 calls stable is present in every
//! report: counts that do not apply (BGP on a VXLAN or Spiderpool cluster) are 0 and lists
//! are empty, never missing.

pub mod bgp;
pub mod charts;
pub mod dot;
pub mod externals;
pub mod html;
pub mod junit;
pub mod markdown;
pub mod markup;
pub mod pictures;
pub mod policy;
pub mod sections;
pub mod services;
pub mod unreachable;
pub mod windows;

#[cfg(test)]
mod testutil;

use serde::Serialize;

use crate::forwarding::{PodKey, Source};
use crate::model::topology::DeviceKind;
use crate::model::workload::PodStatus;
use crate::policy::audit::{ConnectivityRow, PolicyAudit};
use crate::scenario::Scenario;
use crate::sim::expect::ExpectationResult;
use crate::sim::snapshot::{NodeRow, PodRow, PoolRow, SessionRow, zero_when_absent};
use crate::sim::{LogEntry, Outcome};
use sections::{count, noun};
use unreachable::{PairExample, UnreachableRow};

/// Warnings the text summary prints; the rest are counted (report.json has them all).
pub const SUMMARY_WARNINGS: usize = 20;

/// `report.json`.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Report {
    pub podnet: &'static str,
    pub scenario: String,
    pub description: String,
    pub seed: u64,
    pub end_time_us: u64,
    /// Why the run ended at `endTimeUs` (SPEC §3.1: `until`, the latest expectation, or the
    /// last state change).
    pub ended_because: String,
    pub summary: Summary,
    pub topology: TopologySummary,
    pub pools: Vec<PoolRow>,
    pub nodes: Vec<NodeRow>,
    pub pods: Vec<PodRow>,
    /// BGP sessions, when anything speaks BGP (an empty list in `report.json` otherwise).
    #[serde(serialize_with = "zero_when_absent")]
    pub bgp: Option<BgpSection>,
    /// Unreachable ordered pod pairs grouped by (reason, where they stopped).
    pub unreachable: Vec<UnreachableRow>,
    /// Network policy as a whole (SPEC §7), when any policy is enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<PolicyAudit>,
    /// What policy allows between workloads (SPEC §7), when any policy is enforced.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub connectivity: Option<Vec<ConnectivityRow>>,
    /// Services with their endpoints (SPEC §7), when the scenario has any.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<services::ServiceRow>,
    /// Traffic to and from each external (SPEC §7): an empty list without externals.
    pub externals: Vec<externals::ExternalRow>,
    /// The same pairs grouped by root cause, largest first.
    pub unreachable_causes: Vec<unreachable::Cause>,
    /// Windows nodes' HNS objects and what each HNS layout allows, when any node runs Windows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub windows: Option<windows::WindowsSection>,
    pub expectations: Vec<ExpectationResult>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
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
    #[serde(serialize_with = "zero_when_absent")]
    pub max_fib_routes: Option<usize>,
    #[serde(serialize_with = "zero_when_absent")]
    pub bgp_sessions: Option<usize>,
    #[serde(serialize_with = "zero_when_absent")]
    pub bgp_sessions_established: Option<usize>,
    #[serde(serialize_with = "zero_when_absent")]
    pub bgp_updates: Option<u64>,
    /// SPEC §2.6 `convergedWithin` at the end of the run.
    #[serde(serialize_with = "zero_when_absent")]
    pub convergence_time_us: Option<u64>,
    #[serde(serialize_with = "zero_when_absent")]
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
        if let Some(b) = &last.bgp {
            warnings.extend(bgp::session_warnings(&b.sessions));
        }
        let passed = expectations.iter().filter(|e| e.passed).count();
        let reach = last.reachability();
        let pod_name = |key| {
            last.pods.iter().find(|p| p.key == key).map_or_else(
                || "?".to_string(),
                |p| format!("{}/{}", p.namespace, p.name),
            )
        };
        let unreachable: Vec<UnreachableRow> = reach
            .groups
            .iter()
            .map(|g| UnreachableRow {
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
        let audit = last
            .policy
            .as_deref()
            .map(|inputs| crate::sim::policy::audit(&last.pods, &last.dataplane, inputs));
        if let Some(a) = &audit {
            warnings.extend(a.policy.windows_skipped.iter().map(ToString::to_string));
        }
        let (policy, connectivity) = match audit {
            Some(a) => (Some(a.policy), Some(a.connectivity)),
            None => (None, None),
        };
        let facts: Vec<unreachable::GroupFacts<'_>> = reach
            .groups
            .iter()
            .zip(&unreachable)
            .map(|(g, group)| {
                let (path, stop) = example_walk(last, g.example);
                unreachable::GroupFacts {
                    group,
                    example: g.example,
                    path,
                    stop,
                }
            })
            .collect();
        let no_sessions = Vec::new();
        let unreachable_causes = unreachable::causes(
            &unreachable::CauseInputs {
                pods: &last.pods,
                nodes: &last.nodes,
                sessions: last.bgp.as_ref().map_or(&no_sessions, |b| &b.sessions),
                topology: topo,
                log: &outcome.events.scenario_events,
            },
            &facts,
        );
        Report {
            podnet: env!("CARGO_PKG_VERSION"),
            scenario: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            end_time_us: outcome.end.as_micros(),
            ended_because: outcome.ended.to_string(),
            summary: Summary {
                nodes: last.nodes.len(),
                pods: last.pods.len(),
                pods_running: last.count(PodStatus::Running),
                pods_pending: last.count(PodStatus::Pending),
                pods_unknown: last.count(PodStatus::Unknown),
                allocation_failures: last.allocation_failures(),
                blocks: last.blocks.len(),
                borrowed_ips: last.nodes.iter().map(|n| n.borrowed_ips).sum(),
                events: outcome.events.lines,
                expectations_passed: passed,
                // Those whose `when:` does not apply count as neither.
                expectations_failed: expectations.iter().filter(|e| e.failed()).count(),
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
            policy,
            connectivity,
            services: services::rows(last, &outcome.endpoints),
            externals: externals::rows(last),
            unreachable_causes,
            windows: windows::build(outcome),
            expectations,
            warnings,
        }
    }

    /// Pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut out = Vec::new();
        match self.write_json(&mut out) {
            Ok(()) => String::from_utf8(out).unwrap_or_default(),
            Err(e) => format!("{{\"error\": \"{e}\"}}\n"),
        }
    }

    /// [`Report::to_json`] written to `out` as it is produced, without holding the whole
    /// text (`report.json` of a large cluster is tens of megabytes).
    pub fn write_json(&self, out: impl std::io::Write) -> std::io::Result<()> {
        use std::io::Write;
        let mut out = std::io::BufWriter::with_capacity(1 << 16, out);
        serde_json::to_writer_pretty(&mut out, self)?;
        out.write_all(b"\n")?;
        out.flush()
    }

    /// The short text summary `podnet run` prints.
    pub fn summary_text(&self) -> String {
        let s = &self.summary;
        let t = &self.topology;
        let mut out = format!(
            "{} (seed {}), ended at {}\n  ended by: {}\n  topology: {}, {}, {}, {}, {} ({} down)\n  \
             pods: {} ({} running, {} pending, {} unknown), {}\n  \
             ipam: {}, {}\n",
            self.scenario,
            self.seed,
            sections::time(self.end_time_us),
            self.ended_because,
            noun(t.zones, "zone"),
            noun(t.racks, "rack"),
            noun(s.nodes, "node"),
            noun(t.routers, "router"),
            noun(t.links, "link"),
            count(t.links_down),
            count(s.pods),
            count(s.pods_running),
            count(s.pods_pending),
            count(s.pods_unknown),
            noun(s.allocation_failures, "allocation failure"),
            noun(s.blocks, "block"),
            noun(s.borrowed_ips, "borrowed address")
        );
        out.extend(bgp::summary_lines(self));
        out.push_str(&format!(
            "  reachability: {} of {} delivered\n",
            count(s.reachable_pairs),
            noun(s.pod_pairs, "pod pair")
        ));
        out.push_str(&unreachable::summary_lines(&self.unreachable_causes));
        for p in &self.pools {
            out.push_str(&format!(
                "  pool {} {}: {} allocated of {}, {}, MTU {}\n",
                p.name,
                p.cidr,
                count(p.allocated),
                count(p.capacity),
                noun(p.blocks, "block"),
                p.mtu
            ));
        }
        for w in self.warnings.iter().take(SUMMARY_WARNINGS) {
            out.push_str(&format!("  warning: {w}\n"));
        }
        if self.warnings.len() > SUMMARY_WARNINGS {
            out.push_str(&format!(
                "  … {} more in report.json\n",
                noun(self.warnings.len() - SUMMARY_WARNINGS, "warning")
            ));
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

/// The devices the example pair's packet visits, by name, as `podnet trace` walks them.
fn example_walk(
    snap: &crate::sim::snapshot::Snapshot,
    (from, to): (PodKey, PodKey),
) -> (Vec<String>, unreachable::StopFacts) {
    let Some(dst) = snap.pods.iter().find(|p| p.key == to).and_then(|p| p.ip) else {
        return (Vec::new(), unreachable::StopFacts::default());
    };
    let name = |d: crate::model::topology::DeviceId| {
        snap.devices.get(d.index()).cloned().unwrap_or_default()
    };
    let Some(t) = crate::forwarding::trace(&snap.dataplane, Source::Pod(from), dst) else {
        return (Vec::new(), unreachable::StopFacts::default());
    };
    let path = t.path().into_iter().map(name).collect();
    // The outer header the packet arrived with at its last device: the one the hop before
    // sent it with.
    let arrived = t.hops.len().checked_sub(2).and_then(|i| t.hops[i].outer);
    let stop = unreachable::StopFacts {
        first_entry: t.hops.first().and_then(|h| h.entry),
        last_entry: t.hops.last().and_then(|h| h.entry),
        tunnelled: arrived.is_some(),
    };
    (path, stop)
}

/// The scenario's events as time-chart markers: one per instant, labelled with its first
/// event and how many more happened then ("apply BGPPeer/a +1"). `log` may hold any lines;
/// those [`crate::sim::events::is_scenario_event`] picks are marked.
pub fn event_markers(log: &[LogEntry]) -> Vec<charts::Marker> {
    let mut out: Vec<(charts::Marker, usize)> = Vec::new();
    for e in log
        .iter()
        .filter(|e| crate::sim::events::is_scenario_event(e))
    {
        let kind = if e.kind == "podDeleted" {
            "deletePods"
        } else {
            e.kind
        };
        match out.last_mut() {
            Some((m, more)) if m.time_us == e.time_us => *more += 1,
            _ => out.push((
                charts::Marker {
                    time_us: e.time_us,
                    label: format!("{kind} {}", e.subject),
                },
                0,
            )),
        }
    }
    out.into_iter()
        .map(|(mut m, more)| {
            if more > 0 {
                m.label.push_str(&format!(" +{more}"));
            }
            m
        })
        .collect()
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
                    Some(r) if *r == s.b => (s.b.to_string(), s.a.to_string()),
                    _ => (s.a.to_string(), s.b.to_string()),
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

/// Every chart of a run: the pictures ([`pictures`]: topology, reachability, address maps),
/// then pool utilisation and pods per node, plus BGP UPDATEs over time and Loc-RIB sizes when
/// anything speaks BGP; the time charts share one axis and the scenario's events as markers.
/// The one place that decides which charts a run has.
pub fn run_charts(report: &Report, outcome: &Outcome) -> Vec<charts::Chart> {
    let rib_sizes = report.rib_sizes();
    let markers = event_markers(&outcome.events.scenario_events);
    let mut inputs = charts::ChartInputs::new(report, &outcome.pool_usage);
    inputs.markers = &markers;
    if report.bgp.is_some() {
        inputs.bgp_updates = Some(&outcome.bgp_updates);
        inputs.rib_sizes = Some(&rib_sizes);
    }
    let mut out = pictures::render(report, outcome);
    out.extend(charts::render(&inputs));
    out
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
