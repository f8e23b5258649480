//! The results of a run as plain, serializable data, and their renderings.
//!
//! [`Report`] is built from a scenario and its simulation outcome and is the single source
//! for every output format, so `report.json` and the text summary cannot disagree. Keys are
//! the stable ones of SPEC §6.1; a key appears only when podnet computes it.

use serde::Serialize;

use crate::model::TextEnum;
use crate::model::topology::DeviceKind;
use crate::scenario::Scenario;
use crate::sim::{LogEntry, Outcome, Snapshot};

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
    pub nodes: Vec<NodeRow>,
    pub snapshots: Vec<Snapshot>,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    pub nodes: usize,
    pub nodes_up: usize,
    pub events: usize,
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

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeRow {
    pub name: String,
    pub zone: String,
    pub rack: String,
    pub ip: String,
    pub os: &'static str,
    pub up: bool,
    pub max_pods: u32,
}

impl Report {
    pub fn new(scenario: &Scenario, outcome: &Outcome) -> Report {
        let topo = &outcome.world.topology;
        let nodes: Vec<NodeRow> = topo
            .live_nodes()
            .map(|(_, n)| NodeRow {
                name: n.name.clone(),
                zone: topo.zones[n.zone.index()].name.clone(),
                rack: topo.racks[n.rack.index()].name.clone(),
                ip: n.ip.to_string(),
                os: n.os.as_str(),
                up: !n.down,
                max_pods: n.max_pods,
            })
            .collect();
        Report {
            podnet: env!("CARGO_PKG_VERSION"),
            scenario: scenario.name.clone(),
            description: scenario.description.clone(),
            seed: scenario.seed,
            end_time_us: outcome.end.as_micros(),
            summary: Summary {
                nodes: nodes.len(),
                nodes_up: nodes.iter().filter(|n| n.up).count(),
                events: outcome.log.len(),
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
            nodes,
            snapshots: outcome.snapshots.clone(),
            warnings: scenario.warning_lines(),
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
        let t = &self.topology;
        format!(
            "{} (seed {}): {} zones, {} racks, {} nodes ({} up), {} routers, {} links ({} down); \
             {} events, ended at {}us\n",
            self.scenario,
            self.seed,
            t.zones,
            t.racks,
            self.summary.nodes,
            self.summary.nodes_up,
            t.routers,
            t.links,
            t.links_down,
            self.summary.events,
            self.end_time_us
        )
    }
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
