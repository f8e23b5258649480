//! Unreachable pod pairs grouped by reason (SPEC §6.1 `unreachable`) and by root cause
//! (`unreachableCauses`), and their section in the human report.
//!
//! The forwarding layer computes the (reason, stopped-at) groups; this module names the
//! cause an architect would fix for each group — a node down, a link down, a BGP session
//! Idle, a borrowed /32 nobody routes, a wrong subnet, an unallocated address, a policy —
//! and merges groups with the same cause, so that a down node reads as one fault and not
//! as one `no-route` per ToR. A cause is read from the group's example pair and the state
//! at the end of the run; every pair of a group shares the example's reason and stopping
//! point, and the cause is the first that explains it (in [`CauseKind`]'s order).
//! What the routing itself got wrong is told apart from the example's walk ([`StopFacts`]):
//! native pod traffic handed to a fabric that does not speak BGP, or a block some device
//! never learned (with the owner's BGP sessions); "routing" is left for what neither explains.
//! Until reachability is computed callers pass `None` and the section is left out, so a
//! report never claims "everything is reachable" without having looked.

use std::collections::BTreeMap;

use serde::Serialize;

use super::sections::{Block, LIST_LIMIT, Section, Table, Tone, count, noun, time};
use crate::forwarding::PodKey;
use crate::forwarding::fib::{FibAction, FibEntry};
use crate::model::topology::{DeviceKind, Topology};
use crate::sim::LogEntry;
use crate::sim::snapshot::{NodeRow, PodRow, SessionRow};

/// Pod pairs that cannot reach each other for the same reason at the same place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreachableRow {
    /// Why the packet was not delivered (the verdict's reason).
    pub reason: String,
    /// The device where the packet stopped.
    pub stopped_at: String,
    /// Pod pairs in this group.
    pub count: u64,
    /// One of the pairs.
    pub example: PairExample,
    /// For `policy-denied`: where and what denied (SPEC §7).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub policy: Option<DenialRow>,
}

/// The check that denied a group of pairs: the side (`egress` at the sender, `ingress` at the
/// receiver), the tier and policy, and the rule index or `end-of-tier`, `tier-default`,
/// `no-profile`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DenialRow {
    pub side: &'static str,
    pub tier: Option<String>,
    pub policy: Option<String>,
    pub rule: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PairExample {
    pub from: String,
    pub to: String,
}

/// The kinds of root cause, in the order they are tried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    /// The source's or destination's node is down.
    NodeDown,
    /// The source or destination is a Spiderpool pod outside its segment's subnet.
    WrongSubnet,
    /// The destination address belongs to no pod.
    Unallocated,
    /// A network policy denied the traffic.
    Policy,
    /// The destination borrowed its address from another node's block and the /32 route
    /// does not reach where the packet stopped (the block's owner blackholes it, or a
    /// device only knows the block).
    BorrowedRoute,
    /// A BGP session of the device where the packet stopped, or of the destination's node,
    /// is not Established.
    SessionIdle,
    /// A link down at the device where the packet stopped.
    LinkDown,
    /// A node sent a pod packet natively (its pool does not encapsulate there) into a
    /// fabric that does not speak BGP, whose routers know node subnets only.
    NativeOverFabric,
    /// A device on the way has no route for the destination's block (none, or only a
    /// default route): it never learned it; the owner's sessions say whether it could have
    /// been advertised.
    BlockNotLearned,
    /// None of the above: the routing itself (a loop, a tunnel endpoint the underlay cannot
    /// reach, a route whose next hop is no device).
    Routing,
}

impl CauseKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::NodeDown => "node down",
            CauseKind::WrongSubnet => "wrong subnet",
            CauseKind::Unallocated => "unallocated",
            CauseKind::Policy => "policy",
            CauseKind::BorrowedRoute => "missing route for a borrowed /32",
            CauseKind::SessionIdle => "BGP session not Established",
            CauseKind::LinkDown => "link down",
            CauseKind::NativeOverFabric => "native pod traffic over a fabric without BGP",
            CauseKind::BlockNotLearned => "block not learned",
            CauseKind::Routing => "routing",
        }
    }
}

/// The scenario event that caused a failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CauseEvent {
    pub time_us: u64,
    pub kind: String,
    pub subject: String,
}

/// Unreachable pairs that share one root cause (`report.json` `unreachableCauses`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Cause {
    pub cause: CauseKind,
    /// What exactly: the node or link, the session and why it is Idle, the address.
    pub detail: String,
    pub count: u64,
    pub example: PairExample,
    /// The example's path, device by device, ending where it stopped, and why it stopped.
    pub trace: Vec<String>,
    pub stopped: String,
    /// The event that brought the cause about, when one did.
    pub event: Option<CauseEvent>,
}

/// What the classification reads: the state at the end of the run and the event log.
pub struct CauseInputs<'a> {
    pub pods: &'a [PodRow],
    pub nodes: &'a [NodeRow],
    pub sessions: &'a [SessionRow],
    pub topology: &'a Topology,
    pub log: &'a [LogEntry],
}

/// One (reason, stopped-at) group as the classification needs it.
pub struct GroupFacts<'a> {
    pub group: &'a UnreachableRow,
    pub example: (PodKey, PodKey),
    /// The example's path (device names), from [`crate::forwarding::trace`].
    pub path: Vec<String>,
    /// What the example's walk found at its first and last device.
    pub stop: StopFacts,
}

/// The example's walk at its ends, from [`crate::forwarding::trace`]'s hops.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StopFacts {
    /// The entry the source's node matched for the destination (`None`: none matched).
    pub first_entry: Option<FibEntry>,
    /// The entry matched where the packet stopped (`None`: no entry matched there).
    pub last_entry: Option<FibEntry>,
    /// The packet arrived encapsulated (in a tunnel) at the device where it stopped.
    pub tunnelled: bool,
}

impl CauseInputs<'_> {
    fn node_up(&self, name: &str) -> bool {
        self.nodes
            .iter()
            .find(|n| n.name == name)
            .is_none_or(|n| n.up)
    }

    /// The latest log entry of `kind` whose subject `matches`.
    fn event(&self, kind: &str, matches: impl Fn(&str) -> bool) -> Option<CauseEvent> {
        self.log
            .iter()
            .rev()
            .find(|e| e.kind == kind && matches(&e.subject) && e.outcome == "down")
            .map(|e| CauseEvent {
                time_us: e.time_us,
                kind: e.kind.to_string(),
                subject: e.subject.clone(),
            })
    }

    fn node_down_event(&self, node: &str) -> Option<CauseEvent> {
        self.event("nodeDown", |s| s == node)
    }

    /// The root cause of one group: (kind, detail, event).
    fn classify(
        &self,
        facts: &GroupFacts<'_>,
        pods: &BTreeMap<PodKey, &PodRow>,
    ) -> (CauseKind, String, Option<CauseEvent>) {
        let g = facts.group;
        let src = pods.get(&facts.example.0);
        let dst = pods.get(&facts.example.1);
        let node_of = |p: Option<&&PodRow>| {
            p.and_then(|p| p.node.as_deref())
                .unwrap_or_default()
                .to_string()
        };
        let (src_node, dst_node) = (node_of(src), node_of(dst));
        for node in [&dst_node, &src_node] {
            if !node.is_empty() && !self.node_up(node) {
                return (
                    CauseKind::NodeDown,
                    format!("{node} is down"),
                    self.node_down_event(node),
                );
            }
        }
        if g.reason == "node-down" && !self.node_up(&g.stopped_at) {
            return (
                CauseKind::NodeDown,
                format!("{} is down", g.stopped_at),
                self.node_down_event(&g.stopped_at),
            );
        }
        match g.reason.as_str() {
            "wrong-subnet" => {
                return (
                    CauseKind::WrongSubnet,
                    format!("an address outside the segment of {}", g.stopped_at),
                    None,
                );
            }
            "unallocated" => {
                return (
                    CauseKind::Unallocated,
                    "the destination address belongs to no pod".to_string(),
                    None,
                );
            }
            "policy-denied" => {
                let by = g.policy.as_ref().map_or_else(String::new, |d| {
                    format!(
                        "{} {}",
                        d.side,
                        d.policy
                            .as_deref()
                            .or(d.tier.as_deref())
                            .unwrap_or("policy")
                    )
                });
                return (CauseKind::Policy, by, None);
            }
            _ => {}
        }
        if let Some(d) = dst.filter(|d| d.borrowed) {
            return (
                CauseKind::BorrowedRoute,
                format!(
                    "{} on {} is borrowed from block {}; {} has no route to it",
                    d.ip.map_or_else(|| "?".to_string(), |ip| ip.to_string()),
                    dst_node,
                    d.block.map_or_else(|| "?".to_string(), |b| b.to_string()),
                    g.stopped_at
                ),
                None,
            );
        }
        let idle = self.sessions.iter().find(|s| {
            s.state != "Established"
                && [&g.stopped_at, &dst_node]
                    .iter()
                    .any(|d| *s.a == ***d || *s.b == ***d)
        });
        if let Some(s) = idle {
            let down = self
                .log
                .iter()
                .rev()
                .find(|e| e.kind == "sessionDown" && e.subject == format!("{} – {}", s.a, s.b));
            // By state and reason, not by session: twelve nodes peering with a ToR that
            // does not speak BGP are one fault.
            return (
                CauseKind::SessionIdle,
                format!(
                    "{}{}",
                    s.state,
                    s.reason
                        .as_deref()
                        .map_or(String::new(), |r| format!(": {r}"))
                ),
                down.map(|e| CauseEvent {
                    time_us: e.time_us,
                    kind: e.kind.to_string(),
                    subject: e.subject.clone(),
                }),
            );
        }
        let topo = self.topology;
        if let Some(at) = topo.device_by_name(&g.stopped_at) {
            let down = topo
                .links
                .iter()
                .filter(|l| !l.up && (l.a == at || l.b == at))
                .map(|l| (topo.device(l.a).name.clone(), topo.device(l.b).name.clone()))
                .next();
            if let Some((a, b)) = down {
                let event = self.event("linkDown", |s| {
                    s == format!("{a}--{b}") || s == format!("{b}--{a}")
                });
                return (CauseKind::LinkDown, format!("{a}--{b} is down"), event);
            }
        }
        let (kind, detail) = self.routing(facts, dst, &src_node, &dst_node);
        (kind, detail, None)
    }

    /// What the routing itself got wrong, from the example's walk (after every cause of
    /// state — node, link, session, borrowed address — was ruled out): a pod packet sent
    /// natively into a fabric without BGP, or a block some device never learned. The rest
    /// (a loop, a tunnel endpoint the underlay cannot reach) stays "routing": no scenario
    /// produces them (tests/routing.rs builds its loop by hand), so no cause names them yet.
    fn routing(
        &self,
        facts: &GroupFacts<'_>,
        dst: Option<&&PodRow>,
        src_node: &str,
        dst_node: &str,
    ) -> (CauseKind, String) {
        let g = facts.group;
        let at = &g.stopped_at;
        let fallback = (CauseKind::Routing, format!("{} at {at}", g.reason));
        // Only a native packet's own destination is looked up where it stopped.
        if g.reason != "no-route" || facts.stop.tunnelled {
            return fallback;
        }
        let block = dst
            .and_then(|d| d.block)
            .map_or_else(|| "?".to_string(), |b| b.to_string());
        let pool = dst
            .and_then(|d| d.pool.clone())
            .map_or_else(String::new, |p| format!(", pool {p}"));
        let topo = self.topology;
        let is_router = topo
            .device_by_name(at)
            .is_some_and(|d| !matches!(topo.device(d).kind, DeviceKind::Node(_)));
        // A router of a fabric without BGP knows node subnets only: no pod packet that
        // reaches one natively can be routed, whatever the nodes learned.
        if is_router && !topo.fabric.bgp {
            return (
                CauseKind::NativeOverFabric,
                format!(
                    "{at} knows node subnets only and {src_node} sends {dst_node}'s block \
                     {block}{pool} unencapsulated: encapsulate it (ipipMode/vxlanMode Always or \
                     CrossSubnet) or peer the fabric (topology.fabric.bgp)"
                ),
            );
        }
        // A default route (towards the fabric, or out of it) is no route for the block.
        let specific = |e: &Option<FibEntry>| {
            e.as_ref().is_some_and(|e| {
                e.prefix.prefix_len() > 0 && !matches!(e.action, FibAction::External(_))
            })
        };
        if specific(&facts.stop.last_entry) {
            return fallback;
        }
        // The first device without the block: the source's node when it fell back to its
        // default route, else where the packet stopped.
        let lacking = if specific(&facts.stop.first_entry) {
            at.as_str()
        } else {
            src_node
        };
        // A group shares its reason and stopping point, not its destination block: the
        // block is the example's.
        (
            CauseKind::BlockNotLearned,
            format!(
                "{lacking} has no route to the destination's block (e.g. {block} of \
                 {dst_node}{pool}: {})",
                self.sessions_of(dst_node)
            ),
        )
    }

    /// Whether the owner of a block could have advertised it: `n-3 has no BGP session`, or
    /// (its sessions being Established, the only state left here) that the block was not
    /// exported or not passed on.
    fn sessions_of(&self, node: &str) -> String {
        let n = self
            .sessions
            .iter()
            .filter(|s| &*s.a == node || &*s.b == node)
            .count();
        match n {
            0 => format!("{node} has no BGP session"),
            n => format!(
                "{node} has {}, all Established, so the block is not exported or not passed on",
                noun(n, "BGP session")
            ),
        }
    }
}

/// Groups merged by root cause, largest first (then by cause and detail).
pub fn causes(inputs: &CauseInputs<'_>, groups: &[GroupFacts<'_>]) -> Vec<Cause> {
    let pods: BTreeMap<PodKey, &PodRow> = inputs.pods.iter().map(|p| (p.key, p)).collect();
    let mut merged: BTreeMap<(CauseKind, String), Cause> = BTreeMap::new();
    // Largest group first, so each cause's example comes from its largest group.
    let mut ordered: Vec<&GroupFacts<'_>> = groups.iter().collect();
    ordered.sort_by_key(|g| std::cmp::Reverse(g.group.count));
    for facts in ordered {
        let (kind, detail, event) = inputs.classify(facts, &pods);
        let g = facts.group;
        merged
            .entry((kind, detail.clone()))
            .and_modify(|c| c.count = c.count.saturating_add(g.count))
            .or_insert_with(|| Cause {
                cause: kind,
                detail,
                count: g.count,
                example: g.example.clone(),
                trace: facts.path.clone(),
                stopped: format!("{} at {}", g.reason, g.stopped_at),
                event,
            });
    }
    let mut out: Vec<Cause> = merged.into_values().collect();
    out.sort_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then_with(|| (a.cause, &a.detail).cmp(&(b.cause, &b.detail)))
    });
    out
}

/// One line per cause, as the text summary prints it.
pub fn summary_lines(causes: &[Cause]) -> String {
    let mut out = String::new();
    for c in causes {
        out.push_str(&format!(
            "    {} {}: {}{} (e.g. {} -> {}: {})\n",
            count(c.count),
            c.cause.as_str(),
            c.detail,
            event_text(c.event.as_ref()),
            c.example.from,
            c.example.to,
            trace_text(c)
        ));
    }
    out
}

fn event_text(e: Option<&CauseEvent>) -> String {
    e.map_or(String::new(), |e| {
        format!(", since {} {} at {}", e.kind, e.subject, time(e.time_us))
    })
}

fn trace_text(c: &Cause) -> String {
    if c.trace.is_empty() {
        c.stopped.clone()
    } else {
        format!("{}, {}", c.trace.join(" → "), c.stopped)
    }
}

/// The "Reachability" section: `None` when reachability was not computed. `causes` are
/// the groups merged by root cause, shown first.
pub fn section(groups: Option<&[UnreachableRow]>, causes: &[Cause]) -> Option<Section> {
    let groups = groups?;
    let mut blocks = Vec::new();
    if !causes.is_empty() {
        blocks.push(Block::Subheading("By cause".to_string()));
        let mut table = Table::new(&[
            ("cause", false),
            ("what", false),
            ("pairs", true),
            ("since", false),
            ("example", false),
            ("its path", false),
        ]);
        for c in causes.iter().take(LIST_LIMIT) {
            table.push_toned(
                vec![
                    c.cause.as_str().to_string(),
                    c.detail.clone(),
                    count(c.count),
                    c.event.as_ref().map_or_else(
                        || "–".to_string(),
                        |e| format!("{} {} at {}", e.kind, e.subject, time(e.time_us)),
                    ),
                    format!("{} → {}", c.example.from, c.example.to),
                    trace_text(c),
                ],
                Tone::Bad,
            );
        }
        blocks.push(Block::Table(table));
        if causes.len() > LIST_LIMIT {
            blocks.push(Block::Paragraph(format!(
                "{} more are in report.json.",
                noun(causes.len() - LIST_LIMIT, "cause")
            )));
        }
        blocks.push(Block::Subheading("By where the packet stopped".to_string()));
    }
    if groups.is_empty() {
        blocks.push(Block::Paragraph("Every pod pair is reachable.".to_string()));
    } else {
        let total: u64 = groups.iter().map(|g| g.count).fold(0, u64::saturating_add);
        blocks.push(Block::Paragraph(format!(
            "{} unreachable in {}, largest first.",
            noun(total, "pod pair"),
            noun(groups.len(), "group")
        )));
        let mut ordered: Vec<&UnreachableRow> = groups.iter().collect();
        ordered.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.reason.cmp(&b.reason))
                .then_with(|| a.stopped_at.cmp(&b.stopped_at))
        });
        let mut table = Table::new(&[
            ("reason", false),
            ("stopped at", false),
            ("pairs", true),
            ("example", false),
        ]);
        for g in ordered.iter().take(LIST_LIMIT) {
            let reason = match &g.policy {
                Some(d) => format!(
                    "{} ({} {}{})",
                    g.reason,
                    d.side,
                    d.policy
                        .as_deref()
                        .or(d.tier.as_deref())
                        .map_or(String::new(), |p| format!("{p} ")),
                    d.rule
                ),
                None => g.reason.clone(),
            };
            table.push_toned(
                vec![
                    reason,
                    g.stopped_at.clone(),
                    count(g.count),
                    format!("{} → {}", g.example.from, g.example.to),
                ],
                Tone::Bad,
            );
        }
        blocks.push(Block::Table(table));
        if ordered.len() > LIST_LIMIT {
            blocks.push(Block::Paragraph(format!(
                "{} more are not listed.",
                noun(ordered.len() - LIST_LIMIT, "group")
            )));
        }
    }
    Some(Section {
        title: "Reachability",
        id: "reachability",
        blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(reason: &str, count: u64) -> UnreachableRow {
        UnreachableRow {
            reason: reason.to_string(),
            stopped_at: "tor-rack-b1".to_string(),
            count,
            example: PairExample {
                from: "default/web-0".to_string(),
                to: "default/web-7".to_string(),
            },
            policy: None,
        }
    }

    #[test]
    fn absent_until_computed_then_largest_group_first() {
        assert_eq!(section(None, &[]), None);
        let empty = section(Some(&[]), &[]).expect("a section");
        assert_eq!(
            empty.blocks,
            vec![Block::Paragraph("Every pod pair is reachable.".to_string())]
        );
        let s =
            section(Some(&[group("no route", 3), group("link down", 40)]), &[]).expect("section");
        let Some(Block::Table(table)) = s.blocks.get(1) else {
            panic!("expected a table, got {:?}", s.blocks);
        };
        assert_eq!(table.rows[0].cells[0], "link down");
        assert_eq!(table.rows[0].cells[2], "40");
        assert_eq!(table.rows[1].cells[3], "default/web-0 → default/web-7");
    }
}
