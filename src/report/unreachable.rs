//! Unreachable pod pairs grouped by reason (SPEC §6.1 `unreachable`), and their section in
//! the human report.
//!
//! The forwarding layer computes the groups; this module only defines their shape and shows
//! them. Until reachability is computed callers pass `None` and the section is left out, so
//! a report never claims "everything is reachable" without having looked.

use serde::Serialize;

use super::sections::{Block, LIST_LIMIT, Section, Table, Tone, count};

/// Pod pairs that cannot reach each other for the same reason at the same place.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct UnreachableGroup {
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

/// The "Reachability" section: `None` when reachability was not computed.
pub fn section(groups: Option<&[UnreachableGroup]>) -> Option<Section> {
    let groups = groups?;
    let mut blocks = Vec::new();
    if groups.is_empty() {
        blocks.push(Block::Paragraph("Every pod pair is reachable.".to_string()));
    } else {
        let total: u64 = groups.iter().map(|g| g.count).fold(0, u64::saturating_add);
        blocks.push(Block::Paragraph(format!(
            "{} unreachable pod pairs in {} groups, largest first.",
            count(total),
            count(groups.len())
        )));
        let mut ordered: Vec<&UnreachableGroup> = groups.iter().collect();
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
                "{} more groups are not listed.",
                count(ordered.len() - LIST_LIMIT)
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

    fn group(reason: &str, count: u64) -> UnreachableGroup {
        UnreachableGroup {
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
        assert_eq!(section(None), None);
        let empty = section(Some(&[])).expect("a section");
        assert_eq!(
            empty.blocks,
            vec![Block::Paragraph("Every pod pair is reachable.".to_string())]
        );
        let s = section(Some(&[group("no route", 3), group("link down", 40)])).expect("section");
        let Some(Block::Table(table)) = s.blocks.get(1) else {
            panic!("expected a table, got {:?}", s.blocks);
        };
        assert_eq!(table.rows[0].cells[0], "link down");
        assert_eq!(table.rows[0].cells[2], "40");
        assert_eq!(table.rows[1].cells[3], "default/web-0 → default/web-7");
    }
}
