//! BGP as a person reads it: sessions grouped by state and reason, the warnings for sessions
//! that are not Established or that flapped, the summary's BGP line and the report's BGP
//! section (sessions, UPDATEs, convergence, routes per node as a distribution).
//!
//! Everything is derived from [`Report`] (its `bgp.sessions`, `summary` and `nodes`), so the
//! summary, `report.md`, `report.html` and `report.json` tell the same story. This module
//! does not compute BGP; the engine does (`crate::bgp`).

use std::collections::BTreeMap;

use super::Report;
use super::sections::{Block, LIST_LIMIT, Section, Table, Tone, count, noun, time};
use crate::sim::snapshot::{NodeRow, SessionRow};

/// A session that went down after being Established at least this many times flapped.
pub const FLAP_DOWNS: u32 = 2;

/// Sessions in the same state for the same reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SessionGroup<'a> {
    pub state: &'a str,
    pub reason: Option<&'a str>,
    pub sessions: Vec<&'a SessionRow>,
}

/// Sessions grouped by (state, reason): Established first, then the largest group, then
/// by state and reason so the order is fixed.
pub fn session_groups(sessions: &[SessionRow]) -> Vec<SessionGroup<'_>> {
    let mut groups: BTreeMap<(&str, Option<&str>), Vec<&SessionRow>> = BTreeMap::new();
    for s in sessions {
        groups
            .entry((s.state, s.reason.as_deref()))
            .or_default()
            .push(s);
    }
    let mut out: Vec<SessionGroup<'_>> = groups
        .into_iter()
        .map(|((state, reason), sessions)| SessionGroup {
            state,
            reason,
            sessions,
        })
        .collect();
    out.sort_by(|a, b| {
        (b.state == "Established")
            .cmp(&(a.state == "Established"))
            .then_with(|| b.sessions.len().cmp(&a.sessions.len()))
            .then_with(|| (a.state, a.reason).cmp(&(b.state, b.reason)))
    });
    out
}

fn subject(s: &SessionRow) -> String {
    format!("{} – {}", s.a, s.b)
}

/// One warning per session that is not Established at the end of the run, and one per
/// session that flapped (went down [`FLAP_DOWNS`] times or more).
pub fn session_warnings(sessions: &[SessionRow]) -> Vec<String> {
    let mut out = Vec::new();
    for s in sessions.iter().filter(|s| s.state != "Established") {
        out.push(match &s.reason {
            Some(reason) => format!("BGP session {} is {}: {reason}", subject(s), s.state),
            None => format!("BGP session {} is {}", subject(s), s.state),
        });
    }
    for s in sessions.iter().filter(|s| s.times_down >= FLAP_DOWNS) {
        out.push(format!(
            "BGP session {} flapped: it went down {} times",
            subject(s),
            s.times_down
        ));
    }
    out
}

/// The summary's BGP lines: `None` when nothing speaks BGP.
pub fn summary_lines(report: &Report) -> Option<String> {
    let bgp = report.bgp.as_ref()?;
    let s = &report.summary;
    let total = bgp.sessions.len();
    let established = s.bgp_sessions_established.unwrap_or(0);
    let mut out = format!(
        "  bgp: {} of {} Established, {}",
        count(established),
        noun(total, "session"),
        noun(s.bgp_updates.unwrap_or(0), "UPDATE"),
    );
    if let Some(us) = s.convergence_time_us {
        out.push_str(&format!(
            ", converged {} after the last scenario event",
            time(us)
        ));
    }
    out.push('\n');
    for g in session_groups(&bgp.sessions)
        .iter()
        .filter(|g| g.state != "Established")
    {
        let example = g.sessions.first().map(|s| subject(s)).unwrap_or_default();
        out.push_str(&format!(
            "    {} {}{} (e.g. {example})\n",
            count(g.sessions.len()),
            g.state,
            g.reason.map_or(String::new(), |r| format!(": {r}"))
        ));
    }
    Some(out)
}

/// min, median, max of `values` with the node holding the most, or `None` when empty.
fn distribution(values: &[(&str, usize)]) -> Option<[String; 5]> {
    let mut sorted: Vec<(&str, usize)> = values.to_vec();
    // By size, then name, so the node named for the maximum is the same on every run.
    sorted.sort_by(|a, b| a.1.cmp(&b.1).then_with(|| b.0.cmp(a.0)));
    let (first, last) = (sorted.first()?, sorted.last()?);
    Some([
        count(sorted.len()),
        count(first.1),
        count(sorted[(sorted.len() - 1) / 2].1),
        count(last.1),
        last.0.to_string(),
    ])
}

/// The "BGP" section: sessions by state with reasons, UPDATEs, convergence, flapping
/// sessions, and the RIB and FIB sizes of the nodes as distributions.
pub fn section(report: &Report) -> Section {
    let mut blocks = Vec::new();
    let s = &report.summary;
    match &report.bgp {
        None => blocks.push(Block::Paragraph(
            "Nothing speaks BGP in this scenario: nodes learn routes from the datastore or \
             their segment, not from BGP."
                .to_string(),
        )),
        Some(bgp) => {
            let total = bgp.sessions.len();
            let established = s.bgp_sessions_established.unwrap_or(0);
            let mut lede = format!(
                "{} of {} Established; {} sent.",
                count(established),
                noun(total, "session"),
                noun(s.bgp_updates.unwrap_or(0), "UPDATE")
            );
            if let Some(us) = s.convergence_time_us {
                lede.push_str(&format!(
                    " The forwarding tables last changed {} after the last scenario event.",
                    time(us)
                ));
            }
            blocks.push(Block::Paragraph(lede));
            if total > 0 {
                let mut table = Table::new(&[
                    ("state", false),
                    ("reason", false),
                    ("sessions", true),
                    ("example", false),
                ]);
                let groups = session_groups(&bgp.sessions);
                for g in groups.iter().take(LIST_LIMIT) {
                    table.push_toned(
                        vec![
                            g.state.to_string(),
                            g.reason.unwrap_or("–").to_string(),
                            count(g.sessions.len()),
                            g.sessions.first().map(|s| subject(s)).unwrap_or_default(),
                        ],
                        if g.state == "Established" {
                            Tone::Good
                        } else {
                            Tone::Bad
                        },
                    );
                }
                blocks.push(Block::Table(table));
                if groups.len() > LIST_LIMIT {
                    blocks.push(Block::Paragraph(format!(
                        "{} more groups are in report.json.",
                        count(groups.len() - LIST_LIMIT)
                    )));
                }
            }
            let flapped: Vec<&SessionRow> = bgp
                .sessions
                .iter()
                .filter(|s| s.times_down >= FLAP_DOWNS)
                .collect();
            if !flapped.is_empty() {
                blocks.push(Block::Subheading(format!(
                    "Sessions that flapped ({})",
                    count(flapped.len())
                )));
                let mut table = Table::new(&[
                    ("session", false),
                    ("times down", true),
                    ("state now", false),
                ]);
                for s in flapped.iter().take(LIST_LIMIT) {
                    table.push_toned(
                        vec![subject(s), count(s.times_down), s.state.to_string()],
                        Tone::Bad,
                    );
                }
                blocks.push(Block::Table(table));
            }
        }
    }
    blocks.push(Block::Subheading("Routes per node".to_string()));
    blocks.push(Block::Table(routes_table(&report.nodes)));
    Section {
        title: "BGP",
        id: "bgp",
        blocks,
    }
}

/// RIB (BGP speakers only) and FIB sizes over the nodes: how many nodes, min, median, max,
/// and which node holds the most.
fn routes_table(nodes: &[NodeRow]) -> Table {
    let mut table = Table::new(&[
        ("table", false),
        ("nodes", true),
        ("min", true),
        ("median", true),
        ("max", true),
        ("largest on", false),
    ]);
    let rib: Vec<(&str, usize)> = nodes
        .iter()
        .filter_map(|n| n.rib_routes.map(|r| (n.name.as_str(), r)))
        .collect();
    let fib: Vec<(&str, usize)> = nodes
        .iter()
        .map(|n| (n.name.as_str(), n.fib_routes))
        .collect();
    for (name, values) in [("BGP Loc-RIB", rib), ("FIB", fib)] {
        if let Some(cells) = distribution(&values) {
            let mut row = vec![name.to_string()];
            row.extend(cells);
            table.push(row);
        }
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(a: &str, b: &str, state: &'static str, reason: Option<&str>) -> SessionRow {
        SessionRow {
            a: a.into(),
            b: b.into(),
            session_type: "ibgp",
            reflector_client: false,
            reflector: None,
            state,
            reason: reason.map(str::to_string),
            times_down: 0,
        }
    }

    #[test]
    fn sessions_group_by_state_and_reason_established_first() {
        let tor = "BGPPeer to-tor: peerIP 10.1.1.1 is tor-rack-a1, which does not speak BGP";
        let sessions = vec![
            session("n1", "n2", "Established", None),
            session("n1", "10.1.1.1", "Idle", Some(tor)),
            session("n2", "10.1.1.1", "Idle", Some(tor)),
            session("n3", "n1", "Idle", Some("n3 is down")),
        ];
        let groups = session_groups(&sessions);
        let shape: Vec<(&str, Option<&str>, usize)> = groups
            .iter()
            .map(|g| (g.state, g.reason, g.sessions.len()))
            .collect();
        assert_eq!(
            shape,
            [
                ("Established", None, 1),
                ("Idle", Some(tor), 2),
                ("Idle", Some("n3 is down"), 1)
            ]
        );
    }

    #[test]
    fn every_idle_and_every_flapping_session_is_a_warning() {
        let mut flapper = session("n1", "n2", "Established", None);
        flapper.times_down = 3;
        let mut once = session("n1", "n4", "Established", None);
        once.times_down = 1;
        let sessions = vec![
            flapper,
            once,
            session("n3", "n1", "Idle", Some("n3 is down")),
        ];
        assert_eq!(
            session_warnings(&sessions),
            [
                "BGP session n3 – n1 is Idle: n3 is down",
                "BGP session n1 – n2 flapped: it went down 3 times",
            ]
        );
    }

    #[test]
    fn route_sizes_read_as_a_distribution() {
        let sizes = [("a", 4), ("b", 9), ("c", 5), ("d", 9)];
        // Sorted 4 5 9 9: the median is the lower middle (5); the largest is on d or b, and
        // ties name the first node by name.
        assert_eq!(
            distribution(&sizes),
            Some([
                "4".to_string(),
                "4".to_string(),
                "5".to_string(),
                "9".to_string(),
                "b".to_string()
            ])
        );
        assert_eq!(distribution(&[]), None);
    }
}
