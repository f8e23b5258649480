//! The human report as sections of metrics, paragraphs and tables of text, shared by
//! `report.md` and `report.html` so that the two always show the same facts.
//!
//! Everything here is derived from [`Report`] (and, for unreachable pairs, from the slice the
//! forwarding layer hands over); nothing is computed that `report.json` does not already hold.
//! Invariant: every table is bounded whatever the cluster's size. Above [`NODE_TABLE_LIMIT`]
//! nodes the node table becomes one row per rack (or per zone when there are many racks)
//! plus the busiest nodes; long lists are cut with a line saying how many rows were left out
//! and that `report.json` has them all.
//! This module does not escape text: each renderer escapes for its own format.

use std::collections::{BTreeMap, BTreeSet};

use super::Report;
use super::unreachable::{self, UnreachableRow};
use crate::model::time::SimTime;
use crate::model::workload::PodStatus;
use crate::sim::expect::ExpectationResult;
use crate::sim::snapshot::NodeRow;

/// Clusters with more nodes than this get an aggregated node table.
pub const NODE_TABLE_LIMIT: usize = 100;
/// Racks shown one row each in an aggregated node table; above it, one row per zone.
pub const RACK_ROWS_LIMIT: usize = 40;
/// Nodes listed by name in an aggregated node table.
pub const BUSIEST_NODES: usize = 10;
/// Down nodes listed by name in an aggregated node table.
pub const DOWN_NODES_LISTED: usize = 20;
/// Pods listed one row each when there are at most this many.
pub const POD_TABLE_LIMIT: usize = 50;
/// Rows of any other list (workloads, pending reasons, warnings) before it is cut.
pub const LIST_LIMIT: usize = 50;
/// Example pods shown per group of pods that are not running.
pub const EXAMPLES: usize = 3;

/// One `##` section of the report.
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    pub title: &'static str,
    /// The anchor in `report.html`.
    pub id: &'static str,
    pub blocks: Vec<Block>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Block {
    /// Headline numbers (a summary box in HTML, a two-column table in Markdown).
    Metrics(Vec<Metric>),
    Paragraph(String),
    /// A `###` heading inside a section.
    Subheading(String),
    Table(Table),
    List(Vec<String>),
    /// Where the renderer puts its charts (inline SVG in HTML, image links in Markdown).
    Charts,
}

/// How a number or a row should catch the eye.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tone {
    Plain,
    Good,
    Bad,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Metric {
    pub label: &'static str,
    pub value: String,
    pub tone: Tone,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    pub columns: Vec<Column>,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Column {
    pub title: &'static str,
    /// Right-aligned.
    pub numeric: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub cells: Vec<String>,
    pub tone: Tone,
}

impl Table {
    /// A table whose columns are given as `(title, numeric)`.
    pub fn new(columns: &[(&'static str, bool)]) -> Table {
        Table {
            columns: columns
                .iter()
                .map(|&(title, numeric)| Column { title, numeric })
                .collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, cells: Vec<String>) {
        self.push_toned(cells, Tone::Plain);
    }

    pub fn push_toned(&mut self, cells: Vec<String>, tone: Tone) {
        self.rows.push(Row { cells, tone });
    }
}

/// The report's title line.
pub fn title(report: &Report) -> String {
    format!("podnet report: {}", report.scenario)
}

/// Every section, in reading order. `unreachable` is `None` until reachability is computed,
/// and then the section appears.
pub fn sections(report: &Report, unreachable: Option<&[UnreachableRow]>) -> Vec<Section> {
    // The answers first: what reaches what and why not, the policy and the BGP behind it.
    let mut out = vec![summary(report)];
    out.extend(unreachable::section(
        unreachable,
        &report.unreachable_causes,
    ));
    out.extend(super::policy::section(report));
    out.extend(super::services::section(report));
    out.extend(super::externals::section(report));
    out.push(super::bgp::section(report));
    out.extend([pools(report), nodes(report)]);
    out.extend(report.windows.as_ref().map(super::windows::section));
    out.push(pods(report));
    out.push(expectations(report));
    out.push(Section {
        title: "Charts",
        id: "charts",
        blocks: vec![Block::Charts],
    });
    out.push(warnings(report));
    out
}

fn summary(report: &Report) -> Section {
    let s = &report.summary;
    let t = &report.topology;
    let down = report.nodes.iter().filter(|n| !n.up).count();
    let bad_if = |bad: bool| if bad { Tone::Bad } else { Tone::Plain };
    let expectations = s.expectations_passed + s.expectations_failed;
    let metrics = vec![
        Metric {
            label: "nodes",
            value: if down > 0 {
                format!("{} ({down} down)", count(s.nodes))
            } else {
                count(s.nodes)
            },
            tone: bad_if(down > 0),
        },
        Metric {
            label: "pods",
            value: count(s.pods),
            tone: Tone::Plain,
        },
        Metric {
            label: "running",
            value: count(s.pods_running),
            tone: if s.pods > 0 && s.pods_running == s.pods {
                Tone::Good
            } else {
                Tone::Plain
            },
        },
        Metric {
            label: "pending",
            value: count(s.pods_pending),
            tone: bad_if(s.pods_pending > 0),
        },
        Metric {
            label: "unknown",
            value: count(s.pods_unknown),
            tone: bad_if(s.pods_unknown > 0),
        },
        Metric {
            label: "allocation failures",
            value: count(s.allocation_failures),
            tone: bad_if(s.allocation_failures > 0),
        },
        Metric {
            label: "IPAM blocks",
            value: count(s.blocks),
            tone: Tone::Plain,
        },
        Metric {
            label: "borrowed addresses",
            value: count(s.borrowed_ips),
            tone: Tone::Plain,
        },
        Metric {
            label: "expectations passed",
            value: count(s.expectations_passed),
            tone: if expectations > 0 && s.expectations_failed == 0 {
                Tone::Good
            } else {
                Tone::Plain
            },
        },
        Metric {
            label: "expectations failed",
            value: count(s.expectations_failed),
            tone: bad_if(s.expectations_failed > 0),
        },
    ];
    let verdict = match (expectations, s.expectations_failed) {
        (0, _) => "The scenario states no expectations.".to_string(),
        (n, 0) => format!("All {n} expectations hold."),
        (n, f) => format!("{f} of {n} expectations failed (see Expectations)."),
    };
    let mut blocks = Vec::new();
    if !report.description.is_empty() {
        blocks.push(Block::Paragraph(report.description.clone()));
    }
    blocks.push(Block::Paragraph(format!(
        "Simulated until {} with seed {} by podnet {}; the run ended then because of {}. {verdict}",
        time(report.end_time_us),
        report.seed,
        report.podnet,
        report.ended_because
    )));
    blocks.push(Block::Metrics(metrics));
    blocks.push(Block::Paragraph(format!(
        "Topology: {} zones, {} racks, {} nodes, {} routers ({} per zone{}), {} links ({} down).",
        t.zones,
        t.racks,
        count(s.nodes),
        t.routers,
        if t.spines_per_zone == 1 {
            "1 spine".to_string()
        } else {
            format!("{} spines", t.spines_per_zone)
        },
        if t.fabric_bgp {
            ", the fabric speaks BGP"
        } else {
            ""
        },
        count(t.links),
        t.links_down
    )));
    Section {
        title: "Summary",
        id: "summary",
        blocks,
    }
}

fn pools(report: &Report) -> Section {
    let mut blocks = Vec::new();
    if report.pools.is_empty() {
        blocks.push(Block::Paragraph("No IP pools.".to_string()));
    } else {
        let mut table = Table::new(&[
            ("pool", false),
            ("kind", false),
            ("CIDR", false),
            ("blockSize", true),
            ("capacity", true),
            ("allocated", true),
            ("pods", true),
            ("used", true),
            ("reserved", true),
            ("blocks", true),
            ("free", true),
            ("MTU", true),
        ]);
        for p in &report.pools {
            table.push_toned(
                vec![
                    p.name.clone(),
                    p.kind.to_string(),
                    p.cidr.to_string(),
                    p.block_size.map_or_else(dash, |b| format!("/{b}")),
                    count(p.capacity),
                    count(p.allocated),
                    count(pod_addresses(report, &p.name)),
                    percent(u128::from(p.allocated), p.capacity),
                    count(p.reserved),
                    count(p.blocks),
                    count(p.free),
                    p.mtu.to_string(),
                ],
                if p.capacity > 0 && p.free == 0 {
                    Tone::Bad
                } else {
                    Tone::Plain
                },
            );
        }
        blocks.push(Block::Table(table));
        blocks.push(Block::Paragraph(
            "Allocated counts every address handed out, tunnel addresses included; pods counts \
             the pods' addresses only, as the pool utilisation chart does; used is allocated as \
             a share of capacity."
                .to_string(),
        ));
    }
    Section {
        title: "Pools",
        id: "pools",
        blocks,
    }
}

/// Pods holding an address of `pool`: what the pool utilisation chart counts.
fn pod_addresses(report: &Report, pool: &str) -> usize {
    report
        .pods
        .iter()
        .filter(|p| p.ip.is_some() && p.pool.as_deref() == Some(pool))
        .count()
}

fn node_table() -> Table {
    Table::new(&[
        ("node", false),
        ("zone", false),
        ("rack", false),
        ("IP", false),
        ("OS", false),
        ("up", false),
        ("pods", true),
        ("blocks", false),
        ("borrowed", true),
    ])
}

fn push_node(table: &mut Table, n: &NodeRow) {
    let blocks = match n.blocks.len() {
        0 => dash(),
        1..=3 => n.blocks.join(", "),
        k => format!("{}, … ({k} blocks)", n.blocks[..2].join(", ")),
    };
    table.push_toned(
        vec![
            n.name.clone(),
            n.zone.clone(),
            n.rack.clone(),
            n.ip.clone(),
            n.os.to_string(),
            if n.up { "yes" } else { "down" }.to_string(),
            count(n.pods),
            blocks,
            count(n.borrowed_ips),
        ],
        if n.up { Tone::Plain } else { Tone::Bad },
    );
}

/// Nodes of one rack or zone, summed.
#[derive(Default)]
struct NodeGroup<'a> {
    zone: &'a str,
    rack: &'a str,
    racks: usize,
    nodes: usize,
    down: usize,
    pods: usize,
    min_pods: usize,
    max_pods: usize,
    blocks: usize,
    borrowed: usize,
}

impl<'a> NodeGroup<'a> {
    fn add(&mut self, n: &NodeRow) {
        if self.nodes == 0 {
            self.min_pods = n.pods;
        }
        self.nodes += 1;
        self.down += usize::from(!n.up);
        self.pods += n.pods;
        self.min_pods = self.min_pods.min(n.pods);
        self.max_pods = self.max_pods.max(n.pods);
        self.blocks += n.blocks.len();
        self.borrowed += n.borrowed_ips;
    }
}

/// Groups nodes per rack (or per zone), in the order groups first appear (topology order).
fn group_nodes<'a>(nodes: &'a [NodeRow], per_rack: bool) -> Vec<NodeGroup<'a>> {
    let mut index: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    let mut racks_seen: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut groups: Vec<NodeGroup<'a>> = Vec::new();
    for n in nodes {
        let key = if per_rack {
            (n.zone.as_str(), n.rack.as_str())
        } else {
            (n.zone.as_str(), "")
        };
        let i = *index.entry(key).or_insert_with(|| {
            groups.push(NodeGroup {
                zone: key.0,
                rack: key.1,
                ..NodeGroup::default()
            });
            groups.len() - 1
        });
        if racks_seen.insert((n.zone.as_str(), n.rack.as_str())) {
            groups[i].racks += 1;
        }
        groups[i].add(n);
    }
    groups
}

fn nodes(report: &Report) -> Section {
    let nodes = &report.nodes;
    let mut blocks = Vec::new();
    if nodes.is_empty() {
        blocks.push(Block::Paragraph("The cluster has no nodes.".to_string()));
    } else if nodes.len() <= NODE_TABLE_LIMIT {
        let mut table = node_table();
        for n in nodes {
            push_node(&mut table, n);
        }
        blocks.push(Block::Table(table));
    } else {
        let racks = group_nodes(nodes, true);
        let per_rack = racks.len() <= RACK_ROWS_LIMIT;
        let groups = if per_rack {
            racks
        } else {
            group_nodes(nodes, false)
        };
        blocks.push(Block::Paragraph(format!(
            "{} nodes: one row per {}; report.json lists every node.",
            count(nodes.len()),
            if per_rack { "rack" } else { "zone" }
        )));
        let mut table = if per_rack {
            Table::new(&[("zone", false), ("rack", false)])
        } else {
            Table::new(&[("zone", false), ("racks", true)])
        };
        for column in [
            ("nodes", true),
            ("down", true),
            ("pods", true),
            ("pods per node", true),
            ("blocks", true),
            ("borrowed", true),
        ] {
            table.columns.push(Column {
                title: column.0,
                numeric: column.1,
            });
        }
        for g in &groups {
            let mut cells = vec![g.zone.to_string()];
            cells.push(if per_rack {
                g.rack.to_string()
            } else {
                count(g.racks)
            });
            cells.extend([
                count(g.nodes),
                count(g.down),
                count(g.pods),
                if g.min_pods == g.max_pods {
                    count(g.min_pods)
                } else {
                    format!("{}–{}", g.min_pods, g.max_pods)
                },
                count(g.blocks),
                count(g.borrowed),
            ]);
            table.push_toned(cells, if g.down > 0 { Tone::Bad } else { Tone::Plain });
        }
        blocks.push(Block::Table(table));

        let mut busiest: Vec<&NodeRow> = nodes.iter().collect();
        busiest.sort_by(|a, b| b.pods.cmp(&a.pods).then_with(|| a.name.cmp(&b.name)));
        busiest.truncate(BUSIEST_NODES);
        blocks.push(Block::Subheading(format!(
            "The {} nodes with the most pods",
            busiest.len()
        )));
        let mut table = node_table();
        for n in &busiest {
            push_node(&mut table, n);
        }
        blocks.push(Block::Table(table));

        let down: Vec<&NodeRow> = nodes.iter().filter(|n| !n.up).collect();
        if !down.is_empty() {
            blocks.push(Block::Subheading(format!("Nodes down ({})", down.len())));
            let mut table = node_table();
            for n in down.iter().take(DOWN_NODES_LISTED) {
                push_node(&mut table, n);
            }
            blocks.push(Block::Table(table));
        }
        let listed = busiest.len() + down.iter().take(DOWN_NODES_LISTED).count();
        blocks.push(Block::Paragraph(format!(
            "{} nodes are not listed by name.",
            count(nodes.len().saturating_sub(listed))
        )));
    }
    Section {
        title: "Nodes",
        id: "nodes",
        blocks,
    }
}

/// Pod counts of one workload.
#[derive(Default)]
struct WorkloadPods {
    pods: usize,
    running: usize,
    pending: usize,
    unknown: usize,
}

fn pods(report: &Report) -> Section {
    let s = &report.summary;
    let pods = &report.pods;
    let mut blocks = vec![Block::Paragraph(format!(
        "{} pods: {} running, {} pending, {} unknown.",
        count(s.pods),
        count(s.pods_running),
        count(s.pods_pending),
        count(s.pods_unknown)
    ))];
    if pods.is_empty() {
        return Section {
            title: "Pods",
            id: "pods",
            blocks,
        };
    }

    let mut workloads: BTreeMap<(&str, &str), WorkloadPods> = BTreeMap::new();
    for p in pods {
        let w = workloads.entry((&*p.namespace, &*p.workload)).or_default();
        w.pods += 1;
        match p.status {
            PodStatus::Running => w.running += 1,
            PodStatus::Pending => w.pending += 1,
            PodStatus::Unknown => w.unknown += 1,
        }
    }
    let mut table = Table::new(&[
        ("namespace", false),
        ("workload", false),
        ("pods", true),
        ("running", true),
        ("pending", true),
        ("unknown", true),
    ]);
    for ((namespace, workload), w) in workloads.iter().take(LIST_LIMIT) {
        table.push_toned(
            vec![
                namespace.to_string(),
                workload.to_string(),
                count(w.pods),
                count(w.running),
                count(w.pending),
                count(w.unknown),
            ],
            if w.running < w.pods {
                Tone::Bad
            } else {
                Tone::Plain
            },
        );
    }
    blocks.push(Block::Subheading("Per workload".to_string()));
    blocks.push(Block::Table(table));
    if workloads.len() > LIST_LIMIT {
        blocks.push(Block::Paragraph(format!(
            "{} more workloads are not listed.",
            count(workloads.len() - LIST_LIMIT)
        )));
    }

    // Pods that are not running, grouped by (status, reason), largest group first.
    let mut groups: BTreeMap<(PodStatus, String), (usize, Vec<String>)> = BTreeMap::new();
    for p in pods.iter().filter(|p| p.status != PodStatus::Running) {
        let reason = p
            .reason
            .as_ref()
            .map_or_else(|| "no reason given".to_string(), ToString::to_string);
        let group = groups.entry((p.status, reason)).or_default();
        group.0 += 1;
        if group.1.len() < EXAMPLES {
            group.1.push(format!("{}/{}", p.namespace, p.name));
        }
    }
    blocks.push(Block::Subheading("Pods not running, by reason".to_string()));
    if groups.is_empty() {
        blocks.push(Block::Paragraph("Every pod is Running.".to_string()));
    } else {
        let mut ordered: Vec<_> = groups.into_iter().collect();
        ordered.sort_by(|a, b| b.1.0.cmp(&a.1.0).then_with(|| a.0.cmp(&b.0)));
        let mut table = Table::new(&[
            ("status", false),
            ("reason", false),
            ("pods", true),
            ("examples", false),
        ]);
        for ((status, reason), (n, examples)) in ordered.iter().take(LIST_LIMIT) {
            let mut shown = examples.join(", ");
            if *n > examples.len() {
                shown.push_str(", …");
            }
            table.push_toned(
                vec![status.to_string(), reason.to_string(), count(*n), shown],
                Tone::Bad,
            );
        }
        blocks.push(Block::Table(table));
        if ordered.len() > LIST_LIMIT {
            blocks.push(Block::Paragraph(format!(
                "{} more reasons are not listed.",
                count(ordered.len() - LIST_LIMIT)
            )));
        }
    }

    if pods.len() <= POD_TABLE_LIMIT {
        blocks.push(Block::Subheading("Every pod".to_string()));
        let mut table = Table::new(&[
            ("pod", false),
            ("node", false),
            ("IP", false),
            ("pool", false),
            ("block", false),
            ("borrowed", false),
            ("status", false),
        ]);
        for p in pods {
            table.push_toned(
                vec![
                    format!("{}/{}", p.namespace, p.name),
                    p.node.as_deref().map_or_else(dash, str::to_string),
                    p.ip.map_or_else(dash, |ip| ip.to_string()),
                    p.pool.as_deref().map_or_else(dash, str::to_string),
                    p.block.map_or_else(dash, |b| b.to_string()),
                    if p.borrowed { "yes" } else { "no" }.to_string(),
                    p.status.to_string(),
                ],
                if p.status == PodStatus::Running {
                    Tone::Plain
                } else {
                    Tone::Bad
                },
            );
        }
        blocks.push(Block::Table(table));
    }
    Section {
        title: "Pods",
        id: "pods",
        blocks,
    }
}

fn expectations(report: &Report) -> Section {
    let list = &report.expectations;
    let mut blocks = Vec::new();
    if list.is_empty() {
        blocks.push(Block::Paragraph(
            "The scenario has no `expect:` list.".to_string(),
        ));
    } else {
        let failed = list.iter().filter(|e| e.failed()).count();
        let not_applicable = list.iter().filter(|e| e.not_applicable.is_some()).count();
        blocks.push(Block::Paragraph(if not_applicable == 0 {
            format!("{} passed, {failed} failed.", list.len() - failed)
        } else {
            format!(
                "{} passed, {failed} failed, {not_applicable} not applicable (`when:`).",
                list.len() - failed - not_applicable
            )
        }));
        let mut table = Table::new(&[
            ("result", false),
            ("expectation", false),
            ("at", true),
            ("expected", false),
            ("actual", false),
        ]);
        // Failures first, then passes, then those that do not apply, each group in file order.
        let rank = |e: &&ExpectationResult| match (e.failed(), e.passed) {
            (true, _) => 0,
            (false, true) => 1,
            (false, false) => 2,
        };
        let mut ordered: Vec<&ExpectationResult> = list.iter().collect();
        ordered.sort_by_key(rank);
        for e in ordered {
            let (word, actual, tone) = match &e.not_applicable {
                Some(why) => ("n/a", format!("not applicable: {why}"), Tone::Plain),
                None if e.passed => ("pass", e.actual.clone(), Tone::Good),
                None => ("FAIL", e.actual.clone(), Tone::Bad),
            };
            table.push_toned(
                vec![
                    word.to_string(),
                    e.name.clone(),
                    time(e.at_us),
                    e.expected.clone(),
                    actual,
                ],
                tone,
            );
        }
        blocks.push(Block::Table(table));
    }
    Section {
        title: "Expectations",
        id: "expectations",
        blocks,
    }
}

fn warnings(report: &Report) -> Section {
    let blocks = if report.warnings.is_empty() {
        vec![Block::Paragraph("None.".to_string())]
    } else {
        let mut list: Vec<String> = report.warnings.iter().take(LIST_LIMIT).cloned().collect();
        if report.warnings.len() > LIST_LIMIT {
            list.push(format!(
                "… {} more in report.json",
                count(report.warnings.len() - LIST_LIMIT)
            ));
        }
        vec![Block::List(list)]
    };
    Section {
        title: "Warnings",
        id: "warnings",
        blocks,
    }
}

/// A count with thousands separators: `1,048,576`.
pub fn count(n: impl std::fmt::Display) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A count and its noun, plural unless the count is one: `1 zone`, `2 zones`,
/// `1,024 addresses`, `3 policies`. `singular` is a regular English noun (or ends in one).
pub fn noun(n: impl std::fmt::Display, singular: &str) -> String {
    let digits = n.to_string();
    if digits == "1" {
        return format!("1 {singular}");
    }
    let plural = if singular.ends_with(['s', 'x']) || singular.ends_with("ch") {
        format!("{singular}es")
    } else if let Some(stem) = singular
        .strip_suffix('y')
        .filter(|stem| !stem.ends_with(['a', 'e', 'o', 'u']))
    {
        format!("{stem}ies")
    } else {
        format!("{singular}s")
    };
    format!("{} {plural}", count(digits))
}

/// `part` as a share of `whole` with one decimal, or a dash when `whole` is zero.
pub fn percent(part: u128, whole: u128) -> String {
    if whole == 0 {
        return dash();
    }
    // Tenths of a percent, rounded half up, in integers so every machine prints the same.
    // Only a part above 10^35 overflows; it is then scaled down with the whole first.
    let tenths = match part.checked_mul(2000) {
        Some(scaled) => (scaled / whole).div_ceil(2),
        None => ((part / 2000).saturating_mul(2000) / (whole / 2000).max(1)).div_ceil(2),
    };
    format!("{}.{}%", tenths / 10, tenths % 10)
}

/// A simulated instant in microseconds, printed as the CLI prints durations (`1m30s`).
pub fn time(us: u64) -> String {
    SimTime::from_nanos(us.saturating_mul(1000)).to_string()
}

fn dash() -> String {
    "–".to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_grouped_by_thousands() {
        assert_eq!(count(0u32), "0");
        assert_eq!(count(999u32), "999");
        assert_eq!(count(1000u32), "1,000");
        assert_eq!(count(1_048_576u32), "1,048,576");
        assert_eq!(count(u128::MAX).len(), 39 + 12);
    }

    #[test]
    fn nouns_agree_with_their_count() {
        assert_eq!(noun(1u32, "zone"), "1 zone");
        assert_eq!(noun(0u32, "zone"), "0 zones");
        assert_eq!(noun(2u32, "block"), "2 blocks");
        assert_eq!(noun(1_024u32, "address"), "1,024 addresses");
        assert_eq!(noun(3u32, "policy"), "3 policies");
        assert_eq!(noun(2u32, "day"), "2 days");
        assert_eq!(noun(1u32, "borrowed address"), "1 borrowed address");
    }

    #[test]
    fn percentages_round_and_never_divide_by_zero() {
        assert_eq!(percent(0, 0), "–");
        assert_eq!(percent(1, 3), "33.3%");
        assert_eq!(percent(2, 3), "66.7%");
        assert_eq!(percent(24, 4096), "0.6%");
        assert_eq!(percent(5, 5), "100.0%");
        assert_eq!(percent(u128::MAX, u128::MAX), "100.0%");
        assert_eq!(percent(u128::MAX / 2, u128::MAX), "50.0%");
    }
}
